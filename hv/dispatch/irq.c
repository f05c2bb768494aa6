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
 *  - and when the branch engine's pacing lets it (trace_irq_pick,
 *    docs/branch-engine.md "Forward progress"): a traced guest whose
 *    interrupt handlers cost more than the time between interrupts would
 *    otherwise do nothing else. A HLT while one is held for pacing
 *    completes and the interrupt is due at once (the guest had nothing
 *    else to do): HLT exits only then.
 *
 * The highest vector goes first, as the local APIC would have dispatched
 * them, and those held with it follow at the guest's next chances without
 * waiting for the pace (trace/pace.c pace_pick: else a lower vector starves
 * under a timer that is always held again). While one is held, more of the
 * same vector coalesce in the local APIC (its IRR holds one while the
 * in-service bit is set), as a late tick would.
 *
 * The watcher (SVM's vCPU 0 with channel.control = poll; rec_ctl_watcher)
 * intercepts its external interrupts and HLTs always, traced or not: its
 * interrupts make a busy guest exit at least every tick, and its halts
 * are spent here, in root mode, looking for the host's requests
 * (idle_watch). Root mode.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"
#include "base/i8259.h"
#include "base/lapic.h"
#include "base/log.h"
#include "base/vecset.h"
#include "dispatch/dispatch.h"
#include "dispatch/irq.h"
#include "dispatch/mp.h"
#include "trace/pace.h"
#include "trace/rec.h"
#include "trace/dbg.h"
#include "trace/trace.h"

static int highest_held(const struct vcpu *v)
{
	return vecset_highest(v->irq_held);
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

/* The vector is in service at this processor's local APIC: it came
 * through it (an interrupt from the 8259 in ExtINT mode does not set it,
 * nor one with the APIC disabled in IA32_APIC_BASE, whose registers are
 * then not there). */
static bool lapic_in_service(u8 vector)
{
	return lapic_enabled() && (lapic_read(APIC_ISR0 + 0x10 * (vector / 32)) & (1u << (vector % 32)));
}

/*
 * While tracing paces interrupts, one that came through the 8259 (ExtINT)
 * has its in-service bit there ended as soon as the hypervisor holds it.
 * Left in service, it would hold back every lower level of the 8259 for
 * as long as the pace holds it and the guest's handler runs, and by then
 * the higher one has come again: the PIT's tick (level 0), which arrives
 * faster than a traced guest advances, won the 8259 at every
 * acknowledgement and the serial port's interrupt (level 4) was never
 * taken again (linux-rec-boot-tiny, when Linux had given up its local
 * APIC timer for the PIT: nothing /init wrote reached the console).
 * Ended here, each level is acknowledged at its own edge and held with
 * the rest, and pacing gives each its turn (trace/pace.c pace_pick). The
 * guest's own EOI later finds the bit clear (a specific EOI, Linux's, is
 * then nothing; a non-specific one ends whatever else is in service, as
 * the 8259's automatic-EOI mode would have it); its handler may be
 * interrupted by a lower level of the 8259 if it sets IF, and its reads
 * of the ISR see the bit clear. Untraced nothing changes.
 */
static void release_8259(struct vcpu *v, u8 vector)
{
	static bool said_ended, said_other;
	if (!trace_irq_paced(v) || lapic_in_service(vector))
		return;
	enum i8259_end e = i8259_end_acknowledged(vector);
	if (e == I8259_ENDED && !__atomic_exchange_n(&said_ended, true, __ATOMIC_RELAXED))
		LOG_INFO("vcpu %u: interrupts from the 8259 held for pacing end in service there at once "
			 "(vector %u first; docs/branch-engine.md \"Forward progress\")", v->id, (u32)vector);
	if (e == I8259_OTHER && !__atomic_exchange_n(&said_other, true, __ATOMIC_RELAXED))
		LOG_WARN("vcpu %u: vector %u came through the 8259 but its level is not the one in service "
			 "there (a rotated priority?): left in service (said once)", v->id, (u32)vector);
}

/*
 * The vector came again while one is held. The hypervisor's acknowledgement
 * set its in-service bit at the local APIC, where on hardware the second
 * would have waited in the IRR behind the first and merged with it (SDM
 * Vol. 3 11.8.4: the IRR holds one request per vector): the guest will take
 * one and EOI one, so that bit is ended here. The guest's EOI is not
 * specific: it ends the highest vector in service, and the hypervisor holds
 * some in service that the guest has not yet been given. A lower vector the
 * pacing lets go first (trace/pace.c pace_pick) is ended by the guest's EOI
 * of the higher one's bit; the APIC then delivers the higher one again
 * while the first is still held, and without this each such pair left one
 * bit in service for ever, which blocked every vector of its priority class
 * and below: Debian's traced boot lost its PIT's vector 0x30 that way,
 * under the local APIC timer's 0xec, and with it the serial port's 0x25 (no
 * output from /init). One the APIC just delivered is above the processor
 * priority, so the highest in service: any other is not this
 * acknowledgement's (an ExtINT from the 8259, whose in-service bit is its
 * own: release_8259) and stays.
 */
static bool merge_held(struct vcpu *v, u8 vector)
{
	static bool said;
	if (!vecset_has(v->irq_held, vector) || lapic_isr_highest() != vector)
		return false;
	lapic_write(APIC_EOI, 0);
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		LOG_INFO("vcpu %u: vector %u came again while held: merged with it, as the local APIC's IRR "
			 "would (said once; dispatch/irq.c merge_held)", v->id, (u32)vector);
	return true;
}

void irq_hold(struct vcpu *v, u8 vector)
{
	if (!merge_held(v, vector)) {
		vecset_set(v->irq_held, vector);
		release_8259(v, vector);
	}
	trace_irq_arrived(v, vector);
}

/* The highest held vector, no longer held; -1: none */
static int take_highest(struct vcpu *v)
{
	int vec = highest_held(v);
	if (vec >= 0)
		vecset_clear(v->irq_held, vec);
	return vec;
}

void irq_deliver(struct vcpu *v)
{
	/* the watcher's HLTs always exit; others' only to deliver a held one */
	bool watch = rec_ctl_watcher(v);
	if (watch && !v->irq_watch) {
		v->irq_watch = true;
		hv.ops->set_intr_intercept(v, true);	/* and stays on (engine_stop) */
	}
	int vec = highest_held(v);
	if (vec < 0) {
		set_window(v, false);
		set_hlt(v, watch);
		return;
	}
	if (hv.ops->irq_blocked(v)) {
		/* the window exit also ends a HLT the guest runs meanwhile
		 * (STI; HLT): a pending virtual interrupt (SVM) or an open
		 * window (VMX) wakes the processor from it */
		set_window(v, true);
		set_hlt(v, watch);
		return;
	}
	set_window(v, false);
	/* the highest when pacing lets one go, and then the rest held with
	 * it, each at the guest's next chance (pace_pick says why) */
	vec = trace_irq_pick(v);
	if (vec < 0) {
		set_hlt(v, true);	/* a HLT now makes it due */
		return;
	}
	hv.ops->inject_interrupt(v, (u8)vec);
	trace_irq_injected(v, (u8)vec);
	set_hlt(v, watch);	/* the next entry has an event: blocked */
}

/*
 * The watcher halts: rather than the processor, it waits here, in root
 * mode, until what would end the halt comes: an external interrupt the
 * guest takes (RFLAGS.IF set) or an NMI of the guest's. Every
 * REC_CTL_POLL_US meanwhile it looks at the host's control requests (and
 * the watchdog) and takes what is pending (the backend's take_pending).
 * The halt ends as on the processor: the guest goes on after its HLT,
 * the interrupt or NMI delivered there. Anything else (a kick, an
 * interrupt held while IF is clear) returns with the HLT not completed:
 * it runs again, after the entry path has done what that asked.
 */
static void idle_watch(struct vcpu *v, const struct hv_event *hlt)
{
	u64 period = rec_ctl_poll_tsc();
	for (;;) {
		rec_ctl_poll(v);
		if (dbg_held())
			return;	/* the HLT runs again after the hold (dbg_before_entry) */
		u8 vector = 0;
		u32 got = hv.ops->take_pending(v, &vector);
		bool kick = (got & HV_PENDING_NMI) && mp_take_kick(v);
		bool nmi = (got & HV_PENDING_NMI) && !kick;
		if (vector)
			irq_hold(v, vector);
		if (nmi || (vector && (v->rflags & RFLAGS_IF))) {
			hv_skip_insn(v, hlt, 1);
			if (vector)
				trace_irq_halted(v);
			if (nmi)
				hv_guest_nmi(v);
			return;
		}
		if (got)
			return;
		for (u64 t0 = rdtsc(); rdtsc() - t0 < period;)
			cpu_relax();
	}
}

void irq_on_hlt(struct vcpu *v, const struct hv_event *ev)
{
	if (highest_held(v) >= 0 && (v->rflags & RFLAGS_IF)) {
		hv_skip_insn(v, ev, 1);
		trace_irq_halted(v);
		return;
	}
	if (rec_ctl_watcher(v)) {
		idle_watch(v, ev);
		return;
	}
	/* nothing held, or a halt only an NMI or INIT ends: the processor
	 * halts (the HLT runs again, not intercepted) */
	set_hlt(v, false);
}

void irq_drop_held(struct vcpu *v)
{
	for (int vec = take_highest(v); vec >= 0; vec = take_highest(v)) {
		if (lapic_in_service((u8)vec))	/* not one from the 8259: the local APIC's EOI is not its */
			lapic_write(APIC_EOI, 0);
		LOG_DEBUG("vcpu %u: INIT drops held interrupt %u", v->id, (u32)vec);
	}
	for (int w = 0; w < 4; w++)
		v->irq_owed[w] = 0;
}
