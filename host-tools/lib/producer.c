/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the channel writer, for tests and benchmarks. Lays out a
 * channel and fills its rings as record.h says the hypervisor does: the
 * record, then head; a full LOSSLESS ring waits (only while a reader is
 * attached) up to wait_us, then drops, counts the drops in `lost` and
 * writes one LOST record once space returns. A spell of dropping is not
 * waited on again until a record goes in, so a stuck reader cannot stall
 * the producer record after record.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libhvtrace.h"

#define REC_SIZE ((uint64_t)sizeof(struct hvtrace_rec))

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t hvt_chan_layout_size(const struct hvt_ring_spec *rs, unsigned n)
{
	uint64_t size = HVTRACE_CHAN_HDR_SIZE;
	unsigned i;

	for (i = 0; i < n; i++)
		size += (rs[i].capacity * REC_SIZE + 4095) & ~4095ull;
	return size;
}

int hvt_chan_layout(void *buf, uint64_t size, const struct hvt_ring_spec *rs, unsigned n,
		    uint32_t nr_vcpus, uint64_t tsc_hz, struct hvt_err *err)
{
	struct hvtrace_chan *h = buf;
	uint64_t off = HVTRACE_CHAN_HDR_SIZE;
	unsigned i;

	if (n > HVTRACE_CHAN_MAX_RINGS) {
		hvt_seterr(err, "%u rings, at most %u", n, HVTRACE_CHAN_MAX_RINGS);
		return -1;
	}
	if (size < hvt_chan_layout_size(rs, n)) {
		hvt_seterr(err, "%llu bytes, the rings need %llu", (unsigned long long)size,
			   (unsigned long long)hvt_chan_layout_size(rs, n));
		return -1;
	}
	memset(buf, 0, size);
	h->magic = HVTRACE_CHAN_MAGIC;
	h->abi_version = HVTRACE_ABI_VERSION;
	h->rec_size = REC_SIZE;
	h->hdr_size = HVTRACE_CHAN_HDR_SIZE;
	h->nr_rings = n;
	h->size = size;
	h->tsc_hz = tsc_hz;
	h->where = HVTRACE_CHAN_IVSHMEM;
	h->nr_vcpus = nr_vcpus;
	h->state = HVTRACE_STATE_TRACING;
	for (i = 0; i < n; i++) {
		struct hvtrace_ring *r = &h->rings[i];

		if (rs[i].capacity < 2 || (rs[i].capacity & (rs[i].capacity - 1))) {
			hvt_seterr(err, "ring %u: capacity %llu not a power of two >= 2", i,
				   (unsigned long long)rs[i].capacity);
			return -1;
		}
		r->vcpu = rs[i].vcpu;
		r->mode = rs[i].mode;
		r->consumer = rs[i].mode == HVTRACE_RING_LOSSLESS ? HVTRACE_CONSUMER_STREAM
								  : HVTRACE_CONSUMER_FLIGHT;
		r->offset = off;
		r->capacity = rs[i].capacity;
		r->cpl_filter = rs[i].cpl_filter;
		r->wait_us = rs[i].wait_us;
		off += (rs[i].capacity * REC_SIZE + 4095) & ~4095ull;
	}
	return 0;
}

void hvt_chan_set_state(void *buf, uint32_t state, uint32_t freeze, uint64_t freeze_tsc)
{
	struct hvtrace_chan *h = buf;

	h->freeze = freeze;
	h->freeze_tsc = freeze_tsc;
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h->state, state, __ATOMIC_RELEASE);
}

void hvt_producer_init(struct hvt_producer *p, void *chan_buf)
{
	memset(p, 0, sizeof(*p));
	p->hdr = chan_buf;
	p->base = chan_buf;
}

static struct hvtrace_rec *slot(struct hvt_producer *p, unsigned r, uint64_t i)
{
	const struct hvtrace_ring *ring = &p->hdr->rings[r];

	return (struct hvtrace_rec *)(p->base + ring->offset) + (i & (ring->capacity - 1));
}

/* Slots free for the producer of a LOSSLESS ring, re-reading tail. */
static uint64_t free_slots(struct hvt_producer *p, unsigned r)
{
	struct hvtrace_ring *ring = &p->hdr->rings[r];
	uint64_t t = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);

	p->st[r].free = ring->capacity - (ring->head - t);
	return p->st[r].free;
}

static void publish(struct hvt_producer *p, unsigned r, const struct hvtrace_rec *rec)
{
	struct hvtrace_ring *ring = &p->hdr->rings[r];

	*slot(p, r, ring->head) = *rec;
	__atomic_store_n(&ring->head, ring->head + 1, __ATOMIC_RELEASE);
}

static void put_lost(struct hvt_producer *p, unsigned r, uint64_t tsc)
{
	struct hvtrace_rec lost = {
		.tsc = tsc, .from = p->st[r].pending, .to = p->st[r].first_tsc,
		.vcpu = (uint16_t)p->hdr->rings[r].vcpu, .kind = HVTRACE_REC_LOST,
	};

	publish(p, r, &lost);
	p->st[r].pending = 0;
	p->st[r].free--;
}

enum hvt_put hvt_producer_put(struct hvt_producer *p, unsigned r, const struct hvtrace_rec *rec)
{
	struct hvtrace_ring *ring = &p->hdr->rings[r];
	uint64_t need;

	if (ring->mode != HVTRACE_RING_LOSSLESS) {
		publish(p, r, rec);
		return HVT_PUT_OK;
	}
	need = p->st[r].pending ? 2 : 1;	/* the LOST record goes first */
	if (p->st[r].free < need && free_slots(p, r) < need && !p->st[r].pending &&
	    __atomic_load_n(&ring->reader, __ATOMIC_ACQUIRE) && ring->wait_us) {
		uint64_t until = now_us() + ring->wait_us;

		__atomic_store_n(&ring->waits, ring->waits + 1, __ATOMIC_RELEASE);
		while (free_slots(p, r) < need && now_us() < until)
			;
	}
	if (p->st[r].free < need) {
		if (!p->st[r].pending)
			p->st[r].first_tsc = rec->tsc;
		p->st[r].pending++;
		__atomic_store_n(&ring->lost, ring->lost + 1, __ATOMIC_RELEASE);
		return HVT_PUT_DROPPED;
	}
	if (p->st[r].pending)
		put_lost(p, r, rec->tsc);
	publish(p, r, rec);
	p->st[r].free--;
	return HVT_PUT_OK;
}

uint64_t hvt_producer_put_batch(struct hvt_producer *p, unsigned r, const struct hvtrace_rec *recs,
				uint64_t n)
{
	struct hvtrace_ring *ring = &p->hdr->rings[r];
	uint64_t h = ring->head, cap = ring->capacity, k, s;

	if (p->st[r].free < n)
		free_slots(p, r);
	if (n > p->st[r].free)
		n = p->st[r].free;
	s = h & (cap - 1);
	k = cap - s < n ? cap - s : n;
	memcpy(slot(p, r, h), recs, k * REC_SIZE);
	if (n > k)
		memcpy(slot(p, r, 0), recs + k, (n - k) * REC_SIZE);
	__atomic_store_n(&ring->head, h + n, __ATOMIC_RELEASE);
	p->st[r].free -= n;
	return n;
}

int hvt_producer_flush_lost(struct hvt_producer *p, unsigned r, uint64_t timeout_us)
{
	uint64_t until = now_us() + timeout_us;

	while (p->st[r].pending) {
		if (free_slots(p, r) >= 1) {
			put_lost(p, r, p->st[r].first_tsc);
			break;
		}
		if (now_us() >= until)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* The synthetic workload. */

#define SYNTH_FIXED 5	/* main, f1, f2, f3, isr_timer */

uint64_t hvt_synth_func_addr(unsigned k)
{
	return HVT_SYNTH_TEXT + (uint64_t)k * 0x1000;
}

const char *hvt_synth_func_name(unsigned k, char *buf, size_t len)
{
	static const char *const fixed[SYNTH_FIXED] = { "main", "f1", "f2", "f3", "isr_timer" };

	if (k < SYNTH_FIXED)
		return fixed[k];
	snprintf(buf, len, "fn_%05u", k);
	return buf;
}

void hvt_synth_rec(uint32_t vcpu, uint64_t i, unsigned nfuncs, struct hvtrace_rec *r)
{
	uint64_t j = i / 8, m = hvt_synth_func_addr(0);
	uint64_t f1 = hvt_synth_func_addr(1), f2 = hvt_synth_func_addr(2), f3 = hvt_synth_func_addr(3);

	if (nfuncs > SYNTH_FIXED) {
		unsigned spread = nfuncs - SYNTH_FIXED;

		f1 = hvt_synth_func_addr(SYNTH_FIXED + (unsigned)((j * 3) % spread));
		f2 = hvt_synth_func_addr(SYNTH_FIXED + (unsigned)((j * 7 + 1) % spread));
		f3 = hvt_synth_func_addr(SYNTH_FIXED + (unsigned)((j * 13 + 2) % spread));
	}
	memset(r, 0, sizeof(*r));
	r->tsc = 1000 + i * 100 + vcpu * 10;
	r->vcpu = (uint16_t)vcpu;
	r->kind = HVTRACE_REC_BRANCH;
	r->info = HVTRACE_INFO_MAKE(0, 0);
	switch (i % 8) {
	case 0: r->from = m + 0x10;  r->to = f1;	 r->aux = HVTRACE_BR_CALL; break;
	case 1: r->from = f1 + 0x8;  r->to = f1 + 0x20;	 r->aux = HVTRACE_BR_JCC; break;
	case 2: r->from = f1 + 0x30; r->to = f2;	 r->aux = HVTRACE_BR_CALL; break;
	case 3: r->from = f2 + 0x10; r->to = f3;	 r->aux = HVTRACE_BR_CALL_IND; break;
	case 4: r->from = f3 + 0x18; r->to = f2 + 0x15;	 r->aux = HVTRACE_BR_RET; break;
	case 5: r->from = f2 + 0x40; r->to = f1 + 0x35;	 r->aux = HVTRACE_BR_RET; break;
	case 6: r->from = f1 + 0x50; r->to = m + 0x15;	 r->aux = HVTRACE_BR_RET; break;
	default:
		r->from = m + 0x20;
		if (j % 4 == 3) {
			r->kind = HVTRACE_REC_INTERRUPT;
			r->to = hvt_synth_func_addr(4);
			r->aux = 0x20;
		} else {
			r->to = m + 0x08;
			r->aux = HVTRACE_BR_JMP;
		}
	}
}

/* An ELF core as dump-guest-memory writes one: a PT_LOAD per segment, in
 * the order given, back to back from the first page after the program
 * headers (so at file offsets unlike their p_paddr). */
void *hvt_elf_core_notes(const uint8_t *mem, const struct hvt_elf_seg *seg, unsigned n,
			 const void *notes, size_t notes_len, size_t *len)
{
	unsigned nph = n + (notes_len ? 1 : 0);
	uint64_t off = (sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr) + 0xfff) & ~0xfffull;
	uint8_t *f;
	Elf64_Ehdr *e;
	Elf64_Phdr *ph;
	unsigned i;

	for (i = 0, *len = off + ((notes_len + 0xfff) & ~0xfffull); i < n; i++)
		*len += seg[i].len;
	f = nph < PN_XNUM ? calloc(1, *len) : NULL;
	if (!f)
		return NULL;
	e = (Elf64_Ehdr *)f;
	ph = (Elf64_Phdr *)(f + sizeof(*e));
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_CORE;
	e->e_machine = EM_X86_64;
	e->e_version = EV_CURRENT;
	e->e_phoff = sizeof(*e);
	e->e_ehsize = sizeof(*e);
	e->e_phentsize = sizeof(*ph);
	e->e_phnum = (uint16_t)nph;
	if (notes_len) {	/* dump-guest-memory puts the notes first */
		*ph++ = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = off, .p_filesz = notes_len,
				      .p_memsz = notes_len };
		memcpy(f + off, notes, notes_len);
		off += (notes_len + 0xfff) & ~0xfffull;
	}
	for (i = 0; i < n; i++) {
		ph[i] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = off,
				      .p_vaddr = 0xffff888000000000ull + seg[i].paddr,
				      .p_paddr = seg[i].paddr, .p_filesz = seg[i].len,
				      .p_memsz = seg[i].len, .p_align = 0x1000 };
		memcpy(f + off, mem + seg[i].paddr, seg[i].len);
		off += seg[i].len;
	}
	return f;
}

void *hvt_elf_core_segs(const uint8_t *mem, const struct hvt_elf_seg *seg, unsigned n, size_t *len)
{
	return hvt_elf_core_notes(mem, seg, n, NULL, 0, len);
}

void *hvt_elf_core_image(const uint8_t *mem, uint64_t at, uint64_t end, size_t *len)
{
	const struct hvt_elf_seg seg[2] = { { 0, at }, { at, end - at } };

	return hvt_elf_core_segs(mem, seg, 2, len);
}
