/* SPDX-License-Identifier: MIT */
/*
 * Crafted inputs for host-tools/tests/hostile.sh: files, dumps and channels
 * made to stall the host tools, each about SIZE bytes.
 *   gen_hostile hot OUT [MB]    branch pairs that all collide in the hash
 *                               `report --hot` used before it sorted
 *   gen_hostile forged OUT [MB] a raw dump: a valid channel header on every
 *                               page below the real one
 *   gen_hostile loads OUT [MB]  an ELF core of 4096 small PT_LOADs, every
 *                               page a header that claims the memory up to
 *                               the real channel (at the end): valid ones,
 *                               and ones that fail only on a ring
 *   gen_hostile deep OUT [MB]   one vCPU calling ever deeper, never
 *                               returning: the call stacks of `report
 *                               --calls` and `export --uftrace` grow with
 *                               every record
 * For `report`/`export` over many vCPUs, `hvtrace synth file --vcpus 65536`.
 */
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

#define PAGE 4096ull

static int usage(void)
{
	fputs("usage: gen_hostile hot|forged|loads|deep OUT [MB]\n", stderr);
	return 2;
}

static int write_out(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(buf, 1, len, f) == len;

	if (f && fclose(f))
		ok = 0;
	if (!ok)
		fprintf(stderr, "gen_hostile: cannot write %s\n", path);
	return ok ? 0 : 1;
}

/* a * x == 1 (mod 2^64) for odd a: Newton's iteration doubles the
 * correct low bits each step (3 -> 6 -> ... -> 96). */
static uint64_t inverse_odd(uint64_t a)
{
	uint64_t x = a;
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

/* The hash `report --hot` probed linearly until the commit that made it
 * sort: h = from * K1 ^ (to + K2) * K3, then h ^= h >> 29. Every step can
 * be undone, so for any `to` there is a `from` with h equal to a chosen
 * value: all pairs share one bucket in every table size, and counting n of
 * them took n^2 / 2 probes. */
#define K1 0x9e3779b97f4a7c15ull
#define K2 0x632be59bd9b4e019ull
#define K3 0xc2b2ae3d27d4eb4full

static uint64_t from_for(uint64_t to, uint64_t h)
{
	uint64_t pre = h ^ (h >> 29) ^ (h >> 58);	/* undoes h ^= h >> 29 */

	return (pre ^ (to + K2) * K3) * inverse_odd(K1);
}

/* A trace file of bytes / 32 records, record i made by rec(i). */
static int gen_file(const char *out, uint64_t bytes, void (*rec)(uint64_t i, struct hvtrace_rec *r))
{
	uint64_t n = bytes / sizeof(struct hvtrace_rec), done = 0;
	struct hvtrace_rec buf[1024];
	struct hvt_fwriter w;
	struct hvt_err err;

	if (hvt_fwriter_open(&w, out, 0, 1000000000, 1, 0, &err)) {
		fprintf(stderr, "gen_hostile: %s\n", err.msg);
		return 1;
	}
	while (done < n) {
		unsigned k;

		for (k = 0; k < 1024 && done < n; k++, done++)
			rec(done, &buf[k]);
		if (hvt_fwriter_put(&w, buf, k, &err)) {
			hvt_fwriter_abort(&w);
			fprintf(stderr, "gen_hostile: %s\n", err.msg);
			return 1;
		}
	}
	return hvt_fwriter_finish(&w, 0, &err) ? 1 : 0;
}

static void hot_rec(uint64_t i, struct hvtrace_rec *r)
{
	uint64_t to = HVT_SYNTH_TEXT + i * 16;

	*r = (struct hvtrace_rec){ .tsc = 1000 + i, .from = from_for(to, 0x5eed), .to = to,
				   .kind = HVTRACE_REC_BRANCH, .aux = HVTRACE_BR_JMP };
}

static int gen_hot(const char *out, uint64_t bytes)
{
	struct hvtrace_rec r;
	uint64_t i;

	for (i = 0; i < 4; i++) {	/* the generator checks its own collisions */
		hot_rec(i, &r);
		if (((r.from * K1 ^ (r.to + K2) * K3) ^ ((r.from * K1 ^ (r.to + K2) * K3) >> 29)) != 0x5eed) {
			fprintf(stderr, "gen_hostile: the pairs do not collide\n");
			return 1;
		}
	}
	return gen_file(out, bytes, hot_rec);
}

/* Every record a CALL from one synthetic function into the next. */
static void deep_rec(uint64_t i, struct hvtrace_rec *r)
{
	*r = (struct hvtrace_rec){ .tsc = 1000 + i, .from = hvt_synth_func_addr((unsigned)(i % 5)) + 8,
				   .to = hvt_synth_func_addr((unsigned)((i + 1) % 5)),
				   .kind = HVTRACE_REC_BRANCH, .aux = HVTRACE_BR_CALL };
}

static int gen_deep(const char *out, uint64_t bytes)
{
	return gen_file(out, bytes, deep_rec);
}

/* A valid one-ring channel of 2 pages at mem + pa, its phys_base set. */
static void put_chan(uint8_t *mem, uint64_t pa, uint32_t state)
{
	static const struct hvt_ring_spec rs = { .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE,
						 .capacity = 128 };
	struct hvtrace_chan *h = (struct hvtrace_chan *)(mem + pa);
	struct hvt_err err;

	if (hvt_chan_layout(h, 2 * PAGE, &rs, 1, 1, 0, &err))
		abort();
	h->phys_base = pa;
	h->where = HVTRACE_CHAN_RESERVED_RAM;
	h->state = state;
}

static int gen_forged(const char *out, uint64_t bytes)
{
	uint8_t *mem = calloc(1, bytes);
	uint64_t real = bytes - 2 * PAGE, pa;
	int rc;

	if (!mem)
		return 1;
	/* one-page forgeries: header only, size 4096, no rings */
	for (pa = 0; pa < real; pa += PAGE) {
		struct hvtrace_chan *h = (struct hvtrace_chan *)(mem + pa);
		struct hvt_err err;

		if (hvt_chan_layout(h, PAGE, NULL, 0, 1, 0, &err))
			abort();
		h->phys_base = pa;
	}
	put_chan(mem, real, HVTRACE_STATE_FROZEN);
	rc = write_out(out, mem, bytes);
	free(mem);
	return rc;
}

/* 4096 segments (the most a dump may have) of SIZE / 4096 bytes, so most
 * of them hold a page start, in address order. */
static int gen_loads(const char *out, uint64_t bytes)
{
	uint64_t pages = bytes / PAGE, real = bytes - 2 * PAGE, seglen = bytes / 4096, i;
	uint8_t *mem = calloc(1, bytes), *elf;
	struct hvt_elf_seg *seg = calloc(4096, sizeof(*seg));
	size_t len;
	int rc;

	if (!mem || !seg)
		return 1;
	for (i = 0; i < pages - 2; i++) {
		static const struct hvt_ring_spec rs = { .mode = HVTRACE_RING_OVERWRITE, .capacity = 2 };
		struct hvtrace_chan *h = (struct hvtrace_chan *)(mem + i * PAGE);
		unsigned bad = i < (pages - 2) / 2;
		struct hvt_err err;

		/* the lower half: a ring fails, checked last; the upper half
		 * valid, without rings */
		if (hvt_chan_layout(h, 2 * PAGE, &rs, bad, 1, 0, &err))
			abort();
		h->size = real - i * PAGE;	/* up to the real channel */
		h->rings[0].capacity = bad ? 3 : 0;
	}
	put_chan(mem, real, HVTRACE_STATE_FROZEN);
	for (i = 0; i < 4096; i++)
		seg[i] = (struct hvt_elf_seg){ i * seglen, seglen };
	elf = hvt_elf_core_segs(mem, seg, 4096, &len);
	rc = elf ? write_out(out, elf, len) : 1;
	free(elf);
	free(seg);
	free(mem);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t mb = 10;

	if (argc < 3 || argc > 4)
		return usage();
	if (argc == 4 && ((mb = strtoull(argv[3], NULL, 0)) < 1 || mb > 1024))
		return usage();
	if (!strcmp(argv[1], "hot"))
		return gen_hot(argv[2], mb << 20);
	if (!strcmp(argv[1], "forged"))
		return gen_forged(argv[2], mb << 20);
	if (!strcmp(argv[1], "loads"))
		return gen_loads(argv[2], mb << 20);
	if (!strcmp(argv[1], "deep"))
		return gen_deep(argv[2], mb << 20);
	return usage();
}
