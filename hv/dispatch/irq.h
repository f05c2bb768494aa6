/* External interrupts on their way to the guest (dispatch/irq.c). */
#ifndef HV_DISPATCH_IRQ_H
#define HV_DISPATCH_IRQ_H
#include "base/vcpu.h"

/* An external interrupt the backend acknowledged for the guest. */
void irq_hold(struct vcpu *v, u8 vector);
/* Before every entry: the highest held interrupt is injected when the
 * guest can take it and the engine's pacing lets it; otherwise the window
 * exit and the HLT intercept that will deliver it are armed. */
void irq_deliver(struct vcpu *v);
/* HLT with an interrupt held: it completes, the interrupt is due now. */
void irq_on_hlt(struct vcpu *v, const struct hv_event *ev);
/* INIT: the held interrupts are gone (each EOIed at the local APIC, whose
 * in-service bit the acknowledgement set). */
void irq_drop_held(struct vcpu *v);
#endif
