/* SPDX-License-Identifier: MIT */
/* hvtrace: what the subcommands share (exit codes, messages, printing). */
#ifndef HVTRACE_CLI_H
#define HVTRACE_CLI_H

#include <stdio.h>

#include "libhvtrace.h"

#define EXIT_DATA 1	/* bad input or data: "hvtrace: <what>: <why>" */
#define EXIT_USAGE 2

/* "hvtrace: what: why" on stderr; returns EXIT_DATA. */
int fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "hvtrace CMD: why" and a pointer to --help on stderr; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void warn(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define OPT_HELP 'h'
struct option;
/* getopt_long over a subcommand's argv (optind reset by the caller);
 * unknown options and missing values become usage errors in *rc. */
int next_opt(int argc, char **argv, const char *cmd, const char *shortopts,
	     const struct option *lo, int *rc);
/* Whole unsigned numbers (decimal, 0x hex); -1 when s is not one. */
int parse_u64(const char *s, uint64_t *v);
/* A record index, or a time ("1.5s", "200ms", "30us"; *is_time set, the
 * value in microseconds); -1 when s is neither. */
int parse_point(const char *s, uint64_t *v, int *is_time);
/* The index of name in names[0..n) (NULL entries skipped), or -1. */
int parse_name(const char *s, const char *(*name)(unsigned), unsigned n);

/* --shm PATH or --dump FILE (exactly one); at: --at ADDR (dumps), or NULL;
 * base: --base ADDR (the dump a raw image of memory from ADDR), or NULL. */
int open_channel(struct hvt_chan *ch, const char *cmd, const char *shm, const char *dump,
		 const char *at, const char *base);
/* The valid channel headers of a dump, "--at ADDR: ..." on stderr (at most 32). */
void list_dump_headers(const struct hvt_dump *d);
/* A trace file with every record checked; warns about an unfinished one. */
int open_trace(struct hvt_file *f, const char *path);
int load_symbols(struct hvt_syms *s, const char *path);
/* given (--symbols), or else TRACE.map when it exists (said on stderr), or
 * NULL; buf (len bytes) holds that default's path. */
const char *default_symbols(const char *trace, const char *given, char *buf, size_t len);

void json_str(FILE *out, const char *s);
/* One record, as `hvtrace dump` prints it. syms may be NULL. */
void print_rec_text(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms);
void print_rec_json(FILE *out, const struct hvtrace_rec *r, const struct hvt_syms *syms);

#define MAX_VCPUS 0x10000u	/* a record's vcpu is 16 bits */

/* report.c: `report` and `export` over a checked file, written to out;
 * s may be NULL (export). -1: out of memory. */
struct report_opts {
	int calls;		/* the function-call history of each vCPU */
	uint64_t hot;		/* the N most frequent branch pairs (0: none) */
	uint64_t last;		/* each vCPU's last N records (0: none) */
	int64_t vcpu;		/* only this vCPU, or -1 */
	int has_where;		/* --before / --around: */
	int around;		/* ... records after it too */
	uint64_t where;		/* the address records go to */
};
int report_write(FILE *out, const struct hvt_file *f, const struct hvt_syms *s,
		 const struct report_opts *opt);
/* export's window: records [from_idx, to_idx) of the timeline with TSC in
 * [from_tsc, to_tsc], of one vCPU or all (vcpu -1) */
struct export_opts {
	uint64_t from_idx, to_idx;
	uint64_t from_tsc, to_tsc;
	int64_t vcpu;
};
#define EXPORT_ALL { 0, UINT64_MAX, 0, UINT64_MAX, -1 }
int export_write(FILE *out, const struct hvt_file *f, const struct hvt_syms *s, const char *source,
		 const struct export_opts *eo);

/* What report and the exporters share (report.c). */
int is_call(const struct hvtrace_rec *r);	/* call, call_ind, far_call */
int is_ret(const struct hvtrace_rec *r);	/* ret, far_ret */
int has_addrs(const struct hvtrace_rec *r);	/* a code address on both ends */
/* The function name alone (no offset), or 0xaddr in buf. */
const char *func_name(const struct hvt_syms *s, uint64_t a, char *buf, size_t len);
/* The records of each vCPU, in file order: vCPU v's indices are
 * idx[first[v] .. first[v + 1]), for v < nv (the highest vCPU kept + 1).
 * Only vCPU `only` when it is >= 0, only the window eo when not NULL;
 * -1: out of memory. One pass whatever the number of vCPUs. */
struct by_vcpu {
	uint64_t *first;	/* nv + 1 */
	uint64_t *idx;
	uint32_t nv;
};
int by_vcpu_build(struct by_vcpu *b, const struct hvt_file *f, int64_t only, const struct export_opts *eo);
void by_vcpu_free(struct by_vcpu *b);
/* Record i is in export's window and of its vCPU. */
int export_keeps(const struct hvt_file *f, uint64_t i, const struct export_opts *eo);
/* The call history of `report --calls` as events (calls_walk in report.c
 * says when they come): the function entered (its address as the record
 * gives it) at a depth, and the depth a return leaves. */
struct calls_ops {
	void (*enter)(void *ctx, const struct hvtrace_rec *r, uint64_t func, uint64_t depth);
	void (*leave)(void *ctx, const struct hvtrace_rec *r, uint64_t depth);	/* may be NULL */
};
void calls_walk(const struct hvt_file *f, const struct hvt_syms *s, const uint64_t *idx,
		uint64_t n_idx, const struct calls_ops *ops, void *ctx);

/* export_perf.c: a perf.data (PERF_RECORD_SAMPLE per branch, a kernel
 * MMAP, a COMM per vCPU) at path `out`; with symbols, also their text in
 * /proc/kallsyms form at `kallsyms` for perf's --kallsyms. 0, or -1 with
 * the cause in err. */
struct export_stats {
	uint64_t samples, lost, tasks, entries;
};
int export_perf(const char *out, const char *kallsyms, const struct hvt_file *f,
		const struct hvt_syms *s, const struct export_opts *eo, struct export_stats *st,
		struct hvt_err *err);
/* export_uftrace.c: a uftrace (0.13) data directory at `dir` (created;
 * it must not exist or be empty): a task per vCPU with the call history's
 * entries and exits. 0, or -1 with the cause in err. */
int export_uftrace(const char *dir, const char *source, const struct hvt_file *f,
		   const struct hvt_syms *s, const struct export_opts *eo, struct export_stats *st,
		   struct hvt_err *err);

int cmd_status(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_symbols(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_gdb(int argc, char **argv);

#endif
