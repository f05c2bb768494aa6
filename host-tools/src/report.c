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

static int is_call(const struct hvtrace_rec *r)
{
	return (r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
	       (r->aux == HVTRACE_BR_CALL || r->aux == HVTRACE_BR_CALL_IND ||
		r->aux == HVTRACE_BR_FAR_CALL);
}

static int is_ret(const struct hvtrace_rec *r)
{
	return (r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
	       (r->aux == HVTRACE_BR_RET || r->aux == HVTRACE_BR_FAR_RET);
}

/* Records with a code address on both ends. */
static int has_addrs(const struct hvtrace_rec *r)
{
	return r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR ||
	       r->kind == HVTRACE_REC_INTERRUPT || r->kind == HVTRACE_REC_EXCEPTION;
}

/* The function name alone (no offset), or 0xaddr. */
static const char *func_name(const struct hvt_syms *s, uint64_t a, char *buf, size_t len)
{
	uint64_t off;
	const struct hvt_sym *sym = s ? hvt_syms_lookup(s, a, &off) : NULL;

	if (sym)
		return sym->name;
	snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

/* The records of each vCPU, in file order: vCPU v's indices are
 * idx[first[v] .. first[v + 1]), for v < nv (the highest vCPU seen + 1). */
struct by_vcpu {
	uint64_t *first;	/* nv + 1 */
	uint64_t *idx;
	uint32_t nv;
};

static void by_vcpu_free(struct by_vcpu *b)
{
	free(b->first);
	free(b->idx);
}

/* Only vCPU `only` when it is >= 0. */
static int by_vcpu_build(struct by_vcpu *b, const struct hvt_file *f, int64_t only)
{
	uint64_t i, *next;

	for (i = 0, b->nv = 0; i < f->nr; i++)
		if (f->recs[i].vcpu >= b->nv && (only < 0 || f->recs[i].vcpu == only))
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
		if (only < 0 || f->recs[i].vcpu == only)
			b->first[f->recs[i].vcpu + 1]++;
	for (i = 0; i < b->nv; i++) {
		b->first[i + 1] += b->first[i];
		next[i] = b->first[i];
	}
	for (i = 0; i < f->nr; i++)
		if (only < 0 || f->recs[i].vcpu == only)
			b->idx[next[f->recs[i].vcpu]++] = i;
	free(next);
	return 0;
}

#define INDENT_MAX 128u	/* deeper calls print at this indentation (depth still counts) */

static void report_calls(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
			 const struct by_vcpu *b, uint32_t v)
{
	uint64_t i, depth = 0;
	unsigned n = 0;
	char buf[32];

	fprintf(o, "vcpu %u function-call history:\n", v);
	for (i = b->first[v]; i < b->first[v + 1]; i++) {
		const struct hvtrace_rec *r = &f->recs[b->idx[i]];
		unsigned ind;

		if (!n && has_addrs(r))
			fprintf(o, "%6u  %s\n", ++n, func_name(s, r->from, buf, sizeof(buf)));
		if (is_call(r)) {
			depth++;
			ind = depth < INDENT_MAX ? (unsigned)depth : INDENT_MAX;
			fprintf(o, "%6u  %*s%s\n", ++n, (int)(2 * ind), "",
				func_name(s, r->to, buf, sizeof(buf)));
		} else if (is_ret(r) && depth) {
			depth--;
		}
	}
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
	char a[160], b[160];

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
		fprintf(o, "%10llu  0x%llx %s -> 0x%llx %s\n", (unsigned long long)p[i].count,
			(unsigned long long)p[i].from, hvt_syms_format(s, p[i].from, a, sizeof(a)),
			(unsigned long long)p[i].to, hvt_syms_format(s, p[i].to, b, sizeof(b)));
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

int report_write(FILE *o, const struct hvt_file *f, const struct hvt_syms *s,
		 const struct report_opts *opt)
{
	struct by_vcpu b;
	uint32_t v;

	if (by_vcpu_build(&b, f, opt->vcpu))
		return -1;
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
			const struct by_vcpu *b, uint32_t v, uint64_t tsc0, double scale)
{
	uint64_t i, depth = 0;
	double ts = 0;
	char a[160], buf[32];

	fprintf(o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"vCPU %u\"}}",
		v, v);
	for (i = b->first[v]; i < b->first[v + 1]; i++) {
		const struct hvtrace_rec *r = &f->recs[b->idx[i]];
		const char *inst = NULL;

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

int export_write(FILE *o, const struct hvt_file *f, const struct hvt_syms *s, const char *source)
{
	uint64_t i, tsc0 = UINT64_MAX;
	double scale = f->hdr.tsc_hz ? 1e6 / (double)f->hdr.tsc_hz : 1.0;
	struct by_vcpu b;
	uint32_t v;

	if (by_vcpu_build(&b, f, -1))
		return -1;
	for (i = 0; i < f->nr; i++)
		if (f->recs[i].tsc < tsc0)
			tsc0 = f->recs[i].tsc;
	fprintf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":");
	json_str(o, source);
	fprintf(o, ",\"tsc_hz\":%llu,\"tsc0\":%llu,\"note\":\"%s\"},\n\"traceEvents\":[\n",
		(unsigned long long)f->hdr.tsc_hz, (unsigned long long)(f->nr ? tsc0 : 0),
		f->hdr.tsc_hz ? "ts in microseconds since tsc0"
			      : "tsc_hz unknown: ts is raw TSC ticks since tsc0, not microseconds");
	fprintf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"hvtrace guest\"}}");
	for (v = 0; v < b.nv; v++)
		if (b.first[v + 1] > b.first[v])
			export_vcpu(o, f, s, &b, v, tsc0, scale);
	fprintf(o, "\n]}\n");
	by_vcpu_free(&b);
	return 0;
}
