/* The 8259A pair (base/i8259.h). Root mode; port I/O only. */
#include "arch/x86/cpu.h"
#include "arch/x86/i8259.h"
#include "base/i8259.h"

/* the in-service register of the 8259 at `cmd`; IRR selected again after */
static u8 in_service(u16 cmd)
{
	outb(cmd, I8259_OCW3_READ_ISR);
	u8 isr = inb(cmd);
	outb(cmd, I8259_OCW3_READ_IRR);
	return isr;
}

/* the highest priority in service (fully nested mode: the lowest level); -1: none */
static int highest(u8 isr)
{
	return isr ? __builtin_ctz(isr) : -1;
}

enum i8259_end i8259_end_acknowledged(u8 vector)
{
	int level = highest(in_service(I8259_MASTER_CMD));
	if (level < 0)
		return I8259_NONE;
	if (level == I8259_CASCADE_IRQ) {
		int s = highest(in_service(I8259_SLAVE_CMD));
		if (s < 0 || (u32)s != (vector & 7u))
			return I8259_OTHER;
		outb(I8259_SLAVE_CMD, (u8)(I8259_OCW2_SPECIFIC_EOI | s));
		outb(I8259_MASTER_CMD, I8259_OCW2_SPECIFIC_EOI | I8259_CASCADE_IRQ);
		return I8259_ENDED;
	}
	if ((u32)level != (vector & 7u))
		return I8259_OTHER;
	outb(I8259_MASTER_CMD, (u8)(I8259_OCW2_SPECIFIC_EOI | level));
	return I8259_ENDED;
}
