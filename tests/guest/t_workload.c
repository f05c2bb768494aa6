/*
 * t_workload: a CPU-bound guest workload for `make bench` (bench/engine.sh):
 * Collatz step counts (data-dependent conditional branches, calls and
 * returns, an indirect call), timed with the TSC untraced, traced by the
 * fast engine and by the reference engine, in one run. Prints one
 * "WORKLOAD:" line per mode with TSC ticks, branches and tracing exits,
 * then "WORKLOAD: cpuid" (CPUID_N CPUIDs, which hvtrace intercepts) and
 * "WORKLOAD: tsc_khz" (the TSC against the firmware's Stall), so
 * bench/engine.sh and bench/nested.sh can put time on one intercepted CPUID
 * and one traced branch, under TCG and under KVM alike.
 * With load options "untraced" it runs only the untraced pass (for QEMU's
 * own execution log over the same work). Each traced line also carries
 * where the hypervisor's time went meanwhile (ABI 1.6, enum hvtrace_prof:
 * t_guest t_exit t_entry t_decode t_record t_walk t_handler, TSC ticks,
 * over pexits exits), and the fast engine's decoded blocks reused and
 * decoded.
 */
#include "guest.h"
#include "hvtrace/abi.h"


static struct { uint64_t base, index, max, thr, pebs[8]; } ds __attribute__((aligned(64)));
static uint64_t buf[3 * 4096] __attribute__((aligned(64)));

static __attribute__((noinline)) uint64_t step(uint64_t n)
{
	return (n & 1) ? 3 * n + 1 : n >> 1;
}

static uint64_t (*volatile step_fn)(uint64_t) = step;

static __attribute__((noinline)) uint64_t collatz(uint64_t from, uint64_t count)
{
	uint64_t total = 0;
	for (uint64_t n = from; n < from + count; n++) {
		uint64_t x = n;
		while (x != 1) {
			x = step_fn(x);
			total++;
		}
	}
	return total;
}

static void vcpu_status(struct hvtrace_vcpu_status *st)
{
	uint64_t b = (uint64_t)(uintptr_t)st, c = sizeof(*st);
	SetMem(st, sizeof(*st), 0);
	if (under_hvtrace())
		hypercall(HVTRACE_HC_VCPU_STATUS, &b, &c);
}

/* mode: 0 untraced, 1 traced (the engine hvtrace.cfg chose) */
static void run(const char *name, bool traced, uint64_t count)
{
	struct hvtrace_vcpu_status a, b;
	ds.base = ds.index = (uint64_t)(uintptr_t)buf;
	ds.max = ds.base + sizeof(buf);
	ds.thr = ds.max + 24;
	if (traced)
		wrmsr(MSR_IA32_DS_AREA, (uint64_t)(uintptr_t)&ds);
	vcpu_status(&a);
	/* no timer interrupts inside the measured work (the firmware's Print
	 * turns them back on, so this is per run) */
	uint64_t flags;
	asm volatile("pushfq; popq %0; cli" : "=r"(flags)::"memory");
	uint64_t t0 = rdtsc();
	if (traced)
		wrmsr(MSR_IA32_DEBUGCTL, TRACE);
	uint64_t steps = collatz(1000, count);
	if (traced)
		wrmsr(MSR_IA32_DEBUGCTL, 0);
	uint64_t t1 = rdtsc();
	if (flags & (1 << 9))
		asm volatile("sti" ::: "memory");
	vcpu_status(&b);
	uint64_t d[HVTRACE_PROF_COUNT];
	for (unsigned i = 0; i < HVTRACE_PROF_COUNT; i++)
		d[i] = b.tsc[i] - a.tsc[i];
	report_info("WORKLOAD: %s count %lu steps %lu tsc %lu branches %lu exits %lu engine %u", name,
		    count, steps, t1 - t0, b.branches - a.branches, b.trace_exits - a.trace_exits,
		    a.engine);
	/* a second line: the console's lines are short */
	report_info("WORKLOAD: %s time pexits %lu t_guest %lu t_exit %lu t_entry %lu", name,
		    b.prof_exits - a.prof_exits, d[HVTRACE_PROF_GUEST], d[HVTRACE_PROF_EXIT],
		    d[HVTRACE_PROF_ENTRY]);
	report_info("WORKLOAD: %s time t_decode %lu t_record %lu t_walk %lu t_handler %lu", name,
		    d[HVTRACE_PROF_DECODE], d[HVTRACE_PROF_RECORD], d[HVTRACE_PROF_WALK],
		    d[HVTRACE_PROF_HANDLER]);
	report_info("WORKLOAD: %s blocks reused %lu decoded %lu", name, b.blocks_reused - a.blocks_reused,
		    b.blocks_decoded - a.blocks_decoded);
	/* engine = interp's coverage (ABI 1.8): the most left opcodes are since boot */
	report_info("WORKLOAD: %s interp insns %lu ibranches %lu left %lu top %x %u %x %u", name,
		    b.interp_insns - a.interp_insns, b.interp_branches - a.interp_branches,
		    b.interp_left - a.interp_left, HVTRACE_INTERP_TOP_KEY(b.interp_top[0]),
		    HVTRACE_INTERP_TOP_COUNT(b.interp_top[0]), HVTRACE_INTERP_TOP_KEY(b.interp_top[1]),
		    HVTRACE_INTERP_TOP_COUNT(b.interp_top[1]));
}

#define CPUID_N 2000

/* CPUID leaf 0, CPUID_N times, interrupts off: every one exits to hvtrace */
static void run_cpuid(void)
{
	uint64_t flags = irq_save();
	uint64_t t0 = rdtsc();
	for (unsigned i = 0; i < CPUID_N; i++)
		(void)cpuid(0, 0);
	uint64_t t1 = rdtsc();
	irq_restore(flags);
	report_info("WORKLOAD: cpuid count %u tsc %lu", CPUID_N, t1 - t0);
}

/* the TSC's rate against the firmware's timer (UEFI 2.x 7.5 Stall) */
static void tsc_rate(void)
{
	uint64_t t0 = rdtsc();
	uefi_call_wrapper(BS->Stall, 1, 200000);
	uint64_t t1 = rdtsc();
	report_info("WORKLOAD: tsc_khz %lu", (t1 - t0) / 200);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_LOADED_IMAGE *li = NULL;
	guest_init(image, systab, "t_workload");
	uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol, (void **)&li);
	bool untraced_only = li && li->LoadOptionsSize >= 2 && ((CHAR16 *)li->LoadOptions)[0] == 'u';
	uint64_t count = 400;
	if (li)
		report_info("WORKLOAD: image %lx size %lx", (uint64_t)(uintptr_t)li->ImageBase,
			    (uint64_t)li->ImageSize);

	run("untraced", false, count);
	if (!untraced_only && under_hvtrace())
		run("traced", true, count);
	run_cpuid();
	tsc_rate();
	report(true, "workload_done", NULL);
	report_done();
}
