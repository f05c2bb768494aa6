/*
 * t_pmu: the guest's virtual architectural PMU (docs/pmu.md). CPUID leaf
 * 0AH; the MSRs' #GP rules, every reserved bit of each; counters past
 * those declared; legacy PMC writes sign-extended; the 48-bit width and
 * the wrap; exact counts of pmu_seq.S's instructions and branches, each
 * sub-event, under the OS and USR filters; counters idle with EN or
 * GLOBAL_CTRL clear; the overflow bit and the PMI through the LVT
 * performance counter entry (masked after). Under an AMD vendor: no PMU.
 */
#include "guest.h"
#include "hvtrace/abi.h"

void pmu_seq(uint64_t global_ctrl);
void pmu_rep_seq(uint64_t global_ctrl, void *dst, const void *src);
void pmu_user_seq(uint64_t global_ctrl, uint64_t user_rsp, uint64_t user_cs, uint64_t user_ss);
#define SYM(x) extern char x[] __attribute__((visibility("hidden")))
SYM(pmi_handler); SYM(pmu_user_code); SYM(pmu_user_gate);

/* What pmu_seq counts (pmu_seq.S's numbered lines) */
#define PMU_SEQ_INSNS		27
#define PMU_SEQ_BRANCHES	11	/* jz, jz, call x2, ret x2, jmp, loop x3, iretq */
#define PMU_SEQ_COND		5	/* jz x2, loop x3 */
#define PMU_SEQ_NEAR_CALL	2
#define PMU_SEQ_NEAR_RET	2
#define PMU_SEQ_NOT_TAKEN	2	/* jz, the last loop */
#define PMU_SEQ_NEAR_TAKEN	8	/* jz, call x2, ret x2, jmp, loop x2 */
#define PMU_SEQ_FAR		1	/* iretq */
#define PMU_REP_INSNS		8
/* pmu_user_seq: ring 0 (OS) and ring 3 (USR) apart */
#define PMU_USER_OS_INSNS	11
#define PMU_USER_OS_BRANCHES	1	/* the IRETQ to ring 3 */
#define PMU_USER_INSNS		6
#define PMU_USER_BRANCHES	5	/* jz, call, ret, jmp, int */
#define PMU_USER_NEAR_TAKEN	4
#define PMU_USER_FAR		1	/* INT 0x82 */

#define NR_GP		4
#define NR_FIXED	3
#define MASK48		((1ull << 48) - 1)
#define ALL_CTRL	(0xfull | (7ull << 32))

static void pmu_reset(void)
{
	wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0);
	for (int i = 0; i < NR_GP; i++) {
		wrmsr(MSR_IA32_PERFEVTSEL0 + i, 0);
		wrmsr(MSR_IA32_PMC0 + i, 0);
	}
	for (int i = 0; i < NR_FIXED; i++)
		wrmsr(MSR_IA32_FIXED_CTR0 + i, 0);
	wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, rdmsr(MSR_IA32_PERF_GLOBAL_STATUS));
}

static uint64_t pmc(int i) { return rdmsr(MSR_IA32_PMC0 + i); }
static uint64_t fixed(int i) { return rdmsr(MSR_IA32_FIXED_CTR0 + i); }

/* The engine running on this vCPU now (the status hypercall) */
static uint32_t engine_now(void)
{
	struct hvtrace_vcpu_status st = { 0 };
	uint64_t b = A(&st), c = sizeof(st);
	if (hypercall(HVTRACE_HC_VCPU_STATUS, &b, &c) || st.magic != HVTRACE_VCPU_STATUS_MAGIC)
		return ~0u;
	return st.engine;
}

static void run_seq(uint64_t ctrl)
{
	uint64_t f = irq_save();	/* no interrupt handler's instructions in the count */
	pmu_seq(ctrl);
	irq_restore(f);
}

static void test_cpuid(void)
{
	struct cpuid r = cpuid(0xa, 0);
	report((r.a & 0xff) == 2, "cpuid_0a_version", "eax %x", r.a);
	report(((r.a >> 8) & 0xff) == NR_GP && ((r.a >> 16) & 0xff) == 48, "cpuid_0a_gp_counters",
	       "eax %x", r.a);
	report((r.a >> 24) == 7 && r.b == ((1u << 3) | (1u << 4) | (1u << 6)), "cpuid_0a_events",
	       "eax %x ebx %x", r.a, r.b);
	report((r.d & 0x1f) == NR_FIXED && ((r.d >> 5) & 0xff) == 48, "cpuid_0a_fixed", "edx %x", r.d);
	report(!(cpuid(1, 0).c & CPUID_1_ECX_PDCM), "cpuid_1_no_pdcm", NULL);
}

/* Every bit of `msr` written alone: the bits in `ok` are accepted, the
 * others #GP (and leave the value as it was). */
static void check_bits(const char *name, uint32_t msr, uint64_t ok)
{
	int bad = -1;
	uint64_t before = rdmsr(msr);
	for (int b = 0; b < 64; b++) {
		uint64_t bit = 1ull << b;
		int v = wrmsr_fault(msr, bit);
		if ((v == 13) != !(ok & bit) || (v == 13 && rdmsr(msr) != before)) {
			bad = b;
			break;
		}
		if (v != 13)
			wrmsr(msr, before);
	}
	report(bad < 0, name, "bit %d", bad);
}

static void test_msrs(void)
{
	uint64_t v;
	pmu_reset();
	check_bits("perfevtsel_reserved_gp", MSR_IA32_PERFEVTSEL0 + 1, 0xffffffffull & ~PERFEVTSEL_ANY);
	check_bits("fixed_ctr_ctrl_reserved_gp", MSR_IA32_FIXED_CTR_CTRL, 0xbbb);
	check_bits("global_ctrl_reserved_gp", MSR_IA32_PERF_GLOBAL_CTRL, ALL_CTRL);
	check_bits("global_ovf_ctrl_reserved_gp", MSR_IA32_PERF_GLOBAL_OVF_CTRL,
		   ALL_CTRL | (3ull << 62));
	check_bits("fixed_ctr_width_gp", MSR_IA32_FIXED_CTR0 + 2, MASK48);
	report(wrmsr_fault(MSR_IA32_PERF_GLOBAL_STATUS, 0) == 13, "global_status_read_only", NULL);
	report(rdmsr_fault(MSR_IA32_PERF_GLOBAL_OVF_CTRL, &v) == -1 && v == 0, "global_ovf_ctrl_reads_0", NULL);
	bool none = true;
	for (int i = NR_GP; i < 8; i++)
		none &= rdmsr_fault(MSR_IA32_PMC0 + i, &v) == 13 && wrmsr_fault(MSR_IA32_PMC0 + i, 0) == 13 &&
			rdmsr_fault(MSR_IA32_PERFEVTSEL0 + i, &v) == 13 &&
			wrmsr_fault(MSR_IA32_PERFEVTSEL0 + i, 0) == 13;
	report(none, "counters_past_n_gp", NULL);
	report(rdmsr_fault(MSR_IA32_FIXED_CTR0 + NR_FIXED, &v) == 13 &&
	       wrmsr_fault(MSR_IA32_FIXED_CTR0 + NR_FIXED, 0) == 13, "fixed_ctr3_gp", NULL);
	report(rdmsr_fault(MSR_IA32_PERF_CAPABILITIES, &v) == 13 && rdmsr_fault(MSR_IA32_A_PMC0, &v) == 13 &&
	       wrmsr_fault(MSR_IA32_A_PMC0, 0) == 13, "no_perf_capabilities_no_full_width", NULL);
	report(wrmsr_fault(MSR_IA32_DEBUGCTL, DEBUGCTL_FREEZE_PERFMON_ON_PMI) == 13,
	       "freeze_perfmon_on_pmi_gp", NULL);
	/* IA32_PMCx: bits 31:0 written, bit 31 sign-extended to 48 bits */
	wrmsr(MSR_IA32_PMC0 + 3, 0xffffffff80000001ull);
	v = pmc(3);
	report(v == 0xffff80000001ull, "pmc_write_sign_extended", "%lx", v);
	wrmsr(MSR_IA32_PMC0 + 3, 0x1234567f0ull);
	v = pmc(3);
	report(v == 0x234567f0ull, "pmc_write_low_32_bits", "%lx", v);
	wrmsr(MSR_IA32_FIXED_CTR0, MASK48);
	report(fixed(0) == MASK48, "fixed_ctr_48_bits", "%lx", fixed(0));
	/* RDPMC: the same counters (bit 30: the fixed ones); others #GP */
	uint64_t r = 0;
	uint32_t lo, hi;
	asm volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(3));
	r = lo | (uint64_t)hi << 32;
	report(r == 0x234567f0ull, "rdpmc_gp_counter", "%lx", r);
	asm volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(1u << 30));
	r = lo | (uint64_t)hi << 32;
	report(r == MASK48, "rdpmc_fixed_counter", "%lx", r);
	report(TRY(2, "rdpmc" ::"c"(4) : "eax", "edx") == 13 &&
	       TRY(2, "rdpmc" ::"c"(0x40000003) : "eax", "edx") == 13, "rdpmc_past_counters_gp", NULL);
	/* MISC_ENABLE still says PEBS is unavailable */
	report(rdmsr(MSR_IA32_MISC_ENABLE) & MISC_ENABLE_PEBS_UNAVAIL, "misc_enable_pebs_unavailable", NULL);
	pmu_reset();
}

/* The sequence counted with these event selects on PMC0-3 and this fixed
 * counter control; each counter's count against want[0..3], fixed[0..2]. */
static void check_counts(const char *name, const uint64_t sel[4], uint64_t fctrl, uint64_t ctrl,
			 const int64_t want[4], const int64_t fwant[3])
{
	pmu_reset();
	for (int i = 0; i < NR_GP; i++)
		wrmsr(MSR_IA32_PERFEVTSEL0 + i, sel[i]);
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, fctrl);
	run_seq(ctrl);
	uint64_t got[7];
	bool ok = true;
	for (int i = 0; i < NR_GP; i++) {
		got[i] = pmc(i);
		ok &= want[i] < 0 ? got[i] > 0 : got[i] == (uint64_t)want[i];
	}
	for (int i = 0; i < NR_FIXED; i++) {
		got[4 + i] = fixed(i);
		ok &= fwant[i] < 0 ? got[4 + i] > 0 : got[4 + i] == (uint64_t)fwant[i];
	}
	report(ok, name, "pmc %lu %lu %lu %lu fixed %lu %lu %lu", got[0], got[1], got[2], got[3], got[4],
	       got[5], got[6]);
}

#define OS	(PERFEVTSEL_EN | PERFEVTSEL_OS)
#define USR	(PERFEVTSEL_EN | PERFEVTSEL_USR)
#define BOTH	(PERFEVTSEL_EN | PERFEVTSEL_OS | PERFEVTSEL_USR)
#define TSC	(-1)	/* counts, how much is the TSC's */

static void test_counting(void)
{
	/* the architectural events, at CPL 0 (this program's) */
	check_counts("count_branches_insns_os",
		     (uint64_t[]){ ARCH_EV_BRANCHES | OS, ARCH_EV_INSNS_RETIRED | OS,
				   ARCH_EV_CORE_CYCLES | OS, ARCH_EV_REF_CYCLES | BOTH },
		     FIXED_CTRL_OS(0) | FIXED_CTRL_OS(1) | FIXED_CTRL_OS(2), ALL_CTRL,
		     (int64_t[]){ PMU_SEQ_BRANCHES, PMU_SEQ_INSNS, TSC, TSC },
		     (int64_t[]){ PMU_SEQ_INSNS, TSC, TSC });
	/* the sub-events */
	check_counts("count_sub_events_cond_call_ret_all",
		     (uint64_t[]){ BR_INST_RETIRED_CONDITIONAL | OS, BR_INST_RETIRED_NEAR_CALL | OS,
				   BR_INST_RETIRED_NEAR_RETURN | BOTH, BR_INST_RETIRED_ALL_BRANCHES | OS },
		     0, ALL_CTRL,
		     (int64_t[]){ PMU_SEQ_COND, PMU_SEQ_NEAR_CALL, PMU_SEQ_NEAR_RET, PMU_SEQ_BRANCHES },
		     (int64_t[]){ 0, 0, 0 });
	check_counts("count_sub_events_taken_not_taken_far",
		     (uint64_t[]){ BR_INST_RETIRED_NEAR_TAKEN | OS, BR_INST_RETIRED_NOT_TAKEN | OS,
				   BR_INST_RETIRED_FAR_BRANCH | OS, ARCH_EV_BRANCH_MISSES | OS },
		     0, ALL_CTRL,
		     (int64_t[]){ PMU_SEQ_NEAR_TAKEN, PMU_SEQ_NOT_TAKEN, PMU_SEQ_FAR, 0 },
		     (int64_t[]){ 0, 0, 0 });
	/* USR only: nothing at CPL 0 */
	check_counts("count_usr_filter_cpl0",
		     (uint64_t[]){ ARCH_EV_BRANCHES | USR, ARCH_EV_INSNS_RETIRED | USR,
				   BR_INST_RETIRED_CONDITIONAL | USR, ARCH_EV_BRANCHES | OS },
		     FIXED_CTRL_USR(0), ALL_CTRL, (int64_t[]){ 0, 0, 0, PMU_SEQ_BRANCHES },
		     (int64_t[]){ 0, 0, 0 });
	/* EN clear, no filter bit, EDGE/INV/CMASK, GLOBAL_CTRL's bit clear */
	check_counts("count_idle_en_filters_global_ctrl",
		     (uint64_t[]){ ARCH_EV_BRANCHES | PERFEVTSEL_OS, ARCH_EV_BRANCHES | PERFEVTSEL_EN,
				   ARCH_EV_BRANCHES | OS | PERFEVTSEL_INV, ARCH_EV_BRANCHES | OS },
		     FIXED_CTRL_OS(0), ALL_CTRL & ~PERF_GLOBAL_PMC(3) & ~PERF_GLOBAL_FIXED(0),
		     (int64_t[]){ 0, 0, 0, 0 }, (int64_t[]){ 0, 0, 0 });
	check_counts("count_idle_global_ctrl_clear",
		     (uint64_t[]){ ARCH_EV_BRANCHES | OS, ARCH_EV_INSNS_RETIRED | OS, ARCH_EV_CORE_CYCLES | OS,
				   ARCH_EV_BRANCHES | BOTH },
		     FIXED_CTRL_OS(0) | FIXED_CTRL_OS(1), 0, (int64_t[]){ 0, 0, 0, 0 },
		     (int64_t[]){ 0, 0, 0 });

	/* a REP MOVSB is one instruction, however many iterations */
	static uint8_t src[64], dst[64];
	for (int i = 0; i < 64; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	pmu_reset();
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0));
	uint64_t f = irq_save();
	pmu_rep_seq(PERF_GLOBAL_FIXED(0), dst, src);
	irq_restore(f);
	bool same = true;
	for (int i = 0; i < 64; i++)
		same &= dst[i] == src[i];
	report(same && fixed(0) == PMU_REP_INSNS, "count_rep_movsb_one_insn", "%lu instructions", fixed(0));

	/* the engine stopped with the counters; cycles alone (the TSC's, as
	 * Linux's NMI watchdog counts) never start it */
	report(engine_now() == HVTRACE_ENGINE_OFF, "engine_off_when_counters_off", "engine %u", engine_now());
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(1) | FIXED_CTRL_USR(1));
	wrmsr(MSR_IA32_PERFEVTSEL0, ARCH_EV_CORE_CYCLES | BOTH);
	wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, PERF_GLOBAL_FIXED(1) | PERF_GLOBAL_PMC(0));
	uint32_t with_cycles = engine_now();
	uint64_t c0 = fixed(1);
	for (volatile int i = 0; i < 1000; i++)
		;
	uint64_t c1 = fixed(1);
	report(with_cycles == HVTRACE_ENGINE_OFF && c1 > c0 && pmc(0) > 0, "cycles_without_engine",
	       "engine %u, cycles %lu then %lu", with_cycles, c0, c1);
	wrmsr(MSR_IA32_PERFEVTSEL0 + 1, ARCH_EV_BRANCHES | OS);
	wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, PERF_GLOBAL_PMC(1));
	uint32_t with_branches = engine_now();
	wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
	report(with_branches == HVTRACE_ENGINE_REFERENCE && engine_now() == HVTRACE_ENGINE_OFF,
	       "branches_start_reference_engine", "engine %u", with_branches);
	pmu_reset();
}

/* A hostile guest's values: all ones and wild indexes into every PMU MSR
 * and RDPMC; each accepted or #GP, and the hypervisor intact after. */
static void test_hostile(void)
{
	static const uint32_t bases[] = { MSR_IA32_PMC0, MSR_IA32_PERFEVTSEL0, MSR_IA32_FIXED_CTR0,
					  MSR_IA32_A_PMC0, MSR_IA32_FIXED_CTR_CTRL };
	static const uint64_t vals[] = { ~0ull, 1ull << 63, 0x8000000000000000ull | 0xc4 | OS };
	bool ok = true;
	for (unsigned b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
		for (uint32_t i = 0; i < 10; i++)
			for (unsigned k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
				uint64_t v;
				int w = wrmsr_fault(bases[b] + i, vals[k]);
				int r = rdmsr_fault(bases[b] + i, &v);
				ok &= (w == -1 || w == 13) && (r == -1 || r == 13);
			}
	static const uint32_t ecx[] = { 0xffffffff, 0x7fffffff, 0x40000004, 0x80000000, 0x20000000, 8, 0x3fffffff };
	for (unsigned i = 0; i < sizeof(ecx) / sizeof(ecx[0]); i++)
		ok &= TRY(2, "rdpmc" ::"c"(ecx[i]) : "eax", "edx") == 13;
	pmu_reset();
	struct hvtrace_status hs;
	uint64_t b = A(&hs), c = sizeof(hs);
	report(ok && hypercall(HVTRACE_HC_STATUS, &b, &c) == 0 && (hs.flags & HVTRACE_STATUS_INTEGRITY_OK),
	       "hostile_values_hypervisor_intact", NULL);
}

/* Ring 3: each filter counts its own privilege level's instructions and
 * branches, the IRETQ into ring 3 at CPL 0, the INT back at CPL 3. */
static void check_user(const char *name, const uint64_t sel[4], uint64_t fctrl, const int64_t want[4],
		       const int64_t fwant[3])
{
	pmu_reset();
	for (int i = 0; i < NR_GP; i++)
		wrmsr(MSR_IA32_PERFEVTSEL0 + i, sel[i]);
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, fctrl);
	uint64_t f = irq_save();
	pmu_user_seq(ALL_CTRL, A(ring3_stack + sizeof(ring3_stack)), SEL_UCODE | 3, SEL_UDATA | 3);
	irq_restore(f);
	uint64_t got[7];
	bool ok = true;
	for (int i = 0; i < NR_GP; i++)
		ok &= (got[i] = pmc(i)) == (uint64_t)want[i];
	for (int i = 0; i < NR_FIXED; i++)
		ok &= (got[4 + i] = fixed(i)) == (uint64_t)fwant[i];
	report(ok, name, "pmc %lu %lu %lu %lu fixed %lu", got[0], got[1], got[2], got[3], got[4]);
}

static void test_user(void)
{
	uint64_t *gdt = ring3_gdt();
	if (!gdt) {
		report_skip("count_ring3", "the firmware's GDT is larger than expected");
		return;
	}
	ring3_gdt_load();
	for (uint64_t p = A(pmu_user_code) & ~0xfffull; p <= A(pmu_user_gate); p += 4096)
		make_user(p);
	struct gate *idt = idt_base();
	struct gate saved = handle_exception(0x82, pmu_user_gate);
	idt[0x82].type = 0xee;	/* DPL 3: reachable from ring 3 */
	check_user("count_ring3_usr",
		   (uint64_t[]){ ARCH_EV_BRANCHES | USR, ARCH_EV_INSNS_RETIRED | USR,
				 BR_INST_RETIRED_NEAR_TAKEN | USR, BR_INST_RETIRED_FAR_BRANCH | USR },
		   FIXED_CTRL_USR(0),
		   (int64_t[]){ PMU_USER_BRANCHES, PMU_USER_INSNS, PMU_USER_NEAR_TAKEN, PMU_USER_FAR },
		   (int64_t[]){ PMU_USER_INSNS, 0, 0 });
	check_user("count_ring3_os",
		   (uint64_t[]){ ARCH_EV_BRANCHES | OS, ARCH_EV_INSNS_RETIRED | OS,
				 BR_INST_RETIRED_NEAR_TAKEN | OS, BR_INST_RETIRED_FAR_BRANCH | OS },
		   FIXED_CTRL_OS(0),
		   (int64_t[]){ PMU_USER_OS_BRANCHES, PMU_USER_OS_INSNS, 0, PMU_USER_OS_BRANCHES },
		   (int64_t[]){ PMU_USER_OS_INSNS, 0, 0 });
	check_user("count_ring3_both",
		   (uint64_t[]){ ARCH_EV_BRANCHES | BOTH, ARCH_EV_INSNS_RETIRED | BOTH,
				 BR_INST_RETIRED_CONDITIONAL | BOTH, BR_INST_RETIRED_NEAR_CALL | BOTH },
		   FIXED_CTRL_OS(0) | FIXED_CTRL_USR(0),
		   (int64_t[]){ PMU_USER_BRANCHES + PMU_USER_OS_BRANCHES, PMU_USER_INSNS + PMU_USER_OS_INSNS,
				1, 1 },
		   (int64_t[]){ PMU_USER_INSNS + PMU_USER_OS_INSNS, 0, 0 });
	gate_restore(0x82, saved);
	pmu_reset();
}

/* Written near 2^48-1, the counter counts across the wrap: the low bits
 * go on from 0, GLOBAL_STATUS says which counter wrapped, OVF_CTRL clears
 * it; no PMI without INT. */
static void test_wrap(void)
{
	pmu_reset();
	wrmsr(MSR_IA32_PERFEVTSEL0, ARCH_EV_BRANCHES | OS);
	wrmsr(MSR_IA32_PERFEVTSEL0 + 1, ARCH_EV_INSNS_RETIRED | OS);
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0));
	wrmsr(MSR_IA32_PMC0, (uint64_t)-5);		/* 2^48 - 5 */
	wrmsr(MSR_IA32_PMC0 + 1, (uint64_t)-100);	/* does not wrap */
	wrmsr(MSR_IA32_FIXED_CTR0, MASK48 - 2);
	report(pmc(0) == MASK48 - 4, "pmc_reads_48_bits", "%lx", pmc(0));
	pmi_count = 0;
	run_seq(ALL_CTRL);
	uint64_t st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
	report(pmc(0) == PMU_SEQ_BRANCHES - 5, "pmc_wraps_at_48_bits", "%lx", pmc(0));
	report(fixed(0) == PMU_SEQ_INSNS - 3, "fixed_wraps_at_48_bits", "%lx", fixed(0));
	report(pmc(1) == MASK48 - 99 + PMU_SEQ_INSNS, "pmc_below_wrap", "%lx", pmc(1));
	report(st == (PERF_GLOBAL_PMC(0) | PERF_GLOBAL_FIXED(0)), "global_status_overflow_bits", "%lx", st);
	wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, PERF_GLOBAL_PMC(0));
	st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
	report(st == PERF_GLOBAL_FIXED(0), "global_ovf_ctrl_clears_one", "%lx", st);
	report(pmi_count == 0, "no_pmi_without_int", "%lu", pmi_count);
	pmu_reset();
}

/* A counter with INT set that wraps raises the PMI through LVTPC (its
 * vector, fixed delivery), once, and LVTPC is masked after; IF=0 holds
 * it until STI. */
static void test_pmi(void)
{
	uint32_t old_lvt = lvtpc_read();
	struct gate saved = handle_exception(PMI_VECTOR, pmi_handler);

	for (int fixed_ctr = 0; fixed_ctr < 2; fixed_ctr++) {
		const char *name = fixed_ctr ? "pmi_fixed_ctr0_overflow" : "pmi_pmc_overflow";
		pmu_reset();
		lvtpc_write(PMI_VECTOR);
		if (fixed_ctr) {
			wrmsr(MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0) | FIXED_CTRL_PMI(0));
			wrmsr(MSR_IA32_FIXED_CTR0, MASK48 - 9);
		} else {
			wrmsr(MSR_IA32_PERFEVTSEL0 + 2, BR_INST_RETIRED_NEAR_CALL | OS | PERFEVTSEL_INT);
			wrmsr(MSR_IA32_PMC0 + 2, (uint64_t)-1);
		}
		pmi_count = 0;
		uint64_t f = irq_save();
		pmu_seq(ALL_CTRL);
		uint64_t masked = pmi_count;
		uint64_t st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
		asm volatile("sti; nop; nop; nop" ::: "memory");
		for (int i = 0; i < 100000 && !pmi_count; i++)
			asm volatile("pause");
		asm volatile("cli");
		uint32_t lvt_after = lvtpc_read();
		irq_restore(f);
		uint64_t bit = fixed_ctr ? PERF_GLOBAL_FIXED(0) : PERF_GLOBAL_PMC(2);
		report(masked == 0 && pmi_count == 1 && (st & bit), name, "pmis %lu (IF=0: %lu) status %lx",
		       pmi_count, masked, st);
		report(lvt_after & (1u << 16), fixed_ctr ? "lvtpc_masked_after_fixed_pmi" : "lvtpc_masked_after_pmi",
		       "lvtpc %x", lvt_after);
	}
	/* a masked LVTPC: the status bit, no interrupt */
	pmu_reset();
	wrmsr(MSR_IA32_PERFEVTSEL0, ARCH_EV_BRANCHES | OS | PERFEVTSEL_INT);
	wrmsr(MSR_IA32_PMC0, (uint64_t)-1);
	lvtpc_write(PMI_VECTOR | (1u << 16));
	pmi_count = 0;
	uint64_t f = irq_save();
	pmu_seq(ALL_CTRL);
	asm volatile("sti; nop; nop; nop" ::: "memory");
	for (int i = 0; i < 10000; i++)
		asm volatile("pause");
	asm volatile("cli");
	irq_restore(f);
	report(pmi_count == 0 && (rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & PERF_GLOBAL_PMC(0)),
	       "pmi_lvtpc_masked_none", "pmis %lu", pmi_count);

	pmu_reset();
	lvtpc_write(old_lvt);
	gate_restore(PMI_VECTOR, saved);
}

/* Counting and BTS at the same time: both exact (the engine serves both). */
static void test_with_bts(void)
{
	static struct ds_area64 ds __attribute__((aligned(64)));
	static struct bts_record64 buf[64];
	ds = (struct ds_area64){ .bts_base = A(buf), .bts_index = A(buf), .bts_abs_max = A(buf + 64),
				 .bts_int_threshold = A(buf) + 65 * sizeof(buf[0]) };
	wrmsr(MSR_IA32_DS_AREA, A(&ds));
	pmu_reset();
	wrmsr(MSR_IA32_PERFEVTSEL0, ARCH_EV_BRANCHES | OS);
	wrmsr(MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_OS(0));
	uint64_t f = irq_save();
	wrmsr(MSR_IA32_DEBUGCTL, TRACE);
	pmu_seq(ALL_CTRL);
	wrmsr(MSR_IA32_DEBUGCTL, 0);
	irq_restore(f);
	unsigned recs = (unsigned)((ds.bts_index - A(buf)) / sizeof(buf[0]));
	/* BTS records taken branches: all but the two not taken; and the
	 * RET of pmu_seq and the CALL of the WRMSR that stops BTS */
	report(pmc(0) == PMU_SEQ_BRANCHES && fixed(0) == PMU_SEQ_INSNS, "count_while_bts_on",
	       "branches %lu instructions %lu", pmc(0), fixed(0));
	report(recs >= PMU_SEQ_BRANCHES - PMU_SEQ_NOT_TAKEN, "bts_while_counting", "%u records", recs);
	pmu_reset();
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_pmu");
	require_hvtrace();
	faults_catch();
	if (cpu_is_amd()) {
		/* the architectural PMU is Intel's: none for an AMD guest */
		struct cpuid r = cpuid(0xa, 0);
		uint64_t v;
		report(!r.a && !r.b && !r.c && !r.d, "amd_cpuid_0a_empty", "eax %x", r.a);
		report(rdmsr_fault(MSR_IA32_PMC0, &v) == 13 && rdmsr_fault(MSR_IA32_PERFEVTSEL0, &v) == 13 &&
		       rdmsr_fault(MSR_IA32_PERF_GLOBAL_CTRL, &v) == 13 &&
		       wrmsr_fault(MSR_IA32_FIXED_CTR_CTRL, 0) == 13, "amd_pmu_msrs_gp", NULL);
		report(rdmsr_fault(MSR_IA32_PERF_GLOBAL_STATUS, &v) == -1, "amd_global_status_ds", NULL);
		faults_release();
		report_done();
	}
	test_cpuid();
	test_msrs();
	test_counting();
	test_user();
	test_wrap();
	test_pmi();
	test_with_bts();
	test_hostile();
	faults_release();
	report_done();
}
