/* LBR batching (docs/branch-engine.md "LBR batching (hardware only)"):
 * turning successive snapshots of the architectural LBR stack into one
 * exact, ordered record stream, the counter arithmetic that ends each
 * batch, the MSR sequence, and the capability decision. No hardware access
 * of its own (trace/lbr.c, host-tested by tests/unit/test_lbr.c over a
 * simulated stack and MSR file): the MSR accessors are the caller's. */
#ifndef HV_TRACE_LBR_H
#define HV_TRACE_LBR_H
#include "arch/x86/types.h"
#include "arch/x86/decode/decode.h"

#define LBR_DEPTH_MAX	64	/* CPUID.1CH:EAX[7:0], bit 7: depth 64 */

/* One stack entry as the MSRs hold it (IA32_LBR_x_FROM_IP/TO_IP/INFO).
 * from = to = info = 0: an empty entry (the stack was cleared). */
struct lbr_entry {
	u64 from, to, info;
};

/* What the drain of one vCPU's stack knows between reads. */
struct lbr_track {
	u32 depth;		/* entries in the stack (IA32_LBR_DEPTH) */
	struct lbr_entry last;	/* the newest entry emitted (0s: the stack was cleared) */
	u64 emitted;		/* records made from the stack */
	u64 gaps;		/* gap records made (some records lost) */
	u64 lost;		/* records lost, where the number is known */
	u64 mismatches;		/* the counters and the stack disagreed */
};

/* A drain's result: emit a gap record first when `gap`, then the entries
 * snap[count - 1] down to snap[0] (oldest first). */
#define LBR_LOST_UNKNOWN	(~0ull)	/* the gap's size is not known (maybe 0) */
struct lbr_batch {
	u32 count;
	bool gap;
	u64 lost;		/* the gap's size: exact, or LBR_LOST_UNKNOWN */
	bool resync;		/* the counters disagree with the stack: read all
				 * `depth` entries and call lbr_resync() instead */
};

/* The stack was cleared (IA32_LBR_DEPTH written) at `depth` entries. */
void lbr_track_reset(struct lbr_track *t, u32 depth);

/* How many entries to read after `n` new records (the counters' sum since
 * the last drain): the n newest and the one before them, which must be
 * the last entry emitted (the anchor); at most the depth. With n = 0 the
 * newest entry alone: still the anchor, or the LBR made a record the
 * counters missed. */
u32 lbr_read_len(const struct lbr_track *t, u64 n);

/* The drain: `snap` holds the lbr_read_len() newest entries, newest first.
 * Trusts `n` and checks it: the entry after the n newest must be the last
 * one emitted, and the n newest must not be empty; otherwise b->resync.
 * More than `depth` records since the last drain: a gap of exactly
 * n - depth before the `depth` entries. */
void lbr_drain(struct lbr_track *t, u64 n, const struct lbr_entry *snap, u32 got,
	       struct lbr_batch *b);

/* After a mismatch: `snap` holds all `depth` entries. Emits only entries
 * certainly newer than the last one emitted (those before its nearest
 * occurrence in the stack, or every non-empty one when it is not there),
 * after a gap of unknown size: never a duplicate, every loss marked. */
void lbr_resync(struct lbr_track *t, const struct lbr_entry *snap, u32 got, struct lbr_batch *b);

/* A model-specific LBR stack (MSR_LASTBRANCH_x with a TOS, SDM Vol. 3
 * "Last Branch Recording for Intel Core Microarchitecture" and later):
 * slot `tos` is the newest; `out` gets the `depth` entries newest first,
 * the order lbr_drain() reads. */
void lbr_ring_order(const struct lbr_entry *ring, u32 depth, u32 tos, struct lbr_entry *out);

/* The counter that ends a batch: counting up from `preset`, it overflows
 * (wraps past 2^width - 1) after k events. */
u64 lbr_counter_preset(u32 width, u32 k);
/* Events counted since `preset` (the counter kept counting after its
 * overflow, through the PMI's skid) */
u64 lbr_counter_delta(u32 width, u64 preset, u64 now);
/* The batch for a stack of `depth`: depth - depth/4 branches, so that a
 * PMI arriving up to depth/4 branches late (skid) still finds every one. */
u32 lbr_batch_len(u32 depth);

/* The record type (enum hvtrace_branch_type) of a near entry from its
 * LBR_INFO branch type; 0 for "other" entries and reserved types (the
 * caller decodes the instruction at `from`: far transfers, INT n..., and
 * LOOP/JrCXZ, which LBR_INFO reports as JCC). */
u32 lbr_br_type(u64 info);
bool lbr_is_other(u64 info);

/* Which end of the batch each emitted entry ran under (end[i] for
 * snap[count - 1 - i]; false: the state at the batch's start, true: the
 * state at this exit). Only "other" transfers change the CPL (and the code
 * segment): the entries up to and including the first one ran under the
 * start's state, those after the last one under the exit's. Returns how
 * many entries lie between two "other" ones (a guess: the exit's). */
u32 lbr_batch_ends(const struct lbr_entry *snap, u32 count, bool *end);
/* The CPL of each emitted entry (cpl[i] for snap[count - 1 - i]): the
 * batch's first branch ran at `cpl_start`, the guest is at `cpl_end` now
 * (lbr_batch_ends). Returns the guessed entries. */
u32 lbr_batch_cpl(const struct lbr_entry *snap, u32 count, int cpl_start, int cpl_end, u8 *cpl);

/* --- the records a batch makes -------------------------------------------
 * docs/branch-engine.md "LBR batching", steps 3-5. The instruction at an
 * entry's `from` is decoded (through the caller's `decode`, the guest's
 * memory in the hypervisor, simulated code in the unit test) where the
 * entry's type does not say enough: LOOP, LOOPcc and JrCXZ arrive as Jcc;
 * an "other" entry is a far transfer, INT n/INT3/INTO/INT1, or no
 * transfer at all (an event's delivery, which the hypervisor records
 * itself at the event's exit: skipped, counted). */
struct lbr_state {
	int cpl;		/* CPL */
	enum dec_mode mode;	/* the code's mode (the decoder's) */
	u64 cs_base;		/* CS.base: added to the IPs unless they are linear */
};
/* the instruction at linear `lin` (RIP `rip`): a dec_decode() status;
 * `bytes` (15) gets its bytes */
typedef int (*lbr_decode_fn)(void *ctx, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes,
			     struct dec_insn *in);
struct lbr_rec {
	u64 from, to;		/* LOST: from = the exact count; MARKER (gap): 0 */
	u8 kind;		/* enum hvtrace_rec_kind: BRANCH, FAR, EXCEPTION, LOST, MARKER */
	u8 cpl;			/* the source's */
	u32 aux;		/* as record.h says for the kind (MARKER: HVTRACE_MARK_GAP) */
};
/* What lbr_batch_records() could not make exact */
struct lbr_rec_stats {
	u32 guessed;		/* entries between two "other" ones: their CPL and CS base a guess */
	u32 undecoded;		/* entries whose instruction could not be read (kept as the LBR typed them) */
	u32 skipped;		/* "other" entries that are no transfer (event deliveries) */
};
#define LBR_RECS_MAX	(LBR_DEPTH_MAX + 1)	/* the gap record and every entry */
/* The records of batch `b` (lbr_drain/lbr_resync over `snap`), oldest
 * first, the gap's first: a LOST record for a gap of known size, a
 * HVTRACE_MARK_GAP marker for one of unknown size. `lin_ips`: the LBR
 * holds linear addresses (CPUID.1CH:EAX[31]), else CS.base is added.
 * Returns the records written to `out` (at most LBR_RECS_MAX). */
u32 lbr_batch_records(const struct lbr_entry *snap, const struct lbr_batch *b, bool lin_ips,
		      const struct lbr_state *start, const struct lbr_state *end, lbr_decode_fn decode,
		      void *ctx, struct lbr_rec *out, struct lbr_rec_stats *st);

/* What the engine needs the fast engine for while `engine = lbr`
 * (trace_update): LBRs only record, so whatever needs the engine to stop
 * at a branch, or the LVT performance-counter entry and the PMU the
 * batches take, is left to it. */
struct lbr_needs {
	bool usable;		/* HV_CAP_ARCH_LBR and a backend that arms it (VMX) */
	u64 debugctl;		/* the guest's IA32_DEBUGCTL */
	u64 guest_dr7;		/* the guest's DR7 */
	bool pmu_on;		/* the guest's virtual PMU has a counter enabled */
};
/* Why the LBR engine cannot run now (the fast engine runs), NULL: it can */
const char *lbr_fallback(const struct lbr_needs *n);

/* The PMI: the overflow bits of the hypervisor's counters in
 * IA32_PERF_GLOBAL_STATUS (0: the NMI is not theirs) */
u64 lbr_pmi_bits(u64 global_status);

/* --- the hardware sequence, through the backend's MSR accessors ---------
 * Which MSRs are written and read, in which order, to arm a vCPU's stack
 * and counters and to collect a batch at an exit. The accessors are the
 * only hardware access (the backend's RDMSR/WRMSR; the unit test's
 * simulated MSR file); the VMCS side (the guest IA32_LBR_CTL field, the
 * LBR_CTL and PERF_GLOBAL_CTRL entry/exit controls) is the backend's. */
struct lbr_msr_ops {
	u64 (*read)(u32 msr);
	void (*write)(u32 msr, u64 val);
};

/* The general-purpose counters the hypervisor owns while batching:
 * near taken branches (ends a batch after lbr_batch_len) and far ones
 * (ends it at each: the CPL, lbr_batch_cpl) */
#define LBR_PMC_NEAR	0
#define LBR_PMC_FAR	1

struct lbr_vcpu {
	struct lbr_track track;
	u32 width;		/* the counters' width (CPUID.0AH:EAX[23:16]) */
	u32 batch;		/* K: near taken branches per batch */
};

/* Arms the stack (IA32_LBR_DEPTH written: cleared) and both counters
 * (event selects with USR/OS as `usr`/`os`, INT, EN; presets). Returns
 * the guest IA32_LBR_CTL value for the VMCS (every branch type, the same
 * CPL filter); *global_ctrl gets the guest IA32_PERF_GLOBAL_CTRL value. */
u64 lbr_arm(struct lbr_vcpu *l, const struct lbr_msr_ops *m, u32 depth, u32 width, bool os, bool usr,
	    u64 *global_ctrl);
/* Both counters' event selects cleared: nothing counts, nothing overflows
 * (the stack stays as it is: the VMCS's LBR_CTL was the only enable). */
void lbr_disarm(const struct lbr_msr_ops *m);
/* At an exit (the stack and counters stopped by the exit controls): how
 * many branches the counters saw, the stack's newest entries read into
 * `snap` (all `depth` of them after a mismatch), the batch decided
 * (lbr_drain, lbr_resync), the counters preset again. */
void lbr_collect(struct lbr_vcpu *l, const struct lbr_msr_ops *m, struct lbr_entry *snap,
		 struct lbr_batch *b);

/* The capability: architectural LBRs with the branch-type field and both
 * filters, a depth of at least 16, an architectural PMU (CPUID.0AH) of
 * version 2+ with 2 general-purpose counters (near taken, far), not a
 * hybrid part (the events' encodings differ per core type), and the VMX
 * controls that switch IA32_LBR_CTL and IA32_PERF_GLOBAL_CTRL at entry and
 * exit (`vmx_ctls`). Returns the depth to use, 0: not usable. */
struct lbr_cpuid {
	u32 max_leaf;			/* CPUID.0:EAX */
	u32 leaf7_edx;
	u32 leaf0a_eax;
	u32 leaf1c_eax, leaf1c_ebx, leaf1c_ecx;
};
u32 lbr_usable(const struct lbr_cpuid *c, bool vmx_ctls);

#endif
