/* Exception classes and how two of them combine when the second arises
 * while the first is being delivered (SDM Vol. 3 6.15, "Interrupt 8—Double
 * Fault Exception", Table 6-4 and Table 6-5). Pure logic, shared with the
 * host unit tests. */
#ifndef HV_ARCH_X86_EXC_H
#define HV_ARCH_X86_EXC_H

#include <stdbool.h>

#define EXC_DF		8
#define EXC_PF		14
#define EXC_TRIPLE	(-1)	/* shutdown */

/* Table 6-4: #DE, #TS, #NP, #SS, #GP are contributory; #PF is its own
 * class; everything else is benign. */
static inline bool exc_contributory(int v)
{
	return v == 0 || (v >= 10 && v <= 13);
}

/* What the processor delivers when exception `second` arises while it
 * delivers exception `first`: `second` (handled serially), #DF, or
 * EXC_TRIPLE (a fault while delivering #DF: shutdown). Table 6-5. */
static inline int exc_combine(int first, int second)
{
	bool c2 = exc_contributory(second) || second == EXC_PF;
	if (first == EXC_DF && c2)
		return EXC_TRIPLE;
	if (exc_contributory(first) && exc_contributory(second))
		return EXC_DF;
	if (first == EXC_PF && c2)
		return EXC_DF;
	return second;
}

#endif
