/*
 * `engine = lbr`: LBR batching wired into the engine (docs/branch-engine.md
 * "LBR batching"). While it runs, the processor's architectural LBRs
 * record the guest's branches and the hypervisor's two counters end a
 * batch with their PMI; every exit drains the stack first (lbr_collect),
 * before the hypervisor's own records, and makes the batch's records
 * (lbr_batch_records: the instruction at a source decoded where the LBR's
 * type does not say enough). Events are followed as by the other engines
 * (follow.c). Only where the backend arms it (hv.ops->lbr_switch: VMX) and
 * the capability holds (HV_CAP_ARCH_LBR); whatever needs an exit at a
 * branch runs the fast engine instead (lbr_fallback). The pure parts are
 * in lbr.c, host-tested; nothing here has run on a processor with
 * architectural LBRs. Root mode.
 */
#include "hvtrace/abi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "base/gmem.h"
#include "base/lapic.h"
#include "base/log.h"
#include "base/vcpu.h"
#include "trace/engine.h"

/* Whether the LBR engine can run for this vCPU now (else the fast one) */
bool lbr_engine_ok(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	const struct lbr_needs n = {
		.usable = (hv.caps & HV_CAP_ARCH_LBR) && hv.ops->lbr_switch,
		.debugctl = t->ds.debugctl,
		.guest_dr7 = guest_dr_read(v, 7),
		.pmu_on = t->pmu.global_ctrl != 0,
	};
	return !lbr_fallback(&n);
}

/* The guest's state an entry's branches ran under (lbr_batch_records):
 * at a batch's start, the previous exit's; at its end, this exit's */
static void lbr_state_now(struct vcpu *v, struct lbr_state *s)
{
	s->mode = gmem_code_mode(v, &s->cs_base);
	s->cpl = hv.ops->get_cpl(v);
}

static u64 lbr_rdmsr(u32 msr)
{
	return hv.ops->lbr_rdmsr(msr);
}

static void lbr_wrmsr(u32 msr, u64 val)
{
	hv.ops->lbr_wrmsr(msr, val);
}

static const struct lbr_msr_ops lbr_msrs = { lbr_rdmsr, lbr_wrmsr };

/* The PMU's version-2 width and the LBRs' IP kind, from CPUID (the
 * capability checked both) */
static u32 pmu_width(bool *lin_ips)
{
	struct cpuid_regs r;
	cpuid_count(0x1c, 0, &r);
	*lin_ips = r.eax & CPUID_1C_EAX_LIP;
	cpuid_count(0xa, 0, &r);
	return (r.eax >> 16) & 0xff;
}

/* Arms the stack and the counters (lbr_arm), the backend's entry/exit
 * side, and the LVT performance-counter entry as an NMI (the guest's
 * value kept, put back at the stop). Every CPL is recorded: the
 * consumers' CPL filters apply to the records as with the other engines. */
void lbr_engine_start(struct vcpu *v)
{
	struct lbr_engine *e = &v->trace->lbr;
	u64 gctl;
	u32 width = pmu_width(&e->lin_ips);
	hv.ops->lbr_switch(v, 0, 0);	/* root mode's GLOBAL_CTRL 0 before the selects */
	u64 ctl = lbr_arm(&e->l, &lbr_msrs, hv.lbr_depth, width, true, true, &gctl);
	e->saved_lvtpc = lapic_read(APIC_LVTPC);
	lapic_write(APIC_LVTPC, LVT_DM_NMI);
	hv.ops->lbr_switch(v, ctl, gctl);
	lbr_state_now(v, &e->start);
	e->armed = true;
}

void lbr_engine_stop(struct vcpu *v)
{
	struct lbr_engine *e = &v->trace->lbr;
	if (!e->armed)
		return;
	hv.ops->lbr_switch(v, 0, 0);
	lbr_disarm(&lbr_msrs);
	lapic_write(APIC_LVTPC, e->saved_lvtpc);
	e->armed = false;
}

static int lbr_decode(void *ctx, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes, struct dec_insn *in)
{
	return gmem_decode(ctx, lin, rip, mode, bytes, in);
}

/*
 * At every exit, first (trace_exit_begin): the batch since the last exit
 * as records, oldest first, then the hypervisor's own (the event that
 * exited, an emulated instruction). A gap of known size is a LOST record
 * for the recorder and dropped records for the guest's BTS; one of
 * unknown size a gap marker (the guest's BTS cannot show it). IRETs in the
 * batch end the NMI blocking the engine tracks and, by their return
 * address, a paced interrupt's handler (the stack pointer after them is
 * not known here: trace/pace.c PACE_SP_ANY).
 */
void lbr_engine_exit(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct lbr_engine *e = &t->lbr;
	struct lbr_entry snap[LBR_DEPTH_MAX];
	struct lbr_rec recs[LBR_RECS_MAX];
	struct lbr_batch b;
	struct lbr_rec_stats st;
	struct lbr_state end;
	if (!e->armed)
		return;
	lbr_collect(&e->l, &lbr_msrs, snap, &b);
	lbr_state_now(v, &end);
	u32 n = lbr_batch_records(snap, &b, e->lin_ips, &e->start, &end, lbr_decode, v, recs, &st);
	e->batches++;
	e->guessed += st.guessed;
	e->undecoded += st.undecoded;
	e->skipped += st.skipped;
	for (u32 i = 0; i < n; i++) {
		const struct lbr_rec *r = &recs[i];
		if (r->kind == HVTRACE_REC_LOST) {
			if ((t->ds.debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS))
				t->ds.dropped += r->from;
			rec_emit(v, HVTRACE_REC_LOST, r->from, e->last_tsc, r->cpl, 0);
			continue;
		}
		if (r->kind == HVTRACE_REC_MARKER) {
			rec_emit(v, HVTRACE_REC_MARKER, 0, gmem_linear_rip(v), r->cpl, r->aux);
			continue;
		}
		trace_emit(v, r->from, r->to, r->cpl, r->kind, r->aux);
		if (r->kind == HVTRACE_REC_FAR && r->aux == HVTRACE_BR_IRET) {
			t->nmi_blocked = false;	/* SDM Vol. 3 6.7.1 */
			pace_iret(&t->pace, t->branches, r->to, PACE_SP_ANY, rdtsc());
		}
	}
	e->start = end;
	e->last_tsc = rdtsc();
}
