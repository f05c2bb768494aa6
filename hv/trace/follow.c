/* Following events into the guest's handlers: exceptions, interrupts,
 * NMIs, INT n, SYSCALL/SYSENTER and the faults the hypervisor injects.
 * The record is made when the handler's first instruction is reached (the
 * engine's breakpoint there). Root mode. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/integrity.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "trace/dbg.h"
#include "trace/engine.h"

/* The handler of `vector` in the guest's IDT (SDM Vol. 3 6.14.1: 16-byte
 * gates in IA-32e mode; 6.11: 8-byte gates otherwise, flat code assumed). */
bool idt_handler(struct vcpu *v, u8 vector, u64 *addr)
{
	struct hv_segment idtr;
	u64 g[2];
	hv.ops->get_seg(v, SEG_IDTR, &idtr);
	if (hv.ops->get_efer(v) & EFER_LMA) {
		if ((u32)vector * 16 + 15 > idtr.limit ||
		    gmem_read_linear(v, idtr.base + vector * 16, g, 16) != 16 || !(g[0] & (1ull << 47)))
			return false;
		*addr = (g[0] & 0xffff) | ((g[0] >> 32) & 0xffff0000) | (g[1] << 32);
		return true;
	}
	if ((u32)vector * 8 + 7 > idtr.limit || gmem_read_linear(v, idtr.base + vector * 8, g, 8) != 8 ||
	    !(g[0] & (1ull << 47)))
		return false;
	*addr = (g[0] & 0xffff) | ((g[0] >> 32) & 0xffff0000);
	return true;
}

/* The handler an event was followed to is reached: its record. An INT n,
 * INT3, INTO, INT1 or SYSCALL/SYSENTER/SYSRET followed there (not
 * stepped) has now retired, a branch (far) for the PMU; an exception or
 * interrupt is no instruction. */
static void handler_reached(struct vcpu *v)
{
	const struct handler_bp *bp = &v->trace->bp;
	trace_emit(v, bp->from, bp->addr, bp->from_cpl, bp->rec_kind, bp->rec_aux);
	if (bp->rec_kind == HVTRACE_REC_FAR ||
	    (bp->rec_kind == HVTRACE_REC_EXCEPTION && (bp->rec_aux & HVTRACE_AUX_SOFT)))
		pmu_retired(v, PMU_OCC_INSN | pmu_branch_occ(bp->rec_kind, bp->rec_aux, true),
			    bp->from_cpl, bp->from);
}

bool trace_on_exception(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return nmi_step_db(v, ev) || dbg_step_db(v, ev) || dbg_bp_hit(v, ev) || trigger_hit(v, ev);
	t->trace_exits++;

	u64 causes = 0;
	if (ev->vector == X86_DB) {
		/* The CPU's DR6 was clean at entry: these are this #DB's causes,
		 * each handled on its own (one #DB may carry several). None:
		 * INT1, whose #DB sets no DR6 bit. */
		causes = hv.ops->get_dr(v, 6) & DR6_CAUSES;
		if (!causes && t->dbg_dr.tw_fired) {
			/* the debugger's watchpoint alone (dbg_trace_dr_exit took its cause): the
			 * instruction completed, the engine goes on from here as after an interrupt */
			hv.ops->set_dr(v, 6, DR6_CLEAN);
			return true;
		}
		u64 at = gmem_linear_rip(v);
		bool ours = t->bp.armed && (((causes & DR6_B3) && at == t->bp.addr) ||
					    ((causes & DR6_B2) && t->bp.addr2 && at == t->bp.addr2));
		bool guest_trap = false;
		/* the guest's own breakpoints: DR0/DR1, and its data breakpoints
		 * the host DR7 armed in DR2/DR3 (trace_host_dr7) */
		u64 guest_bits = causes & (3 | t->host_guest_data);
		if (v->rflags & RFLAGS_RF) {
			/* RF suppresses instruction breakpoints (SDM Vol. 3
			 * 18.3.1.1); QEMU still reports their Bn with a single
			 * step that lands on one */
			u64 dr7 = t->bp.armed ? t->bp.saved_dr7 : hv.ops->get_dr(v, 7);
			u64 exec = guest_exec_bps(dr7);
			for (int i = 0; i < 2; i++)
				if (exec & (3ull << (2 * i)))
					guest_bits &= ~(1ull << i);
		}
		if (ours) {
			if (t->bp.kind == BP_HANDLER) {
				step_shadowed_reached(v);
				handler_reached(v);
			}
			bp_disarm(v);
		}
		if (causes & DR6_BS) {
			/* the guest's trap when its own TF was set at the start of
			 * the instruction (SDM Vol. 3 18.3.1.4: a POPF that clears TF
			 * still traps), or when the engine was not stepping */
			guest_trap = t->was_stepping ? (t->step.valid && (t->step.rflags & RFLAGS_TF)) : true;
			/* with BTF only after a branch the engine stepped: while the
			 * guest's TF and BTF are set every instruction is stepped,
			 * so a trap the engine did not step follows no branch */
			if (t->ds.debugctl & DEBUGCTL_BTF)
				guest_trap = guest_trap && t->was_stepping && step_branched(&t->step);
			step_completed(v);
		}
		hv.ops->set_dr(v, 6, DR6_CLEAN);
		if (!guest_trap && !guest_bits && (ours || (causes & DR6_BS)))
			return true;
		/* what the guest's DR6 now says (SDM Vol. 3 18.2.3) */
		guest_dr6_db(v, (guest_trap ? DR6_BS : 0) | guest_bits);
	}

	/* An exception on its way to the guest: from the faulting instruction
	 * (for INT3/INTO the instruction itself, whose RIP the CPU reports
	 * before the trap: SDM Vol. 3 6.5, APM 15.12) to the guest's handler. */
	u64 from = gmem_linear_rip(v);
	int cpl = hv.ops->get_cpl(v);
	struct step_state *s = &t->step;
	if (ev->vector == X86_BP || ev->vector == X86_OF || (ev->vector == X86_DB && !causes)) {
		/* INT3/INTO/INT1 are traps, but an intercepted one is reported
		 * at the instruction (VMX 27.2.2; SVM likewise): the guest's
		 * frame must return after it. Where the CPU already moved past
		 * it, the step state still names the instruction. */
		u8 b[15];
		struct dec_insn in;
		u64 base;
		enum dec_mode mode = gmem_code_mode(v, &base);
		u8 op = ev->vector == X86_BP ? 0xcc : ev->vector == X86_OF ? 0xce : 0xf1;
		if (gmem_decode(v, base + v->rip, v->rip, mode, b, &in) == DEC_OK && is_legacy_op(&in, 0, op)) {
			v->rip += in.len;
		} else if (s->dec == DEC_OK && is_legacy_op(&s->insn, 0, op) && s->lin + s->insn.len == from) {
			from = s->lin;
		}
	}
	s->valid = false;
	if (ev->vector == X86_PF)
		hv.ops->set_cr2(v, ev->fault_addr);
	hv.ops->inject_exception(v, ev->vector, ev->has_error, ev->error_code);

	u64 handler;
	if (idt_handler(v, ev->vector, &handler))
		bp_arm_handler(v, handler, from, cpl, HVTRACE_REC_EXCEPTION, ev->vector);
	else
		bp_disarm(v);
	return true;
}

/* Follows an event injected at the guest's RIP to its IDT handler, where
 * the record from that RIP (`kind`, `aux`) is made. */
void follow_event(struct vcpu *v, u8 vector, u8 kind, u32 aux)
{
	u64 handler;
	if (idt_handler(v, vector, &handler))
		bp_arm_handler(v, handler, gmem_linear_rip(v), hv.ops->get_cpl(v), kind, aux);
	else
		bp_disarm(v);
}

/* The stack pointer as the code at `lin` uses it: the whole RSP in 64-bit
 * code, ESP otherwise (IRET restores what the interrupt saved). */
static u64 mode_sp(struct vcpu *v)
{
	u64 base;
	return gmem_code_mode(v, &base) == DEC_MODE_64 ? v->gpr[GPR_RSP] : (u32)v->gpr[GPR_RSP];
}

/* An exit the hypervisor takes only while tracing (an external interrupt,
 * its window, a HLT while one is held). */
void trace_count_exit(struct vcpu *v)
{
	if (v->trace->engine != HVTRACE_ENGINE_OFF)
		v->trace->trace_exits++;
}

/* The held external interrupt to inject now, taken out of v->irq_held
 * (trace/pace.c pace_pick): the highest, unless the engine runs and it is
 * a paced vector whose pace the guest has not yet made; -1: none. */
int trace_irq_pick(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (t->dbg_step.on || t->dbg_dr.to_on || t->dbg_dr.tstep)
		return -1;	/* the debugger's step runs one instruction (or delivery), not a handler */
	bool due = t->engine == HVTRACE_ENGINE_OFF || pace_due(&t->pace, t->branches);
	return pace_pick(&t->pace, v->irq_held, v->irq_owed, due);
}

/* An external interrupt was acknowledged for the guest (it is held) */
void trace_irq_arrived(struct vcpu *v, u8 vector)
{
	if (v->trace->engine != HVTRACE_ENGINE_OFF)
		pace_arrived(&v->trace->pace, vector);
}

bool trace_irq_paced(const struct vcpu *v)
{
	const struct trace_vcpu *t = v->trace;
	return t->engine != HVTRACE_ENGINE_OFF && t->pace.pace;
}

/* The guest halted with an interrupt held: it is due at once. */
void trace_irq_halted(struct vcpu *v)
{
	v->trace->pace.halted = true;
}

/* An external interrupt, acknowledged by the backend and injected by
 * dispatch/irq.c: recorded from the instruction it interrupts (the address
 * the guest's frame returns to) to the guest's handler, and followed there. */
void trace_irq_injected(struct vcpu *v, u8 vector)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	t->step.valid = false;
	pace_injected(&t->pace, t->branches, gmem_linear_rip(v), mode_sp(v), vector, rdtsc());
	follow_event(v, vector, HVTRACE_REC_INTERRUPT, vector);
}

/* A stepped IRET completed at `to` (linear): the end of an injected
 * interrupt's handler when it returns where that interrupt came. */
void trace_irq_iret(struct vcpu *v, u64 to)
{
	pace_iret(&v->trace->pace, v->trace->branches, to, mode_sp(v), rdtsc());
}

/* A fault the hypervisor raises for an instruction it emulates (#GP for
 * an MSR, #UD for a virtualization instruction): while tracing it is
 * recorded and followed into the guest's handler like one the CPU raised. */
void trace_on_injected(struct vcpu *v, u8 vector)
{
	if (v->trace->engine == HVTRACE_ENGINE_OFF)
		return;
	v->trace->step.valid = false;
	follow_event(v, vector, HVTRACE_REC_EXCEPTION, vector);
}

/* A fault for an instruction the engine emulates itself (MOV DR) */
void inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err)
{
	hv.ops->inject_exception(v, vector, has_err, err);
	trace_on_injected(v, vector);
}

/* An instruction the hypervisor emulated has completed with the guest's
 * own TF set (dispatch/event.c hv_emulation_done): the single-step trap the
 * intercept cut off (SDM Vol. 3 18.3.1.4). While tracing the engine owns
 * TF, so it delivers the trap and follows it; otherwise the backend does. */
bool trace_single_step_trap(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return false;
	guest_dr6_db(v, DR6_BS);
	t->step.valid = false;
	hv.ops->inject_exception(v, X86_DB, false, 0);
	follow_event(v, X86_DB, HVTRACE_REC_EXCEPTION, X86_DB);
	return true;
}
/* The guest's own TF: RFLAGS.TF unless the engine or a hidden step
 * (trace/hstep.c: the debugger's, an NMI's IRET) set it. */
bool trace_guest_tf(const struct vcpu *v)
{
	const struct trace_vcpu *t = v->trace;
	if (t->dbg_step.on)
		return t->dbg_step.tf;
	if (t->nmi_step.on)
		return t->nmi_step.tf;
	return t->tf_forced ? t->guest_tf : (v->rflags & RFLAGS_TF);
}

/* INT n, INT3, INT1 and INTO (when OF is set) deliver through the IDT and
 * clear TF: follow them into the handler (a #GP or #NP on the way exits first).
 * On AMD hardware INT3/INTO also hit the #BP/#OF intercept, which records
 * the same; QEMU's TCG raises them as software interrupts no exception
 * intercept sees. */
int soft_int_vector(struct vcpu *v, const struct dec_insn *in, const u8 *bytes)
{
	if (is_legacy_op(in, 0, 0xcd))
		return bytes[in->imm_offset];
	if (is_legacy_op(in, 0, 0xcc))
		return X86_BP;
	if (is_legacy_op(in, 0, 0xce) && (v->rflags & RFLAGS_OF))
		return X86_OF;
	if (is_legacy_op(in, 0, 0xf1))
		return X86_DB;	/* INT1 (ICEBP) */
	return -1;
}

bool follow_soft_int(struct vcpu *v, const struct dec_insn *in, const u8 *bytes, u64 lin,
		     int cpl)
{
	int vec = soft_int_vector(v, in, bytes);
	u64 handler;
	if (vec < 0 || !idt_handler(v, (u8)vec, &handler))
		return false;
	bp_arm_handler(v, handler, lin, cpl, HVTRACE_REC_EXCEPTION, (u32)vec | HVTRACE_AUX_SOFT);
	return true;
}

/* Where SYSCALL and SYSENTER jump (an MSR's address; SDM Vol. 2B SYSCALL:
 * LSTAR in 64-bit mode, CSTAR in compatibility mode on AMD; SYSENTER:
 * SYSENTER_EIP) and SYSRET returns; false: none of them, or one that
 * raises #UD first (SCE clear, SYSENTER_CS null). */
bool syscall_target(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 *to)
{
	if (is_legacy_op(in, 1, 0x05)) {
		if (!(hv.ops->get_efer(v) & EFER_SCE))
			return false;
		*to = hv.ops->get_msr(v, mode == DEC_MODE_64 ? MSR_LSTAR : MSR_CSTAR);
	} else if (is_legacy_op(in, 1, 0x34)) {
		if (!(hv.ops->get_msr(v, MSR_IA32_SYSENTER_CS) & 0xfffc))
			return false;
		*to = hv.ops->get_msr(v, MSR_IA32_SYSENTER_EIP);
		if (!(hv.ops->get_efer(v) & EFER_LMA))
			*to &= 0xffffffffull;
	} else if (in->branch == DEC_BR_SYSRET) {
		/* SYSRET loads RFLAGS from R11 and the CPU checks that TF, not
		 * ours, after it (QEMU's TCG and AMD alike): a step would not
		 * trap. It returns to RCX (REX.W) or ECX, CS base 0 (SDM Vol. 2B
		 * SYSRET); at CPL > 0 or outside long mode the #GP/#UD exits first. */
		*to = (in->rex & 8) ? v->gpr[GPR_RCX] : (u32)v->gpr[GPR_RCX];
	} else {
		return false;
	}
	return true;
}

/* SYSCALL and SYSENTER jump to an MSR's address and may clear TF through
 * SFMASK (Linux's does), SYSRET replaces RFLAGS: follow them there like
 * INT n. A #UD on the way (SCE clear, SYSENTER on AMD in long mode)
 * exits first and is followed instead. */
bool follow_syscall(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 lin,
		    int cpl)
{
	u64 to;
	if (!syscall_target(v, in, mode, &to))
		return false;
	u32 type;
	bp_arm_handler(v, to, lin, cpl, rec_kind_of(in, &type), 0);
	v->trace->bp.rec_aux = type;
	return true;
}

/*
 * The guest's TF put back where an instruction run with a TF not the
 * guest's (the engine's step, the debugger's hidden one) saved RFLAGS:
 * R11 for a SYSCALL (SDM Vol. 2B SYSCALL: R11 := RFLAGS, before SFMASK
 * masks them), a `w`-byte image at linear `at` for an interrupt's frame
 * or a PUSHF. A page that cannot be read or written there is left as it is.
 */
void mend_saved_tf_r11(struct vcpu *v, bool tf)
{
	v->gpr[GPR_R11] = (v->gpr[GPR_R11] & ~RFLAGS_TF) | (tf ? RFLAGS_TF : 0);
}

void mend_saved_tf(struct vcpu *v, u64 at, unsigned w, bool tf)
{
	u64 img = 0;
	if (gmem_read_linear(v, at, &img, w) == w) {
		img = (img & ~RFLAGS_TF) | (tf ? RFLAGS_TF : 0);
		gmem_write_linear(v, at, &img, w);
	}
}
