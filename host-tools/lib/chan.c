/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the channel (record.h) as a reader sees it. The header is
 * copied and checked field by field before anything in it is used; ring
 * geometry is kept from that copy, so a header rewritten later cannot move
 * a ring. head/tail are re-read (and re-checked) on every access.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libhvtrace.h"

#define REC_SIZE ((uint64_t)sizeof(struct hvtrace_rec))

static uint64_t load_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static int check_enum(const char *(*name)(unsigned), const char *field, unsigned v,
		      struct hvt_err *err)
{
	if (name(v))
		return 0;
	hvt_seterr(err, "%s %u unknown", field, v);
	return -1;
}

static int check_ring(const struct hvtrace_chan *h, unsigned i, struct hvt_err *err)
{
	const struct hvtrace_ring *r = &h->rings[i];
	char f[32];

	if (r->vcpu >= h->nr_vcpus || r->vcpu > 0xffff) {
		hvt_seterr(err, "ring %u: vcpu %u out of range (nr_vcpus %u)", i, r->vcpu, h->nr_vcpus);
		return -1;
	}
	snprintf(f, sizeof(f), "ring %u: consumer", i);
	if (check_enum(hvt_consumer_name, f, r->consumer, err))
		return -1;
	snprintf(f, sizeof(f), "ring %u: mode", i);
	if (check_enum(hvt_mode_name, f, r->mode, err))
		return -1;
	snprintf(f, sizeof(f), "ring %u: cpl_filter", i);
	if (check_enum(hvt_cpl_filter_name, f, r->cpl_filter, err))
		return -1;
	if (r->offset % 4096) {
		hvt_seterr(err, "ring %u: offset 0x%llx not 4 KiB-aligned", i, (unsigned long long)r->offset);
		return -1;
	}
	if (r->offset < HVTRACE_CHAN_HDR_SIZE || r->offset >= h->size) {
		hvt_seterr(err, "ring %u: offset 0x%llx outside the channel (0x%x..0x%llx)", i,
			   (unsigned long long)r->offset, HVTRACE_CHAN_HDR_SIZE,
			   (unsigned long long)h->size);
		return -1;
	}
	if (r->capacity < 2 || (r->capacity & (r->capacity - 1))) {
		hvt_seterr(err, "ring %u: capacity %llu not a power of two >= 2", i,
			   (unsigned long long)r->capacity);
		return -1;
	}
	if (r->capacity > (h->size - r->offset) / REC_SIZE) {
		hvt_seterr(err, "ring %u: capacity %llu at offset 0x%llx runs past the channel's size 0x%llx",
			   i, (unsigned long long)r->capacity, (unsigned long long)r->offset,
			   (unsigned long long)h->size);
		return -1;
	}
	return 0;
}

int hvt_chan_validate(struct hvt_chan *ch, void *base, uint64_t avail, struct hvt_err *err)
{
	struct hvtrace_chan *h;
	unsigned i, j;

	if (avail < sizeof(*h)) {
		hvt_seterr(err, "channel: %llu bytes, shorter than its %u-byte header",
			   (unsigned long long)avail, HVTRACE_CHAN_HDR_SIZE);
		return -1;
	}
	/* check a private copy: the shared one may change while we look */
	h = malloc(sizeof(*h));
	if (!h) {
		hvt_seterr(err, "channel: out of memory");
		return -1;
	}
	memcpy(h, base, sizeof(*h));
	if (h->magic != HVTRACE_CHAN_MAGIC) {
		hvt_seterr(err, "channel: magic 0x%016llx is not HVTRCHN1 (0x%016llx)",
			   (unsigned long long)h->magic, HVTRACE_CHAN_MAGIC);
		goto bad;
	}
	if (h->abi_version >> 16 != HVTRACE_ABI_MAJOR) {
		hvt_seterr(err, "channel: abi_version %u.%u, this reader knows major %u", h->abi_version >> 16,
			   h->abi_version & 0xffff, HVTRACE_ABI_MAJOR);
		goto bad;
	}
	if (h->rec_size != REC_SIZE) {
		hvt_seterr(err, "channel: rec_size %u, expected %llu", h->rec_size, (unsigned long long)REC_SIZE);
		goto bad;
	}
	if (h->hdr_size != HVTRACE_CHAN_HDR_SIZE) {
		hvt_seterr(err, "channel: hdr_size %u, expected %u", h->hdr_size, HVTRACE_CHAN_HDR_SIZE);
		goto bad;
	}
	if (h->nr_rings > HVTRACE_CHAN_MAX_RINGS) {
		hvt_seterr(err, "channel: nr_rings %u exceeds %u", h->nr_rings, HVTRACE_CHAN_MAX_RINGS);
		goto bad;
	}
	if (h->size < HVTRACE_CHAN_HDR_SIZE || h->size > avail) {
		hvt_seterr(err, "channel: size %llu outside %u..%llu (the bytes available)",
			   (unsigned long long)h->size, HVTRACE_CHAN_HDR_SIZE, (unsigned long long)avail);
		goto bad;
	}
	if (h->nr_vcpus > 0x10000) {
		hvt_seterr(err, "channel: nr_vcpus %u exceeds 65536", h->nr_vcpus);
		goto bad;
	}
	if (check_enum(hvt_where_name, "channel: where", h->where, err) ||
	    check_enum(hvt_state_name, "channel: state", h->state, err) ||
	    check_enum(hvt_freeze_name, "channel: freeze", h->freeze, err))
		goto bad;
	for (i = 0; i < h->nr_rings; i++)
		if (check_ring(h, i, err))
			goto bad;
	for (i = 0; i < h->nr_rings; i++) {
		uint64_t a0 = h->rings[i].offset, a1 = a0 + h->rings[i].capacity * REC_SIZE;

		for (j = i + 1; j < h->nr_rings; j++) {
			uint64_t b0 = h->rings[j].offset, b1 = b0 + h->rings[j].capacity * REC_SIZE;

			if (a0 < b1 && b0 < a1) {
				hvt_seterr(err, "ring %u (0x%llx..0x%llx) overlaps ring %u (0x%llx..0x%llx)", j,
					   (unsigned long long)b0, (unsigned long long)b1, i,
					   (unsigned long long)a0, (unsigned long long)a1);
				goto bad;
			}
		}
	}
	memset(ch, 0, sizeof(*ch));
	ch->hdr = base;
	ch->base = base;
	ch->avail = avail;
	ch->size = h->size;
	ch->nr_rings = h->nr_rings;
	ch->tsc_hz = h->tsc_hz;
	ch->nr_vcpus = h->nr_vcpus;
	ch->source = HVT_SRC_MEM;
	for (i = 0; i < h->nr_rings; i++) {
		const struct hvtrace_ring *r = &h->rings[i];
		struct hvt_ring_counters c;

		ch->ring[i] = (struct hvt_ring_desc){
			.vcpu = r->vcpu, .consumer = r->consumer, .mode = r->mode, .offset = r->offset,
			.capacity = r->capacity, .cpl_filter = r->cpl_filter, .wait_us = r->wait_us,
		};
		if (hvt_ring_counters(ch, i, &c, err))
			goto bad;
	}
	free(h);
	return 0;
bad:
	free(h);
	return -1;
}

uint32_t hvt_chan_state(const struct hvt_chan *ch)
{
	return load32(&ch->hdr->state);
}

uint32_t hvt_chan_freeze(const struct hvt_chan *ch)
{
	return load32(&ch->hdr->freeze);
}

int hvt_ring_counters(const struct hvt_chan *ch, unsigned ring, struct hvt_ring_counters *c,
		      struct hvt_err *err)
{
	const struct hvtrace_ring *r = &ch->hdr->rings[ring];
	const struct hvt_ring_desc *d = &ch->ring[ring];

	c->tail = load_acq(&r->tail);
	c->head = load_acq(&r->head);
	c->lost = load_acq(&r->lost);
	c->filtered = load_acq(&r->filtered);
	c->waits = load_acq(&r->waits);
	c->reader = load_acq(&r->reader);
	if (c->head > HVT_COUNT_MAX || c->lost > HVT_COUNT_MAX) {
		hvt_seterr(err, "ring %u: %s %llu is absurd (> 2^56)", ring,
			   c->head > HVT_COUNT_MAX ? "head" : "lost",
			   (unsigned long long)(c->head > HVT_COUNT_MAX ? c->head : c->lost));
		return -1;
	}
	if (d->mode == HVTRACE_RING_LOSSLESS) {
		if (c->tail > c->head) {
			hvt_seterr(err, "ring %u: tail %llu past head %llu", ring,
				   (unsigned long long)c->tail, (unsigned long long)c->head);
			return -1;
		}
		if (c->head - c->tail > d->capacity) {
			hvt_seterr(err, "ring %u: head %llu more than capacity %llu past tail %llu", ring,
				   (unsigned long long)c->head, (unsigned long long)d->capacity,
				   (unsigned long long)c->tail);
			return -1;
		}
	}
	return 0;
}

uint64_t hvt_ring_fill(const struct hvt_chan *ch, unsigned ring, const struct hvt_ring_counters *c)
{
	if (ch->ring[ring].mode == HVTRACE_RING_LOSSLESS)
		return c->head - c->tail;
	return c->head < ch->ring[ring].capacity ? c->head : ch->ring[ring].capacity;
}

/* Copies records [first, first + n) of a ring, wrapping at its end. */
static void copy_out(const struct hvt_chan *ch, unsigned ring, uint64_t first, uint64_t n,
		     struct hvtrace_rec *out)
{
	const struct hvt_ring_desc *d = &ch->ring[ring];
	const struct hvtrace_rec *recs = (const void *)(ch->base + d->offset);
	uint64_t slot = first & (d->capacity - 1);
	uint64_t k = d->capacity - slot < n ? d->capacity - slot : n;

	memcpy(out, recs + slot, k * REC_SIZE);
	if (n > k)
		memcpy(out + k, recs, (n - k) * REC_SIZE);
}

int64_t hvt_ring_snapshot(const struct hvt_chan *ch, unsigned ring, int live,
			  struct hvtrace_rec *out, uint64_t *torn, struct hvt_err *err)
{
	const struct hvt_ring_desc *d = &ch->ring[ring];
	const uint64_t *headp = &ch->hdr->rings[ring].head;
	uint64_t h1, h2, n, first, lim;

	*torn = 0;
	h1 = load_acq(headp);
	if (h1 > HVT_COUNT_MAX) {
		hvt_seterr(err, "ring %u: head %llu is absurd (> 2^56)", ring, (unsigned long long)h1);
		return -1;
	}
	n = h1 < d->capacity ? h1 : d->capacity;
	first = h1 - n;
	copy_out(ch, ring, first, n, out);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	h2 = load_acq(headp);
	if (h2 < h1 || h2 > HVT_COUNT_MAX) {
		hvt_seterr(err, "ring %u: head went from %llu to %llu while reading", ring,
			   (unsigned long long)h1, (unsigned long long)h2);
		return -1;
	}
	/* The producer writes record j into the slot of j - capacity while
	 * head == j: with a writer about, record i is safe only if
	 * i + capacity > head. A still ring (dump, frozen) keeps them all. */
	if (live || h2 != h1)
		lim = h2 + 1 > d->capacity ? h2 + 1 - d->capacity : 0;
	else
		lim = first;
	if (lim > first) {
		uint64_t drop = lim - first < n ? lim - first : n;

		memmove(out, out + drop, (n - drop) * REC_SIZE);
		n -= drop;
		*torn = drop;
	}
	return (int64_t)n;
}

int hvt_ring_attach(struct hvt_chan *ch, unsigned ring, uint64_t pid, struct hvt_err *err)
{
	uint64_t *readerp = &ch->hdr->rings[ring].reader;
	uint64_t cur = load_acq(readerp);

	if (ch->ring[ring].mode != HVTRACE_RING_LOSSLESS) {
		hvt_seterr(err, "ring %u: mode %s, only lossless rings take a reader", ring,
			   hvt_mode_name(ch->ring[ring].mode));
		return -1;
	}
	/* a reader that died without detaching leaves its pid: take over */
	if (cur && cur != pid && cur <= 0x7fffffff && (kill((pid_t)cur, 0) == 0 || errno == EPERM)) {
		hvt_seterr(err, "ring %u: reader pid %llu is attached already", ring, (unsigned long long)cur);
		return -1;
	}
	__atomic_store_n(readerp, pid, __ATOMIC_RELEASE);
	return 0;
}

void hvt_ring_detach(struct hvt_chan *ch, unsigned ring, uint64_t pid)
{
	uint64_t expect = pid;

	__atomic_compare_exchange_n(&ch->hdr->rings[ring].reader, &expect, 0, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

int64_t hvt_ring_read(const struct hvt_chan *ch, unsigned ring, struct hvtrace_rec *out,
		      uint64_t max, struct hvt_err *err)
{
	const struct hvtrace_ring *r = &ch->hdr->rings[ring];
	uint64_t h = load_acq(&r->head), t = load_acq(&r->tail), n;

	if (t > h || h - t > ch->ring[ring].capacity) {
		hvt_seterr(err, "ring %u: head %llu and tail %llu inconsistent (capacity %llu)", ring,
			   (unsigned long long)h, (unsigned long long)t,
			   (unsigned long long)ch->ring[ring].capacity);
		return -1;
	}
	n = h - t < max ? h - t : max;
	if (n)
		copy_out(ch, ring, t, n, out);
	return (int64_t)n;
}

void hvt_ring_consume(struct hvt_chan *ch, unsigned ring, uint64_t n)
{
	uint64_t *tailp = &ch->hdr->rings[ring].tail;

	/* the copies are done before the producer may reuse their slots */
	__atomic_store_n(tailp, __atomic_load_n(tailp, __ATOMIC_RELAXED) + n, __ATOMIC_RELEASE);
}

int64_t hvt_ring_drain(struct hvt_chan *ch, unsigned ring, struct hvtrace_rec *out, uint64_t max,
		       struct hvt_err *err)
{
	int64_t n = hvt_ring_read(ch, ring, out, max, err);

	if (n > 0)
		hvt_ring_consume(ch, ring, (uint64_t)n);
	return n;
}

int hvt_chan_open_shm(struct hvt_chan *ch, const char *path, struct hvt_err *err)
{
	size_t len;
	void *map = hvt_map_file(path, 1, HVTRACE_CHAN_HDR_SIZE, &len, err);

	if (!map)
		return -1;
	if (hvt_chan_validate(ch, map, len, err)) {
		munmap(map, len);
		return -1;
	}
	ch->source = HVT_SRC_SHM;
	ch->map = map;
	ch->map_len = len;
	return 0;
}

void hvt_chan_close(struct hvt_chan *ch)
{
	if (ch->map)
		munmap(ch->map, ch->map_len);
	if (ch->owns_copy)
		free(ch->base);
	memset(ch, 0, sizeof(*ch));
}
