/* SPDX-License-Identifier: MIT */
/*
 * hvtrace export --uftrace: a trace file's call history (report --calls,
 * calls_walk in report.c) as a uftrace data directory that uftrace 0.13
 * (Debian bookworm) replays, reports, graphs, dumps and shows in its TUI.
 * The format is uftrace's own (its uftrace.h, utils/session.c, symbol.c,
 * cmds/info.c), written here: `info` (header and info lines), `task.txt`
 * (one session, pid 1; vCPU v is its task 1 + v), the session's memory map
 * `sid-*.map` (one mapping over the symbols, and a [stack] line, from which
 * uftrace guesses where the kernel starts), its symbol file `guest.sym`
 * (offsets in that mapping), and a `TID.dat` per vCPU of 16-byte records:
 * nanoseconds, then type/magic/depth/address bits.
 *
 * uftrace keeps 48 bits of an address and depths below 1024: addresses go
 * in as their low 48 bits (canonical addresses stay distinct), and calls
 * deeper than UFT_MAX_DEPTH are left out (their depth still counts).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* uftrace.h (v0.13) */
struct uft_file_header {
	char magic[8];			/* "Ftrace!" */
	uint32_t version;		/* UFTRACE_FILE_VERSION */
	uint16_t header_size;
	uint8_t endian;			/* 1: little */
	uint8_t elf_class;		/* 2: 64-bit */
	uint64_t feat_mask;
	uint64_t info_mask;
	uint16_t max_stack;
	uint16_t unused1;
	uint32_t unused2;
};
_Static_assert(sizeof(struct uft_file_header) == 40, "uftrace file header is 40 bytes");

#define UFT_FILE_VERSION	4
#define UFT_FEAT_TASK_SESSION	(1u << 1)
#define UFT_FEAT_SYM_REL_ADDR	(1u << 5)
#define UFT_FEAT_MAX_STACK	(1u << 6)
#define UFT_INFO_EXE_NAME	(1u << 0)
#define UFT_INFO_CMDLINE	(1u << 3)
#define UFT_INFO_TASKINFO	(1u << 7)
#define UFT_ENTRY		0
#define UFT_EXIT		1
#define UFT_RECORD_MAGIC	5	/* RECORD_MAGIC_V4 */
#define UFT_MAX_STACK		1024
#define UFT_MAX_DEPTH		(UFT_MAX_STACK - 1)	/* the record's depth has 10 bits */
#define UFT_ADDR_MASK		0xffffffffffffull	/* ... and its address 48 */

#define UFT_SID		"0068767472616365"	/* the session id: "hvtrace" in hex */
#define UFT_EXE		"/hvtrace/guest"	/* the mapping's (and the session's) name */
#define UFT_PID		1

/* One 16-byte record: time (ns), then type:2 more:1 magic:3 depth:10 addr:48. */
static void uft_rec(uint64_t out[2], uint64_t ns, unsigned type, uint64_t depth, uint64_t addr)
{
	out[0] = ns;
	out[1] = (uint64_t)type | (uint64_t)UFT_RECORD_MAGIC << 3 | (depth & 0x3ff) << 6 |
		 (addr & UFT_ADDR_MASK) << 16;
}

struct frame {
	uint64_t depth, addr;
};

struct uft_task {
	FILE *o;
	const struct hvt_syms *s;
	uint64_t tsc0, tsc_hz, last_tsc;
	struct frame *stack;
	uint64_t sp, cap;
	uint64_t entries;
	int oom;
};

static uint64_t uft_ns(const struct uft_task *t, uint64_t tsc)
{
	uint64_t d = tsc > t->tsc0 ? tsc - t->tsc0 : 0;

	return t->tsc_hz ? (uint64_t)((unsigned __int128)d * 1000000000u / t->tsc_hz) : d;
}

static void uft_put(struct uft_task *t, uint64_t tsc, unsigned type, const struct frame *fr)
{
	uint64_t rec[2];

	if (fr->depth > UFT_MAX_DEPTH)
		return;
	uft_rec(rec, uft_ns(t, tsc), type, fr->depth, fr->addr);
	fwrite(rec, sizeof(rec), 1, t->o);
}

/* Pops (with an exit each) the frames at depth >= depth. */
static void uft_pop(struct uft_task *t, uint64_t tsc, uint64_t depth)
{
	while (t->sp && t->stack[t->sp - 1].depth >= depth)
		uft_put(t, tsc, UFT_EXIT, &t->stack[--t->sp]);
}

static void uft_enter(void *ctx, const struct hvtrace_rec *r, uint64_t func, uint64_t depth)
{
	struct uft_task *t = ctx;
	uint64_t off;
	const struct hvt_sym *sym = t->s ? hvt_syms_lookup(t->s, func, &off) : NULL;
	struct frame fr = { depth, sym ? sym->addr : func };

	uft_pop(t, r->tsc, depth);	/* a frame a retpoline left unreturned */
	if (t->sp == t->cap) {
		uint64_t cap = t->cap ? 2 * t->cap : 64;
		struct frame *n = realloc(t->stack, cap * sizeof(*n));

		if (!n) {
			t->oom = 1;
			return;
		}
		t->stack = n;
		t->cap = cap;
	}
	t->stack[t->sp++] = fr;
	uft_put(t, r->tsc, UFT_ENTRY, &fr);
	t->entries++;
}

static void uft_leave(void *ctx, const struct hvtrace_rec *r, uint64_t depth)
{
	uft_pop(ctx, r->tsc, depth);
}

/* Creates dir, or takes an empty one. */
static int make_dir(const char *dir, struct hvt_err *err)
{
	DIR *d;
	struct dirent *e;

	if (!mkdir(dir, 0755))
		return 0;
	if (errno != EEXIST) {
		hvt_seterr(err, "%s: cannot create the directory: %s", dir, strerror(errno));
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		hvt_seterr(err, "%s: exists and is not a directory we can read: %s", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			closedir(d);
			hvt_seterr(err, "%s: exists and is not empty (uftrace data is written only into "
				   "a new or empty directory)", dir);
			return -1;
		}
	closedir(d);
	return 0;
}

static FILE *open_in(const char *dir, const char *name, struct hvt_err *err)
{
	char path[4096];
	FILE *o;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		hvt_seterr(err, "%s: path too long", dir);
		return NULL;
	}
	o = fopen(path, "w");
	if (!o)
		hvt_seterr(err, "%s: cannot write: %s", path, strerror(errno));
	return o;
}

static int close_in(FILE *o, const char *dir, const char *name, struct hvt_err *err)
{
	if (ferror(o) | fclose(o)) {
		hvt_seterr(err, "%s/%s: write failed", dir, name);
		return -1;
	}
	return 0;
}

/* The mapping [*lo, *hi) (48-bit addresses) that holds every symbol;
 * 0 when there are no symbols. */
static int sym_range(const struct hvt_syms *s, uint64_t *lo, uint64_t *hi)
{
	size_t i;

	if (!s || !s->n)
		return 0;
	*lo = UFT_ADDR_MASK;
	*hi = 0;
	for (i = 0; i < s->n; i++) {
		uint64_t a = s->v[i].addr & UFT_ADDR_MASK, e = a + (s->v[i].size ? s->v[i].size : 1);

		*lo = a < *lo ? a : *lo;
		*hi = e > *hi ? e : *hi;
	}
	*lo &= ~0xfffull;
	*hi = (*hi + 0xfff) & ~0xfffull;
	return 1;
}

/* guest.sym: "# symbols: N", "# path name: PATH", then "OFFSET T name"
 * (offsets in the mapping), a "?" line where a sized symbol ends before
 * the next begins (uftrace sizes a symbol up to the next line). */
static int write_syms(const char *dir, const struct hvt_syms *s, uint64_t lo, uint64_t hi,
		      struct hvt_err *err)
{
	FILE *o = open_in(dir, "guest.sym", err);
	size_t i;

	if (!o)
		return -1;
	fprintf(o, "# symbols: %zu\n# path name: %s\n", s->n, UFT_EXE);
	for (i = 0; i < s->n; i++) {
		uint64_t a = (s->v[i].addr & UFT_ADDR_MASK) - lo, end = a + s->v[i].size;
		uint64_t next = i + 1 < s->n ? (s->v[i + 1].addr & UFT_ADDR_MASK) - lo : hi - lo;

		fprintf(o, "%016llx T %s\n", (unsigned long long)a, s->v[i].name);
		if (s->v[i].size && end < next)
			fprintf(o, "%016llx ? __func_end\n", (unsigned long long)end);
		else if (i + 1 == s->n)
			fprintf(o, "%016llx ? __func_end\n", (unsigned long long)next);
	}
	return close_in(o, dir, "guest.sym", err);
}

static int write_meta(const char *dir, const char *source, const struct by_vcpu *b,
		      const struct hvt_syms *s, struct hvt_err *err)
{
	struct uft_file_header h = {
		.magic = "Ftrace!", .version = UFT_FILE_VERSION, .header_size = sizeof(h), .endian = 1,
		.elf_class = 2, .feat_mask = UFT_FEAT_TASK_SESSION | UFT_FEAT_SYM_REL_ADDR | UFT_FEAT_MAX_STACK,
		.info_mask = UFT_INFO_EXE_NAME | UFT_INFO_CMDLINE | UFT_INFO_TASKINFO,
		.max_stack = UFT_MAX_STACK,
	};
	uint64_t lo = 0, hi = 0, ntask = 0;
	uint32_t v;
	const char *sep = "";
	FILE *o;

	for (v = 0; v < b->nv; v++)
		ntask += b->first[v + 1] > b->first[v];
	if (!(o = open_in(dir, "info", err)))
		return -1;
	fwrite(&h, sizeof(h), 1, o);
	fprintf(o, "exename:%s\ncmdline:hvtrace export %s --uftrace %s\n", UFT_EXE, source, dir);
	fprintf(o, "taskinfo:lines=2\ntaskinfo:nr_tid=%llu\ntaskinfo:tids=", (unsigned long long)ntask);
	for (v = 0; v < b->nv; v++)
		if (b->first[v + 1] > b->first[v]) {
			fprintf(o, "%s%u", sep, UFT_PID + v);
			sep = ",";
		}
	fputc('\n', o);
	if (close_in(o, dir, "info", err))
		return -1;

	if (!(o = open_in(dir, "task.txt", err)))
		return -1;
	fprintf(o, "SESS timestamp=0.000000000 pid=%u sid=%s exename=\"%s\"\n", UFT_PID, UFT_SID, UFT_EXE);
	for (v = 0; v < b->nv; v++)
		if (b->first[v + 1] > b->first[v])
			fprintf(o, "TASK timestamp=0.000000000 tid=%u pid=%u\n", UFT_PID + v, UFT_PID);
	if (close_in(o, dir, "task.txt", err))
		return -1;

	/* an empty default.opts, as uftrace record leaves one */
	if (!(o = open_in(dir, "default.opts", err)) || close_in(o, dir, "default.opts", err))
		return -1;

	if (!(o = open_in(dir, "sid-" UFT_SID ".map", err)))
		return -1;
	if (sym_range(s, &lo, &hi))
		fprintf(o, "%012llx-%012llx r-xp 00000000 00:00 0 %s\n", (unsigned long long)lo,
			(unsigned long long)hi, UFT_EXE);
	/* uftrace takes the kernel's start from the [stack] line: here, past
	 * every 48-bit address */
	fprintf(o, "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n");
	if (close_in(o, dir, "sid-" UFT_SID ".map", err))
		return -1;
	return sym_range(s, &lo, &hi) ? write_syms(dir, s, lo, hi, err) : 0;
}

int export_uftrace(const char *dir, const char *source, const struct hvt_file *f,
		   const struct hvt_syms *s, const struct export_opts *eo, struct export_stats *st,
		   struct hvt_err *err)
{
	static const struct calls_ops ops = { .enter = uft_enter, .leave = uft_leave };
	struct uft_task t = { .s = s, .tsc_hz = f->hdr.tsc_hz };
	struct by_vcpu b;
	uint64_t i;
	uint32_t v;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (make_dir(dir, err))
		return -1;
	if (by_vcpu_build(&b, f, eo->vcpu, eo)) {
		hvt_seterr(err, "out of memory");
		return -1;
	}
	t.tsc0 = UINT64_MAX;
	for (v = 0; v < b.nv; v++)
		if (b.first[v + 1] > b.first[v] && f->recs[b.idx[b.first[v]]].tsc < t.tsc0)
			t.tsc0 = f->recs[b.idx[b.first[v]]].tsc;
	if (write_meta(dir, source, &b, s, err)) {
		by_vcpu_free(&b);
		return -1;
	}
	for (v = 0; v < b.nv && !rc; v++) {
		char name[32];
		uint64_t n = b.first[v + 1] - b.first[v];

		if (!n)
			continue;
		snprintf(name, sizeof(name), "%u.dat", UFT_PID + v);
		if (!(t.o = open_in(dir, name, err))) {
			rc = -1;
			break;
		}
		t.sp = 0;
		calls_walk(f, s, b.idx + b.first[v], n, &ops, &t);
		/* what is still open ends at the vCPU's last record */
		i = b.idx[b.first[v + 1] - 1];
		uft_pop(&t, f->recs[i].tsc, 0);
		st->tasks++;
		rc = close_in(t.o, dir, name, err);
		if (t.oom) {
			hvt_seterr(err, "out of memory");
			rc = -1;
		}
	}
	st->entries = t.entries;
	free(t.stack);
	by_vcpu_free(&b);
	return rc;
}
