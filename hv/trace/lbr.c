/*
 * LBR batching's pure part (docs/branch-engine.md "LBR batching (hardware
 * only)"): successive snapshots of the architectural LBR stack (entry 0 the
 * newest) made into one ordered record stream with no duplicate and no
 * silent loss, the counter preset that ends a batch, the MSR sequence that
 * arms and collects, and the capability decision. No hardware access of
 * its own: every RDMSR/WRMSR goes through accessors the caller supplies
 * (struct lbr_msr_ops). Root mode.
 *
 * Why the count and not a search: the stack holds the last `depth`
 * branches, so the records since the last drain are its n newest entries,
 * n being how many the LBR made since then. Searching the stack for the
 * last entry emitted cannot tell a loop jumping to itself (every entry
 * alike) after 1 branch from one after 20. The counters count exactly the
 * branches the LBR records (near taken + far, the same CPL filter, both
 * stopped at every exit), so n comes from them; the search is kept as the
 * check (the entry after the n newest must be the last one emitted) and
 * as the fallback when the check fails, and then it marks a gap.
 */
#include "hvtrace/record.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "trace/branch.h"
#include "trace/lbr.h"

static bool entry_eq(const struct lbr_entry *a, const struct lbr_entry *b)
{
	return a->from == b->from && a->to == b->to && a->info == b->info;
}

static bool entry_empty(const struct lbr_entry *e)
{
	return !e->from && !e->to && !e->info;
}

void lbr_track_reset(struct lbr_track *t, u32 depth)
{
	*t = (struct lbr_track){ .depth = depth };
}

u32 lbr_read_len(const struct lbr_track *t, u64 n)
{
	return n < t->depth ? (u32)n + 1 : t->depth;
}

void lbr_drain(struct lbr_track *t, u64 n, const struct lbr_entry *snap, u32 got,
	       struct lbr_batch *b)
{
	*b = (struct lbr_batch){ 0 };
	u32 k = n < t->depth ? (u32)n : t->depth;	/* the new entries */
	bool ok = got >= lbr_read_len(t, n);
	for (u32 i = 0; ok && i < k; i++)
		ok = !entry_empty(&snap[i]);
	if (ok && n < t->depth)
		ok = entry_eq(&snap[n], &t->last);
	if (!ok) {
		t->mismatches++;
		b->resync = true;
		return;
	}
	if (n > t->depth) {
		b->gap = true;
		b->lost = n - t->depth;
		t->gaps++;
		t->lost += b->lost;
	}
	b->count = k;
	t->emitted += k;
	if (k)
		t->last = snap[0];
}

void lbr_resync(struct lbr_track *t, const struct lbr_entry *snap, u32 got, struct lbr_batch *b)
{
	u32 p = 0;
	while (p < got && !entry_eq(&snap[p], &t->last))
		p++;
	u32 k = 0;	/* newer than the nearest occurrence, and not empty */
	while (k < p && !entry_empty(&snap[k]))
		k++;
	/* Exact only when the anchor is "cleared": no branch makes an empty
	 * entry, so its nearest occurrence is the boundary. Any other anchor
	 * may recur later (a loop), so its nearest occurrence may not be the
	 * one emitted: what lies between is unknown. */
	bool exact = entry_empty(&t->last) && p < got;
	*b = (struct lbr_batch){ .count = k, .gap = !exact, .lost = exact ? 0 : LBR_LOST_UNKNOWN };
	if (b->gap)
		t->gaps++;
	t->emitted += k;
	if (got)
		t->last = snap[0];
}

void lbr_ring_order(const struct lbr_entry *ring, u32 depth, u32 tos, struct lbr_entry *out)
{
	for (u32 i = 0; i < depth; i++)
		out[i] = ring[(tos % depth + depth - i) % depth];
}

static u64 counter_mask(u32 width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

u64 lbr_counter_preset(u32 width, u32 k)
{
	return (0 - (u64)k) & counter_mask(width);
}

u64 lbr_counter_delta(u32 width, u64 preset, u64 now)
{
	return (now - preset) & counter_mask(width);
}

u32 lbr_batch_len(u32 depth)
{
	return depth - depth / 4;
}

/* --- the hardware sequence ------------------------------------------------ */

static void lbr_read(const struct lbr_msr_ops *m, struct lbr_entry *snap, u32 len)
{
	for (u32 i = 0; i < len; i++) {
		snap[i].from = m->read(MSR_IA32_LBR_FROM_IP0 + i);
		snap[i].to = m->read(MSR_IA32_LBR_TO_IP0 + i);
		snap[i].info = m->read(MSR_IA32_LBR_INFO0 + i);
	}
}

/* IA32_PMCx takes bits 31:0 and sign-extends bit 31 to the counter's
 * width (SDM Vol. 3 20.2.6): a preset 2^W - k with k < 2^31 survives it,
 * so no full-width write (IA32_A_PMCx, PERF_CAPABILITIES.FW_WRITE) is
 * needed. */
static void lbr_preset(const struct lbr_vcpu *l, const struct lbr_msr_ops *m)
{
	m->write(MSR_IA32_PMC0 + LBR_PMC_NEAR, (u32)lbr_counter_preset(l->width, l->batch));
	m->write(MSR_IA32_PMC0 + LBR_PMC_FAR, (u32)lbr_counter_preset(l->width, 1));
}

u64 lbr_arm(struct lbr_vcpu *l, const struct lbr_msr_ops *m, u32 depth, u32 width, bool os, bool usr,
	    u64 *global_ctrl)
{
	depth = MIN(depth, LBR_DEPTH_MAX);	/* the callers' snapshot buffers */
	lbr_track_reset(&l->track, depth);
	l->width = width;
	l->batch = lbr_batch_len(depth);
	m->write(MSR_IA32_LBR_DEPTH, depth);
	u64 cpl = (os ? PERFEVTSEL_OS : 0) | (usr ? PERFEVTSEL_USR : 0);
	m->write(MSR_IA32_PERFEVTSEL0 + LBR_PMC_NEAR,
		 BR_INST_RETIRED_NEAR_TAKEN | cpl | PERFEVTSEL_INT | PERFEVTSEL_EN);
	m->write(MSR_IA32_PERFEVTSEL0 + LBR_PMC_FAR,
		 BR_INST_RETIRED_FAR_BRANCH | cpl | PERFEVTSEL_INT | PERFEVTSEL_EN);
	lbr_preset(l, m);
	*global_ctrl = PERF_GLOBAL_PMC(LBR_PMC_NEAR) | PERF_GLOBAL_PMC(LBR_PMC_FAR);
	return LBR_CTL_LBREN | (os ? LBR_CTL_OS : 0) | (usr ? LBR_CTL_USR : 0) | LBR_CTL_JCC |
	       LBR_CTL_NEAR_REL_JMP | LBR_CTL_NEAR_IND_JMP | LBR_CTL_NEAR_REL_CALL |
	       LBR_CTL_NEAR_IND_CALL | LBR_CTL_NEAR_RET | LBR_CTL_OTHER_BRANCH;
}

void lbr_disarm(const struct lbr_msr_ops *m)
{
	m->write(MSR_IA32_PERFEVTSEL0 + LBR_PMC_NEAR, 0);
	m->write(MSR_IA32_PERFEVTSEL0 + LBR_PMC_FAR, 0);
}

void lbr_collect(struct lbr_vcpu *l, const struct lbr_msr_ops *m, struct lbr_entry *snap,
		 struct lbr_batch *b)
{
	u64 near = m->read(MSR_IA32_PMC0 + LBR_PMC_NEAR), far = m->read(MSR_IA32_PMC0 + LBR_PMC_FAR);
	u64 n = lbr_counter_delta(l->width, lbr_counter_preset(l->width, l->batch), near) +
		lbr_counter_delta(l->width, lbr_counter_preset(l->width, 1), far);
	lbr_preset(l, m);
	u32 len = lbr_read_len(&l->track, n);
	lbr_read(m, snap, len);
	lbr_drain(&l->track, n, snap, len, b);
	if (b->resync) {
		lbr_read(m, snap, l->track.depth);
		lbr_resync(&l->track, snap, l->track.depth, b);
	}
}

u32 lbr_br_type(u64 info)
{
	static const u8 types[] = {
		[LBR_BR_TYPE_JCC] = HVTRACE_BR_JCC,
		[LBR_BR_TYPE_NEAR_IND_JMP] = HVTRACE_BR_JMP_IND,
		[LBR_BR_TYPE_NEAR_REL_JMP] = HVTRACE_BR_JMP,
		[LBR_BR_TYPE_NEAR_IND_CALL] = HVTRACE_BR_CALL_IND,
		[LBR_BR_TYPE_NEAR_REL_CALL] = HVTRACE_BR_CALL,
		[LBR_BR_TYPE_NEAR_RET] = HVTRACE_BR_RET,
	};
	u32 ty = LBR_INFO_BR_TYPE(info);
	return ty < ARRAY_SIZE(types) ? types[ty] : 0;
}

bool lbr_is_other(u64 info)
{
	return !lbr_br_type(info);
}

u32 lbr_batch_ends(const struct lbr_entry *snap, u32 count, bool *end)
{
	u32 others = 0, seen = 0, guessed = 0;
	for (u32 i = 0; i < count; i++)
		others += lbr_is_other(snap[i].info);
	for (u32 i = 0; i < count; i++) {
		end[i] = seen > 0;
		guessed += seen && seen < others;
		seen += lbr_is_other(snap[count - 1 - i].info);
	}
	return guessed;
}

u32 lbr_batch_cpl(const struct lbr_entry *snap, u32 count, int cpl_start, int cpl_end, u8 *cpl)
{
	bool end[LBR_DEPTH_MAX];
	count = MIN(count, LBR_DEPTH_MAX);
	u32 guessed = lbr_batch_ends(snap, count, end);
	for (u32 i = 0; i < count; i++)
		cpl[i] = (u8)(end[i] ? cpl_end : cpl_start);
	return guessed;
}

/* An "other" entry's record from the instruction at its source: a far
 * transfer (FAR, its type), INT n/INT3/INTO/INT1 (EXCEPTION, the vector,
 * SOFT), or false: no transfer (an event's delivery) */
static bool other_kind(const struct dec_insn *in, const u8 *bytes, u8 *kind, u32 *aux)
{
	if (in->branch == DEC_BR_INT) {
		u8 op = in->opcode;
		*kind = HVTRACE_REC_EXCEPTION;
		*aux = HVTRACE_AUX_SOFT | (op == 0xcd ? bytes[in->imm_offset] : op == 0xcc ? X86_BP
								       : op == 0xce ? X86_OF : X86_DB);
		return true;
	}
	if (in->branch == DEC_BR_NONE || in->branch == DEC_BR_UD || in->branch == DEC_BR_XBEGIN)
		return false;
	*kind = rec_kind_of(in, aux);
	return true;
}

u32 lbr_batch_records(const struct lbr_entry *snap, const struct lbr_batch *b, bool lin_ips,
		      const struct lbr_state *start, const struct lbr_state *end, lbr_decode_fn decode,
		      void *ctx, struct lbr_rec *out, struct lbr_rec_stats *st)
{
	bool at_end[LBR_DEPTH_MAX];
	u32 count = MIN(b->count, LBR_DEPTH_MAX), n = 0;
	*st = (struct lbr_rec_stats){ .guessed = lbr_batch_ends(snap, count, at_end) };
	if (b->gap)
		out[n++] = b->lost == LBR_LOST_UNKNOWN
				   ? (struct lbr_rec){ .kind = HVTRACE_REC_MARKER, .cpl = (u8)start->cpl,
						       .aux = HVTRACE_MARK_GAP }
				   : (struct lbr_rec){ .from = b->lost, .kind = HVTRACE_REC_LOST,
						       .cpl = (u8)start->cpl };
	for (u32 i = 0; i < count; i++) {
		const struct lbr_entry *e = &snap[count - 1 - i];
		const struct lbr_state *s = at_end[i] ? end : start;
		u64 base = lin_ips ? 0 : s->cs_base;
		/* where a far transfer lands: the exit's state when it is the
		 * batch's last "other" entry (a guess otherwise, counted) */
		u64 to_base = lin_ips ? 0 : lbr_is_other(e->info) ? end->cs_base : base;
		struct lbr_rec r = { .from = e->from + base, .to = e->to + to_base, .kind = HVTRACE_REC_BRANCH,
				     .cpl = (u8)s->cpl, .aux = lbr_br_type(e->info) };
		bool other = lbr_is_other(e->info);
		if (other || r.aux == HVTRACE_BR_JCC) {
			u8 bytes[15];
			struct dec_insn in;
			if (decode(ctx, r.from, r.from - s->cs_base, s->mode, bytes, &in) != DEC_OK) {
				st->undecoded++;
				if (other) {	/* a far transfer of unknown kind */
					r.kind = HVTRACE_REC_FAR;
					r.aux = HVTRACE_BR_OTHER;
				}
			} else if (!other) {
				r.aux = in.branch == DEC_BR_LOOP ? HVTRACE_BR_LOOP : HVTRACE_BR_JCC;
			} else if (!other_kind(&in, bytes, &r.kind, &r.aux)) {
				st->skipped++;
				continue;
			}
		}
		out[n++] = r;
	}
	return n;
}

const char *lbr_fallback(const struct lbr_needs *n)
{
	const u64 dr23 = DR7_L(2) | DR7_G(2) | DR7_L(3) | DR7_G(3);
	if (!n->usable)
		return "no architectural LBRs this backend can use";
	/* single-stepping on branches needs an exit at each (SDM Vol. 3 18.4.3) */
	if (n->debugctl & DEBUGCTL_BTF)
		return "BTF";
	/* the threshold's PMI, at the record that crosses it */
	if (n->debugctl & DEBUGCTL_BTINT)
		return "BTINT";
	/* the PMI of a counter goes through the LVT entry the batches hold */
	if (n->pmu_on)
		return "a virtual PMU counter";
	/* DR2/DR3: the engine follows events with DR3, and the fast engine
	 * checks the guest's DR2/DR3 breakpoints itself */
	if (n->guest_dr7 & dr23)
		return "a breakpoint in DR2/DR3";
	return NULL;
}

u64 lbr_pmi_bits(u64 global_status)
{
	return global_status & (PERF_GLOBAL_PMC(LBR_PMC_NEAR) | PERF_GLOBAL_PMC(LBR_PMC_FAR));
}

u32 lbr_usable(const struct lbr_cpuid *c, bool vmx_ctls)
{
	if (c->max_leaf < 0x1c || !(c->leaf7_edx & CPUID_7_EDX_ARCH_LBR) ||
	    (c->leaf7_edx & CPUID_7_EDX_HYBRID) || !vmx_ctls)
		return 0;
	if (!(c->leaf1c_ebx & CPUID_1C_EBX_CPL_FILTER) || !(c->leaf1c_ebx & CPUID_1C_EBX_BRANCH_FILTER) ||
	    !(c->leaf1c_ecx & CPUID_1C_ECX_BRANCH_TYPE))
		return 0;
	u32 version = c->leaf0a_eax & 0xff, nr_gp = (c->leaf0a_eax >> 8) & 0xff;
	u32 width = (c->leaf0a_eax >> 16) & 0xff;
	if (version < 2 || nr_gp < 2 || width < 32)
		return 0;
	u32 depths = CPUID_1C_EAX_DEPTHS(c->leaf1c_eax), depth = 0;
	for (u32 bit = 0; bit < 8; bit++)
		if (depths & (1u << bit))
			depth = 8 * (bit + 1);
	return depth >= 16 ? depth : 0;
}
