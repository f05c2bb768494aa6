/* Hypercall dispatch (VMMCALL/VMCALL) and its pure argument checks. */
#ifndef HV_DISPATCH_HYPERCALL_H
#define HV_DISPATCH_HYPERCALL_H

#include "arch/x86/types.h"
#include "base/memmap.h"

struct hc_args {
	u64 nr;
	int cpl;
	u64 buf_gpa;	/* HC_STATUS, HC_VCPU_STATUS: RBX */
	u64 buf_len;	/* HC_STATUS, HC_VCPU_STATUS: RCX */
	u64 index;	/* HC_VCPU_STATUS: RDX */
};

/* 0 when the call may proceed, else a negative HVTRACE_E* code. Checks
 * the number, the caller's privilege and that any buffer lies wholly in
 * `guest_ram` (which already excludes the hypervisor's ranges). */
s64 hc_check(const struct hc_args *a, const struct hv_memmap *guest_ram, u32 nr_vcpus);

struct vcpu;
void hc_dispatch(struct vcpu *v);
/* The #UD the guest just took is its hypercall instruction (hv.hc_foreign) */
bool hc_foreign_at_rip(struct vcpu *v);

#endif
