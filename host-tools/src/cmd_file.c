/* SPDX-License-Identifier: MIT */
/* hvtrace dump, report and export: the commands that read a trace file
 * (their options here; report and export themselves in report.c). */
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
	"Without a section option, all three sections (--hot 20, --last 20). A trace\n"
	"that ends in a freeze (a crash, a trace.freeze address, an NMI) starts with its\n"
	"cause and each vCPU's last records before it (--last N of them, else 20).\n"
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

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "symbols", required_argument, NULL, 's' }, { "calls", no_argument, NULL, 'c' },
		{ "hot", required_argument, NULL, 'H' },     { "last", required_argument, NULL, 'l' },
		{ "vcpu", required_argument, NULL, 'v' },    { "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	const char *file = NULL, *symfile = NULL;
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
		case OPT_HELP: fputs(report_help, stdout); return 0;
		default: return rc ? rc : usage_error("report", "unexpected option");
		}
	}
	if ((rc = one_file(argc, argv, "report", &file)))
		return rc;
	if (!symfile)
		return usage_error("report", "--symbols SYMFILE is required");
	if (!ro.calls && !ro.hot && !ro.last) {
		ro.calls = 1;
		ro.hot = 20;
		ro.last = 20;
	}
	if ((rc = load_symbols(&syms, symfile)))
		return rc;
	if ((rc = open_trace(&f, file))) {
		hvt_syms_free(&syms);
		return rc;
	}
	for (i = 0; ro.vcpu >= 0 && i < f.nr && f.recs[i].vcpu != ro.vcpu; i++)
		;
	if (ro.vcpu >= 0 && i == f.nr)
		warn(file, "no records of vcpu %lld", (long long)ro.vcpu);
	if (report_write(stdout, &f, &syms, &ro))
		rc = fail("report", "out of memory");
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

int cmd_export(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "perfetto", required_argument, NULL, 'p' }, { "symbols", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, OPT_HELP }, { 0 },
	};
	const char *file = NULL, *symfile = NULL, *out = NULL;
	struct hvt_syms syms;
	struct hvt_file f;
	int opt, rc = 0;
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
	o = fopen(out, "w");
	if (!o) {
		rc = fail(out, "cannot write: fopen failed");
		goto out_file;
	}
	if (!f.hdr.tsc_hz)
		warn(file, "tsc_hz is 0: timestamps are raw TSC ticks shown as microseconds");
	if (export_write(o, &f, symfile ? &syms : NULL, file))
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
