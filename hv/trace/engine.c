/*
 * The reference branch engine: while the guest traces (IA32_DEBUGCTL.TR and
 * BTS set), every guest instruction is single-stepped with RFLAGS.TF and an
 * intercepted #DB. Before each step the instruction is decoded; after it,
 * the new RIP says whether and where it branched. Exceptions are
 * intercepted before delivery and followed into the guest's handler with a
 * hardware breakpoint the hypervisor owns (DR3), as is INT n. Records carry
 * linear addresses with the SDM's from/to rules (docs/branch-engine.md).
 *
 * The engine's TF, DR3/DR7 and DR6 are invisible to the guest: TF is never
 * forced while an event is delivered (the guest's stack frames hold its own
 * flags), PUSHF images are corrected, and DR3/DR7/DR6 are restored before
 * any guest instruction runs. Root mode, on exits.
 */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "core/gmem.h"
#include "core/log.h"
#include "core/vcpu.h"

#define DR6_B3		(1ull << 3)
#define DR6_BS		(1ull << 14)
#define DR7_L3		(1ull << 6)
#define DR7_G3		(1ull << 7)
#define DR7_RWLEN3	(0xfull << 28)

/* Exceptions the engine follows: all but NMI (2) and #MC (18), which stay
 * the platform's. */
#define TRACE_EXCEPTIONS	(0xffffffffu & ~(1u << 2) & ~(1u << 18))


static enum dec_mode code_mode(struct vcpu *v, u64 *cs_base)
{
	struct hv_segment cs;
	hv.ops->get_seg(v, SEG_CS, &cs);
	if ((cs.attr & SEG_ATTR_L) && (hv.ops->get_efer(v) & EFER_LMA)) {
		*cs_base = 0;
		return DEC_MODE_64;
	}
	*cs_base = cs.base;
	return (cs.attr & SEG_ATTR_DB) ? DEC_MODE_32 : DEC_MODE_16;
}

static u64 linear_rip(struct vcpu *v)
{
	u64 base;
	code_mode(v, &base);
	return base + v->rip;
}

/* The handler of `vector` in the guest's IDT (SDM Vol. 3 6.14.1: 16-byte
 * gates in IA-32e mode; 6.11: 8-byte gates otherwise, flat code assumed). */
static bool idt_handler(struct vcpu *v, u8 vector, u64 *addr)
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

void trace_emit(struct vcpu *v, u64 from, u64 to, int cpl)
{
	v->trace.branches++;
	ds_bts_store(v, from, to, cpl);
}

static void bp_disarm(struct vcpu *v)
{
	struct handler_bp *bp = &v->trace.bp;
	if (!bp->armed)
		return;
	write_dr3(bp->saved_dr3);
	write_dr7(0x400);
	hv.ops->set_dr(v, 7, bp->saved_dr7);
	hv.ops->set_dr(v, 6, bp->saved_dr6);
	bp->armed = false;
}

/* Follow an event delivery into the handler at `addr`. */
static void bp_arm(struct vcpu *v, u64 addr, u64 from, int cpl)
{
	struct handler_bp *bp = &v->trace.bp;
	bp_disarm(v);
	bp->saved_dr3 = read_dr3();
	bp->saved_dr7 = hv.ops->get_dr(v, 7);
	bp->saved_dr6 = v->trace.guest_dr6;
	bp->addr = addr;
	bp->from = from;
	bp->from_cpl = cpl;
	bp->armed = true;
	write_dr3(addr);
	/* L3, execute, length 1 (SDM Vol. 3 18.2.4) */
	hv.ops->set_dr(v, 7, (bp->saved_dr7 & ~(DR7_L3 | DR7_G3 | DR7_RWLEN3)) | DR7_L3 | 0x400);
	/* The same in the host's own DR7: QEMU's TCG loads DR7 from the VMCB at
	 * VMRUN without re-inserting its breakpoints (helper_vmrun assigns
	 * env->dr[7] directly), so a breakpoint must already be armed in root
	 * mode. On hardware #VMEXIT resets DR7, and the host never executes
	 * guest code, so this costs nothing there. */
	write_dr7(DR7_L3 | 0x400);
}

static void engine_stop(struct vcpu *v)
{
	struct trace_vcpu *t = &v->trace;
	bp_disarm(v);
	if (t->engine != HVTRACE_ENGINE_OFF) {
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
		hv.ops->set_exception_intercepts(v, 0);
	}
	t->engine = HVTRACE_ENGINE_OFF;
	t->step.valid = false;
	t->tf_forced = false;
}

void trace_update(struct vcpu *v)
{
	struct trace_vcpu *t = &v->trace;
	bool want = (t->ds.debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS);

	if (want && t->engine == HVTRACE_ENGINE_OFF) {
		t->engine = HVTRACE_ENGINE_REFERENCE;
		t->guest_tf = v->rflags & RFLAGS_TF;
		t->guest_dr6 = hv.ops->get_dr(v, 6);
		t->step.valid = false;
		hv.ops->set_exception_intercepts(v, TRACE_EXCEPTIONS);
	} else if (!want && t->engine != HVTRACE_ENGINE_OFF) {
		engine_stop(v);
	}
}

/* Called first on every exit: the guest's view of TF again. */
void trace_exit_begin(struct vcpu *v)
{
	struct trace_vcpu *t = &v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	t->raw_rflags = v->rflags;
	if (t->tf_forced)
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
	else
		t->guest_tf = v->rflags & RFLAGS_TF;
	t->tf_forced = false;
}

/* SDM Vol. 2A Jcc / Table B-1: condition codes; LOOPcc and JrCXZ. */
static bool branch_taken(const struct step_state *s)
{
	u64 f = s->rflags;
	bool cf = f & 1, pf = f & 4, zf = f & 0x40, sf = f & 0x80, of = f & 0x800;
	u8 op = s->insn.opcode;

	if (s->insn.branch == DEC_BR_LOOP) {
		u64 mask = s->insn.addrsize == 8 ? ~0ull : s->insn.addrsize == 4 ? 0xffffffffull : 0xffff;
		u64 rcx = s->rcx & mask;
		switch (op) {
		case 0xe3: return rcx == 0;			/* JrCXZ */
		case 0xe2: return rcx != 1;			/* LOOP */
		case 0xe1: return rcx != 1 && zf;		/* LOOPE */
		case 0xe0: return rcx != 1 && !zf;		/* LOOPNE */
		}
		return false;
	}
	bool c;
	switch ((op & 0xf) >> 1) {
	case 0: c = of; break;
	case 1: c = cf; break;
	case 2: c = zf; break;
	case 3: c = cf || zf; break;
	case 4: c = sf; break;
	case 5: c = pf; break;
	case 6: c = sf != of; break;
	default: c = zf || sf != of; break;
	}
	return (op & 1) ? !c : c;
}

static bool is_legacy_op(const struct step_state *s, u8 map, u8 op)
{
	return s->insn.encoding == DEC_ENC_LEGACY && s->insn.map == map && s->insn.opcode == op;
}

/* The single step of s->insn completed: record its branch, if it took one. */
static void step_completed(struct vcpu *v)
{
	struct trace_vcpu *t = &v->trace;
	struct step_state *s = &t->step;
	u64 to = linear_rip(v);

	if (!s->valid || s->dec != DEC_OK) {
		s->valid = false;
		return;
	}
	s->valid = false;
	switch (s->insn.branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:	/* not a branch for BTS unless it aborts */
	case DEC_BR_UD:
		if (is_legacy_op(s, 0, 0x9c)) {
			/* PUSHF stored our TF: the guest must see its own */
			u64 img;
			unsigned w = s->insn.opsize;
			if (gmem_read_linear(v, v->gpr[GPR_RSP], &img, w) == w) {
				img = (img & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
				gmem_write_linear(v, v->gpr[GPR_RSP], &img, w);
			}
		} else if (is_legacy_op(s, 0, 0x9d)) {
			/* POPF set TF to what the guest popped */
			t->guest_tf = t->raw_rflags & RFLAGS_TF;
			v->rflags = (v->rflags & ~RFLAGS_TF) | (t->raw_rflags & RFLAGS_TF);
		}
		return;
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		if (branch_taken(s))
			trace_emit(v, s->lin, to, s->cpl);
		return;
	case DEC_BR_IRET:
	case DEC_BR_SYSRET:
	case DEC_BR_UIRET:
		/* the popped flags are the guest's */
		t->guest_tf = t->raw_rflags & RFLAGS_TF;
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->raw_rflags & RFLAGS_TF);
		trace_emit(v, s->lin, to, s->cpl);
		return;
	default:
		trace_emit(v, s->lin, to, s->cpl);
		return;
	}
}

/* The guest reached the handler the engine was following. */
static void handler_entered(struct vcpu *v)
{
	struct handler_bp *bp = &v->trace.bp;
	trace_emit(v, bp->from, bp->addr, bp->from_cpl);
	bp_disarm(v);
}

bool trace_on_exception(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = &v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return false;
	t->trace_exits++;

	if (ev->vector == X86_DB) {
		u64 dr6 = hv.ops->get_dr(v, 6);
		if (t->bp.armed && (dr6 & DR6_B3) && linear_rip(v) == t->bp.addr) {
			hv.ops->set_dr(v, 6, t->guest_dr6);
			handler_entered(v);
			return true;
		}
		if (dr6 & DR6_BS) {
			hv.ops->set_dr(v, 6, t->guest_dr6);
			step_completed(v);
			if (!t->guest_tf)
				return true;
			/* the guest single-steps too: it gets its #DB */
			hv.ops->set_dr(v, 6, t->guest_dr6 | DR6_BS);
		}
	}

	/* An exception on its way to the guest: where it comes from (the
	 * faulting instruction; for INT3/INTO the instruction itself, whose
	 * RIP the CPU reports before the trap, SDM Vol. 3 6.5 / APM 15.12)
	 * and where it goes (the guest's handler). */
	u64 from = linear_rip(v);
	int cpl = hv.ops->get_cpl(v);
	struct step_state *s = &t->step;
	if ((ev->vector == X86_BP || ev->vector == 4) && s->valid && s->dec == DEC_OK &&
	    (is_legacy_op(s, 0, 0xcc) || is_legacy_op(s, 0, 0xce))) {
		from = s->lin;
		if (v->rip == s->rip)
			v->rip += s->insn.len;	/* a trap: the frame returns after it */
	}
	s->valid = false;
	if (ev->vector == X86_PF)
		hv.ops->set_cr2(v, ev->fault_addr);
	hv.ops->inject_exception(v, ev->vector, ev->has_error, ev->error_code);

	u64 handler;
	if (idt_handler(v, ev->vector, &handler))
		bp_arm(v, handler, from, cpl);
	return true;
}

void trace_before_entry(struct vcpu *v)
{
	struct trace_vcpu *t = &v->trace;
	struct step_state *s = &t->step;
	u8 bytes[15];
	u64 base;

	if (t->engine == HVTRACE_ENGINE_OFF || t->bp.armed)
		return; /* no stepping while an event is delivered */

	s->rip = v->rip;
	s->mode = code_mode(v, &base);
	s->lin = base + v->rip;
	s->rflags = v->rflags;
	s->rcx = v->gpr[GPR_RCX];
	s->cpl = hv.ops->get_cpl(v);
	size_t n = gmem_read_linear(v, s->lin, bytes, sizeof(bytes));
	s->dec = dec_decode(bytes, n, s->mode, s->rip, &s->insn);
	s->valid = true;

	/* INT n, INT3 and INTO (when OF is set) deliver through the IDT and
	 * clear TF: follow them into the handler instead of stepping (a #GP or
	 * #NP on the way exits first). On AMD hardware INT3/INTO also hit the
	 * #BP/#OF intercept, which records the same; QEMU's TCG raises them as
	 * software interrupts that no exception intercept sees. */
	int vec = -1;
	if (s->dec == DEC_OK && is_legacy_op(s, 0, 0xcd))
		vec = bytes[s->insn.imm_offset];
	else if (s->dec == DEC_OK && is_legacy_op(s, 0, 0xcc))
		vec = X86_BP;
	else if (s->dec == DEC_OK && is_legacy_op(s, 0, 0xce) && (v->rflags & 0x800))
		vec = 4;
	if (vec >= 0) {
		u64 handler;
		if (idt_handler(v, (u8)vec, &handler)) {
			bp_arm(v, handler, s->lin, s->cpl);
			s->valid = false;
			return;
		}
	}
	v->rflags |= RFLAGS_TF;
	t->tf_forced = true;
}
