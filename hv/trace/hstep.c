/*
 * The hidden single step (engine off): one instruction run with TF forced
 * and #DB intercepted, the trap after it kept from the guest unless the
 * guest is owed one. Two users, each with its own struct hidden_step: the
 * IRET an NMI waits for (trace/nmi.c) and the host debugger's stepi
 * (trace/dbg.c). Root mode.
 */
#include "arch/x86/dr.h"
#include "arch/x86/paging.h"
#include "arch/x86/vectors.h"
#include "base/vcpu.h"
#include "trace/engine.h"
#include "trace/hstep.h"

/* The guest's TF and DR6 as they are now (its own TF, not another step's
 * forced one: trace_guest_tf), then TF forced. `loads_rflags`: the
 * instruction is an IRET, which loads RFLAGS whole. */
void hstep_arm(struct vcpu *v, struct hidden_step *s, bool loads_rflags)
{
	s->tf = trace_guest_tf(v);
	s->dr6 = hv.ops->get_dr(v, 6);
	s->rip = v->rip;
	s->loads_rflags = loads_rflags;
	s->on = true;
	v->rflags |= RFLAGS_TF;
	hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}

/*
 * The step is over; `ran`: its instruction completed. TF becomes the
 * guest's again: before the instruction ran, the TF of then. After it, an
 * instruction that wrote RFLAGS decided: an IRET always (its TF is the one
 * it popped: the NMI's IRET step left the forced TF to it), an instruction
 * that left TF clear (a POPF or IRET the debugger stepped) too; else TF
 * is still the forced one and the guest's from before goes back. (A POPF
 * that set TF the guest's TF had clear is taken for the forced one: its
 * TF is lost.)
 */
void hstep_end(struct vcpu *v, struct hidden_step *s, bool ran)
{
	s->on = false;
	if (!ran || (!s->loads_rflags && (v->rflags & RFLAGS_TF)))
		v->rflags = (v->rflags & ~RFLAGS_TF) | (s->tf ? RFLAGS_TF : 0);
	hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}

/*
 * A #DB while s is on. Without BS it is not the step's (INT1, or a
 * breakpoint fault before the instruction ran): the step goes on. With BS
 * the instruction completed and the step ends (hstep_end). The trap is
 * the guest's when its own TF was set at the instruction's start (SDM
 * Vol. 3 18.3.1.4: the trap follows an instruction that began with TF
 * set): DR6 as the processor wrote it. It is the guest's too when the
 * instruction also hit breakpoints of the guest's (its data breakpoints
 * are live while the engine is off; B0-B3 in DR6 are this #DB's causes,
 * SDM Vol. 3 18.2.3): DR6 without the hidden BS. Else it was the step's
 * alone, and the guest's DR6 of before goes back.
 */
enum hstep_db hstep_db(struct vcpu *v, struct hidden_step *s, const struct hv_event *ev)
{
	if (!s->on || ev->vector != X86_DB)
		return HSTEP_NOT_STEP;
	u64 dr6 = hv.ops->get_dr(v, 6);
	if (!(dr6 & DR6_BS))
		return HSTEP_NOT_STEP;
	hstep_end(v, s, true);
	if (s->tf)
		return HSTEP_GUEST;
	if (dr6 & DR6_CAUSES & ~DR6_BS) {
		hv.ops->set_dr(v, 6, dr6 & ~DR6_BS);
		return HSTEP_GUEST;
	}
	hv.ops->set_dr(v, 6, s->dr6);
	return HSTEP_HIDDEN;
}
