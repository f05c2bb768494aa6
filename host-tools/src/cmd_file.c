/* SPDX-License-Identifier: MIT */
/* hvtrace dump, report and export: the commands that read a trace file. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The one positional FILE of dump/report/export. */
static int one_file(int argc, char **argv, const char *cmd, const char **file)
{
	if (optind >= argc)
		return usage_error(cmd, "a trace FILE is required");
	if (optind + 1 < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	*file = argv[optind];
	return 0;
}

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

/* ---------------------------------------------------------------- */

static const char dump_help[] =
	"usage: hvtrace dump FILE [--json] [--symbols SYMFILE]\n"
	"One line per record of a trace file:\n"
	"  text: TSC VCPU KIND FROM -> TO cpl F->T AUX   (AUX: branch type, vector ...)\n"
	"        TSC VCPU marker NAME VALUE\n"
	"        TSC VCPU lost N records (first at tsc T)\n"
	"  --json: one JSON object per line ({\"tsc\":..,\"vcpu\":..,\"kind\":\"branch\",...})\n"
	"  --symbols SYMFILE: addresses as func+0xoff (ELF or System.map/kallsyms)\n";

int cmd_dump(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "symbols", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, OPT_HELP }, { 0 },
	};
	const char *file = NULL, *symfile = NULL;
	struct hvt_syms syms;
	struct hvt_file f;
	static char obuf[1 << 20];
	int opt, json = 0, rc = 0;
	uint64_t i;

	optind = 1;
	while ((opt = next_opt(argc, argv, "dump", ":h", lo, &rc)) != -1) {
		switch (opt) {
		case 'j': json = 1; break;
		case 's': symfile = optarg; break;
		case OPT_HELP: fputs(dump_help, stdout); return 0;
		default: return rc ? rc : usage_error("dump", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "dump", &file)))
		return rc;
	if (symfile && (rc = load_symbols(&syms, symfile)))
		return rc;
	if ((rc = open_trace(&f, file))) {
		if (symfile)
			hvt_syms_free(&syms);
		return rc;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	for (i = 0; i < f.nr; i++) {
		if (json)
			print_rec_json(stdout, &f.recs[i], symfile ? &syms : NULL);
		else
			print_rec_text(stdout, &f.recs[i], symfile ? &syms : NULL);
	}
	fflush(stdout);
	hvt_file_close(&f);
	if (symfile)
		hvt_syms_free(&syms);
	return ferror(stdout) ? fail("dump", "writing the output failed") : 0;
}

/* ---------------------------------------------------------------- */

static const char report_help[] =
	"usage: hvtrace report FILE --symbols SYMFILE [--calls] [--hot N] [--last N] [--vcpu N]\n"
	"Without a section option, all three sections (--hot 20, --last 20).\n"
	"  --calls     per vCPU, the function-call history: a numbered line each time a\n"
	"              CALL enters a function (and the function the trace starts in),\n"
	"              indented two spaces per call depth; RET pops a level:\n"
	"                vcpu N function-call history:\n"
	"                     1  main\n"
	"                     2    f1\n"
	"  --hot N     the N most frequent from -> to branch pairs, with counts\n"
	"  --last N    per vCPU, its last N records, oldest first (the branches before\n"
	"              a crash)\n"
	"  --vcpu N    only vCPU N\n"
	"  --symbols   an ELF with a symbol table, or a System.map / kallsyms map\n";

#define MAX_VCPUS 0x10000u
#define INDENT_MAX 128u	/* deeper calls print at this indentation (depth still counts) */

static void report_calls(const struct hvt_file *f, const struct hvt_syms *s, uint32_t v)
{
	uint64_t i, depth = 0;
	unsigned n = 0;
	char buf[32];

	printf("vcpu %u function-call history:\n", v);
	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];
		unsigned ind;

		if (r->vcpu != v)
			continue;
		if (!n && has_addrs(r))
			printf("%6u  %s\n", ++n, func_name(s, r->from, buf, sizeof(buf)));
		if (is_call(r)) {
			depth++;
			ind = depth < INDENT_MAX ? (unsigned)depth : INDENT_MAX;
			printf("%6u  %*s%s\n", ++n, (int)(2 * ind), "", func_name(s, r->to, buf, sizeof(buf)));
		} else if (is_ret(r) && depth) {
			depth--;
		}
	}
}

struct pair {
	uint64_t from, to, count;
};

static uint64_t pair_hash(uint64_t from, uint64_t to)
{
	uint64_t h = from * 0x9e3779b97f4a7c15ull ^ (to + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 29);
}

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static int report_hot(const struct hvt_file *f, const struct hvt_syms *s, uint64_t top, int64_t vcpu)
{
	uint64_t cap = 1024, used = 0, branches = 0, i, k;
	struct pair *t = calloc(cap, sizeof(*t));
	char a[160], b[160];

	if (!t)
		return fail("report", "out of memory");
	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];
		uint64_t h;

		if ((r->kind != HVTRACE_REC_BRANCH && r->kind != HVTRACE_REC_FAR) ||
		    (vcpu >= 0 && r->vcpu != vcpu))
			continue;
		branches++;
		if (2 * (used + 1) > cap) {	/* grow, rehash */
			struct pair *n = calloc(cap * 2, sizeof(*n));

			if (!n) {
				free(t);
				return fail("report", "out of memory");
			}
			for (k = 0; k < cap; k++) {
				if (!t[k].count)
					continue;
				h = pair_hash(t[k].from, t[k].to) & (cap * 2 - 1);
				while (n[h].count)
					h = (h + 1) & (cap * 2 - 1);
				n[h] = t[k];
			}
			free(t);
			t = n;
			cap *= 2;
		}
		h = pair_hash(r->from, r->to) & (cap - 1);
		while (t[h].count && (t[h].from != r->from || t[h].to != r->to))
			h = (h + 1) & (cap - 1);
		if (!t[h].count) {
			t[h].from = r->from;
			t[h].to = r->to;
			used++;
		}
		t[h].count++;
	}
	for (i = 0, k = 0; i < cap; i++)
		if (t[i].count)
			t[k++] = t[i];
	qsort(t, k, sizeof(*t), cmp_pair);
	printf("hot branches: top %llu of %llu distinct from -> to pairs (%llu branch records)\n",
	       (unsigned long long)(top < k ? top : k), (unsigned long long)k,
	       (unsigned long long)branches);
	for (i = 0; i < k && i < top; i++)
		printf("%10llu  0x%llx %s -> 0x%llx %s\n", (unsigned long long)t[i].count,
		       (unsigned long long)t[i].from, hvt_syms_format(s, t[i].from, a, sizeof(a)),
		       (unsigned long long)t[i].to, hvt_syms_format(s, t[i].to, b, sizeof(b)));
	free(t);
	return 0;
}

static int report_last(const struct hvt_file *f, const struct hvt_syms *s, uint32_t v, uint64_t last)
{
	uint64_t *idx = malloc((last ? last : 1) * sizeof(*idx)), n = 0, i;

	if (!idx)
		return fail("report", "out of memory");
	for (i = 0; i < f->nr; i++)
		if (f->recs[i].vcpu == v)
			idx[n++ % last] = i;
	printf("vcpu %u last %llu records:\n", v, (unsigned long long)(n < last ? n : last));
	for (i = n > last ? n - last : 0; i < n; i++)
		print_rec_text(stdout, &f->recs[idx[i % last]], s);
	free(idx);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "symbols", required_argument, NULL, 's' }, { "calls", no_argument, NULL, 'c' },
		{ "hot", required_argument, NULL, 'H' },     { "last", required_argument, NULL, 'l' },
		{ "vcpu", required_argument, NULL, 'v' },    { "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	const char *file = NULL, *symfile = NULL;
	uint64_t hot = 0, last = 0, v;
	int64_t vcpu = -1;
	int opt, rc = 0, calls = 0;
	struct hvt_syms syms;
	struct hvt_file f;
	uint8_t *seen;
	uint64_t i;

	optind = 1;
	while ((opt = next_opt(argc, argv, "report", ":h", lo, &rc)) != -1) {
		switch (opt) {
		case 's': symfile = optarg; break;
		case 'c': calls = 1; break;
		case 'H':
			if (parse_u64(optarg, &hot) || !hot || hot > 1000000000)
				return usage_error("report", "--hot takes a count > 0, not '%s'", optarg);
			break;
		case 'l':
			if (parse_u64(optarg, &last) || !last || last > 100000000)
				return usage_error("report", "--last takes a count > 0, not '%s'", optarg);
			break;
		case 'v':
			if (parse_u64(optarg, &v) || v >= MAX_VCPUS)
				return usage_error("report", "--vcpu takes a vCPU number 0..65535, not '%s'",
						   optarg);
			vcpu = (int64_t)v;
			break;
		case OPT_HELP: fputs(report_help, stdout); return 0;
		default: return rc ? rc : usage_error("report", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "report", &file)))
		return rc;
	if (!symfile)
		return usage_error("report", "--symbols SYMFILE is required");
	if (!calls && !hot && !last) {
		calls = 1;
		hot = 20;
		last = 20;
	}
	if ((rc = load_symbols(&syms, symfile)))
		return rc;
	if ((rc = open_trace(&f, file))) {
		hvt_syms_free(&syms);
		return rc;
	}
	seen = calloc(MAX_VCPUS, 1);
	if (!seen) {
		rc = fail("report", "out of memory");
		goto out;
	}
	for (i = 0; i < f.nr; i++)
		seen[f.recs[i].vcpu] = 1;
	if (vcpu >= 0 && !seen[vcpu])
		warn(file, "no records of vcpu %lld", (long long)vcpu);
	if (calls)
		for (v = 0; v < MAX_VCPUS; v++)
			if (seen[v] && (vcpu < 0 || (uint64_t)vcpu == v))
				report_calls(&f, &syms, (uint32_t)v);
	if (hot && (rc = report_hot(&f, &syms, hot, vcpu)))
		goto out;
	if (last)
		for (v = 0; v < MAX_VCPUS && !rc; v++)
			if (seen[v] && (vcpu < 0 || (uint64_t)vcpu == v))
				rc = report_last(&f, &syms, (uint32_t)v, last);
out:
	free(seen);
	hvt_file_close(&f);
	hvt_syms_free(&syms);
	fflush(stdout);
	return rc;
}

/* ---------------------------------------------------------------- */

static const char export_help[] =
	"usage: hvtrace export FILE --perfetto OUT.json [--symbols SYMFILE]\n"
	"Writes Chrome trace-event JSON (opens in ui.perfetto.dev): one thread per vCPU\n"
	"(tid = vcpu), a slice per call (B at CALL, E at RET, named by symbol),\n"
	"interrupts, exceptions, markers and lost records as instant events.\n"
	"Timestamps in microseconds from the first record (TSC / tsc_hz); with\n"
	"tsc_hz 0 the raw TSC ticks stand in for microseconds (noted in the file).\n";

static void export_vcpu(FILE *o, const struct hvt_file *f, const struct hvt_syms *s, uint32_t v,
			uint64_t tsc0, double scale, int *first)
{
	uint64_t i, depth = 0;
	double ts = 0;
	char a[160], b[32];

	fprintf(o, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"vCPU %u\"}}",
		*first ? "" : ",\n", v, v);
	*first = 0;
	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];
		const char *inst = NULL;

		if (r->vcpu != v)
			continue;
		ts = (double)(r->tsc >= tsc0 ? r->tsc - tsc0 : 0) * scale;
		if (is_call(r)) {
			fprintf(o, ",\n{\"name\":");
			json_str(o, func_name(s, r->to, b, sizeof(b)));
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

int cmd_export(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "perfetto", required_argument, NULL, 'p' }, { "symbols", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, OPT_HELP }, { 0 },
	};
	const char *file = NULL, *symfile = NULL, *out = NULL;
	struct hvt_syms syms;
	struct hvt_file f;
	uint64_t i, tsc0 = UINT64_MAX;
	double scale;
	int opt, rc = 0, first = 1;
	uint8_t *seen;
	FILE *o;

	optind = 1;
	while ((opt = next_opt(argc, argv, "export", ":h", lo, &rc)) != -1) {
		switch (opt) {
		case 'p': out = optarg; break;
		case 's': symfile = optarg; break;
		case OPT_HELP: fputs(export_help, stdout); return 0;
		default: return rc ? rc : usage_error("export", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "export", &file)))
		return rc;
	if (!out)
		return usage_error("export", "--perfetto OUT.json is required");
	if (symfile && (rc = load_symbols(&syms, symfile)))
		return rc;
	if ((rc = open_trace(&f, file)))
		goto out_syms;
	seen = calloc(MAX_VCPUS, 1);
	o = seen ? fopen(out, "w") : NULL;
	if (!o) {
		rc = fail(out, "cannot write: %s", seen ? "fopen failed" : "out of memory");
		free(seen);
		goto out_file;
	}
	for (i = 0; i < f.nr; i++) {
		seen[f.recs[i].vcpu] = 1;
		if (f.recs[i].tsc < tsc0)
			tsc0 = f.recs[i].tsc;
	}
	scale = f.hdr.tsc_hz ? 1e6 / (double)f.hdr.tsc_hz : 1.0;
	if (!f.hdr.tsc_hz)
		warn(file, "tsc_hz is 0: timestamps are raw TSC ticks shown as microseconds");
	fprintf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":");
	json_str(o, file);
	fprintf(o, ",\"tsc_hz\":%llu,\"tsc0\":%llu,\"note\":\"%s\"},\n\"traceEvents\":[\n",
		(unsigned long long)f.hdr.tsc_hz, (unsigned long long)(f.nr ? tsc0 : 0),
		f.hdr.tsc_hz ? "ts in microseconds since tsc0"
			     : "tsc_hz unknown: ts is raw TSC ticks since tsc0, not microseconds");
	fprintf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"hvtrace guest\"}}");
	first = 0;
	for (i = 0; i < MAX_VCPUS; i++)
		if (seen[i])
			export_vcpu(o, &f, symfile ? &syms : NULL, (uint32_t)i, tsc0, scale, &first);
	fprintf(o, "\n]}\n");
	if (fclose(o))
		rc = fail(out, "write failed");
	free(seen);
out_file:
	hvt_file_close(&f);
out_syms:
	if (symfile)
		hvt_syms_free(&syms);
	return rc;
}
