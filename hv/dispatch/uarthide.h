/* Hiding the hypervisor's own log UART from the guest (serial.hide, the
 * default for any port but COM1's: docs/config.md): the guest's port I/O
 * to its 8 ports finds no device there. See docs/security.md. */
#ifndef HV_DISPATCH_UARTHIDE_H
#define HV_DISPATCH_UARTHIDE_H

#include "arch/x86/types.h"

struct vcpu;
struct hv_event;

/* The ports hidden: [*first, *first + return value); 0 when none. */
u32 uarthide_io_ports(u16 *first);

/* HV_EV_IO touching those ports: reads all ones, writes dropped; the
 * string forms emulated as such (or faulted), the guest resumed past the
 * instruction (or at it, for a REP's next part). */
void uarthide_io(struct vcpu *v, const struct hv_event *ev);

#endif
