/* Pacing of external interrupts while tracing (hv/trace/pace.c): when one
 * may be injected, the end of a handler at its IRET, the limit on a
 * handler that never returns, halts, and pacing off. */
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

	/* pacing off: always due, still counted */
	struct irq_pace off = { .pace = 0 };
	CHECK(pace_due(&off, 0) && pace_due(&off, 1), "off: always due");
	pace_injected(&off, 1, ret, sp);
	CHECK(pace_due(&off, 2) && off.injected == 1 && off.paced == 0, "off: counted, never paced");

	/* counters wrap without harm (u64 arithmetic on differences) */
	struct irq_pace w = { .pace = 10 };
	w.mark = (u64)0 - 5;
	CHECK(!pace_due(&w, (u64)0 - 1) && pace_due(&w, 5), "across the u64 wrap");
	return unit_done("test_pace");
}
