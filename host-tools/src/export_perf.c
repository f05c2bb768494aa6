/* SPDX-License-Identifier: MIT */
/*
 * hvtrace export --perf: a trace file as a perf.data that Linux's `perf`
 * (6.1, Debian bookworm's linux-perf) reads: the layout of
 * tools/perf/Documentation/perf.data-file-format.txt, written here (perf
 * has no library for it). One event, the perf core's BTS form (hardware
 * `branches` with a sample period of 1, which `perf script` prints as
 * "from => to"); a PERF_RECORD_SAMPLE per branch, interrupt and exception
 * record (IP = from, ADDR = to, TIME, CPU = the vCPU, TID); a kernel MMAP
 * ([kernel.kallsyms]) over the addresses the guest ran at CPL 0; a COMM per
 * vCPU; PERF_RECORD_LOST_SAMPLES for LOST records. The header's build-id table
 * gives the kernel a build-id of its own (a hash of the symbols), so perf
 * never resolves the guest's addresses with the host's /proc/kallsyms; the
 * guest's symbols go beside the file in kallsyms form, for
 * `perf ... --kallsyms FILE` (docs/host-tools.md).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* perf.data-file-format.txt: the file header, its sections, and the
 * feature bits perf's util/header.h numbers */
struct perf_file_section {
	uint64_t offset, size;
};

struct perf_file_header {
	uint64_t magic;			/* "PERFILE2" */
	uint64_t size;			/* of this header */
	uint64_t attr_size;		/* of one struct perf_file_attr */
	struct perf_file_section attrs, data, event_types;
	uint64_t adds_features[4];	/* HEADER_FEAT_BITS = 256 */
};
_Static_assert(sizeof(struct perf_file_header) == 104, "perf_file_header is 104 bytes");

struct perf_file_attr {
	struct perf_event_attr attr;
	struct perf_file_section ids;
};

#define PERF_MAGIC2		0x32454c4946524550ull	/* "PERFILE2" little-endian */
#define HEADER_BUILD_ID		2
#define HEADER_HOSTNAME		3
#define HEADER_OSRELEASE	4
#define HEADER_VERSION		5
#define HEADER_ARCH		6
#define HEADER_NRCPUS		7
#define HEADER_CPUDESC		8
#define HEADER_CPUID		9
#define HEADER_CMDLINE		11
#define PERF_HOST_KERNEL_PID	(-1)	/* perf's HOST_KERNEL_ID_PID */
#define PERF_KERNEL_MMAP_NAME	"[kernel.kallsyms]"
#define PERF_MISC_BUILD_ID_SIZE	(1u << 15)	/* perf's PERF_RECORD_MISC_BUILD_ID_SIZE */

/* The sample layout for SAMPLE_TYPE, in the order perf_event_open(2)
 * gives: IP, TID, TIME, ADDR, CPU, PERIOD. */
#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
struct sample {
	struct perf_event_header h;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint32_t cpu, res;
	uint64_t period;
};
_Static_assert(sizeof(struct sample) == 56, "sample is 56 bytes");

/* sample_id_all: what every other record carries at its end (TID, TIME,
 * CPU of SAMPLE_TYPE, in that order) */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

#define PID_BASE 1	/* one process, pid 1; vCPU v is its thread 1 + v */

struct perf_out {
	FILE *o;
	const char *path;
	uint64_t tsc0, tsc_hz;
	int failed;
	int regular;	/* out is a regular file (removed when writing fails) */
};

static void put(struct perf_out *p, const void *buf, size_t len)
{
	if (!p->failed && fwrite(buf, 1, len, p->o) != len)
		p->failed = errno ? errno : EIO;
}

static uint64_t ns(const struct perf_out *p, uint64_t tsc)
{
	uint64_t d = tsc > p->tsc0 ? tsc - p->tsc0 : 0;

	if (!p->tsc_hz)
		return d;	/* raw ticks (said on stderr) */
	return (uint64_t)((unsigned __int128)d * 1000000000u / p->tsc_hz);
}

/* A non-sample record: header, body, name (NUL-padded to 8 bytes), id. */
static void put_record(struct perf_out *p, uint32_t type, uint16_t misc, const void *body,
		       size_t body_len, const char *name, uint32_t vcpu)
{
	static const char zeros[8];
	size_t name_len = name ? (strlen(name) + 8) & ~(size_t)7 : 0;
	struct sample_id id = { PID_BASE, PID_BASE + vcpu, 0, vcpu, 0 };
	struct perf_event_header h = {
		.type = type, .misc = misc,
		.size = (uint16_t)(sizeof(h) + body_len + name_len + sizeof(id)),
	};

	put(p, &h, sizeof(h));
	put(p, body, body_len);
	if (name) {
		put(p, name, strlen(name));
		put(p, zeros, name_len - strlen(name));
	}
	put(p, &id, sizeof(id));
}

/* A string in perf's header form: u32 length (64-byte aligned, NUL
 * included), then the string NUL-padded to it. */
static void put_string(struct perf_out *p, const char *s)
{
	static const char zeros[64];
	uint32_t len = (uint32_t)((strlen(s) + 1 + 63) & ~(size_t)63);

	put(p, &len, sizeof(len));
	put(p, s, strlen(s));
	put(p, zeros, len - strlen(s));
}

/* A build-id for the guest kernel: 20 bytes of two FNV-1a hashes of the
 * symbols (or of the trace's header when there are none). Stable for the
 * same symbols; never the host kernel's. */
static void guest_build_id(const struct hvt_syms *s, const struct hvt_file *f, uint8_t id[20])
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	size_t i, k;

	for (i = 0; s && i < s->n; i++) {
		const uint8_t *a = (const uint8_t *)&s->v[i].addr;
		const char *n = s->v[i].name;

		for (k = 0; k < 8; k++)
			h1 = (h1 ^ a[k]) * 0x100000001b3ull;
		for (k = 0; n[k]; k++)
			h2 = (h2 ^ (uint8_t)n[k]) * 0x100000001b3ull;
	}
	if (!s || !s->n)
		for (k = 0; k < sizeof(f->hdr); k++)
			h1 = (h1 ^ ((const uint8_t *)&f->hdr)[k]) * 0x100000001b3ull;
	memcpy(id, &h1, 8);
	memcpy(id + 8, &h2, 8);
	memcpy(id + 16, "hvt", 4);
}

static int write_kallsyms(const char *path, const struct hvt_syms *s, struct hvt_err *err)
{
	FILE *o = fopen(path, "w");
	size_t i;

	if (!o) {
		hvt_seterr(err, "%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < s->n; i++)
		fprintf(o, "%016llx T %s\n", (unsigned long long)s->v[i].addr, s->v[i].name);
	if (ferror(o) | fclose(o)) {
		hvt_seterr(err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

/* Which records become samples: the ones with a code address on both ends. */
static int is_sample(const struct hvtrace_rec *r)
{
	return has_addrs(r);
}

/* The range the kernel MMAP covers: every address the guest ran at CPL 0
 * (either end of a sampled record); [0, 0) when there is none. */
static void kernel_range(const struct hvt_file *f, const struct by_vcpu *b, uint64_t *lo, uint64_t *hi)
{
	uint64_t i;
	uint32_t v;

	*lo = UINT64_MAX;
	*hi = 0;
	for (v = 0; v < b->nv; v++)
		for (i = b->first[v]; i < b->first[v + 1]; i++) {
			const struct hvtrace_rec *r = &f->recs[b->idx[i]];

			if (!is_sample(r))
				continue;
			if (!HVTRACE_INFO_FROM_CPL(r->info)) {
				*lo = r->from < *lo ? r->from : *lo;
				*hi = r->from > *hi ? r->from : *hi;
			}
			if (!HVTRACE_INFO_TO_CPL(r->info)) {
				*lo = r->to < *lo ? r->to : *lo;
				*hi = r->to > *hi ? r->to : *hi;
			}
		}
	if (*lo > *hi)
		*lo = *hi = 0;
	else if (*hi != UINT64_MAX)
		(*hi)++;
}

static void put_events(struct perf_out *p, const struct hvt_file *f, const struct by_vcpu *b,
		       const struct export_opts *eo, struct export_stats *st)
{
	uint64_t i, lo, hi;
	uint32_t v;
	char comm[16];
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
	} mmap_body = { (uint32_t)PERF_HOST_KERNEL_PID, 0, 0, 0, 0 };
	struct {
		uint32_t pid, tid;
	} comm_body;

	kernel_range(f, b, &lo, &hi);
	mmap_body.start = lo;
	mmap_body.len = hi - lo;
	put_record(p, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, &mmap_body, sizeof(mmap_body),
		   PERF_KERNEL_MMAP_NAME "_text", 0);
	for (v = 0; v < b->nv; v++) {
		if (b->first[v + 1] == b->first[v])
			continue;
		comm_body.pid = PID_BASE;
		comm_body.tid = PID_BASE + v;
		snprintf(comm, sizeof(comm), "vcpu%u", v);
		put_record(p, PERF_RECORD_COMM, 0, &comm_body, sizeof(comm_body), comm, v);
		st->tasks++;
	}
	/* the records in the file's (TSC) order: perf sorts by time anyway */
	for (i = 0; i < f->nr; i++) {
		const struct hvtrace_rec *r = &f->recs[i];

		if (!export_keeps(f, i, eo))
			continue;
		if (r->kind == HVTRACE_REC_LOST) {
			uint64_t lost = r->from;	/* perf's "Total Lost Samples" */

			put_record(p, PERF_RECORD_LOST_SAMPLES, 0, &lost, sizeof(lost), NULL, r->vcpu);
			st->lost += r->from;
			continue;
		}
		if (!is_sample(r))
			continue;
		struct sample s = {
			.h = { PERF_RECORD_SAMPLE,
			       HVTRACE_INFO_FROM_CPL(r->info) ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL,
			       sizeof(s) },
			.ip = r->from, .pid = PID_BASE, .tid = PID_BASE + r->vcpu, .time = ns(p, r->tsc),
			.addr = r->to, .cpu = r->vcpu, .period = 1,
		};
		put(p, &s, sizeof(s));
		st->samples++;
	}
}

/* The features perf reads, in the order of their bits: the section table
 * first, then each body. perf's `data convert --to-json` needs the strings
 * (a NULL hostname crashes it). */
static void put_features(struct perf_out *p, struct perf_file_header *fh, const struct hvt_syms *s,
			 const struct hvt_file *f, uint32_t nv, uint64_t at)
{
	static const int feats[] = {
		HEADER_BUILD_ID, HEADER_HOSTNAME, HEADER_OSRELEASE, HEADER_VERSION, HEADER_ARCH,
		HEADER_NRCPUS, HEADER_CPUDESC, HEADER_CPUID, HEADER_CMDLINE,
	};
	enum { NF = sizeof(feats) / sizeof(feats[0]) };
	struct perf_file_section sec[NF];
	struct {
		struct perf_event_header h;
		int32_t pid;
		uint8_t build_id[24];
		char filename[64];	/* NUL-padded to 64, as perf writes it */
	} bid = {
		/* a header whose type perf leaves 0; misc: the kernel's, and
		 * that build_id[20] holds the size */
		.h = { 0, PERF_RECORD_MISC_KERNEL | PERF_MISC_BUILD_ID_SIZE, sizeof(bid) },
		.pid = PERF_HOST_KERNEL_PID, .filename = PERF_KERNEL_MMAP_NAME,
	};
	uint32_t nrcpus[2] = { nv, nv }, one = 1;
	long pos;
	int k;

	guest_build_id(s, f, bid.build_id);
	bid.build_id[20] = 20;
	for (k = 0; k < NF; k++)
		fh->adds_features[feats[k] / 64] |= 1ull << (feats[k] % 64);
	put(p, sec, sizeof(sec));	/* a place holder */
	for (k = 0; k < NF && !p->failed; k++) {
		if ((pos = ftell(p->o)) < 0)
			break;
		sec[k].offset = (uint64_t)pos;
		switch (feats[k]) {
		case HEADER_BUILD_ID: put(p, &bid, sizeof(bid)); break;
		case HEADER_HOSTNAME: put_string(p, "hvtrace-guest"); break;
		case HEADER_OSRELEASE: put_string(p, "unknown (a guest traced by hvtrace)"); break;
		case HEADER_VERSION: put_string(p, "hvtrace export"); break;
		case HEADER_ARCH: put_string(p, "x86_64"); break;
		case HEADER_NRCPUS: put(p, nrcpus, sizeof(nrcpus)); break;
		case HEADER_CPUDESC: put_string(p, "vCPU of a guest traced by hvtrace"); break;
		case HEADER_CPUID: put_string(p, "unknown"); break;
		case HEADER_CMDLINE:
			put(p, &one, sizeof(one));
			put_string(p, "hvtrace export --perf");
			break;
		}
		if ((pos = ftell(p->o)) < 0)
			break;
		sec[k].size = (uint64_t)pos - sec[k].offset;
	}
	if (k < NF && !p->failed)
		p->failed = errno ? errno : EIO;
	if (!p->failed && fseek(p->o, (long)at, SEEK_SET))
		p->failed = errno;
	put(p, sec, sizeof(sec));
}

int export_perf(const char *out, const char *kallsyms, const struct hvt_file *f,
		const struct hvt_syms *s, const struct export_opts *eo, struct export_stats *st,
		struct hvt_err *err)
{
	struct perf_file_header fh = {
		.magic = PERF_MAGIC2, .size = sizeof(fh), .attr_size = sizeof(struct perf_file_attr),
	};
	struct perf_file_attr fa = { .attr = {
		.type = PERF_TYPE_HARDWARE, .size = sizeof(struct perf_event_attr),
		.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS, .sample_period = 1,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
		.exclude_guest = 1,	/* no "HG" in the event's name, as perf record's default */
	} };
	struct perf_out p = { .path = out, .tsc_hz = f->hdr.tsc_hz };
	struct by_vcpu b;
	struct stat sb;
	uint64_t i;
	long end;

	memset(st, 0, sizeof(*st));
	if (s && kallsyms && write_kallsyms(kallsyms, s, err))
		return -1;
	if (by_vcpu_build(&b, f, eo->vcpu, eo)) {
		hvt_seterr(err, "out of memory");
		return -1;
	}
	p.tsc0 = UINT64_MAX;
	for (i = 0; i < f->nr; i++)
		if (f->recs[i].tsc < p.tsc0 && export_keeps(f, i, eo))
			p.tsc0 = f->recs[i].tsc;
	p.o = fopen(out, "wb");
	if (!p.o) {
		hvt_seterr(err, "%s: cannot write: %s", out, strerror(errno));
		by_vcpu_free(&b);
		return -1;
	}
	p.regular = !fstat(fileno(p.o), &sb) && S_ISREG(sb.st_mode);
	errno = 0;
	fh.attrs = (struct perf_file_section){ sizeof(fh), sizeof(fa) };
	fh.data.offset = sizeof(fh) + sizeof(fa);
	put(&p, &fh, sizeof(fh));
	put(&p, &fa, sizeof(fa));
	put_events(&p, f, &b, eo, st);
	end = p.failed ? -1 : ftell(p.o);
	if (end >= 0) {
		fh.data.size = (uint64_t)end - fh.data.offset;
		put_features(&p, &fh, s, f, b.nv, (uint64_t)end);
		if (!p.failed && fseek(p.o, 0, SEEK_SET))
			p.failed = errno;
		put(&p, &fh, sizeof(fh));	/* now with the data size and features */
	} else if (!p.failed) {
		p.failed = errno ? errno : EIO;
	}
	by_vcpu_free(&b);
	if ((fclose(p.o) && !p.failed) || p.failed) {
		hvt_seterr(err, "%s: write failed: %s", out, strerror(p.failed ? p.failed : errno));
		if (p.regular)	/* no half file for perf to misread (never a device) */
			remove(out);
		return -1;
	}
	return 0;
}
