/* Exceptions raised while the CPU delivers another: the double-fault
 * rules (SDM Vol. 3 6.15 "Interrupt 8—Double Fault Exception (#DF)",
 * Table 6-5; AMD APM Vol. 2 8.2.9). Pure logic, host-tested. */
#include "base/vcpu.h"

#define EXC_DF 8
#define EXC_PF 14

/* #DE, #TS, #NP, #SS, #GP */
static bool contributory(u8 v)
{
	return v == 0 || v == 10 || v == 11 || v == 12 || v == 13;
}

enum exc_outcome exc_combine(u8 first, u8 second)
{
	bool second_bad = contributory(second) || second == EXC_PF;
	if (first == EXC_DF)
		return second_bad ? EXC_TRIPLE_FAULT : EXC_DELIVER_SECOND;
	if (contributory(first))
		return contributory(second) ? EXC_DOUBLE_FAULT : EXC_DELIVER_SECOND;
	if (first == EXC_PF)
		return second_bad ? EXC_DOUBLE_FAULT : EXC_DELIVER_SECOND;
	return EXC_DELIVER_SECOND;	/* a benign first exception: one after the other */
}
