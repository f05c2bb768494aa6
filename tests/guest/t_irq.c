/*
 * t_irq: an external interrupt the hypervisor injects reaches the guest
 * once, as the hardware delivers one (Intel SDM Vol. 3 6.8.1, AMD APM
 * Vol. 2 8.7.1: never while RFLAGS.IF is clear).
 *
 * Run where this processor's interrupts go through the hypervisor, which
 * acknowledges each in root mode and injects it: the channel's watcher
 * (channel.control = poll, vCPU 0; tests/integration.sh svm-irq-once).
 * With IF clear a self-IPI of vector IRQ_X waits; STI lets it exit, the
 * hypervisor injects it, and its handler stays (IF clear) X_MS
 * milliseconds. Meanwhile the 8254's channel 0 ticks every millisecond
 * and raises IRQ 0 at the 8259, whose INTR reaches this processor through
 * LINT0 in ExtINT mode: QEMU's main loop, another thread, wakes this
 * processor's thread for each without polling its local APIC, and QEMU's
 * TCG then
 * delivered the injected vector a second time, nested in its own handler
 * (hv/svm/svm.c svm_tcg_injection_quirk). The firmware's own timer (the
 * local APIC's) is masked meanwhile: the local APIC's poll would hide it.
 * IRQ_X's handler must run once, never nested in itself, and the 8259's
 * interrupt must have come (so the check could fail).
 *
 * The 8259 pair is reprogrammed (vectors PIC_BASE.., IRQ 0 alone
 * unmasked) and set back to OVMF's vectors (0x68, 0x70) and masks after.
 *
 * A lower level of the 8259 is not starved by a higher one that is
 * always pending again (irq_8259_lower_level_not_starved): the 8254
 * ticks every millisecond at level 0 and the RTC's periodic interrupt
 * (1024 Hz) comes at the slave's level 0, below it; both must be taken
 * several times. Traced, the tick is always pending again by the time a
 * paced interrupt's handler ends, and with its in-service bit held at the
 * 8259 meanwhile the RTC's was never acknowledged (tests/integration.sh
 * svm-irq-8259-traced; hv/dispatch/irq.c release_8259).
 *
 * Every in-service bit ends (irq_isr_balanced): the local APIC timer ticks
 * at the high vector IRQ_H, periodic and faster than its handler (which
 * waits H_US) returns, while the main loop sends itself the lower vector
 * IRQ_L again and again and takes each at an STI. Traced, the tick is
 * paced and held (acknowledged at the APIC, its in-service bit set) while
 * IRQ_L, unpaced, goes first; IRQ_L's EOI then ends the tick's bit, not
 * its own, and the tick came again while still held: the hypervisor must
 * merge the two as the IRR would (hv/dispatch/irq.c merge_held). Before it
 * one bit stayed in service for ever and every vector of its class and
 * below was blocked (Debian's traced boot lost its serial port's
 * interrupt so). After the timer stops: no bit in service, and one more
 * IRQ_L arrives.
 */
#include "guest.h"

#define IRQ_X 0xd1
#define PIC_BASE 0x40
#define X_MS 300
#define PIT_COUNT 1193	/* 1 ms at 1.193182 MHz */
#define IRQ_H 0xe3
#define IRQ_L 0x53
#define H_US 200
#define L_ROUNDS 20

volatile uint64_t x_count __attribute__((visibility("hidden")));
volatile uint64_t x_depth __attribute__((visibility("hidden")));
volatile uint64_t x_max __attribute__((visibility("hidden")));
volatile uint64_t x_until __attribute__((visibility("hidden")));
volatile uint64_t z_count __attribute__((visibility("hidden")));
volatile uint64_t eoi_addr __attribute__((visibility("hidden")));
volatile uint64_t rtc_count __attribute__((visibility("hidden")));
extern char irq_x_handler[] __attribute__((visibility("hidden")));
extern char irq_z_handler[] __attribute__((visibility("hidden")));
extern char irq_rtc_handler[] __attribute__((visibility("hidden")));
volatile uint64_t h_count __attribute__((visibility("hidden")));
volatile uint64_t h_ticks __attribute__((visibility("hidden")));	/* the handler's wait, in TSC ticks */
volatile uint64_t l_count __attribute__((visibility("hidden")));
volatile uint64_t hl_eoi __attribute__((visibility("hidden")));	/* xAPIC EOI register, 0: x2APIC */
extern char irq_h_handler[] __attribute__((visibility("hidden")));
extern char irq_l_handler[] __attribute__((visibility("hidden")));

/* IRQ_X: counted, its nesting depth kept; waits (bounded) for the TSC to
 * reach x_until, then EOI to the local APIC. No PAUSE in the wait: QEMU's
 * TCG leaves its execution loop at one (helper_pause), which hides the
 * bug. The 8259's IRQ 0: counted, EOI to the 8259. */
asm(".pushsection .text\n"
    "irq_x_handler:\n"
    "	pushq %rax\n"
    "	pushq %rcx\n"
    "	pushq %rdx\n"
    "	incq x_count(%rip)\n"
    "	incq x_depth(%rip)\n"
    "	movq x_depth(%rip), %rax\n"
    "	cmpq x_max(%rip), %rax\n"
    "	jbe 1f\n"
    "	movq %rax, x_max(%rip)\n"
    "1:	movl $400000000, %ecx\n"
    "2:	decl %ecx\n"
    "	jz 3f\n"
    "	rdtsc\n"
    "	shlq $32, %rdx\n"
    "	orq %rdx, %rax\n"
    "	cmpq x_until(%rip), %rax\n"
    "	jb 2b\n"
    "3:	decq x_depth(%rip)\n"
    "	movq eoi_addr(%rip), %rax\n"
    "	movl $0, (%rax)\n"
    "	popq %rdx\n"
    "	popq %rcx\n"
    "	popq %rax\n"
    "	iretq\n"
    "irq_z_handler:\n"
    "	pushq %rax\n"
    "	incq z_count(%rip)\n"
    "	movb $0x20, %al\n"
    "	outb %al, $0x20\n"
    "	popq %rax\n"
    "	iretq\n"
    "irq_rtc_handler:\n"
    "	pushq %rax\n"
    "	incq rtc_count(%rip)\n"
    "	movb $0x0c, %al\n"	/* the RTC's register C: reading it ends the interrupt */
    "	outb %al, $0x70\n"
    "	inb $0x71, %al\n"
    "	movb $0x20, %al\n"
    "	outb %al, $0xa0\n"
    "	outb %al, $0x20\n"
    "	popq %rax\n"
    "	iretq\n"
    /* IRQ_H: counted, waits h_ticks (bounded), EOI; IRQ_L: counted, EOI */
    "irq_h_handler:\n"
    "	pushq %rax\n"
    "	pushq %rcx\n"
    "	pushq %rdx\n"
    "	pushq %rsi\n"
    "	incq h_count(%rip)\n"
    "	rdtsc\n"
    "	shlq $32, %rdx\n"
    "	orq %rdx, %rax\n"
    "	movq %rax, %rsi\n"
    "	addq h_ticks(%rip), %rsi\n"
    "	movl $100000, %ecx\n"
    "4:	pushq %rcx\n"
    "	rdtsc\n"
    "	popq %rcx\n"
    "	shlq $32, %rdx\n"
    "	orq %rdx, %rax\n"
    "	cmpq %rsi, %rax\n"
    "	jae 5f\n"
    "	decl %ecx\n"
    "	jnz 4b\n"
    "5:\n"
    ASM_EOI("hl_eoi")
    "	popq %rsi\n"
    "	popq %rdx\n"
    "	popq %rcx\n"
    "	popq %rax\n"
    "	iretq\n"
    "irq_l_handler:\n"
    "	pushq %rax\n"
    "	pushq %rcx\n"
    "	pushq %rdx\n"
    "	incq l_count(%rip)\n"
    ASM_EOI("hl_eoi")
    "	popq %rdx\n"
    "	popq %rcx\n"
    "	popq %rax\n"
    "	iretq\n"
    ".popsection\n");

/* The 8259 pair: ICW1-4 (edge, cascade on IRQ 2, 8086 mode), then masks */
static void pic_setup(uint8_t base1, uint8_t base2, uint8_t mask1, uint8_t mask2)
{
	outb(0x20, 0x11), outb(0x21, base1), outb(0x21, 0x04), outb(0x21, 0x01);
	outb(0xa0, 0x11), outb(0xa1, base2), outb(0xa1, 0x02), outb(0xa1, 0x01);
	outb(0x21, mask1), outb(0xa1, mask2);
}

static uint8_t cmos_read(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static void cmos_write(uint8_t reg, uint8_t v)
{
	outb(0x70, reg);
	outb(0x71, v);
}

static void pit_periodic(uint16_t count)
{
	outb(0x43, 0x34);	/* channel 0, low then high byte, mode 2 (periodic) */
	outb(0x40, count & 0xff);
	outb(0x40, count >> 8);
}

static void test_lower_level_not_starved(void)
{
	if (x2apic_mode()) {
		report_skip("irq_8259_lower_level_not_starved", "the local APIC is in x2APIC mode");
		return;
	}
	uint64_t fl = irq_save();
	struct gate g0 = handle_exception(PIC_BASE, irq_z_handler), g8 = handle_exception(PIC_BASE + 8, irq_rtc_handler);
	uint8_t mask1 = inb(0x21), mask2 = inb(0xa1);
	uint32_t lint0 = *xapic_reg(APIC_LVT_LINT0), lvtt = *xapic_reg(APIC_LVTT);
	*xapic_reg(APIC_LVTT) = lvtt | LVT_MASKED;
	*xapic_reg(APIC_LVT_LINT0) = LVT_DM_EXTINT;
	pic_setup(PIC_BASE, PIC_BASE + 8, 0xfa, 0xfe);	/* IRQ 0, the cascade, IRQ 8 */
	uint8_t rtc_a = cmos_read(0x0a), rtc_b = cmos_read(0x0b);
	cmos_write(0x0a, (rtc_a & 0xf0) | 6);	/* 1024 Hz */
	cmos_write(0x0b, rtc_b | 0x40);		/* periodic interrupt on */
	cmos_read(0x0c);
	z_count = rtc_count = 0;
	pit_periodic(PIT_COUNT);
	/* at least 50 ms and 200,000 rounds: traced, a paced interrupt comes
	 * about every trace.pace rounds */
	uint64_t t0 = rdtsc(), t10 = 0;
	uefi_call_wrapper(BS->Stall, 1, 10000);
	t10 = rdtsc() - t0;
	t0 = rdtsc();
	for (uint64_t i = 0; rtc_count < 3 || z_count < 3; i++) {
		asm volatile("sti; nop; nop; cli" ::: "memory");
		if (i >= 200000 && rdtsc() - t0 >= 5 * t10)
			break;
	}
	cmos_write(0x0b, rtc_b & ~0x40);
	cmos_write(0x0a, rtc_a);
	cmos_read(0x0c);
	pic_setup(0x68, 0x70, mask1, mask2);
	*xapic_reg(APIC_LVT_LINT0) = lint0;
	*xapic_reg(APIC_LVTT) = lvtt;
	gate_restore(PIC_BASE, g0);
	gate_restore(PIC_BASE + 8, g8);
	irq_restore(fl);
	report(rtc_count >= 3 && z_count >= 3, "irq_8259_lower_level_not_starved",
	       "the RTC's IRQ 8 taken %lu times, the 8254's IRQ 0 %lu times", rtc_count, z_count);
}

static void test_injected_once(void)
{
	if (x2apic_mode()) {
		report_skip("injected_interrupt_delivered_once", "the local APIC is in x2APIC mode");
		return;
	}
	uint64_t fl = irq_save();
	struct gate gx = handle_exception(IRQ_X, irq_x_handler), gz = handle_exception(PIC_BASE, irq_z_handler);
	eoi_addr = (uint64_t)(uintptr_t)xapic_reg(APIC_EOI);
	uint8_t mask1 = inb(0x21), mask2 = inb(0xa1);
	uint32_t lint0 = *xapic_reg(APIC_LVT_LINT0), lvtt = *xapic_reg(APIC_LVTT);
	*xapic_reg(APIC_LVTT) = lvtt | LVT_MASKED;
	*xapic_reg(APIC_LVT_LINT0) = LVT_DM_EXTINT;
	pic_setup(PIC_BASE, PIC_BASE + 8, 0xfe, 0xff);

	uint64_t t0 = rdtsc();
	uefi_call_wrapper(BS->Stall, 1, 10000);
	x_until = rdtsc() + (rdtsc() - t0) * X_MS / 10;
	pit_periodic(PIT_COUNT);
	*xapic_reg(APIC_ICR_LO) = IRQ_X | ICR_DM_FIXED | ICR_LEVEL_ASSERT | ICR_DEST_SELF;
	/* IRQ_X comes here, its handler waits; then the 8259's */
	for (int i = 0; i < 1000000 && (!x_count || !z_count); i++)
		asm volatile("sti; nop; nop; cli" ::: "memory");

	pic_setup(0x68, 0x70, mask1, mask2);
	*xapic_reg(APIC_LVT_LINT0) = lint0;
	*xapic_reg(APIC_LVTT) = lvtt;
	gate_restore(IRQ_X, gx);
	gate_restore(PIC_BASE, gz);
	irq_restore(fl);
	report(z_count >= 1, "irq_8259_delivered", "vector %x taken %lu times", PIC_BASE, z_count);
	report(x_count == 1 && x_max == 1, "injected_interrupt_delivered_once",
	       "vector %x taken %lu times, nested %lu deep", IRQ_X, x_count, x_max);
}

/* IRQ_L to this processor, and the loop that takes it (IF open at an STI) until its handler ran:
 * true when it did within the bound */
static bool self_l(void)
{
	uint64_t before = l_count;
	apic_reg_write(APIC_ICR_LO, IRQ_L | ICR_DM_FIXED | ICR_LEVEL_ASSERT | ICR_DEST_SELF);
	for (int i = 0; i < 30000 && l_count == before; i++)
		asm volatile("sti; nop; nop; cli" ::: "memory");
	return l_count != before;
}

static void test_isr_balanced(void)
{
	uint64_t fl = irq_save();
	struct gate gh = handle_exception(IRQ_H, irq_h_handler), gl = handle_exception(IRQ_L, irq_l_handler);
	hl_eoi = x2apic_mode() ? 0 : (uint64_t)(uintptr_t)xapic_reg(APIC_EOI);
	uint32_t lvtt = apic_reg_read(APIC_LVTT), tdcr = apic_reg_read(APIC_TDCR), tmict = apic_reg_read(APIC_TMICT);
	uint64_t t0 = rdtsc();
	uefi_call_wrapper(BS->Stall, 1, 1000);
	h_ticks = (rdtsc() - t0) * H_US / 1000;
	h_count = l_count = 0;
	/* the timer's period: H_US / 2 at QEMU's and Bochs's 1 GHz APIC clock (divide by 1) */
	apic_reg_write(APIC_TMICT, 0);
	apic_reg_write(APIC_TDCR, 0xb);
	apic_reg_write(APIC_LVTT, IRQ_H | LVT_TIMER_PERIODIC);
	apic_reg_write(APIC_TMICT, H_US * 1000 / 2);
	/* L_ROUNDS, and on until the timer came a few times (untraced 20 rounds are a few ticks) */
	unsigned missed = 0, rounds = 0;
	for (; rounds < L_ROUNDS || (h_count < 5 && rounds < 100 * L_ROUNDS); rounds++)
		missed += !self_l();
	apic_reg_write(APIC_LVTT, IRQ_H | LVT_MASKED);
	apic_reg_write(APIC_TMICT, 0);
	/* the ticks still held or pending go in */
	for (int i = 0; i < 20000; i++)
		asm volatile("sti; nop; nop; cli" ::: "memory");
	uint32_t isr[8], in_service = 0;
	for (uint32_t w = 0; w < 8; w++)
		in_service |= isr[w] = apic_reg_read(APIC_ISR0 + 0x10 * w);
	bool last = self_l();
	apic_reg_write(APIC_LVTT, lvtt);
	apic_reg_write(APIC_TDCR, tdcr);
	apic_reg_write(APIC_TMICT, tmict);
	gate_restore(IRQ_H, gh);
	gate_restore(IRQ_L, gl);
	irq_restore(fl);
	report_info("isr balance: IRQ_H taken %lu times, IRQ_L %lu (%u rounds, %u missed), ISR 1 %x 2 %x 7 %x",
		    h_count, l_count, rounds, missed, isr[1], isr[2], isr[7]);
	/* rounds whose IRQ_L waited past self_l's bound are not a failure: traced, a tick the pacing
	 * holds is in service and is pending again by the time it is injected, and the APIC presents
	 * no lower vector meanwhile (priority, as on hardware with a timer always pending). The bug
	 * this catches leaves a bit in service after the timer stops, and the last IRQ_L blocked */
	report(!in_service && last && h_count >= 3, "irq_isr_balanced",
	       "after the timer: %s in service, a last IRQ_L %s; %u of %u rounds' IRQ_L missed, the timer taken %lu times",
	       in_service ? "vectors still" : "nothing", last ? "taken" : "never taken", missed, rounds, h_count);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_irq");
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	test_injected_once();
	test_lower_level_not_starved();
	test_isr_balanced();
	report_done();
}
