/*
 * External interrupts on their way to the guest. While the hypervisor
 * intercepts them (tracing), the backend acknowledges each one at the
 * local APIC (its in-service bit is set; the guest EOIs it) and it waits
 * here, in v->irq_held, until it can be injected:
 *
 *  - when the guest can take it (RFLAGS.IF, no STI/MOV SS shadow, no
 *    other event being injected); otherwise an interrupt-window exit is
 *    armed. On VMX an external-interrupt exit comes whatever the guest's
 *    IF, and injecting one into IF = 0 fails the entry (SDM Vol. 3
 *    26.2.1.3);
 *  - and when the branch engine's pacing lets it (trace_irq_due,
 *    docs/branch-engine.md "Forward progress"): a traced guest whose
 *    interrupt handlers cost more than the time between interrupts would
 *    otherwise do nothing else. A HLT while one is held for pacing
 *    completes and the interrupt is due at once (the guest had nothing
 *    else to do): HLT exits only then.
 *
 * The highest vector goes first, as the local APIC would have dispatched
 * them. While one is held, more of the same vector coalesce in the local
 * APIC (its IRR holds one while the in-service bit is set), as a late tick
 * would. Root mode.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"
#include "base/lapic.h"
#include "base/log.h"
#include "dispatch/irq.h"
#include "trace/trace.h"

static int highest_held(const struct vcpu *v)
{
	for (int w = 3; w >= 0; w--)
		if (v->irq_held[w])
			return w * 64 + 63 - __builtin_clzll(v->irq_held[w]);
	return -1;
}

/* The backend's controls change only when what they should be changes:
 * this runs before every entry. */
static void set_window(struct vcpu *v, bool on)
{
	if (v->irq_window != on) {
		v->irq_window = on;
		hv.ops->set_irq_window(v, on);
	}
}

static void set_hlt(struct vcpu *v, bool on)
{
	if (v->irq_hlt != on) {
		v->irq_hlt = on;
		hv.ops->set_hlt_intercept(v, on);
	}
}

void irq_hold(struct vcpu *v, u8 vector)
{
	v->irq_held[vector / 64] |= 1ull << (vector % 64);
}

/* The highest held vector, no longer held; -1: none */
static int take_highest(struct vcpu *v)
{
	int vec = highest_held(v);
	if (vec >= 0)
		v->irq_held[vec / 64] &= ~(1ull << (vec % 64));
	return vec;
}

void irq_deliver(struct vcpu *v)
{
	int vec = highest_held(v);
	if (vec < 0) {
		set_window(v, false);
		set_hlt(v, false);
		return;
	}
	if (hv.ops->irq_blocked(v)) {
		/* the window exit also ends a HLT the guest runs meanwhile
		 * (STI; HLT): a pending virtual interrupt (SVM) or an open
		 * window (VMX) wakes the processor from it */
		set_window(v, true);
		set_hlt(v, false);
		return;
	}
	set_window(v, false);
	if (!trace_irq_due(v)) {
		set_hlt(v, true);	/* a HLT now makes it due */
		return;
	}
	take_highest(v);
	hv.ops->inject_interrupt(v, (u8)vec);
	trace_irq_injected(v, (u8)vec);
	set_hlt(v, false);	/* the next entry has an event: blocked */
}

void irq_on_hlt(struct vcpu *v, const struct hv_event *ev)
{
	if (highest_held(v) < 0 || !(v->rflags & RFLAGS_IF)) {
		/* nothing held, or a halt only an NMI or INIT ends: the
		 * processor halts (the HLT runs again, not intercepted) */
		set_hlt(v, false);
		return;
	}
	hv_skip_insn(v, ev, 1);
	trace_irq_halted(v);
}

void irq_drop_held(struct vcpu *v)
{
	for (int vec = take_highest(v); vec >= 0; vec = take_highest(v)) {
		lapic_write(APIC_EOI, 0);
		LOG_DEBUG("vcpu %u: INIT drops held interrupt %u", v->id, (u32)vec);
	}
}
