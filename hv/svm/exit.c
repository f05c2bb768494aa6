/* SVM exit dispatch: each exit code the VMCB intercepts is translated into
 * an arch-neutral struct hv_event (base/vcpu.h) by the table below; an
 * exit code not in the table becomes HV_EV_UNHANDLED, which dispatch/event.c
 * logs with a VMCB dump before stopping the guest. Exit codes: APM Vol. 2
 * Appendix C. */
#include "hvtrace/abi.h"
#include "arch/x86/paging.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "base/gmem.h"
#include "base/log.h"
#include "base/prof.h"
#include "dispatch/cpuid.h"
#include "svm/svm.h"

typedef void (*svm_exit_fn)(struct svm_vcpu *sv, struct hv_event *ev);

static void exit_msr(struct svm_vcpu *sv, struct hv_event *ev)
{
	/* APM 15.11: EXITINFO1 is 0 for RDMSR, 1 for WRMSR; ECX names the MSR */
	ev->kind = sv->vmcb->control.exit_info1 ? HV_EV_MSR_WRITE : HV_EV_MSR_READ;
}

/* APM 15.12: an intercepted exception exits before delivery; EXITINFO1
 * holds its error code where it has one, EXITINFO2 the #PF address. */
static void exit_exception(struct svm_vcpu *sv, struct hv_event *ev)
{
	static const u32 has_error = (1u << X86_DF) | (1u << X86_TS) | (1u << X86_NP) |
				     (1u << X86_SS) | (1u << X86_GP) | (1u << X86_PF) |
				     (1u << X86_AC) | (1u << X86_CP) | (1u << X86_VC) |
				     (1u << X86_SX);
	ev->kind = HV_EV_EXCEPTION;
	ev->vector = (u8)(sv->vmcb->control.exit_code - SVM_EXIT_EXCP_BASE);
	ev->has_error = has_error & (1u << ev->vector);
	ev->error_code = (u32)sv->vmcb->control.exit_info1;
	ev->fault_addr = sv->vmcb->control.exit_info2;
}

/* APM 15.21.1, 15.9: physical interrupts and NMIs stay pending while GIF
 * is clear, in root mode as in the guest. The host opens GIF and IF for a
 * moment so the CPU acknowledges what is pending through the host's IDT
 * (hv/arch/x86/exc.S records the vector and notes an NMI); the guest then
 * gets it by event injection and EOIs an interrupt itself. */
u32 svm_take_pending(struct vcpu *v, u8 *vector)
{
	struct host_cpu *h = host_cpu_this();
	(void)v;
	h->irq_vector = 0;
	h->nmi_pending = 0;
	asm volatile("stgi; sti; nop; nop; nop; nop; cli; clgi" ::: "memory");
	*vector = (u8)h->irq_vector;
	if (h->irq_stale) {
		static bool said;
		if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
			LOG_WARN("a vector came through the host's IDT with IF clear (%u so far): not an "
				 "interrupt, dropped (hv/arch/x86/exc.S)", h->irq_stale);
	}
	u32 got = (h->irq_vector ? HV_PENDING_IRQ : 0) | (h->nmi_pending ? HV_PENDING_NMI : 0);
	h->nmi_pending = 0;
	return got;
}

/* An interrupt for the guest, still pending in the local APIC; an NMI
 * taken in the same window goes to the guest before the next entry
 * (svm_vcpu_run). */
static void exit_intr(struct svm_vcpu *sv, struct hv_event *ev)
{
	u8 vector;
	if (svm_take_pending(NULL, &vector) & HV_PENDING_NMI)
		sv->nmi_pending = true;
	ev->kind = HV_EV_INTR;
	ev->vector = vector;
}

/* APM 15.10.2: port, size and form in EXITINFO1, the next RIP in EXITINFO2
 * (also without NRIP save: QEMU's TCG fills it) */
static void exit_ioio(struct svm_vcpu *sv, struct hv_event *ev)
{
	u64 info1 = sv->vmcb->control.exit_info1, next = sv->vmcb->control.exit_info2;
	u64 rip = sv->vmcb->save.rip;

	ev->kind = HV_EV_IO;
	ev->io_port = IOIO_PORT(info1);
	ev->io_size = (info1 & IOIO_SZ32) ? 4 : (info1 & IOIO_SZ16) ? 2 : (info1 & IOIO_SZ8) ? 1 : 0;
	ev->io_flags = ((info1 & IOIO_TYPE_IN) ? HV_IO_IN : 0) | ((info1 & IOIO_STR) ? HV_IO_STRING : 0) |
		       ((info1 & IOIO_REP) ? HV_IO_REP : 0);
	if (next > rip && next - rip <= 15)
		ev->insn_len = (u8)(next - rip);
}

/* APM 15.9: an intercepted NMI stays pending until GIF is set: the host
 * takes it through its own IDT in a short GIF window (exc.S notes it) and
 * the guest gets it by event injection. None taken: it was not ours. */
static void exit_nmi(struct svm_vcpu *sv, struct hv_event *ev)
{
	struct host_cpu *h = host_cpu_this();
	(void)sv;
	h->nmi_pending = 0;
	asm volatile("stgi; nop; nop; nop; nop; clgi" ::: "memory");
	if (h->nmi_pending) {
		h->nmi_pending = 0;
		ev->kind = HV_EV_NMI;
	} else {
		ev->kind = HV_EV_INTR;	/* vector 0: nothing to deliver */
	}
}

/* APM 15.25.6: the faulting guest-physical address in EXITINFO2, the
 * #PF-style error code (bit 1: a write) in EXITINFO1 */
static void exit_npf(struct svm_vcpu *sv, struct hv_event *ev)
{
	ev->kind = HV_EV_NPF;
	ev->gpa = sv->vmcb->control.exit_info2;
	ev->error_code = (u32)sv->vmcb->control.exit_info1;
}

#define SIMPLE(name, k) \
	static void name(struct svm_vcpu *sv, struct hv_event *ev) { (void)sv; ev->kind = k; }
SIMPLE(exit_cpuid, HV_EV_CPUID)
SIMPLE(exit_vmmcall, HV_EV_HYPERCALL)
SIMPLE(exit_virt_insn, HV_EV_VIRT_INSN)
SIMPLE(exit_shutdown, HV_EV_TRIPLE_FAULT)
SIMPLE(exit_invd, HV_EV_INVD)
SIMPLE(exit_init, HV_EV_INIT)
SIMPLE(exit_vintr, HV_EV_IRQ_WINDOW)
SIMPLE(exit_hlt, HV_EV_HLT)
SIMPLE(exit_rdpmc, HV_EV_RDPMC)
SIMPLE(exit_iret, HV_EV_IRET)
#undef SIMPLE

static const svm_exit_fn svm_exit_handlers[] = {
	[SVM_EXIT_INTR] = exit_intr,
	[SVM_EXIT_NMI] = exit_nmi,
	[SVM_EXIT_INIT] = exit_init,
	[SVM_EXIT_VINTR] = exit_vintr,
	[SVM_EXIT_HLT] = exit_hlt,
	[SVM_EXIT_CPUID] = exit_cpuid,
	[SVM_EXIT_IRET] = exit_iret,
	[SVM_EXIT_RDPMC] = exit_rdpmc,
	[SVM_EXIT_INVD] = exit_invd,
	/* WBINVD too: QEMU 7.2's TCG checks the WBINVD intercept for an INVD
	 * (fixed upstream in 2023); done as WBINVD either way */
	[SVM_EXIT_WBINVD] = exit_invd,
	[SVM_EXIT_IOIO] = exit_ioio,
	[SVM_EXIT_MSR] = exit_msr,
	[SVM_EXIT_SHUTDOWN] = exit_shutdown,
	[SVM_EXIT_VMMCALL] = exit_vmmcall,
	[SVM_EXIT_VMRUN] = exit_virt_insn,
	[SVM_EXIT_VMLOAD] = exit_virt_insn,
	[SVM_EXIT_VMSAVE] = exit_virt_insn,
	[SVM_EXIT_STGI] = exit_virt_insn,
	[SVM_EXIT_CLGI] = exit_virt_insn,
	[SVM_EXIT_SKINIT] = exit_virt_insn,
	[SVM_EXIT_INVLPGA] = exit_virt_insn,
};

/* The CR write intercept for CRn off until the next exit: the instruction
 * at RIP runs as the guest wrote it (or exits again if it was not yet
 * run, an interrupt first). */
static void svm_cr_run_once(struct svm_vcpu *sv, int n)
{
	sv->vmcb->control.intercept_cr &= ~INTERCEPT_CR_WRITE(n);
	sv->cr_run_once |= INTERCEPT_CR_WRITE(n);
}

/* unreadable code (outside the RAM and reserved memory the firmware's
 * map names: MMIO, say) or changed under us: runs unchecked, said once
 * per register */
static void svm_cr_unreadable(struct vcpu *v, struct svm_vcpu *sv, int n)
{
	static u32 said;
	if (!(__atomic_fetch_or(&said, 1u << n, __ATOMIC_RELAXED) & (1u << n)))
		LOG_WARN("vcpu %u: the write to CR%d at %lx cannot be read: run unchecked (said once)", v->id, n,
			 v->rip);
	svm_cr_run_once(sv, n);
}

/*
 * MOV to CR4 (0F 22 /r, reg = 4), intercepted: emulated with the checks
 * of APM Vol. 3 / SDM Vol. 2B MOV to CR: #GP for a reserved bit (those
 * the guest's CPUID does not offer, VMXE, bits 63:32), for clearing PAE or
 * changing LA57 in long mode, for setting PCIDE outside long mode or with
 * CR3[11:0] not 0. QEMU's TCG accepts reserved bits the hardware refuses,
 * and VMRUN then fails on the guest state (issue #15). A change of the
 * paging bits flushes the guest's TLB as the MOV would. Handled here, as
 * the VMX backend handles its CR exits.
 */
static void svm_mov_to_cr4(struct vcpu *v, struct svm_vcpu *sv, struct hv_event *ev)
{
	struct vmcb_save *s = &sv->vmcb->save;
	struct hv_mov_crdr m;

	if (!hv_decode_mov_crdr(v, &m) || m.opcode != 0x22 || m.reg != 4) {
		svm_cr_unreadable(v, sv, 4);
		return;
	}
	u64 val = v->gpr[m.gpr], old = s->cr4;
	if (m.mode != DEC_MODE_64)
		val &= 0xffffffffull;
	bool lma = s->efer & EFER_LMA;
	if ((val & ~cr4_valid_bits_here()) || (lma && !(val & CR4_PAE)) || (lma && ((val ^ old) & CR4_LA57)) ||
	    ((val & CR4_PCIDE) && !(old & CR4_PCIDE) && (!lma || (s->cr3 & 0xfff)))) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	s->cr4 = val;
	if ((val ^ old) & (CR4_PGE | CR4_PAE | CR4_PSE | CR4_PCIDE | CR4_SMEP | CR4_SMAP | CR4_PKE | CR4_LA57))
		sv->vmcb->control.tlb_control = TLB_CONTROL_FLUSH_ALL;
	hv_skip_insn(v, ev, 3);
}

/*
 * MOV to CR0 (0F 22 /r, reg = 0), intercepted with CLTS and LMSW, which
 * the CR0 write intercept catches too (APM Vol. 2 15.9). #GP as the
 * hardware gives it (SDM Vol. 2B MOV to CR, APM Vol. 3 MOV CRn): bits
 * 63:32, NW set with CD clear, PG without PE, PG set with EFER.LME and
 * CR4.PAE clear, PG cleared in 64-bit code or with CR4.PCIDE set. QEMU's
 * TCG takes NW without CD and the next VMRUN refused the state (issue
 * #15). A legal value that changes no mode bit is written here (CD, NW
 * and WP flush the guest's TLB); one that changes PE or PG, a mode switch
 * whose EFER.LMA and state the processor updates itself, runs as written
 * (svm_cr_run_once), as do CLTS and LMSW, which cannot make a bad CR0.
 */
static void svm_mov_to_cr0(struct vcpu *v, struct svm_vcpu *sv, struct hv_event *ev)
{
	struct vmcb_save *s = &sv->vmcb->save;
	struct hv_mov_crdr m;

	if (!hv_decode_mov_crdr(v, &m)) {
		u8 op[2];
		if (gmem_fetch_linear(v, gmem_linear_rip(v), op, 2) == 2 && op[0] == 0x0f &&
		    (op[1] == 0x06 || op[1] == 0x01)) {
			svm_cr_run_once(sv, 0);	/* CLTS, LMSW */
			return;
		}
		svm_cr_unreadable(v, sv, 0);
		return;
	}
	if (m.opcode != 0x22 || m.reg != 0) {
		svm_cr_unreadable(v, sv, 0);
		return;
	}
	u64 val = v->gpr[m.gpr], old = s->cr0;
	if (m.mode != DEC_MODE_64)
		val &= 0xffffffffull;
	bool in64 = (s->efer & EFER_LMA) && (s->cs.attr & VMCB_ATTR_L);
	if ((val >> 32) || ((val & CR0_NW) && !(val & CR0_CD)) || ((val & CR0_PG) && !(val & CR0_PE)) ||
	    ((val & CR0_PG) && !(old & CR0_PG) && (s->efer & EFER_LME) && !(s->cr4 & CR4_PAE)) ||
	    (!(val & CR0_PG) && (old & CR0_PG) && (in64 || (s->cr4 & CR4_PCIDE)))) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	if ((val ^ old) & (CR0_PE | CR0_PG)) {
		svm_cr_run_once(sv, 0);
		return;
	}
	s->cr0 = val;
	if ((val ^ old) & (CR0_CD | CR0_NW | CR0_WP))
		sv->vmcb->control.tlb_control = TLB_CONTROL_FLUSH_ALL;
	hv_skip_insn(v, ev, 3);
}

/*
 * MOV to CR8 (REX.R 0F 22 /r; AMD's LOCK MOV CR0 outside 64-bit mode),
 * intercepted only while an interrupt window is open (svm.c
 * svm_set_irq_window). With V_INTR_MASKING clear the guest's CR8 is the
 * local APIC's TPR (APM Vol. 2 15.21.1), the hypervisor's too: written
 * here, and V_TPR with it. Bits 63:4 set: #GP (SDM Vol. 2B MOV to CR).
 */
static void svm_mov_to_cr8(struct vcpu *v, struct svm_vcpu *sv, struct hv_event *ev)
{
	struct hv_mov_crdr m;

	if (!hv_decode_mov_crdr(v, &m) || m.opcode != 0x22 || (m.reg != 8 && m.reg != 0)) {
		svm_cr_unreadable(v, sv, 8);
		return;
	}
	u64 val = v->gpr[m.gpr];
	if (m.mode != DEC_MODE_64)
		val &= 0xffffffffull;
	if (val & ~INT_CTL_V_TPR) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	write_cr8(val);
	sv->vmcb->control.int_ctl = (sv->vmcb->control.int_ctl & ~INT_CTL_V_TPR) | val;
	hv_skip_insn(v, ev, 4);
}

void svm_handle_exit(struct vcpu *v, struct svm_vcpu *sv)
{
	struct vmcb_control *c = &sv->vmcb->control;
	u64 code = c->exit_code;
	struct hv_event ev = {
		.kind = HV_EV_UNHANDLED,
		.raw = code,
		.msr = (u32)v->gpr[GPR_RCX],
	};

	/* NRIP save (APM 15.7.1) gives the next RIP for intercepted
	 * instructions; without it core decodes the length itself. */
	if ((hv.caps & HV_CAP_NRIP) && c->next_rip > v->rip && c->next_rip - v->rip <= 15)
		ev.insn_len = (u8)(c->next_rip - v->rip);
	c->event_inj = 0;
	if (sv->cr_run_once) {	/* the one unchecked CR write ran (or not yet: it exits again) */
		c->intercept_cr |= sv->cr_run_once;
		sv->cr_run_once = 0;
	}
	/* APM 15.7.2: the event this exit interrupted the delivery of */
	u64 vec = c->exit_int_info;
	if (vec & EVENTINJ_V) {
		ev.vectoring = true;
		ev.vec_vector = (u8)vec;
		ev.vec_type = (u8)((vec >> 8) & 7);
	}

	prof_switch(v, HVTRACE_PROF_HANDLER);
	if (code < ARRAY_SIZE(svm_exit_handlers) && svm_exit_handlers[code])
		svm_exit_handlers[code](sv, &ev);
	else if (code >= SVM_EXIT_EXCP_BASE && code < SVM_EXIT_EXCP_BASE + 32)
		exit_exception(sv, &ev);
	else if (code >= SVM_EXIT_DR_BASE && code < SVM_EXIT_DR_BASE + 32)
		ev.kind = HV_EV_DR_ACCESS;	/* core decodes the MOV itself */
	else if (code == SVM_EXIT_NPF)
		exit_npf(sv, &ev);
	if (code == SVM_EXIT_CR4_WRITE || code == SVM_EXIT_CR0_WRITE || code == SVM_EXIT_CR8_WRITE) {
		/* emulated here, after core's first step like every exit (the
		 * engine settles the branch it planned before anything moves) */
		u64 rip = v->rip;
		ev.kind = HV_EV_CR_WRITE;
		hv_exit_begin(v, &ev);
		if (code == SVM_EXIT_CR0_WRITE)
			svm_mov_to_cr0(v, sv, &ev);
		else if (code == SVM_EXIT_CR4_WRITE)
			svm_mov_to_cr4(v, sv, &ev);
		else
			svm_mov_to_cr8(v, sv, &ev);
		hv_backend_done(v, v->rip != rip);
	} else {
		hv_handle_event(v, &ev);
	}
	/* an event cut short by an exit that is not its own exception (an
	 * interrupt, an intercepted instruction cannot be): delivered again,
	 * unless core injects something itself (EXITINTINFO has EVENTINJ's
	 * format, APM 15.7.2). A software interrupt is not: its instruction
	 * runs again. */
	if (ev.vectoring && ev.vec_type != HV_VEC_SOFT && ev.kind != HV_EV_EXCEPTION &&
	    c->event_inj == 0)
		c->event_inj = vec;
}

static void dump_seg(const char *n, const struct vmcb_seg *s)
{
	LOG_ERR("  %-4s sel %04x attr %03x limit %08x base %016lx", n, s->sel, s->attr, s->limit,
		s->base);
}

void svm_dump(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	const struct vmcb_control *c = &sv->vmcb->control;
	const struct vmcb_save *s = &sv->vmcb->save;

	LOG_ERR("vcpu %u VMCB at %016lx: exit %lx info1 %lx info2 %lx intinfo %lx", v->id,
		sv->vmcb_pa, c->exit_code, c->exit_info1, c->exit_info2, c->exit_int_info);
	LOG_ERR("  rip %016lx rsp %016lx rflags %016lx cpl %u", s->rip, s->rsp, s->rflags, s->cpl);
	LOG_ERR("  rax %016lx rbx %016lx rcx %016lx rdx %016lx", s->rax, v->gpr[GPR_RBX],
		v->gpr[GPR_RCX], v->gpr[GPR_RDX]);
	LOG_ERR("  rsi %016lx rdi %016lx rbp %016lx", v->gpr[GPR_RSI], v->gpr[GPR_RDI],
		v->gpr[GPR_RBP]);
	LOG_ERR("  cr0 %016lx cr2 %016lx cr3 %016lx cr4 %016lx efer %016lx", s->cr0, s->cr2,
		s->cr3, s->cr4, s->efer);
	dump_seg("cs", &s->cs);
	dump_seg("ss", &s->ss);
	dump_seg("ds", &s->ds);
	dump_seg("tr", &s->tr);
	LOG_ERR("  gdtr %016lx/%x idtr %016lx/%x exits %lu", s->gdtr.base, s->gdtr.limit,
		s->idtr.base, s->idtr.limit, v->exits);
}
