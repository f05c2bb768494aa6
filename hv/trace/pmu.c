/*
 * The virtual architectural PMU's rules (SDM Vol. 3 20.2.1-20.2.2
 * "Architectural Performance Monitoring Version 1/2", Vol. 4 Table 2-2):
 * which MSR writes #GP, what the counters read, which events a counter
 * counts and when it wraps. Pure: no guest access, no hardware; the vCPU
 * glue (the PMI, the engine's hooks) is in trace/ds.c. Root mode.
 */
#include "hvtrace/record.h"
#include "arch/x86/msr.h"
#include "trace/pmu.h"

u32 pmu_evtsel_occ(u64 sel)
{
	/* EDGE, INV and CMASK compare the events of each cycle: no cycles
	 * here, only instructions; such a select counts nothing */
	if (sel & (PERFEVTSEL_EDGE | PERFEVTSEL_INV | PERFEVTSEL_CMASK))
		return 0;
	switch (sel & 0xffff) {
	case ARCH_EV_CORE_CYCLES:
	case ARCH_EV_REF_CYCLES:
		return PMU_OCC_TSC;
	case ARCH_EV_INSNS_RETIRED:
		return PMU_OCC_INSN;
	case ARCH_EV_BRANCHES:
	case BR_INST_RETIRED_ALL_BRANCHES:
		return PMU_OCC_BRANCH;
	case BR_INST_RETIRED_CONDITIONAL:
		return PMU_OCC_COND;
	case BR_INST_RETIRED_NEAR_CALL:
		return PMU_OCC_NEAR_CALL;
	case BR_INST_RETIRED_NEAR_RETURN:
		return PMU_OCC_NEAR_RET;
	case BR_INST_RETIRED_NOT_TAKEN:
		return PMU_OCC_NOT_TAKEN;
	case BR_INST_RETIRED_NEAR_TAKEN:
		return PMU_OCC_NEAR_TAKEN;
	case BR_INST_RETIRED_FAR_BRANCH:
		return PMU_OCC_FAR;
	}
	return 0;
}

u32 pmu_branch_occ(u8 kind, u32 type, bool taken)
{
	if (kind == HVTRACE_REC_FAR || kind == HVTRACE_REC_EXCEPTION)
		return PMU_OCC_BRANCH | PMU_OCC_FAR;
	if (kind != HVTRACE_REC_BRANCH)
		return 0;
	switch (type) {
	case HVTRACE_BR_JCC:
	case HVTRACE_BR_LOOP:
		return PMU_OCC_BRANCH | PMU_OCC_COND | (taken ? PMU_OCC_NEAR_TAKEN : PMU_OCC_NOT_TAKEN);
	case HVTRACE_BR_CALL:
	case HVTRACE_BR_CALL_IND:
		return PMU_OCC_BRANCH | PMU_OCC_NEAR_CALL | PMU_OCC_NEAR_TAKEN;
	case HVTRACE_BR_RET:
		return PMU_OCC_BRANCH | PMU_OCC_NEAR_RET | PMU_OCC_NEAR_TAKEN;
	}
	return PMU_OCC_BRANCH | PMU_OCC_NEAR_TAKEN;
}

/* --- what each counter counts ------------------------------------------ */

static u64 gp_mask(const struct pmu_state *p)
{
	return (1ull << p->nr_gp) - 1;
}

static u64 fixed_mask(const struct pmu_state *p)
{
	return ((1ull << p->nr_fixed) - 1) << 32;
}

/* The PMU_OCC_* event counter `i` (GLOBAL bit numbering: 0-31 general,
 * 32+ fixed) counts now at privilege `cpl`, or 0. cpl < 0: at any. */
static u32 counter_occ(const struct pmu_state *p, unsigned i, int cpl)
{
	if (!(p->global_ctrl & (1ull << i)))
		return 0;
	if (i < 32) {
		u64 sel = p->evtsel[i];
		u64 want = cpl < 0 ? PERFEVTSEL_OS | PERFEVTSEL_USR : cpl ? PERFEVTSEL_USR : PERFEVTSEL_OS;
		if (!(sel & PERFEVTSEL_EN) || !(sel & want))
			return 0;
		return pmu_evtsel_occ(sel);
	}
	unsigned n = i - 32;
	u64 want = cpl < 0 ? FIXED_CTRL_OS(n) | FIXED_CTRL_USR(n) : cpl ? FIXED_CTRL_USR(n) : FIXED_CTRL_OS(n);
	if (!(p->fixed_ctrl & want))
		return 0;
	return n == 0 ? PMU_OCC_INSN : PMU_OCC_TSC;	/* SDM Vol. 3 Table 20-2 */
}

static u64 *counter(struct pmu_state *p, unsigned i)
{
	return i < 32 ? &p->pmc[i] : &p->fixed[i - 32];
}

/* The bits (GLOBAL numbering) of the counters that exist */
static u64 counters(const struct pmu_state *p)
{
	return gp_mask(p) | fixed_mask(p);
}

/* Adds n to counter i, PMU_WIDTH bits wide; true when it wrapped. */
static bool counter_add(struct pmu_state *p, unsigned i, u64 n)
{
	u64 *c = counter(p, i);
	u64 sum = *c + n;
	*c = sum & PMU_MASK;
	return sum > PMU_MASK || n > PMU_MASK;
}

/* Counts n of the events that match `occ` at `cpl` (< 0: any) */
static u64 count(struct pmu_state *p, u32 occ, int cpl, u64 n)
{
	u64 ovf = 0, all = counters(p);
	for (unsigned i = 0; i < 64; i++) {
		if (!(all & (1ull << i)))
			continue;
		u32 ev = counter_occ(p, i, cpl);
		if (ev && (occ & ev) == ev && counter_add(p, i, n))
			ovf |= 1ull << i;
	}
	p->global_status |= ovf;
	return ovf;
}

u64 pmu_count(struct pmu_state *p, u32 occ, int cpl)
{
	return count(p, occ & ~PMU_OCC_TSC, cpl, 1);
}

/* The TSC-counted events are counted at any privilege level: the TSC
 * does not say which level its ticks were spent at (docs/pmu.md). */
u64 pmu_tsc_advance(struct pmu_state *p, u64 now)
{
	u64 delta = now - p->tsc_last;
	p->tsc_last = now;
	return delta ? count(p, PMU_OCC_TSC, -1, delta) : 0;
}

u64 pmu_pmi_bits(const struct pmu_state *p, u64 ovf)
{
	u64 pmi = 0;
	for (unsigned i = 0; i < p->nr_gp; i++)
		if ((ovf & PERF_GLOBAL_PMC(i)) && (p->evtsel[i] & PERFEVTSEL_INT))
			pmi |= PERF_GLOBAL_PMC(i);
	for (unsigned n = 0; n < p->nr_fixed; n++)
		if ((ovf & PERF_GLOBAL_FIXED(n)) && (p->fixed_ctrl & FIXED_CTRL_PMI(n)))
			pmi |= PERF_GLOBAL_FIXED(n);
	return pmi;
}

static bool counts_any(const struct pmu_state *p, bool tsc)
{
	u64 all = counters(p);
	for (unsigned i = 0; i < 64; i++) {
		if (!(all & (1ull << i)))
			continue;
		u32 ev = counter_occ(p, i, -1);
		if (ev && (ev == PMU_OCC_TSC) == tsc)
			return true;
	}
	return false;
}

bool pmu_needs_engine(const struct pmu_state *p)
{
	return counts_any(p, false);
}

bool pmu_counts_tsc(const struct pmu_state *p)
{
	return counts_any(p, true);
}

bool pmu_read_counter(const struct pmu_state *p, u32 ecx, u64 *val)
{
	u32 n = ecx & ~(1u << 30);
	if (ecx & (1u << 30)) {
		if (n >= p->nr_fixed)
			return false;
		*val = p->fixed[n];
	} else {
		if (n >= p->nr_gp)
			return false;
		*val = p->pmc[n];
	}
	return true;
}

/* --- the MSRs ------------------------------------------------------------ */

/* Reserved bits (#GP when set) of a version 2 PMU with these counters */
#define EVTSEL_RESERVED	(~0xffffffffull | PERFEVTSEL_ANY)

static u64 fixed_ctrl_valid(const struct pmu_state *p)
{
	u64 ok = 0;
	for (unsigned n = 0; n < p->nr_fixed; n++)
		ok |= FIXED_CTRL_OS(n) | FIXED_CTRL_USR(n) | FIXED_CTRL_PMI(n);
	return ok;
}

/* Which counter an MSR is: its GLOBAL bit, or -1. *sel: an event select. */
static int msr_counter(const struct pmu_state *p, u32 msr, bool *sel, bool *exists)
{
	*sel = false;
	*exists = false;
	if (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + PMU_MSR_SPAN) {
		*exists = msr - MSR_IA32_PMC0 < p->nr_gp;
		return (int)(msr - MSR_IA32_PMC0);
	}
	if (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + PMU_MSR_SPAN) {
		*sel = true;
		*exists = msr - MSR_IA32_PERFEVTSEL0 < p->nr_gp;
		return (int)(msr - MSR_IA32_PERFEVTSEL0);
	}
	if (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + PMU_FIXED_SPAN) {
		*exists = msr - MSR_IA32_FIXED_CTR0 < p->nr_fixed;
		return 32 + (int)(msr - MSR_IA32_FIXED_CTR0);
	}
	return -1;
}

/* MSRs of PMU features this one does not have: #GP, as on a processor
 * without them (no PDCM, so no IA32_PERF_CAPABILITIES and no full-width
 * writes through IA32_A_PMCx). */
static bool absent_msr(u32 msr)
{
	return msr == MSR_IA32_PERF_CAPABILITIES ||
	       (msr >= MSR_IA32_A_PMC0 && msr < MSR_IA32_A_PMC0 + PMU_MSR_SPAN);
}

int pmu_msr_get(struct pmu_state *p, u32 msr, u64 *val)
{
	bool sel, exists;
	int i = msr_counter(p, msr, &sel, &exists);
	if (i >= 0) {
		if (!exists)
			return -1;
		*val = sel ? p->evtsel[i] : *counter(p, (unsigned)i);
		return 1;
	}
	if (absent_msr(msr))
		return -1;
	switch (msr) {
	case MSR_IA32_PERF_GLOBAL_STATUS:
		*val = p->global_status;
		return 1;
	case MSR_IA32_PERF_GLOBAL_OVF_CTRL:
		*val = 0;
		return 1;
	case MSR_IA32_FIXED_CTR_CTRL:
	case MSR_IA32_PERF_GLOBAL_CTRL:
		if (!p->nr_gp && !p->nr_fixed)
			return -1;
		*val = msr == MSR_IA32_FIXED_CTR_CTRL ? p->fixed_ctrl : p->global_ctrl;
		return 1;
	}
	return 0;
}

int pmu_msr_set(struct pmu_state *p, u32 msr, u64 val)
{
	bool sel, exists;
	int i = msr_counter(p, msr, &sel, &exists);
	if (i >= 0) {
		if (!exists)
			return -1;
		if (sel) {
			if (val & EVTSEL_RESERVED)
				return -1;
			p->evtsel[i] = val;
		} else if (i < 32) {
			/* SDM Vol. 3 20.2.6: a write to IA32_PMCx sets bits 31:0
			 * and sign-extends bit 31 to the counter's width */
			p->pmc[i] = (u64)(s64)(s32)(u32)val & PMU_MASK;
		} else {
			/* fixed counters are written whole; past their width
			 * #GP (as KVM gives) */
			if (val & ~PMU_MASK)
				return -1;
			p->fixed[i - 32] = val;
		}
		return 1;
	}
	if (absent_msr(msr))
		return -1;
	switch (msr) {
	case MSR_IA32_PERF_GLOBAL_STATUS:
		return -1;	/* read-only in version 2 */
	case MSR_IA32_PERF_GLOBAL_OVF_CTRL: {
		u64 ok = counters(p) | PERF_GLOBAL_STATUS_OVF_BUFFER |
			 (p->nr_gp ? PERF_GLOBAL_STATUS_COND_CHGD : 0);
		if (val & ~ok)
			return -1;
		p->global_status &= ~val;
		return 1;
	}
	case MSR_IA32_FIXED_CTR_CTRL:
		if ((!p->nr_gp && !p->nr_fixed) || (val & ~fixed_ctrl_valid(p)))
			return -1;
		p->fixed_ctrl = val;
		return 1;
	case MSR_IA32_PERF_GLOBAL_CTRL:
		if ((!p->nr_gp && !p->nr_fixed) || (val & ~counters(p)))
			return -1;
		p->global_ctrl = val;
		return 1;
	}
	return 0;
}
