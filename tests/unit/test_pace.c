/* Pacing of external interrupts while tracing (hv/trace/pace.c): when one
 * may be injected, the end of a handler at its IRET, the limit on a
 * handler that never returns, halts, and pacing off. */
#include <string.h>
#include "unit.h"
#include "base/vecset.h"
#include "trace/pace.h"

int main(void)
{
	struct irq_pace p = { .pace = 1000 };
	const u64 ret = 0xffffffff81001234ull, sp = 0xffffc90000003f58ull;

	/* as the engine starts: the first interrupt is due at once */
	p.mark = 5000 - 1000;
	CHECK(pace_due(&p, 5000), "first interrupt due at once");
	pace_injected(&p, 5000, ret, sp, 0xec, 100);
	CHECK(p.injected == 1 && p.paced == 0 && p.in_service, "injected, not paced");

	/* while its handler runs, none; however many branches below the limit */
	CHECK(!pace_due(&p, 5001), "none while the handler runs");
	CHECK(!pace_due(&p, 5000 + 1000 * PACE_SERVICE_LIMIT - 1), "none just below the service limit");

	/* an IRET elsewhere (a nested frame, another stack) does not end it */
	pace_iret(&p, 6000, ret + 1, sp, 200);
	CHECK(p.in_service, "IRET to another address");
	pace_iret(&p, 6000, ret, sp - 8, 200);
	CHECK(p.in_service, "IRET on another stack");
	/* the IRET back where it interrupted: the window starts there */
	pace_iret(&p, 6500, ret, sp, 300);
	CHECK(!p.in_service && p.mark == 6500, "handler done at its IRET");
	CHECK(!pace_due(&p, 6500 + 999), "pace not yet made");
	CHECK(pace_due(&p, 6500 + 1000), "due after pace branches outside the handler");
	p.waiting = true;	/* as pace_pick leaves it with a paced vector held */
	vecset_set(p.storm, 0xec);
	pace_injected(&p, 7500, ret, sp, 0xec, 400);
	CHECK(p.injected == 2 && p.paced == 1 && !p.waiting, "second one counted as paced");

	/* a handler that never returns: taken as done after the limit, then
	 * pace more branches */
	u64 lim = 7500 + 1000ull * PACE_SERVICE_LIMIT;
	CHECK(!pace_due(&p, lim - 1), "below the limit");
	CHECK(!pace_due(&p, lim), "at the limit: the window starts");
	CHECK(!p.in_service && p.mark == lim, "service expired at the limit");
	CHECK(!pace_due(&p, lim + 999) && pace_due(&p, lim + 1000), "then pace branches");

	/* a halt makes one due at once, once */
	pace_injected(&p, lim + 1000, ret, sp, 0xec, 500);
	CHECK(!pace_due(&p, lim + 1001), "in service again");
	p.halted = true;
	CHECK(pace_due(&p, lim + 1001), "due when the guest halts");
	pace_injected(&p, lim + 1001, ret, sp, 0xec, 600);
	CHECK(!p.halted && !pace_due(&p, lim + 1002), "the halt is used up");

	/* LBR batching sees an IRET after the fact, its stack pointer not
	 * known: the return address alone ends the handler, another does not */
	struct irq_pace l = { .pace = 100 };
	pace_injected(&l, 0, ret, sp, 0x30, 1);
	pace_iret(&l, 10, ret + 4, PACE_SP_ANY, 2);
	CHECK(l.in_service, "IRET elsewhere, stack unknown");
	pace_iret(&l, 20, ret, PACE_SP_ANY, 3);
	CHECK(!l.in_service && l.mark == 20, "IRET back, stack unknown");

	/* pacing off: always due, still counted */
	struct irq_pace off = { .pace = 0 };
	CHECK(pace_due(&off, 0) && pace_due(&off, 1), "off: always due");
	pace_injected(&off, 1, ret, sp, 0x30, 1);
	CHECK(pace_due(&off, 2) && off.injected == 1 && off.paced == 0, "off: counted, never paced");

	/* counters wrap without harm (u64 arithmetic on differences) */
	struct irq_pace w = { .pace = 10 };
	w.mark = (u64)0 - 5;
	CHECK(!pace_due(&w, (u64)0 - 1) && pace_due(&w, 5), "across the u64 wrap");

	/* which held vector goes: the highest when due, the others held with
	 * it owed and going at the next chances without the pace */
	u64 held[4] = { 0 }, owed[4] = { 0 };
	static struct irq_pace q = { .pace = 100 };
	for (int w = 0; w < 4; w++)
		q.storm[w] = ~0ull;	/* every vector paced, as a storm of each */
#define HOLD(v) (held[(v) / 64] |= 1ull << ((v) % 64))
	CHECK(pace_pick(&q, held, owed, true) == -1, "nothing held: none");
	HOLD(0x31);
	HOLD(0xec);
	CHECK(pace_pick(&q, held, owed, false) == -1, "held, not due, none owed: none");
	CHECK(pace_pick(&q, held, owed, true) == 0xec, "due: the highest first");
	HOLD(0xec);	/* the timer, held again before the next chance */
	CHECK(pace_pick(&q, held, owed, false) == 0x31, "not due: the one held with it is owed");
	CHECK(pace_pick(&q, held, owed, false) == -1, "the new timer waits for the pace");
	CHECK(held[3] == 1ull << (0xec % 64) && !held[0] && !owed[0] && !owed[3], "sets after");
	/* the starvation it ends: a timer held again before every due point,
	 * a lower vector with it; the lower one goes once per due point */
	memset(held, 0, sizeof(held));
	memset(owed, 0, sizeof(owed));
	HOLD(0x34);
	int low = 0;
	for (int round = 0; round < 5; round++) {
		HOLD(0xec);
		if (pace_pick(&q, held, owed, true) != 0xec)
			break;
		HOLD(0xec);
		int v;
		while ((v = pace_pick(&q, held, owed, false)) >= 0)
			low += v == 0x34;
		HOLD(0x34);
	}
	CHECK(low == 5, "a lower vector under an always-held timer goes every due point (%d of 5)", low);
	/* a vector above 0xff cannot be held; the top and bottom words */
	memset(held, 0, sizeof(held));
	HOLD(0xff);
	HOLD(0x20);
	CHECK(pace_pick(&q, held, owed, true) == 0xff && pace_pick(&q, held, owed, false) == 0x20 &&
	      pace_pick(&q, held, owed, false) == -1, "vectors 0xff and 0x20");

	/* Only the paced vectors wait (issue 25): a vector that is not in
	 * the storm set goes when not due, as untraced, and the paced one
	 * held with it waits (p->waiting says so) */
	memset(held, 0, sizeof(held));
	memset(owed, 0, sizeof(owed));
	memset(q.storm, 0, sizeof(q.storm));
	vecset_set(q.storm, 0xec);
	q.waiting = false;
	HOLD(0xec);
	HOLD(0xd1);
	CHECK(pace_pick(&q, held, owed, false) == 0xd1 && q.waiting, "not due: the unpaced IPI goes, the timer waits");
	CHECK(pace_pick(&q, held, owed, false) == -1 && held[3] == 1ull << (0xec % 64), "the timer still held");
	CHECK(pace_pick(&q, held, owed, true) == 0xec, "due: the timer");
#undef HOLD

	/* What makes a vector paced: measured in TSC ticks, its traced
	 * handler's run against its period; or coming again while its own
	 * handler runs */
	static struct irq_pace m = { .pace = 1000 };
	const u8 tick = 0x68, ipi = 0xd1;
	pace_injected(&m, 0, ret, sp, tick, 1000);
	pace_iret(&m, 50, ret, sp, 1600);	/* handler 600 ticks */
	CHECK(!vecset_has(m.storm, tick), "one tick: no period yet");
	pace_injected(&m, 60, ret, sp, tick, 2000);	/* period 1000, cost 600 */
	CHECK(vecset_has(m.storm, tick), "a handler of 600 in a period of 1000: paced");
	pace_iret(&m, 70, ret, sp, 2100);	/* cost 100 */
	CHECK(!vecset_has(m.storm, tick), "a handler of 100 in 1000: no longer paced");
	pace_injected(&m, 80, ret, sp, ipi, 2200);
	pace_iret(&m, 90, ret, sp, 2210);
	pace_injected(&m, 100, ret, sp, ipi, 900000);
	pace_iret(&m, 110, ret, sp, 900010);
	CHECK(!vecset_has(m.storm, ipi), "a cheap IPI, seldom: not paced");
	pace_injected(&m, 120, ret, sp, ipi, 900100);
	pace_arrived(&m, tick);
	CHECK(!vecset_has(m.storm, tick), "another vector arriving in the IPI's handler: not paced");
	pace_arrived(&m, ipi);
	CHECK(vecset_has(m.storm, ipi), "the IPI arriving in its own handler: paced");
	static struct irq_pace n0 = { .pace = 0 };
	pace_injected(&n0, 0, ret, sp, ipi, 5);
	pace_arrived(&n0, ipi);
	CHECK(!vecset_has(n0.storm, ipi), "pacing off: nothing paced");
	return unit_done("test_pace");
}
