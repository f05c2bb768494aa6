/* Processor start-up through the hypervisor (dispatch/mp.c). */
#ifndef HV_DISPATCH_MP_H
#define HV_DISPATCH_MP_H
#include "base/vcpu.h"

/* A write to the local APIC's page (an NPF on it): emulated, true; false
 * when the fault is not about the APIC page. */
bool mp_apic_npf(struct vcpu *v, const struct hv_event *ev);
/* The guest's ICR write (xAPIC: its low half, sent; x2APIC: WRMSR 0x830).
 * False: the x2APIC write must #GP. */
bool mp_icr_write(struct vcpu *v, u32 lo, u32 dest, bool x2apic);
/* An INIT the processor itself received (SVM's INIT intercept). */
void mp_init_self(struct vcpu *v);
/* Before every guest entry: an NMI another vCPU sent this one by IPI
 * (latched in v->nmi_ipi, SVM) goes to the guest. */
void mp_take_nmi_ipi(struct vcpu *v);
/* An NMI exit: true when it was the hypervisor's kick (not the guest's). */
bool mp_take_kick(struct vcpu *v);
/* The vCPU is in the shutdown state: returns once an INIT reached it. */
void mp_wait_init(struct vcpu *v);
/* Before every guest entry: an INIT makes the vCPU wait for its SIPI
 * here, in root mode; a SIPI starts it. */
void mp_before_entry(struct vcpu *v);
#endif
