/*
 * engine = interp (docs/branch-engine.md "The interpreting engine"): at an
 * entry while tracing, the hypervisor runs the guest's next instructions
 * itself with the interpreter's core (arch/x86/interp), recording each
 * branch as the reference engine would, and hands the first instruction
 * the core leaves (or the one at the budget's end) to the fast engine,
 * which plans its stop as ever. Only where that is exactly the processor's
 * behaviour (interp_allowed): otherwise the fast engine alone runs this
 * entry. Guest memory is reached through a strict page walk
 * (arch/x86/pgwalk.c: every check, accessed/dirty bits never set here:
 * an access that would set one is left) and only in guest RAM. Root mode,
 * interrupts off; physical interrupts and NMIs that come meanwhile stay
 * pending and exit right after the entry. The burst looks at the local
 * APIC every 64 instructions and ends when it has an interrupt for the
 * processor; what the APIC does not show (an NMI, an ExtINT from the
 * 8259) waits at most the budget.
 */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/interp/interp.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/pgwalk.h"
#include "base/gmem.h"
#include "base/lapic.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/mm.h"
#include "base/prof.h"
#include "base/vcpu.h"
#include "base/vecset.h"
#include "trace/engine.h"

/* A burst's limits: instructions, and TSC ticks, so that other vCPUs and the host's requests
 * see this one come back; and an interrupt the local APIC has for this processor ends it
 * sooner (interp_poll, every INTERP_POLL_EVERY instructions). docs/branch-engine.md "Budget":
 * the figures these were chosen by. */
#define INTERP_BUDGET_INSNS	16384
#define INTERP_BUDGET_US	2000
#define INTERP_POLL_EVERY	64

/* --- memory as the processor sees it ---------------------------------------------------- */

/* A burst's translations, 4 KiB pages of guest RAM, each for the access it was walked for. As
 * a TLB may (SDM Vol. 3 4.10.2.3), a translation is used for the rest of the burst (at most its
 * budget) even if the guest's page tables change meanwhile; a write needs a walk for writing.
 * Two direct-mapped tables by page number, fetches and data (a data entry says whether it was
 * walked for writing, which serves reads too): the kernel's code and data span more pages in a
 * burst than the 8 entries of one searched table held (docs/benchmarks.md). */
#define IMEM_TLB	32
#define IMEM_VALID	1ull	/* in the tag: the page | IMEM_VALID | IMEM_WRITE */
#define IMEM_WRITE	2ull
struct imem_tlb {
	u64 tag;
	u8 *host;
};
struct imem {
	struct vcpu *v;
	struct pgwalk_ctl ctl;
	struct imem_tlb itlb[IMEM_TLB], dtlb[IMEM_TLB];
	int refused;		/* enum pgwalk_status of the last access refused */
	u64 ram_base, ram_size;	/* the guest RAM range found last (imem_ram), size 0: none */
	bool pkru_tried;	/* ctl.pkru asked of the backend (imem_walk) */
	struct interp_verify *shadow;	/* verify mode: the write is buffered there, not made */
	/* the host debugger's watchpoints (struct dbg_bps, trace/dbg.c) are checked (interp_run's
	 * burst only); `whits`: those the instruction now running hit (kept only when it
	 * completes: an access that faults, or an instruction left, fires none) */
	bool watch;
	u32 whits;
};

/* The entry a page's translation for `acc` would be kept in */
static inline struct imem_tlb *imem_slot(struct imem *m, u64 page, enum pgwalk_access acc)
{
	u32 i = (u32)(page >> PAGE_SHIFT) % IMEM_TLB;
	return acc == PGWALK_FETCH ? &m->itlb[i] : &m->dtlb[i];
}

/* Whether the entry holds the page for `acc` */
static inline bool imem_tlb_hit(const struct imem_tlb *e, u64 page, enum pgwalk_access acc)
{
	return (e->tag & ~IMEM_WRITE) == (page | IMEM_VALID) && (acc != PGWALK_WRITE || (e->tag & IMEM_WRITE));
}

/* Whether [pa, pa + len) (len <= 4096, not wrapping: a page or an aligned entry) is ordinary
 * guest RAM; the range found is kept, as a page walk's entries and pages mostly lie in one */
static bool imem_ram(struct imem *m, u64 pa, u64 len)
{
	if (pa - m->ram_base >= m->ram_size) {
		const struct hv_memrange *r = memmap_range(&hv.guest_ram, pa);
		if (!r)
			return false;
		m->ram_base = r->base;
		m->ram_size = r->size;
	}
	return len <= m->ram_size - (pa - m->ram_base);
}

static const u64 *imem_entry(void *ctx, u64 pa)
{
	return imem_ram(ctx, pa, 8) ? guest_pa_ptr(pa) : NULL;
}

/* A TLB miss: the walk, and the translation kept in `e` */
static u8 *imem_walk(struct imem *m, u64 page, enum pgwalk_access acc, struct imem_tlb *e)
{
	u64 gpa, size;
	m->v->trace->interp.walks++;
	u32 was = prof_switch(m->v, HVTRACE_PROF_WALK);
	int st = pgwalk(&m->ctl, imem_entry, m, page, acc, &gpa, &size);
	if (st == PGWALK_PKEY && !m->pkru_tried) {
		/* a user page's data under CR4.PKE: the guest's PKRU, read once a burst (only
		 * WRPKRU and XRSTOR change it, which the core leaves), then the walk again */
		m->pkru_tried = true;
		if (hv.ops->guest_pkru && hv.ops->guest_pkru(m->v, &m->ctl.pkru)) {
			m->ctl.pkru_known = true;
			st = pgwalk(&m->ctl, imem_entry, m, page, acc, &gpa, &size);
		}
	}
	prof_switch(m->v, was);
	/* only ordinary guest RAM: never the hypervisor's ranges, MMIO, ROM or the channel */
	if (st == PGWALK_OK && !imem_ram(m, gpa, PAGE_SIZE))
		st = PGWALK_NOT_RAM;
	if (st != PGWALK_OK) {
		m->refused = st;
		return NULL;
	}
	e->tag = page | IMEM_VALID | (acc == PGWALK_WRITE ? IMEM_WRITE : 0);
	e->host = guest_pa_ptr(gpa);
	return e->host;
}

/* The host's pointer to the page holding `lin` (4 KiB aligned), or NULL: the access must be
 * left to the processor. A walk for writing passed every check a read makes (SDM Vol. 3
 * 4.6.1), so it serves reads too; a fetch's checks (NX, SMEP) are its own. The hit inline
 * (the burst's loop asks for every instruction's page), the walk not. */
static inline u8 *imem_page(struct imem *m, u64 lin, enum pgwalk_access acc)
{
	u64 page = lin & ~(PAGE_SIZE - 1);
	struct imem_tlb *e = imem_slot(m, page, acc);
	return imem_tlb_hit(e, page, acc) ? e->host : imem_walk(m, page, acc, e);
}

/* One access of len (1, 2, 4, 8) bytes: aligned, one load or store of that width (single-copy
 * atomic, SDM Vol. 3 9.1.1: other vCPUs run meanwhile); misaligned, bytes, both pages checked
 * before any byte moves. */
/* The page(s) `len` bytes at `lin` lie in, both checked for `kind` before
 * any byte moves: *p the first, *q the second (the first again when the
 * access stays in one page). False: leave it to the processor. */
static bool imem_pages(struct imem *m, u64 lin, unsigned len, enum pgwalk_access kind, u8 **p, u8 **q)
{
	*p = imem_page(m, lin, kind);
	*q = *p;
	if (*p && (lin & (PAGE_SIZE - 1)) + len > PAGE_SIZE)
		*q = imem_page(m, lin + len - 1, kind);
	return *p && *q;
}

/* The guest-physical address of a byte of a kept translation's page (guest RAM is mapped at
 * its own address: base/mm.h guest_pa_ptr) */
static inline u64 imem_gpa(const u8 *host)
{
	return (u64)(uintptr_t)host;
}

/* The debugger's watchpoints that an access of len bytes at lin hits: `at` its first byte,
 * `q` the start of the second page where it crosses one; a read (`new` NULL: reads
 * compared with the debug registers' read-or-write watchpoints alone) or a write of `new`
 * over what is there now. Each page's part apart (its own guest-physical address). */
static __attribute__((noinline)) void imem_watch(struct imem *m, u64 lin, const u8 *at, const u8 *q, unsigned len,
						 const u8 *new)
{
	const struct dbg_bps *b = &m->v->trace->dbg_bps;
	unsigned first = MIN(len, (unsigned)(PAGE_SIZE - (lin & (PAGE_SIZE - 1))));
	m->whits |= pagebp_watch_hits(b->w, b->wn, lin, imem_gpa(at), first, new ? at : NULL, new);
	if (first < len)
		m->whits |= pagebp_watch_hits(b->w, b->wn, lin + first, imem_gpa(q), len - first, new ? q : NULL,
					      new ? new + first : NULL);
}

static int imem_read(void *ctx, u64 lin, void *buf, unsigned len)
{
	struct imem *m = ctx;
	u64 off = lin & (PAGE_SIZE - 1);
	u8 *p, *q;
	if (!imem_pages(m, lin, len, PGWALK_READ, &p, &q))
		return INTERP_MEM_LEAVE;
	p += off;
	if (__builtin_expect(m->watch, 0))
		imem_watch(m, lin, p, q, len, NULL);
	if (!(lin & (len - 1))) {
		switch (len) {
		case 1: *(u8 *)buf = __atomic_load_n(p, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 2: *(u16 *)buf = __atomic_load_n((u16 *)p, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 4: *(u32 *)buf = __atomic_load_n((u32 *)p, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 8: *(u64 *)buf = __atomic_load_n((u64 *)p, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		}
	}
	for (unsigned i = 0; i < len; i++)
		((u8 *)buf)[i] = off + i < PAGE_SIZE ? p[i] : q[off + i - PAGE_SIZE];
	return INTERP_MEM_OK;
}

static int imem_write(void *ctx, u64 lin, const void *buf, unsigned len)
{
	struct imem *m = ctx;
	u64 off = lin & (PAGE_SIZE - 1);
	u8 *p, *q;
	if (!imem_pages(m, lin, len, PGWALK_WRITE, &p, &q))
		return INTERP_MEM_LEAVE;
	if (m->shadow) {
		m->shadow->wrote = true;
		m->shadow->wlin = lin;
		m->shadow->wlen = (u8)len;
		m->shadow->wval = 0;
		memcpy(&m->shadow->wval, buf, len);
		return INTERP_MEM_OK;
	}
	interp_code_written(&m->v->trace->dcache, p + off,
			    off + len <= PAGE_SIZE ? p + off + len - 1 : q + (off + len - 1 - PAGE_SIZE));
	p += off;
	if (__builtin_expect(m->watch, 0))
		imem_watch(m, lin, p, q, len, buf);	/* before the bytes change */
	if (!(lin & (len - 1))) {
		switch (len) {
		case 1: __atomic_store_n(p, *(const u8 *)buf, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 2: __atomic_store_n((u16 *)p, *(const u16 *)buf, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 4: __atomic_store_n((u32 *)p, *(const u32 *)buf, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		case 8: __atomic_store_n((u64 *)p, *(const u64 *)buf, __ATOMIC_RELAXED); return INTERP_MEM_OK;
		}
	}
	for (unsigned i = 0; i < len; i++) {
		u8 *d = off + i < PAGE_SIZE ? &p[i] : &q[off + i - PAGE_SIZE];
		*d = ((const u8 *)buf)[i];
	}
	return INTERP_MEM_OK;
}

/* A locked read-modify-write's operand of len bytes at lin (aligned to len: a split lock, perhaps
 * across pages, goes to the processor): the host's pointer to it, walked for writing, or NULL.
 * Verify mode's shadow buffers no locked access: NULL there. */
static u8 *imem_locked(struct imem *m, u64 lin, unsigned len)
{
	if ((lin & (len - 1)) || m->shadow)
		return NULL;
	u8 *p = imem_page(m, lin, PGWALK_WRITE);
	if (!p)
		return NULL;
	p += lin & (PAGE_SIZE - 1);
	interp_code_written(&m->v->trace->dcache, p, p + len - 1);
	return p;
}

/* A locked read-modify-write at p seen by the debugger's watchpoints: was read, now written */
static void imem_watch_rmw(struct imem *m, u64 lin, const u8 *p, unsigned len, const void *was, const void *now)
{
	const struct dbg_bps *b = &m->v->trace->dbg_bps;
	m->whits |= pagebp_watch_hits(b->w, b->wn, lin, imem_gpa(p), len, was, now);
}

/* A locked read-modify-write's write (interp_mem_ops.cmpxchg): one LOCK CMPXCHG of the
 * guest's bytes, so that another vCPU's write between the instruction's read and this one is
 * seen, not overwritten. Aligned only: a split lock (misaligned, perhaps across pages) goes to
 * the processor. Verify mode's shadow does not buffer it: left there. */
static int imem_cmpxchg(void *ctx, u64 lin, u64 *old, u64 new, unsigned len, bool *done)
{
	struct imem *m = ctx;
	u8 *p = imem_locked(m, lin, len);
	if (!p)
		return INTERP_MEM_LEAVE;
	/* one width's LOCK CMPXCHG: what it found goes back in *old */
#define IMEM_CAS(T)                                                                                        \
	do {                                                                                               \
		T e = (T)*old;                                                                             \
		*done = __atomic_compare_exchange_n((T *)p, &e, (T)new, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
		*old = e;                                                                                  \
	} while (0)
	switch (len) {
	case 1: IMEM_CAS(u8); break;
	case 2: IMEM_CAS(u16); break;
	case 4: IMEM_CAS(u32); break;
	default: IMEM_CAS(u64); break;
	}
#undef IMEM_CAS
	if (__builtin_expect(m->watch, 0)) {
		/* a read and a write, the old value written back where it did not compare equal
		 * (SDM Vol. 2A CMPXCHG: the destination is written either way) */
		u64 was = *old, now = *done ? new : *old;
		imem_watch_rmw(m, lin, p, len, &was, &now);
	}
	return INTERP_MEM_OK;
}

/* CMPXCHG16B's access (interp_mem_ops.cmpxchg16): the processor's own LOCK CMPXCHG16B on the
 * guest's page (aligned to 16: the core checked, so within one page). Verify mode's shadow
 * holds one write of at most 8 bytes: left there. */
static int imem_cmpxchg16(void *ctx, u64 lin, u64 old[2], const u64 new[2], bool *done)
{
	struct imem *m = ctx;
	u8 *p = imem_locked(m, lin, 16);
	if (!p)
		return INTERP_MEM_LEAVE;
	u64 was[2] = { old[0], old[1] };	/* what was there, if it compared equal */
	struct { u64 lo, hi; } __attribute__((aligned(16))) *q = (void *)p;
	asm volatile("lock cmpxchg16b %[m]"
		     : [m] "+m"(*q), "+a"(old[0]), "+d"(old[1]), "=@ccz"(*done)
		     : "b"(new[0]), "c"(new[1])
		     : "memory");
	if (__builtin_expect(m->watch, 0)) {
		/* a read and a write, what was there written back where it did not compare equal */
		const u64 *now = *done ? new : old;
		if (!*done)
			was[0] = old[0], was[1] = old[1];
		imem_watch_rmw(m, lin, p, 16, was, now);
	}
	return INTERP_MEM_OK;
}

/* A REP STOS's part (interp_mem_ops.fill): count elements in lin's page, by the processor's
 * own REP STOS of the same width on the guest's page. Verify mode's shadow holds one write:
 * left there. */
static int imem_fill(void *ctx, u64 lin, u64 val, unsigned len, unsigned count)
{
	struct imem *m = ctx;
	if (m->shadow)
		return INTERP_MEM_LEAVE;
	u8 *p = imem_page(m, lin, PGWALK_WRITE);
	if (!p)
		return INTERP_MEM_LEAVE;
	p += lin & (PAGE_SIZE - 1);
	/* a part that writes a watched byte: the processor runs the rest of the REP STOS (its
	 * watchpoint traps after the element that hit, SDM Vol. 3 18.3.1.2) */
	if (__builtin_expect(m->watch, 0) &&
	    pagebp_watch_near(m->v->trace->dbg_bps.w, m->v->trace->dbg_bps.wn, lin, imem_gpa(p), (u64)len * count))
		return INTERP_MEM_LEAVE;
	interp_code_written(&m->v->trace->dcache, p, p + (u64)len * count - 1);
	u64 n = count;
	switch (len) {
	case 1: asm volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(val) : "memory"); break;
	case 2: asm volatile("rep stosw" : "+D"(p), "+c"(n) : "a"(val) : "memory"); break;
	case 4: asm volatile("rep stosl" : "+D"(p), "+c"(n) : "a"(val) : "memory"); break;
	default: asm volatile("rep stosq" : "+D"(p), "+c"(n) : "a"(val) : "memory"); break;
	}
	return INTERP_MEM_OK;
}

/* A REP MOVS's part (interp_mem_ops.copy): count elements from src's page to dst's, by the
 * processor's own REP MOVS of the same width on the guest's pages (guest RAM is mapped at its
 * own address, so ranges that overlap in the guest's memory overlap here too and move as the
 * guest's would). The read's walk first, as the processor reads first. A part that touches a
 * watched byte, read or written: the processor runs the rest (its watchpoint traps after the
 * element that hit). Verify mode's shadow holds one write: left there. */
static int imem_copy(void *ctx, u64 dst, u64 src, unsigned len, unsigned count)
{
	struct imem *m = ctx;
	if (m->shadow)
		return INTERP_MEM_LEAVE;
	const u8 *ps = imem_page(m, src, PGWALK_READ);
	u8 *pd = ps ? imem_page(m, dst, PGWALK_WRITE) : NULL;
	if (!pd)
		return INTERP_MEM_LEAVE;
	ps += src & (PAGE_SIZE - 1);
	pd += dst & (PAGE_SIZE - 1);
	u64 bytes = (u64)len * count;
	if (__builtin_expect(m->watch, 0) &&
	    (pagebp_watch_near(m->v->trace->dbg_bps.w, m->v->trace->dbg_bps.wn, src, imem_gpa(ps), bytes) ||
	     pagebp_watch_near(m->v->trace->dbg_bps.w, m->v->trace->dbg_bps.wn, dst, imem_gpa(pd), bytes)))
		return INTERP_MEM_LEAVE;
	interp_code_written(&m->v->trace->dcache, pd, pd + bytes - 1);
	u64 n = count;
	switch (len) {
	case 1: asm volatile("rep movsb" : "+D"(pd), "+S"(ps), "+c"(n) : : "memory"); break;
	case 2: asm volatile("rep movsw" : "+D"(pd), "+S"(ps), "+c"(n) : : "memory"); break;
	case 4: asm volatile("rep movsl" : "+D"(pd), "+S"(ps), "+c"(n) : : "memory"); break;
	default: asm volatile("rep movsq" : "+D"(pd), "+S"(ps), "+c"(n) : : "memory"); break;
	}
	return INTERP_MEM_OK;
}

/* Fresh bytes at every fetch (no decoded copy is kept): self- and cross-modifying code is seen
 * as the processor sees it after a serializing point, or sooner. */
static unsigned imem_fetch(void *ctx, u64 lin, u8 *buf, unsigned max)
{
	struct imem *m = ctx;
	unsigned n = 0;
	while (n < max) {
		u64 at = lin + n, off = at & (PAGE_SIZE - 1);
		const u8 *p = imem_page(m, at, PGWALK_FETCH);
		if (!p)
			break;
		while (n < max && off < PAGE_SIZE)
			buf[n++] = p[off++];
	}
	return n;
}

/* Whether e's instruction (1-15 bytes, all in this page) is at p, at offset `off` in its page:
 * 16 bytes compared as two words where both lie in the page (only the instruction's bytes,
 * e->mask), else byte by byte. Inline: asked before every instruction. */
static inline __attribute__((always_inline)) bool code_same(const u8 *p, u64 off, const struct interp_dcache_entry *e)
{
	if (__builtin_expect(off + 16 > PAGE_SIZE, 0))
		return !memcmp(p, e->bytes, e->len);
	u64 a, b;
	__builtin_memcpy(&a, p, 8);
	__builtin_memcpy(&b, p + 8, 8);
	return !(((a ^ e->w[0]) & e->mask[0]) | ((b ^ e->w[1]) & e->mask[1]));
}

/* Where the instruction at lin is kept (direct-mapped) */
static inline struct interp_dcache_entry *dcache_entry(struct imem *m, u64 lin)
{
	return &m->v->trace->dcache.e[(lin ^ (lin >> 11)) % INTERP_DCACHE];
}

/* Decoded instructions kept across bursts (struct interp_dcache): an entry answers only when
 * every byte of its instruction, fetched now through the page walk, is the byte it was decoded
 * from (the decode is a function of those bytes and of RIP = its linear address in 64-bit
 * code), so a write to the code, a remapping or a changed permission is seen as by a fresh
 * decode. Saves the decoder's time (60% of an interpreted instruction's, natively).
 * The cache's entry for the instruction at lin when every byte of it is in memory now, else
 * NULL (inline: the burst's loop asks before every instruction). An instruction that crosses
 * a page is fetched through both pages' translations and compared there. */
static inline __attribute__((always_inline)) struct interp_dcache_entry *dcache_hit(struct imem *m, u64 lin)
{
	struct interp_dcache *dc = &m->v->trace->dcache;
	struct interp_dcache_entry *e = dcache_entry(m, lin);
	if (!e->len || e->len > 15 || e->lin != lin)
		return NULL;
	if (e->epoch == dc->epoch) {
		dc->hits++;
		return e;	/* checked in this burst, no write to its page since */
	}
	/* compared in place when the instruction is within one page (and then not again in
	 * this epoch: its page noted); one across pages every time */
	u64 off = lin & (PAGE_SIZE - 1);
	const u8 *p = off + e->len <= PAGE_SIZE ? imem_page(m, lin, PGWALK_FETCH) : NULL;
	u8 now[15];
	if (p ? !code_same(p + off, off, e)
	      : imem_fetch(m, lin, now, e->len) != e->len || memcmp(now, e->bytes, e->len))
		return NULL;
	if (p) {
		e->epoch = dc->epoch;
		dc->code |= interp_code_bit(p);
	}
	dc->hits++;
	return e;
}

static int imem_decode(void *ctx, u64 lin, const u8 **bytes, const struct dec_insn **in, struct interp_pre **pre)
{
	struct imem *m = ctx;
	struct interp_dcache_entry *e = dcache_hit(m, lin);
	if (!e) {
		e = dcache_entry(m, lin);
		m->v->trace->interp.decodes++;
		e->len = 0;
		e->epoch = 0;	/* checked at its next hit, its page noted then */
		e->w[0] = e->w[1] = 0;
		unsigned got = imem_fetch(m, lin, e->bytes, 15);
		int st = dec_decode(e->bytes, got, DEC_MODE_64, lin, &e->in);
		if (st != DEC_OK)
			return st;
		for (unsigned i = e->in.len; i < 15; i++)
			e->bytes[i] = 0;
		e->lin = lin;
		e->len = e->in.len;
		e->mask[0] = e->len >= 8 ? ~0ull : (1ull << (e->len * 8)) - 1;
		e->mask[1] = e->len <= 8 ? 0 : (1ull << ((e->len - 8) * 8)) - 1;	/* len <= 15 */
		e->pre.valid = false;
	}
	*bytes = e->bytes;
	*in = &e->in;
	*pre = &e->pre;
	return DEC_OK;
}

static const struct interp_mem_ops imem_ops = { imem_read, imem_write, imem_fetch, imem_decode, imem_cmpxchg, imem_fill,
						 imem_cmpxchg16, imem_copy };

/* --- coverage ---------------------------------------------------------------------------- */

static void count_left(struct interp_stats *st, const struct interp_result *r)
{
	st->left++;
	st->reasons[r->leave]++;
	if (r->leave < INTERP_LEAVE_OPCODE && r->leave != INTERP_LEAVE_FETCH)
		return;
	u32 key = interp_opkey(r) | (u32)r->leave << 24;
	u32 h = (key * 0x9e3779b1u) >> (32 - INTERP_TOP_BITS), min = h;
	for (u32 i = 0; i < 4; i++) {	/* four probes, else the smallest of them is replaced */
		u32 j = (h + i) % INTERP_TOP;
		if (st->top[j].key == key || !st->top[j].count) {
			st->top[j].key = key;
			st->top[j].count++;
			return;
		}
		if (st->top[j].count < st->top[min].count)
			min = j;
	}
	st->top[min].key = key;
	st->top[min].count = 1;
}

/* The indexes of the n most often left (at most n; fewer when fewer are counted), largest
 * first */
static u32 top_entries(const struct interp_stats *st, u32 *idx, u32 n)
{
	_Static_assert(INTERP_TOP <= 32, "done: one bit per entry");
	u32 got = 0, done = 0;
	while (got < n) {
		u32 best = INTERP_TOP;
		for (u32 i = 0; i < INTERP_TOP; i++)
			if (st->top[i].count && !(done & 1u << i) && (best == INTERP_TOP || st->top[i].count > st->top[best].count))
				best = i;
		if (best == INTERP_TOP)
			break;
		done |= 1u << best;
		idx[got++] = best;
	}
	return got;
}

void interp_top(const struct interp_stats *st, u64 out[2])
{
	u32 idx[2], n = top_entries(st, idx, 2);
	for (u32 k = 0; k < 2; k++)
		out[k] = k < n ? (u64)st->top[idx[k]].key << 32 | (u32)MIN(st->top[idx[k]].count, 0xffffffffull) : 0;
}

/* --- the engine ------------------------------------------------------------------------- */

/*
 * Whether the instructions at RIP may be interpreted at this entry, exactly: nothing the
 * processor would do between or during them that the interpreter does not do. Not while an
 * event goes in at this entry or an STI/MOV SS shadow holds (irq_blocked with IF taken as set:
 * what is left is the shadow or an event); not with the guest's TF or BTF (their traps), an
 * enabled breakpoint in its DR7 (instruction and data breakpoints would not hit), BTINT (the
 * threshold's PMI would come late), a PMU counter the engine counts for (the reference engine
 * runs then anyway), the recorder waiting for its start address; only in 64-bit mode with
 * IA-32e paging, without CET or supervisor protection keys (CR4.PKS; with CR4.PKE the page walk
 * leaves data accesses to user-mode pages, whose key PKRU checks).
 */
static enum interp_decline interp_declines(struct vcpu *v, const struct pgwalk_ctl *c)
{
	struct trace_vcpu *t = v->trace;
	u64 base;
	if (gmem_code_mode(v, &base) != DEC_MODE_64 || (c->cr4 & (CR4_CET | CR4_PKS)))
		return INTERP_DECLINE_MODE;
	if ((v->rflags & RFLAGS_TF) || t->guest_tf || (t->ds.debugctl & (DEBUGCTL_BTF | DEBUGCTL_BTINT)) ||
	    (guest_dr_read(v, 7) & 0xff))
		return INTERP_DECLINE_DEBUG;
	if ((pmu_needs_engine(&t->pmu) && !t->interp_counting) || rec_trigger_addr())
		return INTERP_DECLINE_ENGINE;
	if (hv.ops->event_pending && hv.ops->event_pending(v))
		return INTERP_DECLINE_EVENT;
	u64 fl = v->rflags;
	v->rflags |= RFLAGS_IF;
	bool blocked = hv.ops->irq_blocked(v);
	v->rflags = fl;
	return blocked ? INTERP_DECLINE_SHADOW : INTERP_DECLINE_NONE;
}

static bool interp_allowed(struct vcpu *v, const struct pgwalk_ctl *c)
{
	return interp_declines(v, c) == INTERP_DECLINE_NONE;
}

/* The host debugger's breakpoint at `lin` (trace/dbg.c, struct dbg_bps): the burst ends
 * before that instruction, where the engine's check holds the vCPU (dbg_trace_bp). A load and
 * a test while the debugger has none. */
static inline __attribute__((always_inline)) bool interp_dbg_bp(const struct trace_vcpu *t, u64 lin)
{
	return __builtin_expect(t->dbg_bps.filter != 0, 0) && dbg_bp_listed(&t->dbg_bps, lin);
}

/* A held external interrupt the pacing lets go now (dispatch/irq.c would inject it at the
 * next entry): the burst ends before the next instruction, as the processor would take it. */
static bool irq_due(struct vcpu *v)
{
	for (int w = 0; w < 4; w++)
		if (v->irq_held[w])
			return (v->rflags & RFLAGS_IF) && pace_due(&v->trace->pace, v->trace->branches);
	return false;
}

_Static_assert(SEG_ES == 0 && SEG_CS == 1 && SEG_SS == 2 && SEG_DS == 3 && SEG_FS == 4 && SEG_GS == 5,
	       "interp_cpu.sel[] in the order of ModRM.reg's Sreg encoding (SDM Vol. 2A 3.1.1.3)");

/* Whether this processor (the same on every one) has PREFETCHW, asked once: CPUID.80000001H:
 * ECX.PREFETCHW[8] (SDM Vol. 2B PREFETCHW); on AMD also with long mode or 3DNow! (APM Vol. 3
 * PREFETCHW: "supported if" any of the three; every AMD64 processor has it, and Linux uses it
 * there whatever bit 8 says) */
static bool cpu_prefetchw(void)
{
	static u8 known;	/* bit 0: asked, bit 1: the answer (a race writes the same) */
	u8 k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!k) {
		struct cpuid_regs l0, r;
		cpuid_count(0, 0, &l0);
		cpuid_count(0x80000001u, 0, &r);
		bool has = (r.ecx & CPUID_80000001_ECX_PREFETCHW) ||
			   (cpuid_l0_amd(&l0) && (r.edx & (CPUID_80000001_EDX_LM | CPUID_80000001_EDX_3DNOW)));
		k = 1 | (has ? 2 : 0);
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k & 2;
}

/* The core's register file from the vCPU's */
static void cpu_load(struct vcpu *v, const struct pgwalk_ctl *ctl, struct interp_cpu *c)
{
	struct hv_segment seg;
	for (u32 s = SEG_ES; s <= SEG_GS; s++) {
		hv.ops->get_seg(v, (enum hv_seg)s, &seg);
		c->sel[s] = seg.sel;
		if (s == SEG_FS)
			c->fs_base = seg.base;
		else if (s == SEG_GS)
			c->gs_base = seg.base;
	}
	for (u32 i = 0; i < INTERP_NGPR; i++)
		c->gpr[i] = ((volatile u64 *)v->gpr)[i];
	c->rip = v->rip;
	c->rflags = v->rflags;
	c->mode = DEC_MODE_64;
	c->cpl = ctl->cpl;
	c->cr0_am = ctl->cr0 & CR0_AM;
	c->cet = false;	/* interp_allowed: CR4.CET is clear */
	c->la57 = ctl->cr4 & CR4_LA57;	/* IA-32e paging (interp_allowed): 5 levels with LA57 */
	c->shadow_ok = false;	/* interp_run's loop holds an STI's shadow */
	c->prefetchw = cpu_prefetchw();
	/* an NMI the hypervisor delivered (every one under SVM, while tracing under VMX:
	 * trace/nmi.c) and the processor's own blocking (VMX's interruptibility state): the
	 * IRET that ends either is the processor's. Verify mode's reference step of an IRET
	 * pops the engine's TF: left there too */
	c->iret_ok = !v->trace->nmi_blocked && !v->trace->nmi_pending && !hv.boot.interp_verify &&
		     !(hv.ops->guest_nmi_blocked && hv.ops->guest_nmi_blocked(v));
}

/* The interpreted state becomes the vCPU's (each committed instruction's state is whole); a
 * word at a time: 16 stores, where memcpy's REP MOVSB is 128 steps under TCG */
static void sync_back(struct vcpu *v, const struct interp_cpu *c)
{
	for (u32 i = 0; i < INTERP_NGPR; i++)
		((volatile u64 *)v->gpr)[i] = c->gpr[i];
	v->rip = c->rip;
	v->rflags = c->rflags;
}

/* An INVLPG the burst executed (interp_result.invlpg): the processor's translations dropped
 * before the guest runs again (all of them: more than INVLPG's page, which a TLB may always
 * lose), the burst's own now (its kept walks and the DS area's pins), and a new decode-cache
 * epoch: INVLPG serializes (SDM Vol. 3 9.3), so code another processor wrote is seen from the
 * next instruction on, each entry's bytes fetched again through a fresh walk */
static void interp_invlpg(struct vcpu *v, struct imem *m)
{
	if (hv.ops->flush_guest_tlb)
		hv.ops->flush_guest_tlb(v);
	memset(m->itlb, 0, sizeof(m->itlb));
	memset(m->dtlb, 0, sizeof(m->dtlb));
	ds_burst_end(v);
	ds_burst_begin(v);
	interp_dcache_epoch(&v->trace->dcache);
	v->trace->interp.invlpgs++;
}

void interp_run(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct imem m = { .v = v, .refused = 0, .watch = t->dbg_bps.wn != 0 };	/* every TLB entry invalid */
	gmem_walk_ctl(v, &m.ctl);
	enum interp_decline why = interp_declines(v, &m.ctl);
	if (why != INTERP_DECLINE_NONE) {
		t->interp.declined++;
		t->interp.declines[why]++;
		return;
	}
	u32 was = prof_switch(v, HVTRACE_PROF_DECODE);
	struct interp_cpu c;
	cpu_load(v, &m.ctl, &c);
	bool tracing = rec_tracing();
	bool counting = t->interp_counting;
	c.shadow_ok = !counting;	/* a counted STI is not put back */
	c.rep_parts = !counting;	/* nor a REP STOS counted in parts */
	u64 t0 = rdtsc(), limit = hv.boot.tsc_hz ? hv.boot.tsc_hz / 1000000 * INTERP_BUDGET_US : 200000;
	u32 n = 0;
	struct { bool known; u8 kind; u32 type; } kinds[16] = { { false, 0, 0 } };
	_Static_assert(DEC_BR_RET < 16 && DEC_BR_IRET < 16, "the transfers the core executes");
	t->interp.runs++;
	interp_dcache_epoch(&t->dcache);	/* every entry checked again once in this burst */
	ds_burst_begin(v);
	/* an STI that set IF (interp_result.shadow): interrupts stay blocked until the next
	 * instruction completes, so the burst does not end between them; if that one is left,
	 * the STI (which changed IF and RIP alone) is put back and the processor runs both */
	bool in_shadow = false;
	u64 sti_at = 0, sti_flags = 0;
	/* the APIC has an interrupt the guest takes at this boundary (IF set): no burst */
	if ((c.rflags & RFLAGS_IF) && lapic_irq_pending())
		t->interp.irq_ends++;
	else for (;;) {
		struct interp_result r;
		u64 at = c.rip;	/* its linear address: 64-bit code, CS's base is 0 */
		u64 fl0 = c.rflags;
		if (interp_dbg_bp(t, at)) {
			if (in_shadow) {	/* the STI put back, as where an instruction is left */
				c.rip = sti_at;
				c.rflags = sti_flags;
				n--;
			}
			break;
		}
		struct interp_dcache_entry *e = dcache_hit(&m, c.rip);
		m.whits = 0;
		/* a hit was fetched at a canonical RIP; interp_allowed saw 64-bit code and TF clear,
		 * which no interpreted instruction changes */
		if (e ? interp_exec_next(&c, &imem_ops, &m, e->bytes, &e->in, &e->pre, &r) : interp_step(&c, &imem_ops, &m, &r)) {
			count_left(&t->interp, &r);
			if (r.leave == INTERP_LEAVE_MEMORY)
				t->interp.refused[m.refused < PGWALK_NSTATUS ? m.refused : 0]++;
			if (in_shadow) {
				c.rip = sti_at;
				c.rflags = sti_flags;
				n--;
			}
			break;
		}
		n++;
		if (__builtin_expect(r.invlpg, 0))
			interp_invlpg(v, &m);
		/* IF set: an interrupt pending at the processor (the hypervisor does not see those
		 * the guest's IF holds back) comes after this instruction (POPF), or after the
		 * next (STI): the burst ends there, and the processor takes it at that boundary */
		bool opened = false;
		if (__builtin_expect(in_shadow || (c.rflags & ~fl0 & RFLAGS_IF), 0)) {
			opened = in_shadow || !r.shadow;
			in_shadow = r.shadow;
			if (r.shadow) {
				sti_at = at;
				sti_flags = fl0;
			}
		}
		u8 kind = 0;
		u32 type = 0;
		if (r.branch != DEC_BR_NONE) {
			/* as the reference engine's step_complete_one: near transfers only here
			 * (DEC_BR_JCC ... DEC_BR_RET), their kinds asked once a burst */
			u32 b = (u32)r.branch < 16 ? (u32)r.branch : 0;
			if (!kinds[b].known) {
				struct dec_insn in = { .branch = r.branch };
				kinds[b].kind = rec_kind_of(&in, &kinds[b].type);
				kinds[b].known = true;
			}
			type = kinds[b].type;
			kind = kinds[b].kind;
		}
		bool wrapped = false;
		if (counting) {
			/* as the reference engine's step_count, after the instruction: the whole
			 * state is the vCPU's first (a PEBS record holds its registers). A counter
			 * that wrapped ends the burst after its record: its PMI (a self-IPI, pending
			 * in root mode) is taken before the next instruction, as after a reference
			 * step */
			sync_back(v, &c);
			u32 occ = PMU_OCC_INSN | (r.branch != DEC_BR_NONE ? pmu_branch_occ(kind, type, r.taken) : 0);
			t->interp.counted++;
			wrapped = pmu_retired(v, occ, m.ctl.cpl, at) || t->update_due;
		}
		if (r.branch != DEC_BR_NONE && r.taken) {
			/* the record's consumers look at where the vCPU is (RIP, RFLAGS.IF for the
			 * pacing), not at its other registers: those follow at the burst's end */
			v->rip = c.rip;
			v->rflags = c.rflags;
			t->interp.branches++;
			if (__builtin_expect(r.branch == DEC_BR_IRET, 0)) {
				/* as the reference engine's step of one (step_complete_one): the end of
				 * an NMI's blocking (none here: interp_cpu.iret_ok) and the pacing's
				 * handler return, which looks at the stack it returned to */
				sync_back(v, &c);
				nmi_iret_done(v);
				trace_irq_iret(v, c.rip);
			}
			trace_emit(v, r.from, r.to, m.ctl.cpl, kind, type);	/* its time: the record bucket */
			if (irq_due(v) || rec_tracing() != tracing)
				break;
		}
		if (wrapped)
			break;
		/* the host debugger's watchpoint: a trap after the instruction (SDM Vol. 3 18.2.5),
		 * the vCPU held there (trace_before_entry, dbg_trace_watch) */
		if (__builtin_expect(m.whits != 0, 0)) {
			t->dbg_dr.whits |= m.whits;
			if (!in_shadow)
				break;
		}
		if (__builtin_expect(opened | in_shadow, 0)) {
			if (opened)
				break;
			continue;
		}
		if (__builtin_expect(!(n % INTERP_POLL_EVERY), 0)) {
			/* root mode runs with interrupts off: one the APIC would give the processor
			 * now comes at the entry after this burst (an exit, or the guest's IDT). With
			 * IF clear it waits in the guest as well: the burst goes on (and ends where
			 * IF opens). Asked before the budget, which under Bochs ends every burst
			 * here, so that the count says what ended it */
			if ((c.rflags & RFLAGS_IF) && lapic_irq_pending()) {
				t->interp.irq_ends++;
				break;
			}
			if (n >= INTERP_BUDGET_INSNS || rdtsc() - t0 >= limit) {
				t->interp.budget++;
				break;
			}
		}
	}
	ds_burst_end(v);
	sync_back(v, &c);
	t->interp.insns += n;
	prof_switch(v, was);
}

/* The counts so far, at LOG_INFO when the engine stops after a real run (the bench reads the
 * leave reasons here), at most once per 1024 bursts or 65536 instructions so that tests
 * toggling the guest's BTS do not flood the log. Verify mode's result: at the first stop with any instruction checked,
 * then every 1024 more (a run that checks fewer, as t_bts's on a fast day, still says). */
void interp_log(struct vcpu *v)
{
	struct interp_stats *st = &v->trace->interp;
	struct interp_verify *f = &v->trace->verify;
	if ((f->checked && !f->logged) || f->checked - f->logged >= 1024 ||
	    (f->mismatches && f->checked != f->logged)) {
		f->logged = f->checked;
		LOG_INFO("interp.verify: vcpu %u: %lu instructions checked against the processor, %lu differ", v->id,
			 f->checked, f->mismatches);
	}
	if (st->runs - st->logged_runs < 1024 && st->insns - st->logged_insns < 65536)
		return;
	st->logged_runs = st->runs;
	st->logged_insns = st->insns;
	const u64 *r = st->reasons, *w = st->refused;
	u64 top[2];
	interp_top(st, top);
	LOG_INFO("interp: vcpu %u: %lu bursts (%lu declined, %lu at the budget, %lu for an interrupt), %lu instructions, "
		 "%lu branches interpreted, %lu left, %lu counted for the PMU", v->id, st->runs, st->declined, st->budget,
		 st->irq_ends, st->insns, st->branches, st->left, st->counted);
	LOG_INFO("interp: vcpu %u declined: mode %lu debug %lu engine %lu event %lu shadow %lu; decode cache %lu hits, "
		 "%lu decodes; %lu page walks; %lu INVLPGs", v->id, st->declines[INTERP_DECLINE_MODE],
		 st->declines[INTERP_DECLINE_DEBUG], st->declines[INTERP_DECLINE_ENGINE], st->declines[INTERP_DECLINE_EVENT],
		 st->declines[INTERP_DECLINE_SHADOW], v->trace->dcache.hits, st->decodes, st->walks, st->invlpgs);
	LOG_INFO("interp: vcpu %u left: opcode %lu prefix %lu memory %lu fetch %lu mode %lu invalid %lu canonical %lu "
		 "align %lu target %lu trap %lu cet %lu", v->id, r[INTERP_LEAVE_OPCODE], r[INTERP_LEAVE_PREFIX],
		 r[INTERP_LEAVE_MEMORY], r[INTERP_LEAVE_FETCH], r[INTERP_LEAVE_MODE], r[INTERP_LEAVE_INVALID],
		 r[INTERP_LEAVE_CANONICAL], r[INTERP_LEAVE_ALIGN], r[INTERP_LEAVE_TARGET], r[INTERP_LEAVE_TRAP],
		 r[INTERP_LEAVE_CET]);
	LOG_INFO("interp: vcpu %u memory refused: not-ram %lu not-present %lu reserved %lu rights %lu a/d %lu pkey %lu mode %lu; "
		 "most left %x (%u), %x (%u)", v->id, w[PGWALK_NOT_RAM], w[PGWALK_NOT_PRESENT], w[PGWALK_RESERVED],
		 w[PGWALK_RIGHTS], w[PGWALK_AD], w[PGWALK_PKEY], w[PGWALK_MODE], HVTRACE_INTERP_TOP_KEY(top[0]),
		 HVTRACE_INTERP_TOP_COUNT(top[0]), HVTRACE_INTERP_TOP_KEY(top[1]), HVTRACE_INTERP_TOP_COUNT(top[1]));
	/* the eight most often left, largest first (key: leave << 24 | interp_opkey) */
	char line[8 * 32 + 1];	/* " %x (%lu)": at most 32 characters each */
	u32 idx[8], n = top_entries(st, idx, 8), len = 0;
	line[0] = 0;
	for (u32 k = 0; k < n && len < sizeof(line); k++)
		len += (u32)hv_snprintf(line + len, sizeof(line) - len, " %x (%lu)", st->top[idx[k]].key,
					st->top[idx[k]].count);
	LOG_INFO("interp: vcpu %u most left:%s", v->id, line);
}

/* --- verify mode (interp.verify = yes) ------------------------------------------------------
 * Every instruction the reference engine steps is first interpreted into a shadow (registers
 * copied, its one write buffered, nothing committed), then the processor runs it; at the
 * step's trap the vCPU's registers, RIP, RFLAGS (but TF and RF, the engine's) and the bytes
 * the shadow would have written must equal the shadow's. The records are the reference
 * engine's. A difference is an error in the log, which every test rejects. */

void interp_verify_prepare(struct vcpu *v)
{
	struct interp_verify *f = &v->trace->verify;
	struct imem m = { .v = v, .shadow = f };
	struct interp_result r;
	f->valid = f->wrote = false;
	interp_dcache_epoch(&v->trace->dcache);	/* the processor ran since the last step */
	gmem_walk_ctl(v, &m.ctl);
	if (!interp_allowed(v, &m.ctl))
		return;
	cpu_load(v, &m.ctl, &f->before);
	f->want = f->before;
	if (interp_step(&f->want, &imem_ops, &m, &r)) {
		count_left(&v->trace->interp, &r);
		return;
	}
	f->len = r.len;
	m.shadow = NULL;
	imem_fetch(&m, f->before.rip, f->bytes, r.len);
	struct dec_insn d;
	if (dec_decode(f->bytes, r.len, DEC_MODE_64, f->before.rip, &d) != DEC_OK)
		return;
	bool legacy = d.encoding == DEC_ENC_LEGACY && d.map == 0;
	/* STI: the step's trap may come after the next instruction too (QEMU's TCG holds it
	 * after every STI: trace/engine.c shadows_next), so the processor's state there is not
	 * this instruction's alone: not compared */
	if (legacy && d.opcode == 0xfb)
		return;
	f->flags_image = legacy && d.opcode == 0x9c;
	f->valid = true;
}

static void verify_report(struct vcpu *v, const char *what)
{
	struct interp_verify *f = &v->trace->verify;
	char hex[3 * 15 + 1];
	static const char digits[] = "0123456789abcdef";
	for (u32 i = 0; i < f->len && i < 15; i++) {
		hex[3 * i] = digits[f->bytes[i] >> 4];
		hex[3 * i + 1] = digits[f->bytes[i] & 15];
		hex[3 * i + 2] = ' ';
	}
	hex[3 * (f->len < 15 ? f->len : 15)] = 0;
	f->mismatches++;
	if (f->mismatches > 8)
		return;	/* the first ones say it */
	LOG_ERR("interp.verify: vcpu %u: %s at rip %lx: %s", v->id, what, f->before.rip, hex);
	for (u32 i = 0; i < INTERP_NGPR; i++)
		if (f->want.gpr[i] != v->gpr[i] || f->before.gpr[i] != f->want.gpr[i])
			LOG_ERR("  gpr %u: before %lx, interpreter %lx, processor %lx", i, f->before.gpr[i],
				f->want.gpr[i], v->gpr[i]);
	LOG_ERR("  rip: interpreter %lx, processor %lx; rflags: before %lx, interpreter %lx, processor %lx",
		f->want.rip, v->rip, f->before.rflags, f->want.rflags, v->rflags);
}

void interp_verify_check(struct vcpu *v)
{
	struct interp_verify *f = &v->trace->verify;
	if (!f->valid)
		return;
	f->valid = false;
	f->checked++;
	const u64 mask = ~(RFLAGS_TF | RFLAGS_RF);
	bool same = f->want.rip == v->rip && !((f->want.rflags ^ v->rflags) & mask);
	for (u32 i = 0; i < INTERP_NGPR; i++)
		same = same && f->want.gpr[i] == v->gpr[i];
	if (!same) {
		verify_report(v, "registers differ");
		return;
	}
	if (f->wrote) {
		struct imem m = { .v = v };
		u64 got = 0;
		gmem_walk_ctl(v, &m.ctl);
		u64 cmp = f->flags_image ? ~RFLAGS_TF : ~0ull;
		if (imem_read(&m, f->wlin, &got, f->wlen) != INTERP_MEM_OK || ((got ^ f->wval) & cmp)) {
			verify_report(v, "memory differs");
			LOG_ERR("  write of %u bytes at %lx: interpreter %lx, processor %lx", f->wlen, f->wlin, f->wval,
				got);
		}
	}
}

/* An exit other than the step's trap: an exception at the instruction the interpreter
 * completed is a difference (the interpreter leaves whatever would fault); anything else (an
 * interrupt before it ran) discards the shadow. */
void interp_verify_exit(struct vcpu *v, const struct hv_event *ev)
{
	struct interp_verify *f = &v->trace->verify;
	if (!f->valid || (ev->kind == HV_EV_EXCEPTION && ev->vector == X86_DB))
		return;
	if (ev->kind == HV_EV_EXCEPTION && v->rip == f->before.rip) {
		char what[48];
		hv_snprintf(what, sizeof(what), "the processor raised vector %u", ev->vector);
		verify_report(v, what);
	}
	f->valid = false;
}
