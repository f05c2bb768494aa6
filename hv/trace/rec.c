/*
 * The recorder: the hypervisor's own consumers of the branch engine's
 * record stream, independent of whatever the guest programs for its BTS.
 * Two consumers, each with its filter and a ring per vCPU:
 *
 *  - the flight recorder (flight.*): an OVERWRITE ring holding the newest
 *    records, frozen when the guest crashes;
 *  - the host stream (stream.*): a LOSSLESS ring the host drains; when it
 *    is full the vCPU waits (bounded by stream.wait) for the reader, then
 *    records are dropped, counted exactly, and announced by a LOST record.
 *
 * The rings live in the channel (include/hvtrace/record.h): BAR2 of an
 * ivshmem device the loader found, or pages of the hypervisor's reserve.
 * Triggers (trace.start, trace.stop, the trace-control hypercall, the
 * host's control requests, a crash) move the recorder between IDLE,
 * TRACING, STOPPED and FROZEN; the engine runs while it traces
 * (trace_update). docs/recorder.md, docs/channel.md. Root mode.
 */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "trace/dbg.h"
#include "trace/trace.h"
#include "trace/rec.h"

#define CR3_ADDR_MASK	0x000ffffffffff000ull

/*
 * Machine-wide state, shared by every vCPU; the rings are per vCPU and
 * only their own vCPU writes them (no lock on the record path). A state
 * change is made under `lock`, bumps `gen`, and kicks every other vCPU
 * (base/vcpu.h hv_kick: an NMI under SVM, the 1 ms preemption timer under
 * VMX) so that each re-reads it at its next exit (trace_before_entry). The
 * record count and skip count are atomic.
 */
static struct {
	struct hvtrace_chan *chan;	/* NULL: no consumer configured */
	const struct hv_rec_cfg *cfg;
	volatile u32 state;		/* enum hvtrace_chan_state */
	volatile u32 gen;		/* bumped by every state change */
	u64 made;			/* records made since tracing started (atomic) */
	u64 skip;			/* REC_START_BRANCHES: still to skip (atomic) */
	struct spinlock lock;		/* state changes */
	u64 start_tsc;			/* when tracing started */
	u64 start_exits;		/* every vCPU's engine exits then (trace_exits) */
	u64 stop_tsc;			/* REC_STOP_TIME: TSC ticks after start_tsc */
	u64 hang_tsc;			/* trace.freeze = hang:T, in TSC ticks; 0: none */
	u32 starts;			/* times tracing started (start()) */
	u64 freeze_target;		/* a trace.freeze address was reached: freeze at */
	volatile u32 freeze_armed;	/* ... this many records (made) */
	/* the freeze addresses: hvtrace.cfg's, then HVTRACE_TRACE_FREEZE_AT's */
	u64 freeze_at[HV_REC_MAX_FREEZE], freeze_after[HV_REC_MAX_FREEZE];
	volatile u32 nr_freeze_at;
	/* each consumer's filter: hvtrace.cfg's, or the trace_ctl filter's */
	struct hv_rec_filter filter[REC_MAX_CONSUMERS];
	/* host control (docs/channel.md "Control"): what the hypervisor
	 * knows, never read back from the channel */
	u32 ctl_mode;			/* enum hvtrace_ctl_mode in force */
	volatile u64 ctl_done;		/* seq of the last request handled */
	u64 ctl_applied, ctl_rejected;
	struct spinlock ctl_lock;	/* one vCPU handles a request */
	u64 wd_deadline;		/* the watchdog's TSC deadline; 0: none (atomic) */
} rec;

/* Under rec.lock. */
static void set_state(struct vcpu *v, u32 state)
{
	rec.state = state;
	__atomic_add_fetch(&rec.gen, 1, __ATOMIC_SEQ_CST);
	if (rec.chan) {
		rec.chan->state = state;
		rec.chan->seq++;
	}
	if (v)
		hv_kick_others(v);
}

/* --- layout ----------------------------------------------------------- */

static u64 ring_records(u64 bytes)
{
	return bytes / sizeof(struct hvtrace_rec);
}

static void ring_setup(struct vcpu *v, struct hvtrace_chan *c, u64 *off, u16 consumer,
		       const struct hv_rec_consumer *cc, const struct hv_rec_filter *f)
{
	struct rec_vcpu *r = &v->trace->rec;
	struct hvtrace_ring *g = &c->rings[c->nr_rings++];
	struct rec_ring *ring = &r->ring[r->nr_rings++];

	g->vcpu = v->id;
	g->consumer = consumer;
	g->mode = (u16)cc->mode;	/* the loader's default or hvtrace.cfg's */
	g->offset = *off;
	g->capacity = ring_records(cc->size);
	g->cpl_filter = f->cpl;
	g->wait_us = cc->mode == HVTRACE_RING_LOSSLESS ? cc->wait_us : 0;
	ring->g = g;
	ring->recs = (struct hvtrace_rec *)((u8 *)c + *off);
	ring->mask = g->capacity - 1;
	ring->f = f;
	ring->mode = g->mode;
	ring->wait_us = g->wait_us;
	*off += cc->size;
}

/* Where the channel goes: an ivshmem device's BAR2 when the loader found
 * one (it looks only when `channel` is not `ram`), else the reserve. */
static struct hvtrace_chan *chan_place(u64 bytes, u64 *pa, u32 *where)
{
	const struct hv_rec_cfg *cfg = &hv.boot.rec;
	const struct hv_boot_ivshmem *iv = &hv.boot.ivshmem;
	if (iv->found) {
		if (iv->bar2_size < bytes) {
			LOG_ERR("recorder: %lu KiB of rings do not fit in the ivshmem device's %lu KiB: "
				"give it more memory (size=) or lower flight.size/stream.size",
				bytes >> 10, iv->bar2_size >> 10);
			return NULL;
		}
		*pa = iv->bar2_pa;
		*where = HVTRACE_CHAN_IVSHMEM;
		/* the host may have left anything there: only the header is
		 * cleared, the rings are written before they are read */
		return guest_pa_ptr(iv->bar2_pa);
	}
	if (cfg->channel == REC_CHAN_IVSHMEM) {
		LOG_ERR("recorder: 'channel = ivshmem' but the loader found no ivshmem-plain device "
			"(QEMU: -device ivshmem-plain,memdev=...)");
		return NULL;
	}
	void *p = mm_alloc_pages(bytes / PAGE_SIZE, pa);
	*where = HVTRACE_CHAN_RESERVED_RAM;
	if (!p)
		LOG_ERR("recorder: %lu KiB of rings do not fit in the reserve (%lu KiB free): raise "
			"'memory' or lower flight.size/stream.size", bytes >> 10, mm_free_bytes() >> 10);
	return p;
}

/* microseconds to TSC ticks without overflow (at most a day of them) */
static u64 us_to_tsc(u64 us)
{
	return us / 1000000 * hv.boot.tsc_hz + us % 1000000 * hv.boot.tsc_hz / 1000000;
}

int rec_init(void)
{
	const struct hv_rec_cfg *cfg = &hv.boot.rec;
	rec.cfg = cfg;
	if (!cfg->flight.size && !cfg->stream.size)
		return HV_OK;

	u64 per_vcpu = cfg->flight.size + cfg->stream.size, pa;
	u32 where;
	if (hv.nr_vcpus * (u32)(!!cfg->flight.size + !!cfg->stream.size) > HVTRACE_CHAN_MAX_RINGS)
		return HV_ERR_REC_CONFIG;
	/* the debugger's area, where the host can write: an ivshmem channel with control */
	bool debugger = hv.boot.ivshmem.found && cfg->control != HVTRACE_CTL_OFF;
	u64 dbg_bytes = debugger ? dbg_area_size(hv.nr_vcpus) : 0;
	struct hvtrace_chan *c = chan_place(HVTRACE_CHAN_HDR_SIZE + per_vcpu * hv.nr_vcpus + dbg_bytes, &pa, &where);
	if (!c)
		return HV_ERR_REC_CONFIG;

	memset(c, 0, HVTRACE_CHAN_HDR_SIZE);
	u64 off = HVTRACE_CHAN_HDR_SIZE;
	rec.filter[0] = cfg->flight.filter;
	rec.filter[1] = cfg->stream.filter;
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		struct vcpu *v = hv.vcpus[i];
		if (cfg->flight.size)
			ring_setup(v, c, &off, HVTRACE_CONSUMER_FLIGHT, &cfg->flight, &rec.filter[0]);
		if (cfg->stream.size)
			ring_setup(v, c, &off, HVTRACE_CONSUMER_STREAM, &cfg->stream, &rec.filter[1]);
	}
	if (debugger && where == HVTRACE_CHAN_IVSHMEM) {
		off = (off + PAGE_SIZE - 1) & ~(u64)(PAGE_SIZE - 1);
		dbg_init((struct hvtrace_dbg *)((u8 *)c + off));
		c->dbg_offset = off;
		off += dbg_bytes;
	}
	c->abi_version = HVTRACE_ABI_VERSION;
	c->rec_size = sizeof(struct hvtrace_rec);
	c->hdr_size = HVTRACE_CHAN_HDR_SIZE;
	c->size = off;
	c->phys_base = pa;
	c->tsc_hz = hv.boot.tsc_hz;
	c->where = where;
	c->nr_vcpus = hv.nr_vcpus;
	if ((cfg->stop == REC_STOP_TIME || cfg->freeze_hang_us) && !hv.boot.tsc_hz) {
		LOG_ERR("recorder: %s needs the TSC rate, which the loader could not measure",
			cfg->stop == REC_STOP_TIME ? "trace.stop = time" : "trace.freeze = hang");
		return HV_ERR_REC_CONFIG;
	}
	if (cfg->stop == REC_STOP_TIME)
		rec.stop_tsc = us_to_tsc(cfg->stop_arg);
	rec.hang_tsc = us_to_tsc(cfg->freeze_hang_us);
	for (u32 i = 0; i < cfg->nr_freeze_at && i < HV_REC_MAX_FREEZE; i++) {
		rec.freeze_at[i] = cfg->freeze_at[i];
		rec.freeze_after[i] = cfg->freeze_after[i];
	}
	rec.nr_freeze_at = cfg->nr_freeze_at < HV_REC_MAX_FREEZE ? cfg->nr_freeze_at : HV_REC_MAX_FREEZE;
	/* host requests where the host can write: an ivshmem channel */
	rec.ctl_mode = where == HVTRACE_CHAN_IVSHMEM ? cfg->control : HVTRACE_CTL_OFF;
	rec.ctl_done = rec.ctl_applied = rec.ctl_rejected = 0;	/* the channel's, cleared above */
	c->ctl_mode = rec.ctl_mode;
	c->ctl_poll_us = rec.ctl_mode == HVTRACE_CTL_POLL ? REC_CTL_POLL_US : 0;
	rec.chan = c;
	rec.skip = cfg->start == REC_START_BRANCHES ? cfg->start_arg : 0;
	rec.made = 0;
	rec.start_tsc = rdtsc();
	set_state(NULL, cfg->start == REC_START_BOOT || cfg->start == REC_START_BRANCHES
				? HVTRACE_STATE_TRACING
				: HVTRACE_STATE_IDLE);
	/* the magic last: a reader scanning memory never sees half a header */
	asm volatile("" ::: "memory");
	c->magic = HVTRACE_CHAN_MAGIC;
	LOG_INFO("recorder: channel at %016lx (%s, %lu KiB): flight %lu KiB%s, stream %lu KiB%s per vCPU; "
		 "%s", pa, where == HVTRACE_CHAN_IVSHMEM ? "ivshmem" : "reserved RAM", off >> 10,
		 cfg->flight.size >> 10, cfg->flight.mode == HVTRACE_RING_LOSSLESS ? " lossless" : "",
		 cfg->stream.size >> 10, cfg->stream.mode == HVTRACE_RING_OVERWRITE ? " overwriting" : "",
		 rec.state == HVTRACE_STATE_TRACING ? "tracing from boot" : "waiting for the start trigger");
	if (rec.ctl_mode != HVTRACE_CTL_OFF)
		LOG_INFO("recorder: host control requests read at every exit%s",
			 rec.ctl_mode == HVTRACE_CTL_POLL ? " and while the guest halts" : "");
	return HV_OK;
}

static void deliver(struct vcpu *v, const struct hvtrace_rec *r, u64 cr3);

/* --- state -------------------------------------------------------------- */

bool rec_tracing(void)
{
	return rec.state == HVTRACE_STATE_TRACING;
}

u64 rec_trigger_addr(void)
{
	return rec.chan && rec.state == HVTRACE_STATE_IDLE && rec.cfg->start == REC_START_ADDR
		       ? rec.cfg->start_arg
		       : 0;
}

bool rec_take_changed(struct vcpu *v)
{
	struct rec_vcpu *rv = &v->trace->rec;
	u32 gen = __atomic_load_n(&rec.gen, __ATOMIC_ACQUIRE);
	if (gen == rv->seen_gen)
		return false;
	rv->seen_gen = gen;
	/* frozen by another vCPU: this one's CRASH marker, on its own ring */
	if (rec.state == HVTRACE_STATE_FROZEN && !rv->frozen_marked && rec.chan) {
		rv->frozen_marked = true;
		struct hvtrace_rec r = { .tsc = rdtsc(), .from = gmem_linear_rip(v), .to = rec.chan->freeze,
					 .vcpu = (u16)v->id, .kind = HVTRACE_REC_MARKER,
					 .aux = HVTRACE_MARK_CRASH };
		int cpl = hv.ops->get_cpl(v);
		r.info = HVTRACE_INFO_MAKE(cpl, cpl);
		deliver(v, &r, rv->cr3);
	}
	return true;
}

static void mark(struct vcpu *v, u32 code, u64 from, u64 to)
{
	int cpl = hv.ops->get_cpl(v);
	rec_emit(v, HVTRACE_REC_MARKER, from, to, cpl, code);
}

/* The engine exits of every vCPU so far (each vCPU counts its own; a
 * moment's lag on the others does not matter to the log line it is for) */
static u64 all_trace_exits(void)
{
	u64 n = 0;
	for (u32 i = 0; i < hv.nr_vcpus; i++)
		if (hv.vcpus[i] && hv.vcpus[i]->trace)
			n += __atomic_load_n(&hv.vcpus[i]->trace->trace_exits, __ATOMIC_RELAXED);
	return n;
}

/* start, stop: under rec.lock */
static void start(struct vcpu *v, u64 at)
{
	__atomic_store_n(&rec.made, 0, __ATOMIC_SEQ_CST);
	rec.start_tsc = rdtsc();
	rec.start_exits = all_trace_exits();
	rec.freeze_armed = 0;
	__atomic_add_fetch(&rec.starts, 1, __ATOMIC_RELAXED);
	set_state(v, HVTRACE_STATE_TRACING);
	v->trace->rec.cr3 = hv.ops->get_cr(v, 3) & CR3_ADDR_MASK;
	mark(v, HVTRACE_MARK_START, at, v->trace->rec.cr3);
	LOG_INFO("recorder: tracing starts at %016lx", at);
}

/* made: the records made, as the caller counted them (other vCPUs may
 * still be adding to rec.made for a moment) */
static void stop(struct vcpu *v, const char *why, u64 made)
{
	mark(v, HVTRACE_MARK_STOP, gmem_linear_rip(v), made);
	set_state(v, HVTRACE_STATE_STOPPED);
	LOG_INFO("recorder: tracing stopped (%s) after %lu records, %lu engine exits", why, made,
		 all_trace_exits() - rec.start_exits);
}

/* Whichever vCPU reaches the address first starts tracing for all. */
void rec_trigger_hit(struct vcpu *v)
{
	spin_lock(&rec.lock);
	if (rec_trigger_addr())
		start(v, rec.cfg->start_arg);
	spin_unlock(&rec.lock);
}

/* --- records ------------------------------------------------------------ */

/* Does this consumer keep the record, and with which addresses? */
static bool filter(const struct hv_rec_filter *f, struct hvtrace_rec *r, u64 cr3)
{
	int fc = HVTRACE_INFO_FROM_CPL(r->info), tc = HVTRACE_INFO_TO_CPL(r->info);
	if (r->kind == HVTRACE_REC_MARKER || r->kind == HVTRACE_REC_LOST || r->kind == HVTRACE_REC_CR3)
		return true;
	if (f->cr3 && cr3 != (f->cr3 & CR3_ADDR_MASK))
		return false;
	if (f->nr_ranges) {
		bool in = false;
		for (u32 i = 0; i < f->nr_ranges && !in; i++)
			in = (r->from >= f->ranges[i].lo && r->from <= f->ranges[i].hi) ||
			     (r->to >= f->ranges[i].lo && r->to <= f->ranges[i].hi);
		if (!in)
			return false;
	}
	switch (f->cpl) {
	case HVTRACE_CPL_KERNEL:
		return fc == 0 || tc == 0;
	case HVTRACE_CPL_USER:
		if (fc == 0 && tc == 0)
			return false;
		/* a user-only consumer never sees a kernel address */
		if (fc == 0)
			r->from = HVTRACE_ADDR_KERNEL;
		if (tc == 0)
			r->to = HVTRACE_ADDR_KERNEL;
		return true;
	}
	return true;
}

static void ring_write(struct rec_ring *ring, const struct hvtrace_rec *r)
{
	ring->recs[ring->head & ring->mask] = *r;
	asm volatile("" ::: "memory");	/* the record before head (x86 orders stores) */
	ring->head++;
	*(volatile u64 *)&ring->g->head = ring->head;
}

/* Free slots of a lossless ring, from the reader's tail (the only fields,
 * with `reader`, the hypervisor reads back from the channel). A tail the
 * hypervisor cannot believe (ahead of head, or more than a ring behind)
 * counts as no reader progress at all: nothing is overwritten. */
static u64 ring_room(const struct rec_ring *ring)
{
	u64 tail = *(volatile u64 *)&ring->g->tail;
	u64 used = ring->head - tail;
	if (tail > ring->head || used > ring->mask + 1)
		return 0;
	return ring->mask + 1 - used;
}

/* Waits up to the ring's bound for `need` free slots; true when they came.
 * While dropping it waits only for a marker: a stop or crash marker (with
 * the LOST record before it) gets its chance, at least 10 ms, to tell the
 * reader how the stream ended. */
static bool ring_wait(struct rec_ring *ring, u64 need, bool marker)
{
	if (ring_room(ring) >= need)
		return true;
	if ((ring->dropping && !marker) || !*(volatile u64 *)&ring->g->reader)
		return false;
	ring->g->waits++;
	/* a marker waits at least 10 ms: the end of a stream is worth it */
	u64 us = marker ? MAX(ring->wait_us, 10000u) : ring->wait_us;
	u64 t0 = rdtsc(), limit = hv.boot.tsc_hz ? hv.boot.tsc_hz / 1000000 * us : us * 1000;
	while (rdtsc() - t0 < limit) {
		if (ring_room(ring) >= need)
			return true;
		cpu_relax();
	}
	return false;
}

static void ring_put(struct vcpu *v, struct rec_ring *ring, const struct hvtrace_rec *r)
{
	struct rec_vcpu *rv = &v->trace->rec;
	if (ring->mode == HVTRACE_RING_LOSSLESS) {
		if (!ring_wait(ring, ring->pending_lost ? 2 : 1, r->kind == HVTRACE_REC_MARKER)) {
			/* dropped: counted exactly, told by a LOST record later */
			if (!ring->pending_lost)
				ring->first_lost_tsc = r->tsc;
			ring->pending_lost++;
			ring->dropping = true;
			ring->g->lost++;
			rv->lost++;
			return;
		}
		ring->dropping = false;
		if (ring->pending_lost) {
			struct hvtrace_rec lost = { .tsc = r->tsc, .from = ring->pending_lost,
						    .to = ring->first_lost_tsc, .vcpu = r->vcpu,
						    .kind = HVTRACE_REC_LOST, .info = r->info };
			ring_write(ring, &lost);
			ring->pending_lost = 0;
		}
	}
	ring_write(ring, r);
	rv->records++;
}

static void deliver(struct vcpu *v, const struct hvtrace_rec *r, u64 cr3)
{
	struct rec_vcpu *rv = &v->trace->rec;
	for (u32 i = 0; i < rv->nr_rings; i++) {
		struct rec_ring *ring = &rv->ring[i];
		struct hvtrace_rec copy = *r;
		if (filter(ring->f, &copy, cr3))
			ring_put(v, ring, &copy);
		else
			ring->g->filtered++;
	}
}

/* trace.freeze: a record went to one of its addresses (a call or jump to
 * a function's entry, an event to its handler). The first one reached arms
 * the freeze `freeze_after` records later (counted over every vCPU), so
 * the lead-up and a little after are kept; its TRIGGER marker says where. */
static void freeze_check(struct vcpu *v, u64 to, u64 made)
{
	u32 n = rec.nr_freeze_at;
	for (u32 i = 0; i < n && i < HV_REC_MAX_FREEZE; i++) {
		if (to != rec.freeze_at[i])
			continue;
		spin_lock(&rec.lock);
		u64 after = rec.freeze_after[i];
		bool first = !rec.freeze_armed && rec.state == HVTRACE_STATE_TRACING && i < rec.nr_freeze_at &&
			     rec.freeze_at[i] == to;
		if (first) {
			__atomic_store_n(&rec.freeze_target, made + after, __ATOMIC_RELEASE);
			rec.freeze_armed = 1;
		}
		spin_unlock(&rec.lock);
		if (first) {
			mark(v, HVTRACE_MARK_TRIGGER, to, after);
			LOG_WARN("recorder: vcpu %u reached the trace.freeze address %016lx; freezing after "
				 "%lu more records", v->id, to, after);
		}
		return;
	}
}

/* HVTRACE_TRACE_FREEZE_AT: one more freeze address (as a trace.freeze
 * line), or none at all with address 0. Under rec.lock: freeze_check()
 * reads the table without it and re-checks under it. */
static s64 freeze_at(u64 addr, u64 after)
{
	s64 ret = 0;
	if (after > REC_FREEZE_AFTER_MAX)
		return -HVTRACE_EINVAL;
	spin_lock(&rec.lock);
	if (!addr) {
		rec.nr_freeze_at = 0;
	} else if (rec.nr_freeze_at >= HV_REC_MAX_FREEZE) {
		ret = -HVTRACE_EINVAL;
	} else {
		rec.freeze_at[rec.nr_freeze_at] = addr;
		rec.freeze_after[rec.nr_freeze_at] = after;
		__atomic_store_n(&rec.nr_freeze_at, rec.nr_freeze_at + 1, __ATOMIC_RELEASE);
	}
	spin_unlock(&rec.lock);
	return ret;
}

/* trace.freeze = hang:T: a vCPU whose records, for T, all lie within
 * REC_HANG_SPAN bytes spins in one place with nothing else running on it
 * (an interrupt handler's records would be elsewhere): a loop with
 * interrupts off, a lock that never comes free. A halted vCPU makes no
 * records and is not a hang. */
static void hang_check(struct vcpu *v, const struct hvtrace_rec *r)
{
	struct rec_vcpu *rv = &v->trace->rec;
	u32 starts = __atomic_load_n(&rec.starts, __ATOMIC_RELAXED);
	if (rv->hang_starts != starts) {	/* tracing (re)started: a new watch */
		rv->hang_starts = starts;
		rv->hang_t0 = 0;
	}
	u64 rlo = r->from < r->to ? r->from : r->to, rhi = r->from < r->to ? r->to : r->from;
	u64 lo = rv->hang_lo < rlo ? rv->hang_lo : rlo, hi = rv->hang_hi > rhi ? rv->hang_hi : rhi;
	if (!rv->hang_t0 || hi - lo >= REC_HANG_SPAN) {
		/* a new watch from this record (a long jump itself is no spin:
		 * from its higher end alone) */
		rv->hang_t0 = r->tsc;
		rv->hang_lo = rhi - rlo < REC_HANG_SPAN ? rlo : rhi;
		rv->hang_hi = rhi;
		return;
	}
	rv->hang_lo = lo;
	rv->hang_hi = hi;
	if (r->tsc - rv->hang_t0 >= rec.hang_tsc) {
		LOG_WARN("recorder: vcpu %u spun within %lx-%lx for trace.freeze's hang time", v->id, lo, hi);
		rec_freeze(v, HVTRACE_FREEZE_HANG);
	}
}

/* trace.stop = time:T, checked at every record and every exit */
static void time_check(struct vcpu *v, u64 now)
{
	if (rec.cfg->stop != REC_STOP_TIME || rec.state != HVTRACE_STATE_TRACING ||
	    now - rec.start_tsc < rec.stop_tsc)
		return;
	spin_lock(&rec.lock);
	if (rec.state == HVTRACE_STATE_TRACING)
		stop(v, "trace.stop time reached", __atomic_load_n(&rec.made, __ATOMIC_SEQ_CST));
	spin_unlock(&rec.lock);
}

void rec_emit(struct vcpu *v, u8 kind, u64 from, u64 to, int from_cpl, u32 aux)
{
	if (!rec.chan || (rec.state != HVTRACE_STATE_TRACING &&
			  !(kind == HVTRACE_REC_MARKER && rec.state != HVTRACE_STATE_FROZEN)))
		return;
	/* a LOST record (LBR batching's gap of known size) counts nothing */
	bool counted = kind != HVTRACE_REC_MARKER && kind != HVTRACE_REC_CR3 && kind != HVTRACE_REC_LOST;
	if (counted) {
		u64 left = __atomic_load_n(&rec.skip, __ATOMIC_RELAXED);
		while (left && !__atomic_compare_exchange_n(&rec.skip, &left, left - 1, false,
							    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		if (left)
			return;
	}
	/* near branches stay at their CPL; the others end where the vCPU is */
	int to_cpl = kind == HVTRACE_REC_BRANCH ? from_cpl : hv.ops->get_cpl(v);
	struct hvtrace_rec r = { .tsc = rdtsc(), .from = from, .to = to, .vcpu = (u16)v->id,
				 .kind = kind, .info = HVTRACE_INFO_MAKE(from_cpl, to_cpl), .aux = aux };
	/* Counted first: exactly one vCPU makes the stop_arg-th record and
	 * stops tracing; a record another vCPU makes past it, before the stop
	 * reaches that vCPU, is not kept, so `records:N` keeps exactly N. */
	u64 made = counted ? __atomic_add_fetch(&rec.made, 1, __ATOMIC_SEQ_CST) : 0;
	bool limit = counted && rec.cfg->stop == REC_STOP_RECORDS;
	if (limit && made > rec.cfg->stop_arg)
		return;
	deliver(v, &r, v->trace->rec.cr3);
	if (!counted)
		return;
	if (limit && made == rec.cfg->stop_arg) {
		spin_lock(&rec.lock);
		if (rec.state == HVTRACE_STATE_TRACING)
			stop(v, "trace.stop records reached", made);
		spin_unlock(&rec.lock);
	}
	if (rec.nr_freeze_at && !rec.freeze_armed)
		freeze_check(v, to, made);
	if (rec.freeze_armed && made >= __atomic_load_n(&rec.freeze_target, __ATOMIC_ACQUIRE))
		rec_freeze(v, HVTRACE_FREEZE_ADDRESS);
	if (rec.hang_tsc && kind == HVTRACE_REC_BRANCH)
		hang_check(v, &r);
	time_check(v, r.tsc);
}

void rec_exit_begin(struct vcpu *v)
{
	struct rec_vcpu *rv = &v->trace->rec;
	if (!rec.chan || rec.state != HVTRACE_STATE_TRACING)
		return;
	if (rec.cfg->stop == REC_STOP_TIME) {
		time_check(v, rdtsc());
		if (rec.state != HVTRACE_STATE_TRACING)
			return;
	}
	u64 cr3 = hv.ops->get_cr(v, 3) & CR3_ADDR_MASK;
	if (cr3 == rv->cr3)
		return;
	u64 old = rv->cr3;
	rv->cr3 = cr3;
	int cpl = hv.ops->get_cpl(v);
	struct hvtrace_rec r = { .tsc = rdtsc(), .from = old, .to = cr3, .vcpu = (u16)v->id,
				 .kind = HVTRACE_REC_CR3, .info = HVTRACE_INFO_MAKE(cpl, cpl) };
	deliver(v, &r, cr3);
}

/* --- triggers from the guest and the host -------------------------------- */

/* A filter for one consumer (HVTRACE_TRACE_FILTER), checked as
 * hvtrace.cfg's values are. */
static s64 set_filter(const struct hvtrace_filter *in)
{
	struct hvtrace_filter f = *in;	/* the host's may change under us */
	if ((f.consumer != HVTRACE_CONSUMER_FLIGHT && f.consumer != HVTRACE_CONSUMER_STREAM) ||
	    f.cpl > HVTRACE_CPL_USER || f.nr_ranges > HVTRACE_FILTER_MAX_RANGES || f.reserved ||
	    (f.cr3 & 0xfff) || (f.cr3 >> 52))
		return -HVTRACE_EINVAL;
	for (u32 i = 0; i < f.nr_ranges; i++)
		if (f.ranges[i].hi < f.ranges[i].lo)
			return -HVTRACE_EINVAL;
	struct hv_rec_filter *h = &rec.filter[f.consumer - 1];
	h->cpl = f.cpl;
	h->nr_ranges = f.nr_ranges;
	h->cr3 = f.cr3;
	for (u32 i = 0; i < f.nr_ranges; i++) {
		h->ranges[i].lo = f.ranges[i].lo;
		h->ranges[i].hi = f.ranges[i].hi;
	}
	/* the rings as the hypervisor laid them out: nothing of the shared
	 * header (nr_rings, a ring's consumer) is read back, a reader may
	 * have written anything there */
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		struct rec_vcpu *rv = &hv.vcpus[i]->trace->rec;
		for (u32 k = 0; k < rv->nr_rings; k++)
			if (rv->ring[k].f == h)
				rv->ring[k].g->cpl_filter = f.cpl;
	}
	return 0;
}

/* HVTRACE_TRACE_WATCHDOG: the flight recorder freezes unless armed again
 * within `us` (0 disarms). Checked at every exit of every vCPU and by the
 * watcher while the guest halts (rec_ctl_poll). */
static s64 watchdog_arm(u64 us)
{
	if (us > REC_WATCHDOG_MAX_US || (us && !hv.boot.tsc_hz))
		return -HVTRACE_EINVAL;
	__atomic_store_n(&rec.wd_deadline, us ? rdtsc() + us_to_tsc(us) : 0, __ATOMIC_RELEASE);
	rec.chan->watchdog_us = us;
	return 0;
}

static void watchdog_check(struct vcpu *v)
{
	u64 d = __atomic_load_n(&rec.wd_deadline, __ATOMIC_ACQUIRE);
	if (!d || (s64)(rdtsc() - d) < 0 || !__atomic_compare_exchange_n(&rec.wd_deadline, &d, 0, false,
									  __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	rec.chan->watchdog_us = 0;
	LOG_WARN("recorder: the watchdog was not armed again in time");
	rec_freeze(v, HVTRACE_FREEZE_WATCHDOG);
}

/* One trace-control operation, from the guest's hypercall or the host's
 * request (`host`): the same checks, the same effects; the host's MARK
 * and FREEZE are told apart in the records. */
static s64 control(struct vcpu *v, u64 op, u64 arg0, u64 arg1, const struct hvtrace_filter *f, bool host)
{
	const char *who = host ? "host request" : "hypercall";
	if (host && op >= HVTRACE_DBG_STOP)
		return dbg_control(v, (u32)op, arg0, arg1);	/* a frozen guest can be debugged too */
	if (rec.state == HVTRACE_STATE_FROZEN)
		return -HVTRACE_EPERM;
	switch (op) {
	case HVTRACE_TRACE_START:
		spin_lock(&rec.lock);
		if (rec.state != HVTRACE_STATE_TRACING && rec.state != HVTRACE_STATE_FROZEN)
			start(v, gmem_linear_rip(v));
		spin_unlock(&rec.lock);
		return 0;
	case HVTRACE_TRACE_STOP:
		spin_lock(&rec.lock);
		if (rec.state == HVTRACE_STATE_TRACING)
			stop(v, who, __atomic_load_n(&rec.made, __ATOMIC_SEQ_CST));
		spin_unlock(&rec.lock);
		return 0;
	case HVTRACE_TRACE_MARK:
		mark(v, host ? HVTRACE_MARK_HOST : HVTRACE_MARK_GUEST, arg0, gmem_linear_rip(v));
		return 0;
	case HVTRACE_TRACE_FREEZE:
		rec_freeze(v, host ? HVTRACE_FREEZE_HOST : HVTRACE_FREEZE_HYPERCALL);
		return 0;
	case HVTRACE_TRACE_FILTER:
		return set_filter(f);
	case HVTRACE_TRACE_FREEZE_AT:
		return freeze_at(arg0, arg1);
	case HVTRACE_TRACE_WATCHDOG:
		return watchdog_arm(arg0);
	}
	return -HVTRACE_EINVAL;
}

s64 rec_hypercall(struct vcpu *v, u64 op, u64 arg)
{
	struct hvtrace_filter f = { 0 };
	if (!rec.chan)
		return -HVTRACE_ENOSYS;	/* no recorder configured */
	if (op == HVTRACE_TRACE_FILTER) {
		/* RCX = the structure's guest-physical address, RDX = its size */
		if (v->gpr[GPR_RDX] < sizeof(f))
			return -HVTRACE_EINVAL;
		if (!memmap_contains(&hv.guest_ram, arg, sizeof(f)))
			return -HVTRACE_EFAULT;
		memcpy(&f, guest_pa_ptr(arg), sizeof(f));
	}
	return control(v, op, arg, v->gpr[GPR_RDX], &f, false);
}

bool rec_ctl_polled(void)
{
	return rec.ctl_mode == HVTRACE_CTL_POLL;
}

bool rec_ctl_watcher(const struct vcpu *v)
{
	return rec.ctl_mode == HVTRACE_CTL_POLL && v->id == 0 && !(hv.caps & HV_CAP_KICK_POLL) &&
	       hv.ops->take_pending;
}

u64 rec_ctl_poll_tsc(void)
{
	return hv.boot.tsc_hz ? us_to_tsc(REC_CTL_POLL_US) : REC_CTL_POLL_US * 1000ull;
}

/*
 * The host's request, if one waits (record.h "Host -> hypervisor
 * control"): copied out of the channel, used only if its seq did not move
 * while it was copied, checked like a hypercall's arguments. A vCPU that
 * finds another handling one goes on. A host that keeps writing requests
 * costs each exit one copy and a check; one that writes garbage gets
 * refusals, counted.
 */
void rec_ctl_poll(struct vcpu *v)
{
	struct hvtrace_chan *c = rec.chan;
	if (!c)
		return;
	if (__atomic_load_n(&rec.wd_deadline, __ATOMIC_RELAXED))
		watchdog_check(v);
	if (rec.ctl_mode == HVTRACE_CTL_OFF)
		return;
	u64 seq = *(volatile u64 *)&c->ctl.seq;
	if (seq != rec.ctl_done + 1 || !spin_trylock(&rec.ctl_lock))
		return;
	if (seq == rec.ctl_done + 1) {
		struct hvtrace_ctl_req r;
		memcpy(&r, (const void *)&c->ctl, sizeof(r));
		asm volatile("" ::: "memory");
		if (*(volatile u64 *)&c->ctl.seq == seq && r.seq == seq) {
			s64 res = r.reserved ? -HVTRACE_EINVAL : control(v, r.op, r.arg0, r.arg1, &r.filter, true);
			if (res)
				rec.ctl_rejected++;
			else
				rec.ctl_applied++;
			c->ctl_result = res;
			c->ctl_applied = rec.ctl_applied;
			c->ctl_rejected = rec.ctl_rejected;
			rec.ctl_done = seq;
			asm volatile("" ::: "memory");	/* the result before done (x86 orders stores) */
			*(volatile u64 *)&c->ctl_done = seq;
			/* logged after the answer: a serial line takes long, and a
			 * guest a RESUME let go may end the machine meanwhile
			 * (svm-gdb-live: t_gdb powered off while this line was
			 * being written, and the host never had its answer) */
			if (res && rec.ctl_rejected <= REC_CTL_LOG_REJECTS)
				LOG_WARN("recorder: host request %lu (op %u) refused: %ld%s", seq, r.op, -res,
					 rec.ctl_rejected == REC_CTL_LOG_REJECTS ? "; no more are logged" : "");
			else if (!res && r.op < HVTRACE_DBG_STOP)	/* the debugger's many: its own lines say */
				LOG_INFO("recorder: host request %lu (op %u) applied by vcpu %u", seq, r.op, v->id);
			else if (!res)
				LOG_DEBUG("recorder: host request %lu (op %u) applied by vcpu %u", seq, r.op, v->id);
		}
	}
	spin_unlock(&rec.ctl_lock);
}

/* The vCPU that crashed writes its CRASH marker now; every other vCPU,
 * kicked, writes its own at its next exit (rec_take_changed) and records
 * nothing more. */
void rec_freeze(struct vcpu *v, u32 why)
{
	if (!rec.chan)
		return;
	spin_lock(&rec.lock);
	if (rec.state == HVTRACE_STATE_FROZEN) {
		spin_unlock(&rec.lock);
		return;
	}
	mark(v, HVTRACE_MARK_CRASH, gmem_linear_rip(v), why);
	v->trace->rec.frozen_marked = true;
	rec.chan->freeze = why;
	rec.chan->freeze_tsc = rdtsc();
	set_state(v, HVTRACE_STATE_FROZEN);
	spin_unlock(&rec.lock);
	static const char *const why_name[] = {
		[HVTRACE_FREEZE_TRIPLE_FAULT] = "triple fault", [HVTRACE_FREEZE_RESET] = "reset request",
		[HVTRACE_FREEZE_HYPERCALL] = "hypercall", [HVTRACE_FREEZE_ADDRESS] = "trace.freeze address",
		[HVTRACE_FREEZE_NMI] = "NMI", [HVTRACE_FREEZE_HANG] = "hang",
		[HVTRACE_FREEZE_WATCHDOG] = "watchdog", [HVTRACE_FREEZE_HOST] = "host request",
		[HVTRACE_FREEZE_INVALID_STATE] = "guest state refused at entry",
	};
	LOG_WARN("recorder: flight recorder frozen (%s); the host can take it with 'hvtrace snapshot'",
		 why < ARRAY_SIZE(why_name) && why_name[why] ? why_name[why] : "?");
}

void rec_await_markers(struct vcpu *v)
{
	if (!rec.chan || rec.state != HVTRACE_STATE_FROZEN)
		return;
	u64 t0 = rdtsc(), limit = hv.boot.tsc_hz ? us_to_tsc(REC_MARKERS_WAIT_US) : REC_MARKERS_WAIT_US * 1000ull;
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		struct vcpu *w = hv.vcpus[i];
		/* one that never entered, or waits for a SIPI, makes no exit */
		while (w != v && w->boot && !(w->mp_state & MP_WAIT_SIPI) &&
		       !*(volatile bool *)&w->trace->rec.frozen_marked && rdtsc() - t0 < limit)
			cpu_relax();
	}
}

/* An NMI on its way to the guest (not the hypervisor's kick): with
 * trace.freeze = nmi the recorder freezes, as for a crash (an NMI from the
 * platform or QEMU's `nmi` to catch a hang). */
void rec_on_nmi(struct vcpu *v)
{
	if (rec.chan && rec.cfg->freeze_nmi)
		rec_freeze(v, HVTRACE_FREEZE_NMI);
}
