/*
 * t_hostile: a guest that attacks the hypervisor (docs/security.md). Each
 * attack is followed by the checks that matter: the hypervisor still
 * answers, its image checksum still holds (the status hypercall's
 * INTEGRITY_OK), and the guest saw what the hardware would have done.
 * Attacks, untraced and with the engine running (the guest's own BTS):
 *  - IA32_APIC_BASE moved onto the hypervisor's code, then a BTS threshold
 *    PMI (the hypervisor once wrote the LVT/ICR at the guest's base);
 *  - instruction breakpoints on the hypervisor's own code (#VMEXIT's
 *    landing point, the exit handler), with the engine off and on;
 *  - DR6/DR7 with reserved high bits;
 *  - a BTS buffer at a non-canonical address, one that wraps past 2^64,
 *    DS areas and buffers in the reserve and in MMIO;
 *  - the MSRs that decide how the reserve is decoded and cached (TOP_MEM,
 *    IORRs, MTRRs), PEBS and Intel PT MSRs, INVD;
 *  - hypercall buffers in the reserve, in MMIO, wrapping;
 *  - with a recorder configured: a channel header scribbled by the host
 *    (the integration test writes it while the program waits), then a
 *    filter hypercall.
 * The addresses of the hypervisor's code come from its ELF at build time
 * (hv_syms.h): the image is linked at a fixed address, so an attacker
 * knows them too.
 */
#include "guest.h"
#include "hvtrace/abi.h"
#include "hv_syms.h"

#define APIC_DEFAULT		0xfee00000ull	/* the local APIC's reset base */

extern char pmi_handler[] __attribute__((visibility("hidden")));

static struct ds_area64 ds __attribute__((aligned(64)));
static struct bts_record64 buf[64] __attribute__((aligned(64)));
static uint64_t reserve, reserve_size;
static bool amd;	/* the vendor: which MSRs the processor has */
static bool svm;	/* the backend: which exit path is the hypervisor's */

/* --- helpers ------------------------------------------------------------- */

/* Taken branches the engine records: a loop and calls the compiler keeps. */
static __attribute__((noinline)) uint64_t branches(uint64_t n)
{
	volatile uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += i & 1 ? i : 1;
	return acc;
}

/* Traced with interrupts off: under TCG the firmware's timer handler,
 * traced branch by branch, takes longer than the timer period. */
static void traced(uint64_t debugctl, uint64_t n)
{
	uint64_t f = irq_save();
	wrmsr(MSR_IA32_DEBUGCTL, debugctl);
	branches(n);
	wrmsr(MSR_IA32_DEBUGCTL, 0);
	irq_restore(f);
}

/* A status hypercall into a zeroed `st`; false when it failed (vCPU 0's
 * for the per-vCPU one: hypercall() passes RDX = 0). */
static bool status_call(uint64_t nr, void *st, uint64_t size)
{
	uint64_t b = A(st), c = size;
	SetMem(st, size, 0);
	return hypercall(nr, &b, &c) == 0;
}

static bool integrity_ok(void)
{
	struct hvtrace_status st;
	return status_call(HVTRACE_HC_STATUS, &st, sizeof(st)) && (st.flags & HVTRACE_STATUS_INTEGRITY_OK);
}

static uint64_t exits_total(void)
{
	struct hvtrace_status st;
	status_call(HVTRACE_HC_STATUS, &st, sizeof(st));
	return st.exits_total;
}

static uint64_t bts_dropped(void)
{
	struct hvtrace_vcpu_status st;
	status_call(HVTRACE_HC_VCPU_STATUS, &st, sizeof(st));
	return st.bts_dropped;
}

/* the hypervisor answers and its image is intact */
static void report_intact(const char *name)
{
	uint64_t b = 0, c = 0;
	bool alive = hypercall(HVTRACE_HC_VERSION, &b, &c) == 0 && b == HVTRACE_ABI_VERSION;
	bool ok = alive && integrity_ok();
	report(ok, name, ok ? NULL : "%s", alive ? "image checksum changed" : "no answer");
}

static void ds_setup(uint64_t base, uint64_t n, uint64_t thr)
{
	ds.bts_base = base;
	ds.bts_index = base;
	ds.bts_abs_max = base + n * sizeof(struct bts_record64);
	ds.bts_int_threshold = base + thr * sizeof(struct bts_record64);
	wrmsr(MSR_IA32_DS_AREA, A(&ds));
}


/* --- IA32_APIC_BASE ------------------------------------------------------- */

static void test_apic_base(void)
{
	uint64_t orig = rdmsr(MSR_IA32_APICBASE);
	bool x2 = orig & APICBASE_EXTD;
	/* bit 9 is reserved (SDM Vol. 3 Figure 11-5) */
	report(wrmsr_fault(MSR_IA32_APICBASE, orig | (1ull << 9)) == X86_GP, "apic_base_reserved_bit_gp", NULL);
	report(!x2 || wrmsr_fault(MSR_IA32_APICBASE, orig & ~APICBASE_EXTD) == X86_GP,
	       "apic_base_x2apic_to_xapic_gp", NULL);

	/* moved onto the hypervisor's first page: its header and code */
	uint64_t moved = (orig & 0xfff) | reserve;
	int vec = wrmsr_fault(MSR_IA32_APICBASE, moved);
	uint64_t back = rdmsr(MSR_IA32_APICBASE);
	report(vec < 0 && back == moved, "apic_base_moved_reads_back", "vec %d read %lx want %lx", vec,
	       back, moved);

	/* a BTS threshold PMI while it is moved: delivered through the real
	 * APIC, nothing written at the guest's base */
	uint32_t old_lvt = lvtpc_read();
	struct gate saved = handle_exception(PMI_VECTOR, pmi_handler);
	lvtpc_write(PMI_VECTOR);
	pmi_count = 0;
	ds_setup(A(buf), 64, 2);
	asm volatile("cli");
	traced(TRACE | DEBUGCTL_BTINT, 8);
	asm volatile("sti; nop; nop; nop" ::: "memory");
	for (int i = 0; i < 100000 && !pmi_count; i++)
		asm volatile("pause");
	asm volatile("cli");
	wrmsr(MSR_IA32_APICBASE, orig);
	lvtpc_write(old_lvt);
	gate_restore(PMI_VECTOR, saved);
	asm volatile("sti");
	report(pmi_count == 1, "pmi_with_apic_base_moved", "pmis %lu", pmi_count);
	report(rdmsr(MSR_IA32_APICBASE) == orig, "apic_base_restored", NULL);
	report_intact("apic_base_moved_intact");
}

/* --- debug registers ------------------------------------------------------- */

static void set_drs(const uint64_t a[4], uint64_t dr7)
{
	asm volatile("mov %0, %%dr0; mov %1, %%dr1; mov %2, %%dr2; mov %3, %%dr3; mov %4, %%dr7"
		     ::"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(dr7));
}

static bool drs_read_back(const uint64_t a[4], uint64_t dr7)
{
	uint64_t d0, d1, d2, d3, d7;
	asm volatile("mov %%dr0, %0; mov %%dr1, %1; mov %%dr2, %2; mov %%dr3, %3; mov %%dr7, %4"
		     : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3), "=r"(d7));
	return d0 == a[0] && d1 == a[1] && d2 == a[2] && d3 == a[3] && (d7 & 0xff) == (dr7 & 0xff);
}

/* Breakpoints on what every exit runs and touches: instruction breakpoints
 * where #VMEXIT lands, on the exit handler, on the last step before entry;
 * data breakpoints (reads and writes, 8 bytes) on a variable the SVM entry
 * path reads after the host's DR7 is loaded, on the hypervisor's global
 * state, on the local APIC's ICR as the hypervisor maps it and on the top
 * of its reserve. The hypervisor arms the guest's
 * breakpoints in its own DR7 under TCG (hv/trace/dr.c trace_host_dr7):
 * none of these may be armed in root mode. */
static void test_breakpoints_on(const char *what, const uint64_t a[4], uint64_t dr7, bool with_engine)
{
	uint64_t b = 0, c = 0;
	char name[64], rb[64];
	hv_snprintf(name, sizeof(name), "%s%s", what, with_engine ? "_traced" : "");
	hv_snprintf(rb, sizeof(rb), "%s_read_back%s", what, with_engine ? "_traced" : "");

	ds_setup(A(buf), 64, 64);
	set_drs(a, dr7);
	asm volatile("cli");	/* as in traced() */
	if (with_engine)
		wrmsr(MSR_IA32_DEBUGCTL, TRACE);
	for (int i = 0; i < 20; i++) {
		cpuid(0, 0);
		hypercall(HVTRACE_HC_VERSION, &b, &c);
		branches(4);
	}
	if (with_engine)
		wrmsr(MSR_IA32_DEBUGCTL, 0);
	asm volatile("sti");
	bool same = drs_read_back(a, dr7);
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	set_drs(zero, 0x400);
	report(same, rb, NULL);
	report_intact(name);
	if (with_engine) {
		hv_snprintf(rb, sizeof(rb), "%s_traced_records", what);
		report(ds.bts_index > ds.bts_base, rb, "index %lx base %lx", ds.bts_index, ds.bts_base);
	}
}

#define HV_VA_TOP_RESERVE 0xffffffffbffffff8ull	/* HV_VA_BASE + 1 GiB - 8 */
#define HV_VA_APIC 0xffffffffc0000000ull		/* HV_APIC_VA (hv/base/boot.h) */
#define HV_CAPS_OFFSET 8				/* offsetof(struct hv, caps) */

static void test_breakpoints(bool with_engine)
{
	const uint64_t hv_code[4] = {
		svm ? HV_SYM_svm_vmexit_rip : HV_SYM_vmx_exit_entry,
		HV_SYM_hv_handle_event,
		HV_SYM_hv_prepare_entry,
		HV_SYM_trace_before_entry,
	};
	/* hv.caps: read at every SVM entry after the host's DR7 is loaded
	 * (hv/base/vcpu.h asserts its offset) */
	const uint64_t hv_data[4] = { HV_SYM_hv + HV_CAPS_OFFSET, HV_SYM_hv, HV_VA_APIC + APIC_ICR_LO,
				      HV_VA_TOP_RESERVE };
	/* L0-L3; instruction breakpoints (RW 00, LEN 00), then data ones
	 * (RW 11: reads and writes, LEN 10: 8 bytes) */
	test_breakpoints_on("breakpoints_on_hv_code", hv_code, 0x400 | 0x55, with_engine);
	test_breakpoints_on("data_breakpoints_on_hv", hv_data, 0x400 | 0x55 | 0xbbbb0000ull, with_engine);
}

static void test_dr_reserved(void)
{
	uint64_t bad = 1ull << 32;
	report(TRY(3, "mov %0, %%dr7" ::"r"(0x400 | bad)) == 13, "dr7_high_bits_gp", NULL);
	report(TRY(3, "mov %0, %%dr6" ::"r"(0xffff0ff0 | bad)) == 13, "dr6_high_bits_gp", NULL);
	report_intact("dr_reserved_intact");
}

/* --- the guest's BTS buffer ------------------------------------------------- */

static void test_bts_noncanonical(void)
{
	SetMem(buf, sizeof(buf), 0xee);
	uint64_t before = bts_dropped();
	ds_setup(A(buf) | (1ull << 63), 64, 64);	/* bits 63:48 not all equal */
	traced(TRACE, 8);
	bool untouched = buf[0].from == 0xeeeeeeeeeeeeeeeeull && buf[0].to == 0xeeeeeeeeeeeeeeeeull;
	report(untouched, "bts_noncanonical_not_aliased", "record 0: %lx -> %lx", buf[0].from, buf[0].to);
	report(bts_dropped() > before, "bts_noncanonical_dropped", NULL);
	report_intact("bts_noncanonical_intact");
}

/* the 8 bytes at linear address 0 (identity-mapped by the firmware) */
static uint64_t read_linear0(void)
{
	uint64_t v;
	asm volatile("movq 0, %0" : "=r"(v) :: "memory");
	return v;
}

/* A BTS buffer in the last page of the address space whose record would
 * run past 2^64 onto linear address 0: hardware never writes such a
 * record; the hypervisor must not write its start at the top nor its end
 * at 0. The test maps the top page itself (PML4[511]...PT[511]). */
static void test_bts_wrap(void)
{
	uint64_t cr0, cr3, cr4;
	asm volatile("mov %%cr0, %0; mov %%cr3, %1; mov %%cr4, %2" : "=r"(cr0), "=r"(cr3), "=r"(cr4));
	uint64_t *pml4 = (uint64_t *)(uintptr_t)(cr3 & 0x000ffffffffff000ull);
	if ((cr4 & (1ull << 12)) || (pml4[511] & 1)) {
		report_skip("bts_wrap_refused", "5-level paging, or the top of the address space is mapped");
		return;
	}
	EFI_PHYSICAL_ADDRESS pages = 0;
	if (EFI_ERROR(uefi_call_wrapper(BS->AllocatePages, 4, AllocateAnyPages, EfiLoaderData, 4, &pages)) ||
	    pages >= (1ull << 32)) {
		report_skip("bts_wrap_refused", "no memory");
		return;
	}
	uint64_t *pdpt = (uint64_t *)(uintptr_t)pages, *pd = pdpt + 512, *pt = pd + 512;
	uint8_t *data = (uint8_t *)(pt + 512);
	SetMem(pdpt, 3 * 4096, 0);
	SetMem(data, 4096, 0xcc);
	pdpt[511] = A(pd) | 3;
	pd[511] = A(pt) | 3;
	pt[511] = A(data) | 3;
	uint64_t low_before = read_linear0();

	asm volatile("mov %0, %%cr0" ::"r"(cr0 & ~(1ull << 16)));	/* CR0.WP off: the tables may be read-only */
	pml4[511] = A(pdpt) | 3;
	asm volatile("mov %0, %%cr0; mov %1, %%cr3" ::"r"(cr0), "r"(cr3) : "memory");

	uint64_t before = bts_dropped();
	ds.bts_base = ds.bts_index = 0xfffffffffffffff0ull;
	ds.bts_abs_max = ds.bts_int_threshold = 0xffffffffffffffffull;
	wrmsr(MSR_IA32_DS_AREA, A(&ds));
	traced(TRACE, 4);
	bool top_untouched = true;
	for (int i = 0; i < 4096; i++)
		top_untouched = top_untouched && data[i] == 0xcc;
	uint64_t low_after = read_linear0();

	asm volatile("mov %0, %%cr0" ::"r"(cr0 & ~(1ull << 16)));
	pml4[511] = 0;
	asm volatile("mov %0, %%cr0; mov %1, %%cr3" ::"r"(cr0), "r"(cr3) : "memory");
	uefi_call_wrapper(BS->FreePages, 2, pages, 4);

	report(top_untouched && low_after == low_before && ds.bts_index == 0xfffffffffffffff0ull,
	       "bts_wrap_refused", "top page %s, linear 0 %s, index %lx",
	       top_untouched ? "intact" : "written", low_after == low_before ? "intact" : "written",
	       ds.bts_index);
	report(bts_dropped() > before, "bts_wrap_dropped", NULL);
}

static void test_ds_in_hv_and_mmio(void)
{
	uint64_t before = bts_dropped();
	wrmsr(MSR_IA32_DS_AREA, reserve + 0x2000);		/* the DS area in the reserve */
	traced(TRACE, 4);
	wrmsr(MSR_IA32_DS_AREA, APIC_DEFAULT);		/* ... in the local APIC */
	traced(TRACE, 4);
	ds_setup(reserve, 64, 64);			/* the buffer in the reserve */
	traced(TRACE, 4);
	ds_setup(reserve + reserve_size - 24, 64, 64);	/* ... and straddling its end */
	traced(TRACE, 4);
	report(bts_dropped() >= before + 4 * 4, "ds_in_hv_and_mmio_dropped", "dropped %lu",
	       bts_dropped() - before);
	report_intact("ds_in_hv_and_mmio_intact");
}

/* --- MSRs and instructions that reach the platform -------------------------- */

static void test_decode_msrs(void)
{
	if (!amd) {
		report_skip("top_mem_frozen", "AMD's memory-decoding MSRs");
		return;
	}
	static const uint32_t msrs[] = { MSR_TOP_MEM, MSR_TOP_MEM2, MSR_IORR_MASK0 };
	for (unsigned i = 0; i < 3; i++) {
		uint64_t v, after;
		char name[48];
		hv_snprintf(name, sizeof(name), "decode_msr_%x_frozen", msrs[i]);
		if (rdmsr_fault(msrs[i], &v) >= 0) {
			report(wrmsr_fault(msrs[i], 0) == 13, name, "not readable, so not writable");
			continue;
		}
		int same = wrmsr_fault(msrs[i], v);
		int other = wrmsr_fault(msrs[i], v ^ 0x10000000ull);
		rdmsr_fault(msrs[i], &after);
		report(same < 0 && other == 13 && after == v, name, "same %d other %d value %lx -> %lx",
		       same, other, v, after);
	}
}

/* MTRRs are virtual (hv/dispatch/mtrr.c): a guest that disables them and
 * makes the reserve uncacheable is taken and reads its values back, as on
 * hardware, while the processor's MTRRs, which the hypervisor's own
 * accesses use, stay the firmware's: the hypervisor stays whole. */
static void test_mtrrs(void)
{
	if (!(cpuid(1, 0).d & CPUID_1_EDX_MTRR)) {
		report_skip("mtrr_disable_taken", "no MTRRs");
		return;
	}
	uint64_t cap = rdmsr(MSR_IA32_MTRRCAP), def = rdmsr(MSR_IA32_MTRR_DEF_TYPE), v = 1;
	unsigned vcnt = cap & 0xff, free_pair = vcnt;
	for (unsigned i = 0; i < vcnt && free_pair == vcnt; i++)
		if (!(rdmsr(MSR_IA32_MTRR_PHYSBASE0 + 2 * i + 1) & MTRR_PHYSMASK_VALID))
			free_pair = i;
	int w0 = wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, 0), r0 = rdmsr_fault(MSR_IA32_MTRR_DEF_TYPE, &v);
	report(w0 < 0 && r0 < 0 && v == 0, "mtrr_disable_taken", "write %d, read %d: %lx", w0, r0, v);
	report(integrity_ok(), "mtrr_disabled_hypervisor_whole", NULL);
	report(wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, def) < 0 && rdmsr(MSR_IA32_MTRR_DEF_TYPE) == def,
	       "mtrr_def_type_restored", NULL);
	report(wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, def | (1ull << 20)) == 13, "mtrr_def_type_reserved_gp", NULL);
	if (free_pair == vcnt) {
		report_skip("mtrr_uc_over_reserve_taken", "no free variable MTRR");
		return;
	}
	uint32_t b = MSR_IA32_MTRR_PHYSBASE0 + 2 * free_pair;
	uint64_t mask = (~(reserve_size - 1) & 0x000ffffffffff000ull & ((1ull << 36) - 1)) | MTRR_PHYSMASK_VALID;
	int wb = wrmsr_fault(b, reserve | 0), wm = wrmsr_fault(b + 1, mask);
	rdmsr_fault(b + 1, &v);
	report(wb < 0 && wm < 0 && v == mask, "mtrr_uc_over_reserve_taken", "writes %d %d, mask %lx", wb, wm, v);
	report(integrity_ok(), "mtrr_uc_reserve_hypervisor_whole", NULL);
	wrmsr_fault(b + 1, 0);
	wrmsr_fault(b, 0);
}

static void test_feature_msrs(void)
{
	uint64_t v;
	/* PEBS: the virtual one's reserved bits (the load-latency and store
	 * bits of older formats) for an Intel guest, the whole MSR for an AMD
	 * one; its buffers are t_pmu's (pebs_bad_buffer_*) */
	report(wrmsr_fault(MSR_IA32_PEBS_ENABLE, 1ull << 63) == 13 && wrmsr_fault(MSR_IA32_PEBS_ENABLE, 1ull << 35) == 13 &&
	       (!cpu_is_amd() || wrmsr_fault(MSR_IA32_PEBS_ENABLE, 1) == 13), "pebs_enable_gp", NULL);
	report(rdmsr_fault(MSR_IA32_RTIT_CTL, &v) == 13 && wrmsr_fault(MSR_IA32_RTIT_CTL, 1) == 13, "intel_pt_msrs_gp",
	       NULL);
	report(!(cpuid(7, 0).b & (1u << 25)), "intel_pt_hidden", NULL);
}

static void test_invd(void)
{
	/* exits between two status hypercalls, with and without an INVD
	 * between them; the fewest of a few tries (an interrupt's exit is noise) */
	uint64_t quiet = ~0ull, with_invd = ~0ull;
	asm volatile("cli");
	for (int i = 0; i < 4; i++) {
		uint64_t e0 = exits_total(), e1 = exits_total();
		asm volatile("invd" ::: "memory");
		uint64_t e2 = exits_total();
		quiet = e1 - e0 < quiet ? e1 - e0 : quiet;
		with_invd = e2 - e1 < with_invd ? e2 - e1 : with_invd;
	}
	asm volatile("sti");
	report(with_invd == quiet + 1, "invd_intercepted", "%lu exits with INVD, %lu without",
	       with_invd, quiet);
	report_intact("invd_intact");
}

static void test_hypercall_pointers(void)
{
	static const struct { const char *name; uint64_t gpa; } bad[] = {
		{ "reserve", 0 }, { "reserve_end", 1 }, { "apic", APIC_DEFAULT }, { "wrap", (uint64_t)-64 },
	};
	bool ok = true;
	char detail[80] = "";
	for (unsigned i = 0; i < 4; i++) {
		uint64_t gpa = bad[i].gpa == 0 ? reserve : bad[i].gpa == 1 ? reserve + reserve_size - 8 : bad[i].gpa;
		uint64_t b = gpa, c = sizeof(struct hvtrace_status);
		int64_t r1 = hypercall(HVTRACE_HC_STATUS, &b, &c);
		b = gpa;
		c = sizeof(struct hvtrace_vcpu_status);
		int64_t r2 = hypercall(HVTRACE_HC_VCPU_STATUS, &b, &c);
		uint64_t op = HVTRACE_TRACE_FILTER, arg = gpa, size = sizeof(struct hvtrace_filter);
		int64_t r3 = hypercall3(HVTRACE_HC_TRACE_CTL, &op, &arg, &size);
		if (r1 != -HVTRACE_EFAULT || r2 != -HVTRACE_EFAULT ||
		    (r3 != -HVTRACE_EFAULT && r3 != -HVTRACE_ENOSYS)) {
			ok = false;
			hv_snprintf(detail, sizeof(detail), "%s: %ld %ld %ld", bad[i].name, r1, r2, r3);
		}
	}
	report(ok, "hypercall_bad_buffers_efault", "%s", detail);
	report_intact("hypercall_bad_buffers_intact");
}

/* With a recorder: the integration test scribbles the channel header
 * (nr_rings, every ring's consumer) while this waits, then a filter
 * hypercall makes the hypervisor walk its rings. */
static void test_channel_scribble(void)
{
	uint64_t op = HVTRACE_TRACE_MARK, arg = 0;
	if (hypercall(HVTRACE_HC_TRACE_CTL, &op, &arg) == -HVTRACE_ENOSYS) {
		report_skip("channel_scribbled_filter", "no recorder configured");
		return;
	}
	report_info("HOSTILE: scribble the channel now");
	uefi_call_wrapper(BS->Stall, 1, 6 * 1000 * 1000);
	/* the recorder on only now, with interrupts off: it traces
	 * everything, the firmware's timer handler included (see traced()) */
	asm volatile("cli");
	op = HVTRACE_TRACE_START;
	arg = 0;
	hypercall(HVTRACE_HC_TRACE_CTL, &op, &arg);
	static struct hvtrace_filter f = { .consumer = HVTRACE_CONSUMER_FLIGHT, .cpl = HVTRACE_CPL_KERNEL };
	uint64_t size = sizeof(f);
	op = HVTRACE_TRACE_FILTER;
	arg = A(&f);
	int64_t r = hypercall3(HVTRACE_HC_TRACE_CTL, &op, &arg, &size);
	ds_setup(A(buf), 64, 64);
	traced(TRACE, 16);
	op = HVTRACE_TRACE_STOP;
	hypercall(HVTRACE_HC_TRACE_CTL, &op, &arg);
	asm volatile("sti");
	/* reported only now: printing runs the firmware, which enables
	 * interrupts */
	report(r == 0, "channel_scribbled_filter", "ret %ld", r);
	report(ds.bts_index > ds.bts_base, "channel_scribbled_bts",
	       "%lu records", (ds.bts_index - ds.bts_base) / sizeof(struct bts_record64));
	report_intact("channel_scribbled_intact");
}

static void test_breakpoints_off(void) { test_breakpoints(false); }
static void test_breakpoints_traced(void) { test_breakpoints(true); }

/* In this order; the channel scribble last (it runs without the test's
 * fault handlers, which a recorder's hypercalls do not need). */
/* Writes to the local APIC's page exit and are emulated (docs/smp.md):
 * 32-bit MOV and XCHG as the hardware does them, every other form (a byte,
 * a quadword, a string store) dropped. On TPR (0x80), whose value reads
 * back: the emulated forms land, the odd ones change nothing, and the
 * hypervisor stays intact. */
static void test_apic_page_writes(void)
{
	if (rdmsr(MSR_IA32_APICBASE) & (1ull << 10)) {
		report_skip("apic_page_writes", "x2APIC mode: the page is not decoded");
		return;
	}
	volatile uint32_t *tpr = (volatile uint32_t *)(uintptr_t)((rdmsr(MSR_IA32_APICBASE) & ~0xfffull) + 0x80);
	uint64_t fl = irq_save();
	uint32_t t0 = *tpr & 0xff, v = t0 ^ 0x10, old = t0 ^ 0x20;
	asm volatile("movl %1, %0" : "=m"(*tpr) : "r"(v) : "memory");
	uint32_t after_mov = *tpr & 0xff;
	asm volatile("xchgl %0, %1" : "+r"(old), "+m"(*tpr) :: "memory");
	uint32_t after_xchg = *tpr & 0xff;
	asm volatile("movb %1, %0" : "=m"(*(volatile uint8_t *)tpr) : "q"((uint8_t)0x70) : "memory");
	uint32_t after_byte = *tpr & 0xff;
	asm volatile("movq %1, %0" : "=m"(*(volatile uint64_t *)tpr) : "r"(0x60ull) : "memory");
	uint32_t after_quad = *tpr & 0xff;
	uint64_t di = A(tpr), cx = 1;
	asm volatile("rep stosl" : "+D"(di), "+c"(cx) : "a"(0x50u) : "memory");
	uint32_t after_rep = *tpr & 0xff;
	asm volatile("movl %1, %0" : "=m"(*tpr) : "r"(t0) : "memory");
	irq_restore(fl);
	report(after_mov == v, "apic_page_mov32_emulated", "TPR %x, wrote %x", after_mov, v);
	report(after_xchg == (t0 ^ 0x20) && old == v, "apic_page_xchg_emulated", "TPR %x, old %x", after_xchg, old);
	report(after_byte == (t0 ^ 0x20) && after_quad == (t0 ^ 0x20) && after_rep == (t0 ^ 0x20),
	       "apic_page_odd_writes_dropped", "TPR after byte %x, quadword %x, rep stos %x", after_byte,
	       after_quad, after_rep);
	report_intact("apic_page_writes_intact");
}

/* What engine = interp must leave to the processor (docs/branch-engine.md "The
 * interpreting engine"), run untraced and then traced, each access right after an
 * indirect branch (a stop of the engine: the interpreter runs from there): a read of
 * the hypervisor's reserve and a write of what it read back (its sink page, never
 * the hypervisor), a read of the local APIC's version register (MMIO), a
 * non-canonical read (#GP, skipped by the handler), locked read-modify-writes of the
 * reserve and at non-canonical addresses (one by a bit-string offset from a canonical
 * base), INVLPG of the reserve and of a non-canonical address, REP STOSQ onto the reserve and
 * REP STOSB at a non-canonical address, LOCK CMPXCHG16B of the reserve and at a non-canonical
 * and a misaligned address, and 6,000 instructions without a branch (its budget ends, the guest goes
 * on). The results must be the same both ways and the hypervisor intact. */
struct interp_probe {
	uint64_t reserve_read, apic_version, straight;
	int gp;
	/* the locked forms (LOCK CMPXCHG, LOCK BTS/BTR with an immediate and with a
	 * bit-string offset) at the reserve's sink: ZF or CF after each; at a non-canonical
	 * address and at a bit-string address that leaves the canonical range: the vectors */
	unsigned locked_flags;
	int gp_cmpxchg, gp_bts, gp_bitstring;
	/* INVLPG (interpreted at CPL 0) of the reserve's page and of a non-canonical address
	 * (a NOP), then the reserve read again */
	uint64_t after_invlpg;
	/* REP STOSQ of 4 quadwords at the reserve (its value back, the sink's), the reserve read
	 * after it, and REP STOSB at a non-canonical address (#GP) */
	uint64_t after_stos;
	int gp_stos;
	/* LOCK CMPXCHG16B at the reserve writing back the 16 bytes it finds (ZF), and CMPXCHG16B
	 * at a non-canonical address and at one not aligned to 16 (#GP each) */
	uint8_t zf16;
	int gp_cx16, gp_cx16_align;
};

/* An indirect JMP to the next instruction: the fast engine stops at it (a direct one it
 * would follow in a chain), so the interpreter runs from there */
#define STOP() asm volatile("lea 1f(%%rip), %%r11\n\tjmp *%%r11\n1:" ::: "r11", "memory")

static void interp_probe(uint64_t debugctl, struct interp_probe *p)
{
	volatile uint64_t *res = (volatile uint64_t *)(uintptr_t)(reserve + 0x3000);
	volatile uint32_t *apic = x2apic_mode() ? NULL
						: (volatile uint32_t *)(uintptr_t)(rdmsr(MSR_IA32_APICBASE) & ~0xfffull);
	uint64_t bad = 0x8000000000001000ull, n = 0;
	uint64_t f = irq_save();
	wrmsr(MSR_IA32_DEBUGCTL, debugctl);
	STOP();
	p->reserve_read = *res;
	STOP();
	*res = p->reserve_read;
	STOP();
	p->apic_version = apic ? apic[0x30 / 4] : 0;
	STOP();
	p->gp = TRY(3, "movq (%0), %0" : "+a"(bad));
	/* LOCK CMPXCHG writing back the value it finds (ZF); at the quadword after it LOCK
	 * BTR then BTS then BTR of bit 5 (CF of the last two); the same by a register offset
	 * of 5 + 64 * 8 bits (the quadword at +64). Each sequence leaves the bit as it found
	 * it (the sink keeps writes; the untraced run goes first). What the sink answers is
	 * the emulator's (QEMU 7.2 gives CF 1 then 0: the page is every hidden page's alias),
	 * only the same both ways is asked. */
	uint8_t zf, c1, c2, c3, c4;
	uint64_t seen = *res;
	volatile uint64_t *next = res + 1;
	STOP();
	asm volatile("lock cmpxchgq %2, %1; setz %0" : "=q"(zf), "+m"(*res), "+a"(seen) : "r"(seen) : "cc", "memory");
	STOP();
	asm volatile("lock btrq $5, %0" : "+m"(*next)::"cc", "memory");
	asm volatile("lock btsq $5, %1; setc %0" : "=q"(c1), "+m"(*next)::"cc", "memory");
	asm volatile("lock btrq $5, %1; setc %0" : "=q"(c2), "+m"(*next)::"cc", "memory");
	STOP();
	asm volatile("lock btrq %0, (%1)" ::"r"(517ull), "r"(res) : "cc", "memory");
	asm volatile("lock btsq %2, (%1); setc %0" : "=q"(c3) : "r"(res), "r"(517ull) : "cc", "memory");
	asm volatile("lock btrq %2, (%1); setc %0" : "=q"(c4) : "r"(res), "r"(517ull) : "cc", "memory");
	p->locked_flags = zf | c1 << 1 | c2 << 2 | c3 << 3 | c4 << 4;
	/* the faulting forms, each 5 bytes (F0 48 0F xx 0A) with its registers fixed: #GP
	 * before any access. The last: RDX canonical (the lower half's last page), the
	 * operand at RDX + RCX / 8 = RDX + 4 KiB, past the lower half */
	STOP();
	p->gp_cmpxchg = TRY(5, "lock cmpxchgq %%rcx, (%%rdx)" ::"d"(bad), "c"(0ull), "a"(0ull) : "cc", "memory");
	STOP();
	p->gp_bts = TRY(5, "lock btsq %%rcx, (%%rdx)" ::"d"(bad), "c"(1ull) : "cc", "memory");
	STOP();
	p->gp_bitstring = TRY(5, "lock btsq %%rcx, (%%rdx)" ::"d"(0x7ffffffff000ull), "c"(0x1000ull * 8) : "cc", "memory");
	STOP();
	asm volatile("invlpg (%0)" ::"r"(res) : "memory");
	asm volatile("invlpg (%0)" ::"r"(bad) : "memory");
	p->after_invlpg = *res;
	STOP();
	uint64_t rdi = (uint64_t)(uintptr_t)res, rcx = 4;
	asm volatile("cld; rep stosq" : "+D"(rdi), "+c"(rcx) : "a"(p->reserve_read) : "memory");
	p->after_stos = *res;
	STOP();
	p->gp_stos = TRY(2, "rep stosb" ::"D"(bad), "c"(8ull), "a"(0ull) : "memory");
	STOP();
	{
		uint64_t lo = res[0], hi = res[1];
		asm volatile("lock cmpxchg16b %1; setz %0" : "=q"(p->zf16), "+m"(*(volatile uint64_t(*)[2])res), "+a"(lo), "+d"(hi)
			     : "b"(lo), "c"(hi) : "cc", "memory");
	}
	STOP();
	p->gp_cx16 = TRY(5, "lock cmpxchg16b (%%rdx)" ::"d"(bad), "a"(0ull), "b"(0ull), "c"(0ull) : "cc", "memory");
	STOP();
	p->gp_cx16_align = TRY(5, "lock cmpxchg16b (%%rdx)" ::"d"((uint64_t)(uintptr_t)res + 8), "a"(0ull), "b"(0ull),
			       "c"(0ull) : "cc", "memory");
	asm volatile("lea 1f(%%rip), %%r11\njmp *%%r11\n1:\n.rept 6000\naddq $1, %0\n.endr" : "+r"(n)::"r11");
	p->straight = n;
	wrmsr(MSR_IA32_DEBUGCTL, 0);
	irq_restore(f);
}

static void test_interp_memory(void)
{
	struct interp_probe a, b;
	struct hvtrace_vcpu_status s0, s1;
	asm volatile("mov %0, %%dr7" ::"r"(0x400ull));	/* no breakpoint of ours: the interpreter may run */
	interp_probe(0, &a);
	status_call(HVTRACE_HC_VCPU_STATUS, &s0, sizeof(s0));
	interp_probe(TRACE, &b);
	status_call(HVTRACE_HC_VCPU_STATUS, &s1, sizeof(s1));
	/* integration.sh t_svm_hostile_interp reads this line */
	report_info("interp_memory: %lu instructions interpreted, %lu left", s1.interp_insns - s0.interp_insns,
		    s1.interp_left - s0.interp_left);
	report(a.reserve_read == b.reserve_read && a.apic_version == b.apic_version && a.gp == X86_GP &&
		       b.gp == X86_GP && a.straight == 6000 && b.straight == 6000,
	       "interp_hostile_memory", "reserve %lx/%lx apic %lx/%lx vector %d/%d straight %lu/%lu",
	       a.reserve_read, b.reserve_read, a.apic_version, b.apic_version, a.gp, b.gp, a.straight, b.straight);
	report(a.locked_flags == b.locked_flags && a.gp_cmpxchg == X86_GP && b.gp_cmpxchg == X86_GP &&
		       a.gp_bts == X86_GP && b.gp_bts == X86_GP && a.gp_bitstring == X86_GP &&
		       b.gp_bitstring == X86_GP,
	       "interp_hostile_locked", "flags %x/%x vectors cmpxchg %d/%d bts %d/%d bit-string %d/%d",
	       a.locked_flags, b.locked_flags, a.gp_cmpxchg, b.gp_cmpxchg, a.gp_bts, b.gp_bts, a.gp_bitstring,
	       b.gp_bitstring);
	report(a.after_invlpg == a.reserve_read && b.after_invlpg == b.reserve_read, "interp_hostile_invlpg",
	       "the reserve read after INVLPG of its page and of a non-canonical address: %lx/%lx (before %lx/%lx)",
	       a.after_invlpg, b.after_invlpg, a.reserve_read, b.reserve_read);
	report(a.after_stos == a.reserve_read && b.after_stos == b.reserve_read && a.gp_stos == X86_GP &&
		       b.gp_stos == X86_GP, "interp_hostile_rep_stos",
	       "vectors %d/%d (REP STOSB, non-canonical); reserve after REP STOSQ %lx/%lx", a.gp_stos, b.gp_stos,
	       a.after_stos, b.after_stos);
	report(a.zf16 == b.zf16 && a.gp_cx16 == X86_GP && b.gp_cx16 == X86_GP && a.gp_cx16_align == X86_GP &&
		       b.gp_cx16_align == X86_GP, "interp_hostile_cmpxchg16b",
	       "ZF %u/%u at the reserve; vectors %d/%d (non-canonical), %d/%d (misaligned)", a.zf16, b.zf16, a.gp_cx16,
	       b.gp_cx16, a.gp_cx16_align, b.gp_cx16_align);
	report_intact("interp_hostile_memory_intact");
}

static const struct { const char *name; void (*run)(void); } sections[] = {
	{ "breakpoints", test_breakpoints_off },
	{ "breakpoints_traced", test_breakpoints_traced },
	{ "dr_reserved", test_dr_reserved },
	{ "apic_base", test_apic_base },
	{ "bts_noncanonical", test_bts_noncanonical },
	{ "bts_wrap", test_bts_wrap },
	{ "ds_in_hv_and_mmio", test_ds_in_hv_and_mmio },
	{ "decode_msrs", test_decode_msrs },
	{ "mtrrs", test_mtrrs },
	{ "feature_msrs", test_feature_msrs },
	{ "invd", test_invd },
	{ "hypercall_pointers", test_hypercall_pointers },
	{ "interp_memory", test_interp_memory },	/* before channel_scribble: faults caught */
	{ "channel_scribble", test_channel_scribble },
	{ "apic_page_writes", test_apic_page_writes },
};

/* The config's cmdline may name the sections to run ("apic_base bts_wrap"):
 * one attack at a time, against a hypervisor that may not survive it. */
static bool section_wanted(const char *name)
{
	const char *a = guest_args();
	if (!*a)
		return true;
	size_t n = strlena((const CHAR8 *)name);
	for (const char *p = a; *p;) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		if ((size_t)(e - p) == n && strncmpa((const CHAR8 *)p, (const CHAR8 *)name, n) == 0)
			return true;
		p = e;
	}
	return false;
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_hostile");
	if (!under_hvtrace()) {
		report_skip("all", "not running under hvtrace");
		report_done();
	}
	amd = cpu_is_amd();
	svm = hv_backend() == HVTRACE_BACKEND_SVM;
	if (!find_reserve(&reserve, &reserve_size)) {
		report(false, "reserve_in_memory_map", NULL);
		report_done();
	}
	report_info("reserve %lx+%lx; hypervisor code at %lx (exit handler %lx)", reserve, reserve_size,
		    (uint64_t)HV_SYM___hv_ro_start, (uint64_t)HV_SYM_hv_handle_event);
	faults_catch();
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (!section_wanted(sections[i].name))
			continue;
		if (sections[i].run == test_channel_scribble)
			faults_release();
		sections[i].run();
	}
	faults_release();
	report_intact("hypervisor_intact_at_end");
	report_done();
}
