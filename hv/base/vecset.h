/* A set of the 256 interrupt vectors as four 64-bit words (bit = vector):
 * the held and owed interrupts (dispatch/irq.c, trace/pace.c). */
#ifndef HV_BASE_VECSET_H
#define HV_BASE_VECSET_H
#include "arch/x86/types.h"

/* The highest vector in the set; -1: none */
static inline int vecset_highest(const u64 set[4])
{
	for (int w = 3; w >= 0; w--)
		if (set[w])
			return w * 64 + 63 - __builtin_clzll(set[w]);
	return -1;
}

static inline void vecset_set(u64 set[4], int vec)
{
	set[vec / 64] |= 1ull << (vec % 64);
}

static inline bool vecset_has(const u64 set[4], int vec)
{
	return set[vec / 64] & (1ull << (vec % 64));
}

static inline void vecset_clear(u64 set[4], int vec)
{
	set[vec / 64] &= ~(1ull << (vec % 64));
}
#endif
