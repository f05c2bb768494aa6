/* The virtual PMU's rules (hv/trace/pmu.c): every reserved bit of its
 * MSRs #GP, counters past the ones CPUID 0AH declares #GP, legacy PMC
 * writes sign-extended from bit 31, full-width writes through A_PMCx,
 * IA32_PERF_CAPABILITIES, the event-select decoding, what each counter
 * counts with EN, the USR/OS filters and GLOBAL_CTRL, the wrap at 48 bits
 * with its GLOBAL_STATUS bit and PMI bit, the PEBS record's layout and
 * the reload, the DS buffers' room and threshold arithmetic, and an
 * AMD-vendor guest without a PMU. */
#include <string.h>
#include "unit.h"
#include "hvtrace/record.h"
#include "arch/x86/ds.h"
#include "arch/x86/msr.h"
#include "trace/pmu.h"

static struct pmu_state intel(void)
{
	return (struct pmu_state){ .nr_gp = PMU_NR_GP, .nr_fixed = PMU_NR_FIXED };
}

static u64 get(struct pmu_state *p, u32 msr)
{
	u64 v = 0xdead;
	CHECK(pmu_msr_get(p, msr, &v) == 1, "read %x", msr);
	return v;
}

int main(void)
{
	struct pmu_state p = intel();
	u64 v;

	/* which MSRs exist */
	for (u32 i = 0; i < PMU_MSR_SPAN; i++) {
		int want = i < PMU_NR_GP ? 1 : -1;
		CHECK(pmu_msr_get(&p, MSR_IA32_PMC0 + i, &v) == want, "PMC%u read", i);
		CHECK(pmu_msr_set(&p, MSR_IA32_PMC0 + i, 0) == want, "PMC%u write", i);
		CHECK(pmu_msr_get(&p, MSR_IA32_PERFEVTSEL0 + i, &v) == want, "EVTSEL%u read", i);
		CHECK(pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + i, 0) == want, "EVTSEL%u write", i);
		CHECK(pmu_msr_get(&p, MSR_IA32_A_PMC0 + i, &v) == want, "A_PMC%u read", i);
		CHECK(pmu_msr_set(&p, MSR_IA32_A_PMC0 + i, 0) == want, "A_PMC%u write", i);
	}
	for (u32 i = 0; i < PMU_FIXED_SPAN; i++) {
		int want = i < PMU_NR_FIXED ? 1 : -1;
		CHECK(pmu_msr_get(&p, MSR_IA32_FIXED_CTR0 + i, &v) == want, "FIXED_CTR%u read", i);
		CHECK(pmu_msr_set(&p, MSR_IA32_FIXED_CTR0 + i, 0) == want, "FIXED_CTR%u write", i);
	}
	/* PERF_CAPABILITIES: PEBS trap-like with registers, format 4,
	 * full-width writes, PEBS_BASELINE; read-only */
	CHECK(get(&p, MSR_IA32_PERF_CAPABILITIES) == 0x64c0, "PERF_CAPABILITIES %lx",
	      get(&p, MSR_IA32_PERF_CAPABILITIES));
	CHECK(pmu_msr_set(&p, MSR_IA32_PERF_CAPABILITIES, 0x64c0) == -1, "PERF_CAPABILITIES read-only");
	CHECK(pmu_msr_get(&p, MSR_IA32_DEBUGCTL, &v) == 0, "not a PMU MSR");
	CHECK(pmu_msr_set(&p, MSR_IA32_TSC, 0) == 0, "not a PMU MSR (write)");

	/* every reserved bit, one at a time */
	for (int b = 0; b < 64; b++) {
		u64 bit = 1ull << b;
		int sel_ok = (b < 32 && b != 21) || b == 34;	/* AnyThread: version 3; Adaptive_Record */
		CHECK(pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0, bit) == (sel_ok ? 1 : -1), "EVTSEL bit %d", b);
		/* OS, USR, PMI of three counters; their Adaptive_Record */
		int fc_ok = (b < 12 && (b % 4) != 2) || b == 32 || b == 36 || b == 40;
		CHECK(pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, bit) == (fc_ok ? 1 : -1), "FIXED_CTR_CTRL bit %d", b);
		int gc_ok = b < PMU_NR_GP || (b >= 32 && b < 32 + PMU_NR_FIXED);
		CHECK(pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, bit) == (gc_ok ? 1 : -1), "GLOBAL_CTRL bit %d", b);
		int oc_ok = gc_ok || b == 62 || b == 63;
		CHECK(pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_OVF_CTRL, bit) == (oc_ok ? 1 : -1), "OVF_CTRL bit %d", b);
		CHECK(pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_STATUS, bit) == -1, "GLOBAL_STATUS read-only, bit %d", b);
		CHECK(pmu_msr_set(&p, MSR_IA32_FIXED_CTR0 + 1, bit) == (b < PMU_WIDTH ? 1 : -1), "FIXED_CTR1 bit %d", b);
		/* legacy PMC writes never #GP: bits 63:32 are not written */
		CHECK(pmu_msr_set(&p, MSR_IA32_PMC0 + 2, bit) == 1, "PMC2 bit %d", b);
		/* full-width: 48 bits */
		CHECK(pmu_msr_set(&p, MSR_IA32_A_PMC0 + 1, bit) == (b < PMU_WIDTH ? 1 : -1), "A_PMC1 bit %d", b);
		CHECK(pmu_msr_set(&p, MSR_IA32_PEBS_ENABLE, bit) == (gc_ok ? 1 : -1), "PEBS_ENABLE bit %d", b);
		CHECK(pmu_msr_set(&p, MSR_PEBS_DATA_CFG, bit) == (b < 2 ? 1 : -1), "PEBS_DATA_CFG bit %d", b);
	}
	pmu_msr_set(&p, MSR_IA32_PEBS_ENABLE, 0);
	pmu_msr_set(&p, MSR_PEBS_DATA_CFG, 0);
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, 0);
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, 0);

	/* legacy writes: bits 31:0, bit 31 sign-extended to 48 bits */
	pmu_msr_set(&p, MSR_IA32_PMC0, 0xffffffff80000001ull);
	CHECK(get(&p, MSR_IA32_PMC0) == 0xffff80000001ull, "sign-extended: %lx", get(&p, MSR_IA32_PMC0));
	pmu_msr_set(&p, MSR_IA32_PMC0, 0x123456789ull);
	CHECK(get(&p, MSR_IA32_PMC0) == 0x23456789ull, "bits 31:0 only: %lx", get(&p, MSR_IA32_PMC0));
	/* full-width writes: the whole 48 bits, read back through either */
	CHECK(pmu_msr_set(&p, MSR_IA32_A_PMC0, 0x812345678ull) == 1 && get(&p, MSR_IA32_PMC0) == 0x812345678ull &&
	      get(&p, MSR_IA32_A_PMC0) == 0x812345678ull, "A_PMC0 full width");

	/* event-select decoding */
	CHECK(pmu_evtsel_occ(0xc0) == PMU_OCC_INSN, "INST_RETIRED");
	CHECK(pmu_evtsel_occ(0xc4) == PMU_OCC_BRANCH, "BR_INST_RETIRED");
	CHECK(pmu_evtsel_occ(0x04c4) == PMU_OCC_BRANCH, "ALL_BRANCHES");
	CHECK(pmu_evtsel_occ(0x01c4) == PMU_OCC_COND, "CONDITIONAL");
	CHECK(pmu_evtsel_occ(0x02c4) == PMU_OCC_NEAR_CALL, "NEAR_CALL");
	CHECK(pmu_evtsel_occ(0x08c4) == PMU_OCC_NEAR_RET, "NEAR_RETURN");
	CHECK(pmu_evtsel_occ(0x10c4) == PMU_OCC_NOT_TAKEN, "NOT_TAKEN");
	CHECK(pmu_evtsel_occ(0x20c4) == PMU_OCC_NEAR_TAKEN, "NEAR_TAKEN");
	CHECK(pmu_evtsel_occ(0x40c4) == PMU_OCC_FAR, "FAR_BRANCH");
	CHECK(pmu_evtsel_occ(0x3c) == PMU_OCC_TSC && pmu_evtsel_occ(0x013c) == PMU_OCC_TSC, "cycles");
	CHECK(pmu_evtsel_occ(0xc5) == 0 && pmu_evtsel_occ(0x4f2e) == 0 && pmu_evtsel_occ(0x412e) == 0,
	      "mispredicts, LLC: nothing");
	CHECK(pmu_evtsel_occ(0x03c4) == 0, "two umask bits: nothing");
	CHECK(pmu_evtsel_occ(0xc4 | PERFEVTSEL_EDGE) == 0 && pmu_evtsel_occ(0xc4 | PERFEVTSEL_INV) == 0 &&
	      pmu_evtsel_occ(0xc4 | (1ull << 24)) == 0, "EDGE, INV, CMASK: nothing");
	CHECK(pmu_evtsel_occ(0xc4 | PERFEVTSEL_USR | PERFEVTSEL_OS | PERFEVTSEL_EN | PERFEVTSEL_INT |
			     PERFEVTSEL_PC) == PMU_OCC_BRANCH, "control bits do not change the event");

	/* what a branch is */
	u32 jcc_t = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_BRANCH, HVTRACE_BR_JCC, true);
	u32 jcc_n = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_BRANCH, HVTRACE_BR_JCC, false);
	u32 call = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_BRANCH, HVTRACE_BR_CALL_IND, true);
	u32 ret = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_BRANCH, HVTRACE_BR_RET, true);
	u32 jmp = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_BRANCH, HVTRACE_BR_JMP, true);
	u32 far = PMU_OCC_INSN | pmu_branch_occ(HVTRACE_REC_FAR, HVTRACE_BR_IRET, true);
	CHECK(jcc_n == (PMU_OCC_INSN | PMU_OCC_BRANCH | PMU_OCC_COND | PMU_OCC_NOT_TAKEN), "Jcc not taken");
	CHECK(jcc_t == (PMU_OCC_INSN | PMU_OCC_BRANCH | PMU_OCC_COND | PMU_OCC_NEAR_TAKEN), "Jcc taken");
	CHECK(call == (PMU_OCC_INSN | PMU_OCC_BRANCH | PMU_OCC_NEAR_CALL | PMU_OCC_NEAR_TAKEN), "CALL");
	CHECK(ret == (PMU_OCC_INSN | PMU_OCC_BRANCH | PMU_OCC_NEAR_RET | PMU_OCC_NEAR_TAKEN), "RET");
	CHECK(far == (PMU_OCC_INSN | PMU_OCC_BRANCH | PMU_OCC_FAR), "IRET");
	CHECK(pmu_branch_occ(HVTRACE_REC_INTERRUPT, 0x20, true) == 0, "an interrupt is no branch instruction");

	/* counting: PMC0 branches at CPL 3, PMC1 conditional at CPL 0, PMC2
	 * near calls anywhere, PMC3 not-taken, fixed 0 instructions (OS) */
	p = intel();
	const u64 en = PERFEVTSEL_EN;
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0, 0xc4 | en | PERFEVTSEL_USR);
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + 1, BR_INST_RETIRED_CONDITIONAL | en | PERFEVTSEL_OS);
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + 2, BR_INST_RETIRED_NEAR_CALL | en | PERFEVTSEL_OS | PERFEVTSEL_USR);
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + 3, BR_INST_RETIRED_NOT_TAKEN | PERFEVTSEL_OS | PERFEVTSEL_USR);
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0));
	CHECK(!pmu_needs_engine(&p), "nothing counts before GLOBAL_CTRL");
	pmu_count(&p, jcc_t, 0);
	CHECK(get(&p, MSR_IA32_PMC0 + 1) == 0 && get(&p, MSR_IA32_FIXED_CTR0) == 0, "idle with GLOBAL_CTRL clear");
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, 0xf | PERF_GLOBAL_FIXED(0));
	CHECK(pmu_needs_engine(&p) && !pmu_counts_tsc(&p), "the engine counts these");
	pmu_count(&p, jcc_t, 0);
	pmu_count(&p, jcc_n, 0);
	pmu_count(&p, jcc_n, 3);
	pmu_count(&p, call, 3);
	pmu_count(&p, call, 0);
	pmu_count(&p, ret, 3);
	pmu_count(&p, jmp, 3);
	pmu_count(&p, far, 3);
	pmu_count(&p, PMU_OCC_INSN, 0);
	CHECK(get(&p, MSR_IA32_PMC0) == 5, "branches at CPL 3: %lu", get(&p, MSR_IA32_PMC0));
	CHECK(get(&p, MSR_IA32_PMC0 + 1) == 2, "conditional at CPL 0: %lu", get(&p, MSR_IA32_PMC0 + 1));
	CHECK(get(&p, MSR_IA32_PMC0 + 2) == 2, "near calls: %lu", get(&p, MSR_IA32_PMC0 + 2));
	CHECK(get(&p, MSR_IA32_PMC0 + 3) == 0, "EN clear: %lu", get(&p, MSR_IA32_PMC0 + 3));
	CHECK(get(&p, MSR_IA32_FIXED_CTR0) == 4, "instructions at CPL 0: %lu", get(&p, MSR_IA32_FIXED_CTR0));

	/* the wrap: GLOBAL_STATUS bit, PMI only with INT */
	pmu_msr_set(&p, MSR_IA32_PMC0, 0xfffffffe);	/* -2: 0xfffffffffffe */
	CHECK(get(&p, MSR_IA32_PMC0) == PMU_MASK - 1, "-2 is 2^48-2");
	CHECK(pmu_count(&p, jmp, 3) == 0, "no wrap at 2^48-1");
	u64 ovf = pmu_count(&p, jmp, 3);
	CHECK(ovf == PERF_GLOBAL_PMC(0) && get(&p, MSR_IA32_PMC0) == 0, "wrapped to 0: %lx", ovf);
	CHECK(get(&p, MSR_IA32_PERF_GLOBAL_STATUS) == PERF_GLOBAL_PMC(0), "status bit 0");
	CHECK(pmu_pmi_bits(&p, ovf) == 0, "no PMI without INT");
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0, 0xc4 | en | PERFEVTSEL_USR | PERFEVTSEL_INT);
	CHECK(pmu_pmi_bits(&p, ovf) == PERF_GLOBAL_PMC(0), "PMI with INT");
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_OVF_CTRL, PERF_GLOBAL_PMC(0));
	CHECK(get(&p, MSR_IA32_PERF_GLOBAL_STATUS) == 0, "OVF_CTRL clears");
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR0, PMU_MASK);
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0) | FIXED_CTRL_PMI(0));
	ovf = pmu_count(&p, PMU_OCC_INSN, 0);
	CHECK(ovf == PERF_GLOBAL_FIXED(0) && pmu_pmi_bits(&p, ovf) == ovf, "fixed 0 wraps with its PMI");

	/* TSC-counted: cycles by TSC ticks, with their wrap; the ticks since
	 * the last call go to the counters whose USR/OS takes the CPL now */
	p = intel();
	pmu_tsc_advance(&p, 1000, 3);
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_USR(1) | FIXED_CTRL_OS(2));
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, PERF_GLOBAL_FIXED(1) | PERF_GLOBAL_FIXED(2));
	CHECK(pmu_counts_tsc(&p) && !pmu_needs_engine(&p), "cycles are the TSC's");
	CHECK(pmu_tsc_split(&p), "a USR-only cycles counter splits the ticks");
	pmu_tsc_advance(&p, 1500, 3);
	CHECK(get(&p, MSR_IA32_FIXED_CTR0 + 1) == 500 && get(&p, MSR_IA32_FIXED_CTR0 + 2) == 0,
	      "500 ticks at CPL 3: USR %lu, OS %lu", get(&p, MSR_IA32_FIXED_CTR0 + 1), get(&p, MSR_IA32_FIXED_CTR0 + 2));
	pmu_tsc_advance(&p, 1700, 0);
	CHECK(get(&p, MSR_IA32_FIXED_CTR0 + 1) == 500 && get(&p, MSR_IA32_FIXED_CTR0 + 2) == 200,
	      "200 ticks at CPL 0: USR %lu, OS %lu", get(&p, MSR_IA32_FIXED_CTR0 + 1), get(&p, MSR_IA32_FIXED_CTR0 + 2));
	pmu_tsc_advance(&p, 1800, -1);
	CHECK(get(&p, MSR_IA32_FIXED_CTR0 + 1) == 600 && get(&p, MSR_IA32_FIXED_CTR0 + 2) == 300, "any CPL: both");
	pmu_count(&p, jmp, 3);
	CHECK(get(&p, MSR_IA32_FIXED_CTR0 + 1) == 600, "instructions are not cycles");
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_USR(1) | FIXED_CTRL_OS(1));
	CHECK(!pmu_tsc_split(&p), "USR and OS: no split");
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR0 + 1, PMU_MASK - 9);
	CHECK(pmu_tsc_advance(&p, 1809, 0) == 0 && get(&p, MSR_IA32_FIXED_CTR0 + 1) == PMU_MASK, "no wrap at 2^48-1");
	CHECK(pmu_tsc_advance(&p, 1819, 3) == PERF_GLOBAL_FIXED(1), "wrap after ten more");
	CHECK(get(&p, MSR_IA32_FIXED_CTR0 + 1) == 9, "counts on past the wrap: %lu", get(&p, MSR_IA32_FIXED_CTR0 + 1));
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0, 0x3c | PERFEVTSEL_EN | PERFEVTSEL_OS);
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, PERF_GLOBAL_PMC(0));
	CHECK(pmu_tsc_split(&p), "an OS-only cycles PMC splits");
	pmu_tsc_advance(&p, 1900, 3);
	CHECK(get(&p, MSR_IA32_PMC0) == 0, "not at CPL 3");
	pmu_tsc_advance(&p, 1950, 0);
	CHECK(get(&p, MSR_IA32_PMC0) == 50, "50 at CPL 0: %lu", get(&p, MSR_IA32_PMC0));

	/* a run that ended at CPL 3 with the interrupt window armed ran
	 * nothing there: its ticks are CPL 0's */
	CHECK(pmu_tsc_level(3, false) == 3 && pmu_tsc_level(0, false) == 0 && pmu_tsc_level(0, true) == 0 &&
	      pmu_tsc_level(1, true) == 1, "the level the run ended at");
	CHECK(pmu_tsc_level(3, true) == 0, "window armed, at CPL 3: CPL 0's");
	pmu_tsc_advance(&p, 2000, pmu_tsc_level(3, true));
	CHECK(get(&p, MSR_IA32_PMC0) == 100, "the OS counter has them: %lu", get(&p, MSR_IA32_PMC0));

	/* RDPMC's index: bit 30 the fixed counters, the rest #GP */
	p = intel();
	p.pmc[3] = 33;
	p.fixed[2] = 22;
	CHECK(pmu_read_counter(&p, 3, &v) && v == 33, "RDPMC 3");
	CHECK(pmu_read_counter(&p, (1u << 30) | 2, &v) && v == 22, "RDPMC fixed 2");
	CHECK(!pmu_read_counter(&p, 4, &v) && !pmu_read_counter(&p, (1u << 30) | 3, &v) &&
	      !pmu_read_counter(&p, 1u << 31, &v) && !pmu_read_counter(&p, (1u << 29), &v), "RDPMC past the counters");

	/* PEBS: only the PEBS-enabled counters' wraps are PEBS events */
	p = intel();
	pmu_msr_set(&p, MSR_IA32_PEBS_ENABLE, PERF_GLOBAL_PMC(1) | PERF_GLOBAL_FIXED(0));
	CHECK(pmu_pebs_bits(&p, PERF_GLOBAL_PMC(0) | PERF_GLOBAL_PMC(1) | PERF_GLOBAL_FIXED(0)) ==
	      (PERF_GLOBAL_PMC(1) | PERF_GLOBAL_FIXED(0)), "PEBS bits");
	/* the record: basic group alone without Adaptive_Record */
	u8 rec[PMU_PEBS_MAX];
	struct pebs_gprs regs;
	for (int i = 0; i < 16; i++)
		regs.gpr[i] = 0x100 + i;
	regs.flags = 0x246;
	regs.ip = 0x1005;
	pmu_msr_set(&p, MSR_PEBS_DATA_CFG, PEBS_DATACFG_MEMINFO | PEBS_DATACFG_GP);
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + 1, 0xc4 | en | PERFEVTSEL_OS);
	memset(rec, 0xcc, sizeof(rec));
	u32 size = pmu_pebs_record(&p, PERF_GLOBAL_PMC(1), 0x1000, 777, &regs, rec);
	struct pebs_basic basic;
	memcpy(&basic, rec, sizeof(basic));
	CHECK(size == 0x20 && basic.format_size == (0x20ull << 48) && basic.ip == 0x1000 &&
	      basic.applicable_counters == PERF_GLOBAL_PMC(1) && basic.tsc == 777 && rec[0x20] == 0xcc,
	      "basic record: size %u format %lx", size, basic.format_size);
	/* Adaptive_Record: PEBS_DATA_CFG's groups, memory info (zeros) then GPRs */
	pmu_msr_set(&p, MSR_IA32_PERFEVTSEL0 + 1, 0xc4 | en | PERFEVTSEL_OS | PERFEVTSEL_ADAPTIVE);
	size = pmu_pebs_record(&p, PERF_GLOBAL_PMC(1), 0x1000, 778, &regs, rec);
	memcpy(&basic, rec, sizeof(basic));
	struct pebs_meminfo mem;
	struct pebs_gprs got;
	memcpy(&mem, rec + 0x20, sizeof(mem));
	memcpy(&got, rec + 0x40, sizeof(got));
	CHECK(size == 0xd0 && basic.format_size == ((0xd0ull << 48) | 3) && !mem.address && !mem.aux &&
	      !mem.latency && !mem.tsx_tuning && !memcmp(&got, &regs, sizeof(regs)),
	      "adaptive record: size %x format %lx", size, basic.format_size);
	pmu_msr_set(&p, MSR_PEBS_DATA_CFG, PEBS_DATACFG_GP);
	size = pmu_pebs_record(&p, PERF_GLOBAL_PMC(1), 0x1000, 779, &regs, rec);
	memcpy(&basic, rec, sizeof(basic));
	memcpy(&got, rec + 0x20, sizeof(got));
	CHECK(size == 0xb0 && basic.format_size == ((0xb0ull << 48) | 2) && got.gpr[15] == 0x10f && got.ip == 0x1005,
	      "GPRs right after the basic group");
	/* a fixed counter's Adaptive_Record bit */
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0) | FIXED_CTRL_ADAPTIVE(0));
	CHECK(pmu_pebs_record(&p, PERF_GLOBAL_FIXED(0), 0, 0, &regs, rec) == 0xb0, "fixed adaptive");
	pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0));
	CHECK(pmu_pebs_record(&p, PERF_GLOBAL_FIXED(0), 0, 0, &regs, rec) == 0x20, "fixed basic");
	/* the reload: each applicable counter from its reset value (48
	 * bits), its overflow bit cleared; the others untouched */
	u64 gp_reset[8] = { 0, (u64)-3, 0, 0, 0, 0, 0, 0 }, fixed_reset[4] = { (u64)-7, 0, 0, 0 };
	p.global_status = PERF_GLOBAL_PMC(0) | PERF_GLOBAL_PMC(1) | PERF_GLOBAL_FIXED(0) |
			  PERF_GLOBAL_STATUS_OVF_BUFFER;
	p.pmc[0] = 5;
	pmu_pebs_reload(&p, PERF_GLOBAL_PMC(1) | PERF_GLOBAL_FIXED(0), gp_reset, fixed_reset);
	CHECK(p.pmc[1] == PMU_MASK - 2 && p.fixed[0] == PMU_MASK - 6 && p.pmc[0] == 5 &&
	      p.global_status == (PERF_GLOBAL_PMC(0) | PERF_GLOBAL_STATUS_OVF_BUFFER), "reload: %lx %lx %lx",
	      p.pmc[1], p.fixed[0], p.global_status);
	/* a counter past those declared is never reloaded (a guest's bits) */
	pmu_pebs_reload(&p, 1ull << 7 | 1ull << 35, gp_reset, fixed_reset);
	CHECK(p.pmc[1] == PMU_MASK - 2, "no counter past the declared ones");
	/* counted through a wrap with a reset of -3: the third event wraps */
	pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_CTRL, PERF_GLOBAL_PMC(1));
	CHECK(!pmu_count(&p, jmp, 0) && !pmu_count(&p, jmp, 0) && pmu_count(&p, jmp, 0) == PERF_GLOBAL_PMC(1),
	      "every third branch");

	/* the DS buffers' arithmetic, BTS and PEBS alike */
	CHECK(ds_room(0x1000, 0x1020, 0x20) && !ds_room(0x1001, 0x1020, 0x20) && !ds_room(0x1040, 0x1020, 0x20),
	      "room below the absolute maximum");
	CHECK(!ds_room(~0ull - 8, 16, 0x20) && !ds_room(16, ~0ull, ~0ull), "no wrap past 2^64");
	CHECK(ds_threshold_reached(0x1000, 0x1020, 0x1020) && ds_threshold_reached(0x1000, 0x1020, 0x1010) &&
	      !ds_threshold_reached(0x1020, 0x1040, 0x1020) && !ds_threshold_reached(0x1000, 0x1020, 0x1021),
	      "threshold reached once");

	/* an AMD-vendor guest: no counters, GLOBAL_STATUS/OVF_CTRL keep the
	 * DS buffer bit */
	p = (struct pmu_state){ 0 };
	CHECK(pmu_msr_get(&p, MSR_IA32_PMC0, &v) == -1 && pmu_msr_get(&p, MSR_IA32_FIXED_CTR0, &v) == -1 &&
	      pmu_msr_get(&p, MSR_IA32_PERF_GLOBAL_CTRL, &v) == -1 &&
	      pmu_msr_set(&p, MSR_IA32_FIXED_CTR_CTRL, 0) == -1, "no PMU for AMD");
	CHECK(pmu_msr_get(&p, MSR_IA32_PERF_CAPABILITIES, &v) == -1 && pmu_msr_get(&p, MSR_IA32_PEBS_ENABLE, &v) == -1 &&
	      pmu_msr_set(&p, MSR_PEBS_DATA_CFG, 0) == -1 && pmu_msr_get(&p, MSR_IA32_A_PMC0, &v) == -1,
	      "AMD: no PERF_CAPABILITIES, PEBS, full-width writes");
	CHECK(pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_OVF_CTRL, PERF_GLOBAL_STATUS_OVF_BUFFER) == 1 &&
	      pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1) == -1 &&
	      pmu_msr_set(&p, MSR_IA32_PERF_GLOBAL_OVF_CTRL, PERF_GLOBAL_STATUS_COND_CHGD) == -1,
	      "AMD: OVF_CTRL clears the DS bit only");
	CHECK(!pmu_needs_engine(&p) && !pmu_counts_tsc(&p) && pmu_count(&p, jmp, 0) == 0, "AMD: counts nothing");
	return unit_done("test_pmu");
}
