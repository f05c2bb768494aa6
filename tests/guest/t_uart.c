/*
 * t_uart: the hypervisor's own log UART (hvtrace.cfg `serial = 0x2e8`,
 * hidden by default: docs/config.md) is no device to the guest. Its eight
 * ports read all ones in every width, a write to the scratch register does
 * not read back, LSR reads 0xFF (Linux's 8250 probe: no UART), and the
 * string forms behave the same: REP INSB/INSW/INSD store all ones into the
 * destination and nothing else (either direction, 32-bit address size),
 * REP OUTSB reads its source and sends nothing (the runner's log must not
 * show UART-LEAK), a non-canonical address gets #GP(0), a destination or
 * source page that is read-only or not present gets #PF with CR2 and the
 * error code after the elements before it (a REP with a huge RCX included),
 * all with the registers the processor would leave. COM1 (the console)
 * stays a real UART.
 *
 * cmdline words: `shown` (serial.hide = no): the same port is then a real
 * UART to the guest (its scratch register reads back): the check that the
 * hiding is the hypervisor's doing. `traced` (a recorder with trace.start =
 * hypercall): the same checks while the engine traces, tracing started by
 * a hypercall before them and stopped by one after, so that the
 * hypervisor logs after the guest reprogrammed
 * "its" UART (loopback, divisor latch) and the runner can see the
 * hypervisor's lines still arrive. `native`: every check on port 0x3e8
 * instead, where QEMU has no device and the processor itself (not the
 * hypervisor, which does not intercept it) answers: the same results there
 * say the hypervisor's emulation is the processor's.
 */
#include "guest.h"
#include "arch/x86/uart.h"
#include "hvtrace/abi.h"

/* the runner's `serial` (tests/lib/runner.sh), or with `native` a port
 * with no device that nothing intercepts */
static uint16_t PORT = 0x2e8;
#define WIN	0x0000200000000000ull	/* PML4 slot 64: the test's own mappings */

volatile uint64_t pf_error, pf_cr2;
void trap_pf(void);
/* #PF: record the error code and CR2, skip the faulting instruction by
 * fault_skip bytes (faults.S's convention) */
asm(".text\n"
    "trap_pf:\n"
    "	pushq %rax\n"
    "	movq 8(%rsp), %rax\n"
    "	movq %rax, pf_error(%rip)\n"
    "	movq %cr2, %rax\n"
    "	movq %rax, pf_cr2(%rip)\n"
    "	movq $14, %rax\n"
    "	movq %rax, fault_vector(%rip)\n"
    "	movq fault_skip(%rip), %rax\n"
    "	addq %rax, 16(%rsp)\n"
    "	popq %rax\n"
    "	addq $8, %rsp\n"
    "	iretq\n");

static uint8_t buf[256] __attribute__((aligned(64)));
static uint8_t win_page[3][4096] __attribute__((aligned(4096)));
static uint64_t win_pdpt[512] __attribute__((aligned(4096)));
static uint64_t win_pd[512] __attribute__((aligned(4096)));
static uint64_t win_pt[512] __attribute__((aligned(4096)));

/* how many bytes of buf differ from 0xee outside [lo, hi), and inside it
 * from 0xff */
static unsigned buf_wrong(unsigned lo, unsigned hi)
{
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(buf); i++)
		n += buf[i] != (i >= lo && i < hi ? 0xff : 0xee);
	return n;
}

static void test_ports(void)
{
	unsigned odd = 0;
	for (unsigned i = 0; i < UART_NR_PORTS; i++)
		odd += inb(PORT + i) != 0xff;
	report(!odd, "uart_ports_read_ff", "%u of 8 ports read something else", odd);
	outb(PORT + UART_SCR, 0x5a);
	uint8_t scr = inb(PORT + UART_SCR);
	report(scr == 0xff, "uart_scratch_not_kept", "scratch reads %x after 5a", scr);
	report(inb(PORT + UART_LSR) == 0xff, "uart_lsr_ff", NULL);
	uint16_t w;
	uint32_t l;
	asm volatile("inw %1, %0" : "=a"(w) : "Nd"((uint16_t)PORT));
	asm volatile("inl %1, %0" : "=a"(l) : "Nd"((uint16_t)PORT));
	report(w == 0xffff && l == 0xffffffffu, "uart_word_dword_ff", "inw %x inl %x", w, l);
	/* IN AL keeps RAX's other bits; IN EAX clears bits 63:32 (SDM Vol. 1 3.4.1.1) */
	uint64_t a = 0x1122334455667700ull, b = 0x1122334455667700ull;
	asm volatile("inb %%dx, %%al" : "+a"(a) : "d"((uint16_t)PORT));
	asm volatile("inl %%dx, %%eax" : "+a"(b) : "d"((uint16_t)PORT));
	report(a == 0x11223344556677ffull && b == 0xffffffffull, "uart_in_rax_bits", "inb %lx inl %lx", a, b);
	/* what Linux's probe and a hostile guest would write: none of it may
	 * reach the hypervisor's UART (the runner checks its lines go on) */
	outb(PORT + UART_MCR, 0x10);			/* loopback */
	outb(PORT + UART_LCR, UART_LCR_DLAB);		/* divisor latch */
	outb(PORT + UART_DLL, 0x60);
	outb(PORT + UART_IER, 0x0f);
	outb(PORT + UART_FCR, 0);
	report(inb(PORT + UART_LCR) == 0xff && inb(PORT + UART_MCR) == 0xff, "uart_setup_not_kept", NULL);
	static const char leak[] = "UART-LEAK-OUTB\n";
	for (unsigned i = 0; i < sizeof(leak) - 1; i++)
		outb(PORT + UART_THR, (uint8_t)leak[i]);
	report(inb(UART_COM1 + UART_LSR) != 0xff, "com1_still_a_uart", "COM1's LSR %x", inb(UART_COM1 + UART_LSR));
}

static void test_string(void)
{
	uint64_t d, c, s;
	int f;

	SetMem(buf, sizeof(buf), 0xee);
	d = A(buf + 16), c = 32;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == -1 && d == A(buf + 48) && !c && !buf_wrong(16, 48), "uart_rep_insb",
	       "fault %d rdi +%lu rcx %lu, %u bytes wrong", f, d - A(buf), c, buf_wrong(16, 48));

	SetMem(buf, sizeof(buf), 0xee);
	d = A(buf + 100), c = 0;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == -1 && d == A(buf + 100) && !buf_wrong(0, 0), "uart_rep_insb_rcx_0", NULL);

	/* DF = 1: downwards, the element at RDI first */
	SetMem(buf, sizeof(buf), 0xee);
	d = A(buf + 40), c = 8;
	f = TRY(4, "std; rep insb; cld" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	asm volatile("cld");
	report(f == -1 && d == A(buf + 32) && !c && !buf_wrong(33, 41), "uart_rep_insb_down",
	       "fault %d rdi +%ld rcx %lu, %u bytes wrong", f, (int64_t)(d - A(buf)), c, buf_wrong(33, 41));

	SetMem(buf, sizeof(buf), 0xee);
	d = A(buf + 8);
	f = TRY(2, "insw" : "+D"(d) : "d"((uint16_t)PORT) : "memory");
	report(f == -1 && d == A(buf + 10) && !buf_wrong(8, 10), "uart_insw", NULL);

	/* 67h: EDI and ECX, written back zero-extended */
	if (A(buf) >> 32) {
		report_skip("uart_rep_insd_addr32", "the buffer is above 4 GiB");
	} else {
		SetMem(buf, sizeof(buf), 0xee);
		d = (0xdeadull << 32) | A(buf + 64), c = (0xbeefull << 32) | 4;
		f = TRY(3, "addr32 rep insl" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
		report(f == -1 && d == A(buf + 80) && !c && !buf_wrong(64, 80), "uart_rep_insd_addr32",
		       "fault %d rdi %lx rcx %lx, %u bytes wrong", f, d, c, buf_wrong(64, 80));
	}

	/* OUTS reads its source and sends nothing */
	static char src[] = "UART-LEAK-OUTSB\n";
	s = A(src), c = sizeof(src) - 1;
	f = TRY(2, "rep outsb" : "+S"(s), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == -1 && s == A(src) + sizeof(src) - 1 && !c, "uart_rep_outsb", "fault %d rcx %lu", f, c);

	/* a non-canonical address: #GP(0) before any element */
	d = 0x8000000000000000ull, c = 4;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == 13 && !fault_error && d == 0x8000000000000000ull && c == 4, "uart_insb_noncanonical_gp",
	       "fault %d error %lx rcx %lu", f, fault_error, c);
	s = 0x0000800000000000ull, c = ~0ull;
	f = TRY(2, "rep outsb" : "+S"(s), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == 13 && s == 0x0000800000000000ull && c == ~0ull, "uart_outsb_noncanonical_gp",
	       "fault %d rcx %lx", f, c);
}

/* The window at WIN: page 0 read-write, 1 read-only, 2 not present, 3
 * read-write (win_page[2]); false (skipped) with 5-level paging or the
 * PML4 slot in use */
static bool win_map(bool on)
{
	uint64_t cr0, cr3, cr4;
	asm volatile("mov %%cr0, %0; mov %%cr3, %1; mov %%cr4, %2" : "=r"(cr0), "=r"(cr3), "=r"(cr4));
	uint64_t *pml4 = (uint64_t *)(uintptr_t)(cr3 & PTE_ADDR_MASK), *slot = &pml4[(WIN >> 39) & 511];
	if (on && ((cr4 & CR4_LA57) || (*slot & PTE_P)))
		return false;
	SetMem(win_pt, sizeof(win_pt), 0);
	win_pt[0] = A(win_page[0]) | PTE_P | PTE_RW;
	win_pt[1] = A(win_page[1]) | PTE_P;
	win_pt[3] = A(win_page[2]) | PTE_P | PTE_RW;
	win_pd[0] = A(win_pt) | PTE_P | PTE_RW;
	win_pdpt[0] = A(win_pd) | PTE_P | PTE_RW;
	asm volatile("mov %0, %%cr0" ::"r"(cr0 & ~CR0_WP));	/* the firmware's tables may be read-only */
	*slot = on ? A(win_pdpt) | PTE_P | PTE_RW : 0;
	asm volatile("mov %0, %%cr0; mov %1, %%cr3" ::"r"(cr0), "r"(cr3) : "memory");
	return true;
}

static unsigned page_wrong(int p, unsigned lo, unsigned hi)
{
	unsigned n = 0;
	for (unsigned i = 0; i < 4096; i++)
		n += win_page[p][i] != (i >= lo && i < hi ? 0xff : 0xee);
	return n;
}

static void test_faults(void)
{
	SetMem(win_page, sizeof(win_page), 0xee);
	if (!win_map(true)) {
		report_skip("uart_string_page_faults", "5-level paging, or PML4 slot 64 in use");
		return;
	}
	struct gate old = handle_exception(X86_PF, trap_pf);
	uint64_t d, c, s;
	int f;

	/* a huge count: the last 16 bytes of page 0, then #PF (P|W) at the
	 * read-only page 1, with RDI and RCX where the processor leaves them */
	d = WIN + 4096 - 16, c = ~0ull;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == 14 && pf_error == (PF_ERR_P | PF_ERR_W) && pf_cr2 == WIN + 4096 && d == WIN + 4096 &&
		       c == ~0ull - 16 && !page_wrong(0, 4080, 4096) && !page_wrong(1, 0, 0),
	       "uart_rep_insb_huge_rcx_pf", "fault %d error %lx cr2 %lx rdi %lx rcx %lx, %u+%u bytes wrong", f,
	       pf_error, pf_cr2, d, c, page_wrong(0, 4080, 4096), page_wrong(1, 0, 0));

	/* not present: #PF with W and not P, nothing written */
	d = WIN + 2 * 4096 + 8, c = 8;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == 14 && pf_error == PF_ERR_W && pf_cr2 == WIN + 2 * 4096 + 8 && c == 8,
	       "uart_rep_insb_not_present_pf", "fault %d error %lx cr2 %lx rcx %lx", f, pf_error, pf_cr2, c);

	/* an element across the page boundary into the read-only page:
	 * neither half written */
	SetMem(win_page, sizeof(win_page), 0xee);
	d = WIN + 4096 - 2;
	f = TRY(1, "insl" : "+D"(d) : "d"((uint16_t)PORT) : "memory");
	report(f == 14 && pf_error == (PF_ERR_P | PF_ERR_W) && d == WIN + 4096 - 2 && !page_wrong(0, 0, 0),
	       "uart_insl_across_pages_pf", "fault %d error %lx cr2 %lx", f, pf_error, pf_cr2);

	/* OUTS reads through pages 0 and 1 (read-only is readable), then
	 * #PF (read, not present) at page 2 */
	s = WIN + 4096 - 16, c = ~0ull;
	f = TRY(2, "rep outsb" : "+S"(s), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == 14 && pf_error == 0 && pf_cr2 == WIN + 2 * 4096 && s == WIN + 2 * 4096 &&
		       c == ~0ull - 16 - 4096,
	       "uart_rep_outsb_huge_rcx_pf", "fault %d error %lx cr2 %lx rsi %lx rcx %lx", f, pf_error, pf_cr2, s,
	       c);

	/* page 3 (win_page[2]) filled whole by one REP of 4096 */
	d = WIN + 3 * 4096, c = 4096;
	f = TRY(2, "rep insb" : "+D"(d), "+c"(c) : "d"((uint16_t)PORT) : "memory");
	report(f == -1 && !c && d == WIN + 4 * 4096 && !page_wrong(2, 0, 4096), "uart_rep_insb_page",
	       "fault %d rcx %lu, %u bytes wrong", f, c, page_wrong(2, 0, 4096));

	gate_restore(X86_PF, old);
	win_map(false);
}

/* whether the cmdline has `w` as one of its words */
static bool has(const char *w)
{
	const char *a = guest_args();
	for (;;) {
		unsigned n = 0;
		while (w[n] && a[n] == w[n])
			n++;
		if (!w[n] && (a[n] == ' ' || !a[n]))
			return true;
		while (*a && *a != ' ')
			a++;
		if (!*a++)
			return false;
	}
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_uart");
	require_hvtrace();
	bool shown = has("shown"), traced = has("traced");
	if (has("native"))
		PORT = 0x3e8;
	if (shown) {
		/* serial.hide = no: the hypervisor's port is the guest's too */
		outb(PORT + UART_SCR, 0x5a);
		uint8_t scr = inb(PORT + UART_SCR);
		report(scr == 0x5a, "uart_shown_scratch_kept", "scratch reads %x after 5a", scr);
		report_done();
	}
	uint64_t op = HVTRACE_TRACE_START, val = 0;
	if (traced)
		report(hypercall(HVTRACE_HC_TRACE_CTL, &op, &val) == 0, "uart_traced_start", NULL);
	faults_catch();
	test_ports();
	test_string();
	test_faults();
	faults_release();
	if (traced) {
		op = HVTRACE_TRACE_STOP, val = 0;
		report(hypercall(HVTRACE_HC_TRACE_CTL, &op, &val) == 0, "uart_traced_stop", NULL);
	}
	report_done();
}
