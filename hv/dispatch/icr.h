/* Which processors an interrupt command (ICR) names: pure logic, host-tested
 * (tests/unit/test_icr.c). SDM Vol. 3 11.6.1 (xAPIC) and 11.12.9 (x2APIC). */
#ifndef HV_DISPATCH_ICR_H
#define HV_DISPATCH_ICR_H
#include "arch/x86/types.h"

enum icr_target_result {
	ICR_TARGETS_OK = 0,		/* *mask names every target */
	ICR_TARGETS_LOGICAL = 1,	/* logical destination mode: not resolved here */
	ICR_TARGETS_UNKNOWN = 2,	/* a physical destination that is none of ours */
};

/* lo: the ICR's low 32 bits; dest: the destination field (xAPIC: ICR_HI's
 * bits 31:24; x2APIC: the high 32 bits). self: the sender's index in
 * apic_ids[n]. Sets bit i of *mask for each target. */
enum icr_target_result icr_targets(u32 lo, u32 dest, bool x2apic, u32 self, const u32 *apic_ids,
				   u32 n, u64 *mask);
#endif
