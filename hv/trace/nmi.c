/*
 * NMI blocking as the processor keeps it, traced and idle (SDM Vol. 3
 * 6.7.1, AMD APM Vol. 2 8.2.1): from an NMI's delivery until the next IRET
 * completes, further NMIs are held (one of them pending), then delivered.
 *
 * The hypervisor delivers an NMI itself wherever it intercepts them: SVM
 * always (the kick is an NMI, dispatch/mp.c), VMX while tracing (NMI
 * exiting). SVM's EVENTINJ does not block the guest's later NMIs (an
 * intercepted NMI exits whatever the guest's state: APM 15.21.x), so the
 * blocking is kept here: the IRET that ends it is found by the engine's
 * single step while tracing, and by SVM's IRET intercept while idle. That
 * intercept exits before the IRET runs (APM 15.9, exit code 74h): the
 * blocking ends at the next exit from elsewhere, and when an NMI waits for
 * it, the IRET is single-stepped (TF and an intercepted #DB, the trap after
 * it hidden from the guest unless its own TF asked for one) so the NMI goes
 * in right after it, as on hardware (trace/hstep.c; the IRET loads RFLAGS,
 * so the TF after it is the one it popped). KVM's SVM does the same
 * without vNMI (svm.c iret_interception). VMX without virtual NMIs blocks
 * NMIs itself after an injected one (SDM Vol. 3 26.6.1.2): no intercept
 * there (set_iret_intercept NULL). Root mode.
 *
 * Limit: an event delivered while that IRET is stepped (a fault of the
 * IRET itself, an interrupt with IF set in the NMI handler) saves the
 * forced TF in its frame; the step's trap then comes after that handler's
 * IRET and is taken as this one's.
 */
#include "hvtrace/abi.h"
#include "arch/x86/dr.h"
#include "arch/x86/paging.h"
#include "arch/x86/vectors.h"
#include "base/vcpu.h"
#include "trace/engine.h"
#include "trace/hstep.h"

/* An event (a fault, an interrupt being delivered again) already goes in
 * at the next entry: the NMI waits for the exit after it, which a kick
 * (an NMI to this processor, intercepted) makes come at once. */
bool nmi_can_inject(struct vcpu *v)
{
	if (!hv.ops->event_pending || !hv.ops->event_pending(v))
		return true;
	hv_kick(v);
	return false;
}

void nmi_deliver(struct vcpu *v)
{
	v->trace->nmi_blocked = true;
	hv.ops->inject_nmi(v);
	if (v->trace->engine != HVTRACE_ENGINE_OFF)
		follow_event(v, X86_NMI, HVTRACE_REC_INTERRUPT, X86_NMI | HVTRACE_AUX_NMI);
}

/* An NMI for the guest (not the hypervisor's kick). Traced, it is recorded
 * like an external interrupt to its vector-2 handler. Idle under VMX the
 * backend injects it as it is (false). */
bool trace_on_nmi(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (t->engine != HVTRACE_ENGINE_OFF) {
		t->trace_exits++;
		t->step.valid = false;
	} else if (!hv.ops->set_iret_intercept) {
		return false;
	}
	if (t->nmi_blocked || !nmi_can_inject(v))
		t->nmi_pending = true;
	else
		nmi_deliver(v);
	return true;
}

/* The IRET intercept's exit (SVM, idle): the IRET runs at the next entry. */
void trace_on_iret(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	t->nmi_awaiting = true;
	t->nmi_iret_rip = v->rip;
	t->nmi_iret_on = false;
	hv.ops->set_iret_intercept(v, false);
}

/* Every exit: past the intercepted IRET, it has run and the blocking ends */
void nmi_exit_begin(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (t->nmi_awaiting && v->rip != t->nmi_iret_rip)
		t->nmi_awaiting = t->nmi_blocked = false;
}

/* The IRET ran under the engine's step (or the guest's own trap): the
 * blocking ends (SDM Vol. 3 6.7.1). */
void nmi_iret_done(struct vcpu *v)
{
	v->trace->nmi_blocked = v->trace->nmi_awaiting = false;
}

/* The step the engine takes over (it starts meanwhile): the IRET has not
 * run, TF the guest's of before */
void nmi_step_cancel(struct vcpu *v)
{
	if (v->trace->nmi_step.on)
		hstep_end(v, &v->trace->nmi_step, false);
}

/* The #DB of the IRET's step (engine off): the IRET completed and the NMI
 * waiting for it goes in before the next instruction. True: the trap was
 * ours alone and the guest's DR6 is as before it (trace/hstep.c). */
bool nmi_step_db(struct vcpu *v, const struct hv_event *ev)
{
	enum hstep_db r = hstep_db(v, &v->trace->nmi_step, ev);
	if (r == HSTEP_NOT_STEP)
		return false;
	nmi_iret_done(v);
	return r == HSTEP_HIDDEN;
}

/* Before an entry with the engine off: the NMI that waited goes in; the
 * IRET intercept is on while one is blocked; the intercepted IRET is
 * stepped when an NMI waits for it. With the engine on, the engine steps
 * every IRET (trace_before_entry delivers the one that waited). */
void nmi_before_entry(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	if (!hv.ops->set_iret_intercept)
		return;
	bool off = t->engine == HVTRACE_ENGINE_OFF;
	if (off && t->nmi_pending && !t->nmi_blocked && nmi_can_inject(v)) {
		t->nmi_pending = false;
		nmi_deliver(v);
	}
	bool iret = off && t->nmi_blocked && !t->nmi_awaiting;
	if (iret != t->nmi_iret_on) {
		t->nmi_iret_on = iret;
		hv.ops->set_iret_intercept(v, iret);
	}
	if (off && t->nmi_awaiting && t->nmi_pending && !t->nmi_step.on)
		hstep_arm(v, &t->nmi_step, true);
}

/* INIT: no NMI blocked or waiting (the processor's state after INIT) */
void trace_nmi_reset(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	t->nmi_step.on = false;	/* RFLAGS is INIT's */
	t->nmi_blocked = t->nmi_pending = t->nmi_awaiting = false;
	if (t->engine == HVTRACE_ENGINE_OFF)
		hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}
