/*
 * The software branch engines. While the guest traces (IA32_DEBUGCTL.TR
 * and BTS set) one of two engines produces the branch records BTS hardware
 * would (docs/branch-engine.md):
 *
 *  - reference: single-steps every guest instruction (RFLAGS.TF and an
 *    intercepted #DB), decoding each one first; after the step the new RIP
 *    says whether and where it branched. Simple and obviously right: the
 *    oracle the fast engine is tested against.
 *  - fast: decodes ahead to the next control transfer and stops there with
 *    a breakpoint the hypervisor owns (DR3); at the branch it computes the
 *    outcome from the live state (flags, RCX, the stack, the ModRM operand)
 *    and plans the next block: one exit per executed branch. Rare kinds
 *    (far transfers, IRET, SYSCALL...) are single-stepped.
 *
 * Both intercept exceptions and external interrupts and follow them into
 * the guest's handler (DR3 on its first instruction), as they follow INT n,
 * INT3 and INTO. Records carry linear addresses. The engines' TF and debug
 * registers stay invisible to the guest: TF is never forced while an event
 * is delivered and PUSHF images are corrected; while tracing, the guest's
 * DR6 is virtual (the CPU's is cleared before every entry, so each #DB's
 * causes are exact) and its MOVs to and from DR2, DR3, DR6 and DR7 are
 * emulated against the values the engine saved. Root mode.
 */
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
#include "trace/trace.h"

#define RFLAGS_RF	(1ull << 16)
#define RFLAGS_OF	(1ull << 11)

/* How far the fast engine decodes ahead for the next control transfer. */
#define FAST_SCAN_INSNS	128

/* Exceptions the engines follow: all but NMI (2) and #MC (18), which stay
 * the platform's. */
#define TRACE_EXCEPTIONS	(0xffffffffu & ~(1u << X86_NMI) & ~(1u << X86_MC))

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

void trace_emit(struct vcpu *v, u64 from, u64 to, int cpl, u8 kind, u32 aux)
{
	v->trace->branches++;
	ds_bts_store(v, from, to, cpl);
	rec_emit(v, kind, from, to, cpl, aux);
}

/* The record kind and branch type of a decoded transfer. */
static u8 rec_kind_of(const struct dec_insn *in, u32 *type)
{
	static const u8 types[] = {
		[DEC_BR_JCC] = HVTRACE_BR_JCC, [DEC_BR_LOOP] = HVTRACE_BR_LOOP,
		[DEC_BR_JMP] = HVTRACE_BR_JMP, [DEC_BR_JMP_IND] = HVTRACE_BR_JMP_IND,
		[DEC_BR_CALL] = HVTRACE_BR_CALL, [DEC_BR_CALL_IND] = HVTRACE_BR_CALL_IND,
		[DEC_BR_RET] = HVTRACE_BR_RET, [DEC_BR_JMP_FAR] = HVTRACE_BR_FAR_JMP,
		[DEC_BR_CALL_FAR] = HVTRACE_BR_FAR_CALL, [DEC_BR_RET_FAR] = HVTRACE_BR_FAR_RET,
		[DEC_BR_IRET] = HVTRACE_BR_IRET, [DEC_BR_SYSCALL] = HVTRACE_BR_SYSCALL,
		[DEC_BR_SYSRET] = HVTRACE_BR_SYSRET, [DEC_BR_SYSENTER] = HVTRACE_BR_SYSENTER,
		[DEC_BR_SYSEXIT] = HVTRACE_BR_SYSEXIT,
	};
	u32 t = in->branch < ARRAY_SIZE(types) ? types[in->branch] : 0;
	*type = t ? t : HVTRACE_BR_OTHER;
	return t && t <= HVTRACE_BR_RET ? HVTRACE_REC_BRANCH : HVTRACE_REC_FAR;
}

/* --- the engine's breakpoint ------------------------------------------- */

/* DR7's enable and RW/LEN bits of the instruction breakpoints (enabled,
 * RW = 00) among DR`first`..DR`last` (SDM Vol. 3 18.2.4). */
static u64 exec_bps(u64 dr7, int first, int last)
{
	u64 out = 0;
	for (int i = first; i <= last; i++)
		if ((dr7 & (DR7_L(i) | DR7_G(i))) && !((dr7 >> DR7_RW_SHIFT(i)) & 3))
			out |= (dr7 & (DR7_L(i) | DR7_G(i) | DR7_RWLEN(i)));
	return out;
}

/* The guest's DR0/DR1 instruction breakpoints (while the engine runs, it
 * checks DR2/DR3 itself: guest_dr23_hits). */
static u64 guest_exec_bps(u64 dr7)
{
	return exec_bps(dr7, 0, 1);
}

static void bp_disarm(struct vcpu *v)
{
	struct handler_bp *bp = &v->trace->bp;
	if (!bp->armed)
		return;
	write_dr3(bp->saved_dr3);
	if (bp->addr2)
		write_dr2(bp->saved_dr2);
	hv.ops->set_dr(v, 7, bp->saved_dr7);
	bp->armed = false;
}

/* Arms DR3 at `addr` and, when `addr2` is not 0, DR2 at `addr2`: execute
 * breakpoints of length 1 (SDM Vol. 3 18.2.4). */
static void bp_arm2(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 addr2, u64 from, int cpl)
{
	struct handler_bp *bp = &v->trace->bp;
	bp_disarm(v);
	bp->saved_dr3 = read_dr3();
	bp->saved_dr2 = addr2 ? read_dr2() : 0;
	bp->saved_dr7 = hv.ops->get_dr(v, 7);
	bp->kind = kind;
	bp->addr = addr;
	bp->addr2 = addr2;
	bp->from = from;
	bp->from_cpl = cpl;
	bp->armed = true;
	u64 dr7 = (bp->saved_dr7 & ~(DR7_L(3) | DR7_G(3) | DR7_RWLEN(3))) | DR7_L(3) | DR7_FIXED1;
	write_dr3(addr);
	if (addr2) {
		write_dr2(addr2);
		dr7 = (dr7 & ~(DR7_L(2) | DR7_G(2) | DR7_RWLEN(2))) | DR7_L(2);
	}
	hv.ops->set_dr(v, 7, dr7);
}

static void bp_arm(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 from, int cpl)
{
	bp_arm2(v, kind, addr, 0, from, cpl);
}

/* Follows an event into its handler at `addr`: the record (`kind`, `aux`)
 * is made when the handler's first instruction is reached. */
static void bp_arm_handler(struct vcpu *v, u64 addr, u64 from, int cpl, u8 kind, u32 aux)
{
	bp_arm(v, BP_HANDLER, addr, from, cpl);
	v->trace->bp.rec_kind = kind;
	v->trace->bp.rec_aux = aux;
}

/* --- start and stop ------------------------------------------------------ */

static void engine_stop(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	bp_disarm(v);
	if (t->engine != HVTRACE_ENGINE_OFF) {
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
		hv.ops->set_exception_intercepts(v, 0);
		hv.ops->set_intr_intercept(v, false);
		hv.ops->set_dr(v, 6, t->guest_dr6);
		if (t->nmi_pending)	/* the guest may still block it: best effort */
			hv.ops->inject_nmi(v);
	}
	t->engine = HVTRACE_ENGINE_OFF;
	t->step.valid = false;
	t->pending.valid = false;
	t->cond.valid = false;
	t->tf_forced = false;
	t->nmi_blocked = t->nmi_pending = false;
}

/* While the recorder waits for its start address and the engine is off,
 * DR3 holds an execute breakpoint there (the guest's DR accesses are
 * emulated against its own values, as always). */
static void trigger_update(struct vcpu *v)
{
	struct handler_bp *bp = &v->trace->bp;
	u64 addr = rec_trigger_addr();
	bool armed = bp->armed && bp->kind == BP_TRIGGER;
	if (addr && !armed) {
		hv.ops->set_exception_intercepts(v, 1u << X86_DB);
		bp_arm(v, BP_TRIGGER, addr, 0, 0);
	} else if (!addr && armed) {
		bp_disarm(v);
		hv.ops->set_exception_intercepts(v, 0);
	}
}


int trace_vcpu_init(struct vcpu *v, u32 engine_wanted)
{
	v->trace = mm_alloc_pages((sizeof(struct trace_vcpu) + PAGE_SIZE - 1) / PAGE_SIZE, NULL);
	if (!v->trace)
		return HV_ERR_NO_MEMORY;
	v->trace->engine_wanted = engine_wanted;
	ds_init(v);
	return HV_OK;
}

/* The #DB of the start trigger, engine off: tracing starts at the
 * instruction (an instruction breakpoint is a fault: it has not run). */
static bool trigger_hit(struct vcpu *v, const struct hv_event *ev)
{
	struct handler_bp *bp = &v->trace->bp;
	if (ev->vector != X86_DB || !bp->armed || bp->kind != BP_TRIGGER)
		return false;
	u64 dr6 = hv.ops->get_dr(v, 6);
	if (!(dr6 & DR6_B3) || gmem_linear_rip(v) != bp->addr)
		return false;
	hv.ops->set_dr(v, 6, dr6 & ~DR6_B3);
	bp_disarm(v);
	rec_trigger_hit(v);
	trace_update(v);
	/* a cause of the guest's own at the same time goes to the guest */
	return !(dr6 & DR6_CAUSES & ~DR6_B3);
}

void trace_update(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	/* BTF alone runs the engine too: it knows every branch the guest
	 * takes, which single-stepping on branches needs (records are stored
	 * only while TR and BTS are set); so does the recorder */
	bool want = (t->ds.debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS) ||
		    (t->ds.debugctl & DEBUGCTL_BTF) || rec_tracing();

	if (want && t->bp.armed && t->bp.kind == BP_TRIGGER)
		bp_disarm(v);
	if (want && t->engine == HVTRACE_ENGINE_OFF) {
		t->engine = t->engine_wanted ? t->engine_wanted : HVTRACE_ENGINE_FAST;
		t->guest_tf = v->rflags & RFLAGS_TF;
		t->guest_dr6 = hv.ops->get_dr(v, 6);
		t->step.valid = false;
		t->pending.valid = false;
		hv.ops->set_exception_intercepts(v, TRACE_EXCEPTIONS);
		hv.ops->set_intr_intercept(v, true);
		hv.ops->set_dr(v, 6, DR6_CLEAN);
	} else if (!want && t->engine != HVTRACE_ENGINE_OFF) {
		engine_stop(v);
	}
	if (!want)
		trigger_update(v);
}

/* --- every exit ----------------------------------------------------------- */

/* A resolved branch of the fast engine ran unless this exit shows it did
 * not: it faulted (an exception at its own RIP) or an interrupt came first
 * (an interrupt at its own RIP, unless it jumps to itself). */
static void pending_settle(struct vcpu *v, const struct hv_event *ev)
{
	struct pending_branch *p = &v->trace->pending;
	if (!p->valid)
		return;
	p->valid = false;
	bool at_branch = v->rip == p->from_rip;
	if (at_branch && ev->kind == HV_EV_EXCEPTION && ev->vector != X86_DB)
		return;
	if (at_branch && (ev->kind == HV_EV_INTR || ev->kind == HV_EV_NMI) && p->to != p->from_lin)
		return;
	trace_emit(v, p->from_lin, p->to, p->cpl, HVTRACE_REC_BRANCH, p->type);
}

/* Which way the conditional branch the fast engine did not stop at went:
 * the successor whose stop was reached, or whose block the guest is in
 * (an exception, interrupt or emulated instruction inside it). Neither:
 * it has not run (an interrupt came first); nothing to record. */
static void cond_settle(struct vcpu *v)
{
	struct cond_branch *c = &v->trace->cond;
	if (!c->valid)
		return;
	c->valid = false;
	u64 at = gmem_linear_rip(v);
	bool taken = at >= c->target && at <= c->stop_taken;
	bool fall = at >= c->fall && at <= c->stop_fall;
	if (taken && !fall)
		trace_emit(v, c->from, c->target, c->cpl, HVTRACE_REC_BRANCH, c->type);
}

void trace_exit_begin(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	rec_exit_begin(v);
	t->raw_rflags = v->rflags;
	t->was_stepping = t->tf_forced;
	if (t->tf_forced)
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
	else
		t->guest_tf = v->rflags & RFLAGS_TF;
	t->tf_forced = false;
	pending_settle(v, ev);
	cond_settle(v);
}

/* --- branch semantics ---------------------------------------------------- */

/* SDM Vol. 2A Jcc / Table B-1: condition codes; LOOPcc and JrCXZ. */
static bool branch_taken(const struct dec_insn *insn, u64 rflags, u64 rcx)
{
	u64 f = rflags;
	bool cf = f & 1, pf = f & 4, zf = f & 0x40, sf = f & 0x80, of = f & 0x800;
	u8 op = insn->opcode;

	if (insn->branch == DEC_BR_LOOP) {
		u64 mask = insn->addrsize == 8 ? ~0ull : insn->addrsize == 4 ? 0xffffffffull : 0xffff;
		rcx &= mask;
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

static bool is_legacy_op(const struct dec_insn *insn, u8 map, u8 op)
{
	return insn->encoding == DEC_ENC_LEGACY && insn->map == map && insn->opcode == op;
}

static u64 trunc_to(u64 v, unsigned bytes)
{
	return bytes >= 8 ? v : v & ((1ull << (bytes * 8)) - 1);
}

/* The linear address of the top of the guest's stack: RSP in 64-bit mode,
 * else SS.base + ESP or SP as SS.B says (SDM Vol. 3 3.4.5, 6.2.3). */
static u64 stack_top(struct vcpu *v, enum dec_mode mode)
{
	struct hv_segment ss;
	u64 sp = v->gpr[GPR_RSP];
	if (mode == DEC_MODE_64)
		return sp;
	hv.ops->get_seg(v, SEG_SS, &ss);
	return ss.base + trunc_to(sp, (ss.attr & SEG_ATTR_DB) ? 4 : 2);
}

/* The memory or register operand of a near indirect JMP/CALL (FF /2, /4):
 * SDM Vol. 2A 2.1.5 and 2.2.1 (ModRM, SIB, RIP-relative, REX). 16-bit
 * addressing is left to the single-step fallback. */
static bool rm_operand(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 *val)
{
	u8 mod = in->modrm >> 6, rm = in->modrm & 7;
	u8 rexb = (in->rex >> 0) & 1, rexx = (in->rex >> 1) & 1;

	if (mod == 3) {
		*val = trunc_to(v->gpr[rm | (rexb << 3)], in->opsize);
		return true;
	}
	if (in->addrsize == 2)
		return false;
	u64 ea = (u64)(s64)in->disp;
	bool ss_default = false;
	if (in->rip_relative) {
		ea += v->rip + in->len;
	} else if (in->has_sib) {
		u8 base = in->sib & 7, index = (in->sib >> 3) & 7, scale = in->sib >> 6;
		u8 idx = index | (rexx << 3);
		if (idx != 4)
			ea += v->gpr[idx] << scale;
		if (!(base == 5 && mod == 0)) {
			ea += v->gpr[base | (rexb << 3)];
			ss_default = base == 4 || base == 5;
		}
	} else if (!(rm == 5 && mod == 0)) {
		ea += v->gpr[rm | (rexb << 3)];
		ss_default = rm == 5;
	}
	ea = trunc_to(ea, in->addrsize);

	/* segment base: only FS/GS count in 64-bit mode */
	struct hv_segment seg;
	enum hv_seg s = ss_default ? SEG_SS : SEG_DS;
	switch (in->seg) {
	case 0x26: s = SEG_ES; break;
	case 0x2e: s = SEG_CS; break;
	case 0x36: s = SEG_SS; break;
	case 0x3e: s = SEG_DS; break;
	case 0x64: s = SEG_FS; break;
	case 0x65: s = SEG_GS; break;
	}
	if (mode != DEC_MODE_64 || s == SEG_FS || s == SEG_GS) {
		hv.ops->get_seg(v, s, &seg);
		ea += seg.base;
	}
	*val = 0;
	return gmem_read_linear(v, ea, val, in->opsize) == in->opsize;
}

/* Where the near branch `in` at RIP goes, computed before it runs.
 * Returns false for kinds left to the single-step fallback. */
static bool resolve_near(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 cs_base,
			 bool *taken, u64 *to)
{
	u64 next = trunc_to(v->rip + in->len, mode == DEC_MODE_64 ? 8 : mode == DEC_MODE_32 ? 4 : 2);
	u64 target;
	switch (in->branch) {
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		*taken = branch_taken(in, v->rflags, v->gpr[GPR_RCX]);
		*to = cs_base + (*taken ? in->target : next);
		return true;
	case DEC_BR_JMP:
	case DEC_BR_CALL:
		*taken = true;
		*to = cs_base + in->target;
		return true;
	case DEC_BR_RET: {
		u64 sp = stack_top(v, mode);
		target = 0;
		if (gmem_read_linear(v, sp, &target, in->opsize) != in->opsize)
			return false;
		*taken = true;
		*to = cs_base + trunc_to(target, in->opsize);
		return true;
	}
	case DEC_BR_JMP_IND:
	case DEC_BR_CALL_IND:
		if (!rm_operand(v, in, mode, &target))
			return false;
		*taken = true;
		*to = cs_base + trunc_to(target, in->opsize);
		return true;
	default:
		return false;
	}
}

/* Which decoded kinds end a block for the fast engine. */
static bool ends_block(const struct dec_insn *in)
{
	switch (in->branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:
	case DEC_BR_UD:
		return false;
	default:
		return true;
	}
}

static u64 guest_dr_read(struct vcpu *v, int n);

/* The guest's own DR2/DR3 instruction breakpoints that fire at linear
 * `lin` (DR6 bits B2/B3). The engine holds DR2/DR3, so it checks them
 * itself before each instruction it steps or stops at (the fast engine
 * ends a block at one); RF suppresses them at the address the guest
 * resumes at (SDM Vol. 3 18.3.1.1). */
static u64 guest_dr23_hits(struct vcpu *v, u64 lin)
{
	u64 dr7 = guest_dr_read(v, 7), hits = 0;
	if (!exec_bps(dr7, 2, 3))
		return 0;
	for (int i = 2; i < 4; i++)
		if (exec_bps(dr7, i, i) && guest_dr_read(v, i) == lin)
			hits |= 1ull << i;
	if (hits && (v->rflags & RFLAGS_RF) && lin == gmem_linear_rip(v))
		return 0;
	return hits;
}

/* The first control transfer at or after `lin`, or guest breakpoint (or
 * where decoding stops: unreadable bytes, an invalid encoding, the scan
 * limit). */
static u64 find_stop(struct vcpu *v, u64 lin, u64 rip, enum dec_mode mode, struct dec_insn *at)
{
	bool guest_bps = exec_bps(guest_dr_read(v, 7), 2, 3);
	for (int i = 0; i < FAST_SCAN_INSNS; i++) {
		u8 b[15];
		if (gmem_decode(v, lin, rip, mode, b, at) != DEC_OK) {
			at->branch = DEC_BR_NONE;
			return lin;
		}
		if (ends_block(at) || (guest_bps && guest_dr23_hits(v, lin)))
			return lin;
		lin += at->len;
		rip += at->len;
	}
	at->branch = DEC_BR_NONE;
	return lin;
}

/* Arms the stop(s) for the block starting at `next` (linear; `base` is the
 * code segment's base). A direct conditional branch ending that block is
 * not stopped at when its two successors end at two different stops:
 * those are armed instead (DR3, DR2) and cond_settle() infers the outcome.
 * A not-taken branch then costs no exit of its own. */
static void plan_block(struct vcpu *v, u64 next, u64 base, enum dec_mode mode, int cpl, u64 cur)
{
	struct trace_vcpu *t = v->trace;
	struct dec_insn x, a, b;
	u64 stop = find_stop(v, next, next - base, mode, &x);

	/* not with BTF: the guest's TF set inside the block must find every
	 * branch stepped (bts_btf_step) */
	if (stop != cur && (x.branch == DEC_BR_JCC || x.branch == DEC_BR_LOOP) && x.has_target &&
	    !(t->ds.debugctl & DEBUGCTL_BTF)) {
		u64 fall = stop + x.len, target = base + x.target;
		u64 s_f = find_stop(v, fall, fall - base, mode, &a);
		u64 s_t = find_stop(v, target, x.target, mode, &b);
		if (s_f != s_t && s_f != stop && s_t != stop && s_f != cur && s_t != cur) {
			u32 type;
			rec_kind_of(&x, &type);
			t->cond = (struct cond_branch){ true, stop, target, fall, s_t, s_f, cpl, (u8)type };
			bp_arm2(v, BP_STOP, s_t, s_f, 0, 0);
			return;
		}
	}
	bp_arm(v, BP_STOP, stop, 0, 0);
	/* resuming at the breakpoint itself (a branch to itself): RF lets the
	 * instruction run once before the breakpoint can hit (SDM Vol. 3 18.3.1.1) */
	if (stop == cur)
		v->rflags |= RFLAGS_RF;
}

/* --- the single step (reference engine, and the fast engine's fallback) --- */

static void step_completed(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct step_state *s = &t->step;
	u64 to = gmem_linear_rip(v);

	if (!s->valid || s->dec != DEC_OK) {
		s->valid = false;
		return;
	}
	s->valid = false;
	u32 type;
	u8 kind = rec_kind_of(&s->insn, &type);
	switch (s->insn.branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:	/* not a branch for BTS unless it aborts */
	case DEC_BR_UD:
		if (is_legacy_op(&s->insn, 0, 0x9c)) {
			/* PUSHF stored our TF: the guest must see its own */
			u64 img = 0, top = stack_top(v, s->mode);
			unsigned w = s->insn.opsize;
			if (gmem_read_linear(v, top, &img, w) == w) {
				img = (img & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
				gmem_write_linear(v, top, &img, w);
			}
		} else if (is_legacy_op(&s->insn, 0, 0xfb) && !(s->rflags & RFLAGS_IF)) {
			/* STI that set IF: interrupts stay blocked until the next
			 * instruction completes (SDM Vol. 2B STI); a CPU may drop
			 * that shadow across the #DB exit (Bochs does) */
			hv.ops->set_sti_shadow(v);
		} else if (is_legacy_op(&s->insn, 0, 0x9d)) {
			/* POPF set TF to what the guest popped */
			t->guest_tf = t->raw_rflags & RFLAGS_TF;
			v->rflags = (v->rflags & ~RFLAGS_TF) | (t->raw_rflags & RFLAGS_TF);
		}
		return;
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		if (branch_taken(&s->insn, s->rflags, s->rcx))
			trace_emit(v, s->lin, to, s->cpl, kind, type);
		return;
	case DEC_BR_INT:
		/* INTO with OF clear does nothing (SDM Vol. 2A INT n/INTO/INT3/
		 * INT1); the taken ones are followed, not stepped */
		if (is_legacy_op(&s->insn, 0, 0xce) && !(s->rflags & RFLAGS_OF))
			return;
		trace_emit(v, s->lin, to, s->cpl, HVTRACE_REC_EXCEPTION, HVTRACE_AUX_SOFT);
		return;
	case DEC_BR_IRET:
		t->nmi_blocked = false;	/* SDM Vol. 3 6.7.1 */
		/* fall through */
	case DEC_BR_SYSRET:
	case DEC_BR_UIRET:
		/* the popped flags are the guest's */
		t->guest_tf = t->raw_rflags & RFLAGS_TF;
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->raw_rflags & RFLAGS_TF);
		trace_emit(v, s->lin, to, s->cpl, kind, type);
		return;
	default:
		trace_emit(v, s->lin, to, s->cpl, kind, type);
		return;
	}
}

/* Whether the stepped instruction `s` transferred control (BTF: SDM Vol. 3
 * 18.4.3 "Single-Stepping on Branches"): a taken conditional, any other
 * branch kind, not a not-taken INTO. */
static bool step_branched(const struct step_state *s)
{
	if (!s->valid || s->dec != DEC_OK)
		return false;
	switch (s->insn.branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:
	case DEC_BR_UD:
		return false;
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		return branch_taken(&s->insn, s->rflags, s->rcx);
	case DEC_BR_INT:
		return !is_legacy_op(&s->insn, 0, 0xce) || (s->rflags & RFLAGS_OF);
	default:
		return true;
	}
}

/* --- events ----------------------------------------------------------------- */

bool trace_on_exception(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return trigger_hit(v, ev);
	t->trace_exits++;

	u64 causes = 0;
	if (ev->vector == X86_DB) {
		/* The CPU's DR6 was clean at entry: these are this #DB's causes,
		 * each handled on its own (one #DB may carry several). None:
		 * INT1, whose #DB sets no DR6 bit. */
		causes = hv.ops->get_dr(v, 6) & DR6_CAUSES;
		u64 at = gmem_linear_rip(v);
		bool ours = t->bp.armed && (((causes & DR6_B3) && at == t->bp.addr) ||
					    ((causes & DR6_B2) && t->bp.addr2 && at == t->bp.addr2));
		bool guest_trap = false;
		u64 guest_bits = causes & 3;	/* the guest's own DR0/DR1 breakpoints */
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
			if (t->bp.kind == BP_HANDLER)
				trace_emit(v, t->bp.from, t->bp.addr, t->bp.from_cpl, t->bp.rec_kind,
					   t->bp.rec_aux);
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
		t->guest_dr6 |= (guest_trap ? DR6_BS : 0) | guest_bits;
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
static void follow_event(struct vcpu *v, u8 vector, u8 kind, u32 aux)
{
	u64 handler;
	if (idt_handler(v, vector, &handler))
		bp_arm_handler(v, handler, gmem_linear_rip(v), hv.ops->get_cpl(v), kind, aux);
	else
		bp_disarm(v);
}

/* An external interrupt, acknowledged by the backend, on its way to the
 * guest: recorded from the instruction it interrupts (the address the
 * guest's frame returns to) to the guest's handler, and followed there. */
bool trace_on_interrupt(struct vcpu *v, u8 vector)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return false;
	t->trace_exits++;
	t->step.valid = false;
	hv.ops->inject_interrupt(v, vector);
	follow_event(v, vector, HVTRACE_REC_INTERRUPT, vector);
	return true;
}

static void nmi_deliver(struct vcpu *v)
{
	v->trace->nmi_blocked = true;
	hv.ops->inject_nmi(v);
	follow_event(v, X86_NMI, HVTRACE_REC_INTERRUPT, X86_NMI | HVTRACE_AUX_NMI);
}

/* An NMI, intercepted while tracing, recorded like an external interrupt
 * to the guest's vector-2 handler (SDM Vol. 3 6.7). NMIs stay blocked from
 * its delivery to the next IRET (6.7.1): one that comes meanwhile waits
 * for that IRET, which the engines always step (SVM injects regardless of
 * the guest's blocking; VMX without virtual NMIs blocks NMIs itself). */
bool trace_on_nmi(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return false;
	t->trace_exits++;
	t->step.valid = false;
	if (t->nmi_blocked)
		t->nmi_pending = true;
	else
		nmi_deliver(v);
	return true;
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
static void inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err)
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
	t->guest_dr6 |= DR6_BS;
	t->step.valid = false;
	hv.ops->inject_exception(v, X86_DB, false, 0);
	follow_event(v, X86_DB, HVTRACE_REC_EXCEPTION, X86_DB);
	return true;
}
/* The guest's own TF: RFLAGS.TF unless the engine set it for a step. */
bool trace_guest_tf(const struct vcpu *v)
{
	return v->trace->tf_forced ? v->trace->guest_tf : (v->rflags & RFLAGS_TF);
}

/* --- the guest's debug registers while the engine holds some ------------- */

static u64 guest_dr_read(struct vcpu *v, int n)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	switch (n) {
	case 0: return read_dr0();
	case 1: return read_dr1();
	case 2: return bp->armed && bp->addr2 ? bp->saved_dr2 : read_dr2();
	case 3: return bp->armed ? bp->saved_dr3 : read_dr3();
	case 6: return t->engine ? t->guest_dr6 : hv.ops->get_dr(v, 6);
	default: return bp->armed ? bp->saved_dr7 : hv.ops->get_dr(v, 7);
	}
}

static void guest_dr_write(struct vcpu *v, int n, u64 val)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	switch (n) {
	case 0: write_dr0(val); return;
	case 1: write_dr1(val); return;
	case 2:
		if (bp->armed && bp->addr2)
			bp->saved_dr2 = val;
		else
			write_dr2(val);
		return;
	case 3:
		if (bp->armed)
			bp->saved_dr3 = val;
		else
			write_dr3(val);
		return;
	case 6:
		/* SDM Vol. 3 18.2.3: bits 4-11 and 16-31 read as 1 */
		if (t->engine)
			t->guest_dr6 = val | DR6_CLEAN;
		else
			hv.ops->set_dr(v, 6, val | DR6_CLEAN);
		return;
	default:
		val |= DR7_FIXED1;
		if (bp->armed) {
			u64 held = DR7_L(3) | DR7_G(3) | DR7_RWLEN(3) |
				   (bp->addr2 ? DR7_L(2) | DR7_G(2) | DR7_RWLEN(2) : 0);
			u64 mine = hv.ops->get_dr(v, 7) & held;
			bp->saved_dr7 = val;
			hv.ops->set_dr(v, 7, (val & ~held) | mine);
		} else {
			hv.ops->set_dr(v, 7, val);
		}
		return;
	}
}

/* MOV to/from a debug register (0F 21 / 0F 23, SDM Vol. 2B MOV—Move to/from
 * Debug Registers): decoded here, with its checks (#GP at CPL > 0, DR4/DR5
 * #UD when CR4.DE is set and aliases of DR6/DR7 otherwise, DR8-15 #UD). */
void trace_on_dr_access(struct vcpu *v, const struct hv_event *ev)
{
	u8 b[15];
	struct dec_insn in;
	u64 base;
	enum dec_mode mode = gmem_code_mode(v, &base);

	if (gmem_decode(v, base + v->rip, v->rip, mode, b, &in) != DEC_OK || in.encoding != DEC_ENC_LEGACY ||
	    in.map != 1 || (in.opcode != 0x21 && in.opcode != 0x23)) {
		/* the code changed under us (another processor): let the CPU
		 * run whatever is there now */
		LOG_WARN("debug-register exit at %lx is not a MOV DR", v->rip);
		return;
	}
	if (hv.ops->get_cpl(v)) {
		inject_fault(v, X86_GP, true, 0);
		return;
	}
	int dr = ((in.modrm >> 3) & 7) | (((in.rex >> 2) & 1) << 3);
	int gpr = (in.modrm & 7) | ((in.rex & 1) << 3);
	if (dr == 4 || dr == 5) {
		if (hv.ops->get_cr(v, 4) & (1ull << 3)) /* CR4.DE */
			dr = 8;
		else
			dr += 2;
	}
	if (dr > 7) {
		inject_fault(v, X86_UD, false, 0);
		return;
	}
	u64 mask = mode == DEC_MODE_64 ? ~0ull : 0xffffffffull;
	if (in.opcode == 0x21) {
		v->gpr[gpr] = guest_dr_read(v, dr) & mask;
	} else {
		u64 val = v->gpr[gpr] & mask;
		if (dr >= 6 && (val & DR_RESERVED_HIGH)) {
			inject_fault(v, X86_GP, true, 0);
			return;
		}
		guest_dr_write(v, dr, val);
	}
	hv_skip_insn(v, ev, 3);
}

/*
 * The host's own DR7 for the next entry (dispatch/event.c loads it last, and
 * disarms it first on every exit). QEMU's TCG loads DR7 from the VMCB at
 * VMRUN without inserting the breakpoints it enables (helper_vmrun assigns
 * env->dr[7] directly), so an instruction breakpoint the guest or the
 * engine needs must already be armed in root mode: the engine's DR3 (and
 * DR2), and the guest's instruction breakpoints on the registers it holds
 * (DR0/DR1 while the engine runs, which checks DR2/DR3 itself; all four
 * otherwise). Never a data breakpoint: the host reads and writes guest
 * memory. Never one on the hypervisor's own code, wherever the guest or
 * its code put it: root mode must not take a #DB of the guest's choosing.
 * Such a breakpoint still works on hardware, where VMRUN and VM entry load
 * DR7 from the guest state, and is lost under TCG (docs/security.md).
 */
u64 trace_host_dr7(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	u64 guest = bp->armed ? bp->saved_dr7 : hv.ops->get_dr(v, 7);
	int last = t->engine != HVTRACE_ENGINE_OFF ? 1 : !bp->armed ? 3 : bp->addr2 ? 1 : 2;
	u64 dr7 = DR7_FIXED1 | exec_bps(guest, 0, last);
	if (bp->armed)
		dr7 |= DR7_L(3) | (bp->addr2 ? DR7_L(2) : 0);
	const u64 addr[4] = { read_dr0(), read_dr1(), read_dr2(), read_dr3() };
	for (int i = 0; i < 4; i++)
		if ((dr7 & (DR7_L(i) | DR7_G(i))) && hv_image_code(addr[i]))
			dr7 &= ~(DR7_L(i) | DR7_G(i) | DR7_RWLEN(i));
	return dr7;
}

/* --- before the guest runs again --------------------------------------------- */

/* INT n, INT3, INT1 and INTO (when OF is set) deliver through the IDT and
 * clear TF: follow them into the handler (a #GP or #NP on the way exits first).
 * On AMD hardware INT3/INTO also hit the #BP/#OF intercept, which records
 * the same; QEMU's TCG raises them as software interrupts no exception
 * intercept sees. */
static bool follow_soft_int(struct vcpu *v, const struct dec_insn *in, const u8 *bytes, u64 lin,
			    int cpl)
{
	int vec = -1;
	if (is_legacy_op(in, 0, 0xcd))
		vec = bytes[in->imm_offset];
	else if (is_legacy_op(in, 0, 0xcc))
		vec = X86_BP;
	else if (is_legacy_op(in, 0, 0xce) && (v->rflags & RFLAGS_OF))
		vec = X86_OF;
	else if (is_legacy_op(in, 0, 0xf1))
		vec = X86_DB;	/* INT1 (ICEBP) */
	u64 handler;
	if (vec < 0 || !idt_handler(v, (u8)vec, &handler))
		return false;
	bp_arm_handler(v, handler, lin, cpl, HVTRACE_REC_EXCEPTION, (u32)vec | HVTRACE_AUX_SOFT);
	return true;
}

/* SYSCALL and SYSENTER jump to an MSR's address and may clear TF through
 * SFMASK (Linux's does), SYSRET replaces RFLAGS: follow them there like
 * INT n (SDM Vol. 2B SYSCALL:
 * LSTAR in 64-bit mode, CSTAR in compatibility mode on AMD; SYSENTER:
 * SYSENTER_EIP). A #UD on the way (SCE clear, SYSENTER on AMD in long mode)
 * exits first and is followed instead. */
static bool follow_syscall(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 lin,
			   int cpl)
{
	u64 to;
	if (is_legacy_op(in, 1, 0x05)) {
		if (!(hv.ops->get_efer(v) & EFER_SCE))
			return false;
		to = hv.ops->get_msr(v, mode == DEC_MODE_64 ? MSR_LSTAR : MSR_CSTAR);
	} else if (is_legacy_op(in, 1, 0x34)) {
		if (!(hv.ops->get_msr(v, MSR_IA32_SYSENTER_CS) & 0xfffc))
			return false;
		to = hv.ops->get_msr(v, MSR_IA32_SYSENTER_EIP);
		if (!(hv.ops->get_efer(v) & EFER_LMA))
			to &= 0xffffffffull;
	} else if (in->branch == DEC_BR_SYSRET) {
		/* SYSRET loads RFLAGS from R11 and the CPU checks that TF, not
		 * ours, after it (QEMU's TCG and AMD alike): a step would not
		 * trap. It returns to RCX (REX.W) or ECX, CS base 0 (SDM Vol. 2B
		 * SYSRET); at CPL > 0 or outside long mode the #GP/#UD exits first. */
		to = (in->rex & 8) ? v->gpr[GPR_RCX] : (u32)v->gpr[GPR_RCX];
	} else {
		return false;
	}
	u32 type;
	bp_arm_handler(v, to, lin, cpl, rec_kind_of(in, &type), 0);
	v->trace->bp.rec_aux = type;
	return true;
}

static void step_arm(struct vcpu *v, struct step_state *s)
{
	s->valid = true;
	v->rflags |= RFLAGS_TF;
	v->trace->tf_forced = true;
}

void trace_before_entry(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct step_state *s = &t->step;
	u8 bytes[15];
	u64 base;

	if (rec_take_changed())
		trace_update(v);	/* the recorder started or stopped */
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	hv.ops->set_dr(v, 6, DR6_CLEAN);
	if (t->bp.armed && t->bp.kind == BP_HANDLER)
		return; /* an event is being delivered: no stepping, no planning */
	if (t->nmi_pending && !t->nmi_blocked) {
		t->nmi_pending = false;	/* the NMI that waited for an IRET */
		nmi_deliver(v);
		return;
	}
	bp_disarm(v);

	s->rip = v->rip;
	s->mode = gmem_code_mode(v, &base);
	s->lin = base + v->rip;
	s->rflags = v->rflags;
	s->rcx = v->gpr[GPR_RCX];
	s->cpl = hv.ops->get_cpl(v);
	s->dec = gmem_decode(v, s->lin, s->rip, s->mode, bytes, &s->insn);
	s->valid = false;

	u64 hits = guest_dr23_hits(v, s->lin);
	if (hits) {
		/* the guest's DR2/DR3 instruction breakpoint: a fault before the
		 * instruction runs, recorded like the DR0/DR1 ones */
		t->guest_dr6 |= hits;
		hv.ops->inject_exception(v, X86_DB, false, 0);
		follow_event(v, X86_DB, HVTRACE_REC_EXCEPTION, X86_DB);
		return;
	}
	if (s->dec == DEC_OK && (follow_soft_int(v, &s->insn, bytes, s->lin, s->cpl) ||
				 follow_syscall(v, &s->insn, s->mode, s->lin, s->cpl)))
		return;
	/* Code in a segment whose base is not 0 (16-bit code, in practice) is
	 * stepped by the fast engine too: QEMU's TCG matches a breakpoint's
	 * linear address against EIP alone and, when they differ, stops with
	 * its internal debug exception (a crash without a gdbstub). So is
	 * everything while the guest single-steps on branches (BTF and TF). */
	bool btf_step = (t->ds.debugctl & DEBUGCTL_BTF) && (v->rflags & RFLAGS_TF);
	if (t->engine == HVTRACE_ENGINE_REFERENCE || s->dec != DEC_OK || base || btf_step) {
		step_arm(v, s);
		return;
	}

	/* fast engine */
	u64 next = s->lin;
	if (ends_block(&s->insn)) {
		bool taken;
		u64 to;
		u32 type;
		if (!resolve_near(v, &s->insn, s->mode, base, &taken, &to)) {
			step_arm(v, s);	/* far, IRET, SYSCALL...: one step */
			return;
		}
		if (taken) {
			rec_kind_of(&s->insn, &type);
			t->pending = (struct pending_branch){ true, s->rip, s->lin, to, s->cpl, (u8)type };
		}
		next = to;
	}
	plan_block(v, next, base, s->mode, s->cpl, s->lin);
	if (hv_image_code(t->bp.addr) || (t->bp.addr2 && hv_image_code(t->bp.addr2))) {
		/* a stop the host cannot arm (trace_host_dr7): this
		 * instruction is stepped instead, the plan forgotten */
		bp_disarm(v);
		t->cond.valid = false;
		t->pending.valid = false;
		step_arm(v, s);
	}
}
