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
 *    and plans the next block: at most one exit per executed branch, fewer
 *    where it follows direct JMPs and CALLs without a stop (chains) or
 *    infers a conditional branch's outcome from the stop reached. Rare
 *    kinds (far transfers, IRET, SYSCALL...) are single-stepped.
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
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/prof.h"
#include "base/vcpu.h"
#include "trace/dbg.h"
#include "trace/rec.h"
#include "trace/engine.h"

/* How far the fast engine decodes ahead for the next control transfer. */
#define FAST_SCAN_INSNS	128

void trace_emit(struct vcpu *v, u64 from, u64 to, int cpl, u8 kind, u32 aux)
{
	u32 was = prof_switch(v, HVTRACE_PROF_RECORD);
	v->trace->branches++;
	ds_bts_store(v, from, to, cpl);
	rec_emit(v, kind, from, to, cpl, aux);
	prof_switch(v, was);
}

/* --- start and stop ------------------------------------------------------ */

static void engine_stop(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	bp_disarm(v);
	lbr_engine_stop(v);
	if (t->engine == HVTRACE_ENGINE_INTERP)
		interp_log(v);	/* the counts, and verify mode's result */
	if (t->engine != HVTRACE_ENGINE_OFF) {
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
		/* the watcher's stay intercepted (dispatch/irq.c), and those
		 * that split a filtered cycles counter's ticks (pmu_sync) */
		hv.ops->set_intr_intercept(v, rec_ctl_watcher(v) || pmu_tsc_split(&t->pmu));
		hv.ops->set_dr(v, 6, t->guest_dr6);
	}
	t->engine = HVTRACE_ENGINE_OFF;
	t->step.valid = false;
	t->pending.valid = false;
	t->cond.valid = false;
	t->chain.n = 0;
	t->tf_forced = false;
	/* an NMI blocked or waiting stays so: trace/nmi.c keeps it idle */
	hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}

u32 trace_idle_exceptions(struct vcpu *v)
{
	const struct trace_vcpu *t = v->trace;
	return (t->bp.armed && t->bp.kind == BP_TRIGGER) || t->nmi_step.on || t->dbg_step.on || t->dbg_dr.held
		       ? 1u << X86_DB
		       : 0;
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
		bp_arm(v, BP_TRIGGER, addr, 0, 0);
		hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
	} else if (!addr && armed) {
		bp_disarm(v);
		hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
	}
}

int trace_vcpu_init(struct vcpu *v, u32 engine_wanted, u32 pace)
{
	v->trace = mm_alloc_pages((sizeof(struct trace_vcpu) + PAGE_SIZE - 1) / PAGE_SIZE, NULL);
	if (!v->trace)
		return HV_ERR_NO_MEMORY;
	/* LBR batching needs architectural LBRs and a backend that arms them
	 * (VMX); elsewhere the fast engine runs, on every processor */
	if (engine_wanted == HVTRACE_ENGINE_LBR) {
		bool can = (hv.caps & HV_CAP_ARCH_LBR) && hv.ops->lbr_switch;
		if (v->id == 0 && can)
			LOG_INFO("engine = lbr: architectural LBRs of depth %u: LBR batching runs (the fast "
				 "engine while BTF, BTINT, a PMU counter or a DR2/DR3 breakpoint needs it)",
				 hv.lbr_depth);
		else if (v->id == 0)
			LOG_WARN("engine = lbr: no architectural LBRs hvtrace can use on this processor "
				 "(docs/branch-engine.md \"LBR batching\"): the fast engine runs");
		if (!can)
			engine_wanted = HVTRACE_ENGINE_FAST;
	}
	if (engine_wanted == HVTRACE_ENGINE_INTERP && v->id == 0)
		LOG_INFO("engine = interp: the hypervisor interprets the common 64-bit instructions, the fast "
			 "engine the rest (docs/branch-engine.md \"The interpreting engine\")");
	v->trace->engine_wanted = engine_wanted;
	v->trace->pace.pace = pace;
	/* the architectural PMU is Intel's: an AMD-vendor guest has none */
	if (!hv.vendor_amd) {
		v->trace->pmu.nr_gp = PMU_NR_GP;
		v->trace->pmu.nr_fixed = PMU_NR_FIXED;
	}
	return HV_OK;
}

/* The #DB of the start trigger, engine off: tracing starts at the
 * instruction (an instruction breakpoint is a fault: it has not run). */
bool trigger_hit(struct vcpu *v, const struct hv_event *ev)
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

/*
 * Whether the engine runs, and which: while the guest's BTS (TR and BTS)
 * is on, BTF alone (it knows every branch the guest takes, which
 * single-stepping on branches needs; records are stored only while TR and
 * BTS are set), the recorder traces, or an enabled PMU counter counts an
 * event only the engine sees. Those counters need every instruction, so
 * the reference engine runs while one is enabled (docs/pmu.md: the cost);
 * so it does while the guest has a data breakpoint in DR2 or DR3, which
 * the fast engine's stops would take from it (the reference engine's
 * breakpoint holds DR3 only while it follows an event to its handler);
 * otherwise the configured one, LBR batching only while lbr_engine_ok()
 * (else the fast engine). Switching at an exit needs nothing more:
 * trace_exit_begin() settled the fast engine's plans and the step and
 * drained the LBR stack, and trace_before_entry() plans afresh; LBR
 * batching is armed and disarmed as it starts and stops (engine_set).
 */
static void engine_set(struct vcpu *v, u32 which)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_LBR && which != HVTRACE_ENGINE_LBR)
		lbr_engine_stop(v);
	if (t->engine != HVTRACE_ENGINE_LBR && which == HVTRACE_ENGINE_LBR)
		lbr_engine_start(v);
	t->engine = which;
}

void trace_update(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	bool pmu = pmu_needs_engine(&t->pmu);
	bool want = (t->ds.debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS) ||
		    (t->ds.debugctl & DEBUGCTL_BTF) || rec_tracing() || pmu;
	/* the engine running for the guest's own reasons while the recorder
	 * waits for its start address: DR3 cannot hold the trigger, so every
	 * instruction is looked at (trace_before_entry) */
	/* the PMU's counters see every instruction: the reference engine, or the interpreting
	 * engine counting its own and stepping the rest with the reference engine's step */
	bool every = guest_dr23_data(v) || rec_trigger_addr();
	u32 which = every ? HVTRACE_ENGINE_REFERENCE
		    : pmu ? (t->engine_wanted == HVTRACE_ENGINE_INTERP ? HVTRACE_ENGINE_INTERP : HVTRACE_ENGINE_REFERENCE)
		    : t->engine_wanted ? t->engine_wanted
				       : HVTRACE_ENGINE_FAST;
	t->interp_counting = which == HVTRACE_ENGINE_INTERP && pmu;
	if (t->interp_counting && !t->interp_counting_said) {
		t->interp_counting_said = true;
		LOG_INFO("interp: vcpu %u: the virtual PMU counts: interpreted instructions are counted, the "
			 "reference engine steps the others", v->id);
	}
	if (which == HVTRACE_ENGINE_LBR && !lbr_engine_ok(v))
		which = HVTRACE_ENGINE_FAST;

	if (want)
		dbg_dr_release(v);	/* the debugger's registers go back to the guest */
	if (want && t->bp.armed && t->bp.kind == BP_TRIGGER)
		bp_disarm(v);	/* the engine's DR3 from now on */
	if (want && t->engine != HVTRACE_ENGINE_OFF)
		engine_set(v, which);
	if (want && t->engine == HVTRACE_ENGINE_OFF) {
		nmi_step_cancel(v);	/* the engine steps that IRET itself */
		dbg_step_cancel(v);	/* and owns TF from now on */
		t->guest_tf = v->rflags & RFLAGS_TF;
		t->guest_dr6 = hv.ops->get_dr(v, 6);
		t->step.valid = false;
		t->pending.valid = false;
		t->cond.valid = false;
		t->chain.n = 0;
		/* the first interrupt is due at once */
		t->pace.in_service = t->pace.waiting = t->pace.halted = false;
		t->pace.mark = t->branches - t->pace.pace;
		hv.ops->set_exception_intercepts(v, TRACE_EXCEPTIONS);
		hv.ops->set_intr_intercept(v, true);
		hv.ops->set_dr(v, 6, DR6_CLEAN);
		engine_set(v, which);	/* LBR batching: with NMI exiting on */
	} else if (!want && t->engine != HVTRACE_ENGINE_OFF) {
		engine_stop(v);
	}
	if (!want)
		trigger_update(v);
	/* a cycles counter filtered by privilege level: its ticks go to the
	 * level at each exit, so interrupts exit (pmu_sync, docs/pmu.md) */
	if (t->engine == HVTRACE_ENGINE_OFF)
		hv.ops->set_intr_intercept(v, rec_ctl_watcher(v) || pmu_tsc_split(&t->pmu));
}

/* --- every exit ----------------------------------------------------------- */

/* A resolved branch of the fast engine ran unless this exit shows it did
 * not: it faulted (an exception at its own RIP) or an interrupt or a
 * nested page fault came first (at its own RIP, unless it jumps to itself:
 * the fetch of its own page refused where the debugger's page breakpoints
 * took execute, trace/dbg.c dbg_npf, and run again once it is open). */
static void pending_settle(struct vcpu *v, const struct hv_event *ev)
{
	struct pending_branch *p = &v->trace->pending;
	if (!p->valid)
		return;
	p->valid = false;
	bool at_branch = v->rip == p->from_rip;
	if (at_branch && ev->kind == HV_EV_EXCEPTION && ev->vector != X86_DB)
		return;
	if (at_branch &&
	    (ev->kind == HV_EV_INTR || ev->kind == HV_EV_IRQ_WINDOW || ev->kind == HV_EV_NMI || ev->kind == HV_EV_NPF) &&
	    p->to != p->from_lin)
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
	if (c->by_flags) {	/* past the branch: the flags it tested */
		taken = fall && branch_taken(&c->insn, v->rflags, 0);
		fall = false;
	}
	if (taken && !fall)
		trace_emit(v, c->from, c->target, c->cpl, HVTRACE_REC_BRANCH, c->type);
}

/* The direct JMPs and CALLs the fast engine went through without a stop
 * (plan_block): those before the segment the guest is in now have run;
 * the one ending that segment has not (an exception at its own address:
 * it faulted, a CALL's push included; an interrupt there: it has not run
 * yet). Past the last segment, in a block of the conditional branch it
 * ends in (cond_settle), all have run. Anywhere else: none (the branch
 * the stop resolved has not run either). Addresses in a chain are unique,
 * so the segment is unambiguous. */
static void chain_settle(struct vcpu *v)
{
	struct chain *ch = &v->trace->chain;
	const struct cond_branch *c = &v->trace->cond;
	unsigned n = ch->n, done = 0;
	if (!n)
		return;
	ch->n = 0;
	u64 at = gmem_linear_rip(v);
	while (done <= n && !(at >= ch->start[done] && at <= ch->end[done]))
		done++;
	if (done > n)
		done = c->valid && ((at >= c->target && at <= c->stop_taken) || (at >= c->fall && at <= c->stop_fall))
			       ? n : 0;
	for (unsigned i = 0; i < done; i++)
		trace_emit(v, ch->end[i], ch->start[i + 1], ch->cpl, HVTRACE_REC_BRANCH, ch->type[i]);
}

void trace_exit_begin(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = v->trace;
	dbg_trace_dr_exit(v, ev);	/* first: the debugger's DR0/DR1 of this entry, and their DR6 bits */
	t->exit_rip = v->rip;	/* an emulated instruction's eventing IP (trace_insn_emulated) */
	/* engine = interp runs only after the engines' own #DB exits (interp_run) */
	t->interp_db_exit = ev->kind == HV_EV_EXCEPTION && ev->vector == X86_DB;
	interp_verify_exit(v, ev);
	nmi_exit_begin(v);
	if (t->pmu.global_ctrl)
		pmu_sync(v);	/* the TSC-counted events' wraps, late (docs/pmu.md) */
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	rec_exit_begin(v);
	/* the batch since the last entry, before any record of this exit's
	 * (after the CR3 record: a MOV to CR3 exits before it loads) */
	if (t->engine == HVTRACE_ENGINE_LBR)
		lbr_engine_exit(v);
	t->raw_rflags = v->rflags;
	t->was_stepping = t->tf_forced;
	if (t->tf_forced)
		v->rflags = (v->rflags & ~RFLAGS_TF) | (t->guest_tf ? RFLAGS_TF : 0);
	else
		t->guest_tf = v->rflags & RFLAGS_TF;
	t->tf_forced = false;
	pending_settle(v, ev);
	chain_settle(v);
	cond_settle(v);
}

/* What a plan's look-ups share, read once before an entry (nothing
 * changes them while trace_before_entry runs): the paging root and mode,
 * whether the guest has instruction breakpoints of its own in DR2/DR3,
 * and the host debugger's (NULL: none), where a block ends too, but at
 * `pass`, the instruction the vCPU is at, which dbg_trace_bp looked at
 * before the plan: a block from there passes it. */
struct plan_ctx {
	struct gmem_xlat_key key;
	bool guest_bps;
	const struct dbg_bps *dbg;
	u64 pass;
};

/* Whether a block from `start` ends at `lin` for the debugger's breakpoint there */
static bool dbg_stop(const struct plan_ctx *p, u64 lin, u64 start)
{
	return p->dbg && !(lin == start && lin == p->pass) && dbg_bp_listed(p->dbg, lin);
}

/* The first control transfer at or after `lin`, or guest breakpoint, or
 * the host debugger's (dbg_stop) (or where decoding stops: unreadable
 * bytes, an invalid encoding, the scan limit); `flags_kept`: whether no
 * instruction before it changes the flags (keeps_flags). A block that
 * ends in a control transfer within BLOCK_BYTES_MAX bytes, with no guest
 * breakpoint to look for, goes into `keep` (its bytes, its stop and that
 * instruction) when `keep` is given. */
static u64 find_stop_decode(struct vcpu *v, const struct plan_ctx *p, u64 lin, u64 rip, enum dec_mode mode,
			    struct dec_insn *at, struct block_entry *keep, bool *flags_kept)
{
	bool guest_bps = exec_bps(guest_dr_read(v, 7), 2, 3);
	u64 start = lin;
	*flags_kept = true;
	for (int i = 0; i < FAST_SCAN_INSNS; i++) {
		u8 b[15];
		if (gmem_decode(v, lin, rip, mode, b, at) != DEC_OK) {
			at->branch = DEC_BR_NONE;
			return lin;
		}
		u64 off = lin - start;
		bool dbg = dbg_stop(p, lin, start);
		bool fits = keep && !guest_bps && !dbg && off + at->len <= BLOCK_BYTES_MAX;
		if (fits)
			memcpy(keep->bytes + off, b, at->len);
		if (ends_block(at) || (guest_bps && guest_dr23_hits(v, lin)) || dbg) {
			if (fits) {
				keep->stop = lin;
				keep->at = *at;
				keep->len = (u8)(off + at->len);
				keep->flags_kept = *flags_kept;
			}
			return lin;
		}
		*flags_kept = *flags_kept && keeps_flags(at);
		lin += at->len;
		rip += at->len;
	}
	at->branch = DEC_BR_NONE;
	return lin;
}

static struct block_entry *block_slot(struct vcpu *v, u64 lin)
{
	return &v->trace->blocks.e[(lin ^ (lin >> 6) ^ (lin >> 12)) % BLOCK_CACHE_SIZE];
}

/* Whether one of the debugger's breakpoints lies in the cached block `e`,
 * where a block decoded now would end (dbg_stop) */
static bool block_has_dbg_bp(const struct plan_ctx *p, const struct block_entry *e)
{
	for (u32 i = 0; i < p->dbg->n; i++) {
		u64 a = p->dbg->addr[i];
		if (a >= e->lin && a <= e->stop && !(a == e->lin && a == p->pass))
			return true;
	}
	return false;
}

/* The cached block starting at `lin`, when its bytes are still those in
 * the guest's memory there now (see find_stop), else NULL. */
static const struct block_entry *block_lookup(struct vcpu *v, const struct plan_ctx *p, u64 lin, u64 rip,
					      enum dec_mode mode)
{
	struct block_cache *bc = &v->trace->blocks;
	const struct block_entry *e = block_slot(v, lin);
	if (!e->len || e->lin != lin || e->rip != rip || e->mode != mode || p->guest_bps ||
	    (p->dbg && block_has_dbg_bp(p, e)) ||
	    !gmem_equal_linear_cached(v, &bc->xlat, &p->key, lin, e->bytes, e->len))
		return NULL;
	return e;
}

/*
 * find_stop_decode() through the vCPU's block cache. An entry is used
 * only while the bytes at its linear address, read now through the
 * guest's current translation, are those it was decoded from: the decode
 * is a function of those bytes, the mode and the RIP alone, so any write
 * to the code (by this vCPU, another, or a device), a remapped page or a
 * new mode gives a miss and a fresh decode, never a stale block. That is
 * the same moment as without a cache: another processor's write after it
 * is seen as it would be by a decode. Not used while the guest has
 * instruction breakpoints of its own in DR2/DR3 (where a block ends then
 * depends on them).
 */
static u64 find_stop(struct vcpu *v, const struct plan_ctx *p, u64 lin, u64 rip, enum dec_mode mode,
		     struct dec_insn *at, bool *flags_kept)
{
	u32 was = prof_switch(v, HVTRACE_PROF_DECODE);
	const struct block_entry *hit = block_lookup(v, p, lin, rip, mode);
	u64 stop;
	bool kept;
	if (hit) {
		*at = hit->at;
		stop = hit->stop;
		kept = hit->flags_kept;
		v->trace->blocks.hits++;
	} else {
		struct block_entry *e = block_slot(v, lin);
		v->trace->blocks.misses++;
		e->len = 0;
		stop = find_stop_decode(v, p, lin, rip, mode, at, e, &kept);
		if (e->len) {
			e->lin = lin;
			e->rip = rip;
			e->mode = (u8)mode;
		}
	}
	prof_switch(v, was);
	if (flags_kept)
		*flags_kept = kept;
	return stop;
}

/* Whether the address ranges [a, b] and [c, d] meet */
static bool ranges_meet(u64 a, u64 b, u64 c, u64 d)
{
	return a <= d && c <= b;
}

/* Whether [a, b] meets one of the chain's first `n` segments */
static bool chain_meets(const struct chain *ch, unsigned n, u64 a, u64 b)
{
	for (unsigned i = 0; i < n; i++)
		if (ranges_meet(ch->start[i], ch->end[i], a, b))
			return true;
	return false;
}

/*
 * The blocks from `next` on, through direct JMP rel and CALL rel: a block
 * ending in one is followed to its target without a stop, up to
 * CHAIN_LINKS_MAX links; chain_settle() commits them at the next exit.
 * Each block is find_stop()'s, so each is checked against the guest's
 * code as a single block is. A chain ends at a branch whose target's block
 * meets one already in it or the instruction the guest is at (`cur`):
 * every RIP then says which segment the guest is in. None with BTF (the
 * guest's TF set in a block must find its branches stepped) nor with
 * BTINT (the threshold's PMI is raised at the exit storing the record: a
 * chain would move it further from the branch). Returns the final stop,
 * its instruction in `x`.
 */
static u64 plan_chain(struct vcpu *v, const struct plan_ctx *p, u64 next, u64 base, enum dec_mode mode, int cpl,
		      u64 cur, struct dec_insn *x)
{
	struct trace_vcpu *t = v->trace;
	struct chain *ch = &t->chain;
	u64 stop = find_stop(v, p, next, next - base, mode, x, NULL), seg = next;
	bool follow = !(t->ds.debugctl & (DEBUGCTL_BTF | DEBUGCTL_BTINT)) && stop != cur &&
		      (next == cur || !ranges_meet(next, stop, cur, cur));

	ch->n = 0;
	/* not through a JMP or CALL the debugger's breakpoint is on: that stop is the breakpoint's */
	while (follow && ch->n < CHAIN_LINKS_MAX && (x->branch == DEC_BR_JMP || x->branch == DEC_BR_CALL) &&
	       x->has_target && !dbg_stop(p, stop, seg)) {
		struct dec_insn y;
		u64 to = base + x->target;
		u64 s2 = find_stop(v, p, to, x->target, mode, &y, NULL);
		if (ranges_meet(seg, stop, to, s2) || chain_meets(ch, ch->n, to, s2) || ranges_meet(to, s2, cur, cur))
			break;
		u32 type;
		rec_kind_of(x, &type);
		ch->start[ch->n] = seg;
		ch->end[ch->n] = stop;
		ch->type[ch->n] = (u8)type;
		ch->n++;
		seg = to;
		stop = s2;
		*x = y;
	}
	ch->start[ch->n] = seg;
	ch->end[ch->n] = stop;
	ch->cpl = cpl;
	return stop;
}

/* Arms the stop(s) for the block (or chain of blocks, plan_chain) starting
 * at `next` (linear; `base` is the code segment's base). A direct
 * conditional branch ending it is not stopped at when its two successors
 * end at two different stops: those are armed instead (DR3, DR2) and
 * cond_settle() infers the outcome. A not-taken branch then costs no exit
 * of its own. */
static void plan_block(struct vcpu *v, const struct plan_ctx *p, u64 next, u64 base, enum dec_mode mode, int cpl,
		       u64 cur)
{
	struct trace_vcpu *t = v->trace;
	struct dec_insn x, a, b;
	u64 stop = plan_chain(v, p, next, base, mode, cpl, cur, &x);
	const struct chain *ch = &t->chain;

	/* not with BTF: the guest's TF set inside the block must find every
	 * branch stepped (bts_btf_step); nor at the debugger's breakpoint */
	if (stop != cur && (x.branch == DEC_BR_JCC || x.branch == DEC_BR_LOOP) && x.has_target &&
	    !(t->ds.debugctl & DEBUGCTL_BTF) && !(p->dbg && dbg_bp_listed(p->dbg, stop))) {
		u64 fall = stop + x.len, target = base + x.target;
		bool fall_kept;
		u64 s_f = find_stop(v, p, fall, fall - base, mode, &a, &fall_kept);
		u64 s_t = find_stop(v, p, target, x.target, mode, &b, NULL);
		bool two = s_f != s_t && s_f != stop && s_t != stop && s_f != cur && s_t != cur &&
			   !chain_meets(ch, ch->n, fall, s_f) && !chain_meets(ch, ch->n, target, s_t);
		/* A forward branch over a few instructions (the taken path a
		 * suffix of the not-taken one, both ending at one stop): that
		 * stop, and the not-taken successor's first instruction, which
		 * only the not-taken path runs; reaching the stop without it
		 * is taken. A Jcc whose not-taken path keeps the flags up to
		 * the stop needs the stop alone: anywhere on either path the
		 * flags are those it tested. */
		bool skip = s_f == s_t && fall < target && s_t != stop && !ranges_meet(fall, s_f, cur, cur) &&
			    !chain_meets(ch, ch->n, fall, s_f);
		bool by_flags = skip && x.branch == DEC_BR_JCC && fall_kept;
		if (skip && !by_flags)
			s_f = fall;
		if (two || skip) {
			u32 type;
			rec_kind_of(&x, &type);
			t->cond = (struct cond_branch){ true, stop, target, fall, s_t, s_f, cpl, (u8)type, by_flags, x };
			if (by_flags)
				bp_arm(v, BP_STOP, s_t, 0, 0);
			else
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

/* The PMU's view of a stepped instruction that completed (the reference
 * engine runs while a counter needs this): one instruction retired, unless
 * a REP string instruction only finished an iteration (RIP stays; no other
 * instruction that is not a branch leaves it there), and what kind of
 * branch it was. A not-taken INTO is no branch. */
static void step_count(struct vcpu *v, const struct step_state *s, u8 kind, u32 type, u64 to)
{
	u32 occ = PMU_OCC_INSN;
	switch (s->insn.branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:
	case DEC_BR_UD:
		if (to == s->lin)
			return;
		break;
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		occ |= pmu_branch_occ(kind, type, branch_taken(&s->insn, s->rflags, s->rcx));
		break;
	case DEC_BR_INT:
		if (!is_legacy_op(&s->insn, 0, 0xce) || (s->rflags & RFLAGS_OF))
			occ |= pmu_branch_occ(HVTRACE_REC_EXCEPTION, 0, true);
		break;
	default:
		occ |= pmu_branch_occ(kind, type, true);
		break;
	}
	pmu_retired(v, occ, s->cpl, s->lin);
}

/* A stepped instruction `s` that completed at `to` (linear) */
static void step_complete_one(struct vcpu *v, const struct step_state *s, u64 to)
{
	struct trace_vcpu *t = v->trace;
	u32 type;
	u8 kind = rec_kind_of(&s->insn, &type);
	step_count(v, s, kind, type, to);
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
		nmi_iret_done(v);	/* SDM Vol. 3 6.7.1 */
		trace_irq_iret(v, to);
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

/* MOV SS, POP SS, and STI: interrupts, and on some processors the
 * single-step trap, wait for the end of the next instruction (SDM Vol. 3
 * 6.8.3). STI blocks only when it sets IF (Vol. 2B STI; Vol. 3 25.4.2,
 * blocking by STI), but QEMU's TCG holds the trap after every STI, IF set
 * before or not (it sets its inhibit flag unconditionally): where the
 * processor traps after the STI alone, step_completed sees it end there. */
static bool shadows_next(const struct step_state *s)
{
	const struct dec_insn *in = &s->insn;
	return (is_legacy_op(in, 0, 0x8e) && ((in->modrm >> 3) & 7) == 2) ||
	       (is_legacy_op(in, 0, 0x17) && s->mode != DEC_MODE_64) || is_legacy_op(in, 0, 0xfb);
}

/*
 * The step's trap came. After an instruction that shadows the next one
 * (shadows_next) and did not end where it would have alone, the
 * processor held the trap over the next instruction as well: both ran,
 * the first falling through and the second, decoded here, ending at
 * `to`. A second that jumps to itself cannot be told from the first
 * alone (where the trap was not held): it is taken as the first alone.
 */
void step_completed(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct step_state *s = &t->step;
	u64 to = gmem_linear_rip(v);

	interp_verify_check(v);
	if (!s->valid || s->dec != DEC_OK) {
		s->valid = false;
		return;
	}
	s->valid = false;
	u64 next = s->lin + s->insn.len;
	if (!shadows_next(s) || to == next) {
		step_complete_one(v, s, to);
		return;
	}
	struct step_state second = *s;
	u8 bytes[15];
	second.lin = next;
	second.rip = s->rip + s->insn.len;
	if (is_legacy_op(&s->insn, 0, 0xfb))
		second.rflags |= RFLAGS_IF;
	second.dec = gmem_decode(v, second.lin, second.rip, s->mode, bytes, &second.insn);
	step_complete_one(v, s, next);
	if (second.dec == DEC_OK)
		step_complete_one(v, &second, to);
	hv.ops->end_interrupt_shadow(v);	/* the shadowed instruction ran */
}

/* Whether the stepped instruction `s` transferred control (BTF: SDM Vol. 3
 * 18.4.3 "Single-Stepping on Branches"): a taken conditional, any other
 * branch kind, not a not-taken INTO. */
bool step_branched(const struct step_state *s)
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

/* --- before the guest runs again --------------------------------------------- */

/*
 * The step of an instruction that shadows the next (shadows_next): QEMU's
 * TCG holds its trap until the next instruction has run too, under the
 * engine's TF (an exit between them would end the shadow: QEMU 7.2 does
 * not load it back from the VMCB at VMRUN, fixed upstream in 2024). When
 * that next one is INT n, INT3, INTO, INT1 or SYSCALL, it saves the TF
 * (in its frame, in R11) and the trap never comes before its handler: its
 * handler is followed too (the breakpoint there), and step_shadowed_reached
 * puts the guest's TF back where it was saved (issue 25: a guest's STI;
 * INT n; CLI took a #DB after the handler's IRET). Where the processor
 * traps after the first alone (hardware), the breakpoint stays for the
 * second, followed as ever.
 */
static void step_follow_shadowed(struct vcpu *v, struct step_state *s)
{
	struct trace_vcpu *t = v->trace;
	u8 b[15];
	struct dec_insn in;
	u64 lin = s->lin + s->insn.len;
	if (!shadows_next(s) || gmem_decode(v, lin, s->rip + s->insn.len, s->mode, b, &in) != DEC_OK)
		return;
	if (follow_soft_int(v, &in, b, lin, s->cpl))
		t->step_pair = STEP_PAIR_FRAME;
	else if (is_legacy_op(&in, 1, 0x05) && follow_syscall(v, &in, s->mode, lin, s->cpl))
		t->step_pair = STEP_PAIR_R11;
}

/* The handler step_follow_shadowed followed is reached with the step's
 * trap still held: the shadowing instruction completed (nothing to
 * record), and the TF saved by the one after it becomes the guest's. */
void step_shadowed_reached(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct step_state *s = &t->step;
	u8 pair = t->step_pair;
	t->step_pair = STEP_PAIR_NONE;
	if (!pair || !t->was_stepping || !s->valid || s->dec != DEC_OK)
		return;
	s->valid = false;
	step_count(v, s, HVTRACE_REC_BRANCH, 0, s->lin + s->insn.len);
	if (pair == STEP_PAIR_R11) {
		mend_saved_tf_r11(v, t->guest_tf);
		return;
	}
	/* the frame the handler starts on: RIP, CS, RFLAGS (SDM Vol. 3 6.14.2,
	 * 6.12.1), slots of 8 bytes in 64-bit mode, of 2 in real mode, else 4 */
	u64 base;
	enum dec_mode mode = gmem_code_mode(v, &base);
	unsigned w = mode == DEC_MODE_64 ? 8 : !(hv.ops->get_cr(v, 0) & CR0_PE) ? 2 : 4;
	mend_saved_tf(v, stack_top(v, mode) + 2 * w, w, t->guest_tf);
}

static void step_arm(struct vcpu *v, struct step_state *s)
{
	v->trace->step_pair = STEP_PAIR_NONE;
	s->valid = true;
	v->rflags |= RFLAGS_TF;
	v->trace->tf_forced = true;
}

/* Before an entry, first: the recorder started or stopped meanwhile
 * (trace/rec.c), so the engine starts or stops before anything is
 * injected that it must follow. */
void trace_entry_sync(struct vcpu *v)
{
	if (rec_take_changed(v))
		trace_update(v);
}

void trace_before_entry(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct step_state *s = &t->step;
	u8 bytes[15];
	u64 base;

	if (t->update_due) {
		t->update_due = false;
		trace_update(v);
	}
	nmi_before_entry(v);
	if (t->engine == HVTRACE_ENGINE_OFF)
		return;
	/* an exit that did not pass trace_exit_begin (one a backend handled
	 * alone) still settles the chain it ended */
	chain_settle(v);
	hv.ops->set_dr(v, 6, DR6_CLEAN);
	if (t->bp.armed && t->bp.kind == BP_HANDLER)
		return; /* an event is being delivered: no stepping, no planning */
	if (t->nmi_pending && !t->nmi_blocked && nmi_can_inject(v)) {
		t->nmi_pending = false;	/* the NMI that waited for an IRET */
		nmi_deliver(v);
		return;
	}
	bp_disarm(v);
	if (t->engine == HVTRACE_ENGINE_LBR)
		return;	/* the LBRs record; nothing to step or plan */
	/* engine = interp: the instructions it can run exactly, here; the first it leaves goes
	 * to the fast engine below, as any instruction the fast engine stops at */
	bool verify = t->engine == HVTRACE_ENGINE_INTERP && hv.boot.interp_verify;
	if (t->engine == HVTRACE_ENGINE_INTERP && t->interp_db_exit && !verify && !t->dbg_dr.tstep)
		interp_run(v);
	t->interp_db_exit = false;
	/* the host debugger's watchpoint the burst's access hit: held after that instruction */
	if (t->dbg_dr.whits)
		dbg_trace_watch(v);
	/* the host debugger's breakpoint at the instruction about to run: held there (trace/dbg.c);
	 * its step (tstep) is this one instruction, stepped below */
	if ((t->dbg_bps.filter || t->dbg_dr.pass_on) && !t->dbg_dr.tstep)
		dbg_trace_bp(v);
	bool dbg_step = t->dbg_dr.tstep != DBG_TSTEP_NONE || dbg_trace_wstep(v);

	s->rip = v->rip;
	s->mode = gmem_code_mode(v, &base);
	s->lin = base + v->rip;
	s->rflags = v->rflags;
	s->rcx = v->gpr[GPR_RCX];
	s->cpl = hv.ops->get_cpl(v);
	u64 trigger = rec_trigger_addr();
	if (trigger && s->lin == trigger) {
		/* the start address reached with the engine on (the guest's
		 * BTS or PMU counters): tracing starts at this instruction, as
		 * at the DR3 breakpoint with the engine off */
		rec_trigger_hit(v);
		trace_update(v);
	}
	u32 was = prof_switch(v, HVTRACE_PROF_DECODE);
	/* the fast engine stops at the instruction ending a block it decoded:
	 * a cached block of that one instruction is its decode (the reference
	 * engine decodes every instruction itself, unchanged) */
	struct plan_ctx plan = { { 0, 0 }, false, NULL, 0 };
	const struct block_entry *e = NULL;
	if (t->engine == HVTRACE_ENGINE_FAST || (t->engine == HVTRACE_ENGINE_INTERP && !t->interp_counting)) {
		plan = (struct plan_ctx){ gmem_xlat_key(v), exec_bps(guest_dr_read(v, 7), 2, 3),
					  t->dbg_bps.filter ? &t->dbg_bps : NULL, s->lin };
		e = block_lookup(v, &plan, s->lin, s->rip, s->mode);
	}
	if (e && e->stop == s->lin) {
		t->blocks.hits++;
		s->insn = e->at;
		s->dec = DEC_OK;
		memset(bytes, 0, sizeof(bytes));
		memcpy(bytes, e->bytes, e->len);
	} else {
		s->dec = gmem_decode(v, s->lin, s->rip, s->mode, bytes, &s->insn);
	}
	prof_switch(v, was);
	s->valid = false;

	u64 hits = guest_dr23_hits(v, s->lin);
	if (hits) {
		/* the guest's DR2/DR3 instruction breakpoint: a fault before the
		 * instruction runs, recorded like the DR0/DR1 ones */
		guest_dr6_db(v, hits);
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
	if (t->engine == HVTRACE_ENGINE_REFERENCE || t->interp_counting || verify || s->dec != DEC_OK || base ||
	    btf_step || dbg_step) {
		if (verify && s->dec == DEC_OK)
			interp_verify_prepare(v);	/* the shadow this step is compared with */
		step_arm(v, s);
		step_follow_shadowed(v, s);
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
	plan_block(v, &plan, next, base, s->mode, s->cpl, s->lin);
	if (hv_image_code(t->bp.addr) || (t->bp.addr2 && hv_image_code(t->bp.addr2))) {
		/* a stop the host cannot arm (trace_host_dr7): this
		 * instruction is stepped instead, the plan forgotten */
		bp_disarm(v);
		t->cond.valid = false;
		t->pending.valid = false;
		t->chain.n = 0;
		step_arm(v, s);
	}
}
