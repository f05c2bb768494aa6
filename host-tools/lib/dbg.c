/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the debugger's requests to the hypervisor (record.h
 * HVTRACE_DBG_*, docs/channel.md "The debugger"): stop and resume every
 * vCPU, step one, read and write memory through a stopped vCPU's page
 * tables, set its registers. The area the hypervisor publishes registers
 * in is checked once (offset, size, magic); a vCPU's registers are copied
 * and used only if its stop count and state held still meanwhile.
 */
#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "libhvtrace.h"

#define DBG_MAX_VCPUS 4096u	/* more than the hypervisor ever has (HV_MAX_CPUS) */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void nap(void)
{
	struct timespec ts = { 0, 100000 };	/* 100 us */

	nanosleep(&ts, NULL);
}

int hvt_dbg_open(struct hvt_dbg *d, struct hvt_chan *ch, int lock_fd, struct hvt_err *err)
{
	uint64_t off = __atomic_load_n(&ch->hdr->dbg_offset, __ATOMIC_ACQUIRE), n;
	const struct hvtrace_dbg *a;

	memset(d, 0, sizeof(*d));
	if (ch->source != HVT_SRC_SHM) {
		hvt_seterr(err, "the debugger needs a live channel (--shm)");
		return -1;
	}
	if ((ch->hdr->abi_version & 0xffff) < 9 || !off) {
		hvt_seterr(err, "the channel has no debugger area (ABI %u.%u; it needs 1.9, an ivshmem "
			   "channel and channel.control other than off)", ch->hdr->abi_version >> 16,
			   ch->hdr->abi_version & 0xffff);
		return -1;
	}
	if (off % 4096 || off < HVTRACE_CHAN_HDR_SIZE || off > ch->avail ||
	    ch->avail - off < HVTRACE_DBG_VCPU_OFFSET) {
		hvt_seterr(err, "dbg_offset %llu: not a page of the channel past its header",
			   (unsigned long long)off);
		return -1;
	}
	a = (const struct hvtrace_dbg *)(ch->base + off);
	n = __atomic_load_n(&a->nr_vcpus, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&a->magic, __ATOMIC_ACQUIRE) != HVTRACE_DBG_MAGIC) {
		hvt_seterr(err, "the debugger area at %llu has no magic", (unsigned long long)off);
		return -1;
	}
	if (!n || n > DBG_MAX_VCPUS || n != ch->nr_vcpus ||
	    (ch->avail - off - HVTRACE_DBG_VCPU_OFFSET) / sizeof(struct hvtrace_dbg_vcpu) < n) {
		hvt_seterr(err, "the debugger area: nr_vcpus %llu (the channel has %u) does not fit",
			   (unsigned long long)n, ch->nr_vcpus);
		return -1;
	}
	d->ch = ch;
	d->area = (struct hvtrace_dbg *)(ch->base + off);
	d->nr_vcpus = (uint32_t)n;
	d->lock_fd = lock_fd;
	d->timeout_ms = 5000;
	return 0;
}

/* One request under the lock: 0 with *result, or -1 (no answer). */
static int req(struct hvt_dbg *d, uint32_t op, uint64_t arg0, uint64_t arg1, int64_t *result,
	       struct hvt_err *err)
{
	struct hvt_ctl_req rq = { .op = op, .arg0 = arg0, .arg1 = arg1 };
	uint64_t lat;
	int rc;

	if (d->lock_fd >= 0 && flock(d->lock_fd, LOCK_EX)) {
		hvt_seterr(err, "cannot lock the channel: %s", strerror(errno));
		return -1;
	}
	rc = hvt_ctl_send(d->ch, &rq, d->timeout_ms, result, &lat, err);
	if (d->lock_fd >= 0)
		flock(d->lock_fd, LOCK_UN);
	return rc;
}

/* A request that must be applied: 0, or -1 naming the refusal. */
static int req_ok(struct hvt_dbg *d, const char *what, uint32_t op, uint64_t arg0, uint64_t arg1,
		  int64_t *result, struct hvt_err *err)
{
	int64_t r;

	if (req(d, op, arg0, arg1, &r, err))
		return -1;
	if (result)
		*result = r;
	if (r) {
		hvt_seterr(err, "%s: refused, %s", what, hvt_result_name(r));
		return -1;
	}
	return 0;
}

static uint32_t vstate(const struct hvt_dbg *d, uint32_t v)
{
	return __atomic_load_n(&d->area->vcpu[v].state, __ATOMIC_ACQUIRE);
}

static uint64_t vstops(const struct hvt_dbg *d, uint32_t v)
{
	return __atomic_load_n(&d->area->vcpu[v].stops, __ATOMIC_ACQUIRE);
}

/* Waits until vCPU v is STOPPED with a stop count other than `before`
 * (UINT64_MAX: any), until the deadline. */
static int await_stop(const struct hvt_dbg *d, uint32_t v, uint64_t before, uint64_t deadline, const char *what,
		      struct hvt_err *err)
{
	while (vstate(d, v) != HVTRACE_DBG_STOPPED || vstops(d, v) == before) {
		if (now_ms() >= deadline) {
			hvt_seterr(err, "vCPU %u did not stop%s within %llu ms", v, what,
				   (unsigned long long)d->timeout_ms);
			return -1;
		}
		nap();
	}
	return 0;
}

int hvt_dbg_stop(struct hvt_dbg *d, struct hvt_err *err)
{
	uint64_t deadline;
	uint32_t v;

	if (req_ok(d, "stop", HVTRACE_DBG_STOP, 0, 0, NULL, err))
		return -1;
	deadline = now_ms() + d->timeout_ms;
	for (v = 0; v < d->nr_vcpus; v++)
		if (await_stop(d, v, UINT64_MAX, deadline, "", err))
			return -1;
	return 0;
}

int hvt_dbg_resume(struct hvt_dbg *d, struct hvt_err *err)
{
	return req_ok(d, "resume", HVTRACE_DBG_RESUME, 0, 0, NULL, err);
}

int hvt_dbg_step(struct hvt_dbg *d, uint32_t v, struct hvt_err *err)
{
	uint64_t before;

	if (v >= d->nr_vcpus) {
		hvt_seterr(err, "no vCPU %u", v);
		return -1;
	}
	before = vstops(d, v);
	if (req_ok(d, "step", HVTRACE_DBG_STEP, v, 0, NULL, err))
		return -1;
	return await_stop(d, v, before, now_ms() + d->timeout_ms, " again after its step", err);
}

int hvt_dbg_regs(const struct hvt_dbg *d, uint32_t v, struct hvt_vcpu_regs *out, struct hvt_err *err)
{
	/* GDB's order of the general registers, from the encoding order */
	static const unsigned gdb_gpr[16] = { 0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };
	/* GDB's cs ss ds es fs gs from ES CS SS DS FS GS */
	static const unsigned gdb_seg[6] = { 1, 2, 3, 0, 4, 5 };
	struct hvtrace_dbg_regs r;
	uint64_t stops;
	unsigned i;

	if (v >= d->nr_vcpus) {
		hvt_seterr(err, "no vCPU %u", v);
		return -1;
	}
	stops = vstops(d, v);
	if (vstate(d, v) != HVTRACE_DBG_STOPPED) {
		hvt_seterr(err, "vCPU %u is not stopped", v);
		return -1;
	}
	memcpy(&r, (const void *)&d->area->vcpu[v].regs, sizeof(r));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (vstops(d, v) != stops || vstate(d, v) != HVTRACE_DBG_STOPPED) {
		hvt_seterr(err, "vCPU %u moved while its registers were read", v);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->id = v + 1;
	out->has_sys = out->has_kgs = out->has_efer = out->has_apic = 1;
	out->apic_id = __atomic_load_n(&d->area->vcpu[v].apic_id, __ATOMIC_RELAXED);
	for (i = 0; i < 16; i++)
		out->gpr[i] = r.gpr[gdb_gpr[i]];
	out->rip = r.rip;
	out->rflags = r.rflags;
	for (i = 0; i < 6; i++)
		out->seg[i] = r.seg_sel[gdb_seg[i]];
	out->cs_flags = (uint32_t)(r.seg_attr[1] & 0xf00) << 12 | (uint32_t)(r.seg_attr[1] & 0xff) << 8;
	out->fs_base = r.seg_base[4];
	out->gs_base = r.seg_base[5];
	out->kernel_gs_base = r.kernel_gs_base;
	out->cr[0] = r.cr0;
	out->cr[2] = r.cr2;
	out->cr[3] = r.cr3;
	out->cr[4] = r.cr4;
	out->efer = r.efer;
	return 0;
}

static int mem_args(const struct hvt_dbg *d, uint32_t v, uint64_t len, struct hvt_err *err)
{
	if (v >= d->nr_vcpus || !len || len > HVTRACE_DBG_BUF_SIZE) {
		hvt_seterr(err, "vCPU %u, %llu bytes: out of range", v, (unsigned long long)len);
		return -1;
	}
	return 0;
}

int hvt_dbg_read(struct hvt_dbg *d, uint32_t v, uint64_t la, void *buf, uint64_t len, int64_t *result,
		 struct hvt_err *err)
{
	if (mem_args(d, v, len, err) ||
	    req_ok(d, "read", HVTRACE_DBG_READ, (uint64_t)v | len << 32, la, result, err))
		return -1;
	memcpy(buf, (const void *)d->area->buf, len);
	return 0;
}

int hvt_dbg_write(struct hvt_dbg *d, uint32_t v, uint64_t la, const void *buf, uint64_t len, int64_t *result,
		  struct hvt_err *err)
{
	if (mem_args(d, v, len, err))
		return -1;
	memcpy((void *)d->area->buf, buf, len);	/* no request pending: the hypervisor reads it at WRITE */
	return req_ok(d, "write", HVTRACE_DBG_WRITE, (uint64_t)v | len << 32, la, result, err);
}

int hvt_dbg_read_phys(struct hvt_dbg *d, uint32_t v, uint64_t pa, void *buf, uint64_t len, int64_t *result,
		      struct hvt_err *err)
{
	if (mem_args(d, v, len, err) ||
	    req_ok(d, "read guest-physical memory", HVTRACE_DBG_READ,
		   (uint64_t)v | len << 32 | HVTRACE_DBG_READ_PHYS, pa, result, err))
		return -1;
	memcpy(buf, (const void *)d->area->buf, len);
	return 0;
}

int hvt_dbg_set_bp(struct hvt_dbg *d, uint64_t addr, int on, int64_t *result, struct hvt_err *err)
{
	return req_ok(d, on ? "set the breakpoint" : "clear the breakpoint", HVTRACE_DBG_SET_BP,
		      (uint64_t)!!on << 32, on ? addr : 0, result, err);
}

int hvt_dbg_set_hw(struct hvt_dbg *d, unsigned slot, int on, unsigned rw, unsigned len, uint64_t addr,
		   uint32_t v, int64_t *result, struct hvt_err *err)
{
	int page = slot >= HVTRACE_DBG_SLOTS, pwatch = page && rw == 1;
	unsigned minor = d->ch->hdr->abi_version & 0xffff;

	if (slot >= HVTRACE_DBG_SLOTS_MAX || rw > 3 || (!pwatch && len > 3) ||
	    (page && !pwatch && (rw || len)) || (pwatch && (!len || len > 4096 || (addr & 4095) + len > 4096))) {
		hvt_seterr(err, "slot %u, rw %u, len %u: out of range", slot, rw, len);
		return -1;
	}
	if (page && on && v >= d->nr_vcpus) {
		hvt_seterr(err, "no vCPU %u", v);
		return -1;
	}
	if (minor < (pwatch ? 13 : page ? 11 : 10)) {
		hvt_seterr(err, pwatch ? "the hypervisor (ABI %u.%u) has four watchpoints only (page watchpoints are ABI 1.13)"
			   : page ? "the hypervisor (ABI %u.%u) has four breakpoints only (page breakpoints are ABI 1.11)"
				  : "the hypervisor (ABI %u.%u) has one breakpoint only (SET_HW is ABI 1.10)",
			   d->ch->hdr->abi_version >> 16, minor);
		return -1;
	}
	return req_ok(d, on ? "set a breakpoint or watchpoint" : "clear a breakpoint or watchpoint",
		      HVTRACE_DBG_SET_HW,
		      on ? (uint64_t)slot | 1u << 8 | (uint64_t)rw << 16 | (pwatch ? 0 : (uint64_t)len << 24) |
				   (page ? (uint64_t)v << 32 : 0) | (pwatch ? (uint64_t)(len - 1) << 48 : 0)
			 : slot,
		      on ? addr : 0, result, err);
}

int hvt_dbg_translate(struct hvt_dbg *d, uint32_t v, uint64_t la, uint64_t *pa, int64_t *result,
		      struct hvt_err *err)
{
	if (v >= d->nr_vcpus) {
		hvt_seterr(err, "no vCPU %u", v);
		return -1;
	}
	if (req_ok(d, "translate", HVTRACE_DBG_TRANSLATE, v, la, result, err))
		return -1;
	memcpy(pa, (const void *)d->area->buf, sizeof(*pa));
	return 0;
}

uint32_t hvt_dbg_hits(const struct hvt_dbg *d, uint32_t v)
{
	if (v >= d->nr_vcpus || vstate(d, v) != HVTRACE_DBG_STOPPED)
		return 0;
	return __atomic_load_n(&d->area->vcpu[v].hits, __ATOMIC_ACQUIRE);	/* HVTRACE_DBG_SLOTS_MAX bits */
}

int hvt_dbg_held(const struct hvt_dbg *d, uint32_t *vcpu)
{
	uint32_t who;

	if (!__atomic_load_n(&d->area->held, __ATOMIC_ACQUIRE))
		return 0;
	who = __atomic_load_n(&d->area->stop_vcpu, __ATOMIC_ACQUIRE);
	*vcpu = who && who <= d->nr_vcpus ? who - 1 : UINT32_MAX;
	return 1;
}

int hvt_dbg_set_regs(struct hvt_dbg *d, uint32_t v, const struct hvt_vcpu_regs *r, int64_t *result,
		     struct hvt_err *err)
{
	static const unsigned enc_gpr[16] = { 0, 2, 3, 1, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15 };
	struct hvtrace_dbg_regs w;
	unsigned i;

	if (v >= d->nr_vcpus) {
		hvt_seterr(err, "no vCPU %u", v);
		return -1;
	}
	memset(&w, 0, sizeof(w));
	for (i = 0; i < 16; i++)
		w.gpr[i] = r->gpr[enc_gpr[i]];
	w.rip = r->rip;
	w.rflags = r->rflags;
	memcpy((void *)d->area->buf, &w, sizeof(w));
	return req_ok(d, "set registers", HVTRACE_DBG_SET_REGS, v, 0, result, err);
}
