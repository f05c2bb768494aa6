/* Pacing of external interrupts while the engine traces: the pure
 * decisions (trace/pace.c, host-tested by tests/unit/test_pace.c). */
#ifndef HV_TRACE_PACE_H
#define HV_TRACE_PACE_H
#include "arch/x86/types.h"

/* A handler that has not returned after this many times the pace is taken
 * as done (the guest switched to other work from inside it). */
#define PACE_SERVICE_LIMIT	8

struct irq_pace {
	u32 pace;		/* branches between interrupts; 0: no pacing */
	bool in_service;	/* an interrupt we injected has not returned */
	bool halted;		/* the guest halted with one held: due at once */
	bool waiting;		/* one is held for pacing now */
	u8 service_vec;		/* the vector of the one in service */
	u64 service_tsc;	/* ... and the TSC at its injection */
	u64 ret_lin, ret_sp;	/* where that handler's IRET returns */
	u64 mark;		/* branch count at its injection, or its return */
	u64 injected;		/* external interrupts injected while tracing */
	u64 paced;		/* ... of them held for pacing first */
	/* Per vector, in TSC ticks: its last injection (0: none yet), the
	 * time between its last two, its last handler's run (injection to
	 * the IRET back); and the vectors paced (a 256-bit set): those whose
	 * traced handler takes half their period or more, or that came again
	 * while their own handler ran. */
	u64 last_inj[256], period[256], cost[256];
	u64 storm[4];
};

/* May a paced external interrupt be injected now, after `branches`
 * branches? */
bool pace_due(struct irq_pace *p, u64 branches);
/* `vector` was acknowledged for the guest (it is held) */
void pace_arrived(struct irq_pace *p, u8 vector);
/* `vector` was injected at `ret_lin` (where its frame returns) with stack
 * pointer `sp`, at TSC `tsc`. */
void pace_injected(struct irq_pace *p, u64 branches, u64 ret_lin, u64 sp, u8 vector, u64 tsc);
/* An IRET returned to `to_lin` with stack pointer `sp`, or PACE_SP_ANY
 * where it is not known (LBR batching sees the IRET after the fact): the
 * return address alone then ends the handler. */
#define PACE_SP_ANY	(~0ull)
void pace_iret(struct irq_pace *p, u64 branches, u64 to_lin, u64 sp, u64 tsc);

/* Which held external interrupt goes next, taken out of `held` (a
 * 256-bit set of vectors); -1: none may go now. `due`: what pace_due said.
 * Only the vectors in p->storm are paced; the others go at once, as
 * untraced. When due, the highest held vector, as the local APIC
 * dispatches, and every other held then becomes owed: each goes at the
 * guest's next chance, highest first, without waiting for the pace again,
 * as the interrupts pending on a machine that came late are all delivered
 * when it catches up. Not due, an owed or unpaced one if any (and
 * p->waiting says a paced one is held). Without the owed set a
 * vector below one that is always held again by the time the pace is
 * made (a timer) would wait for ever: it did, for an 8259's keyboard
 * interrupt under Linux's local APIC timer, and with it in service the
 * 8259 held back the serial port's (tests/integration-boot.sh; the 8259's
 * own in-service bits: dispatch/irq.c release_8259). */
int pace_pick(struct irq_pace *p, u64 held[4], u64 owed[4], bool due);
#endif
