/* Hypercall dispatch (VMMCALL/VMCALL) and its pure argument checks. */
#ifndef HV_CORE_HYPERCALL_H
#define HV_CORE_HYPERCALL_H

#include "core/types.h"
#include "core/memmap.h"

struct hc_args {
	u64 nr;
	int cpl;
	u64 buf_gpa;	/* HC_STATUS: RBX */
	u64 buf_len;	/* HC_STATUS: RCX */
};

/* 0 when the call may proceed, else a negative HVTRACE_E* code. Checks
 * the number, the caller's privilege and that any buffer lies wholly in
 * `guest_ram` (which already excludes the hypervisor's ranges). */
s64 hc_check(const struct hc_args *a, const struct hv_memmap *guest_ram);

struct vcpu;
void hc_dispatch(struct vcpu *v);

#endif
