/*
 * Forward progress while tracing (docs/branch-engine.md): an external
 * interrupt is injected only once the guest has made `pace` branches
 * outside the handler of the one before. Where handlers cost more branches
 * than the time between interrupts allows (traced, a timer handler can
 * take longer than the tick), the guest still advances pace branches per
 * interrupt; where they cost less, nothing changes but the interrupt's
 * lateness.
 *
 * The handler of an injected interrupt ends at the IRET that returns to
 * where it interrupted, on the stack it interrupted (the engines step
 * every IRET). One that never returns there (the guest switched tasks
 * inside it) is taken as ended after PACE_SERVICE_LIMIT times the pace.
 * A held interrupt therefore waits at most (PACE_SERVICE_LIMIT + 1) * pace
 * branches, or until the guest halts. Pure logic, no hardware.
 */
#include "base/vecset.h"
#include "trace/pace.h"

static void service_expire(struct irq_pace *p, u64 branches)
{
	if (p->in_service && branches - p->mark >= (u64)p->pace * PACE_SERVICE_LIMIT) {
		p->in_service = false;
		p->mark = branches;
	}
}

bool pace_due(struct irq_pace *p, u64 branches)
{
	if (!p->pace || p->halted)
		return true;
	service_expire(p, branches);
	if (!p->in_service && branches - p->mark >= p->pace)
		return true;
	p->waiting = true;
	return false;
}

void pace_injected(struct irq_pace *p, u64 branches, u64 ret_lin, u64 sp)
{
	p->injected++;
	if (p->waiting)
		p->paced++;
	p->waiting = p->halted = false;
	p->in_service = true;
	p->ret_lin = ret_lin;
	p->ret_sp = sp;
	p->mark = branches;
}

void pace_iret(struct irq_pace *p, u64 branches, u64 to_lin, u64 sp)
{
	if (p->in_service && to_lin == p->ret_lin && (sp == p->ret_sp || sp == PACE_SP_ANY)) {
		p->in_service = false;
		p->mark = branches;
	}
}

int pace_pick(u64 held[4], u64 owed[4], bool due)
{
	int vec;
	if (due) {
		vec = vecset_highest(held);
		for (int w = 0; w < 4; w++)
			owed[w] = held[w];
	} else {
		u64 both[4];
		for (int w = 0; w < 4; w++)
			both[w] = held[w] & owed[w];
		vec = vecset_highest(both);
	}
	if (vec >= 0) {
		vecset_clear(held, vec);
		vecset_clear(owed, vec);
	}
	return vec;
}
