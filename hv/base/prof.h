/* Where a vCPU's time goes (issue #16 item 6): every TSC tick between two
 * of its world switches is charged to exactly one bucket (enum
 * hvtrace_prof), reported by HVTRACE_HC_VCPU_STATUS. prof_switch() charges
 * the ticks since the last switch to the bucket running and starts
 * another; a caller that nests a bucket switches back to what it
 * returned. Root mode, the vCPU's own processor only. */
#ifndef HV_BASE_PROF_H
#define HV_BASE_PROF_H
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "base/vcpu.h"

_Static_assert(HVTRACE_PROF_COUNT <= ARRAY_SIZE(((struct vcpu *)0)->prof.tsc) &&
		       ARRAY_SIZE(((struct vcpu *)0)->prof.tsc) == ARRAY_SIZE(((struct hvtrace_vcpu_status *)0)->tsc),
	       "one counter per bucket, as the ABI reports them");

static inline u32 prof_switch(struct vcpu *v, u32 to)
{
	u64 now = rdtsc();
	u32 was = v->prof.cur;
	v->prof.tsc[was] += now - v->prof.last;
	v->prof.last = now;
	v->prof.cur = to;
	return was;
}

/* The first entry of this vCPU: its time is counted from here (whatever
 * start-up charged before is dropped: `last` was not yet set). */
static inline void prof_start(struct vcpu *v)
{
	for (u32 i = 0; i < ARRAY_SIZE(v->prof.tsc); i++)
		v->prof.tsc[i] = 0;
	v->prof.last = rdtsc();
	v->prof.cur = HVTRACE_PROF_ENTRY;
}

#endif
