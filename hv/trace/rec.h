/* hv/trace: the recorder. The engine's record stream split to the
 * hypervisor's own consumers (the flight recorder and the host stream),
 * each with its filter and its per-vCPU ring in the channel the host reads
 * (include/hvtrace/record.h, docs/recorder.md). Root mode. */
#ifndef HV_TRACE_REC_H
#define HV_TRACE_REC_H

#include "arch/x86/types.h"

struct vcpu;
struct hvtrace_ring;
struct hvtrace_rec;
struct hv_rec_filter;

/* One consumer's ring on one vCPU: the hypervisor's private view (the
 * shared header fields are written, never trusted). */
struct rec_ring {
	struct hvtrace_ring *g;		/* in the channel header */
	struct hvtrace_rec *recs;
	u64 mask;			/* capacity - 1 */
	u64 head;
	const struct hv_rec_filter *f;
	u16 mode;			/* enum hvtrace_ring_mode */
	u32 wait_us;			/* LOSSLESS: the bound on a wait (ours, not the header's) */
	bool dropping;			/* LOSSLESS: full, dropping until space returns */
	u64 pending_lost;		/* dropped, not yet told by a LOST record */
	u64 first_lost_tsc;
};

#define REC_MAX_CONSUMERS 2

struct rec_vcpu {
	struct rec_ring ring[REC_MAX_CONSUMERS];
	u32 nr_rings;
	u64 cr3;			/* the address space of the last record */
	u64 records, lost;		/* accepted by / dropped from its rings */
	u32 seen_gen;			/* the recorder state change it applied last */
	bool frozen_marked;		/* its CRASH marker is written */
	/* trace.freeze = hang:T: the span of addresses its records have
	 * touched since hang_t0 (a spin in one place stays inside a page) */
	u64 hang_t0, hang_lo, hang_hi;
	u32 hang_starts;		/* rec.starts when the watch began */
};
/* A hang: T of records whose addresses all lie within this many bytes. */
#define REC_HANG_SPAN	4096
/* HVTRACE_TRACE_FREEZE_AT's records after, at most (as hvtrace.cfg's) */
#define REC_FREEZE_AFTER_MAX	100000000ull

/* Lays out the channel (ivshmem BAR2 or reserved RAM) and the rings of
 * every vCPU; HV_OK or an enum hv_status. Before the guest first runs. */
int rec_init(void);

/* True while the recorder wants the engine running. */
bool rec_tracing(void);
/* The start trigger's address while the recorder waits for it, else 0. */
u64 rec_trigger_addr(void);
/* The trigger address was reached: tracing starts. */
void rec_trigger_hit(struct vcpu *v);
/* True once after each change of the recorder's state (on any vCPU): the
 * engine re-reads it before the guest runs again (trace_update). A freeze
 * made elsewhere gets this vCPU's CRASH marker here. */
bool rec_take_changed(struct vcpu *v);

/* One record of the engine's stream to every consumer (kind: enum
 * hvtrace_rec_kind; aux as record.h says). */
void rec_emit(struct vcpu *v, u8 kind, u64 from, u64 to, int from_cpl, u32 aux);
/* First thing on an exit while tracing: an address-space switch since the
 * last exit becomes a CR3 record. */
void rec_exit_begin(struct vcpu *v);

/* HVTRACE_HC_TRACE_CTL: 0 or a negative HVTRACE_E* code. */
s64 rec_hypercall(struct vcpu *v, u64 op, u64 arg);

/* Host control (docs/channel.md "Control"). The watcher's period while
 * the guest halts, the watchdog's longest period, and how many refused
 * requests are logged (the rest are only counted). */
#define REC_CTL_POLL_US		200
#define REC_WATCHDOG_MAX_US	3600000000ull
#define REC_CTL_LOG_REJECTS	8
/* Before every entry of every vCPU: the host's request, if one waits, is
 * checked and applied (or refused) here; the watchdog is checked too. */
void rec_ctl_poll(struct vcpu *v);
/* channel.control = poll is in force: requests are looked for while the
 * guest halts too (VMX: the preemption timer makes every vCPU exit; SVM:
 * the watcher, below). */
bool rec_ctl_polled(void);
/* v is the vCPU that watches for requests while the guest halts (SVM's
 * vCPU 0, with channel.control = poll): its HLTs and external interrupts
 * exit (dispatch/irq.c). */
bool rec_ctl_watcher(const struct vcpu *v);
/* REC_CTL_POLL_US in TSC ticks */
u64 rec_ctl_poll_tsc(void);

/* The guest crashed on v (enum hvtrace_freeze): CRASH markers (v's now,
 * the others' at their next exit), then the rings are kept as they are for
 * the host. */
void rec_freeze(struct vcpu *v, u32 why);
/* After a freeze that ends the machine (a triple fault's shutdown): waits,
 * up to REC_MARKERS_WAIT_US, for every other running vCPU's CRASH marker,
 * written at its next exit after the kick. */
#define REC_MARKERS_WAIT_US	100000
void rec_await_markers(struct vcpu *v);
/* An NMI for the guest: freezes with trace.freeze = nmi. */
void rec_on_nmi(struct vcpu *v);

#endif
