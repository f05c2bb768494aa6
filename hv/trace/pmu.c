/*
 * The virtual architectural PMU's rules (SDM Vol. 3 20.2.1-20.2.2
 * "Architectural Performance Monitoring Version 1/2", 20.6.2.4 and 20.9
 * for IA32_PERF_CAPABILITIES and adaptive PEBS, Vol. 4 Table 2-2): which
 * MSR writes #GP, what the counters read, which events a counter counts
 * and when it wraps, the PEBS record and reload. Pure: no guest access,
 * no hardware; the vCPU glue (the PMI, the engine's hooks, the DS area's
 * memory) is in trace/ds.c. Root mode.
 */
#include "hvtrace/record.h"
#include "arch/x86/ds.h"
#include "arch/x86/msr.h"
#include "base/lib.h"
#include "trace/pmu.h"

/* IA32_PERF_CAPABILITIES (docs/pmu.md): no LBRs (format 0, none listed
 * anywhere else), PEBS records trap-like (after the instruction) with the
 * registers, record format 4 with the adaptive groups (PEBS_BASELINE),
 * full-width writes. No freeze while in SMM. */
#define PMU_PERF_CAPABILITIES	(PERF_CAP_PEBS_TRAP | PERF_CAP_PEBS_ARCH_REG | \
				 PERF_CAP_PEBS_FORMAT(PMU_PEBS_FORMAT) | PERF_CAP_FW_WRITE | \
				 PERF_CAP_PEBS_BASELINE)
/* The groups implemented: memory info (zeros: no counted event is a load
 * or store) and the GPRs; XMM and LBR groups are #GP (no LBRs; docs). */
#define PEBS_DATA_CFG_VALID	(PEBS_DATACFG_MEMINFO | PEBS_DATACFG_GP)

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

/* The TSC-counted events: the ticks since the last call go to the
 * counters whose USR/OS filter takes `cpl` (SDM Vol. 3 20.2.1.1: USR
 * counts at CPL > 0, OS at CPL 0), the level the guest is at now. The TSC
 * does not say at which level its ticks were spent: the caller calls at
 * every exit and PMU access, and while a counter filters, external
 * interrupts exit too (pmu_tsc_split), so each interval goes to the level
 * it ended at (docs/pmu.md). cpl < 0: any level. */
u64 pmu_tsc_advance(struct pmu_state *p, u64 now, int cpl)
{
	u64 delta = now - p->tsc_last;
	p->tsc_last = now;
	return delta ? count(p, PMU_OCC_TSC, cpl, delta) : 0;
}

/* An interrupt-window exit comes at the first instruction boundary where
 * RFLAGS.IF is set (SDM Vol. 3 26.7.5 "Interrupt-Window Exiting", APM
 * Vol. 2 15.21.4: V_IRQ and the VINTR intercept), and IF is always set
 * at CPL 3 (barring IOPL 3 and CLI): a run of the guest with the window
 * armed that ends at CPL 3 got there and exited at once, no instruction
 * of its retired at CPL 3. Its ticks (the kernel's on
 * its way out, an NMI or interrupt handler the injection ran, the
 * hypervisor's) are CPL 0's. Given to CPL 3, a cycles:u counter with a
 * small period wrapped at each such exit: a PMI (an NMI, which goes
 * first) whenever an interrupt waited for the window, the interrupt held
 * again behind it, and the next window exit the same, the guest's timer
 * starved until Linux throttled the event (perf test 24: 11,500 PMIs
 * for `true`, docs/pmu.md). */
int pmu_tsc_level(int cpl, bool window_armed)
{
	return window_armed && cpl == 3 ? 0 : cpl;
}

bool pmu_tsc_split(const struct pmu_state *p)
{
	u64 all = counters(p);
	for (unsigned i = 0; i < 64; i++)
		if ((all & (1ull << i)) && counter_occ(p, i, -1) == PMU_OCC_TSC &&
		    (counter_occ(p, i, 0) == 0) != (counter_occ(p, i, 3) == 0))
			return true;
	return false;
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

/* Reserved bits (#GP when set) of a version 2 PMU with these counters;
 * Adaptive_Record (bit 34 here, 32 + 4n in FIXED_CTR_CTRL) comes with
 * PEBS_BASELINE */
#define EVTSEL_RESERVED	((~0xffffffffull & ~PERFEVTSEL_ADAPTIVE) | PERFEVTSEL_ANY)

static u64 fixed_ctrl_valid(const struct pmu_state *p)
{
	u64 ok = 0;
	for (unsigned n = 0; n < p->nr_fixed; n++)
		ok |= FIXED_CTRL_OS(n) | FIXED_CTRL_USR(n) | FIXED_CTRL_PMI(n) | FIXED_CTRL_ADAPTIVE(n);
	return ok;
}

enum counter_msr { CTR_COUNT, CTR_SEL, CTR_FULL };

/* Which counter an MSR is: its GLOBAL bit, or -1; *kind: the count, its
 * event select, or the count through its full-width alias IA32_A_PMCx. */
static int msr_counter(const struct pmu_state *p, u32 msr, enum counter_msr *kind, bool *exists)
{
	static const struct { u32 base, span; enum counter_msr kind; } ranges[] = {
		{ MSR_IA32_PMC0, PMU_MSR_SPAN, CTR_COUNT },
		{ MSR_IA32_PERFEVTSEL0, PMU_MSR_SPAN, CTR_SEL },
		{ MSR_IA32_A_PMC0, PMU_MSR_SPAN, CTR_FULL },
	};
	for (unsigned r = 0; r < ARRAY_SIZE(ranges); r++)
		if (msr >= ranges[r].base && msr < ranges[r].base + ranges[r].span) {
			*kind = ranges[r].kind;
			*exists = msr - ranges[r].base < p->nr_gp;
			return (int)(msr - ranges[r].base);
		}
	*kind = CTR_COUNT;
	*exists = false;
	if (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + PMU_FIXED_SPAN) {
		*exists = msr - MSR_IA32_FIXED_CTR0 < p->nr_fixed;
		return 32 + (int)(msr - MSR_IA32_FIXED_CTR0);
	}
	return -1;
}

/* The MSRs of PERF_CAPABILITIES and PEBS: an AMD-vendor guest (no PMU,
 * no PDCM) gets #GP, as a processor without them gives. */
static bool pdcm_msr(u32 msr)
{
	return msr == MSR_IA32_PERF_CAPABILITIES || msr == MSR_IA32_PEBS_ENABLE || msr == MSR_PEBS_DATA_CFG;
}

int pmu_msr_get(struct pmu_state *p, u32 msr, u64 *val)
{
	enum counter_msr kind;
	bool exists;
	int i = msr_counter(p, msr, &kind, &exists);
	if (i >= 0) {
		if (!exists)
			return -1;
		*val = kind == CTR_SEL ? p->evtsel[i] : *counter(p, (unsigned)i);
		return 1;
	}
	if (pdcm_msr(msr) && !p->nr_gp)
		return -1;
	switch (msr) {
	case MSR_IA32_PERF_CAPABILITIES:
		*val = PMU_PERF_CAPABILITIES;
		return 1;
	case MSR_IA32_PEBS_ENABLE:
		*val = p->pebs_enable;
		return 1;
	case MSR_PEBS_DATA_CFG:
		*val = p->pebs_data_cfg;
		return 1;
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
	enum counter_msr kind;
	bool exists;
	int i = msr_counter(p, msr, &kind, &exists);
	if (i >= 0) {
		if (!exists)
			return -1;
		if (kind == CTR_SEL) {
			if (val & EVTSEL_RESERVED)
				return -1;
			p->evtsel[i] = val;
		} else if (i < 32 && kind == CTR_COUNT) {
			/* SDM Vol. 3 20.2.6: a write to IA32_PMCx sets bits 31:0
			 * and sign-extends bit 31 to the counter's width */
			p->pmc[i] = (u64)(s64)(s32)(u32)val & PMU_MASK;
		} else {
			/* fixed counters, and the PMCs through IA32_A_PMCx
			 * (full-width writes), are written whole; past their
			 * width #GP (as KVM gives) */
			if (val & ~PMU_MASK)
				return -1;
			*counter(p, (unsigned)i) = val;
		}
		return 1;
	}
	if (pdcm_msr(msr) && !p->nr_gp)
		return -1;
	switch (msr) {
	case MSR_IA32_PERF_CAPABILITIES:
		return -1;	/* read-only */
	case MSR_IA32_PEBS_ENABLE:
		/* one bit per counter, the fixed ones at 32+ (PEBS_BASELINE);
		 * the load-latency and store bits of older formats reserved */
		if (val & ~counters(p))
			return -1;
		p->pebs_enable = val;
		return 1;
	case MSR_PEBS_DATA_CFG:
		if (val & ~PEBS_DATA_CFG_VALID)
			return -1;
		p->pebs_data_cfg = val;
		return 1;
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

/* --- PEBS ------------------------------------------------------------------ */

u64 pmu_pebs_bits(const struct pmu_state *p, u64 ovf)
{
	return ovf & p->pebs_enable;
}

/* Does counter i (GLOBAL numbering) ask for the adaptive groups? */
static bool adaptive(const struct pmu_state *p, unsigned i)
{
	return i < 32 ? p->evtsel[i] & PERFEVTSEL_ADAPTIVE : p->fixed_ctrl & FIXED_CTRL_ADAPTIVE(i - 32);
}

u32 pmu_pebs_record(const struct pmu_state *p, u64 applicable, u64 ip, u64 tsc, const struct pebs_gprs *regs,
		    u8 *out)
{
	u64 groups = 0;
	for (unsigned i = 0; i < 64; i++)
		if ((applicable & (1ull << i)) && adaptive(p, i))
			groups = p->pebs_data_cfg & PEBS_DATA_CFG_VALID;
	u32 size = sizeof(struct pebs_basic);
	if (groups & PEBS_DATACFG_MEMINFO) {
		memset(out + size, 0, sizeof(struct pebs_meminfo));
		size += sizeof(struct pebs_meminfo);
	}
	if (groups & PEBS_DATACFG_GP) {
		memcpy(out + size, regs, sizeof(*regs));
		size += sizeof(*regs);
	}
	struct pebs_basic basic = { groups | (u64)size << PEBS_SIZE_SHIFT, ip, applicable, tsc };
	memcpy(out, &basic, sizeof(basic));
	return size;
}

void pmu_pebs_reload(struct pmu_state *p, u64 applicable, const u64 *gp_reset, const u64 *fixed_reset)
{
	u64 all = counters(p) & applicable;
	for (unsigned i = 0; i < 64; i++)
		if (all & (1ull << i))
			*counter(p, i) = (i < 32 ? gp_reset[i] : fixed_reset[i - 32]) & PMU_MASK;
	p->global_status &= ~all;
}

/* --- the Debug Store's buffers ---------------------------------------------- */

bool ds_room(u64 index, u64 abs_max, u64 size)
{
	return index <= abs_max && abs_max - index >= size;
}

bool ds_threshold_reached(u64 index, u64 next, u64 threshold)
{
	return index < threshold && next >= threshold;
}
