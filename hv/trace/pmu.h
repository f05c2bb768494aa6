/* The guest's virtual architectural PMU (version 2, with
 * IA32_PERF_CAPABILITIES, full-width writes and adaptive PEBS): its MSRs'
 * rules, its counting and the PEBS record, as pure decisions on struct
 * pmu_state (trace/pmu.c,
 * host-tested by tests/unit/test_pmu.c). The engine's hooks and the PMI
 * are trace/ds.c's. docs/pmu.md. */
#ifndef HV_TRACE_PMU_H
#define HV_TRACE_PMU_H
#include "arch/x86/types.h"

#define PMU_VERSION	2
#define PMU_NR_GP	4	/* IA32_PMC0-3, IA32_PERFEVTSEL0-3 */
#define PMU_NR_FIXED	3	/* instructions, core cycles, reference cycles */
#define PMU_WIDTH	48
#define PMU_MASK	((1ull << PMU_WIDTH) - 1)
/* the MSR ranges the hypervisor answers for (the hardware has up to 8) */
#define PMU_MSR_SPAN	8
#define PMU_FIXED_SPAN	4
/* PEBS: adaptive records (format 4) of at most the basic, memory-info and
 * GPR groups (struct pebs_basic... in arch/x86/ds.h) */
#define PMU_PEBS_FORMAT	4
#define PMU_PEBS_MAX	(0x20 + 0x20 + 0x90)

/* What one retired instruction was, for the counters (PMU_OCC_*): each
 * counter's event matches some of these bits. */
#define PMU_OCC_INSN		(1u << 0)	/* any instruction retired */
#define PMU_OCC_BRANCH		(1u << 1)	/* a branch instruction */
#define PMU_OCC_COND		(1u << 2)	/* ... conditional (Jcc, LOOP, JrCXZ) */
#define PMU_OCC_NOT_TAKEN	(1u << 3)	/* ... conditional, not taken */
#define PMU_OCC_NEAR_CALL	(1u << 4)
#define PMU_OCC_NEAR_RET	(1u << 5)
#define PMU_OCC_NEAR_TAKEN	(1u << 6)	/* any taken near branch */
#define PMU_OCC_FAR		(1u << 7)	/* far transfers, SYSCALL..., INT n */
#define PMU_OCC_TSC		(1u << 8)	/* not an instruction: TSC ticks */

struct pmu_state {
	u8 nr_gp, nr_fixed;	/* 0, 0: no PMU offered (an AMD-vendor guest) */
	u64 pmc[PMU_NR_GP];	/* counts, PMU_MASK wide */
	u64 evtsel[PMU_NR_GP];
	u64 fixed[PMU_NR_FIXED];
	u64 fixed_ctrl, global_ctrl;
	u64 global_status;	/* IA32_PERF_GLOBAL_STATUS, bit 62 (BTS, PEBS) included */
	u64 pebs_enable;	/* IA32_PEBS_ENABLE */
	u64 pebs_data_cfg;	/* MSR_PEBS_DATA_CFG */
	u64 tsc_last;		/* TSC-counted events are counted up to here */
};

/* The event a general-purpose counter's event select counts: a mask of
 * PMU_OCC_* (0: an event this PMU does not count, or EDGE, INV or a
 * CMASK, which it cannot apply). */
u32 pmu_evtsel_occ(u64 evtsel);

/* What a branch instruction the engine made a record of (`kind`: enum
 * hvtrace_rec_kind, `type`: enum hvtrace_branch_type) was; `taken` false
 * for a conditional branch that was not. PMU_OCC_INSN not included. */
u32 pmu_branch_occ(u8 kind, u32 type, bool taken);

/* The MSRs (SDM Vol. 4 Table 2-2): 1 handled, 0 not a PMU MSR, -1 #GP.
 * The caller brings the TSC-counted events up to date first
 * (pmu_tsc_advance), so that a read sees them and a write changes the
 * settings from now on. */
int pmu_msr_get(struct pmu_state *p, u32 msr, u64 *val);
int pmu_msr_set(struct pmu_state *p, u32 msr, u64 val);

/* RDPMC's ECX (SDM Vol. 2B RDPMC: bit 30 selects the fixed counters):
 * the counter's value, or false (#GP) for one that does not exist. */
bool pmu_read_counter(const struct pmu_state *p, u32 ecx, u64 *val);

/* One retired instruction at privilege `cpl` that was `occ` (PMU_OCC_*):
 * every counter counting it advances. Returns the GLOBAL_STATUS bits of
 * the counters that wrapped (set in global_status too). */
u64 pmu_count(struct pmu_state *p, u32 occ, int cpl);
/* The TSC-counted events up to `now`, the ticks since the last call
 * spent at privilege `cpl` (< 0: counted at any); the bits of counters
 * that wrapped. */
u64 pmu_tsc_advance(struct pmu_state *p, u64 now, int cpl);
/* The level (for pmu_tsc_advance) of the ticks of a run of the guest that
 * ended at `cpl`, the interrupt window armed for it or not: `cpl`, but 0
 * for a run that ended at CPL 3 with the window armed (it ran nothing
 * there: the window exit comes at once). */
int pmu_tsc_level(int cpl, bool window_armed);
/* Does an enabled TSC-counted counter count at one privilege level only
 * (USR or OS, not both)? Its ticks are split by the level at each exit. */
bool pmu_tsc_split(const struct pmu_state *p);
/* Of the wrapped counters `ovf`, those whose INT/PMI bit asks for a PMI. */
u64 pmu_pmi_bits(const struct pmu_state *p, u64 ovf);
/* Does some enabled counter count events only the engine sees? */
bool pmu_needs_engine(const struct pmu_state *p);
/* Is some enabled counter TSC-counted? */
bool pmu_counts_tsc(const struct pmu_state *p);

/* PEBS (SDM Vol. 3 20.9 "PEBS Facility", adaptive records). Of the
 * counters pmu_count() found wrapped, those whose overflow is a PEBS
 * event: PEBS-enabled (the TSC-counted events never wrap there). */
u64 pmu_pebs_bits(const struct pmu_state *p, u64 ovf);
/* The record for the counters `applicable` wrapped at the instruction at
 * linear address `ip`, the registers after it `regs`, written to `out`
 * (PMU_PEBS_MAX bytes): its size. The groups are PEBS_DATA_CFG's when one
 * of the counters has its Adaptive_Record bit, the basic one alone
 * otherwise. */
struct pebs_gprs;
u32 pmu_pebs_record(const struct pmu_state *p, u64 applicable, u64 ip, u64 tsc, const struct pebs_gprs *regs,
		    u8 *out);
/* The record for `applicable` was stored: each of those counters is
 * reloaded from its reset value in the DS save area (`gp_reset`: PMC0-7,
 * `fixed_reset`: FIXED_CTR0-3) and its overflow bit cleared. */
void pmu_pebs_reload(struct pmu_state *p, u64 applicable, const u64 *gp_reset, const u64 *fixed_reset);

/* The Debug Store's buffer arithmetic, BTS and PEBS alike: a record of
 * `size` bytes fits at `index`, below `abs_max` (no guest value wraps the
 * sum); storing it from `index` to `next` reached `threshold`. */
bool ds_room(u64 index, u64 abs_max, u64 size);
bool ds_threshold_reached(u64 index, u64 next, u64 threshold);

#endif
