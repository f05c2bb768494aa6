/*
 * t_rec: the recorder seen from the guest (docs/recorder.md). Load
 * options pick the mode:
 *   (none)   the trace-control hypercall and exact record counts around a
 *            known loop (hvtrace.cfg: a flight recorder, trace.start =
 *            hypercall);
 *   lN       lossless: a loop of N turns (N - 1 taken branches) for the
 *            host to drain; prints REC-EXPECT with the count;
 *   pN       the same loop on every processor at once (MP services), the
 *            stream filtered to the loop's code; prints REC-EXPECT-VCPU
 *            per vCPU with the hypervisor's counts;
 *   c        crash: a known JMP/CALL/CALL/JMP path, then a triple fault;
 *            prints the addresses for the host to find in the snapshot;
 *   r        reset: tracing started, then a reset request through port
 *            0xCF9 (the recorder freezes before the machine resets);
 *   h        hang: tracing started, then a loop with interrupts off that
 *            never ends (for the host's NMI; prints its range);
 *   b        traced from boot (trace.start = boot, no stop): the engine
 *            still runs here, the firmware's timer interrupts were
 *            injected and paced (trace.pace) on the way; prints this
 *            image's range for the host to find in the snapshot, then
 *            stops tracing.
 *   i        idle: tracing started, then halts with interrupts off for
 *            ever (no exit of its own: the host's control requests must
 *            still be applied, docs/channel.md "Control");
 *   w        tracing started, the loop run until the host stops tracing
 *            (`hvtrace record` ending); prints REC-WAIT with the records
 *            its rings accepted and lost meanwhile.
 *   a        trace.start at an address (REC_TRIGGER_ADDR, a copy of the
 *            loop there) reached while the engine already runs for the
 *            guest (IA32_DEBUGCTL.BTF, as Linux's perf turns on its BTS
 *            or counters at a program's exec): tracing starts there and
 *            the flight recorder, filtered to that page, holds exactly
 *            the START marker, the loop's JNZs and its RET.
 */
#include "guest.h"
#include "hvtrace/abi.h"
#include "mpsvc.h"

uint64_t rec_loop_svm(uint64_t n);
uint64_t rec_loop_vmx(uint64_t n);
void rec_crash_svm(void) __attribute__((noreturn));
void rec_crash_vmx(void) __attribute__((noreturn));
void rec_reset_svm(void) __attribute__((noreturn));
void rec_reset_vmx(void) __attribute__((noreturn));
extern const char rec_crash_svm_jmp[], rec_crash_vmx_jmp[], rec_crash_body[], rec_crash_a[],
	rec_crash_b[], rec_crash_c[], rec_crash_fault[];

void rec_spin(uint64_t n);
extern const char rec_spin_end[], rec_loop_svm_back[], rec_loop_vmx_back[];
void rec_hang_svm(void) __attribute__((noreturn));
void rec_hang_vmx(void) __attribute__((noreturn));
extern const char rec_hang_loop[], rec_hang_end[];

static uint64_t spin_turns;
static void __attribute__((ms_abi)) spin_proc(void *arg)
{
	(void)arg;
	rec_spin(spin_turns);
}

static uint64_t rec_loop(uint64_t n)
{
	return cpu_is_amd() ? rec_loop_svm(n) : rec_loop_vmx(n);
}

static bool vcpu_status(struct hvtrace_vcpu_status *st)
{
	uint64_t b = (uint64_t)(uintptr_t)st, c = sizeof(*st);
	SetMem(st, sizeof(*st), 0);
	return hypercall(HVTRACE_HC_VCPU_STATUS, &b, &c) == 0;
}

static int64_t trace_ctl(uint64_t op, uint64_t val)
{
	return hypercall(HVTRACE_HC_TRACE_CTL, &op, &val);
}

static uint64_t u(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static int64_t set_filter(const struct hvtrace_filter *f)
{
	uint64_t op = HVTRACE_TRACE_FILTER, gpa = u(f), size = sizeof(*f);
	return hypercall3(HVTRACE_HC_TRACE_CTL, &op, &gpa, &size);
}

static void basic(void)
{
	struct hvtrace_vcpu_status a, b;
	uint64_t bb = 0, cc = 0;

	int64_t vret = hypercall(HVTRACE_HC_VERSION, &bb, &cc);
	report(vret == 0 && bb >= ((1u << 16) | 2), "abi_1_2", "version %lx", bb);
	report(trace_ctl(99, 0) == -HVTRACE_EINVAL, "trace_ctl_bad_op", NULL);

	for (uint64_t n = 1; n <= 1000; n *= 10) {
		char name[32];
		if (!vcpu_status(&a))
			break;
		int64_t ret = rec_loop(n);
		vcpu_status(&b);
		/* START marker, n - 1 taken branches, STOP marker */
		hv_snprintf(name, sizeof(name), "loop_%lu_records", n);
		report(ret == 0 && b.rec_records - a.rec_records == n + 1 && b.rec_lost == a.rec_lost,
		       name, "ret %ld records %lu (want %lu) lost %lu", ret,
		       b.rec_records - a.rec_records, n + 1, b.rec_lost - a.rec_lost);
	}
	/* filters by hypercall: the loop runs at CPL 0 in this program */
	static struct hvtrace_filter f;
	struct { const char *name; uint32_t cpl; uint64_t lo, hi; uint64_t want; } fc[] = {
		{ "filter_user_drops_kernel", HVTRACE_CPL_USER, 0, 0, 2 },
		{ "filter_range_elsewhere", HVTRACE_CPL_ALL, 0x1000, 0x1fff, 2 },
		{ "filter_range_around_loop", HVTRACE_CPL_ALL, u(rec_loop_svm) & ~0xfffull,
		  (u(rec_loop_vmx) | 0xfff) + 0x1000, 101 },
		{ "filter_back_to_all", HVTRACE_CPL_ALL, 1, 0, 101 },
	};
	for (unsigned i = 0; i < sizeof(fc) / sizeof(fc[0]); i++) {
		f = (struct hvtrace_filter){ .consumer = HVTRACE_CONSUMER_FLIGHT, .cpl = fc[i].cpl };
		if (fc[i].lo <= fc[i].hi) {
			f.nr_ranges = 1;
			f.ranges[0].lo = fc[i].lo;
			f.ranges[0].hi = fc[i].hi;
		}
		int64_t r = set_filter(&f);
		vcpu_status(&a);
		rec_loop(100);
		vcpu_status(&b);
		report(r == 0 && b.rec_records - a.rec_records == fc[i].want, fc[i].name,
		       "ret %ld records %lu want %lu", r, b.rec_records - a.rec_records, fc[i].want);
	}
	f.consumer = 7;
	int64_t r = set_filter(&f);
	report(r == -HVTRACE_EINVAL, "filter_bad_consumer", "ret %ld", r);

	vcpu_status(&a);
	report(trace_ctl(HVTRACE_TRACE_MARK, 0x1234) == 0, "mark_while_stopped", NULL);
	vcpu_status(&b);
	report(b.rec_records - a.rec_records == 1, "mark_recorded", "%lu records",
	       b.rec_records - a.rec_records);
	report(trace_ctl(HVTRACE_TRACE_STOP, 0) == 0, "stop_when_stopped", NULL);
	report(b.engine == HVTRACE_ENGINE_OFF, "engine_off_after_stop", "engine %u", b.engine);

	/* MOV from DR4/DR5 with CR4.DE clear reads DR6/DR7 (SDM Vol. 3 18.2.2),
	 * untraced and traced alike (issue #15) */
	uint64_t d4[2], d6[2], d5[2], d7[2], cr4;
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	for (int traced = 0; traced < 2; traced++) {
		/* CR4.DE cleared with interrupts off, right before the reads:
		 * once in CI, CR4.DE was set again across the interrupt window
		 * between the two passes (the firmware's timer handler ran
		 * there; cause not found) */
		uint64_t f0 = irq_save();
		asm volatile("mov %0, %%cr4" ::"r"(cr4 & ~(1ull << 3)));
		if (traced)
			trace_ctl(HVTRACE_TRACE_START, 0);
		asm volatile("mov %%dr6, %0; mov %%dr4, %1; mov %%dr7, %2; mov %%dr5, %3"
			     : "=r"(d6[traced]), "=r"(d4[traced]), "=r"(d7[traced]), "=r"(d5[traced]));
		if (traced)
			trace_ctl(HVTRACE_TRACE_STOP, 0);
		irq_restore(f0);
	}
	asm volatile("mov %0, %%cr4" ::"r"(cr4));
	report(d4[0] == d6[0] && d5[0] == d7[0], "dr4_dr5_alias_untraced", "dr4 %lx dr6 %lx dr5 %lx dr7 %lx",
	       d4[0], d6[0], d5[0], d7[0]);
	report(d4[1] == d6[1] && d5[1] == d7[1], "dr4_dr5_alias_traced", "dr4 %lx dr6 %lx dr5 %lx dr7 %lx",
	       d4[1], d6[1], d5[1], d7[1]);

	/* trace.freeze by hypercall (last: a freeze ends the recorder), with
	 * the flight recorder's filter back to everything */
	f = (struct hvtrace_filter){ .consumer = HVTRACE_CONSUMER_FLIGHT, .cpl = HVTRACE_CPL_ALL };
	set_filter(&f);
	const char *back = cpu_is_amd() ? rec_loop_svm_back : rec_loop_vmx_back;
	uint64_t op = HVTRACE_TRACE_FREEZE_AT, addr = u(back), after = 100000001;
	report(hypercall3(HVTRACE_HC_TRACE_CTL, &op, &addr, &after) == -HVTRACE_EINVAL,
	       "freeze_at_too_many_after", NULL);
	op = HVTRACE_TRACE_FREEZE_AT, addr = u(back), after = 5;
	int64_t fr = hypercall3(HVTRACE_HC_TRACE_CTL, &op, &addr, &after);
	vcpu_status(&a);
	/* START, 99 taken JNZ back to the loop's start: frozen 5 records after
	 * the first, so the STOP at its end finds the recorder frozen */
	int64_t lr = rec_loop(100);
	vcpu_status(&b);
	report(fr == 0 && lr == -HVTRACE_EPERM && trace_ctl(HVTRACE_TRACE_START, 0) == -HVTRACE_EPERM,
	       "freeze_at_hypercall", "ret %ld, loop's stop %ld", fr, lr);
	/* the start marker, the JNZ that reached it and 5 more, the trigger
	 * marker, the crash marker */
	report(b.rec_records - a.rec_records == 9, "freeze_at_keeps_n_after", "%lu records",
	       b.rec_records - a.rec_records);
}

static bool vcpu_status_of(uint32_t vcpu, struct hvtrace_vcpu_status *st)
{
	uint64_t b = (uint64_t)(uintptr_t)st, c = sizeof(*st), d = vcpu;
	SetMem(st, sizeof(*st), 0);
	return hypercall3(HVTRACE_HC_VCPU_STATUS, &b, &c, &d) == 0;
}

/* pN: the loop on every processor at once, the stream filtered to it */
static void parallel(uint64_t n)
{
	static EFI_GUID guid = HV_MP_SERVICES_GUID;
	static struct hvtrace_vcpu_status before[64], after[64];
	HV_MP_SERVICES *mp = NULL;
	UINTN all = 1, en = 1;
	if (!EFI_ERROR(uefi_call_wrapper(BS->LocateProtocol, 3, &guid, NULL, (void **)&mp)))
		uefi_call_wrapper(mp->GetNumberOfProcessors, 3, mp, &all, &en);
	uint32_t nv = en > 64 ? 64 : (uint32_t)en;
	uefi_call_wrapper(BS->Stall, 1, 1500000);	/* the reader attaches */
	struct hvtrace_filter f = { .consumer = HVTRACE_CONSUMER_STREAM, .cpl = HVTRACE_CPL_ALL,
				    .nr_ranges = 1 };
	f.ranges[0].lo = u(rec_spin);
	f.ranges[0].hi = u(rec_spin_end) - 1;
	uint64_t b = HVTRACE_TRACE_FILTER, c = u(&f), d = sizeof(f);
	report(hypercall3(HVTRACE_HC_TRACE_CTL, &b, &c, &d) == 0, "filter_to_the_loop", NULL);
	for (uint32_t i = 0; i < nv; i++)
		vcpu_status_of(i, &before[i]);
	spin_turns = n;
	uint64_t fl = irq_save();
	int64_t r1 = trace_ctl(HVTRACE_TRACE_START, 0);
	EFI_STATUS s = EFI_SUCCESS;
	if (mp && nv > 1)
		s = uefi_call_wrapper(mp->StartupAllAPs, 7, mp, (HV_AP_PROCEDURE)spin_proc, (BOOLEAN)FALSE,
				      NULL, (UINTN)120000000, NULL, NULL);
	rec_spin(n);
	int64_t r2 = trace_ctl(HVTRACE_TRACE_STOP, 0);
	irq_restore(fl);
	/* Each AP's engine stops at its next exit, and the hypervisor logs its
	 * counts there. On a serial port shared with these lines they went
	 * byte by byte between ours when both wrote at once (CI tore a
	 * REC-EXPECT-VCPU line so); on a port of its own (the runner's
	 * `serial`, merged line by line: docs/testing.md "The serial log")
	 * they cannot. These lines go out at that very moment, for the runner
	 * to find whole (tests/integration-rec.sh svm-rec-lossless-smp); the
	 * counts after every engine is off (bounded: 5 s). */
	for (uint32_t k = 0; k < 4 * nv; k++)
		report_info("REC-SAME-TIME: %02u 0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ end", k);
	for (uint32_t i = 0; i < nv; i++)
		for (int k = 0; k < 500 && vcpu_status_of(i, &after[i]) && after[i].engine != HVTRACE_ENGINE_OFF; k++)
			uefi_call_wrapper(BS->Stall, 1, 10000);
	report(r1 == 0 && r2 == 0 && !EFI_ERROR(s), "parallel_loop", "start %ld stop %ld aps %lx", r1, r2,
	       (uint64_t)s);
	for (uint32_t i = 0; i < nv; i++) {
		vcpu_status_of(i, &after[i]);
		report_info("REC-EXPECT-VCPU: vcpu=%u branches=%lu accepted=%lu lost=%lu", i, n - 1,
			    after[i].rec_records - before[i].rec_records, after[i].rec_lost - before[i].rec_lost);
	}
	report_info("REC-EXPECT-SMP: vcpus=%u", nv);
}

/* a: the start address reached with the engine on (hvtrace.cfg:
 * trace.start = REC_TRIGGER_ADDR, flight.range = that page) */
#define REC_TRIGGER_ADDR 0x4000000ull
static void trigger_engine_on(void)
{
	EFI_PHYSICAL_ADDRESS page = REC_TRIGGER_ADDR;
	EFI_STATUS s = uefi_call_wrapper(BS->AllocatePages, 4, AllocateAddress, EfiLoaderCode, 1, &page);
	if (EFI_ERROR(s)) {
		report(false, "trigger_with_engine_on", "AllocatePages at %lx: %lx", REC_TRIGGER_ADDR, (uint64_t)s);
		return;
	}
	CopyMem((void *)(uintptr_t)page, (void *)rec_spin, u(rec_spin_end) - u(rec_spin));
	void (*spin)(uint64_t) = (void (*)(uint64_t))(uintptr_t)page;
	struct hvtrace_vcpu_status a, b, c;
	const uint64_t n = 100;
	uint64_t fl = irq_save();
	vcpu_status(&a);
	wrmsr(MSR_IA32_DEBUGCTL, DEBUGCTL_BTF);	/* the engine runs; no TF: no effect */
	vcpu_status(&b);
	spin(n);
	wrmsr(MSR_IA32_DEBUGCTL, 0);
	vcpu_status(&c);
	irq_restore(fl);
	/* the reference engine while the address is awaited: it looks at
	 * every instruction (docs/recorder.md "Triggers and states") */
	report(a.engine == HVTRACE_ENGINE_OFF && b.engine == HVTRACE_ENGINE_REFERENCE, "engine_on_for_btf",
	       "engine %u, then %u", a.engine, b.engine);
	/* START, n - 1 taken JNZ, the RET out of the page */
	report(c.rec_records - a.rec_records == n + 1 && c.engine != HVTRACE_ENGINE_OFF,
	       "trigger_with_engine_on", "records %lu (want %lu), engine %u", c.rec_records - a.rec_records,
	       n + 1, c.engine);
	report(trace_ctl(HVTRACE_TRACE_STOP, 0) == 0, "trace_stop", NULL);
}

static uint64_t parse_u64(const CHAR16 *s, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	return v;
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_LOADED_IMAGE *li = NULL;
	guest_init(image, systab, "t_rec");
	uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol, (void **)&li);
	const CHAR16 *opt = li && li->LoadOptionsSize >= 2 ? li->LoadOptions : L"";
	size_t optlen = li ? li->LoadOptionsSize / 2 : 0;

	if (!under_hvtrace()) {
		report(false, "under_hvtrace", NULL);
		report_done();
	}
	if (opt[0] == 'l') {
		uint64_t n = parse_u64(opt + 1, optlen - 1);
		struct hvtrace_vcpu_status a, b;
		/* give the host's reader time to attach before the stream fills */
		uefi_call_wrapper(BS->Stall, 1, 1500000);
		vcpu_status(&a);
		int64_t ret = rec_loop(n);
		vcpu_status(&b);
		report_info("REC-EXPECT: branches=%lu accepted=%lu lost=%lu", n - 1,
			    b.rec_records - a.rec_records, b.rec_lost - a.rec_lost);
		report(ret == 0 && n > 1, "lossless_loop", "ret %ld n %lu", ret, n);
	} else if (opt[0] == 'p') {
		parallel(parse_u64(opt + 1, optlen - 1));
	} else if (opt[0] == 'r') {
		report_info("about to reset through port 0xcf9 with the recorder on");
		if (cpu_is_amd())
			rec_reset_svm();
		rec_reset_vmx();
	} else if (opt[0] == 'h') {
		report_info("REC-HANG: loop=%lx end=%lx", u(rec_hang_loop), u(rec_hang_end));
		report_info("about to hang with interrupts off, the recorder on");
		if (cpu_is_amd())
			rec_hang_svm();
		rec_hang_vmx();
	} else if (opt[0] == 'i') {
		report(trace_ctl(HVTRACE_TRACE_START, 0) == 0, "trace_start", NULL);
		report_info("REC-IDLE: halting with interrupts off, traced");
		for (;;)
			asm volatile("cli; hlt" ::: "memory");
	} else if (opt[0] == 'w') {
		struct hvtrace_vcpu_status a, b, st;
		uefi_call_wrapper(BS->Stall, 1, 1500000);	/* the reader attaches */
		vcpu_status(&a);
		int64_t r = trace_ctl(HVTRACE_TRACE_START, 0);
		report_info("REC-WAIT: tracing until the host stops it");
		uint64_t turns = 0;
		bool ok;
		/* about 300 s at most under TCG */
		do {
			rec_spin(1000);
			turns++;
		} while ((ok = vcpu_status(&st)) && st.engine != HVTRACE_ENGINE_OFF && turns < 12000);
		vcpu_status(&b);
		report_info("REC-WAIT: records=%lu lost=%lu turns=%lu", b.rec_records - a.rec_records,
			    b.rec_lost - a.rec_lost, turns);
		report(r == 0 && ok && st.engine == HVTRACE_ENGINE_OFF, "stopped_by_host", "after %lu turns",
		       turns);
	} else if (opt[0] == 'b') {
		struct hvtrace_vcpu_status st;
		bool ok = vcpu_status(&st);
		report(ok && st.engine != HVTRACE_ENGINE_OFF, "traced_from_boot", "engine %u", st.engine);
		report(ok && st.branches > 10000, "branches_from_boot", "%lu branches", st.branches);
		report(ok && st.irqs > 0 && st.irqs_paced > 0, "timer_interrupts_paced",
		       "%lu interrupts injected, %lu of them paced", st.irqs, st.irqs_paced);
		report_info("REC-BOOT: image=%lx size=%lx branches=%lu irqs=%lu paced=%lu", u(li->ImageBase),
			    (uint64_t)li->ImageSize, st.branches, st.irqs, st.irqs_paced);
		report(trace_ctl(HVTRACE_TRACE_STOP, 0) == 0, "trace_stop", NULL);
	} else if (opt[0] == 'a') {
		trigger_engine_on();
	} else if (opt[0] == 'c') {
		bool amd = cpu_is_amd();
		report_info("REC-CRASH: jmp=%lx body=%lx a=%lx b=%lx c=%lx fault=%lx",
			    u(amd ? rec_crash_svm_jmp : rec_crash_vmx_jmp), u(rec_crash_body),
			    u(rec_crash_a), u(rec_crash_b), u(rec_crash_c), u(rec_crash_fault));
		report_info("about to triple-fault with the flight recorder on");
		if (amd)
			rec_crash_svm();
		rec_crash_vmx();
	} else {
		basic();
	}
	report_done();
}
