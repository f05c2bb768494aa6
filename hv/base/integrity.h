/* Self-check of the hypervisor's image: its code and read-only data must
 * be exactly what the loader placed, whatever the guest did. */
#ifndef HV_BASE_INTEGRITY_H
#define HV_BASE_INTEGRITY_H
#include "arch/x86/types.h"
void integrity_init(void);
bool integrity_ok(void);
/* True for a host-linear address in the hypervisor's image header, code
 * or read-only data: where root mode fetches instructions. */
bool hv_image_code(u64 addr);
/* Whether any of the `n` bytes at linear `addr` is one the hypervisor
 * addresses in its own space (its image, its reserve, the local APIC's
 * page: HV_VA_BASE up to HV_APIC_VA's page); n >= 1, addr + n no wrap. */
bool hv_own_linear(u64 addr, u64 n);
#endif
