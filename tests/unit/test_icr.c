/* Which processors an ICR write names (hv/dispatch/icr.c): shorthands,
 * physical and broadcast destinations, logical mode, unknown IDs, and the
 * x2APIC forms (SDM Vol. 3 11.6.1, 11.12.9). */
#include "unit.h"
#include "arch/x86/apic.h"
#include "dispatch/icr.h"
#include "base/lapic.h"

/* The interpreting engine's look at the local APIC (base/lapic.h lapic_irr_above_ppr): an
 * interrupt goes to the processor when its priority class (vector 7:4) is above the PPR's
 * (SDM Vol. 3 11.8.3.1) */
static void test_irr_above_ppr(void)
{
	CHECK(!lapic_irr_above_ppr(7, 0, 0), "an empty word");
	CHECK(lapic_irr_above_ppr(7, 1u << 12, 0), "vector 0xec, PPR 0");	/* Linux's timer */
	CHECK(lapic_irr_above_ppr(7, 1u << 12, 0xdf), "0xec over class 0xd");
	CHECK(!lapic_irr_above_ppr(7, 1u << 12, 0xe0), "0xec not over class 0xe (the same class)");
	CHECK(!lapic_irr_above_ppr(7, 1u << 12, 0xef), "0xec not over class 0xe, subclass f");
	CHECK(lapic_irr_above_ppr(7, 0x80001000u, 0xef), "0xff over class 0xe: the highest bit counts");
	CHECK(!lapic_irr_above_ppr(1, 1u, 0x20), "0x20 not over class 2");
	CHECK(lapic_irr_above_ppr(1, 1u << 16, 0x20), "0x30 over class 2");
	CHECK(!lapic_irr_above_ppr(6, 0xffffffffu, 0xd0), "0xc0-0xdf not over class 0xd");
	CHECK(lapic_irr_above_ppr(6, 0xffffffffu, 0xc0), "0xdf over class 0xc");
	CHECK(!lapic_irr_above_ppr(7, 0xffffffffu, 0xf0), "nothing over class 0xf");
	CHECK(lapic_irr_above_ppr(7, 1u, 0x10f), "0xe0 over class 0: the PPR's bits above 7 are not its class");
}

int main(void)
{
	test_irr_above_ppr();
	const u32 ids[4] = { 0, 1, 2, 6 };
	u64 m;
	const u32 init = ICR_DM_INIT | ICR_LEVEL_ASSERT, sipi = ICR_DM_STARTUP | 0x9f;

	CHECK(icr_targets(init, 2, false, 0, ids, 4, &m) == ICR_TARGETS_OK && m == 0x4, "physical %llx",
	      (unsigned long long)m);
	CHECK(icr_targets(sipi, 6, false, 0, ids, 4, &m) == ICR_TARGETS_OK && m == 0x8,
	      "physical, sparse IDs %llx", (unsigned long long)m);
	CHECK(icr_targets(init, 0xff, false, 1, ids, 4, &m) == ICR_TARGETS_OK && m == 0xf,
	      "xAPIC broadcast 0xff %llx", (unsigned long long)m);
	CHECK(icr_targets(init, 0xff, true, 1, ids, 4, &m) == ICR_TARGETS_UNKNOWN && m == 0,
	      "0xff is an ID in x2APIC mode");
	CHECK(icr_targets(init, 0xffffffffu, true, 1, ids, 4, &m) == ICR_TARGETS_OK && m == 0xf,
	      "x2APIC broadcast");
	CHECK(icr_targets(init | ICR_DEST_OTHERS, 99, false, 1, ids, 4, &m) == ICR_TARGETS_OK && m == 0xd,
	      "all excluding self %llx", (unsigned long long)m);
	CHECK(icr_targets(init | ICR_DEST_ALL, 99, false, 1, ids, 4, &m) == ICR_TARGETS_OK && m == 0xf,
	      "all including self");
	CHECK(icr_targets(init | ICR_DEST_SELF, 99, false, 3, ids, 4, &m) == ICR_TARGETS_OK && m == 0x8,
	      "self");
	CHECK(icr_targets(init | ICR_DEST_LOGICAL, 1, false, 0, ids, 4, &m) == ICR_TARGETS_LOGICAL && m == 0,
	      "logical mode not resolved");
	CHECK(icr_targets(init | ICR_DEST_LOGICAL | ICR_DEST_OTHERS, 1, false, 0, ids, 4, &m) ==
			  ICR_TARGETS_OK && m == 0xe,
	      "a shorthand wins over the destination mode");
	CHECK(icr_targets(sipi, 3, false, 0, ids, 4, &m) == ICR_TARGETS_UNKNOWN && m == 0, "unknown ID");
	CHECK(icr_targets(sipi, 0x55, false, 0, ids, 4, &m) == ICR_TARGETS_UNKNOWN, "unknown ID 0x55");
	CHECK(icr_targets(sipi | ICR_DEST_OTHERS, 0, false, 0, ids, 1, &m) == ICR_TARGETS_OK && m == 0,
	      "others of one processor: none");

	u32 many[64];
	for (u32 i = 0; i < 64; i++)
		many[i] = i * 2;
	CHECK(icr_targets(init | ICR_DEST_ALL, 0, true, 0, many, 64, &m) == ICR_TARGETS_OK && m == ~0ull,
	      "64 processors");
	CHECK(icr_targets(init | ICR_DEST_OTHERS, 0, true, 63, many, 64, &m) == ICR_TARGETS_OK &&
		      m == ~0ull >> 1,
	      "64 processors but the last");
	CHECK(icr_targets(init, 126, true, 0, many, 64, &m) == ICR_TARGETS_OK && m == 1ull << 63,
	      "the 64th by ID");
	return unit_done("test_icr");
}
