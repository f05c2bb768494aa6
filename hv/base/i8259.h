/* The machine's 8259A pair, as the hypervisor touches it while it holds
 * an interrupt the processor acknowledged through it (dispatch/irq.c).
 * Root mode. */
#ifndef HV_BASE_I8259_H
#define HV_BASE_I8259_H
#include "arch/x86/types.h"

/* What i8259_end_acknowledged() did */
enum i8259_end {
	I8259_ENDED,		/* the in-service bit of `vector`'s level ended */
	I8259_NONE,		/* nothing in service (automatic EOI, or not the 8259's) */
	I8259_OTHER,		/* the highest in service is not that vector's level: left */
};

/* End, at the 8259 (a specific EOI; at both for a slave's level), the
 * in-service bit of the interrupt the processor has just acknowledged
 * through it with `vector`: the highest in service (fully nested mode
 * took it only above all others), whose level is vector % 8 (the 8259's
 * vectors are its base, a multiple of 8, plus the level). The command
 * ports are left reading IRR, as Linux leaves them. */
enum i8259_end i8259_end_acknowledged(u8 vector);
#endif
