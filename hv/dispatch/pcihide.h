/* Hiding the host channel device (ivshmem-plain) from the guest: its BARs
 * and ECAM page are sunk by the nested tables, and configuration
 * mechanism #1 (ports 0xCF8-0xCFF) is filtered. See docs/channel.md. */
#ifndef HV_DISPATCH_PCIHIDE_H
#define HV_DISPATCH_PCIHIDE_H

#include "arch/x86/types.h"

struct vcpu;
struct hv_event;
struct hv_boot_ivshmem;

/* Adds the device's ranges to hv.hidden; call before the backend builds its
 * nested tables. HV_OK, or HV_ERR_BAD_BOOT when they cannot all be hidden. */
int pcihide_init(const struct hv_boot_ivshmem *iv);

/* The ports the backends intercept: [*first, *first + return value). */
u32 pcihide_io_ports(u16 *first);

/* HV_EV_IO: performs, filters or faults the access, then resumes the guest
 * past it (or with the fault pending). */
void pcihide_io(struct vcpu *v, const struct hv_event *ev);

#endif
