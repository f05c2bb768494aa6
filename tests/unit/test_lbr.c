/* LBR batching's pure part (hv/trace/lbr.c) over a simulated LBR stack:
 * a synthetic branch sequence runs through a simulated architectural stack
 * (entry 0 the newest) and a model-specific ring with a TOS, a counter of
 * `width` bits preset to overflow after a batch, a PMI taken `skid`
 * branches late, and other exits draining at random points. The stream the
 * drains produce must be the sequence exactly, or carry a gap exactly where
 * the stack lost branches, and never a duplicate. Also: the counter
 * arithmetic, the branch types, the CPL of a batch, the records a batch
 * makes (over simulated code: real encodings through the decoder), the
 * PMI's bits, when the engine falls back, the capability. */
#include <string.h>
#include "unit.h"
#include "hvtrace/record.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "base/gmem.h"
#include "base/vcpu.h"
#include "trace/lbr.h"

/* trace/branch.c's guest accesses (unused here: only rec_kind_of is) */
struct hv hv;
size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	(void)v, (void)gva, (void)buf, (void)len;
	return 0;
}

#define SEQ_MAX 20000

/* --- the simulated hardware ---------------------------------------------- */

struct sim {
	u32 depth, width, batch;
	struct lbr_entry stack[LBR_DEPTH_MAX];	/* architectural: [0] newest */
	struct lbr_entry ring[LBR_DEPTH_MAX];	/* model-specific: [tos] newest */
	u32 tos;
	bool use_ring;		/* the drain reads the ring through lbr_ring_order */
	u64 counter, preset;
	int pmi_in;		/* branches until the PMI is taken; -1: none due */
	u32 skid;		/* how late each PMI comes */
	u32 uncounted_every;	/* every Nth branch is recorded but not counted (0: none) */
	u64 made;		/* branches made */
};

static void sim_init(struct sim *s, u32 depth, u32 width, u32 skid)
{
	memset(s, 0, sizeof(*s));
	s->depth = depth;
	s->width = width;
	s->skid = skid;
	s->batch = lbr_batch_len(depth);
	s->preset = s->counter = lbr_counter_preset(width, s->batch);
	s->pmi_in = -1;
}

static u64 mask_of(u32 width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

/* the CPU retires one recorded branch */
static void sim_branch(struct sim *s, const struct lbr_entry *e)
{
	memmove(&s->stack[1], &s->stack[0], (s->depth - 1) * sizeof(s->stack[0]));
	s->stack[0] = *e;
	s->tos = (s->tos + 1) % s->depth;
	s->ring[s->tos] = *e;
	s->made++;
	if (s->uncounted_every && s->made % s->uncounted_every == 0)
		return;
	s->counter = (s->counter + 1) & mask_of(s->width);
	if (s->counter == 0 && s->pmi_in < 0)	/* overflow: the PMI, `skid` branches on */
		s->pmi_in = (int)s->skid;
}

/* the MSR reads: `len` newest entries, newest first */
static void sim_read(const struct sim *s, struct lbr_entry *out, u32 len)
{
	struct lbr_entry all[LBR_DEPTH_MAX];
	if (s->use_ring) {
		lbr_ring_order(s->ring, s->depth, s->tos, all);
		CHECK(!memcmp(all, s->stack, s->depth * sizeof(all[0])), "ring order = stack (tos %u)",
		      s->tos);
	} else {
		memcpy(all, s->stack, sizeof(all));
	}
	memcpy(out, all, len * sizeof(out[0]));
}

/* --- the stream and its check ---------------------------------------------- */

struct out {
	u64 records, gaps, unknown_gaps, drains;
	const struct lbr_entry *seq;	/* the truth */
	u64 emitted_to;			/* seq[0, emitted_to) is behind the stream */
	u64 gap_known;			/* gaps marked since the last entry emitted: */
	bool gap_unknown;		/* ... their sizes, or one of unknown size */
	bool silent_ok;			/* miscounted repeats: losses may go unmarked */
	u64 silent;			/* ... how many did */
	bool bad;
};

/* One drain, as the hypervisor's exit path does it, checked against the
 * truth. The entries a drain emits are the `count` newest branches, so
 * they are seq[now - count, now): no duplicate when that starts at or
 * after the end of what the stream holds already; whatever lies between
 * must be covered by a gap marked since, of exactly that size when known. */
static void account(struct out *o, u64 now, const struct lbr_entry *snap, struct lbr_batch b)
{
	o->drains++;
	if (b.gap) {
		o->gaps++;
		if (b.lost == LBR_LOST_UNKNOWN)
			o->unknown_gaps++, o->gap_unknown = true;
		else
			o->gap_known += b.lost;
	}
	if (b.count) {
		u64 start = now - b.count;
		if (start < o->emitted_to) {
			o->bad = true;
			CHECK(0, "drain %llu: %llu duplicated", (unsigned long long)o->drains,
			      (unsigned long long)(o->emitted_to - start));
		}
		for (u32 i = 0; i < b.count; i++)
			if (memcmp(&o->seq[start + i], &snap[b.count - 1 - i], sizeof(snap[0]))) {
				o->bad = true;
				CHECK(0, "drain %llu: record %u differs", (unsigned long long)o->drains, i);
			}
		u64 skipped = start > o->emitted_to ? start - o->emitted_to : 0;
		bool marked = o->gap_unknown || o->gap_known == skipped;
		if (!o->gap_unknown && o->gap_known != skipped && !(o->silent_ok && o->gap_known < skipped)) {
			o->bad = true;
			CHECK(0, "drain %llu: %llu lost, gaps of %llu marked", (unsigned long long)o->drains,
			      (unsigned long long)skipped, (unsigned long long)o->gap_known);
		}
		if (!marked)
			o->silent += skipped - o->gap_known;
		o->emitted_to = now;
		o->gap_known = 0;
		o->gap_unknown = false;
	}
	o->records += b.count;
}

static void drain(struct sim *s, struct lbr_track *t, struct out *o)
{
	struct lbr_entry snap[LBR_DEPTH_MAX];
	struct lbr_batch b;
	u64 n = lbr_counter_delta(s->width, s->preset, s->counter);
	u32 len = lbr_read_len(t, n);
	sim_read(s, snap, len);
	lbr_drain(t, n, snap, len, &b);
	if (b.resync) {
		sim_read(s, snap, s->depth);
		lbr_resync(t, snap, s->depth, &b);
	}
	account(o, s->made, snap, b);
	/* re-armed */
	s->preset = s->counter = lbr_counter_preset(s->width, s->batch);
	s->pmi_in = -1;
}

/* Runs seq[0, len) with other exits draining with probability 1/exit_odds
 * (0: never) after a branch; returns the stream's figures. */
static struct out run(struct sim *s, const struct lbr_entry *seq, u32 len, u32 exit_odds,
		      bool silent_ok)
{
	struct lbr_track t;
	struct out o = { .seq = seq, .silent_ok = silent_ok };
	lbr_track_reset(&t, s->depth);
	for (u32 i = 0; i < len; i++) {
		sim_branch(s, &seq[i]);
		if (s->pmi_in == 0 || (s->pmi_in < 0 && exit_odds && unit_rand() % exit_odds == 0))
			drain(s, &t, &o);
		else if (s->pmi_in > 0)
			s->pmi_in--;
	}
	drain(s, &t, &o);	/* the last exit */
	CHECK(o.emitted_to == s->made || o.gap_unknown || o.gap_known == s->made - o.emitted_to ||
		      o.silent_ok,
	      "the tail: %llu of %llu", (unsigned long long)o.emitted_to, (unsigned long long)s->made);
	CHECK(t.emitted == o.records, "emitted %llu", (unsigned long long)t.emitted);
	return o;
}

static struct lbr_entry seq[SEQ_MAX];

/* from/to drawn from `kinds` distinct pairs (few: many repeats), info 0 */
static void seq_random(u32 len, u32 kinds)
{
	for (u32 i = 0; i < len; i++) {
		u64 k = unit_rand() % kinds;
		seq[i] = (struct lbr_entry){ 0x1000 + 16 * k, 0x2000 + 8 * (k % 3), 0 };
	}
}

static const u32 depths[] = { 8, 16, 32 };

static void exact_streams(void)
{
	/* skid within the batch's margin, random other exits, repeated
	 * entries: the stream is the sequence exactly, no gap */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++)
		for (u32 kinds = 1; kinds <= 5; kinds += 2)
			for (u32 skid = 0; skid <= depths[d] / 4; skid++)
				for (int ring = 0; ring < 2; ring++) {
					struct sim s;
					sim_init(&s, depths[d], 48, skid);
					s.use_ring = ring;
					seq_random(3000, kinds);
					struct out o = run(&s, seq, 3000, 7, false);
					CHECK(!o.bad && o.records == 3000 && !o.gaps,
					      "depth %u kinds %u skid %u ring %d: %llu records, %llu gaps",
					      depths[d], kinds, skid, ring, (unsigned long long)o.records,
					      (unsigned long long)o.gaps);
				}
}

static void loop_to_itself(void)
{
	/* JMP $: every entry alike; only the count can say how many */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++) {
		struct sim s;
		sim_init(&s, depths[d], 48, 1);
		for (u32 i = 0; i < 5000; i++)
			seq[i] = (struct lbr_entry){ 0x401000, 0x401000, 0 };
		struct out o = run(&s, seq, 5000, 3, false);
		CHECK(!o.bad && o.records == 5000 && !o.gaps, "loop, depth %u: %llu records", depths[d],
		      (unsigned long long)o.records);
	}
}

static void exact_depth_and_skid(void)
{
	/* drains after exactly depth - 1, depth, depth + 1... branches: the
	 * stack holds them all up to depth, past it a gap of exactly the rest */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++)
		for (u32 extra = 0; extra <= 5; extra++) {
			u32 depth = depths[d];
			struct sim s;
			sim_init(&s, depth, 48, 0);
			s.batch = depth - 1;	/* the PMI comes `skid` after depth - 1 */
			s.skid = extra;
			s.preset = s.counter = lbr_counter_preset(48, s.batch);
			for (u32 i = 0; i < 4000; i++)
				seq[i] = (struct lbr_entry){ 0x5000 + i, 0x6000 + i % 7, i & 0xffff };
			struct out o = run(&s, seq, 4000, 0, false);
			u64 per = depth - 1 + extra, full = 4000 / per, rest = 4000 % per;
			u64 gaps = (extra >= 2 ? full : 0) + (rest > depth);
			u64 lost = (extra >= 2 ? (extra - 1) * full : 0) + (rest > depth ? rest - depth : 0);
			CHECK(!o.bad && o.records + lost == 4000 && o.gaps == gaps && !o.unknown_gaps,
			      "depth %u, %u past depth-1: %llu records %llu gaps (%llu drains)", depth, extra,
			      (unsigned long long)o.records, (unsigned long long)o.gaps,
			      (unsigned long long)o.drains);
		}
	/* random skid of 1..k past the margin, repeated entries: every loss
	 * is a gap of the exact size */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++)
		for (u32 k = 1; k <= 12; k++) {
			struct sim s;
			sim_init(&s, depths[d], 48, depths[d] - lbr_batch_len(depths[d]) + k);
			seq_random(3000, 2);
			struct out o = run(&s, seq, 3000, 0, false);
			CHECK(!o.bad && o.gaps && !o.unknown_gaps, "depth %u skid +%u: %llu gaps", depths[d], k,
			      (unsigned long long)o.gaps);
		}
}

static void hand_made(void)
{
	struct sim s;
	struct lbr_track t;
	struct lbr_entry snap[LBR_DEPTH_MAX];
	struct lbr_batch b;
	const struct lbr_entry a = { 0x10, 0x20, 0 }, c = { 0x30, 0x40, 0 };

	/* A C A C A after a drain that saw A: count 4 -> C A C A */
	sim_init(&s, 8, 48, 0);
	lbr_track_reset(&t, 8);
	sim_branch(&s, &a);
	sim_read(&s, snap, lbr_read_len(&t, 1));
	lbr_drain(&t, 1, snap, lbr_read_len(&t, 1), &b);
	CHECK(b.count == 1 && !b.gap && !b.resync && t.last.from == 0x10, "first drain: %u", b.count);
	sim_branch(&s, &c);
	sim_branch(&s, &a);
	sim_branch(&s, &c);
	sim_branch(&s, &a);
	CHECK(lbr_read_len(&t, 4) == 5 && lbr_read_len(&t, 0) == 1 && lbr_read_len(&t, 9) == 8,
	      "read lengths");
	sim_read(&s, snap, 5);
	lbr_drain(&t, 4, snap, 5, &b);
	CHECK(b.count == 4 && !b.gap && !b.resync, "four: %u", b.count);
	/* the count is one short: the anchor (C) is not the last emitted (A) */
	sim_branch(&s, &c);
	sim_branch(&s, &a);
	sim_read(&s, snap, 2);
	lbr_drain(&t, 1, snap, 2, &b);
	CHECK(b.resync && !b.count && t.mismatches == 1, "miscount found");
	sim_read(&s, snap, 8);
	lbr_resync(&t, snap, 8, &b);
	/* A is newest: its nearest occurrence is 0, nothing emitted, a gap
	 * (C and A were lost, and marked) */
	CHECK(b.count == 0 && b.gap && b.lost == LBR_LOST_UNKNOWN, "resync: %u", b.count);
	/* a read too short for n is a mismatch, not a guess */
	lbr_drain(&t, 3, snap, 2, &b);
	CHECK(b.resync, "short read");

	/* the stack cleared (deep C-state) between drains: the anchor is gone;
	 * the entries after the clear are emitted after a gap */
	sim_init(&s, 8, 48, 0);
	lbr_track_reset(&t, 8);
	sim_branch(&s, &a);
	sim_read(&s, snap, 2);
	lbr_drain(&t, 1, snap, 2, &b);
	CHECK(b.count == 1 && !b.resync, "before the clear");
	memset(s.stack, 0, sizeof(s.stack));
	sim_branch(&s, &c);
	sim_branch(&s, &c);
	sim_read(&s, snap, 3);
	lbr_drain(&t, 2, snap, 3, &b);
	CHECK(b.resync, "clear seen");
	sim_read(&s, snap, 8);
	lbr_resync(&t, snap, 8, &b);
	CHECK(b.count == 2 && b.gap && b.lost == LBR_LOST_UNKNOWN, "after the clear: %u", b.count);

	/* from a cleared stack (tracking starts at IA32_LBR_DEPTH's write) a
	 * miscount resyncs exactly: the first empty entry is the boundary */
	sim_init(&s, 8, 48, 0);
	lbr_track_reset(&t, 8);
	sim_branch(&s, &a);
	sim_branch(&s, &c);
	sim_branch(&s, &a);
	sim_read(&s, snap, 3);
	lbr_drain(&t, 2, snap, 3, &b);
	CHECK(b.resync, "3 made, 2 counted");
	sim_read(&s, snap, 8);
	lbr_resync(&t, snap, 8, &b);
	CHECK(b.count == 3 && !b.gap, "exact from a clear: %u gap %d", b.count, b.gap);
	/* over-counted on a cleared stack: entry n is empty like the anchor,
	 * but an empty entry among the n newest is no branch */
	sim_init(&s, 8, 48, 0);
	lbr_track_reset(&t, 8);
	sim_branch(&s, &a);
	sim_branch(&s, &c);
	sim_read(&s, snap, 4);
	lbr_drain(&t, 3, snap, 4, &b);
	CHECK(b.resync && !b.count, "3 counted, 2 made");
	sim_read(&s, snap, 8);
	lbr_resync(&t, snap, 8, &b);
	CHECK(b.count == 2 && !b.gap, "the 2 made, exactly: %u", b.count);
	/* n = 0: the newest entry is still the anchor */
	sim_read(&s, snap, 1);
	lbr_drain(&t, 0, snap, 1, &b);
	CHECK(!b.count && !b.gap && !b.resync, "nothing new");
	/* ... or the LBR recorded one the counters did not count (one unlike
	 * the newest: a repeat of it is the check's blind spot) */
	CHECK(t.last.from == c.from, "anchor C");
	sim_branch(&s, &a);
	sim_read(&s, snap, 1);
	lbr_drain(&t, 0, snap, 1, &b);
	CHECK(b.resync, "uncounted, n = 0");
}

static void miscounts(void)
{
	/* the LBR records a branch the counters missed, every 37th: distinct
	 * entries, so the check always finds it; the stream never
	 * duplicates and marks a gap at each */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++) {
		struct sim s;
		sim_init(&s, depths[d], 48, 1);
		s.uncounted_every = 37;
		for (u32 i = 0; i < 5000; i++)
			seq[i] = (struct lbr_entry){ 0x7000 + i, 0x8000 + i, 0 };
		struct out o = run(&s, seq, 5000, 5, false);
		CHECK(!o.bad && o.unknown_gaps > 0 && o.records > 4000, "depth %u: %llu records, %llu gaps",
		      depths[d], (unsigned long long)o.records, (unsigned long long)o.unknown_gaps);
	}
	/* the same with few distinct entries: whatever the check catches or
	 * not, never a duplicate (o.bad) */
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++) {
		struct sim s;
		sim_init(&s, depths[d], 48, 2);
		s.uncounted_every = 11;
		seq_random(5000, 3);
		struct out o = run(&s, seq, 5000, 5, true);
		CHECK(!o.bad, "depth %u, few kinds, miscounted: %llu lost unmarked", depths[d],
		      (unsigned long long)o.silent);
		printf("test_lbr: miscounted repeats, depth %u: %llu of 5000 lost unmarked, %llu gaps\n",
		       depths[d], (unsigned long long)o.silent, (unsigned long long)o.gaps);
	}
}

static void counter(void)
{
	const u32 widths[] = { 32, 40, 48, 64 };
	for (u32 w = 0; w < ARRAY_SIZE(widths); w++)
		for (u32 k = 1; k <= 64; k++) {
			u32 width = widths[w];
			u64 m = mask_of(width), p = lbr_counter_preset(width, k), c = p;
			u32 steps = 0;
			do {
				c = (c + 1) & m;
				steps++;
			} while (c && steps < 100);
			CHECK(steps == k, "width %u k %u: wraps after %u", width, k, steps);
			CHECK(lbr_counter_delta(width, p, p) == 0, "delta 0");
			for (u32 skid = 0; skid < 40; skid++)
				CHECK(lbr_counter_delta(width, p, (p + k + skid) & m) == k + skid,
				      "width %u k %u skid %u", width, k, skid);
			/* IA32_PMCx takes bits 31:0 and sign-extends bit 31 to the
			 * counter's width (SDM Vol. 3 20.2.6): the same preset */
			u64 legacy = (u64)(s64)(s32)(u32)p & m;
			CHECK(legacy == p, "width %u k %u: legacy write %llx", width, k,
			      (unsigned long long)legacy);
		}
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++) {
		u32 k = lbr_batch_len(depths[d]);
		CHECK(k <= depths[d] - depths[d] / 4 && k >= depths[d] / 2, "batch %u of %u", k, depths[d]);
	}
	CHECK(lbr_batch_len(32) == 24 && lbr_batch_len(64) == 48 && lbr_batch_len(16) == 12, "batches");
}

static void types_and_cpl(void)
{
	static const struct { u32 lbr, rec; } types[] = {
		{ LBR_BR_TYPE_JCC, HVTRACE_BR_JCC },
		{ LBR_BR_TYPE_NEAR_IND_JMP, HVTRACE_BR_JMP_IND },
		{ LBR_BR_TYPE_NEAR_REL_JMP, HVTRACE_BR_JMP },
		{ LBR_BR_TYPE_NEAR_IND_CALL, HVTRACE_BR_CALL_IND },
		{ LBR_BR_TYPE_NEAR_REL_CALL, HVTRACE_BR_CALL },
		{ LBR_BR_TYPE_NEAR_RET, HVTRACE_BR_RET },
	};
	for (u32 i = 0; i < ARRAY_SIZE(types); i++) {
		u64 info = ((u64)types[i].lbr << 56) | LBR_INFO_MISPRED | LBR_INFO_CYC_CNT_VALID | 0x1234;
		CHECK(lbr_br_type(info) == types[i].rec && !lbr_is_other(info), "type %u", types[i].lbr);
	}
	for (u32 ty = 6; ty < 16; ty++)
		CHECK(lbr_br_type((u64)ty << 56) == 0 && lbr_is_other((u64)ty << 56), "other %u", ty);
	CHECK(LBR_INFO_CYC_CNT(0x1234 | LBR_INFO_CYC_CNT_VALID) == 0x1234, "cycles");

	/* snap newest first; emitted oldest first */
	const u64 near = (u64)LBR_BR_TYPE_JCC << 56, far = 8ull << 56;
	struct lbr_entry snap[6];
	u8 cpl[6];
	for (u32 i = 0; i < 6; i++)
		snap[i] = (struct lbr_entry){ 1 + i, 2 + i, near };
	CHECK(lbr_batch_cpl(snap, 6, 3, 3, cpl) == 0 && cpl[0] == 3 && cpl[5] == 3, "no far");
	snap[3].info = far;	/* emitted third: SYSCALL from ring 3 */
	CHECK(lbr_batch_cpl(snap, 6, 3, 0, cpl) == 0, "one far exact");
	CHECK(cpl[0] == 3 && cpl[1] == 3 && cpl[2] == 3 && cpl[3] == 0 && cpl[5] == 0,
	      "cpl %u %u %u %u", cpl[0], cpl[2], cpl[3], cpl[5]);
	snap[1].info = far;	/* emitted fifth: a second far; the fourth is between */
	CHECK(lbr_batch_cpl(snap, 6, 3, 3, cpl) == 2, "two far: the span between is a guess");
	CHECK(cpl[2] == 3 && cpl[5] == 3, "ends exact");
}

/* --- the records of a batch, over simulated code ---------------------------- */

/* The guest's code: real encodings at linear addresses CODE_BASE.. */
#define CODE_BASE 0x400000ull
static u8 code[0x100];
static u32 decodes;

static int sim_decode(void *ctx, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes, struct dec_insn *in)
{
	u64 cs_base = *(const u64 *)ctx;
	decodes++;
	CHECK(lin == rip + cs_base, "decode at lin %llx rip %llx base %llx", (unsigned long long)lin,
	      (unsigned long long)rip, (unsigned long long)cs_base);
	if (lin < CODE_BASE || lin - CODE_BASE > sizeof(code) - 15)
		return DEC_TRUNCATED;
	memcpy(bytes, code + (lin - CODE_BASE), 15);
	return dec_decode(bytes, 15, mode, rip, in);
}

static void put(u32 off, const u8 *b, u32 n)
{
	memcpy(code + off, b, n);
}

static u64 info_of(u32 type)
{
	return ((u64)type << 56) | LBR_INFO_CYC_CNT_VALID | 7;
}

static void batch_records(void)
{
	/* the code: each instruction at its own offset (INTO is #UD in 64-bit
	 * mode: decoded in 32-bit code below) */
	static const u8 jz[] = { 0x74, 0x10 }, loop[] = { 0xe2, 0xfe }, jrcxz[] = { 0xe3, 0x05 },
			int80[] = { 0xcd, 0x80 }, int3[] = { 0xcc }, into[] = { 0xce }, int1[] = { 0xf1 },
			syscall[] = { 0x0f, 0x05 }, iretq[] = { 0x48, 0xcf }, retf[] = { 0xcb },
			sysret[] = { 0x48, 0x0f, 0x07 }, mov[] = { 0x89, 0xc8 }, call[] = { 0xe8, 0, 0, 0, 0 };
	memset(code, 0x90, sizeof(code));
	put(0x00, jz, 2), put(0x10, loop, 2), put(0x20, jrcxz, 2), put(0x30, int80, 2);
	put(0x40, int3, 1), put(0x48, into, 1), put(0x50, int1, 1), put(0x60, syscall, 2);
	put(0x70, iretq, 2), put(0x80, retf, 1), put(0x90, sysret, 3), put(0xa0, mov, 2);
	put(0xb0, call, 5);
	const u64 c = CODE_BASE;
	/* oldest first as the program ran; snap is newest first */
	const struct { u64 from, to; u32 type; u8 kind; u32 aux; } prog[] = {
		{ c + 0x00, c + 0x12, LBR_BR_TYPE_JCC, HVTRACE_REC_BRANCH, HVTRACE_BR_JCC },
		{ c + 0x10, c + 0x10, LBR_BR_TYPE_JCC, HVTRACE_REC_BRANCH, HVTRACE_BR_LOOP },
		{ c + 0x20, c + 0x27, LBR_BR_TYPE_JCC, HVTRACE_REC_BRANCH, HVTRACE_BR_LOOP },
		{ c + 0xb0, c + 0xb5, LBR_BR_TYPE_NEAR_REL_CALL, HVTRACE_REC_BRANCH, HVTRACE_BR_CALL },
		{ c + 0x30, 0xffff1000, 8, HVTRACE_REC_EXCEPTION, 0x80 | HVTRACE_AUX_SOFT },
		{ c + 0xa0, 0xffff2000, 9, 0, 0 },	/* an event's delivery: no record */
		{ c + 0x40, 0xffff3000, 10, HVTRACE_REC_EXCEPTION, X86_BP | HVTRACE_AUX_SOFT },
		{ c + 0x50, 0xffff3000, 10, HVTRACE_REC_EXCEPTION, X86_DB | HVTRACE_AUX_SOFT },
		{ c + 0x70, c + 0x31, 11, HVTRACE_REC_FAR, HVTRACE_BR_IRET },
		{ c + 0x80, c + 0x90, 12, HVTRACE_REC_FAR, HVTRACE_BR_FAR_RET },
		{ c + 0x90, c + 0xb0, 13, HVTRACE_REC_FAR, HVTRACE_BR_SYSRET },
		{ 0x1000, 0x2000, LBR_BR_TYPE_NEAR_RET, HVTRACE_REC_BRANCH, HVTRACE_BR_RET },
		{ c + 0x60, 0xffff4000, 14, HVTRACE_REC_FAR, HVTRACE_BR_SYSCALL },
	};
	const u32 n = ARRAY_SIZE(prog);
	struct lbr_entry snap[LBR_DEPTH_MAX];
	for (u32 i = 0; i < n; i++)
		snap[n - 1 - i] = (struct lbr_entry){ prog[i].from, prog[i].to, info_of(prog[i].type) };
	const struct lbr_state start = { 3, DEC_MODE_64, 0 }, end = { 0, DEC_MODE_64, 0 };
	u64 base = 0;
	struct lbr_batch b = { .count = n };
	struct lbr_rec out[LBR_RECS_MAX];
	struct lbr_rec_stats st;
	decodes = 0;
	u32 got = lbr_batch_records(snap, &b, true, &start, &end, sim_decode, &base, out, &st);
	CHECK(got == n - 1 && st.skipped == 1 && !st.undecoded, "records %u skipped %u", got, st.skipped);
	/* decoded: the Jcc-typed entries and the "other" ones, not the rest */
	CHECK(decodes == n - 2, "%u decodes", decodes);
	for (u32 i = 0, k = 0; i < n && k < got; i++) {
		if (!prog[i].kind)
			continue;
		const struct lbr_rec *r = &out[k++];
		CHECK(r->from == prog[i].from && r->to == prog[i].to && r->kind == prog[i].kind &&
			      r->aux == prog[i].aux,
		      "entry %u: %llx -> %llx kind %u aux %x", i, (unsigned long long)r->from,
		      (unsigned long long)r->to, r->kind, r->aux);
	}
	/* the CPL: 3 up to the first "other" (INT 80h, included), then
	 * between two "other" entries a guess (the exit's), counted */
	CHECK(out[0].cpl == 3 && out[3].cpl == 3 && out[4].cpl == 3 && out[5].cpl == 0 && out[got - 1].cpl == 0,
	      "cpl %u %u %u %u", out[0].cpl, out[4].cpl, out[5].cpl, out[got - 1].cpl);
	CHECK(st.guessed == 8, "guessed %u", st.guessed);

	/* not linear: CS.base added, the start's before the first "other",
	 * the exit's after it and where it lands; the decode gets the RIP */
	struct lbr_entry s2[3] = {
		{ 0x10, 0x30, info_of(LBR_BR_TYPE_NEAR_REL_JMP) },	/* newest, under the exit's CS */
		{ 0x60, 0x10, info_of(14) },				/* SYSCALL at start base + 0x60 */
		{ 0x00, 0x12, info_of(LBR_BR_TYPE_JCC) },		/* oldest, start base */
	};
	const struct lbr_state st16 = { 3, DEC_MODE_64, CODE_BASE }, end0 = { 0, DEC_MODE_64, 0x1000 };
	base = CODE_BASE;
	b = (struct lbr_batch){ .count = 3 };
	got = lbr_batch_records(s2, &b, false, &st16, &end0, sim_decode, &base, out, &st);
	CHECK(got == 3 && out[0].from == c && out[0].to == c + 0x12 && out[1].from == c + 0x60 &&
		      out[1].to == 0x1010 && out[2].from == 0x1010 && out[2].to == 0x1030,
	      "CS bases: %llx->%llx %llx->%llx %llx->%llx", (unsigned long long)out[0].from,
	      (unsigned long long)out[0].to, (unsigned long long)out[1].from, (unsigned long long)out[1].to,
	      (unsigned long long)out[2].from, (unsigned long long)out[2].to);
	CHECK(out[1].kind == HVTRACE_REC_FAR && out[1].aux == HVTRACE_BR_SYSCALL && !st.guessed,
	      "SYSCALL at its RIP");
	/* linear IPs (CPUID.1CH:EAX[31]): nothing added */
	got = lbr_batch_records(s2, &b, true, &st16, &end0, sim_decode, &base, out, &st);
	CHECK(got == 3 && out[2].from == 0x10 && out[2].to == 0x30, "linear: %llx -> %llx",
	      (unsigned long long)out[2].from, (unsigned long long)out[2].to);
	/* INTO in 32-bit code: the mode is the entry's side's */
	struct lbr_entry s4[1] = { { 0x48, 0x3000, info_of(10) } };
	const struct lbr_state st32 = { 3, DEC_MODE_32, CODE_BASE };
	b = (struct lbr_batch){ .count = 1 };
	got = lbr_batch_records(s4, &b, false, &st32, &st32, sim_decode, &base, out, &st);
	CHECK(got == 1 && out[0].kind == HVTRACE_REC_EXCEPTION && out[0].aux == (X86_OF | HVTRACE_AUX_SOFT) &&
		      out[0].from == c + 0x48 && out[0].to == c + 0x3000,
	      "INTO: kind %u aux %x", out[0].kind, out[0].aux);

	/* gaps first: a known size is a LOST record with the exact count, an
	 * unknown one the gap marker; unreadable code keeps the LBR's type */
	struct lbr_entry s3[2] = {
		{ 0x9000, 0x9100, info_of(12) },		/* "other", not readable */
		{ 0x8000, 0x8100, info_of(LBR_BR_TYPE_JCC) },	/* Jcc, not readable */
	};
	base = 0;
	b = (struct lbr_batch){ .count = 2, .gap = true, .lost = 17 };
	got = lbr_batch_records(s3, &b, true, &start, &start, sim_decode, &base, out, &st);
	CHECK(got == 3 && out[0].kind == HVTRACE_REC_LOST && out[0].from == 17 && out[1].kind == HVTRACE_REC_BRANCH &&
		      out[1].aux == HVTRACE_BR_JCC && out[2].kind == HVTRACE_REC_FAR && out[2].aux == HVTRACE_BR_OTHER &&
		      st.undecoded == 2,
	      "known gap: %u records, %u undecoded", got, st.undecoded);
	b.lost = LBR_LOST_UNKNOWN;
	got = lbr_batch_records(s3, &b, true, &start, &start, sim_decode, &base, out, &st);
	CHECK(got == 3 && out[0].kind == HVTRACE_REC_MARKER && out[0].aux == HVTRACE_MARK_GAP && !out[0].from,
	      "unknown gap: kind %u aux %u", out[0].kind, out[0].aux);
	b = (struct lbr_batch){ .count = 0, .gap = true, .lost = LBR_LOST_UNKNOWN };
	got = lbr_batch_records(s3, &b, true, &start, &start, sim_decode, &base, out, &st);
	CHECK(got == 1 && out[0].aux == HVTRACE_MARK_GAP, "a gap alone");
	b = (struct lbr_batch){ 0 };
	CHECK(lbr_batch_records(s3, &b, true, &start, &start, sim_decode, &base, out, &st) == 0, "nothing");
}

static void pmi_and_fallback(void)
{
	/* GLOBAL_STATUS: PMC0's and PMC1's overflow bits are the batches';
	 * the others (PMC2, fixed counters, the DS buffer's) are not */
	CHECK(lbr_pmi_bits(1) == 1 && lbr_pmi_bits(2) == 2 && lbr_pmi_bits(3) == 3, "ours");
	CHECK(!lbr_pmi_bits(4) && !lbr_pmi_bits(PERF_GLOBAL_FIXED(0)) &&
		      !lbr_pmi_bits(PERF_GLOBAL_STATUS_OVF_BUFFER | PERF_GLOBAL_STATUS_COND_CHGD),
	      "not ours");
	const struct lbr_needs ok = { .usable = true, .debugctl = DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_LBR,
				      .guest_dr7 = DR7_L(0) | DR7_G(1) | DR7_FIXED1 };
	struct lbr_needs n = ok;
	CHECK(!lbr_fallback(&n), "runs: %s", lbr_fallback(&n));
	n.usable = false;
	CHECK(lbr_fallback(&n), "no LBRs");
	n = ok, n.debugctl |= DEBUGCTL_BTF;
	CHECK(lbr_fallback(&n), "BTF");
	n = ok, n.debugctl |= DEBUGCTL_BTINT;
	CHECK(lbr_fallback(&n), "BTINT");
	n = ok, n.pmu_on = true;
	CHECK(lbr_fallback(&n), "PMU");
	for (int i = 2; i < 4; i++) {
		n = ok, n.guest_dr7 |= DR7_L(i);
		CHECK(lbr_fallback(&n), "DR%d local", i);
		n = ok, n.guest_dr7 |= DR7_G(i);
		CHECK(lbr_fallback(&n), "DR%d global", i);
	}
}

/* --- the hardware sequence over a simulated MSR file ---------------------- */

/* The processor as lbr_arm/lbr_collect see it through RDMSR and WRMSR:
 * the stack, IA32_LBR_DEPTH, two event selects and counters that count
 * near taken (LBR_INFO types 0-5) and far ("other") branches as their
 * selects say, legacy PMC writes sign-extended. Any other MSR, or an
 * entry past the depth, is an access the layer must not make (#GP). */
static struct {
	struct sim *s;
	u64 evtsel[2], pmc[2];
	u32 bad, reads;
} hw;

static u64 hw_read(u32 msr)
{
	struct sim *s = hw.s;
	hw.reads++;
	if (msr == MSR_IA32_PMC0 || msr == MSR_IA32_PMC0 + 1)
		return hw.pmc[msr - MSR_IA32_PMC0];
	if (msr >= MSR_IA32_LBR_FROM_IP0 && msr < MSR_IA32_LBR_FROM_IP0 + s->depth)
		return s->stack[msr - MSR_IA32_LBR_FROM_IP0].from;
	if (msr >= MSR_IA32_LBR_TO_IP0 && msr < MSR_IA32_LBR_TO_IP0 + s->depth)
		return s->stack[msr - MSR_IA32_LBR_TO_IP0].to;
	if (msr >= MSR_IA32_LBR_INFO0 && msr < MSR_IA32_LBR_INFO0 + s->depth)
		return s->stack[msr - MSR_IA32_LBR_INFO0].info;
	hw.bad++;
	return 0;
}

static void hw_write(u32 msr, u64 val)
{
	struct sim *s = hw.s;
	if (msr == MSR_IA32_LBR_DEPTH && val && val <= LBR_DEPTH_MAX && val % 8 == 0) {
		s->depth = (u32)val;
		memset(s->stack, 0, sizeof(s->stack));
	} else if (msr == MSR_IA32_PERFEVTSEL0 || msr == MSR_IA32_PERFEVTSEL0 + 1) {
		hw.evtsel[msr - MSR_IA32_PERFEVTSEL0] = val;
	} else if ((msr == MSR_IA32_PMC0 || msr == MSR_IA32_PMC0 + 1) && val >> 32 == 0) {
		hw.pmc[msr - MSR_IA32_PMC0] = (u64)(s64)(s32)(u32)val & mask_of(s->width);
	} else {
		hw.bad++;
	}
}

static const struct lbr_msr_ops hw_ops = { hw_read, hw_write };

/* one branch retired: recorded, and counted by each enabled counter whose
 * event is its kind; an overflow raises the PMI `skid` branches on */
static void hw_branch(struct sim *s, const struct lbr_entry *e)
{
	memmove(&s->stack[1], &s->stack[0], (s->depth - 1) * sizeof(s->stack[0]));
	s->stack[0] = *e;
	s->made++;
	u64 ev = lbr_is_other(e->info) ? BR_INST_RETIRED_FAR_BRANCH : BR_INST_RETIRED_NEAR_TAKEN;
	for (int i = 0; i < 2; i++) {
		if (!(hw.evtsel[i] & PERFEVTSEL_EN) || (hw.evtsel[i] & 0xffff) != ev)
			continue;
		hw.pmc[i] = (hw.pmc[i] + 1) & mask_of(s->width);
		if (!hw.pmc[i] && (hw.evtsel[i] & PERFEVTSEL_INT) && s->pmi_in < 0)
			s->pmi_in = (int)s->skid;
	}
}

/* seq[0, len) with one branch in `far_odds` far ("other"), the rest near
 * of every type */
static void seq_typed(u32 len, u32 kinds, u32 far_odds)
{
	for (u32 i = 0; i < len; i++) {
		u64 k = unit_rand() % kinds;
		u64 ty = unit_rand() % far_odds == 0 ? 8 + k % 8 : k % 6;
		seq[i] = (struct lbr_entry){ 0x1000 + 16 * k, 0x2000 + 8 * (k % 3), ty << 56 };
	}
}

static void hw_sequence(void)
{
	for (u32 d = 0; d < ARRAY_SIZE(depths); d++)
		for (u32 skid = 0; skid <= depths[d] / 4 + 3; skid++) {
			struct sim s;
			struct lbr_vcpu l;
			struct lbr_entry snap[LBR_DEPTH_MAX];
			struct lbr_batch b;
			u64 gctl = 0;
			sim_init(&s, 8, 48, skid);	/* the depth is lbr_arm's to set */
			memset(&hw, 0, sizeof(hw));
			hw.s = &s;
			s.stack[0] = (struct lbr_entry){ 0xdead, 0xbeef, 0 };	/* stale */
			u64 ctl = lbr_arm(&l, &hw_ops, depths[d], 48, true, false, &gctl);
			CHECK(s.depth == depths[d] && !s.stack[0].from, "depth set, stack cleared");
			CHECK(ctl == (LBR_CTL_LBREN | LBR_CTL_OS | 0x7f0000), "LBR_CTL %llx", (unsigned long long)ctl);
			CHECK(gctl == 3, "GLOBAL_CTRL %llx", (unsigned long long)gctl);
			CHECK(hw.evtsel[0] == (0x20c4 | PERFEVTSEL_OS | PERFEVTSEL_INT | PERFEVTSEL_EN) &&
				      hw.evtsel[1] == (0x40c4 | PERFEVTSEL_OS | PERFEVTSEL_INT | PERFEVTSEL_EN),
			      "event selects %llx %llx", (unsigned long long)hw.evtsel[0],
			      (unsigned long long)hw.evtsel[1]);
			CHECK(hw.pmc[0] == lbr_counter_preset(48, lbr_batch_len(depths[d])) &&
				      hw.pmc[1] == lbr_counter_preset(48, 1),
			      "presets %llx %llx", (unsigned long long)hw.pmc[0], (unsigned long long)hw.pmc[1]);

			struct out o = { .seq = seq };
			seq_typed(4000, 3, 10);
			u32 reads_per = 0;
			for (u32 i = 0; i < 4000; i++) {
				hw_branch(&s, &seq[i]);
				bool pmi = s.pmi_in == 0;
				if (s.pmi_in > 0)
					s.pmi_in--;
				if (pmi || (s.pmi_in < 0 && unit_rand() % 9 == 0)) {
					u32 before = hw.reads;
					lbr_collect(&l, &hw_ops, snap, &b);
					account(&o, s.made, snap, b);
					s.pmi_in = -1;
					reads_per = MAX(reads_per, hw.reads - before);
				}
			}
			lbr_collect(&l, &hw_ops, snap, &b);
			account(&o, s.made, snap, b);
			/* disarmed: neither counter counts, no PMI comes */
			lbr_disarm(&hw_ops);
			u64 pmc0 = hw.pmc[0], pmc1 = hw.pmc[1];
			for (u32 i = 0; i < 100; i++)
				hw_branch(&s, &seq[i]);
			CHECK(hw.pmc[0] == pmc0 && hw.pmc[1] == pmc1 && !hw.evtsel[0] && !hw.evtsel[1],
			      "disarmed: %llx %llx", (unsigned long long)hw.evtsel[0],
			      (unsigned long long)hw.evtsel[1]);
			bool margin = skid <= depths[d] - lbr_batch_len(depths[d]);
			CHECK(!o.bad && !hw.bad && (!margin || (o.records == 4000 && !o.gaps)),
			      "depth %u skid %u: %llu records, %llu gaps, %u bad MSR accesses", depths[d], skid,
			      (unsigned long long)o.records, (unsigned long long)o.gaps, hw.bad);
			CHECK(o.emitted_to == 4000 || o.gap_unknown || o.gap_known, "tail");
			/* two counters and at most `depth` entries of three MSRs */
			CHECK(reads_per <= 2 + 3 * depths[d], "%u reads at one exit", reads_per);
		}
}

static void capability(void)
{
	/* a part with everything: depths 8-32, a v5 PMU with 8 counters */
	const struct lbr_cpuid full = {
		.max_leaf = 0x20,
		.leaf7_edx = CPUID_7_EDX_ARCH_LBR,
		.leaf0a_eax = CPUID_A_EAX(5, 8, 48, 7),
		.leaf1c_eax = 0xf | CPUID_1C_EAX_LIP,
		.leaf1c_ebx = CPUID_1C_EBX_CPL_FILTER | CPUID_1C_EBX_BRANCH_FILTER | CPUID_1C_EBX_CALL_STACK,
		.leaf1c_ecx = CPUID_1C_ECX_MISPREDICT | CPUID_1C_ECX_TIMED_LBR | CPUID_1C_ECX_BRANCH_TYPE,
	};
	struct lbr_cpuid c = full;
	CHECK(lbr_usable(&c, true) == 32, "full: %u", lbr_usable(&c, true));
	CHECK(lbr_usable(&c, false) == 0, "no VMX controls");
	c.leaf1c_eax = 0x80 | 0x3;
	CHECK(lbr_usable(&c, true) == 64, "depth 64");
	c.leaf1c_eax = 0x1;
	CHECK(lbr_usable(&c, true) == 0, "depth 8 only");
	c = full, c.max_leaf = 0x1b;
	CHECK(lbr_usable(&c, true) == 0, "no leaf 1CH");
	c = full, c.leaf7_edx = 0;
	CHECK(lbr_usable(&c, true) == 0, "no arch LBR");
	c = full, c.leaf7_edx |= CPUID_7_EDX_HYBRID;
	CHECK(lbr_usable(&c, true) == 0, "hybrid");
	c = full, c.leaf1c_ebx &= ~CPUID_1C_EBX_CPL_FILTER;
	CHECK(lbr_usable(&c, true) == 0, "no CPL filter");
	c = full, c.leaf1c_ebx &= ~CPUID_1C_EBX_BRANCH_FILTER;
	CHECK(lbr_usable(&c, true) == 0, "no branch filter");
	c = full, c.leaf1c_ecx &= ~CPUID_1C_ECX_BRANCH_TYPE;
	CHECK(lbr_usable(&c, true) == 0, "no branch type");
	c = full, c.leaf0a_eax = CPUID_A_EAX(1, 8, 48, 7);
	CHECK(lbr_usable(&c, true) == 0, "PMU v1");
	c = full, c.leaf0a_eax = CPUID_A_EAX(5, 1, 48, 7);
	CHECK(lbr_usable(&c, true) == 0, "one counter");
	/* what the emulators here offer: QEMU -cpu max (TCG) and Bochs have
	 * neither leaf 7 EDX[19] nor a PMU */
	c = full, c.leaf7_edx = 0, c.leaf0a_eax = 0, c.leaf1c_eax = c.leaf1c_ebx = c.leaf1c_ecx = 0;
	CHECK(lbr_usable(&c, true) == 0, "emulator");
}

int main(void)
{
	exact_streams();
	loop_to_itself();
	exact_depth_and_skid();
	hand_made();
	miscounts();
	counter();
	types_and_cpl();
	batch_records();
	pmi_and_fallback();
	hw_sequence();
	capability();
	return unit_done("test_lbr");
}
