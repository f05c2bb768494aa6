/* What the backends call in the dispatcher (hv/dispatch): every exit ends
 * there, and so does every instruction a backend emulates itself. The
 * layer below (trace, base) never includes this header. */
#ifndef HV_DISPATCH_DISPATCH_H
#define HV_DISPATCH_DISPATCH_H

#include "base/vcpu.h"

/* Called by the backends after each exit; returns when the guest may go on. */
void hv_handle_event(struct vcpu *v, const struct hv_event *ev);
/* The last step before the guest runs (after an exit, and before the
 * first entry): the engine's plans, then the host's DR7. */
void hv_prepare_entry(struct vcpu *v);

/* The end of every instruction the hypervisor emulated, wherever it was
 * emulated (dispatch, the engine, a backend's own exit handler): `completed`
 * when RIP moved past it, false when a fault was injected instead. */
void hv_emulation_done(struct vcpu *v, bool completed);
/* An instruction a backend emulated in its own exit handler (VMX: MOV to
 * CR0/CR4, XSETBV): counted, completed and entered like the dispatcher's. */
void hv_backend_emulated(struct vcpu *v, bool completed);
/* A fault for an instruction the hypervisor emulates: injected, and the
 * engine told, so that it follows the guest into the handler. */
void hv_inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err);

extern const struct hv_arch_ops svm_ops;
extern const struct hv_arch_ops vmx_ops;

#endif
