/* Pacing of external interrupts while the engine traces: the pure
 * decisions (trace/pace.c, host-tested by tests/unit/test_pace.c). */
#ifndef HV_TRACE_PACE_H
#define HV_TRACE_PACE_H
#include "base/types.h"

/* A handler that has not returned after this many times the pace is taken
 * as done (the guest switched to other work from inside it). */
#define PACE_SERVICE_LIMIT	8

struct irq_pace {
	u32 pace;		/* branches between interrupts; 0: no pacing */
	bool in_service;	/* an interrupt we injected has not returned */
	bool halted;		/* the guest halted with one held: due at once */
	bool waiting;		/* one is held for pacing now */
	u64 ret_lin, ret_sp;	/* where that handler's IRET returns */
	u64 mark;		/* branch count at its injection, or its return */
	u64 injected;		/* external interrupts injected while tracing */
	u64 paced;		/* ... of them held for pacing first */
};

/* May an external interrupt be injected now, after `branches` branches?
 * (Records that one is held when not.) */
bool pace_due(struct irq_pace *p, u64 branches);
/* One was injected at `ret_lin` (where its frame returns) with stack
 * pointer `sp`. */
void pace_injected(struct irq_pace *p, u64 branches, u64 ret_lin, u64 sp);
/* An IRET returned to `to_lin` with stack pointer `sp`. */
void pace_iret(struct irq_pace *p, u64 branches, u64 to_lin, u64 sp);
#endif
