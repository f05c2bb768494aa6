/*
 * t_fidel: what a guest can tell of a hypervisor below it, checked the way
 * the hardware behaves (issue 25). Each check passes without hvtrace; the
 * differential tier (tests/integration-diff.sh) runs it off, idle, traced
 * with the fast engine and with the reference engine, and every check that
 * passes off must pass the other three ways.
 *
 *  - NMI blocking: an NMI handler that sends itself a second NMI gets it
 *    only after its IRET (SDM Vol. 3 6.7.1; APM Vol. 2 8.2.1).
 *  - INT n in an STI shadow, its handler returning by IRET: no #DB, TF
 *    clear after (the reference engine's single step must not leak),
 *    also through a trap gate and under the firmware's timer; PUSHF
 *    after STI stores the guest's TF.
 *  - A self-IPI with interrupts enabled, and one a lowered TPR lets in,
 *    arrive before the next few instructions (SDM Vol. 3 11.5 / 11.8.3.1:
 *    a deliverable interrupt is taken at the next instruction boundary).
 *  - MTRR writes an OS makes (disable and re-enable, a variable range, a
 *    fixed range) are taken and read back (SDM Vol. 3 12.11).
 *  - The frame-pointer chain the program was started with ends cleanly: a
 *    backtrace walker following RBP meets 0 or a frame it can read.
 *
 * Vectors: FI_IPI (0xd1) and FI_SOFT (0x21) are taken over for the checks
 * and given back. The task priority stays below them.
 */
#include "guest.h"

#define FI_IPI		0xd1
#define FI_SOFT		0x21
/* How many loop iterations an interrupt that is deliverable may take to
 * arrive: the hardware takes it at the next boundary, an emulator at the
 * end of its current block (a handful of instructions). Pacing would hold
 * it for trace.pace branches (10,000 by default). */
#define FI_PROMPT	64
/* STI; INT n; CLI under the timer: enough rounds for its ticks to land
 * anywhere in them (about 1 ms of guest time each traced), few enough for
 * the differential tier's 40 s bound with the firmware traced too */
#define FI_LOOPS	1000

volatile uint64_t fi_nmi_count __attribute__((visibility("hidden")));
volatile uint64_t fi_nmi_depth __attribute__((visibility("hidden")));
volatile uint64_t fi_nmi_max __attribute__((visibility("hidden")));
volatile uint64_t fi_nmi_inside __attribute__((visibility("hidden")));
/* the ICR write the first NMI's handler makes: x2APIC (MSR) or xAPIC */
volatile uint64_t fi_icr_x2 __attribute__((visibility("hidden")));
volatile uint64_t fi_icr_lo_addr __attribute__((visibility("hidden")));
volatile uint64_t fi_icr_hi_addr __attribute__((visibility("hidden")));
volatile uint64_t fi_icr_lo __attribute__((visibility("hidden")));
volatile uint64_t fi_icr_dest __attribute__((visibility("hidden")));
volatile uint64_t fi_db_count __attribute__((visibility("hidden")));
volatile uint64_t fi_db_rip __attribute__((visibility("hidden")));
volatile uint64_t fi_soft_count __attribute__((visibility("hidden")));
volatile uint64_t fi_ipi_count __attribute__((visibility("hidden")));
volatile uint64_t fi_eoi_addr __attribute__((visibility("hidden")));
extern char fi_nmi_handler[] __attribute__((visibility("hidden")));
extern char fi_db_handler[] __attribute__((visibility("hidden")));
extern char fi_soft_handler[] __attribute__((visibility("hidden")));
extern char fi_ipi_handler[] __attribute__((visibility("hidden")));

/*
 * The NMI handler: counted, its nesting depth kept. The first one sends
 * this processor a second NMI (physical destination, its own APIC ID: the
 * self shorthand is for fixed interrupts only, SDM Vol. 3 Table 11-3),
 * then waits, bounded (30,000 rounds: the NMI it sent arrives within a
 * few instructions when nothing blocks it), long enough for that NMI to
 * arrive if nothing blocked it; fi_nmi_inside counts NMIs that came inside the wait.
 * #DB: counted with the RIP it trapped at, TF cleared in the frame so a
 * leaked single step stops after one. The soft interrupt and the IPI:
 * counted (the IPI EOId through fi_eoi_addr, 0 for x2APIC's MSR).
 */
asm(".pushsection .text\n"
    "fi_nmi_handler:\n"
    "	pushq %rax\n"
    "	pushq %rcx\n"
    "	pushq %rdx\n"
    "	incq fi_nmi_count(%rip)\n"
    "	incq fi_nmi_depth(%rip)\n"
    "	movq fi_nmi_depth(%rip), %rax\n"
    "	cmpq fi_nmi_max(%rip), %rax\n"
    "	jbe 1f\n"
    "	movq %rax, fi_nmi_max(%rip)\n"
    "1:	cmpq $1, fi_nmi_count(%rip)\n"
    "	jne 4f\n"
    "	cmpq $0, fi_icr_x2(%rip)\n"
    "	je 2f\n"
    "	movl $0x830, %ecx\n"
    "	movl fi_icr_lo(%rip), %eax\n"
    "	movl fi_icr_dest(%rip), %edx\n"
    "	wrmsr\n"
    "	jmp 3f\n"
    "2:	movq fi_icr_hi_addr(%rip), %rcx\n"
    "	movl fi_icr_dest(%rip), %eax\n"
    "	movl %eax, (%rcx)\n"
    "	movq fi_icr_lo_addr(%rip), %rcx\n"
    "	movl fi_icr_lo(%rip), %eax\n"
    "	movl %eax, (%rcx)\n"
    "3:	movl $30000, %ecx\n"
    "5:	cmpq $1, fi_nmi_count(%rip)\n"
    "	je 6f\n"
    "	incq fi_nmi_inside(%rip)\n"
    "	jmp 4f\n"
    "6:	decl %ecx\n"
    "	jnz 5b\n"
    "4:	decq fi_nmi_depth(%rip)\n"
    "	popq %rdx\n"
    "	popq %rcx\n"
    "	popq %rax\n"
    "	iretq\n"
    "fi_db_handler:\n"
    "	pushq %rax\n"
    "	incq fi_db_count(%rip)\n"
    "	movq 8(%rsp), %rax\n"
    "	movq %rax, fi_db_rip(%rip)\n"
    "	andq $~0x100, 24(%rsp)\n"
    "	popq %rax\n"
    "	iretq\n"
    "fi_soft_handler:\n"
    "	incq fi_soft_count(%rip)\n"
    "	iretq\n"
    "fi_ipi_handler:\n"
    "	pushq %rax\n"
    "	pushq %rcx\n"
    "	pushq %rdx\n"
    "	incq fi_ipi_count(%rip)\n"
    ASM_EOI("fi_eoi_addr")
    "	popq %rdx\n"
    "	popq %rcx\n"
    "	popq %rax\n"
    "	iretq\n"
    ".popsection\n");

static uint32_t own_apic_id(void)
{
	if (x2apic_mode())
		return (uint32_t)rdmsr(X2APIC_MSR(APIC_ID));
	return *xapic_reg(APIC_ID) >> ICR_XAPIC_DEST_SHIFT;
}

static void test_nmi_blocking(void)
{
	bool x2 = x2apic_mode();
	uint32_t id = own_apic_id();
	fi_icr_x2 = x2;
	fi_icr_lo = ICR_DM_NMI | ICR_LEVEL_ASSERT;
	fi_icr_dest = x2 ? id : id << ICR_XAPIC_DEST_SHIFT;
	fi_icr_lo_addr = A(xapic_reg(APIC_ICR_LO));
	fi_icr_hi_addr = A(xapic_reg(APIC_ICR_HI));
	fi_nmi_count = fi_nmi_depth = fi_nmi_max = fi_nmi_inside = 0;

	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_NMI, fi_nmi_handler);
	/* the first NMI, sent from here; its handler sends the second */
	if (x2)
		wrmsr(X2APIC_MSR(APIC_ICR_LO), ((uint64_t)id << 32) | fi_icr_lo);
	else {
		*xapic_reg(APIC_ICR_HI) = (uint32_t)fi_icr_dest;
		*xapic_reg(APIC_ICR_LO) = (uint32_t)fi_icr_lo;
	}
	for (unsigned i = 0; fi_nmi_count < 2 && i < 50000000; i++)
		asm volatile("pause");
	gate_restore(X86_NMI, saved);
	irq_restore(f);
	report(fi_nmi_count == 2, "nmi_second_arrives", "%lu NMIs", fi_nmi_count);
	report(fi_nmi_count == 2 && fi_nmi_max == 1 && fi_nmi_inside == 0, "nmi_blocked_until_iret",
	       "%lu NMIs, nesting depth %lu, %lu inside the first handler", fi_nmi_count, fi_nmi_max,
	       fi_nmi_inside);
}

static void send_self_ipi(void);

/* STI; INT n; CLI with the handler returning by IRET: no #DB anywhere,
 * and TF clear after (a single step leaked into the guest would trap at
 * the instruction after CLI with TF set). Twice: alone, and with a
 * self-IPI pending that the STI lets in after its shadow (SDM Vol. 2B
 * STI): it comes after the INT n (whose gate clears IF) and its
 * handler's IRET, before the CLI. */
static void int_in_sti_shadow(const char *name, bool with_ipi)
{
	fi_db_count = fi_soft_count = fi_ipi_count = 0;
	fi_db_rip = 0;
	fi_eoi_addr = x2apic_mode() ? 0 : A(xapic_reg(APIC_EOI));
	uint64_t f = irq_save(), after;
	struct gate saved[3] = { handle_exception(FI_SOFT, fi_soft_handler),
				 handle_exception(X86_DB, fi_db_handler),
				 handle_exception(FI_IPI, fi_ipi_handler) };
	uint64_t cr8;
	/* task priority 0xc: the IPI (class 0xd) gets in, the firmware's
	 * timer stays out of the way */
	asm volatile("mov %%cr8, %0; mov %1, %%cr8" : "=&r"(cr8) : "r"(0xcull));
	if (with_ipi)
		send_self_ipi();
	asm volatile("sti\n\t"
		     "int $0x21\n\t"
		     "cli\n\t"
		     "nop\n\t"
		     "nop\n\t"
		     "pushfq\n\t"
		     "popq %0"
		     : "=r"(after)::"memory");
	/* a held IPI (traced: paced) is let in here */
	for (unsigned i = 0; with_ipi && !fi_ipi_count && i < 200000; i++)
		asm volatile("sti; nop; cli" ::: "memory");
	asm volatile("mov %0, %%cr8" ::"r"(cr8));
	gate_restore(FI_SOFT, saved[0]);
	gate_restore(X86_DB, saved[1]);
	gate_restore(FI_IPI, saved[2]);
	irq_restore(f);
	report(fi_soft_count == 1 && fi_db_count == 0 && !(after & RFLAGS_TF) && fi_ipi_count == with_ipi, name,
	       "%lu INT n, %lu IPIs, %lu #DB (last at %lx), RFLAGS %lx after", fi_soft_count, fi_ipi_count,
	       fi_db_count, fi_db_rip, after);
}

/* The same many times with the firmware's timer let in (task priority
 * 0), so its interrupts come anywhere in the sequence; and through a trap
 * gate (IF stays set in the handler). */
static void int_in_sti_shadow_under_timer(bool trap_gate)
{
	fi_db_count = fi_soft_count = 0;
	fi_db_rip = 0;
	uint64_t f = irq_save(), after = 0, cr8;
	struct gate saved[2] = { handle_exception(FI_SOFT, fi_soft_handler),
				 handle_exception(X86_DB, fi_db_handler) };
	if (trap_gate)
		idt_base()[FI_SOFT].type |= 1;	/* 0xE -> 0xF: trap gate */
	asm volatile("mov %%cr8, %0; mov %1, %%cr8" : "=&r"(cr8) : "r"(0ull));
	for (unsigned i = 0; i < FI_LOOPS; i++)
		asm volatile("cli\n\t"
			     "sti\n\t"
			     "int $0x21\n\t"
			     "cli\n\t"
			     "nop\n\t"
			     "sti\n\t"
			     "pushfq\n\t"
			     "popq %0\n\t"
			     "orq %0, %1"
			     : "=&r"(after), "+r"(fi_db_rip)::"memory");
	asm volatile("cli; mov %0, %%cr8" ::"r"(cr8));
	gate_restore(FI_SOFT, saved[0]);
	gate_restore(X86_DB, saved[1]);
	irq_restore(f);
	report(fi_soft_count == FI_LOOPS && fi_db_count == 0 && !(fi_db_rip & RFLAGS_TF),
	       trap_gate ? "int_trap_gate_in_sti_shadow_under_timer" : "int_in_sti_shadow_under_timer",
	       "%lu INT n, %lu #DB, RFLAGS seen %lx", fi_soft_count, fi_db_count, fi_db_rip);
}

/* STI; PUSHF, many times: the image PUSHF stores has the guest's TF
 * (clear), not a single step's */
static void sti_pushf(void)
{
	uint64_t f = irq_save(), img = 0, seen = 0;
	for (unsigned i = 0; i < 100; i++)
		asm volatile("cli; sti; pushfq; popq %0; orq %0, %1; cli" : "=&r"(img), "+r"(seen)::"memory");
	irq_restore(f);
	report(!(seen & RFLAGS_TF), "sti_pushf_image_without_tf", "RFLAGS images %lx", seen);
}

static void test_int_in_sti_shadow(void)
{
	sti_pushf();
	int_in_sti_shadow("int_in_sti_shadow_no_single_step", false);
	int_in_sti_shadow("int_in_sti_shadow_with_interrupt_no_single_step", true);
	int_in_sti_shadow_under_timer(false);
	int_in_sti_shadow_under_timer(true);
}

static void send_self_ipi(void)
{
	uint32_t icr = FI_IPI | ICR_LEVEL_ASSERT | ICR_DEST_SELF;
	if (x2apic_mode())
		wrmsr(X2APIC_MSR(APIC_ICR_LO), icr);
	else
		*xapic_reg(APIC_ICR_LO) = icr;
}

/* Loop iterations until the IPI count reaches `want` (bounded) */
static unsigned wait_ipi(uint64_t want, unsigned bound)
{
	unsigned i = 0;
	while (fi_ipi_count < want && i < bound) {
		asm volatile("nop" ::: "memory");
		i++;
	}
	return i;
}

/* A self-IPI with IF set arrives at once; one the TPR holds arrives when
 * the TPR is lowered under it (SDM Vol. 3 11.8.3.1). */
static void test_prompt_interrupts(void)
{
	fi_eoi_addr = x2apic_mode() ? 0 : A(xapic_reg(APIC_EOI));
	fi_ipi_count = 0;
	uint64_t f = irq_save(), cr8;
	struct gate saved = handle_exception(FI_IPI, fi_ipi_handler);
	asm volatile("mov %%cr8, %0" : "=r"(cr8));
	asm volatile("mov %0, %%cr8" ::"r"(0xcull));	/* 0xd1's class 0xd gets in */
	asm volatile("sti" ::: "memory");
	send_self_ipi();
	unsigned n1 = wait_ipi(1, 100000);
	asm volatile("cli" ::: "memory");
	report(fi_ipi_count == 1 && n1 <= FI_PROMPT, "self_ipi_arrives_at_once",
	       "%lu IPIs, after %u iterations", fi_ipi_count, n1);

	asm volatile("mov %0, %%cr8" ::"r"(0xfull));	/* held by the TPR */
	asm volatile("sti" ::: "memory");
	send_self_ipi();
	unsigned held = wait_ipi(2, 2000);
	bool was_held = fi_ipi_count == 1;
	asm volatile("mov %0, %%cr8" ::"r"(0xcull));
	unsigned n2 = wait_ipi(2, 100000);
	asm volatile("cli" ::: "memory");
	report(was_held, "tpr_holds_interrupt", "%lu IPIs after %u iterations", fi_ipi_count, held);
	report(fi_ipi_count == 2 && n2 <= FI_PROMPT, "tpr_lowered_interrupt_arrives_at_once",
	       "%lu IPIs, after %u iterations", fi_ipi_count, n2);
	asm volatile("mov %0, %%cr8" ::"r"(cr8));
	gate_restore(FI_IPI, saved);
	irq_restore(f);
}

/* A free variable MTRR pair (its mask's valid bit clear), or -1 */
static int free_mtrr_pair(uint32_t vcnt)
{
	for (uint32_t i = 0; i < vcnt && i < 16; i++)
		if (!(rdmsr(MSR_IA32_MTRR_PHYSBASE0 + 2 * i + 1) & MTRR_PHYSMASK_VALID))
			return (int)i;
	return -1;
}

/*
 * What Linux's MTRR code does at every processor's bring-up (set_mtrr_state:
 * caches off, MTRRs disabled by a DEF_TYPE of 0, the ranges written, the
 * old DEF_TYPE back): each write taken (no #GP) and read back.
 */
static void test_mtrrs(void)
{
	if (!(cpuid(1, 0).d & CPUID_1_EDX_MTRR)) {
		report_skip("mtrr_disable_and_restore", "no MTRRs");
		return;
	}
	faults_catch();
	uint64_t cap = rdmsr(MSR_IA32_MTRRCAP), def = rdmsr(MSR_IA32_MTRR_DEF_TYPE), got = 0;
	uint64_t f = irq_save();
	uint64_t cr0 = read_cr0();
	/* SDM Vol. 3 12.11.7.2: caches off and flushed around the change */
	asm volatile("mov %0, %%cr0; wbinvd" ::"r"(cr0 | CR0_CD) : "memory");
	int w0 = wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, 0);
	int r0 = rdmsr_fault(MSR_IA32_MTRR_DEF_TYPE, &got);
	int w1 = wrmsr_fault(MSR_IA32_MTRR_DEF_TYPE, def);
	uint64_t back = rdmsr(MSR_IA32_MTRR_DEF_TYPE);
	asm volatile("wbinvd; mov %0, %%cr0" ::"r"(cr0) : "memory");
	irq_restore(f);
	report(w0 < 0 && r0 < 0 && got == 0 && w1 < 0 && back == def, "mtrr_disable_and_restore",
	       "write 0: %d, read %lx, restore: %d, now %lx (was %lx)", w0, got, w1, back, def);

	int pair = free_mtrr_pair(MTRRCAP_VCNT(cap));
	if (pair < 0) {
		report_skip("mtrr_variable_range_write", "no free variable MTRR");
	} else {
		uint32_t b = MSR_IA32_MTRR_PHYSBASE0 + 2 * (uint32_t)pair;
		/* 64 KiB write-through at 64 MiB, then not valid again */
		uint64_t base = (64ull << 20) | 4, mask = (~0xffffull & 0xfffffffffull) | MTRR_PHYSMASK_VALID;
		int wb = wrmsr_fault(b, base), wm = wrmsr_fault(b + 1, mask);
		uint64_t rb = rdmsr(b), rm = rdmsr(b + 1);
		int wc = wrmsr_fault(b + 1, 0), wd = wrmsr_fault(b, 0);
		report(wb < 0 && wm < 0 && rb == base && rm == mask && wc < 0 && wd < 0 && rdmsr(b + 1) == 0,
		       "mtrr_variable_range_write", "pair %d: %d %d, read %lx %lx, cleared %d %d", pair, wb,
		       wm, rb, rm, wc, wd);
	}
	if (!(cap & (1ull << 8))) {
		report_skip("mtrr_fixed_range_write", "no fixed-range MTRRs");
	} else {
		uint64_t fx = rdmsr(MSR_IA32_MTRR_FIX4K_F8000);
		/* the last byte (0xff000-0xfffff) write-protected, then back */
		uint64_t nv = (fx & ~(0xffull << 56)) | (5ull << 56);
		int w = wrmsr_fault(MSR_IA32_MTRR_FIX4K_F8000, nv);
		uint64_t r = rdmsr(MSR_IA32_MTRR_FIX4K_F8000);
		int wr = wrmsr_fault(MSR_IA32_MTRR_FIX4K_F8000, fx);
		report(w < 0 && r == nv && wr < 0 && rdmsr(MSR_IA32_MTRR_FIX4K_F8000) == fx,
		       "mtrr_fixed_range_write", "write %d, read %lx (wrote %lx), restore %d", w, r, nv, wr);
	}
	faults_release();
}

/*
 * A backtrace walker as an assertion handler has one: from this frame up,
 * each saved RBP must be 0 (the chain's end) or an 8-byte aligned,
 * canonical address above the last frame (the stack grows down). The
 * firmware starting the program directly gives such a chain; the loader
 * between them must not hand over an RBP that is something else (it did:
 * a pointer into its own data, whose next "frame" held ASCII).
 */
static void __attribute__((noinline)) test_frame_chain(void)
{
	uint64_t fp;
	asm volatile("mov %%rbp, %0" : "=r"(fp));
	unsigned n = 0;
	bool ok = true;
	const char *why = "ends at 0";
	while (n < 64) {
		uint64_t next = *(volatile uint64_t *)fp;
		report_info("frame %u at %lx: saved RBP %lx, return %lx", n, fp, next, ((volatile uint64_t *)fp)[1]);
		n++;
		if (next == 0)
			break;
		if ((next & 7) || (uint64_t)((int64_t)(next << 16) >> 16) != next) {
			ok = false;
			why = "a saved RBP neither 0 nor an aligned canonical address";
			break;
		}
		if (next <= fp) {
			why = "ends at a frame below the last";
			break;
		}
		fp = next;
	}
	report(ok, "frame_chain_ends_cleanly", "%u frames, %s", n, why);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	guest_init(image, st, "t_fidel");
	test_frame_chain();
	test_int_in_sti_shadow();
	test_prompt_interrupts();
	test_nmi_blocking();
	test_mtrrs();
	report_done();
}
