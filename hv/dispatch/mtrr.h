/* The guest's MTRRs, virtual (dispatch/mtrr.c): pure logic, host-tested
 * (tests/unit/test_mtrr.c). */
#ifndef HV_DISPATCH_MTRR_H
#define HV_DISPATCH_MTRR_H
#include "arch/x86/types.h"

#define MTRR_VAR_MAX	16	/* variable pairs kept (IA32_MTRRCAP.VCNT is 8 bits; 16 is the MSR range) */
#define MTRR_FIXED_N	11	/* FIX64K_00000, FIX16K_80000/A0000, FIX4K_C0000..F8000 */

struct vmtrr {
	bool loaded;		/* filled from the processor's at this vCPU's first access */
	u64 cap;		/* IA32_MTRRCAP, the processor's */
	u64 def;
	u64 var[2 * MTRR_VAR_MAX];	/* PHYSBASE0, PHYSMASK0, PHYSBASE1, ... */
	u64 fixed[MTRR_FIXED_N];
};

/* Whether `msr` is an MTRR the guest programs (not IA32_MTRRCAP) */
bool mtrr_is_mtrr(u32 msr);
/* The MSR number of slot i of the state's load order (mtrr_load): -1 past
 * the last; the variable pairs only up to VCNT, the fixed ones only where
 * IA32_MTRRCAP.FIX says they exist. */
s64 mtrr_msr_at(u64 cap, u32 i);
/* RDMSR/WRMSR of an MTRR on the virtual state (SDM Vol. 3 12.11.1-12.11.3):
 * false is #GP (no such MSR on this processor, a reserved bit, an invalid
 * memory type). `phys_bits`: MAXPHYADDR. */
bool mtrr_read(const struct vmtrr *m, u32 msr, u64 *val);
bool mtrr_write(struct vmtrr *m, u32 msr, u64 val, u32 phys_bits);
/* The processor's value of `msr` into the state, unchecked (mtrr_msr_at's
 * order): false where the state has no such MSR */
bool mtrr_load(struct vmtrr *m, u32 msr, u64 val);
#endif
