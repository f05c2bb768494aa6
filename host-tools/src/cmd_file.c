/* SPDX-License-Identifier: MIT */
/* hvtrace dump, report and export: the commands that read a trace file
 * (their options here; report and export themselves in report.c). */
#include <errno.h>
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

/* ---------------------------------------------------------------- */

static const char dump_help[] =
	"usage: hvtrace dump FILE [--json] [--symbols SYMFILE]\n"
	"One line per record of a trace file:\n"
	"  text: TSC VCPU KIND FROM -> TO cpl F->T AUX   (AUX: branch type, vector ...)\n"
	"        TSC VCPU marker NAME VALUE\n"
	"        TSC VCPU lost N records (first at tsc T)\n"
	"  --json: one JSON object per line ({\"tsc\":..,\"vcpu\":..,\"kind\":\"branch\",...})\n"
	"  --symbols SYMFILE: addresses as func+0xoff (ELF or System.map/kallsyms);\n"
	"    default: FILE.map beside the trace, when there is one\n";

int cmd_dump(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "symbols", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, OPT_HELP }, { 0 },
	};
	const char *file = NULL, *symfile = NULL;
	char mapbuf[4096];
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
	symfile = default_symbols(file, symfile, mapbuf, sizeof(mapbuf));
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
	"usage: hvtrace report FILE [--symbols SYMFILE] [--calls] [--hot N] [--last N]\n"
	"                           [--before WHERE | --around WHERE] [--vcpu N]\n"
	"Without a section option, all three sections (--hot 20, --last 20). A trace\n"
	"that ends in a freeze (a crash, a trace.freeze address, an NMI) starts with its\n"
	"cause and each vCPU's last records before it (--last N of them, else 20).\n"
	"  --calls     per vCPU, the function-call history: a numbered line each time a\n"
	"              CALL enters a function (and the function the trace starts in),\n"
	"              indented two spaces per call depth; RET pops a level:\n"
	"                vcpu N function-call history:\n"
	"                     1  main\n"
	"                     2    f1\n"
	"              (looks through __fentry__, retpoline and return thunks)\n"
	"  --hot N     the N most frequent from -> to branch pairs, with counts\n"
	"  --last N    per vCPU, its last N records, oldest first (the branches before\n"
	"              a crash)\n"
	"  --before WHERE  per vCPU, the records up to the first one that goes to WHERE\n"
	"              (a symbol, needs symbols; or 0xADDR): --last N of them, else 20\n"
	"  --around WHERE  the same, and as many after it\n"
	"  --vcpu N    only vCPU N\n"
	"  --symbols   an ELF with a symbol table, or a System.map / kallsyms map;\n"
	"              default: FILE.map beside the trace when there is one, else\n"
	"              addresses stay raw\n";

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "symbols", required_argument, NULL, 's' }, { "calls", no_argument, NULL, 'c' },
		{ "hot", required_argument, NULL, 'H' },     { "last", required_argument, NULL, 'l' },
		{ "vcpu", required_argument, NULL, 'v' },    { "help", no_argument, NULL, OPT_HELP },
		{ "before", required_argument, NULL, 'b' },  { "around", required_argument, NULL, 'a' },
		{ 0 },
	};
	const char *file = NULL, *symfile = NULL, *where = NULL;
	char mapbuf[4096];
	struct report_opts ro = { .vcpu = -1 };
	int opt, rc = 0;
	struct hvt_syms syms;
	struct hvt_file f;
	uint64_t i, v;

	optind = 1;
	while ((opt = next_opt(argc, argv, "report", ":h", lo, &rc)) != -1) {
		switch (opt) {
		case 's': symfile = optarg; break;
		case 'c': ro.calls = 1; break;
		case 'H':
			if (parse_u64(optarg, &ro.hot) || !ro.hot || ro.hot > 1000000000)
				return usage_error("report", "--hot takes a count > 0, not '%s'", optarg);
			break;
		case 'l':
			if (parse_u64(optarg, &ro.last) || !ro.last || ro.last > 100000000)
				return usage_error("report", "--last takes a count > 0, not '%s'", optarg);
			break;
		case 'v':
			if (parse_u64(optarg, &v) || v >= MAX_VCPUS)
				return usage_error("report", "--vcpu takes a vCPU number 0..65535, not '%s'",
						   optarg);
			ro.vcpu = (int64_t)v;
			break;
		case 'b':
		case 'a':
			if (where)
				return usage_error("report", "--before and --around take one place between them");
			where = optarg;
			ro.around = opt == 'a';
			break;
		case OPT_HELP: fputs(report_help, stdout); return 0;
		default: return rc ? rc : usage_error("report", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "report", &file)))
		return rc;
	symfile = default_symbols(file, symfile, mapbuf, sizeof(mapbuf));
	if (where && !(where[0] == '0' && (where[1] == 'x' || where[1] == 'X')) && !symfile)
		return usage_error("report", "--%s %s: a symbol needs symbols (--symbols, or FILE.map beside the trace; or give 0xADDR)",
				   ro.around ? "around" : "before", where);
	if (where && (where[0] == '0' && (where[1] == 'x' || where[1] == 'X')) && parse_u64(where, &ro.where))
		return usage_error("report", "--%s: '%s' is not an address", ro.around ? "around" : "before", where);
	if (!ro.calls && !ro.hot && !ro.last && !where) {
		ro.calls = 1;
		ro.hot = 20;
		ro.last = 20;
	}
	memset(&syms, 0, sizeof(syms));
	if (symfile && (rc = load_symbols(&syms, symfile)))
		return rc;
	if (where && !(where[0] == '0' && (where[1] == 'x' || where[1] == 'X'))) {
		const struct hvt_sym *sym = hvt_syms_find(&syms, where);
		if (!sym) {
			hvt_syms_free(&syms);
			return fail("report", "--%s: no symbol '%s' in %s", ro.around ? "around" : "before",
				    where, symfile);
		}
		ro.where = sym->addr;
	}
	ro.has_where = where != NULL;
	if ((rc = open_trace(&f, file))) {
		hvt_syms_free(&syms);
		return rc;
	}
	for (i = 0; ro.vcpu >= 0 && i < f.nr && f.recs[i].vcpu != ro.vcpu; i++)
		;
	if (ro.vcpu >= 0 && i == f.nr)
		warn(file, "no records of vcpu %lld", (long long)ro.vcpu);
	if (report_write(stdout, &f, symfile ? &syms : NULL, &ro))
		rc = fail("report", "out of memory");
	hvt_file_close(&f);
	hvt_syms_free(&syms);
	fflush(stdout);
	return rc;
}

/* ---------------------------------------------------------------- */

static const char export_help[] =
	"usage: hvtrace export FILE (--perfetto OUT.json | --perf OUT.data | --uftrace DIR)\n"
	"                      [--symbols SYMFILE] [--from P] [--to P] [--vcpu N]\n"
	"Writes the trace for another tool (one format a run):\n"
	"  --perfetto OUT.json  Chrome trace-event JSON (ui.perfetto.dev): one thread per\n"
	"              vCPU (tid = vcpu), a slice per call (B at CALL, E at RET, named by\n"
	"              symbol), interrupts, exceptions, markers and lost records as\n"
	"              instant events. About 30-40 MB per million records.\n"
	"  --perf OUT.data  a perf.data for Linux's perf: a branch sample per branch,\n"
	"              interrupt and exception (ip = from, addr = to, cpu = vCPU, tid =\n"
	"              vCPU + 1), LOST records as perf's lost samples. With symbols, also\n"
	"              OUT.data.kallsyms, for perf's --kallsyms:\n"
	"                perf script -i OUT.data --kallsyms OUT.data.kallsyms \\\n"
	"                    -F cpu,time,ip,sym,addr\n"
	"  --uftrace DIR  a uftrace data directory (DIR new or empty): the call history\n"
	"              of report --calls, a task per vCPU (tid = vCPU + 1):\n"
	"                uftrace replay -d DIR\n"
	"Timestamps from the first record (TSC / tsc_hz); with tsc_hz 0 the raw TSC\n"
	"ticks stand in for microseconds (perfetto) or nanoseconds (perf, uftrace).\n"
	"Symbols: --symbols SYMFILE, else FILE.map beside the trace when there is one.\n"
	"  --from P, --to P  only records from P (inclusive) to P (exclusive): a record\n"
	"              index in dump's timeline, or a time from the first record (1.5s,\n"
	"              200ms, 30us; --to a time is inclusive)\n"
	"  --vcpu N    only vCPU N\n"
	"Details, and which perf and uftrace commands read the output: docs/host-tools.md.\n";

int parse_point(const char *s, uint64_t *v, int *is_time)
{
	char *end;
	double d;
	size_t n = strlen(s);

	*is_time = 0;
	if (n > 2 && (!strcmp(s + n - 2, "ms") || !strcmp(s + n - 2, "us")))
		*is_time = s[n - 2] == 'm' ? 1000 : 1;
	else if (n > 1 && s[n - 1] == 's')
		*is_time = 1000000;
	if (!*is_time)
		return parse_u64(s, v);
	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || (size_t)(end - s) != n - (*is_time == 1000000 ? 1 : 2) || d < 0 || d > 1e12)
		return -1;
	*v = (uint64_t)(d * *is_time);
	return 0;
}

/* --perf and --uftrace, over the checked file. */
static int export_other(const char *file, const char *perf, const char *uftrace, const struct hvt_file *f,
			const struct hvt_syms *s, const struct export_opts *eo)
{
	struct export_stats st;
	struct hvt_err err;
	char ks[4096];

	if (!f->hdr.tsc_hz)
		warn(file, "tsc_hz is 0: timestamps are raw TSC ticks shown as nanoseconds");
	if (perf) {
		if ((size_t)snprintf(ks, sizeof(ks), "%s.kallsyms", perf) >= sizeof(ks))
			return usage_error("export", "--perf: path too long");
		if (export_perf(perf, s ? ks : NULL, f, s, eo, &st, &err))
			return fail("export", "%s", err.msg);
		fprintf(stderr, "hvtrace export: %llu samples, %llu vCPUs%s -> %s",
			(unsigned long long)st.samples, (unsigned long long)st.tasks,
			st.lost ? ", lost records" : "", perf);
		if (s)
			fprintf(stderr, " (symbols: perf ... --kallsyms %s)\n", ks);
		else
			fprintf(stderr, " (no symbols: addresses stay raw)\n");
		return 0;
	}
	if (export_uftrace(uftrace, file, f, s, eo, &st, &err))
		return fail("export", "%s", err.msg);
	fprintf(stderr, "hvtrace export: %llu function entries, %llu vCPUs as tasks -> %s (uftrace replay -d %s)\n",
		(unsigned long long)st.entries, (unsigned long long)st.tasks, uftrace, uftrace);
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "perfetto", required_argument, NULL, 'p' }, { "symbols", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'f' },     { "to", required_argument, NULL, 't' },
		{ "vcpu", required_argument, NULL, 'v' },     { "help", no_argument, NULL, OPT_HELP },
		{ "perf", required_argument, NULL, 'P' },     { "uftrace", required_argument, NULL, 'u' },
		{ 0 },
	};
	const char *file = NULL, *symfile = NULL, *out = NULL, *from = NULL, *to = NULL;
	const char *perf = NULL, *uftrace = NULL;
	char mapbuf[4096];
	struct export_opts eo = EXPORT_ALL;
	struct hvt_syms syms;
	struct hvt_file f;
	int opt, rc = 0, from_time = 0, to_time = 0;
	uint64_t from_v = 0, to_v = 0, v;
	FILE *o;

	optind = 1;
	while ((opt = next_opt(argc, argv, "export", ":h", lo, &rc)) != -1) {
		switch (opt) {
		case 'p': out = optarg; break;
		case 'P': perf = optarg; break;
		case 'u': uftrace = optarg; break;
		case 's': symfile = optarg; break;
		case 'f':
			from = optarg;
			if (parse_point(optarg, &from_v, &from_time))
				return usage_error("export", "--from: '%s' is not a record index or a time (1.5s, 200ms, 30us)", optarg);
			break;
		case 't':
			to = optarg;
			if (parse_point(optarg, &to_v, &to_time))
				return usage_error("export", "--to: '%s' is not a record index or a time (1.5s, 200ms, 30us)", optarg);
			break;
		case 'v':
			if (parse_u64(optarg, &v) || v >= MAX_VCPUS)
				return usage_error("export", "--vcpu takes a vCPU number 0..65535, not '%s'", optarg);
			eo.vcpu = (int64_t)v;
			break;
		case OPT_HELP: fputs(export_help, stdout); return 0;
		default: return rc ? rc : usage_error("export", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "export", &file)))
		return rc;
	symfile = default_symbols(file, symfile, mapbuf, sizeof(mapbuf));
	if (!!out + !!perf + !!uftrace != 1)
		return usage_error("export", "give one of --perfetto OUT.json, --perf OUT.data and --uftrace DIR");
	if (from && to && from_time == to_time && to_v < from_v)
		return usage_error("export", "--to %s comes before --from %s", to, from);
	if (symfile && (rc = load_symbols(&syms, symfile)))
		return rc;
	if ((rc = open_trace(&f, file)))
		goto out_syms;
	if ((from_time || to_time) && !f.hdr.tsc_hz) {
		rc = fail(file, "tsc_hz is 0: --from/--to take record indices here, not times");
		goto out_file;
	}
	if (from || to) {
		uint64_t t0 = f.nr ? f.recs[0].tsc : 0, i;
		for (i = 0; i < f.nr; i++)
			if (f.recs[i].tsc < t0)
				t0 = f.recs[i].tsc;
		/* microseconds to TSC ticks from the first record */
		if (from && from_time)
			eo.from_tsc = t0 + (uint64_t)((double)from_v * (double)f.hdr.tsc_hz / 1e6);
		else if (from)
			eo.from_idx = from_v;
		if (to && to_time)
			eo.to_tsc = t0 + (uint64_t)((double)to_v * (double)f.hdr.tsc_hz / 1e6);
		else if (to)
			eo.to_idx = to_v;
	}
	if (perf || uftrace) {
		rc = export_other(file, perf, uftrace, &f, symfile ? &syms : NULL, &eo);
		goto out_file;
	}
	o = fopen(out, "w");
	if (!o) {
		rc = fail(out, "cannot write: %s", strerror(errno));
		goto out_file;
	}
	if (!f.hdr.tsc_hz)
		warn(file, "tsc_hz is 0: timestamps are raw TSC ticks shown as microseconds");
	if (export_write(o, &f, symfile ? &syms : NULL, file, &eo))
		rc = fail("export", "out of memory");
	if (fclose(o) && !rc)
		rc = fail(out, "write failed");
out_file:
	hvt_file_close(&f);
out_syms:
	if (symfile)
		hvt_syms_free(&syms);
	return rc;
}

/* ---------------------------------------------------------------- */

static const char symbols_help[] =
	"usage: hvtrace symbols LOG -o MAP\n"
	"Takes the running kernel's symbols that `hvtrace-agent symbols` printed in the\n"
	"guest (its output on a console the host captured, e.g. QEMU's -serial file:LOG)\n"
	"and writes them as a System.map-style MAP for --symbols: the last complete\n"
	"HVTRACE-KSYMS-BEGIN ... HVTRACE-KSYMS-END block of LOG, decoded and checked.\n"
	"The addresses are the kernel's as it ran (KASLR included, modules too), so the\n"
	"map fits traces of that boot.\n";

/* The kernel's base (KASLR's choice): the `ADDR T _text` line of a map
 * (the parsed symbols keep one name per address, and _text shares its
 * address with _stext), or NULL. */
static const char *text_line(const char *map, size_t len)
{
	const char *p = map, *end = map + len, *nl;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (nl - p >= 24 && !memcmp(p + 16, " T _text", 8) && (nl - p == 24 || p[24] == '\r'))
			return p;
	}
	return NULL;
}

int cmd_symbols(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, OPT_HELP }, { 0 },
	};
	const char *file = NULL, *out = NULL;
	struct hvt_err err;
	struct hvt_syms syms;
	char *log, *map, tmp[4096];
	size_t len, map_len, n_mod = 0, i;
	int opt, rc = 0;
	FILE *o;

	optind = 1;
	while ((opt = next_opt(argc, argv, "symbols", ":ho:", lo, &rc)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case OPT_HELP: fputs(symbols_help, stdout); return 0;
		default: return rc ? rc : usage_error("symbols", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "symbols", &file)))
		return rc;
	if (!out)
		return usage_error("symbols", "-o MAP is required");
	log = hvt_read_file(file, &len, &err);
	if (!log)
		return fail("symbols", "%s", err.msg);
	rc = hvt_ksyms_from_log(log, len, &map, &map_len, &err);
	free(log);
	if (rc)
		return fail(file, "%s", err.msg);
	if (hvt_syms_parse_map(&syms, map, map_len, &err)) {	/* checked already: cannot fail */
		free(map);
		return fail(file, "%s", err.msg);
	}
	for (i = 0; i < map_len; i++)
		n_mod += map[i] == '[';
	/* written whole, then renamed over MAP */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= sizeof(tmp)) {
		rc = usage_error("symbols", "-o: path too long");
		goto done;
	}
	o = fopen(tmp, "w");
	if (!o || fwrite(map, 1, map_len, o) != map_len || fclose(o) || rename(tmp, out)) {
		rc = fail(out, "cannot write the map");
		if (o)
			remove(tmp);
		goto done;
	}
	{
		const char *t = text_line(map, map_len);
		fprintf(stderr, "hvtrace symbols: %zu functions (%zu in modules)", syms.n, n_mod);
		if (t)
			fprintf(stderr, ", _text at 0x%.16s", t);
		fprintf(stderr, " -> %s\n", out);
	}
done:
	hvt_syms_free(&syms);
	free(map);
	return rc;
}
