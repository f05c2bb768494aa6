/* Pacing of external interrupts while tracing (hv/trace/pace.c): when one
 * may be injected, the end of a handler at its IRET, the limit on a
 * handler that never returns, halts, and pacing off. */
#include <string.h>
#include "unit.h"
#include "trace/pace.h"

int main(void)
{
	struct irq_pace p = { .pace = 1000 };
	const u64 ret = 0xffffffff81001234ull, sp = 0xffffc90000003f58ull;

	/* as the engine starts: the first interrupt is due at once */
	p.mark = 5000 - 1000;
	CHECK(pace_due(&p, 5000), "first interrupt due at once");
	pace_injected(&p, 5000, ret, sp);
	CHECK(p.injected == 1 && p.paced == 0 && p.in_service, "injected, not paced");

	/* while its handler runs, none; however many branches below the limit */
	CHECK(!pace_due(&p, 5001), "none while the handler runs");
	CHECK(!pace_due(&p, 5000 + 1000 * PACE_SERVICE_LIMIT - 1), "none just below the service limit");
	CHECK(p.waiting, "held for pacing");

	/* an IRET elsewhere (a nested frame, another stack) does not end it */
	pace_iret(&p, 6000, ret + 1, sp);
	CHECK(p.in_service, "IRET to another address");
	pace_iret(&p, 6000, ret, sp - 8);
	CHECK(p.in_service, "IRET on another stack");
	/* the IRET back where it interrupted: the window starts there */
	pace_iret(&p, 6500, ret, sp);
	CHECK(!p.in_service && p.mark == 6500, "handler done at its IRET");
	CHECK(!pace_due(&p, 6500 + 999), "pace not yet made");
	CHECK(pace_due(&p, 6500 + 1000), "due after pace branches outside the handler");
	pace_injected(&p, 7500, ret, sp);
	CHECK(p.injected == 2 && p.paced == 1 && !p.waiting, "second one counted as paced");

	/* a handler that never returns: taken as done after the limit, then
	 * pace more branches */
	u64 lim = 7500 + 1000ull * PACE_SERVICE_LIMIT;
	CHECK(!pace_due(&p, lim - 1), "below the limit");
	CHECK(!pace_due(&p, lim), "at the limit: the window starts");
	CHECK(!p.in_service && p.mark == lim, "service expired at the limit");
	CHECK(!pace_due(&p, lim + 999) && pace_due(&p, lim + 1000), "then pace branches");

	/* a halt makes one due at once, once */
	pace_injected(&p, lim + 1000, ret, sp);
	CHECK(!pace_due(&p, lim + 1001), "in service again");
	p.halted = true;
	CHECK(pace_due(&p, lim + 1001), "due when the guest halts");
	pace_injected(&p, lim + 1001, ret, sp);
	CHECK(!p.halted && !pace_due(&p, lim + 1002), "the halt is used up");

	/* LBR batching sees an IRET after the fact, its stack pointer not
	 * known: the return address alone ends the handler, another does not */
	struct irq_pace l = { .pace = 100 };
	pace_injected(&l, 0, ret, sp);
	pace_iret(&l, 10, ret + 4, PACE_SP_ANY);
	CHECK(l.in_service, "IRET elsewhere, stack unknown");
	pace_iret(&l, 20, ret, PACE_SP_ANY);
	CHECK(!l.in_service && l.mark == 20, "IRET back, stack unknown");

	/* pacing off: always due, still counted */
	struct irq_pace off = { .pace = 0 };
	CHECK(pace_due(&off, 0) && pace_due(&off, 1), "off: always due");
	pace_injected(&off, 1, ret, sp);
	CHECK(pace_due(&off, 2) && off.injected == 1 && off.paced == 0, "off: counted, never paced");

	/* counters wrap without harm (u64 arithmetic on differences) */
	struct irq_pace w = { .pace = 10 };
	w.mark = (u64)0 - 5;
	CHECK(!pace_due(&w, (u64)0 - 1) && pace_due(&w, 5), "across the u64 wrap");

	/* which held vector goes: the highest when due, the others held with
	 * it owed and going at the next chances without the pace */
	u64 held[4] = { 0 }, owed[4] = { 0 };
#define HOLD(v) (held[(v) / 64] |= 1ull << ((v) % 64))
	CHECK(pace_pick(held, owed, true) == -1, "nothing held: none");
	HOLD(0x31);
	HOLD(0xec);
	CHECK(pace_pick(held, owed, false) == -1, "held, not due, none owed: none");
	CHECK(pace_pick(held, owed, true) == 0xec, "due: the highest first");
	HOLD(0xec);	/* the timer, held again before the next chance */
	CHECK(pace_pick(held, owed, false) == 0x31, "not due: the one held with it is owed");
	CHECK(pace_pick(held, owed, false) == -1, "the new timer waits for the pace");
	CHECK(held[3] == 1ull << (0xec % 64) && !held[0] && !owed[0] && !owed[3], "sets after");
	/* the starvation it ends: a timer held again before every due point,
	 * a lower vector with it; the lower one goes once per due point */
	memset(held, 0, sizeof(held));
	memset(owed, 0, sizeof(owed));
	HOLD(0x34);
	int low = 0;
	for (int round = 0; round < 5; round++) {
		HOLD(0xec);
		if (pace_pick(held, owed, true) != 0xec)
			break;
		HOLD(0xec);
		int v;
		while ((v = pace_pick(held, owed, false)) >= 0)
			low += v == 0x34;
		HOLD(0x34);
	}
	CHECK(low == 5, "a lower vector under an always-held timer goes every due point (%d of 5)", low);
	/* a vector above 0xff cannot be held; the top and bottom words */
	memset(held, 0, sizeof(held));
	HOLD(0xff);
	HOLD(0x20);
	CHECK(pace_pick(held, owed, true) == 0xff && pace_pick(held, owed, false) == 0x20 &&
	      pace_pick(held, owed, false) == -1, "vectors 0xff and 0x20");
#undef HOLD
	return unit_done("test_pace");
}
