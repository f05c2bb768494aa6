/*
 * t_unusual: unusual but legal things a guest may do, checked against what
 * the manuals define: supervisor-mode execution and access prevention and
 * protection keys on private page tables (SDM Vol. 3 4.6, APM Vol. 2
 * 5.6), XCR0's rules, CPUID leaf 0xD following it and an XSAVE/XRSTOR
 * round trip (SDM Vol. 1 13), CR4.FSGSBASE, and MSRs written, read back
 * and restored (SDM Vol. 4, APM Vol. 2 appendix A). Independent of
 * hvtrace: the differential tier (tests/integration-diff.sh) runs it with
 * and without the hypervisor, idle and traced. Interrupts are off around
 * anything the firmware must not see.
 */
#include "guest.h"
#include "arch/x86/cpuid.h"

#define SYM(x) extern char x[] __attribute__((visibility("hidden")))
SYM(pf_handler);
extern volatile uint64_t pf_count __attribute__((visibility("hidden")));
extern volatile uint64_t pf_error __attribute__((visibility("hidden")));
extern volatile uint64_t pf_cr2 __attribute__((visibility("hidden")));
extern volatile uint64_t pf_skip __attribute__((visibility("hidden")));

#define PTE_PKEY(k) ((uint64_t)(k) << PTE_PKEY_SHIFT)

static void write_cr4(uint64_t v)
{
	asm volatile("mov %0, %%cr4" ::"r"(v) : "memory");
}

/* --- private page tables ----------------------------------------------------
 * The firmware's PML4 copied, plus slot 256 (TEST_VA) mapping three 4 KiB
 * user pages: code (a RET), data, and data with protection key 1; then a
 * supervisor page and one not present (VA_IDT). */
#define TEST_VA		0xffff800000000000ull
#define VA_CODE		(TEST_VA)
#define VA_DATA		(TEST_VA + 0x1000)
#define VA_KEY1		(TEST_VA + 0x2000)
/* An IDT whose gates 0-14 end the present page at TEST_VA + 0x3000 and
 * whose gates from 15 on lie on the next page, not present */
#define IDT_SPLIT	15
#define VA_IDT		(TEST_VA + 0x4000 - IDT_SPLIT * 16)
static uint64_t pml4[512] __attribute__((aligned(4096)));
static uint64_t pdpt[512] __attribute__((aligned(4096)));
static uint64_t pd[512] __attribute__((aligned(4096)));
static uint64_t pt[512] __attribute__((aligned(4096)));
static uint8_t pages[4][4096] __attribute__((aligned(4096)));
static uint64_t fw_cr3;

static bool paging_setup(void)
{
	uint64_t cr3;
	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	const uint64_t *fw = (const uint64_t *)(uintptr_t)(cr3 & PTE_ADDR_MASK);
	if ((read_cr4() & CR4_LA57) || (fw[256] & PTE_P))
		return false;
	CopyMem(pml4, (void *)fw, sizeof(pml4));
	const uint64_t up = PTE_P | PTE_RW | PTE_US;
	pml4[256] = A(pdpt) | up;
	pdpt[0] = A(pd) | up;
	pd[0] = A(pt) | up;
	pt[0] = A(pages[0]) | up;
	pt[1] = A(pages[1]) | up;
	pt[2] = A(pages[2]) | up | PTE_PKEY(1);
	pt[3] = A(pages[3]) | PTE_P | PTE_RW;	/* VA_IDT's first part; pt[4] not present */
	pages[0][0] = 0xc3;	/* ret */
	*(volatile uint32_t *)pages[1] = 0x11111111;
	*(volatile uint32_t *)pages[2] = 0x22222222;
	fw_cr3 = cr3;
	return true;
}

static void paging_on(void)
{
	asm volatile("mov %0, %%cr3" ::"r"(A(pml4) | (fw_cr3 & 0xfff)) : "memory");
}

static void paging_off(void)
{
	asm volatile("mov %0, %%cr3" ::"r"(fw_cr3) : "memory");
}

static void pf_reset(uint64_t skip)
{
	pf_count = pf_error = pf_cr2 = 0;
	pf_skip = skip;
}

/* 2-byte loads and stores through RAX (8b 00, 89 08) */
static uint32_t load(uint64_t va)
{
	uint32_t v = 0xdead;
	asm volatile("mov (%1), %0" : "+c"(v) : "a"(va) : "memory");
	return v;
}

static void store(uint64_t va, uint32_t v)
{
	asm volatile("mov %1, (%0)" ::"a"(va), "c"(v) : "memory");
}

static void call(uint64_t va)
{
	asm volatile("call *%0" ::"r"(va) : "memory");
}

/* SMEP: a supervisor-mode fetch from a user page is a #PF with I/D set;
 * SMAP: a supervisor-mode data access to one, with RFLAGS.AC clear, is a
 * #PF, allowed with AC set (STAC) (SDM Vol. 3 4.6.1). */
static void test_smep_smap(uint64_t cr4)
{
	struct cpuid c7 = cpuid(7, 0);
	if (c7.b & CPUID_7_EBX_SMEP) {
		pf_reset(0);
		call(VA_CODE);
		uint64_t off_count = pf_count;
		write_cr4(cr4 | CR4_SMEP);
		call(VA_CODE);
		write_cr4(cr4);
		report(!off_count && pf_count == 1 && pf_error == (PF_ERR_P | PF_ERR_ID) && pf_cr2 == VA_CODE,
		       "smep_user_fetch_pf", "SMEP off: %lu #PF; on: %lu #PF, error %lx cr2 %lx", off_count,
		       pf_count, pf_error, pf_cr2);
	} else {
		report_skip("smep_user_fetch_pf", "no SMEP");
	}
	if (c7.b & CPUID_7_EBX_SMAP) {
		write_cr4(cr4 | CR4_SMAP);
		pf_reset(2);
		uint32_t v = load(VA_DATA);
		uint64_t rd = pf_count, rd_err = pf_error, rd_cr2 = pf_cr2;
		pf_reset(2);
		store(VA_DATA, 0x33333333);
		uint64_t wr = pf_count, wr_err = pf_error;
		pf_reset(2);
		asm volatile("stac" ::: "memory");
		uint32_t v2 = load(VA_DATA);
		store(VA_DATA, 0x44444444);
		asm volatile("clac" ::: "memory");
		uint32_t v3 = *(volatile uint32_t *)pages[1];
		write_cr4(cr4);
		report(rd == 1 && rd_err == PF_ERR_P && rd_cr2 == VA_DATA && v == 0xdead, "smap_read_pf",
		       "%lu #PF error %lx cr2 %lx value %x", rd, rd_err, rd_cr2, v);
		report(wr == 1 && wr_err == (PF_ERR_P | PF_ERR_W), "smap_write_pf", "%lu #PF error %lx", wr, wr_err);
		report(!pf_count && v2 == 0x11111111 && v3 == 0x44444444, "smap_stac_allows",
		       "%lu #PF, read %x, wrote %x", pf_count, v2, v3);
	} else {
		report_skip("smap_read_pf", "no SMAP");
	}
}

static uint32_t rdpkru(void)
{
	uint32_t a, d;
	asm volatile("rdpkru" : "=a"(a), "=d"(d) : "c"(0));
	return a;
}

static void wrpkru(uint32_t v)
{
	asm volatile("wrpkru" ::"a"(v), "c"(0), "d"(0) : "memory");
}

/* Protection keys (SDM Vol. 3 4.6.2): with CR4.PKE, PKRU's AD bit of a
 * user page's key denies data accesses to it, supervisor-mode ones too,
 * and WD denies writes (supervisor ones while CR0.WP is set); #PF with
 * PK set. CPUID.7:ECX.OSPKE is CR4.PKE; RDPKRU without it is #UD, WRPKRU
 * with ECX not 0 #GP. */
static void test_pku(uint64_t cr4)
{
	if (!(cpuid(7, 0).c & CPUID_7_ECX_PKU)) {
		report_skip("pku", "no protection keys");
		return;
	}
	uint32_t a = 0, d = 0;
	int ud = TRY(3, "rdpkru" : "=a"(a), "=d"(d) : "c"(0));
	uint32_t ospke_off = cpuid(7, 0).c & CPUID_7_ECX_OSPKE;
	write_cr4(cr4 | CR4_PKE);
	uint32_t ospke_on = cpuid(7, 0).c & CPUID_7_ECX_OSPKE;
	report(ud == 6 && !ospke_off && ospke_on, "pku_rdpkru_ud_and_ospke", "rdpkru vec %d, OSPKE %x then %x", ud,
	       ospke_off, ospke_on);
	uint32_t pkru = rdpkru();
	int gp = TRY(3, "wrpkru" ::"a"(0), "c"(1), "d"(0));
	wrpkru(1u << 2);	/* AD for key 1 */
	uint32_t back = rdpkru();
	pf_reset(2);
	uint32_t v1 = load(VA_KEY1), v0 = load(VA_DATA), want0 = *(volatile uint32_t *)pages[1];
	uint64_t ad = pf_count, ad_err = pf_error, ad_cr2 = pf_cr2;
	wrpkru(1u << 3);	/* WD for key 1 */
	pf_reset(2);
	uint32_t v1r = load(VA_KEY1);
	store(VA_KEY1, 0x55555555);
	uint64_t wd = pf_count, wd_err = pf_error;
	wrpkru(pkru);
	write_cr4(cr4);
	report(gp == 13 && back == (1u << 2), "pku_wrpkru", "ecx 1: vec %d; pkru reads %x", gp, back);
	report(ad == 1 && ad_err == (PF_ERR_P | PF_ERR_PK) && ad_cr2 == VA_KEY1 && v1 == 0xdead && v0 == want0,
	       "pku_access_disable_pf", "%lu #PF error %lx cr2 %lx; key 1 %x, key 0 %x", ad, ad_err, ad_cr2, v1, v0);
	report(wd == 1 && wd_err == (PF_ERR_P | PF_ERR_W | PF_ERR_PK) && v1r == 0x22222222 &&
		       *(volatile uint32_t *)pages[2] == 0x22222222,
	       "pku_write_disable_pf", "%lu #PF error %lx, read %x", wd, wd_err, v1r);
}

/* A #PF while an event is delivered: INT 0x20 through an IDT whose gate
 * for 0x20 lies on a page not present. The processor reads the gate
 * first: #PF, CR2 the gate's address, error code 0 (not present, a read,
 * an implicit supervisor access: SDM Vol. 3 4.7, 6.13), the saved RIP the
 * INT's own (the handler skips its 2 bytes); #PF's gate lies on the page
 * that is there. */
static void test_pf_during_delivery(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) fw_idt, split = { 0xfff, VA_IDT };
	asm volatile("sidt %0" : "=m"(fw_idt));
	CopyMem((void *)(uintptr_t)VA_IDT, (void *)(uintptr_t)fw_idt.base, IDT_SPLIT * 16);
	pf_reset(2);
	asm volatile("lidt %0; int $0x20; lidt %1" ::"m"(split), "m"(fw_idt) : "memory");
	report(pf_count == 1 && pf_error == 0 && pf_cr2 == VA_IDT + 0x20 * 16, "pf_reading_idt_gate",
	       "%lu #PF, error %lx cr2 %lx (gate at %lx)", pf_count, pf_error, pf_cr2, VA_IDT + 0x20 * 16);
}

static void test_paging(void)
{
	if (!paging_setup()) {
		report_skip("private_paging", "5-level paging, or the firmware uses PML4 slot 256");
		return;
	}
	uint64_t f = irq_save(), cr4 = read_cr4();
	struct gate saved = handle_exception(X86_PF, pf_handler);
	faults_catch();
	paging_on();
	test_smep_smap(cr4 & ~(CR4_SMEP | CR4_SMAP | CR4_PKE));
	test_pku(cr4 & ~(CR4_SMEP | CR4_SMAP | CR4_PKE));
	write_cr4(cr4);
	test_pf_during_delivery();
	paging_off();
	faults_release();
	gate_restore(X86_PF, saved);
	irq_restore(f);
}

/* --- XSAVE ---------------------------------------------------------------- */

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static int xsetbv0(uint64_t v)
{
	return TRY(3, "xsetbv" ::"c"(0), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static uint8_t xarea[4096] __attribute__((aligned(64)));

static int xrstor(uint64_t rfbm)
{
	return TRY(3, "xrstor (%0)" ::"D"(xarea), "a"((uint32_t)rfbm), "d"((uint32_t)(rfbm >> 32)) : "memory");
}

/* XCR0 (SDM Vol. 1 13.3, Vol. 2B XSETBV): x87 always, AVX only with SSE,
 * only supported bits, else #GP; XGETBV/XSETBV #UD without CR4.OSXSAVE;
 * CPUID.(0xD,0).EBX is the save area's size for XCR0 as it is now (13.2).
 * XSAVE stores the enabled components and XSTATE_BV; XRSTOR loads them,
 * initializes those whose XSTATE_BV bit is clear, and is #GP for an
 * XSTATE_BV bit outside XCR0 or a reserved header byte (13.8). */
static void test_xsave(void)
{
	if (!(cpuid(1, 0).c & CPUID_1_ECX_XSAVE)) {
		report_skip("xsave", "no XSAVE");
		return;
	}
	uint64_t f = irq_save(), cr4 = read_cr4();
	write_cr4(cr4 & ~CR4_OSXSAVE);
	uint32_t lo, hi;
	int ud_get = TRY(3, "xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	int ud_set = TRY(3, "xsetbv" ::"c"(0), "a"(1), "d"(0));
	write_cr4(cr4 | CR4_OSXSAVE);
	uint64_t xcr0 = xgetbv0();
	struct cpuid d0 = cpuid(0xd, 0), d2 = cpuid(0xd, 2);
	uint64_t supported = ((uint64_t)d0.d << 32) | d0.a;
	bool avx = supported & 4;
	int v3 = xsetbv0(3);
	uint32_t size3 = cpuid(0xd, 0).b;
	int v7 = avx ? xsetbv0(7) : -1;
	uint32_t size7 = cpuid(0xd, 0).b;
	int v0 = xsetbv0(0), v2 = xsetbv0(2), v5 = avx ? xsetbv0(5) : 13;
	uint64_t unsup = 0;
	for (int b = 3; b < 63 && !unsup; b++)
		if (!(supported & (1ull << b)))
			unsup = 1ull << b;
	int vu = xsetbv0(3 | unsup);
	uint64_t after = xgetbv0();

	/* a round trip of YMM0 through the save area */
	static const uint64_t pat[4] = { 0x0123456789abcdefull, 0xfedcba9876543210ull, 0x1111222233334444ull,
					 0x5555666677778888ull };
	uint64_t back[4] = { 0 }, init[4] = { 0 }, bv = 0;
	int vbad_bv = -1, vbad_hdr = -1, vr = -1;
	bool stored = false;
	if (avx && v7 < 0) {
		SetMem(xarea, sizeof(xarea), 0);
		asm volatile("vmovdqu %0, %%ymm0" ::"m"(pat));
		asm volatile("xsave (%0)" ::"D"(xarea), "a"(7), "d"(0) : "memory");
		bv = *(uint64_t *)(xarea + 512);
		stored = !CompareMem(xarea + 160, (void *)pat, 16) &&
			 !CompareMem(xarea + d2.b, (void *)(pat + 2), 16);
		asm volatile("vpxor %%ymm0, %%ymm0, %%ymm0" ::: "memory");
		vr = xrstor(7);
		asm volatile("vmovdqu %%ymm0, %0" : "=m"(back));
		*(uint64_t *)(xarea + 512) = bv & ~4ull;	/* AVX: initialized */
		xrstor(7);
		asm volatile("vmovdqu %%ymm0, %0" : "=m"(init));
		*(uint64_t *)(xarea + 512) = bv | 8;	/* bit 3: not in XCR0 */
		vbad_bv = xrstor(7);
		*(uint64_t *)(xarea + 512) = bv;
		xarea[512 + 20] = 1;			/* reserved header byte */
		vbad_hdr = xrstor(7);
		asm volatile("vpxor %%ymm0, %%ymm0, %%ymm0" ::: "memory");
	}
	xsetbv0(xcr0);
	write_cr4(cr4);
	irq_restore(f);

	report(ud_get == 6 && ud_set == 6, "xgetbv_xsetbv_ud_without_osxsave", "vec %d %d", ud_get, ud_set);
	report(v3 < 0 && v0 == 13 && v2 == 13 && v5 == 13 && vu == 13 && after == (avx ? 7 : 3),
	       "xsetbv_valid_and_invalid", "3: %d, 0: %d, 2: %d, 5: %d, %lx: %d; xcr0 %lx", v3, v0, v2, v5,
	       3 | unsup, vu, after);
	uint32_t want7 = d2.a + d2.b > 576 ? d2.a + d2.b : 576;
	report(size3 == 576 && (!avx || size7 == want7), "cpuid_0xd_size_follows_xcr0",
	       "xcr0 3: %u (want 576), 7: %u (want %u)", size3, size7, avx ? want7 : 0);
	if (!avx) {
		report_skip("xsave_xrstor_ymm", "no AVX");
		return;
	}
	report(v7 < 0 && (bv & 6) == 6 && stored && vr < 0 && !CompareMem(back, (void *)pat, 32),
	       "xsave_xrstor_ymm", "xsetbv 7: %d, xstate_bv %lx, stored %d, xrstor %d, ymm0 %lx..%lx", v7, bv,
	       stored, vr, back[0], back[3]);
	report(init[0] == pat[0] && init[1] == pat[1] && !init[2] && !init[3], "xrstor_inits_cleared_component",
	       "ymm0 %lx %lx %lx %lx", init[0], init[1], init[2], init[3]);
	report(vbad_bv == 13 && vbad_hdr == 13, "xrstor_bad_header_gp", "xstate_bv bit 3: %d, byte 20: %d",
	       vbad_bv, vbad_hdr);
}

/* CR4.FSGSBASE: RDFSBASE is #UD without it; WRFSBASE writes what
 * IA32_FS_BASE reads (SDM Vol. 2B RDFSBASE/WRFSBASE) */
static void test_fsgsbase(void)
{
	if (!(cpuid(7, 0).b & CPUID_7_EBX_FSGSBASE)) {
		report_skip("fsgsbase", "no FSGSBASE");
		return;
	}
	uint64_t f = irq_save(), cr4 = read_cr4(), old = rdmsr(MSR_FS_BASE), v = 0;
	write_cr4(cr4 & ~CR4_FSGSBASE);
	int ud = TRY(5, "rdfsbase %0" : "=a"(v));
	write_cr4(cr4 | CR4_FSGSBASE);
	asm volatile("wrfsbase %0" ::"r"(0x12345000ull));
	uint64_t msr = rdmsr(MSR_FS_BASE);
	asm volatile("rdfsbase %0" : "=r"(v));
	write_cr4(cr4);
	wrmsr(MSR_FS_BASE, old);
	irq_restore(f);
	report(ud == 6 && msr == 0x12345000ull && v == msr, "fsgsbase_cr4_and_msr", "rdfsbase vec %d, msr %lx, reads %lx",
	       ud, msr, v);
}

/* --- MSRs ------------------------------------------------------------------ */

struct msr_case { const char *name; uint32_t msr; uint64_t val; };

/* Written, read back, restored; interrupts off meanwhile (values the
 * firmware must not meet) */
static void test_msr_roundtrip(void)
{
	bool rdtscp = cpuid(0x80000001, 0).d & CPUID_80000001_EDX_RDTSCP;
	const struct msr_case cases[] = {
		{ "msr_star_roundtrip", MSR_STAR, 0x0023001000000000ull },
		{ "msr_lstar_roundtrip", MSR_LSTAR, 0xffff800012345678ull },
		{ "msr_cstar_roundtrip", MSR_CSTAR, 0x00007fff87654321ull },
		{ "msr_sfmask_roundtrip", MSR_SFMASK, 0x47700 },
		{ "msr_kernel_gs_base_roundtrip", MSR_KERNEL_GS_BASE, 0xffff888000001000ull },
		{ "msr_sysenter_cs_roundtrip", MSR_IA32_SYSENTER_CS, 0x10 },
		{ "msr_sysenter_esp_roundtrip", MSR_IA32_SYSENTER_ESP, 0xffffc90000004000ull },
		{ "msr_sysenter_eip_roundtrip", MSR_IA32_SYSENTER_EIP, 0xffffffff81000000ull },
		{ "msr_pat_roundtrip", MSR_IA32_PAT, 0x0007010600070106ull },
		{ "msr_tsc_aux_roundtrip", MSR_TSC_AUX, 0x1234 },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct msr_case *c = &cases[i];
		if (c->msr == MSR_TSC_AUX && !rdtscp) {
			report_skip(c->name, "no RDTSCP");
			continue;
		}
		uint64_t f = irq_save(), old = 0, got = 0;
		int vr = rdmsr_fault(c->msr, &old);
		int vw = wrmsr_fault(c->msr, c->val);
		rdmsr_fault(c->msr, &got);
		uint32_t aux = 0;
		if (c->msr == MSR_TSC_AUX)
			asm volatile("rdtscp" : "=c"(aux)::"rax", "rdx");
		wrmsr_fault(c->msr, old);
		irq_restore(f);
		report(vr < 0 && vw < 0 && got == c->val && (c->msr != MSR_TSC_AUX || aux == c->val), c->name,
		       "read %d write %d, reads %lx%s", vr, vw, got, c->msr == MSR_TSC_AUX ? " (rdtscp too)" : "");
	}
}

static volatile uint64_t fs_target = 0x600dcafe;

/* FS/GS bases take effect; SWAPGS exchanges GS_BASE and KERNEL_GS_BASE;
 * EFER.SCE clear makes SYSCALL #UD; PAT entries of a reserved memory
 * type (2, 3, 8 and up) are #GP (SDM Vol. 3 12.12.2); a reserved EFER bit
 * is #GP. */
static void test_msr_effects(void)
{
	uint64_t f = irq_save(), fs = rdmsr(MSR_FS_BASE), gs = rdmsr(MSR_GS_BASE), kgs = rdmsr(MSR_KERNEL_GS_BASE);
	uint64_t via_fs = 0;
	wrmsr(MSR_FS_BASE, A(&fs_target));
	asm volatile("mov %%fs:0, %0" : "=r"(via_fs));
	wrmsr(MSR_FS_BASE, fs);
	wrmsr(MSR_GS_BASE, 0x1000);
	wrmsr(MSR_KERNEL_GS_BASE, 0x2000);
	asm volatile("swapgs" ::: "memory");
	uint64_t g1 = rdmsr(MSR_GS_BASE), k1 = rdmsr(MSR_KERNEL_GS_BASE);
	asm volatile("swapgs" ::: "memory");
	wrmsr(MSR_GS_BASE, gs);
	wrmsr(MSR_KERNEL_GS_BASE, kgs);

	uint64_t efer = rdmsr(MSR_EFER), pat = rdmsr(MSR_IA32_PAT), e2 = 0;
	int vsce = wrmsr_fault(MSR_EFER, efer & ~EFER_SCE);
	rdmsr_fault(MSR_EFER, &e2);
	/* only with SCE clear: set, it would jump to the firmware's LSTAR */
	int vsys = e2 & EFER_SCE ? -1 : TRY(2, "syscall" ::: "rcx", "r11", "memory");
	wrmsr(MSR_EFER, efer);
	int vpat = wrmsr_fault(MSR_IA32_PAT, (pat & ~0xffull) | 2);
	uint64_t pat_after = rdmsr(MSR_IA32_PAT);
	wrmsr(MSR_IA32_PAT, pat);
	int vres = wrmsr_fault(MSR_EFER, efer | (1ull << 63));
	irq_restore(f);
	report(via_fs == fs_target, "fs_base_takes_effect", "%%fs:0 reads %lx", via_fs);
	report(g1 == 0x2000 && k1 == 0x1000, "swapgs_exchanges_bases", "gs %lx kernel gs %lx", g1, k1);
	report(vsce < 0 && !(e2 & EFER_SCE) && vsys == 6, "efer_sce_clear_syscall_ud", "write %d efer %lx syscall %d",
	       vsce, e2, vsys);
	report(vpat == 13 && pat_after == pat, "pat_reserved_type_gp", "vec %d pat %lx", vpat, pat_after);
	report(vres == 13, "efer_reserved_bit_gp", "vec %d", vres);
}

/* MTRRs: a free variable range made uncacheable over the local APIC's
 * page (already uncached: nothing changes) and back; the default type
 * rewritten as it is; a reserved type is #GP (SDM Vol. 3 12.11). Each
 * other MSR the CPU declares: its value written back. */
static void test_mtrr_misc(void)
{
	if (!(cpuid(1, 0).d & CPUID_1_EDX_MTRR)) {
		report_skip("mtrr_variable_range_roundtrip", "no MTRRs");
	} else {
		uint32_t vcnt = (uint32_t)rdmsr(MSR_IA32_MTRRCAP) & 0xff, free = vcnt;
		for (uint32_t i = 0; i < vcnt && free == vcnt; i++)
			if (!(rdmsr(MSR_IA32_MTRR_PHYSBASE0 + 2 * i + 1) & MTRR_PHYSMASK_VALID))
				free = i;
		if (free == vcnt) {
			report_skip("mtrr_variable_range_roundtrip", "no free variable range");
		} else {
			uint32_t bits = cpuid(0x80000000, 0).a >= 0x80000008 ? cpuid(0x80000008, 0).a & 0xff : 36;
			uint64_t addr_mask = ((1ull << bits) - 1) & ~0xfffull;
			uint32_t mb = MSR_IA32_MTRR_PHYSBASE0 + 2 * free;
			uint64_t f = irq_save(), ob = rdmsr(mb), om = rdmsr(mb + 1), def = rdmsr(MSR_IA32_MTRR_DEF_TYPE);
			uint64_t base = APIC_BASE_DEFAULT | 0, mask = addr_mask | MTRR_PHYSMASK_VALID;
			int vb = wrmsr_fault(mb, base), vm = wrmsr_fault(mb + 1, mask);
			uint64_t gb = rdmsr(mb), gm = rdmsr(mb + 1);
			wrmsr(mb + 1, om);
			wrmsr(mb, ob);
			int vbad = wrmsr_fault(mb, APIC_BASE_DEFAULT | 2);
			wrmsr(mb, ob);
			int vd = wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, def);
			irq_restore(f);
			report(vb < 0 && vm < 0 && gb == base && gm == mask && vd < 0, "mtrr_variable_range_roundtrip",
			       "range %u: %d %d, reads %lx %lx; def type %d", free, vb, vm, gb, gm, vd);
			report(vbad == 13, "mtrr_reserved_type_gp", "vec %d", vbad);
		}
	}
	uint64_t me = 0, me2 = 0;
	if (rdmsr_fault(MSR_IA32_MISC_ENABLE, &me) < 0) {
		int vw = wrmsr_fault(MSR_IA32_MISC_ENABLE, me);
		rdmsr_fault(MSR_IA32_MISC_ENABLE, &me2);
		report(vw < 0 && me2 == me, "misc_enable_write_back", "write %d, %lx then %lx", vw, me, me2);
	} else {
		report_skip("misc_enable_write_back", "no IA32_MISC_ENABLE");
	}
	if (cpuid(0xd, 1).a & CPUID_D_1_EAX_XSAVES) {
		uint64_t xss = 0, got = 1;
		int vr = rdmsr_fault(MSR_IA32_XSS, &xss);
		int vw = wrmsr_fault(MSR_IA32_XSS, xss);
		rdmsr_fault(MSR_IA32_XSS, &got);
		report(vr < 0 && vw < 0 && got == xss, "xss_write_back", "%d %d %lx", vr, vw, got);
	} else {
		report_skip("xss_write_back", "no XSAVES");
	}
	uint64_t t0 = 0, t1 = 0;
	uint64_t f = irq_save();
	t0 = rdtsc();
	int vt = wrmsr_fault(MSR_IA32_TSC, t0 + (1ull << 40));
	t1 = rdtsc();
	wrmsr_fault(MSR_IA32_TSC, t1 - (1ull << 40));
	irq_restore(f);
	report(vt < 0 && t1 - t0 >= (1ull << 40) && t1 - t0 < (1ull << 40) + (1ull << 36), "tsc_write_moves_rdtsc",
	       "write %d, rdtsc moved by %lx", vt, t1 - t0);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_unusual");
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	test_paging();
	faults_catch();
	test_xsave();
	test_fsgsbase();
	test_msr_roundtrip();
	test_msr_effects();
	test_mtrr_misc();
	faults_release();
	report_done();
}
