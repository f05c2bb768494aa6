/* The hidden single step with the engine off (trace/hstep.c), shared by an
 * NMI's IRET (trace/nmi.c) and the host debugger's stepi (trace/dbg.c).
 * Root mode. */
#ifndef HV_TRACE_HSTEP_H
#define HV_TRACE_HSTEP_H
#include "trace/trace.h"

struct vcpu;
struct hv_event;

/* TF forced for v's next instruction, #DB intercepted; the guest's TF and
 * DR6 kept in s. loads_rflags: the instruction is an IRET. */
void hstep_arm(struct vcpu *v, struct hidden_step *s, bool loads_rflags);
/* The step is over (ran: its instruction completed): TF the guest's. */
void hstep_end(struct vcpu *v, struct hidden_step *s, bool ran);
enum hstep_db {
	HSTEP_NOT_STEP,	/* not the step's #DB: the step goes on */
	HSTEP_GUEST,	/* the step ended; the #DB goes to the guest */
	HSTEP_HIDDEN,	/* the step ended; the #DB was its alone */
};
/* A #DB with the engine off, while s may be on: whose it is. */
enum hstep_db hstep_db(struct vcpu *v, struct hidden_step *s, const struct hv_event *ev);
#endif
