/* SPDX-License-Identifier: MIT */
/*
 * hvtrace: the host's command for the export channel and trace files
 * (docs/host-tools.md). main() picks the subcommand; the helpers here are
 * the ones every subcommand uses: messages, exit codes, opening inputs,
 * printing a record.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: hvtrace COMMAND [OPTIONS]\n"
	"\n"
	"Commands:\n"
	"  status   (--shm PATH | --dump FILE) [--json]   the channel and its rings\n"
	"  record   --shm PATH -o FILE [--rate N] [--idle-exit SEC] [--quiet]\n"
	"                                                 drain the lossless rings into FILE\n"
	"  snapshot (--shm PATH | --dump FILE) -o FILE    the flight recorder into FILE\n"
	"  dump     FILE [--json] [--symbols SYMFILE]     one line per record\n"
	"  report   FILE --symbols SYMFILE [--calls] [--hot N] [--last N] [--vcpu N]\n"
	"  export   FILE --perfetto OUT.json [--symbols SYMFILE]\n"
	"\n"
	"`hvtrace COMMAND --help` describes one. SYMFILE: an ELF with a symbol table,\n"
	"or a System.map / /proc/kallsyms text map.\n"
	"Exit status: 0 done, 1 bad input or data, 2 usage error.\n";

int fail(const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvtrace: %s: ", what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_DATA;
}

void warn(const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvtrace: warning: %s: ", what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvtrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(try `hvtrace %s --help`)\n", cmd);
	return EXIT_USAGE;
}

int next_opt(int argc, char **argv, const char *cmd, const char *shortopts,
	     const struct option *lo, int *rc)
{
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, lo, NULL);
	if (c == '?')
		*rc = usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	else if (c == ':')
		*rc = usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	return c;
}

int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

int parse_name(const char *s, const char *(*name)(unsigned), unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (name(i) && !strcmp(name(i), s))
			return (int)i;
	return -1;
}

int open_channel(struct hvt_chan *ch, const char *cmd, const char *shm, const char *dump)
{
	struct hvt_err err;

	if (!shm == !dump)
		return usage_error(cmd, "give exactly one of --shm PATH and --dump FILE");
	if (shm ? hvt_chan_open_shm(ch, shm, &err) : hvt_chan_open_dump(ch, dump, &err))
		return fail(shm ? shm : dump, "%s", err.msg);
	return 0;
}

int open_trace(struct hvt_file *f, const char *path)
{
	struct hvt_err err;

	if (hvt_file_open(f, path, &err))
		return fail("trace file", "%s", err.msg);
	if (hvt_file_check_records(f, &err)) {
		hvt_file_close(f);
		return fail(path, "%s", err.msg);
	}
	if (!(f->hdr.flags & HVTRACE_FILE_COMPLETE))
		warn(path, "not finalized (its writer did not finish); %llu records by its length%s",
		     (unsigned long long)f->nr, f->partial ? ", a trailing partial record ignored" : "");
	return 0;
}

int load_symbols(struct hvt_syms *s, const char *path)
{
	struct hvt_err err;

	if (hvt_syms_load(s, path, &err))
		return fail("symbols", "%s", err.msg);
	return 0;
}

void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static const char *addr_str(const struct hvt_syms *syms, uint64_t a, char *buf, size_t len)
{
	if (syms)
		return hvt_syms_format(syms, a, buf, len);
	snprintf(buf, len, "0x%llx", (unsigned long long)a);
	return buf;
}

void print_rec_text(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms)
{
	char from[160], to[160];
	const struct hvt_syms *s = r->kind == HVTRACE_REC_CR3 ? NULL : syms;

	fprintf(out, "%llu %u %s ", (unsigned long long)r->tsc, r->vcpu, hvt_kind_name(r->kind));
	switch (r->kind) {
	case HVTRACE_REC_MARKER:
		/* start and crash markers carry an address: where it began or broke */
		if (r->aux == HVTRACE_MARK_START || r->aux == HVTRACE_MARK_CRASH)
			fprintf(out, "%s %s\n", hvt_marker_name(r->aux), addr_str(s, r->from, from, sizeof(from)));
		else
			fprintf(out, "%s 0x%llx\n", hvt_marker_name(r->aux), (unsigned long long)r->from);
		return;
	case HVTRACE_REC_LOST:
		fprintf(out, "%llu records (first at tsc %llu)\n", (unsigned long long)r->from,
			(unsigned long long)r->to);
		return;
	}
	fprintf(out, "%s -> %s cpl %u->%u", addr_str(s, r->from, from, sizeof(from)),
		addr_str(s, r->to, to, sizeof(to)), HVTRACE_INFO_FROM_CPL(r->info),
		HVTRACE_INFO_TO_CPL(r->info));
	switch (r->kind) {
	case HVTRACE_REC_BRANCH:
	case HVTRACE_REC_FAR:
		fprintf(out, " %s\n", hvt_branch_type_name(r->aux));
		break;
	case HVTRACE_REC_INTERRUPT:
		fprintf(out, " vector 0x%x%s\n", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_NMI ? " nmi" : "");
		break;
	case HVTRACE_REC_EXCEPTION:
		fprintf(out, " vector %u%s\n", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_SOFT ? " soft" : "");
		break;
	default:
		fputc('\n', out);
	}
}

void print_rec_json(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms)
{
	char buf[160];

	fprintf(out, "{\"tsc\":%llu,\"vcpu\":%u,\"kind\":\"%s\"", (unsigned long long)r->tsc, r->vcpu,
		hvt_kind_name(r->kind));
	switch (r->kind) {
	case HVTRACE_REC_MARKER:
		fprintf(out, ",\"marker\":\"%s\",\"value\":\"0x%llx\"}\n", hvt_marker_name(r->aux),
			(unsigned long long)r->from);
		return;
	case HVTRACE_REC_LOST:
		fprintf(out, ",\"count\":%llu,\"first_tsc\":%llu}\n", (unsigned long long)r->from,
			(unsigned long long)r->to);
		return;
	case HVTRACE_REC_BRANCH:
	case HVTRACE_REC_FAR:
		fprintf(out, ",\"type\":\"%s\"", hvt_branch_type_name(r->aux));
		break;
	case HVTRACE_REC_INTERRUPT:
		fprintf(out, ",\"vector\":%u,\"nmi\":%s", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_NMI ? "true" : "false");
		break;
	case HVTRACE_REC_EXCEPTION:
		fprintf(out, ",\"vector\":%u,\"soft\":%s", HVTRACE_AUX_VECTOR(r->aux),
			r->aux & HVTRACE_AUX_SOFT ? "true" : "false");
		break;
	}
	fprintf(out, ",\"from\":\"0x%llx\",\"to\":\"0x%llx\",\"from_cpl\":%u,\"to_cpl\":%u,\"aux\":%u",
		(unsigned long long)r->from, (unsigned long long)r->to, HVTRACE_INFO_FROM_CPL(r->info),
		HVTRACE_INFO_TO_CPL(r->info), r->aux);
	if (syms && r->kind != HVTRACE_REC_CR3) {
		fputs(",\"from_sym\":", out);
		json_str(out, hvt_syms_format(syms, r->from, buf, sizeof(buf)));
		fputs(",\"to_sym\":", out);
		json_str(out, hvt_syms_format(syms, r->to, buf, sizeof(buf)));
	}
	fputs("}\n", out);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} cmds[] = {
	{ "status", cmd_status }, { "record", cmd_record }, { "snapshot", cmd_snapshot },
	{ "dump", cmd_dump },	  { "report", cmd_report }, { "export", cmd_export },
	{ "synth", cmd_synth },	/* hidden: synthetic channels and files for tests */
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "hvtrace: unknown command '%s'\n", argv[1]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
