/* What the backends call in the dispatcher (hv/dispatch): every exit ends
 * there, and so does every instruction a backend emulates itself. The
 * layer below (trace, base) never includes this header. */
#ifndef HV_DISPATCH_DISPATCH_H
#define HV_DISPATCH_DISPATCH_H

#include "base/vcpu.h"

/* Called by the backends after each exit; returns when the guest may go on
 * (hv_exit_begin, then the event's handling, then hv_prepare_entry). */
void hv_handle_event(struct vcpu *v, const struct hv_event *ev);
/* The first step of every exit (hv_handle_event's own): the host's DR7
 * disarmed, the exit counted, the engine told where the guest stopped.
 * A backend that emulates an exit itself calls it first, then
 * hv_backend_done. */
void hv_exit_begin(struct vcpu *v, const struct hv_event *ev);
void hv_backend_done(struct vcpu *v, bool completed);
/* The last step before the guest runs (after an exit, and before the
 * first entry): the engine's plans, then the host's DR7. */
void hv_prepare_entry(struct vcpu *v);

/* The end of every instruction the hypervisor emulated, wherever it was
 * emulated (dispatch, the engine, a backend's own exit handler): `completed`
 * when RIP moved past it, false when a fault was injected instead. */
void hv_emulation_done(struct vcpu *v, bool completed);
/* An exit a backend handled in its own exit handler without hv_exit_begin
 * (VMX: a SIPI outside the wait-for-SIPI state, ignored): counted,
 * completed and entered like the dispatcher's, the engine not told of it. */
void hv_backend_emulated(struct vcpu *v, bool completed);
/* A fault for an instruction the hypervisor emulates: injected, and the
 * engine told, so that it follows the guest into the handler. */
void hv_inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err);
/* The processor refused the guest's state at a VM entry after the guest
 * had run (an emulator let the state through; `why` names the field): the
 * flight recorder frozen, the state dumped, then the machine ends as after
 * a triple fault (triple_fault: reset, or halt). */
void __noreturn hv_guest_refused(struct vcpu *v, const char *why);
/* The ports whose I/O the guest does not reach (dispatch/ioport.c): each
 * one's bit set in a bitmap of one bit per port, port p at byte p / 8, bit
 * p % 8 (8 KiB, zeroed): the layout of SVM's I/O permission map (AMD APM
 * Vol. 2 15.10.1) and of VMX's I/O bitmaps A and B placed one after the
 * other (Intel SDM Vol. 3 25.6.4). Their exits (HV_EV_IO) go to io_exit. */
void io_bitmap_fill(u8 *bm);
void io_exit(struct vcpu *v, const struct hv_event *ev);
/* An NMI for the guest (not the hypervisor's kick): recorded while
 * tracing, delivered when the guest can take it. */
void hv_guest_nmi(struct vcpu *v);

extern const struct hv_arch_ops svm_ops;
extern const struct hv_arch_ops vmx_ops;

#endif
