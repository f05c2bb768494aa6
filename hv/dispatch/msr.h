/* MSR policy for intercepted MSRs (see msr.c). false: the guest gets #GP(0). */
#ifndef HV_DISPATCH_MSR_H
#define HV_DISPATCH_MSR_H
#include "arch/x86/types.h"
struct vcpu;
bool msr_read(struct vcpu *v, u32 msr, u64 *val);
bool msr_write(struct vcpu *v, u32 msr, u64 val);
/* [first, last] inclusive */
struct msr_range {
	u32 first, last;
};
extern const struct msr_range hv_owned_msrs[];
extern const u32 hv_nr_owned_msrs;
/* MSRs whose writes the hypervisor owns and whose reads reach the hardware
 * until hv_arch_ops.intercept_msr_read turns them on for every vCPU (the
 * backends intercept the writes from the start) */
extern const u32 hv_write_owned_msrs[];
extern const u32 hv_nr_write_owned_msrs;
#endif
