/*
 * Forward progress while tracing (docs/branch-engine.md): a paced external
 * interrupt is injected only once the guest has made `pace` branches
 * outside the handler of the one before. Where handlers cost more branches
 * than the time between interrupts allows (traced, a timer handler can
 * take longer than the tick), the guest still advances pace branches per
 * interrupt; where they cost less, nothing changes but the interrupt's
 * lateness.
 *
 * Only the vectors that need it are paced (issue 25): those whose traced
 * handler runs for half their period or more (both measured in TSC ticks
 * on their last instances), or that came again while their own handler
 * ran: in practice the periodic timers. Every other vector goes as soon as
 * the guest can take it, as untraced: a self-IPI or an interrupt a lowered
 * task priority lets in arrives before the next instructions, as on
 * hardware.
 *
 * The handler of an injected interrupt ends at the IRET that returns to
 * where it interrupted, on the stack it interrupted (the engines step
 * every IRET). One that never returns there (the guest switched tasks
 * inside it) is taken as ended after PACE_SERVICE_LIMIT times the pace.
 * A held paced interrupt therefore waits at most (PACE_SERVICE_LIMIT + 1) *
 * pace branches, or until the guest halts. Pure logic, no hardware.
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

/* Paced while its traced handler takes half its period or more: less,
 * and the guest keeps at least half its time, as untraced */
static void storm_update(struct irq_pace *p, u8 vec)
{
	if (!p->period[vec] || !p->cost[vec])
		return;
	if (p->cost[vec] >= p->period[vec] / 2)
		vecset_set(p->storm, vec);
	else
		vecset_clear(p->storm, vec);
}

bool pace_due(struct irq_pace *p, u64 branches)
{
	if (!p->pace || p->halted)
		return true;
	service_expire(p, branches);
	return !p->in_service && branches - p->mark >= p->pace;
}

void pace_arrived(struct irq_pace *p, u8 vector)
{
	if (p->pace && p->in_service && p->service_vec == vector)
		vecset_set(p->storm, vector);	/* it outran its own handler */
}

void pace_injected(struct irq_pace *p, u64 branches, u64 ret_lin, u64 sp, u8 vector, u64 tsc)
{
	p->injected++;
	if (p->waiting && vecset_has(p->storm, vector))
		p->paced++;
	p->waiting = p->halted = false;
	p->in_service = true;
	p->service_vec = vector;
	p->service_tsc = tsc;
	p->ret_lin = ret_lin;
	p->ret_sp = sp;
	p->mark = branches;
	if (p->last_inj[vector])
		p->period[vector] = tsc - p->last_inj[vector];
	p->last_inj[vector] = tsc ? tsc : 1;
	storm_update(p, vector);
}

void pace_iret(struct irq_pace *p, u64 branches, u64 to_lin, u64 sp, u64 tsc)
{
	if (p->in_service && to_lin == p->ret_lin && (sp == p->ret_sp || sp == PACE_SP_ANY)) {
		p->in_service = false;
		p->mark = branches;
		p->cost[p->service_vec] = (tsc - p->service_tsc) | 1;
		storm_update(p, p->service_vec);
	}
}

int pace_pick(struct irq_pace *p, u64 held[4], u64 owed[4], bool due)
{
	int vec;
	if (due) {
		vec = vecset_highest(held);
		for (int w = 0; w < 4; w++)
			owed[w] = held[w];
	} else {
		u64 may[4];
		bool paced_held = false;
		for (int w = 0; w < 4; w++) {
			may[w] = held[w] & (owed[w] | ~p->storm[w]);
			paced_held |= (held[w] & ~may[w]) != 0;
		}
		vec = vecset_highest(may);
		p->waiting |= paced_held;
	}
	if (vec >= 0) {
		vecset_clear(held, vec);
		vecset_clear(owed, vec);
	}
	return vec;
}
