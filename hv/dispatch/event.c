/* Arch-neutral exit handling: the backends translate their exit codes
 * into struct hv_event and call hv_handle_event() in root mode.
 *
 * Contract: on return the guest resumes. Every handler either emulates the
 * instruction and advances RIP, or injects the fault real hardware would
 * raise (RIP unchanged), or stops the guest for good (triple fault, or a
 * state that cannot happen: logged with a full dump). Nothing is silently
 * skipped. */
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "hvtrace/abi.h"
#include "dispatch/cpuid.h"
#include "base/gmem.h"
#include "dispatch/hypercall.h"
#include "base/lapic.h"
#include "base/log.h"
#include "dispatch/msr.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "trace/dbg.h"
#include "trace/trace.h"
#include "dispatch/mp.h"
#include "dispatch/irq.h"
#include "arch/x86/decode/decode.h"

static const char *const event_name[HV_EV_COUNT] = {
	[HV_EV_CPUID] = "cpuid",
	[HV_EV_HYPERCALL] = "hypercall",
	[HV_EV_MSR_READ] = "rdmsr",
	[HV_EV_MSR_WRITE] = "wrmsr",
	[HV_EV_IO] = "port i/o",
	[HV_EV_INVD] = "invd",
	[HV_EV_DR_ACCESS] = "mov debug register",
	[HV_EV_CR_WRITE] = "MOV to CR (backend)",
	[HV_EV_RDPMC] = "rdpmc",
	[HV_EV_HLT] = "hlt",
	[HV_EV_VIRT_INSN] = "virtualization instruction",
	[HV_EV_TRIPLE_FAULT] = "triple fault",
	[HV_EV_NPF] = "nested page fault",
	[HV_EV_EXCEPTION] = "exception",
	[HV_EV_INTR] = "external interrupt",
	[HV_EV_IRQ_WINDOW] = "interrupt window",
	[HV_EV_NMI] = "NMI",
	[HV_EV_INIT] = "INIT",
	[HV_EV_IRET] = "IRET",
	[HV_EV_UNHANDLED] = "unhandled exit",
};

static void __noreturn guest_stop(struct vcpu *v, const char *why)
{
	LOG_ERR("vcpu %u: %s: the guest is stopped; the hypervisor stays resident", v->id, why);
	hv.ops->dump(v);
	cpu_halt_forever();
}

/* How a guest that cannot go on ends, once the flight recorder is frozen
 * (hvtrace.cfg triple_fault): said in the log line of the cause, then
 * guest_end(). */
static const char *guest_end_how(void)
{
	return hv.boot.triple_fault == HV_TRIPLE_FAULT_HALT
		       ? "the guest is stopped; the hypervisor stays resident (triple_fault = halt: the "
			 "machine is left as it is for extraction)"
		       : "the machine shuts down as the platform does (triple_fault = reset; 'halt' keeps "
			 "it stopped for extraction)";
}

/* The state dumped; with triple_fault = reset every other vCPU's CRASH
 * marker awaited and this processor shut down, as the guest's triple
 * fault would have (no return). With halt it returns: the caller stops. */
static void guest_end(struct vcpu *v)
{
	hv.ops->dump(v);
	if (hv.boot.triple_fault != HV_TRIPLE_FAULT_HALT) {
		rec_await_markers(v);
		cpu_shutdown();
	}
}

/*
 * A guest's triple fault (SDM Vol. 3 6.15, APM Vol. 2 8.2.9): the
 * processor would shut down and the platform answer (a reset; QEMU exits
 * with -no-reboot). The flight recorder is frozen first; then, with
 * triple_fault = reset (the default), guest_end() shuts this processor
 * down. With halt the vCPU stays in the shutdown state: as on hardware
 * (SDM Vol. 3 6.15 "Interrupt 8": only NMI, INIT, RESET or SMI leave it),
 * an INIT from another processor brings it out (the firmware resets a
 * processor that did not finish its work that way); the boot processor,
 * or a vCPU nobody INITs, stays stopped.
 */
static void guest_shutdown(struct vcpu *v)
{
	rec_freeze(v, HVTRACE_FREEZE_TRIPLE_FAULT);
	LOG_ERR("vcpu %u: guest triple fault (shutdown): %s", v->id, guest_end_how());
	guest_end(v);
	if (hv.nr_vcpus == 1 || !(hv.caps & HV_CAP_IPI_GATE))
		cpu_halt_forever();
	mp_wait_init(v);
	LOG_INFO("vcpu %u: INIT ends its shutdown", v->id);
}

static void dispatch(struct vcpu *v, const struct hv_event *ev)
{
	u64 val;

	switch (ev->kind) {
	case HV_EV_CPUID: {
		struct cpuid_regs r;
		cpuid_policy((u32)v->gpr[GPR_RAX], (u32)v->gpr[GPR_RCX], &r);
		cpuid_apply_state((u32)v->gpr[GPR_RAX], (u32)v->gpr[GPR_RCX], hv.ops->get_cr(v, 4),
				  lapic_enabled(), &r);
		v->gpr[GPR_RAX] = r.eax;
		v->gpr[GPR_RBX] = r.ebx;
		v->gpr[GPR_RCX] = r.ecx;
		v->gpr[GPR_RDX] = r.edx;
		hv_skip_insn(v, ev, 2);
		return;
	}
	case HV_EV_HYPERCALL:
		hc_dispatch(v);
		hv_skip_insn(v, ev, 3);
		return;
	case HV_EV_MSR_READ:
		if (!msr_read(v, ev->msr, &val))
			break;
		v->gpr[GPR_RAX] = (u32)val;
		v->gpr[GPR_RDX] = val >> 32;
		hv_skip_insn(v, ev, 2);
		return;
	case HV_EV_MSR_WRITE:
		val = (v->gpr[GPR_RDX] << 32) | (u32)v->gpr[GPR_RAX];
		if (!msr_write(v, ev->msr, val))
			break;
		hv_skip_insn(v, ev, 2);
		return;
	case HV_EV_IO:
		io_exit(v, ev);
		return;
	case HV_EV_RDPMC:
		/* SDM Vol. 2B RDPMC: #GP at CPL > 0 without CR4.PCE, and for a
		 * counter that does not exist */
		if ((hv.ops->get_cpl(v) && !(hv.ops->get_cr(v, 4) & CR4_PCE)) ||
		    !pmu_rdpmc(v, (u32)v->gpr[GPR_RCX], &val))
			break;
		v->gpr[GPR_RAX] = (u32)val;
		v->gpr[GPR_RDX] = val >> 32;
		hv_skip_insn(v, ev, 2);
		return;
	case HV_EV_INVD:
		/* INVD drops dirty cache lines without writing them back,
		 * the hypervisor's among them (SDM Vol. 2A INVD): done as
		 * WBINVD, as KVM and AMD's HWCR.INVDWBINVD do */
		asm volatile("wbinvd" ::: "memory");
		hv_skip_insn(v, ev, 2);
		return;
	case HV_EV_DR_ACCESS:
		trace_on_dr_access(v, ev);
		return;
	case HV_EV_EXCEPTION: {
		struct hv_event e = *ev;
		/* raised while another exception was being delivered: what the
		 * CPU would have made of the two (SDM Vol. 3 Table 6-5) */
		if (ev->vectoring && ev->vec_type == HV_VEC_EXCEPTION) {
			switch (exc_combine(ev->vec_vector, ev->vector)) {
			case EXC_TRIPLE_FAULT:
				LOG_INFO("exception %u while delivering a double fault: shutdown", ev->vector);
				guest_shutdown(v);
				return;
			case EXC_DOUBLE_FAULT:
				e.vector = X86_DF;
				e.has_error = true;
				e.error_code = 0;
				break;
			case EXC_DELIVER_SECOND:
				break;
			}
		}
		if (trace_on_exception(v, &e))
			return;
		/* not the engine's: deliver it as it was going to be */
		if (e.vector == X86_PF)
			hv.ops->set_cr2(v, e.fault_addr);
		hv.ops->inject_exception(v, e.vector, e.has_error, e.error_code);
		return;
	}
	case HV_EV_INTR:
		/* injected when the guest can take it (dispatch/irq.c); vector
		 * 0: nothing was acknowledged (VMX's preemption timer, an
		 * interrupt that went away) */
		trace_count_exit(v);
		if (ev->vector)
			irq_hold(v, ev->vector);
		return;
	case HV_EV_IRQ_WINDOW:
		trace_count_exit(v);	/* irq_deliver() injects now */
		return;
	case HV_EV_HLT:
		trace_count_exit(v);
		irq_on_hlt(v, ev);
		return;
	case HV_EV_NMI:
		if (mp_take_kick(v))
			return;		/* the hypervisor's own (dispatch/mp.c) */
		hv_guest_nmi(v);
		return;
	case HV_EV_INIT:
		mp_init_self(v);
		return;
	case HV_EV_IRET:
		trace_on_iret(v);	/* it runs at the next entry */
		return;
	case HV_EV_VIRT_INSN:
		/* as on a CPU without SVM/VMX (APM Vol. 3 VMRUN etc., SDM Vol. 3 31.3) */
		hv_inject_fault(v, X86_UD, false, 0);
		return;
	case HV_EV_TRIPLE_FAULT:
		guest_shutdown(v);
		return;
	case HV_EV_NPF:
		if (mp_apic_npf(v, ev) || dbg_npf(v, ev))
			return;
		LOG_ERR("nested page fault at gpa %016lx", ev->gpa);
		guest_stop(v, "unexpected nested page fault");
	default:
		LOG_ERR("exit code %lx (%s)", ev->raw,
			ev->kind < HV_EV_COUNT ? event_name[ev->kind] : "?");
		guest_stop(v, "unhandled exit");
	}
	/* MSR policy said no: #GP(0), as hardware does for a bad MSR access */
	hv_inject_fault(v, X86_GP, true, 0);
}

void hv_guest_refused(struct vcpu *v, const char *why)
{
	rec_freeze(v, HVTRACE_FREEZE_INVALID_STATE);
	LOG_ERR("vcpu %u: the processor refused the guest's state at entry after %lu exits: %s; %s", v->id,
		v->exits, why, guest_end_how());
	guest_end(v);
	cpu_halt_forever();
}

void hv_guest_nmi(struct vcpu *v)
{
	rec_on_nmi(v);
	if (!trace_on_nmi(v))
		hv.ops->inject_nmi(v);
}

void hv_exit_begin(struct vcpu *v, const struct hv_event *ev)
{
	/* before anything else: no breakpoint of the guest's (or of the
	 * engine's, which the guest's code placed) stays armed in root mode */
	host_dr7_disarm();
	v->exits++;
	if (ev->kind < HV_EV_COUNT)
		v->events[ev->kind]++;
	trace_exit_begin(v, ev);
}

void hv_handle_event(struct vcpu *v, const struct hv_event *ev)
{
	struct hv_event hc;
	/* the guest's hypercall instruction where the processor has the other
	 * vendor's (hv.hc_foreign): the #UD it raised is the hypercall's exit,
	 * an instruction the hypervisor emulates like VMMCALL's own. Its
	 * breakpoints off before guest memory is read (hv_exit_begin). */
	if (ev->kind == HV_EV_EXCEPTION && ev->vector == X86_UD && hv.hc_foreign) {
		host_dr7_disarm();
		if (hc_foreign_at_rip(v)) {
			hc = (struct hv_event){ .kind = HV_EV_HYPERCALL, .raw = ev->raw, .insn_len = 3 };
			ev = &hc;
		}
	}
	hv_exit_begin(v, ev);
	u64 rip = v->rip;
	dispatch(v, ev);
	if (ev->kind <= HV_EV_EMULATED_LAST)
		hv_emulation_done(v, v->rip != rip);
	hv_prepare_entry(v);
}

/*
 * What follows an emulated instruction, in one place for both backends (as
 * KVM's common x86 code completes one for both vendors). Completed, it owes
 * the guest the single-step trap its intercept cut off when the guest's own
 * TF was set at its start (SDM Vol. 3 18.3.1.4, APM Vol. 2 13.1.3.4): the
 * engine delivers it while it owns TF (it follows the #DB into the
 * handler), the backend otherwise. A fault injected instead owes none.
 * Either way the instruction ended any STI/MOV SS shadow.
 */
void hv_emulation_done(struct vcpu *v, bool completed)
{
	if (completed)
		trace_insn_emulated(v);
	bool trap = completed && trace_guest_tf(v);
	if (trap && trace_single_step_trap(v))
		trap = false;	/* the engine delivered it */
	hv.ops->set_single_step_trap(v, trap);
	hv.ops->end_interrupt_shadow(v);
}

void hv_backend_done(struct vcpu *v, bool completed)
{
	hv_emulation_done(v, completed);
	hv_prepare_entry(v);
}

/* VM exit loads DR7 with 400H (SDM Vol. 3 27.5.1): the backend's handler
 * ran with no breakpoint armed, as core's do after host_dr7_disarm(). */
void hv_backend_emulated(struct vcpu *v, bool completed)
{
	v->exits++;
	hv_backend_done(v, completed);
}

void hv_inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err)
{
	hv.ops->inject_exception(v, vector, has_err, err);
	trace_on_injected(v, vector);
}

void hv_prepare_entry(struct vcpu *v)
{
	mp_before_entry(v);	/* INIT and SIPI: may wait here for a SIPI */
	mp_take_nmi_ipi(v);
	rec_ctl_poll(v);	/* a host request, before this vCPU re-reads the recorder */
	dbg_before_entry(v);	/* held here while the host's debugger stops the guest */
	trace_entry_sync(v);
	irq_deliver(v);		/* a held external interrupt, when it may go */
	trace_before_entry(v);
	dbg_after_trace_sync(v);	/* tracing may have stopped just now */
	write_dr7(trace_host_dr7(v));	/* last: see trace_host_dr7 */
}
