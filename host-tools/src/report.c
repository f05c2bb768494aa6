/* SPDX-License-Identifier: MIT */
/*
 * hvtrace report and export over a trace file already opened and checked
 * (cmd_file.c parses the options; the fuzzers call these directly). A file
 * is hostile input, so the work is bounded by its size whatever it holds:
 * the records are grouped by vCPU once (a counting sort of their indices),
 * not scanned once per vCPU, which made 65,536 vCPUs cost 65,536 passes;
 * the hot pairs are sorted and counted, not hashed, so no choice of
 * addresses can make the count quadratic.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int is_call(const struct hvtrace_rec *r)
{
	return (r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
	       (r->aux == HVTRACE_BR_CALL || r->aux == HVTRACE_BR_CALL_IND ||
		r->aux == HVTRACE_BR_FAR_CALL);
}

int is_ret(const struct hvtrace_rec *r)
{
	return (r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
	       (r->aux == HVTRACE_BR_RET || r->aux == HVTRACE_BR_FAR_RET);
}

/* Records with a code address on both ends. */
int has_addrs(const struct hvtrace_rec *r)
{
	return r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR ||
	       r->kind == HVTRACE_REC_INTERRUPT || r->kind == HVTRACE_REC_EXCEPTION;
}

/* The function name alone (no offset), or 0xaddr. */
const char *func_name(const struct hvt_syms *s, uint64_t a, char *buf, size_t len)
{
	uint64_t off;
	const struct hvt_sym *sym = s ? hvt_syms_lookup(s, a, &off) : NULL;

	if (sym)
		return sym->name;
	snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

void by_vcpu_free(struct by_vcpu *b)
{
	free(b->first);
	free(b->idx);
}

static int in_window(const struct hvt_file *f, uint64_t k, const struct export_opts *eo)
{
	return k >= eo->from_idx && k < eo->to_idx && f->recs[k].tsc >= eo->from_tsc &&
	       f->recs[k].tsc <= eo->to_tsc;
}

static int by_vcpu_keeps(const struct hvt_file *f, uint64_t i, int64_t only, const struct export_opts *eo)
{
	return (only < 0 || f->recs[i].vcpu == only) && (!eo || in_window(f, i, eo));
}

int export_keeps(const struct hvt_file *f, uint64_t i, const struct export_opts *eo)
{
	return by_vcpu_keeps(f, i, eo->vcpu, eo);
}

int by_vcpu_build(struct by_vcpu *b, const struct hvt_file *f, int64_t only, const struct export_opts *eo)
{
	uint64_t i, *next;

	for (i = 0, b->nv = 0; i < f->nr; i++)
		if (f->recs[i].vcpu >= b->nv && by_vcpu_keeps(f, i, only, eo))
			b->nv = f->recs[i].vcpu + 1u;
	b->first = calloc(b->nv + 1, sizeof(*b->first));
	b->idx = malloc((f->nr ? f->nr : 1) * sizeof(*b->idx));
	next = calloc(b->nv ? b->nv : 1, sizeof(*next));
	if (!b->first || !b->idx || !next) {
		by_vcpu_free(b);
		free(next);
		return -1;
	}
	for (i = 0; i < f->nr; i++)
		if (by_vcpu_keeps(f, i, only, eo))
			b->first[f->recs[i].vcpu + 1]++;
	for (i = 0; i < b->nv; i++) {
		b->first[i + 1] += b->first[i];
		next[i] = b->first[i];
	}
	for (i = 0; i < f->nr; i++)
		if (by_vcpu_keeps(f, i, only, eo))
			b->idx[next[f->recs[i].vcpu]++] = i;
	free(next);
	return 0;
}

/* `0xADDR func+0xoff`, or the address alone when no symbol covers it */
static const char *addr_sym(const struct hvt_syms *s, uint64_t a, char *buf, size_t len)
{
	uint64_t off;
	char name[160];

	if (s && hvt_syms_lookup(s, a, &off))
		snprintf(buf, len, "0x%llx %s", (unsigned long long)a, hvt_syms_format(s, a, name, sizeof(name)));
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

#define INDENT_MAX 128u	/* deeper calls print at this indentation (depth still counts) */

/* Compiler and kernel helpers a call history looks through (by symbol):
 * ftrace's __fentry__ (called at every function's entry until ftrace
 * patches the calls out), the retpoline thunks an indirect call or jump
 * goes through (__x86_indirect_thunk_*: an internal CALL, then a RET to the
 * real target), and the return thunks a function's return jumps to (with
 * the retbleed/SRSO mitigations every RET is `jmp __x86_return_thunk`, whose
 * RET is that function's). */
enum helper { HELPER_NONE, HELPER_FENTRY, HELPER_RETPOLINE, HELPER_RETURN_THUNK };

static int has_prefix(const char *name, const char *const *list, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!strncmp(name, list[i], strlen(list[i])))
			return 1;
	return 0;
}

static enum helper helper_at(const struct hvt_syms *s, uint64_t a)
{
	uint64_t off;
	const struct hvt_sym *sym = s ? hvt_syms_lookup(s, a, &off) : NULL;

	if (!sym)
		return HELPER_NONE;
	static const char *const retpoline[] = {
		"__x86_indirect_thunk_", "__x86_indirect_call_thunk_", "__x86_indirect_jump_thunk_",
	};
	static const char *const return_thunk[] = {
		"__x86_return_thunk", "__x86_return_skl", "zen_untrain_ret", "entry_untrain_ret",
		"retbleed_return_thunk", "srso_return_thunk", "srso_alias_return_thunk",
		"srso_safe_ret", "srso_alias_safe_ret", "call_depth_return_thunk",
	};
	if (!strcmp(sym->name, "__fentry__"))
		return HELPER_FENTRY;
	if (has_prefix(sym->name, retpoline, sizeof(retpoline) / sizeof(retpoline[0])))
		return HELPER_RETPOLINE;
	if (has_prefix(sym->name, return_thunk, sizeof(return_thunk) / sizeof(return_thunk[0])))
		return HELPER_RETURN_THUNK;
	return HELPER_NONE;
}

/* Walks vCPU v's records as a call history: enter() for the function the
 * trace starts in (depth 0) and for each function a CALL enters (depth >=
 * 1), leave() when a RET leaves depth d (never below 0: returns past the
 * trace's start are ignored). A CALL into a retpoline raises the depth at
 * once and enters its real callee at the thunk's RET, so a leave() can come
 * for a depth whose enter() never came (a thunk that did not return):
 * callers that pair them keep their own stack. */
void calls_walk(const struct hvt_file *f, const struct hvt_syms *s, const uint64_t *idx,
		uint64_t n_idx, const struct calls_ops *ops, void *ctx)
{
	uint64_t i, depth = 0;
	int started = 0;
	int thunk_call = 0;	/* a CALL went into a retpoline: its RET names the callee */
	enum helper returning = HELPER_NONE;	/* who jumped to the return thunk */

	for (i = 0; i < n_idx; i++) {
		const struct hvtrace_rec *r = &f->recs[idx[i]];
		enum helper from_helper;

		if (!started && has_addrs(r)) {
			started = 1;
			ops->enter(ctx, r, r->from, 0);
		}
		if (!is_call(r) && !is_ret(r)) {
			if (r->kind == HVTRACE_REC_BRANCH && helper_at(s, r->to) == HELPER_RETURN_THUNK)
				returning = helper_at(s, r->from);
			continue;
		}
		from_helper = helper_at(s, r->from);
		if (from_helper == HELPER_RETURN_THUNK && is_ret(r)) {
			/* the RET of whichever jumped to the thunk */
			from_helper = returning == HELPER_RETURN_THUNK ? HELPER_NONE : returning;
			returning = HELPER_NONE;
		}
		if (from_helper == HELPER_FENTRY)
			continue;	/* __fentry__'s RET: its CALL was not counted */
		if (from_helper == HELPER_RETPOLINE) {
			/* the thunk's own CALL, then its RET to the real target:
			 * the callee of the CALL that entered the thunk (a JMP
			 * into one, a tail call, adds no level) */
			if (is_ret(r) && thunk_call)
				ops->enter(ctx, r, r->to, depth);
			if (is_ret(r))
				thunk_call = 0;
			continue;
		}
		if (is_call(r)) {
			switch (helper_at(s, r->to)) {
			case HELPER_FENTRY:
				continue;
			case HELPER_RETPOLINE:
				depth++;
				thunk_call = 1;
				continue;
			case HELPER_NONE:
			case HELPER_RETURN_THUNK:
				break;
			}
			depth++;
			ops->enter(ctx, r, r->to, depth);
		} else if (depth) {
			if (ops->leave)
				ops->leave(ctx, r, depth);
			depth--;
		}
	}
}

struct calls_print {
	FILE *o;
	const struct hvt_syms *s;
	unsigned n;
};

static void print_callee(void *ctx, const struct hvtrace_rec *r, uint64_t func, uint64_t depth)
{
	struct calls_print *p = ctx;
	unsigned ind = depth < INDENT_MAX ? (unsigned)depth : INDENT_MAX;
	char buf[32];

	(void)r;
	fprintf(p->o, "%6u  %*s%s\n", ++p->n, (int)(2 * ind), "", func_name(p->s, func, buf, sizeof(buf)));
}

static void report_calls(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			 const struct by_vcpu *b, uint32_t v)
{
	static const struct calls_ops ops = { .enter = print_callee };
	struct calls_print p = { o, s, 0 };

	fprintf(o, "vcpu %u function-call history:\n", v);
	calls_walk(f, s, b->idx + b->first[v], b->first[v + 1] - b->first[v], &ops, &p);
}

struct pair {
	uint64_t from, to, count;
};

static int less_from_to(const struct pair *x, const struct pair *y)
{
	return x->from != y->from ? x->from < y->from : x->to < y->to;
}

/* Most frequent first; ties by address, so the output is one order. */
static int less_hot(const struct pair *x, const struct pair *y)
{
	return x->count != y->count ? x->count > y->count : less_from_to(x, y);
}

/* A bottom-up merge sort of p[0..n) (tmp: n more): n log n comparisons
 * for any input, whatever the C library. glibc's qsort is a merge sort
 * only while its buffer fits in a quarter of physical memory and a
 * median-of-three quicksort past that, which crafted input can make
 * quadratic. Inlined with its comparison: a little faster than qsort. */
static inline __attribute__((always_inline)) void
sort_pairs(struct pair *p, struct pair *tmp, uint64_t n,
	   int (*less)(const struct pair *, const struct pair *))
{
	struct pair *src = p, *dst = tmp, *t;
	uint64_t w, lo;

	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			uint64_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				dst[k++] = less(&src[j], &src[i]) ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != p)
		memcpy(p, src, n * sizeof(*p));
}

/* Sort the pairs, count equal neighbours, sort by count: O(n log n). */
static int report_hot(FILE *o, const struct hvt_file *f, const struct hvt_syms *s, uint64_t top,
		      int64_t vcpu)
{
	uint64_t cap = f->nr ? f->nr : 1, n = 0, k = 0, i;
	struct pair *p = malloc(cap * sizeof(*p)), *tmp = malloc(cap * sizeof(*tmp));
	char a[200], b[200];

	if (!p || !tmp) {
		free(p);
		free(tmp);
		return -1;
	}
	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];

		if ((r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
		    (vcpu < 0 || r->vcpu == vcpu))
			p[n++] = (struct pair){ r->from, r->to, 1 };
	}
	sort_pairs(p, tmp, n, less_from_to);
	for (i = 0; i < n; i++) {
		if (k && p[k - 1].from == p[i].from && p[k - 1].to == p[i].to)
			p[k - 1].count++;
		else
			p[k++] = p[i];
	}
	sort_pairs(p, tmp, k, less_hot);
	free(tmp);
	fprintf(o, "hot branches: top %llu of %llu distinct from -> to pairs (%llu branch records)\n",
		(unsigned long long)(top < k ? top : k), (unsigned long long)k, (unsigned long long)n);
	for (i = 0; i < k && i < top; i++)
		fprintf(o, "%10llu  %s -> %s\n", (unsigned long long)p[i].count,
			addr_sym(s, p[i].from, a, sizeof(a)), addr_sym(s, p[i].to, b, sizeof(b)));
	free(p);
	return 0;
}

static void report_last(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			const struct by_vcpu *b, uint32_t v, uint64_t last)
{
	uint64_t n = b->first[v + 1] - b->first[v], i;

	fprintf(o, "vcpu %u last %llu records:\n", v, (unsigned long long)(n < last ? n : last));
	for (i = n > last ? b->first[v + 1] - last : b->first[v]; i < b->first[v + 1]; i++)
		print_rec_text(o, &f->recs[b->idx[i]], s);
}

/* A trace that ends in a freeze: what caused it (the TRIGGER marker of a
 * trace.freeze address, else the first CRASH marker) and, first in the
 * report, each vCPU's last records up to that moment -- what happened just
 * before. Nothing when the trace holds no freeze. */
static void report_freeze(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			  const struct by_vcpu *b, uint64_t last)
{
	const struct hvtrace_rec *cause = NULL;
	uint64_t i, k, n, end;
	uint32_t v;
	char a[200];

	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];
		if (r->kind != HVTRACE_REC_MARKER)
			continue;
		if (r->aux == HVTRACE_MARK_TRIGGER) {
			cause = r;
			break;
		}
		if (r->aux == HVTRACE_MARK_CRASH && !cause)
			cause = r;
	}
	if (!cause)
		return;
	if (cause->aux == HVTRACE_MARK_TRIGGER)
		fprintf(o, "frozen: vcpu %u reached the trace.freeze address %s (then %llu more records)\n",
			cause->vcpu, addr_sym(s, cause->from, a, sizeof(a)), (unsigned long long)cause->to);
	else
		fprintf(o, "frozen: %s on vcpu %u at %s\n",
			hvt_freeze_name((unsigned)cause->to) ? hvt_freeze_name((unsigned)cause->to) : "?",
			cause->vcpu, addr_sym(s, cause->from, a, sizeof(a)));
	for (v = 0; v < b->nv; v++) {
		/* this vCPU's records up to the cause, in its own order */
		for (end = b->first[v]; end < b->first[v + 1] && f->recs[b->idx[end]].tsc <= cause->tsc; end++)
			;
		n = end - b->first[v];
		if (!n)
			continue;
		k = n < last ? n : last;
		fprintf(o, "vcpu %u: its last %llu records before the freeze cause:\n", v, (unsigned long long)k);
		for (i = end - k; i < end; i++)
			print_rec_text(o, &f->recs[b->idx[i]], s);
	}
}

/* --before / --around: per vCPU, the records up to the first one that
 * goes to `where` (and as many after it with --around). */
static void report_before(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			  const struct by_vcpu *b, const struct report_opts *opt)
{
	uint64_t last = opt->last ? opt->last : 20, i, at, lo, hi, hits;
	uint32_t v, shown = 0;
	char a[200];

	for (v = 0; v < b->nv; v++) {
		for (at = b->first[v], hits = 0, i = b->first[v]; i < b->first[v + 1]; i++) {
			const struct hvtrace_rec *r = &f->recs[b->idx[i]];
			if (has_addrs(r) && r->to == opt->where && !hits++)
				at = i;
		}
		if (!hits)
			continue;
		shown++;
		lo = at + 1 - b->first[v] > last ? at + 1 - last : b->first[v];
		hi = opt->around ? (b->first[v + 1] - at - 1 > last ? at + 1 + last : b->first[v + 1]) : at + 1;
		fprintf(o, "vcpu %u: %llu record%s go%s to %s; %s the first:\n", v,
			(unsigned long long)hits, hits == 1 ? "" : "s", hits == 1 ? "es" : "",
			addr_sym(s, opt->where, a, sizeof(a)), opt->around ? "around" : "up to");
		for (i = lo; i < hi; i++)
			print_rec_text(o, &f->recs[b->idx[i]], s);
	}
	if (!shown)
		fprintf(o, "no record goes to %s\n", addr_sym(s, opt->where, a, sizeof(a)));
}

int report_write(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
		 const struct report_opts *opt)
{
	struct by_vcpu b;
	uint32_t v;

	if (by_vcpu_build(&b, f, opt->vcpu, NULL))
		return -1;
	report_freeze(o, f, s, &b, opt->last ? opt->last : 20);
	if (opt->has_where) {
		report_before(o, f, s, &b, opt);
		by_vcpu_free(&b);
		return 0;
	}
	if (opt->calls)
		for (v = 0; v < b.nv; v++)
			if (b.first[v + 1] > b.first[v])
				report_calls(o, f, s, &b, v);
	if (opt->hot && report_hot(o, f, s, opt->hot, opt->vcpu)) {
		by_vcpu_free(&b);
		return -1;
	}
	if (opt->last)
		for (v = 0; v < b.nv; v++)
			if (b.first[v + 1] > b.first[v])
				report_last(o, f, s, &b, v, opt->last);
	by_vcpu_free(&b);
	return 0;
}

/* ---------------------------------------------------------------- */

static void export_vcpu(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			const struct by_vcpu *b, uint32_t v, uint64_t tsc0, double scale,
			const struct export_opts *eo)
{
	uint64_t i, depth = 0;
	double ts = 0;
	char a[160], buf[32];

	fprintf(o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"vCPU %u\"}}",
		v, v);
	for (i = b->first[v]; i < b->first[v + 1]; i++) {
		const struct hvtrace_rec *r = &f->recs[b->idx[i]];
		const char *inst = NULL;

		if (!in_window(f, b->idx[i], eo))
			continue;

		ts = (double)(r->tsc >= tsc0 ? r->tsc - tsc0 : 0) * scale;
		if (is_call(r)) {
			fprintf(o, ",\n{\"name\":");
			json_str(o, func_name(s, r->to, buf, sizeof(buf)));
			fprintf(o, ",\"ph\":\"B\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"args\":{\"from\":\"0x%llx\"}}",
				v, ts, (unsigned long long)r->from);
			depth++;
		} else if (is_ret(r)) {
			if (depth) {	/* a return from before the trace began has no B */
				fprintf(o, ",\n{\"ph\":\"E\",\"pid\":1,\"tid\":%u,\"ts\":%.3f}", v, ts);
				depth--;
			}
		} else if (r->kind == HVTRACE_REC_INTERRUPT) {
			snprintf(a, sizeof(a), "interrupt 0x%x%s", HVTRACE_AUX_VECTOR(r->aux),
				 r->aux & HVTRACE_AUX_NMI ? " (NMI)" : "");
			inst = a;
		} else if (r->kind == HVTRACE_REC_EXCEPTION) {
			snprintf(a, sizeof(a), "exception %u%s", HVTRACE_AUX_VECTOR(r->aux),
				 r->aux & HVTRACE_AUX_SOFT ? " (soft)" : "");
			inst = a;
		} else if (r->kind == HVTRACE_REC_MARKER) {
			snprintf(a, sizeof(a), "marker %s 0x%llx", hvt_marker_name(r->aux),
				 (unsigned long long)r->from);
			inst = a;
		} else if (r->kind == HVTRACE_REC_LOST) {
			snprintf(a, sizeof(a), "lost %llu records", (unsigned long long)r->from);
			inst = a;
		}
		if (inst) {
			fprintf(o, ",\n{\"name\":");
			json_str(o, inst);
			fprintf(o, ",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%u,\"ts\":%.3f", v, ts);
			if (has_addrs(r))
				fprintf(o, ",\"args\":{\"from\":\"0x%llx\",\"to\":\"0x%llx\"}",
					(unsigned long long)r->from, (unsigned long long)r->to);
			fputc('}', o);
		}
	}
	for (; depth; depth--)	/* close what is still open at the end */
		fprintf(o, ",\n{\"ph\":\"E\",\"pid\":1,\"tid\":%u,\"ts\":%.3f}", v, ts);
}

int export_write(FILE *o, const struct hvt_file *f, const struct hvt_syms *s, const char *source,
		 const struct export_opts *eo)
{
	uint64_t i, tsc0 = UINT64_MAX;
	double scale = f->hdr.tsc_hz ? 1e6 / (double)f->hdr.tsc_hz : 1.0;
	struct by_vcpu b;
	uint32_t v;

	if (by_vcpu_build(&b, f, eo->vcpu, NULL))
		return -1;
	/* times from the window's first record */
	for (i = 0; i < f->nr; i++)
		if (f->recs[i].tsc < tsc0 && in_window(f, i, eo) && (eo->vcpu < 0 || f->recs[i].vcpu == eo->vcpu))
			tsc0 = f->recs[i].tsc;
	if (tsc0 == UINT64_MAX)
		tsc0 = 0;
	fprintf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":");
	json_str(o, source);
	fprintf(o, ",\"tsc_hz\":%llu,\"tsc0\":%llu,\"note\":\"%s\"},\n\"traceEvents\":[\n",
		(unsigned long long)f->hdr.tsc_hz, (unsigned long long)tsc0,
		f->hdr.tsc_hz ? "ts in microseconds since tsc0"
			      : "tsc_hz unknown: ts is raw TSC ticks since tsc0, not microseconds");
	fprintf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"hvtrace guest\"}}");
	for (v = 0; v < b.nv; v++)
		if (b.first[v + 1] > b.first[v])
			export_vcpu(o, f, s, &b, v, tsc0, scale, eo);
	fprintf(o, "\n]}\n");
	by_vcpu_free(&b);
	return 0;
}
