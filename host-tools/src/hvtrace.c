/* SPDX-License-Identifier: MIT */
/*
 * hvtrace: the host's command for the export channel and trace files
 * (docs/host-tools.md). main() picks the subcommand; the helpers here are
 * the ones every subcommand uses: messages, exit codes, opening inputs
 * (printing a record: print.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: hvtrace COMMAND [OPTIONS]\n"
	"\n"
	"Commands:\n"
	"  status   (--shm PATH | --dump FILE [--base ADDR] [--at ADDR]) [--json]\n"
	"                                                 the channel and its rings\n"
	"  record   --shm PATH -o FILE [--wait SEC] [--rate N] [--idle-exit SEC]\n"
	"           [--keep-tracing] [--quiet]            drain the lossless rings into FILE\n"
	"  ctl      --shm PATH [--timeout SEC] REQUEST    ask the hypervisor: start, stop,\n"
	"                                                 freeze, mark, freeze-at, filter,\n"
	"                                                 watchdog\n"
	"  snapshot (--shm PATH | --dump FILE [--base ADDR] [--at ADDR]) -o FILE\n"
	"                                                 the flight recorder into FILE\n"
	"  dump     FILE [--json] [--symbols SYMFILE]     one line per record, every vCPU\n"
	"                                                 in one timeline by TSC\n"
	"  report   FILE [--symbols SYMFILE] [--calls] [--hot N] [--last N] [--vcpu N]\n"
	"           [--before WHERE | --around WHERE]    call history, hot branches, the\n"
	"                                                 records before a place or a freeze\n"
	"  export   FILE (--perfetto OUT.json | --perf OUT.data | --uftrace DIR)\n"
	"           [--symbols SYMFILE] [--from P] [--to P] [--vcpu N]\n"
	"                                                 for Perfetto, perf, uftrace\n"
	"  symbols  LOG -o MAP                            the guest kernel's symbols that\n"
	"                                                 hvtrace-agent symbols printed\n"
	"  gdb      --dump FILE [--listen [HOST:]PORT]   a GDB server over a memory dump (post\n"
	"                                                 mortem, read-only): vCPUs as threads,\n"
	"                                                 the flight recorder as record btrace\n"
	"  gdb      --shm PATH [--listen [HOST:]PORT]    ... or over the running guest: stop,\n"
	"                                                 registers, memory, stepi, continue\n"
	"\n"
	"`hvtrace COMMAND --help` describes one. SYMFILE: an ELF with a symbol table,\n"
	"or a System.map / /proc/kallsyms text map; without --symbols, FILE.map beside\n"
	"the trace when there is one (hvtrace symbols LOG -o FILE.map).\n"
	"Exit status: 0 done, 1 bad input or data, 2 usage error.\n";

/* "hvtrace: WHAT: message", once: a message that already begins with
 * "WHAT: " (libhvtrace names the file it could not open) is not prefixed
 * again */
int fail(const char *what, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	size_t n = strlen(what);

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!strncmp(msg, what, n) && msg[n] == ':' && msg[n + 1] == ' ')
		fprintf(stderr, "hvtrace: %s\n", msg);
	else
		fprintf(stderr, "hvtrace: %s: %s\n", what, msg);
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

/* Lists at most this many of a dump's headers: a crafted dump can hold
 * one on every page. */
#define LIST_MAX 32

void list_dump_headers(const struct hvt_dump *d)
{
	size_t i;

	for (i = 0; i < d->nr_cand && i < LIST_MAX; i++) {
		const struct hvt_dump_cand *c = &d->cand[i];
		const char *state = hvt_state_name(c->state), *where = hvt_where_name(c->where);

		fprintf(stderr, "  --at 0x%llx: abi %u.%u, %u ring%s, %u vcpu%s, %llu bytes, state %s, where %s, "
			"phys_base 0x%llx%s\n",
			(unsigned long long)c->pa, c->abi_version >> 16, c->abi_version & 0xffff,
			c->nr_rings, c->nr_rings == 1 ? "" : "s", c->nr_vcpus, c->nr_vcpus == 1 ? "" : "s",
			(unsigned long long)c->size, state, where, (unsigned long long)c->phys_base,
			c->phys_base == c->pa ? "" : " (not its address)");
	}
	if (d->nr_cand > LIST_MAX)
		fprintf(stderr, "  ... and %zu more, not listed\n", d->nr_cand - LIST_MAX);
}

/* Hex, 0x optional: the hypervisor logs the channel's address as %016lx,
 * which strtoull's base 0 would read as octal. */
static int parse_addr(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 16);
	return errno || *end ? -1 : 0;
}

/* A dump's channel: its only valid header, or the one at `at`. More than
 * one and no `at` is an error listing them all: the guest may have forged
 * any of them, and only the user can know which is the hypervisor's.
 * base: the raw image's first guest-physical address, or NULL. */
static int open_dump(struct hvt_chan *ch, const char *cmd, const char *path, const char *at,
		     const char *base)
{
	struct hvt_dump d;
	struct hvt_err err;
	uint64_t pa = 0, from = 0;
	int rc = 0;

	if (at && parse_addr(at, &pa))
		return usage_error(cmd, "--at takes a guest-physical address in hex, not '%s'", at);
	if (base && parse_addr(base, &from))
		return usage_error(cmd, "--base takes a guest-physical address in hex, not '%s'", base);
	if (base ? hvt_dump_open_raw(&d, path, from, &err) : hvt_dump_open(&d, path, &err))
		return fail(path, "%s", err.msg);
	if (!at && d.nr_cand > 1) {
		rc = fail(path, "dump: %zu pages hold a valid channel header, and a guest can forge one "
			  "in its RAM: choose with --at ADDR (the hypervisor logs its own as "
			  "'recorder: channel at ADDR')", d.nr_cand);
		list_dump_headers(&d);
	} else if (hvt_dump_chan(&d, at ? pa : d.cand[0].pa, ch, &err)) {
		rc = fail(path, "%s", err.msg);
		list_dump_headers(&d);
	}
	hvt_dump_close(&d);
	return rc;
}

int open_channel(struct hvt_chan *ch, const char *cmd, const char *shm, const char *dump, const char *at,
		 const char *base)
{
	struct hvt_err err;

	if (!shm == !dump)
		return usage_error(cmd, "give exactly one of --shm PATH and --dump FILE");
	if (dump)
		return open_dump(ch, cmd, dump, at, base);
	if (at)
		return usage_error(cmd, "--at goes with --dump");
	if (base)
		return usage_error(cmd, "--base goes with --dump");
	if (hvt_chan_open_shm(ch, shm, &err))
		return fail(shm, "%s", err.msg);
	return 0;
}

int open_trace(struct hvt_file *f, const char *path)
{
	struct hvt_err err;

	if (hvt_file_open(f, path, &err))
		return fail("trace file", "%s", err.msg);
	if (hvt_file_check_records(f, &err) || hvt_file_merge_tsc(f, &err)) {
		hvt_file_close(f);
		return fail(path, "%s", err.msg);
	}
	if (!(f->hdr.flags & HVTRACE_FILE_COMPLETE))
		warn(path, "not finalized (its writer did not finish); %llu records by its length%s",
		     (unsigned long long)f->nr, f->partial ? ", a trailing partial record ignored" : "");
	return 0;
}

const char *default_symbols(const char *trace, const char *given, char *buf, size_t len)
{
	int n;

	if (given)
		return given;
	n = snprintf(buf, len, "%s.map", trace);
	if (n < 0 || (size_t)n >= len || access(buf, R_OK))
		return NULL;
	fprintf(stderr, "hvtrace: symbols from %s (beside the trace; --symbols chooses others)\n", buf);
	return buf;
}

int load_symbols(struct hvt_syms *s, const char *path)
{
	struct hvt_err err;

	if (hvt_syms_load(s, path, &err))
		return fail("symbols", "%s", err.msg);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} cmds[] = {
	{ "status", cmd_status }, { "record", cmd_record }, { "snapshot", cmd_snapshot },
	{ "dump", cmd_dump },	  { "report", cmd_report }, { "export", cmd_export },
	{ "symbols", cmd_symbols }, { "ctl", cmd_ctl }, { "gdb", cmd_gdb },
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
