/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libhvtrace: ring arithmetic, torn records, the lossless
 * drain against the channel writer (waits, drops, LOST records summing
 * exactly), trace-file round trips, symbols (a System.map and an ELF built
 * here with cc), and a table of corrupted channels, dumps, files and maps
 * that must each be refused with an error naming the field.
 */
#include <elf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libhvtrace.h"
#include "unit.h"

#define REC ((uint64_t)sizeof(struct hvtrace_rec))

static char tmpdir[] = "/tmp/hvt-unit-XXXXXX";

static char *tmp_path(const char *name)
{
	static char buf[4][256];
	static unsigned k;
	char *p = buf[k++ % 4];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A channel in a malloc'd, page-aligned buffer. */
static void *make_chan(const struct hvt_ring_spec *rs, unsigned n, uint32_t vcpus, uint64_t *size)
{
	struct hvt_err err;
	void *buf;

	*size = hvt_chan_layout_size(rs, n);
	if (posix_memalign(&buf, 4096, *size))
		abort();
	if (hvt_chan_layout(buf, *size, rs, n, vcpus, 2000000000ull, &err))
		abort();
	return buf;
}

/* A stream drained ring by ring (vCPU 0's records, then vCPU 1's, then
 * vCPU 0's again): merged into one timeline by TSC, each vCPU's order
 * kept, ties in file order; a file in order is left as mapped. */
static void test_file_merge_tsc(void)
{
	struct hvtrace_rec recs[12];
	struct hvt_fwriter w;
	struct hvt_file f;
	struct hvt_err err;
	const char *path = tmp_path("merge.hvt");
	static const uint64_t tsc[12] = { 10, 20, 30, 40, 15, 25, 25, 35, 45, 50, 60, 70 };
	static const uint16_t vcpu[12] = { 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0 };
	uint64_t i;

	for (i = 0; i < 12; i++) {
		hvt_synth_rec(vcpu[i], i, 5, &recs[i]);
		recs[i].tsc = tsc[i];
		recs[i].aux = (uint32_t)i;	/* the file position, to check stability */
	}
	CHECK(hvt_fwriter_open(&w, path, 0, 1000000000ull, 2, 0, &err) == 0 &&
		      hvt_fwriter_put(&w, recs, 12, &err) == 0 && hvt_fwriter_finish(&w, 0, &err) == 0,
	      "%s", err.msg);
	CHECK(hvt_file_open(&f, path, &err) == 0 && hvt_file_merge_tsc(&f, &err) == 0 && f.merged,
	      "merge: %s", err.msg);
	int ordered = 1, stable = 1;
	for (i = 1; i < f.nr; i++) {
		ordered &= f.recs[i - 1].tsc <= f.recs[i].tsc;
		if (f.recs[i - 1].tsc == f.recs[i].tsc)
			stable &= f.recs[i - 1].aux < f.recs[i].aux;
	}
	CHECK(f.nr == 12 && ordered && stable, "one timeline by TSC, ties in file order");
	uint32_t last[2] = { 0, 0 };
	int per_vcpu = 1;
	for (i = 0; i < f.nr; i++) {
		per_vcpu &= !last[f.recs[i].vcpu] || f.recs[i].aux > last[f.recs[i].vcpu] - 1;
		last[f.recs[i].vcpu] = f.recs[i].aux + 1;
	}
	CHECK(per_vcpu, "each vCPU's records in their own order");
	hvt_file_close(&f);
	/* already in order: nothing copied */
	hvt_fwriter_open(&w, path, 0, 0, 1, 0, &err);
	hvt_fwriter_put(&w, recs, 4, &err);
	hvt_fwriter_finish(&w, 0, &err);
	CHECK(hvt_file_open(&f, path, &err) == 0 && hvt_file_merge_tsc(&f, &err) == 0 && !f.merged,
	      "an ordered file is left as it is");
	hvt_file_close(&f);
}

/* ---------------------------------------------------------------- */

static void test_ring_arithmetic(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 8 } };
	struct hvtrace_rec out[8], r;
	struct hvt_ring_counters c;
	struct hvt_producer p;
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t size, torn, i;
	void *buf = make_chan(rs, 1, 1, &size);
	int64_t n;

	hvt_producer_init(&p, buf);
	CHECK(hvt_chan_validate(&ch, buf, size, &err) == 0, "validate: %s", err.msg);
	/* fewer records than capacity: all of them */
	for (i = 0; i < 5; i++) {
		hvt_synth_rec(0, i, 5, &r);
		hvt_producer_put(&p, 0, &r);
	}
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(hvt_ring_fill(&ch, 0, &c) == 5, "fill %llu", (unsigned long long)hvt_ring_fill(&ch, 0, &c));
	n = hvt_ring_snapshot(&ch, 0, 0, out, &torn, &err);
	CHECK(n == 5 && torn == 0, "n %lld torn %llu", (long long)n, (unsigned long long)torn);
	CHECK(out[0].tsc == 1000 && out[4].tsc == 1400, "order %llu %llu", (unsigned long long)out[0].tsc,
	      (unsigned long long)out[4].tsc);
	/* wrapped twice: the newest 8, oldest first */
	for (; i < 21; i++) {
		hvt_synth_rec(0, i, 5, &r);
		hvt_producer_put(&p, 0, &r);
	}
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(c.head == 21 && hvt_ring_fill(&ch, 0, &c) == 8, "head %llu", (unsigned long long)c.head);
	n = hvt_ring_snapshot(&ch, 0, 0, out, &torn, &err);
	CHECK(n == 8 && torn == 0, "still ring: n %lld torn %llu", (long long)n, (unsigned long long)torn);
	for (i = 0; i < 8; i++)
		CHECK(out[i].tsc == 1000 + (13 + i) * 100, "slot %llu tsc %llu", (unsigned long long)i,
		      (unsigned long long)out[i].tsc);
	/* live: the oldest slot may be under the producer's pen */
	n = hvt_ring_snapshot(&ch, 0, 1, out, &torn, &err);
	CHECK(n == 7 && torn == 1 && out[0].tsc == 1000 + 14 * 100, "live: n %lld torn %llu",
	      (long long)n, (unsigned long long)torn);
	free(buf);
}

/* A producer lapping a small OVERWRITE ring while snapshots are taken:
 * every record kept must be whole (its fields agree) and in sequence. */
struct lapper {
	void *buf;
	volatile int stop;
};

static void *lap_thread(void *arg)
{
	struct lapper *l = arg;
	struct hvt_producer p;
	uint64_t i;

	hvt_producer_init(&p, l->buf);
	for (i = 0; !l->stop; i++) {
		struct hvtrace_rec r = { .tsc = i, .from = i * 3, .to = ~i, .vcpu = 0,
					 .kind = HVTRACE_REC_BRANCH, .aux = HVTRACE_BR_JMP };

		hvt_producer_put(&p, 0, &r);
	}
	return NULL;
}

static void test_torn_records(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 16 } };
	struct lapper l;
	struct hvtrace_rec out[16];
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t size, torn, torn_total = 0, bad = 0, snaps = 0, t0 = now_ms();
	pthread_t th;

	l.buf = make_chan(rs, 1, 1, &size);
	l.stop = 0;
	hvt_chan_validate(&ch, l.buf, size, &err);
	pthread_create(&th, NULL, lap_thread, &l);
	while (now_ms() - t0 < 3000 && (snaps < 20000 || !torn_total)) {
		int64_t n = hvt_ring_snapshot(&ch, 0, 1, out, &torn, &err), i;

		snaps++;
		torn_total += torn;
		for (i = 0; i < n; i++)
			if (out[i].from != out[i].tsc * 3 || out[i].to != ~out[i].tsc ||
			    (i && out[i].tsc != out[i - 1].tsc + 1))
				bad++;
	}
	l.stop = 1;
	pthread_join(th, NULL);
	CHECK(bad == 0, "%llu torn or out-of-order records kept in %llu snapshots",
	      (unsigned long long)bad, (unsigned long long)snaps);
	CHECK(torn_total > 0, "no lapped record seen in %llu snapshots", (unsigned long long)snaps);
	free(l.buf);
}

/* Sums what a drained stream holds: data records, and LOST counts. */
static void tally(const struct hvtrace_rec *r, uint64_t n, uint64_t *data, uint64_t *lost_sum,
		  uint64_t *next_tsc, uint64_t *order_bad)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		if (r[i].kind == HVTRACE_REC_LOST) {
			*lost_sum += r[i].from;
			/* the records it stands for came before the next one */
			if (r[i].to != *next_tsc)
				(*order_bad)++;
			*next_tsc += r[i].from * 100;
			continue;
		}
		if (r[i].tsc != *next_tsc)
			(*order_bad)++;
		*next_tsc = r[i].tsc + 100;
		(*data)++;
	}
}

static void test_lossless_single(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_LOSSLESS, .capacity = 16,
					.wait_us = 2000 } };
	struct hvtrace_rec out[64], r;
	struct hvt_ring_counters c;
	struct hvt_producer p;
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t size, i, data = 0, lost_sum = 0, next = 1000, order_bad = 0, t0;
	void *buf = make_chan(rs, 1, 1, &size);
	int64_t n;

	hvt_producer_init(&p, buf);
	hvt_chan_validate(&ch, buf, size, &err);
	/* no reader: no waiting, drops at once when full */
	for (i = 0; i < 20; i++) {
		hvt_synth_rec(0, i, 5, &r);
		hvt_producer_put(&p, 0, &r);
	}
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(c.head == 16 && c.lost == 4 && c.waits == 0, "head %llu lost %llu waits %llu",
	      (unsigned long long)c.head, (unsigned long long)c.lost, (unsigned long long)c.waits);
	CHECK(hvt_ring_attach(&ch, 0, 4242, &err) == 0, "attach: %s", err.msg);
	CHECK(hvt_ring_attach(&ch, 0, (uint64_t)getpid(), &err) == 0,
	      "a dead reader's pid is taken over: %s", err.msg);
	CHECK(hvt_ring_attach(&ch, 0, 1, &err) < 0 && strstr(err.msg, "attached already"),
	      "a live reader keeps the ring: %s", err.msg);
	n = hvt_ring_drain(&ch, 0, out, 10, &err);
	CHECK(n == 10, "drain %lld", (long long)n);
	tally(out, (uint64_t)n, &data, &lost_sum, &next, &order_bad);
	/* 6 held + LOST + record 20 = 8 */
	hvt_synth_rec(0, 20, 5, &r);
	CHECK(hvt_producer_put(&p, 0, &r) == HVT_PUT_OK, "put after space returned");
	n = hvt_ring_drain(&ch, 0, out, 64, &err);
	CHECK(n == 8 && out[6].kind == HVTRACE_REC_LOST && out[6].from == 4 && out[6].to == 2600,
	      "LOST record: n %lld kind %u from %llu to %llu", (long long)n, out[6].kind,
	      (unsigned long long)out[6].from, (unsigned long long)out[6].to);
	tally(out, (uint64_t)n, &data, &lost_sum, &next, &order_bad);
	CHECK(data + lost_sum == 21 && lost_sum == 4 && order_bad == 0, "data %llu lost %llu bad %llu",
	      (unsigned long long)data, (unsigned long long)lost_sum, (unsigned long long)order_bad);
	/* reader attached, ring full: one wait of wait_us, then drops without waiting */
	for (i = 21; i < 37; i++) {
		hvt_synth_rec(0, i, 5, &r);
		hvt_producer_put(&p, 0, &r);
	}
	t0 = now_ms();
	hvt_synth_rec(0, 37, 5, &r);
	CHECK(hvt_producer_put(&p, 0, &r) == HVT_PUT_DROPPED, "dropped when full");
	CHECK(now_ms() - t0 >= 2, "waited %llu ms for the reader", (unsigned long long)(now_ms() - t0));
	hvt_synth_rec(0, 38, 5, &r);
	hvt_producer_put(&p, 0, &r);
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(c.waits == 1 && c.lost == 6, "waits %llu lost %llu", (unsigned long long)c.waits,
	      (unsigned long long)c.lost);
	hvt_ring_detach(&ch, 0, (uint64_t)getpid());
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(c.reader == 0, "detached");
	free(buf);
}

/* Producer and reader on two threads; every record accounted for. */
struct prod_arg {
	void *buf;
	uint64_t count, dropped;
	volatile int done;
};

static void *prod_thread(void *arg)
{
	struct prod_arg *a = arg;
	struct hvt_producer p;
	uint64_t i;

	hvt_producer_init(&p, a->buf);
	for (i = 0; i < a->count; i++) {
		struct hvtrace_rec r;

		hvt_synth_rec(0, i, 5, &r);
		if (hvt_producer_put(&p, 0, &r) == HVT_PUT_DROPPED)
			a->dropped++;
	}
	hvt_producer_flush_lost(&p, 0, 10000000);
	a->done = 1;
	return NULL;
}

static void test_lossless_threads(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_LOSSLESS, .capacity = 64,
					.wait_us = 20 } };
	struct hvtrace_rec out[64];
	struct hvt_ring_counters c;
	struct prod_arg a = { .count = 300000 };
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t size, data = 0, lost_sum = 0, next = 1000, order_bad = 0, steps = 0;
	pthread_t th;

	a.buf = make_chan(rs, 1, 1, &size);
	hvt_chan_validate(&ch, a.buf, size, &err);
	hvt_ring_attach(&ch, 0, (uint64_t)getpid(), &err);
	pthread_create(&th, NULL, prod_thread, &a);
	for (;;) {
		int done = a.done;
		int64_t n = hvt_ring_drain(&ch, 0, out, 64, &err);

		if (n < 0)
			break;
		tally(out, (uint64_t)n, &data, &lost_sum, &next, &order_bad);
		if (++steps % 64 == 0)	/* a slow reader now and then: drops */
			usleep(200);
		if (done && !n)
			break;
	}
	pthread_join(th, NULL);
	hvt_ring_counters(&ch, 0, &c, &err);
	CHECK(data + lost_sum == a.count, "received %llu + lost %llu != produced %llu",
	      (unsigned long long)data, (unsigned long long)lost_sum, (unsigned long long)a.count);
	CHECK(lost_sum == c.lost && lost_sum == a.dropped, "LOST records %llu, ring lost %llu, dropped %llu",
	      (unsigned long long)lost_sum, (unsigned long long)c.lost, (unsigned long long)a.dropped);
	CHECK(order_bad == 0, "%llu records out of sequence", (unsigned long long)order_bad);
	CHECK(c.lost > 0 && c.waits > 0, "the slow reader caused drops (%llu) and waits (%llu)",
	      (unsigned long long)c.lost, (unsigned long long)c.waits);
	free(a.buf);
}

static void test_sort(void)
{
	struct hvtrace_rec r[5] = {
		{ .tsc = 5, .aux = 0 }, { .tsc = 1, .aux = 1 }, { .tsc = 5, .aux = 2 },
		{ .tsc = 0, .aux = 3 }, { .tsc = 1, .aux = 4 },
	};

	hvt_recs_sort_tsc(r, 5);
	CHECK(r[0].aux == 3 && r[1].aux == 1 && r[2].aux == 4 && r[3].aux == 0 && r[4].aux == 2,
	      "stable by tsc: %u %u %u %u %u", r[0].aux, r[1].aux, r[2].aux, r[3].aux, r[4].aux);
}

/* ---------------------------------------------------------------- */

static void test_file_roundtrip(void)
{
	struct hvtrace_rec recs[100];
	struct hvt_fwriter w;
	struct hvt_file f;
	struct hvt_err err;
	const char *path = tmp_path("rt.hvt");
	uint64_t i;
	FILE *fp;

	for (i = 0; i < 100; i++)
		hvt_synth_rec((uint32_t)(i % 3), i, 5, &recs[i]);
	CHECK(hvt_fwriter_open(&w, path, HVTRACE_FILE_SNAPSHOT, 3000000000ull, 3, 1, &err) == 0, "%s",
	      err.msg);
	hvt_fwriter_put(&w, recs, 60, &err);
	/* while written: COMPLETE clear, the length decides */
	CHECK(hvt_file_open(&f, path, &err) == 0 && f.nr == 60 && !(f.hdr.flags & HVTRACE_FILE_COMPLETE),
	      "unfinished: %s nr %llu", err.msg, (unsigned long long)f.nr);
	hvt_file_close(&f);
	hvt_fwriter_put(&w, recs + 60, 40, &err);
	CHECK(hvt_fwriter_finish(&w, 7, &err) == 0, "%s", err.msg);
	CHECK(hvt_file_open(&f, path, &err) == 0, "%s", err.msg);
	CHECK(f.nr == 100 && f.hdr.records == 100 && f.hdr.lost == 7 && f.hdr.tsc_hz == 3000000000ull &&
		      f.hdr.flags == (HVTRACE_FILE_COMPLETE | HVTRACE_FILE_SNAPSHOT) && f.hdr.nr_vcpus == 3,
	      "header: nr %llu flags %x", (unsigned long long)f.nr, f.hdr.flags);
	CHECK(!memcmp(f.recs, recs, sizeof(recs)), "records round trip");
	CHECK(hvt_file_check_records(&f, &err) == 0, "%s", err.msg);
	hvt_file_close(&f);
	/* a killed writer: header not final, a partial record at the end */
	hvt_fwriter_open(&w, path, 0, 0, 1, 0, &err);
	hvt_fwriter_put(&w, recs, 10, &err);
	CHECK(write(w.fd, recs, 20) == 20, "partial write");
	hvt_fwriter_abort(&w);
	CHECK(hvt_file_open(&f, path, &err) == 0 && f.nr == 10 && f.partial, "partial: %s", err.msg);
	hvt_file_close(&f);
	/* a finished file cut short */
	hvt_fwriter_open(&w, path, 0, 0, 1, 0, &err);
	hvt_fwriter_put(&w, recs, 10, &err);
	hvt_fwriter_finish(&w, 0, &err);
	CHECK(truncate(path, 128 + 9 * 32 + 5) == 0, "truncate");
	CHECK(hvt_file_open(&f, path, &err) < 0 && strstr(err.msg, "truncated"), "cut short: %s", err.msg);
	fp = fopen(path, "w");
	fclose(fp);
	CHECK(hvt_file_open(&f, path, &err) < 0 && strstr(err.msg, "empty"), "empty: %s", err.msg);
}

/* ---------------------------------------------------------------- */

static void test_symbols(void)
{
	static const char map[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 t helper\n"
		"ffffffff81000080 T start_kernel\n"
		"ffffffff81000180 D some_data\n"
		"ffffffff81000200 W weak_fn\n"
		"ffffffff81000300 t mod_fn\t[e1000]\n";
	struct hvt_syms s;
	struct hvt_err err;
	const struct hvt_sym *sym;
	uint64_t off = 0;
	char buf[64], cmd[512];
	const char *src = tmp_path("tiny.c"), *elf = tmp_path("tiny.elf");
	FILE *f;

	CHECK(hvt_syms_parse_map(&s, map, sizeof(map) - 1, &err) == 0, "%s", err.msg);
	CHECK(s.n == 5, "5 text symbols, got %zu", s.n);
	sym = hvt_syms_lookup(&s, 0xffffffff81000090ull, &off);
	CHECK(sym && !strcmp(sym->name, "start_kernel") && off == 0x10, "nearest below");
	sym = hvt_syms_lookup(&s, 0xffffffff810001a0ull, &off);
	CHECK(sym && !strcmp(sym->name, "helper") && off == 0xa0, "data symbols skipped");
	CHECK(!strcmp(hvt_syms_format(&s, 0xffffffff81000300ull, buf, sizeof(buf)), "mod_fn"),
	      "module column: %s", buf);
	CHECK(!hvt_syms_lookup(&s, 0xffffffff80000000ull, &off), "below the first symbol");
	CHECK(!strcmp(hvt_syms_format(&s, 0x1234, buf, sizeof(buf)), "0x1234"), "unknown: %s", buf);
	/* the last symbol of a map without sizes ends at the page after its own (as perf
	 * bounds it); the recorder's hidden kernel end is no address */
	sym = hvt_syms_lookup(&s, 0xffffffff81001fffull, &off);
	CHECK(sym && !strcmp(sym->name, "mod_fn"), "the last symbol, within the next page");
	CHECK(!hvt_syms_lookup(&s, 0xffffffff81002000ull, &off), "past the last symbol's bound");
	CHECK(!hvt_syms_lookup(&s, HVTRACE_ADDR_KERNEL, &off), "the hidden kernel end: no symbol");
	hvt_syms_free(&s);

	/* a tiny ELF, linked here */
	f = fopen(src, "w");
	fputs("void beta(void);\n"
	      "__attribute__((noinline)) void alpha(void) { __asm__ volatile(\"nop; nop; nop\"); }\n"
	      "__attribute__((noinline)) void beta(void) { alpha(); }\n"
	      "void _start(void) { beta(); for (;;); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -nostdlib -static -fno-pie -no-pie -o %s %s", elf, src);
	CHECK(system(cmd) == 0, "cc builds the tiny ELF");
	CHECK(hvt_syms_load(&s, elf, &err) == 0, "%s", err.msg);
	{
		size_t i;
		const struct hvt_sym *a = NULL, *b = NULL;

		for (i = 0; i < s.n; i++) {
			if (!strcmp(s.v[i].name, "alpha"))
				a = &s.v[i];
			if (!strcmp(s.v[i].name, "beta"))
				b = &s.v[i];
		}
		CHECK(a && b && a->size && b->size, "alpha and beta with sizes");
		if (a && b) {
			sym = hvt_syms_lookup(&s, a->addr + 1, &off);
			CHECK(sym == a && off == 1, "alpha+1");
			sym = hvt_syms_lookup(&s, b->addr + b->size - 1, &off);
			CHECK(sym == b && off == b->size - 1, "the last byte of beta");
			snprintf(cmd, sizeof(cmd), "nm %s | grep -q '^0*%llx T beta$'", elf,
				 (unsigned long long)b->addr);
			CHECK(system(cmd) == 0, "nm agrees on beta at 0x%llx", (unsigned long long)b->addr);
		}
	}
	hvt_syms_free(&s);
}

/* ---------------------------------------------------------------- */
/* Corrupted inputs: each must be refused, the error naming the field. */

/* The channel the tables start from: ring 0 overwrite 256 records (2
 * pages), ring 1 lossless 64 (1 page), 16 KiB in all. */
static void *make_two_rings(uint64_t *size)
{
	static const struct hvt_ring_spec rs[] = {
		{ .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 256 },
		{ .vcpu = 1, .mode = HVTRACE_RING_LOSSLESS, .capacity = 64 },
	};

	return make_chan(rs, 2, 2, size);
}

static void expect_refused(const char *name, int rc, const struct hvt_err *err, const char *expect)
{
	CHECK(rc < 0 && strstr(err->msg, expect), "%s: rc %d, error '%s' (wanted '%s')", name, rc,
	      err->msg, expect);
}

struct chan_case {
	const char *name, *expect;
	void (*mutate)(struct hvtrace_chan *h);
	uint64_t avail_cut;	/* bytes fewer than the buffer */
};

static void m_magic(struct hvtrace_chan *h) { h->magic ^= 1; }
static void m_abi(struct hvtrace_chan *h) { h->abi_version = (HVTRACE_ABI_MAJOR + 1) << 16; }
static void m_rec_size(struct hvtrace_chan *h) { h->rec_size = 16; }
static void m_hdr_size(struct hvtrace_chan *h) { h->hdr_size = 2048; }
static void m_nr_rings(struct hvtrace_chan *h) { h->nr_rings = HVTRACE_CHAN_MAX_RINGS + 1; }
static void m_size_big(struct hvtrace_chan *h) { h->size += 4096; }
static void m_size_small(struct hvtrace_chan *h) { h->size = 100; }
static void m_state(struct hvtrace_chan *h) { h->state = 9; }
static void m_freeze(struct hvtrace_chan *h) { h->freeze = 77; }
static void m_where(struct hvtrace_chan *h) { h->where = 0; }
static void m_vcpus(struct hvtrace_chan *h) { h->nr_vcpus = 1; h->rings[1].vcpu = 5; }
static void m_misaligned(struct hvtrace_chan *h) { h->rings[0].offset += 32; }
static void m_off_hdr(struct hvtrace_chan *h) { h->rings[0].offset = 0; }
static void m_off_out(struct hvtrace_chan *h) { h->rings[1].offset = h->size; }
static void m_overlap(struct hvtrace_chan *h) { h->rings[1].offset = h->rings[0].offset; }
static void m_cap0(struct hvtrace_chan *h) { h->rings[0].capacity = 0; }
static void m_cap1(struct hvtrace_chan *h) { h->rings[0].capacity = 1; }
static void m_cap3(struct hvtrace_chan *h) { h->rings[0].capacity = 3; }
static void m_cap_huge(struct hvtrace_chan *h) { h->rings[1].capacity = 1ull << 62; }
static void m_cap_past(struct hvtrace_chan *h) { h->rings[1].capacity *= 4; }
static void m_consumer(struct hvtrace_chan *h) { h->rings[0].consumer = 3; }
static void m_mode(struct hvtrace_chan *h) { h->rings[0].mode = 0; }
static void m_cpl(struct hvtrace_chan *h) { h->rings[1].cpl_filter = 3; }
static void m_head(struct hvtrace_chan *h) { h->rings[0].head = 1ull << 60; }
static void m_lost(struct hvtrace_chan *h) { h->rings[0].lost = ~0ull; }
static void m_tail(struct hvtrace_chan *h) { h->rings[1].tail = h->rings[1].head + 1; }
static void m_ahead(struct hvtrace_chan *h) { h->rings[1].head = h->rings[1].tail + 65; }

static const struct chan_case chan_cases[] = {
	{ "bad magic", "magic", m_magic, 0 },
	{ "wrong ABI major", "abi_version", m_abi, 0 },
	{ "rec_size wrong", "rec_size", m_rec_size, 0 },
	{ "hdr_size wrong", "hdr_size", m_hdr_size, 0 },
	{ "nr_rings too big", "nr_rings", m_nr_rings, 0 },
	{ "size past the mapping", "size", m_size_big, 0 },
	{ "size below the header", "size", m_size_small, 0 },
	{ "mapping shorter than size", "size", NULL, 4096 },
	{ "mapping shorter than the header", "header", NULL, 16384 - 100 },
	{ "state unknown", "state 9", m_state, 0 },
	{ "freeze unknown", "freeze 77", m_freeze, 0 },
	{ "where unknown", "where 0", m_where, 0 },
	{ "ring vcpu >= nr_vcpus", "vcpu 5", m_vcpus, 0 },
	{ "ring offset misaligned", "not 4 KiB-aligned", m_misaligned, 0 },
	{ "ring offset in the header", "outside", m_off_hdr, 0 },
	{ "ring offset out of range", "outside", m_off_out, 0 },
	{ "rings overlapping", "overlaps", m_overlap, 0 },
	{ "capacity 0", "capacity 0", m_cap0, 0 },
	{ "capacity 1", "capacity 1", m_cap1, 0 },
	{ "capacity not a power of two", "capacity 3", m_cap3, 0 },
	{ "capacity huge", "runs past", m_cap_huge, 0 },
	{ "capacity past the channel", "runs past", m_cap_past, 0 },
	{ "consumer unknown", "consumer 3", m_consumer, 0 },
	{ "mode unknown", "mode 0", m_mode, 0 },
	{ "cpl_filter unknown", "cpl_filter 3", m_cpl, 0 },
	{ "head absurd", "head", m_head, 0 },
	{ "lost absurd", "lost", m_lost, 0 },
	{ "lossless tail past head", "tail", m_tail, 0 },
	{ "lossless head past tail + capacity", "more than capacity", m_ahead, 0 },
};

static void test_corrupt_channels(void)
{
	uint64_t size;
	void *good = make_two_rings(&size), *buf;
	struct hvt_chan ch;
	struct hvt_err err;
	size_t i;

	CHECK(size == 16384, "layout size %llu", (unsigned long long)size);
	CHECK(hvt_chan_validate(&ch, good, size, &err) == 0, "the good one: %s", err.msg);
	buf = malloc(size);
	for (i = 0; i < sizeof(chan_cases) / sizeof(chan_cases[0]); i++) {
		const struct chan_case *c = &chan_cases[i];
		int rc;

		memcpy(buf, good, size);
		if (c->mutate)
			c->mutate(buf);
		err.msg[0] = 0;
		rc = hvt_chan_validate(&ch, buf, size - c->avail_cut, &err);
		expect_refused(c->name, rc, &err, c->expect);
	}
	free(buf);
	free(good);
}

/* The channel of a dump with exactly one valid header, as hvtrace opens it;
 * base: a raw image of memory from *base (hvtrace --base), or NULL. */
static int open_dump_base(struct hvt_chan *ch, const void *buf, size_t len, const uint64_t *base,
			  struct hvt_err *err)
{
	struct hvt_dump d;
	int rc;

	if (base ? hvt_dump_open_raw_mem(&d, buf, len, *base, err) : hvt_dump_open_mem(&d, buf, len, err))
		return -1;
	rc = d.nr_cand == 1 ? hvt_dump_chan(&d, d.cand[0].pa, ch, err) : -1;
	if (d.nr_cand != 1)
		hvt_seterr(err, "%zu headers", d.nr_cand);
	hvt_dump_close(&d);
	return rc;
}

static int open_dump_mem(struct hvt_chan *ch, const void *buf, size_t len, struct hvt_err *err)
{
	return open_dump_base(ch, buf, len, NULL, err);
}

struct dump_case {
	const char *name, *expect;
	int (*make)(uint8_t *mem, size_t len, void *chan, uint64_t chan_size);
	int elf;
};

#define DUMP_LEN (64 * 1024)
#define DUMP_AT 0x8000

static int d_none(uint8_t *mem, size_t len, void *chan, uint64_t n)
{
	(void)chan, (void)n;
	memset(mem, 0x5a, len);
	return 0;
}

static int d_decoy(uint8_t *mem, size_t len, void *chan, uint64_t n)
{
	uint64_t magic = HVTRACE_CHAN_MAGIC;

	d_none(mem, len, chan, n);
	memcpy(mem + 0x3000, &magic, 8);
	return 0;
}

static int d_unaligned(uint8_t *mem, size_t len, void *chan, uint64_t n)
{
	d_none(mem, len, chan, n);
	memcpy(mem + DUMP_AT + 64, chan, n);
	return 0;
}

static int d_cut(uint8_t *mem, size_t len, void *chan, uint64_t n)
{
	d_none(mem, len, chan, n);
	memcpy(mem + len - 8192, chan, 8192);	/* the header says 16384 */
	return 0;
}

static int d_badring(uint8_t *mem, size_t len, void *chan, uint64_t n)
{
	d_none(mem, len, chan, n);
	memcpy(mem + DUMP_AT, chan, n);
	((struct hvtrace_chan *)(mem + DUMP_AT))->rings[0].capacity = 5;
	return 0;
}

static const struct dump_case dump_cases[] = {
	{ "dump without channel", "no channel", d_none, 0 },
	{ "dump without channel (ELF)", "no channel", d_none, 1 },
	{ "magic on a page that is no channel", "rejected", d_decoy, 0 },
	{ "channel not 4 KiB-aligned", "no channel", d_unaligned, 0 },
	{ "channel cut off by the dump's end", "runs past the dump", d_cut, 0 },
	{ "channel with a bad ring (ELF)", "capacity 5", d_badring, 1 },
};

static void test_dumps(void)
{
	uint64_t size;
	void *chan = make_two_rings(&size);
	uint8_t *mem = malloc(DUMP_LEN), *elf;
	struct hvt_chan ch;
	struct hvt_err err;
	size_t i, elf_len;

	/* found in a raw image and an ELF core, at the same address */
	d_decoy(mem, DUMP_LEN, chan, size);
	memcpy(mem + DUMP_AT, chan, size);
	CHECK(open_dump_mem(&ch, mem, DUMP_LEN, &err) == 0 && ch.found_at == DUMP_AT &&
		      !strcmp(ch.dump_format, "raw") && ch.nr_rings == 2,
	      "raw: %s", err.msg);
	hvt_chan_close(&ch);
	elf = hvt_elf_core_image(mem, DUMP_AT, DUMP_LEN, &elf_len);
	CHECK(open_dump_mem(&ch, elf, elf_len, &err) == 0 && ch.found_at == DUMP_AT &&
		      !strcmp(ch.dump_format, "elf"),
	      "elf: %s", err.msg);
	hvt_chan_close(&ch);
	/* ELF cores broken in their program headers, a kdump file */
	{
		Elf64_Ehdr *e = (Elf64_Ehdr *)elf;
		Elf64_Phdr *ph = (Elf64_Phdr *)(elf + e->e_phoff);

		ph[1].p_filesz = elf_len;	/* runs past the file */
		CHECK(open_dump_mem(&ch, elf, elf_len, &err) < 0 &&
			      strstr(err.msg, "runs past the file"),
		      "PT_LOAD past the file: %s", err.msg);
		ph[0].p_type = PT_NOTE;
		ph[1].p_type = PT_NULL;
		CHECK(open_dump_mem(&ch, elf, elf_len, &err) < 0 && strstr(err.msg, "PT_LOAD"),
		      "no PT_LOAD: %s", err.msg);
		e->e_phnum = 0xffff;
		e->e_phoff = elf_len - 8;
		CHECK(open_dump_mem(&ch, elf, elf_len, &err) < 0, "bad e_phoff: %s", err.msg);
		memcpy(elf, "KDUMP   ", 8);
		CHECK(open_dump_mem(&ch, elf, elf_len, &err) < 0 && strstr(err.msg, "kdump"),
		      "kdump: %s", err.msg);
	}
	free(elf);
	for (i = 0; i < sizeof(dump_cases) / sizeof(dump_cases[0]); i++) {
		const struct dump_case *c = &dump_cases[i];
		int rc;

		c->make(mem, DUMP_LEN, chan, size);
		err.msg[0] = 0;
		if (c->elf) {
			elf = hvt_elf_core_image(mem, DUMP_AT, DUMP_LEN, &elf_len);
			rc = open_dump_mem(&ch, elf, elf_len, &err);
			free(elf);
		} else {
			rc = open_dump_mem(&ch, mem, DUMP_LEN, &err);
		}
		expect_refused(c->name, rc, &err, c->expect);
		if (!rc)
			hvt_chan_close(&ch);
	}
	free(mem);
	free(chan);
}

/* ELF segments in any order and split inside the channel; a hole or an
 * overlap refused; every valid header found and none picked for the caller. */
static void test_dump_candidates(void)
{
	uint64_t size;
	void *chan = make_two_rings(&size);
	uint8_t *mem = malloc(DUMP_LEN), *elf;
	struct hvt_elf_seg seg[4] = {
		{ 0xa100, DUMP_LEN - 0xa100 }, { 0x9000, 0x1100 }, { DUMP_AT, 0x1000 }, { 0, DUMP_AT },
	};
	struct hvt_dump d;
	struct hvt_chan ch;
	struct hvt_err err;
	size_t len;

	d_none(mem, DUMP_LEN, chan, size);
	memcpy(mem + DUMP_AT, chan, size);
	elf = hvt_elf_core_segs(mem, seg, 4, &len);
	CHECK(hvt_dump_open_mem(&d, elf, len, &err) == 0 && d.nr_cand == 1 && d.cand[0].pa == DUMP_AT &&
		      d.cand[0].nr_rings == 2 && d.cand[0].size == size,
	      "segments reversed and split: %s", err.msg);
	CHECK(hvt_dump_chan(&d, DUMP_AT, &ch, &err) == 0 && !memcmp(ch.base, chan, size) &&
		      ch.dump_headers == 1,
	      "the channel copied across three segments: %s", err.msg);
	hvt_chan_close(&ch);
	hvt_dump_close(&d);
	free(elf);
	seg[1].len = 0x1000;	/* 0xa000..0xa100 missing */
	elf = hvt_elf_core_segs(mem, seg, 4, &len);
	expect_refused("a hole inside the channel", hvt_dump_open_mem(&d, elf, len, &err), &err,
		       "runs past the dump");
	free(elf);
	seg[1] = (struct hvt_elf_seg){ 0x8800, 0x1900 };
	elf = hvt_elf_core_segs(mem, seg, 4, &len);
	expect_refused("overlapping segments", hvt_dump_open_mem(&d, elf, len, &err), &err,
		       "PT_LOAD 1 (0x8800..0xa100) overlaps PT_LOAD 2 (0x8000..0x9000)");
	free(elf);

	/* a header the guest wrote below the real one: both are candidates */
	memcpy(mem + 0x2000, chan, size);
	CHECK(hvt_dump_open_mem(&d, mem, DUMP_LEN, &err) == 0 && d.nr_cand == 2 &&
		      d.cand[0].pa == 0x2000 && d.cand[1].pa == DUMP_AT,
	      "two headers: %s, %zu candidates", err.msg, d.nr_cand);
	CHECK(hvt_dump_chan(&d, DUMP_AT, &ch, &err) == 0 && ch.found_at == DUMP_AT && ch.dump_headers == 2,
	      "the one asked for: %s", err.msg);
	hvt_chan_close(&ch);
	CHECK(hvt_dump_chan(&d, 0x2000, &ch, &err) == 0 && ch.found_at == 0x2000, "the other: %s", err.msg);
	hvt_chan_close(&ch);
	expect_refused("a page without a header", hvt_dump_chan(&d, 0x3000, &ch, &err), &err,
		       "no valid channel header at guest-physical 0x3000");
	hvt_dump_close(&d);
	free(mem);
	free(chan);
}

static int open_raw_mem(struct hvt_chan *ch, const void *buf, size_t len, uint64_t base, struct hvt_err *err)
{
	return open_dump_base(ch, buf, len, &base, err);
}

/* A raw image of one range of memory with its base address (Bochs's
 * writemem, pmemsave ADDR SIZE): found where it is; a range cut short, a
 * base that puts the header off a page, an ELF core given a base, a range
 * past 2^64 and a corrupt ring refused, each saying so. */
static void test_dump_raw_base(void)
{
	uint64_t size, pa = 0x41f1000;
	void *chan = make_two_rings(&size);
	uint8_t *mem = malloc(size + 0x2000), *elf;
	struct hvt_chan ch;
	struct hvt_err err;
	char want[128];
	size_t elf_len;

	/* the channel alone, and with a page of other memory on each side */
	CHECK(open_raw_mem(&ch, chan, size, pa, &err) == 0 && ch.found_at == pa &&
		      !strcmp(ch.dump_format, "raw") && ch.nr_rings == 2 && !memcmp(ch.base, chan, size),
	      "the channel alone from its address: %s", err.msg);
	hvt_chan_close(&ch);
	d_none(mem, size + 0x2000, chan, size);
	memcpy(mem + 0x1000, chan, size);
	CHECK(open_raw_mem(&ch, mem, size + 0x2000, pa - 0x1000, &err) == 0 && ch.found_at == pa,
	      "a page before and after: %s", err.msg);
	hvt_chan_close(&ch);
	/* base 0 is the whole-memory image hvt_dump_open reads */
	CHECK(open_raw_mem(&ch, mem, size + 0x2000, 0, &err) == 0 && ch.found_at == 0x1000,
	      "base 0: %s", err.msg);
	hvt_chan_close(&ch);

	/* cut short: by a record, to the header's page, inside the header */
	snprintf(want, sizeof(want), "size %llu runs past the dump, whose memory there ends at 0x%llx",
		 (unsigned long long)size, (unsigned long long)(pa + size - 32));
	expect_refused("a range a record short", open_raw_mem(&ch, chan, size - 32, pa, &err), &err, want);
	expect_refused("the header's page only", open_raw_mem(&ch, chan, 4096, pa, &err), &err,
		       "runs past the dump");
	expect_refused("half the header", open_raw_mem(&ch, chan, 64, pa, &err), &err,
		       "channel header at 0x41f1000 runs past the dump");
	/* a base off by half a page: no page-aligned header */
	expect_refused("base off by 0x800", open_raw_mem(&ch, chan, size, pa + 0x800, &err), &err,
		       "no channel (no 4 KiB-aligned page in 0x41f1800..");
	/* a corrupt ring */
	memcpy(mem, chan, size);
	((struct hvtrace_chan *)mem)->rings[1].capacity = 5;
	expect_refused("a corrupt ring", open_raw_mem(&ch, mem, size, pa, &err), &err, "capacity 5");
	/* an ELF core has addresses of its own; a range that wraps */
	elf = hvt_elf_core_image(chan, 0, size, &elf_len);
	expect_refused("an ELF core with a base", open_raw_mem(&ch, elf, elf_len, pa, &err), &err,
		       "an ELF core, not a raw image");
	free(elf);
	expect_refused("a range past 2^64", open_raw_mem(&ch, chan, size, ~0ull - 0xfff, &err), &err,
		       "runs past the 64-bit address space");
	free(mem);
	free(chan);
}

/* Trace files: a good one mutated. */
struct file_case {
	const char *name, *expect;
	size_t off;		/* where to write val (len bytes), or SIZE_MAX */
	uint64_t val;
	unsigned len;
	size_t new_len;		/* the file cut (or grown) to this, or 0 */
	int records;		/* the error comes from hvt_file_check_records */
};

#define HOFF(f) __builtin_offsetof(struct hvtrace_file_hdr, f)
#define ROFF(i, f) (128 + (i) * 32 + __builtin_offsetof(struct hvtrace_rec, f))

static const struct file_case file_cases[] = {
	{ "empty file", "empty", SIZE_MAX, 0, 0, 0, 0 },
	{ "shorter than the header", "shorter", SIZE_MAX, 0, 0, 100, 0 },
	{ "bad magic", "magic", HOFF(magic), 0x1234, 8, 0, 0 },
	{ "wrong ABI major", "abi_version", HOFF(abi_version), 2u << 16, 4, 0, 0 },
	{ "rec_size wrong", "rec_size", HOFF(rec_size), 24, 4, 0, 0 },
	{ "hdr_size wrong", "hdr_size", HOFF(hdr_size), 256, 4, 0, 0 },
	{ "unknown flag", "flags", HOFF(flags), 0x11, 4, 0, 0 },
	{ "freeze unknown", "freeze", HOFF(freeze), 99, 4, 0, 0 },
	{ "lost absurd", "lost", HOFF(lost), ~0ull, 8, 0, 0 },
	{ "truncated file", "truncated", SIZE_MAX, 0, 0, 128 + 5 * 32, 0 },
	{ "COMPLETE with too many", "truncated", HOFF(records), 11, 8, 0, 0 },
	{ "COMPLETE with too few", "extra", HOFF(records), 9, 8, 0, 0 },
	{ "COMPLETE, a partial record", "truncated", SIZE_MAX, 0, 0, 128 + 9 * 32 + 7, 0 },
	{ "record kind 0", "kind 0", ROFF(3, kind), 0, 1, 0, 1 },
	{ "record kind 8", "kind 8", ROFF(4, kind), 8, 1, 0, 1 },
	{ "branch type 0", "branch type", ROFF(5, aux), 0, 4, 0, 1 },
	{ "branch type 17", "branch type", ROFF(6, aux), 17, 4, 0, 1 },
	{ "marker code 9", "marker", ROFF(7, kind), HVTRACE_REC_MARKER | (0ull << 8), 1, 0, 1 },
};

/* ABI 1.7's gap marker (LBR batching: records lost, how many unknown):
 * named and accepted; the code after it is still refused */
static void test_gap_marker(void)
{
	struct hvtrace_rec r = { .kind = HVTRACE_REC_MARKER, .aux = HVTRACE_MARK_GAP };
	struct hvt_err err;

	CHECK(hvt_marker_name(HVTRACE_MARK_GAP) && !strcmp(hvt_marker_name(HVTRACE_MARK_GAP), "gap"),
	      "gap marker named");
	CHECK(hvt_rec_check(&r, &err) == 0, "gap marker accepted: %s", err.msg);
	r.aux = HVTRACE_MARK_GAP + 1;
	CHECK(hvt_rec_check(&r, &err) != 0, "marker code %u refused", r.aux);
}

static void test_corrupt_files(void)
{
	struct hvtrace_rec recs[10];
	struct hvt_fwriter w;
	struct hvt_file f;
	struct hvt_err err;
	uint8_t *good, *buf;
	size_t i, len;
	const char *path = tmp_path("good.hvt");

	for (i = 0; i < 10; i++)
		hvt_synth_rec(0, i, 5, &recs[i]);
	hvt_fwriter_open(&w, path, 0, 0, 1, 0, &err);
	hvt_fwriter_put(&w, recs, 10, &err);
	hvt_fwriter_finish(&w, 0, &err);
	good = hvt_read_file(path, &len, &err);
	CHECK(good && len == 128 + 320, "good file %zu bytes", len);
	if (!good)
		return;
	buf = malloc(len + 64);
	for (i = 0; i < sizeof(file_cases) / sizeof(file_cases[0]); i++) {
		const struct file_case *c = &file_cases[i];
		size_t l = c->new_len ? c->new_len : len;
		int rc;

		memcpy(buf, good, len);
		if (c->off != SIZE_MAX)
			memcpy(buf + c->off, &c->val, c->len);
		if (!strcmp(c->name, "marker code 9"))
			memcpy(buf + ROFF(7, aux), &(uint32_t){ 9 }, 4);
		if (!strcmp(c->name, "empty file"))
			l = 0;
		err.msg[0] = 0;
		rc = hvt_file_open_mem(&f, buf, l, &err);
		if (!rc && c->records)
			rc = hvt_file_check_records(&f, &err);
		expect_refused(c->name, rc, &err, c->expect);
	}
	/* not COMPLETE: the length decides, a partial record is ignored */
	memcpy(buf, good, len);
	((struct hvtrace_file_hdr *)buf)->flags = 0;
	((struct hvtrace_file_hdr *)buf)->records = 0;
	CHECK(hvt_file_open_mem(&f, buf, len - 5, &err) == 0 && f.nr == 9 && f.partial,
	      "unfinished, partial: %s", err.msg);
	free(buf);
	free(good);
}

struct sym_case {
	const char *name, *text, *expect;
};

static const struct sym_case sym_cases[] = {
	{ "empty map", "", "no function symbols" },
	{ "only data symbols", "ffffffff81000000 D x\nffffffff81000010 b y\n", "no function symbols" },
	{ "address not hex", "zzzz T x\n", "line 1" },
	{ "no name", "ffffffff81000000 T x\nffffffff81000010 T\n", "line 2" },
	{ "address too long", "1ffffffff81000000 T x\n", "line 1" },
	{ "type too long", "ffffffff81000000 TT x\n", "line 1" },
	{ "kptr_restrict zeros", "0000000000000000 T x\n0000000000000000 T y\n", "no function symbols" },
	{ "ELF header only", "\177ELF\2\1\1", "ELF" },
};

static void test_corrupt_syms(void)
{
	struct hvt_syms s;
	struct hvt_err err;
	size_t i;

	for (i = 0; i < sizeof(sym_cases) / sizeof(sym_cases[0]); i++) {
		const struct sym_case *c = &sym_cases[i];
		int rc;

		err.msg[0] = 0;
		rc = hvt_syms_load_mem(&s, c->text, strlen(c->text), &err);
		expect_refused(c->name, rc, &err, c->expect);
		if (!rc)
			hvt_syms_free(&s);
	}
}

/* The hypervisor's side of one control request, played by a thread:
 * waits for seq == done + 1, checks the request, answers `result`. */
struct ctl_peer {
	struct hvtrace_chan *h;
	int64_t result;
	uint32_t op_seen;
	uint64_t arg0_seen;
};

static void *ctl_peer_thread(void *arg)
{
	struct ctl_peer *p = arg;
	uint64_t t0 = now_ms(), done = __atomic_load_n(&p->h->ctl_done, __ATOMIC_ACQUIRE);

	while (__atomic_load_n(&p->h->ctl.seq, __ATOMIC_ACQUIRE) != done + 1)
		if (now_ms() - t0 > 5000)
			return NULL;
	p->op_seen = p->h->ctl.op;
	p->arg0_seen = p->h->ctl.arg0;
	p->h->ctl_result = p->result;
	__atomic_store_n(&p->h->ctl_done, done + 1, __ATOMIC_RELEASE);
	return NULL;
}

/* hvt_ctl_send: refused without control, against a dump, with a garbage
 * answer and without an answer (the request stays pending and blocks the
 * next); applied and refused answers come back as the hypervisor wrote. */
static void test_ctl(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 16 } };
	struct hvt_ctl_req rq = { .op = HVTRACE_TRACE_MARK, .arg0 = 0x1234 };
	struct ctl_peer peer;
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t size, lat;
	int64_t result;
	void *buf = make_chan(rs, 1, 1, &size);
	struct hvtrace_chan *h = buf;
	pthread_t th;

	hvt_chan_validate(&ch, buf, size, &err);
	CHECK(hvt_ctl_send(&ch, &rq, 10, &result, &lat, &err) < 0 && strstr(err.msg, "live channel"),
	      "a buffer that is no live channel: %s", err.msg);
	ch.source = HVT_SRC_SHM;	/* as hvt_chan_open_shm leaves it */
	CHECK(hvt_ctl_send(&ch, &rq, 10, &result, &lat, &err) < 0 && strstr(err.msg, "no host requests"),
	      "control off: %s", err.msg);
	h->ctl_mode = HVTRACE_CTL_POLL;
	for (int k = 0; k < 3; k++) {
		int64_t want[] = { 0, -HVTRACE_EINVAL, 12345 };

		peer = (struct ctl_peer){ .h = h, .result = want[k] };
		pthread_create(&th, NULL, ctl_peer_thread, &peer);
		int rc = hvt_ctl_send(&ch, &rq, 5000, &result, &lat, &err);
		pthread_join(th, NULL);
		CHECK(peer.op_seen == HVTRACE_TRACE_MARK && peer.arg0_seen == 0x1234, "the request as sent: op %u",
		      peer.op_seen);
		if (k < 2)
			CHECK(rc == 0 && result == want[k] && h->ctl.seq == (uint64_t)k + 1,
			      "answer %lld: rc %d result %lld seq %llu", (long long)want[k], rc, (long long)result,
			      (unsigned long long)h->ctl.seq);
		else
			CHECK(rc < 0 && strstr(err.msg, "does not name"), "a garbage answer: %s", err.msg);
	}
	CHECK(hvt_ctl_send(&ch, &rq, 50, &result, &lat, &err) < 0 && strstr(err.msg, "no answer") &&
		      h->ctl.seq == h->ctl_done + 1,
	      "no answer: %s (seq %llu done %llu)", err.msg, (unsigned long long)h->ctl.seq,
	      (unsigned long long)h->ctl_done);
	rq.arg0 = 0x9999;
	CHECK(hvt_ctl_send(&ch, &rq, 50, &result, &lat, &err) < 0 && strstr(err.msg, "still waiting") &&
		      h->ctl.arg0 == 0x1234,
	      "a pending request is never rewritten: %s (arg0 %llx)", err.msg, (unsigned long long)h->ctl.arg0);
	h->ctl_mode = 7;
	CHECK(hvt_ctl_send(&ch, &rq, 10, &result, &lat, &err) < 0 && strstr(err.msg, "ctl_mode 7"),
	      "an unknown mode: %s", err.msg);
	free(buf);
}

/* The hypervisor's debugger played by a thread (record.h HVTRACE_DBG_*):
 * requests answered until `quit`; memory is mem[], identity-mapped;
 * `no_restop`: a STEP that never stops again. */
struct dbg_peer {
	struct hvtrace_chan *h;
	struct hvtrace_dbg *a;
	uint8_t mem[256];
	int no_restop;
	uint64_t hw_arg0, hw_arg1;	/* the last SET_HW */
	int phys;			/* the last READ was guest-physical */
	volatile int quit;
};

static int64_t dbg_peer_apply(struct dbg_peer *p, uint32_t op, uint64_t arg0, uint64_t arg1)
{
	struct hvtrace_dbg_vcpu *v = &p->a->vcpu[0];
	uint64_t len = (arg0 >> 32) & 0xffff;
	unsigned i;

	switch (op) {
	case HVTRACE_DBG_STOP:
		for (i = 0; i < 16; i++)
			v->regs.gpr[i] = 0x100 + i;	/* encoding order */
		v->regs.rip = 0x1000;
		v->regs.rflags = 2;
		v->regs.cr3 = 0x5000;
		for (i = 0; i < 6; i++)
			v->regs.seg_sel[i] = (uint16_t)(0x10 + 8 * i);	/* ES CS SS DS FS GS */
		v->regs.seg_base[5] = 0xffff888000000000ull;
		v->stops++;
		__atomic_store_n(&v->state, HVTRACE_DBG_STOPPED, __ATOMIC_RELEASE);
		return 0;
	case HVTRACE_DBG_RESUME:
		__atomic_store_n(&v->state, HVTRACE_DBG_RUNNING, __ATOMIC_RELEASE);
		return 0;
	case HVTRACE_DBG_STEP:
		if (!p->no_restop) {
			v->regs.rip += 2;
			v->stops++;
		}
		return 0;
	case HVTRACE_DBG_TRANSLATE:
		if (arg1 >= sizeof(p->mem))
			return -HVTRACE_EFAULT;
		arg1 += 0x7000;
		memcpy(p->a->buf, &arg1, 8);
		return 0;
	case HVTRACE_DBG_SET_HW:
		p->hw_arg0 = arg0;
		p->hw_arg1 = arg1;
		return 0;
	case HVTRACE_DBG_READ:
	case HVTRACE_DBG_WRITE:
		p->phys = !!(arg0 & HVTRACE_DBG_READ_PHYS);
		if (!len || len > sizeof(p->mem) || arg1 > sizeof(p->mem) - len)
			return -HVTRACE_EFAULT;
		if (op == HVTRACE_DBG_READ)
			memcpy(p->a->buf, p->mem + arg1, len);
		else
			memcpy(p->mem + arg1, p->a->buf, len);
		return 0;
	case HVTRACE_DBG_SET_BP:
		p->a->bp_addr = arg0 >> 32 ? arg1 : 0;
		return arg0 >> 32 && !arg1 ? -HVTRACE_EINVAL : 0;
	case HVTRACE_DBG_SET_REGS: {
		struct hvtrace_dbg_regs r;

		memcpy(&r, p->a->buf, sizeof(r));
		memcpy(v->regs.gpr, r.gpr, sizeof(r.gpr));
		v->regs.rip = r.rip;
		v->regs.rflags = r.rflags;
		return 0;
	}
	}
	return -HVTRACE_EINVAL;
}

static void *dbg_peer_thread(void *arg)
{
	struct dbg_peer *p = arg;

	while (!p->quit) {
		uint64_t done = __atomic_load_n(&p->h->ctl_done, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&p->h->ctl.seq, __ATOMIC_ACQUIRE) != done + 1) {
			usleep(50);
			continue;
		}
		p->h->ctl_result = dbg_peer_apply(p, p->h->ctl.op, p->h->ctl.arg0, p->h->ctl.arg1);
		__atomic_store_n(&p->h->ctl_done, done + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* hvt_dbg_*: the area refused when it is missing, misplaced, without its
 * magic or with another vCPU count; then against the peer: stop and the
 * registers in GDB's order, memory read and written (a refused read names
 * EFAULT), registers set in the encoding order, a step, resume (the
 * registers then refused), and a step that never stops again. */
static void test_dbg(void)
{
	struct hvt_ring_spec rs[] = { { .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 16 } };
	struct hvt_chan ch;
	struct hvt_dbg d;
	struct hvt_err err;
	struct hvt_vcpu_regs r;
	struct dbg_peer *peer = calloc(1, sizeof(*peer));
	uint64_t size = hvt_chan_layout_size(rs, 1), off = (size + 4095) & ~4095ull, total = off + 8192;
	uint8_t buf8[8];
	int64_t res = 0;
	pthread_t th;
	void *buf;
	unsigned i;

	if (!peer || posix_memalign(&buf, 4096, total))
		abort();
	memset(buf, 0, total);
	if (hvt_chan_layout(buf, size, rs, 1, 1, 2000000000ull, &err))
		abort();
	struct hvtrace_chan *h = buf;
	struct hvtrace_dbg *a = (struct hvtrace_dbg *)((uint8_t *)buf + off);

	CHECK(hvt_chan_validate(&ch, buf, total, &err) == 0, "the channel: %s", err.msg);
	ch.source = HVT_SRC_SHM;
	h->ctl_mode = HVTRACE_CTL_POLL;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) < 0 && strstr(err.msg, "no debugger area"), "no area: %s", err.msg);
	h->dbg_offset = off + 8;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) < 0 && strstr(err.msg, "dbg_offset"), "misaligned: %s", err.msg);
	h->dbg_offset = off + 8192;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) < 0 && strstr(err.msg, "dbg_offset"), "past the end: %s", err.msg);
	h->dbg_offset = off;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) < 0 && strstr(err.msg, "no magic"), "no magic: %s", err.msg);
	a->magic = HVTRACE_DBG_MAGIC;
	a->nr_vcpus = 2;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) < 0 && strstr(err.msg, "nr_vcpus 2"), "vCPUs: %s", err.msg);
	a->nr_vcpus = 1;
	CHECK(hvt_dbg_open(&d, &ch, -1, &err) == 0 && d.nr_vcpus == 1, "the area: %s", err.msg);
	d.timeout_ms = 2000;

	peer->h = h;
	peer->a = a;
	for (i = 0; i < sizeof(peer->mem); i++)
		peer->mem[i] = (uint8_t)i;
	pthread_create(&th, NULL, dbg_peer_thread, peer);
	CHECK(hvt_dbg_regs(&d, 0, &r, &err) < 0 && strstr(err.msg, "not stopped"), "before the stop: %s", err.msg);
	CHECK(hvt_dbg_stop(&d, &err) == 0, "stop: %s", err.msg);
	CHECK(hvt_dbg_regs(&d, 0, &r, &err) == 0, "registers: %s", err.msg);
	CHECK(r.gpr[0] == 0x100 && r.gpr[1] == 0x103 && r.gpr[2] == 0x101 && r.gpr[3] == 0x102 && r.gpr[4] == 0x106 &&
		      r.gpr[5] == 0x107 && r.gpr[6] == 0x105 && r.gpr[7] == 0x104 && r.gpr[15] == 0x10f,
	      "GDB's order of the general registers: rbx %llx rsp %llx", (unsigned long long)r.gpr[1],
	      (unsigned long long)r.gpr[7]);
	CHECK(r.seg[0] == 0x18 && r.seg[1] == 0x20 && r.seg[3] == 0x10 && r.seg[5] == 0x38 && r.rip == 0x1000 &&
		      r.cr[3] == 0x5000 && r.gs_base == 0xffff888000000000ull && r.has_apic,
	      "segments (cs %x es %x), rip, cr3, gs_base", r.seg[0], r.seg[3]);
	CHECK(hvt_dbg_read(&d, 0, 16, buf8, 8, &res, &err) == 0 && buf8[0] == 16 && buf8[7] == 23, "read: %s",
	      err.msg);
	CHECK(hvt_dbg_read(&d, 0, 250, buf8, 8, &res, &err) < 0 && res == -HVTRACE_EFAULT && strstr(err.msg, "EFAULT"),
	      "a refused read: %s", err.msg);
	CHECK(hvt_dbg_read(&d, 0, 0, buf8, 0, &res, &err) < 0 && hvt_dbg_read(&d, 1, 0, buf8, 8, &res, &err) < 0,
	      "no length, no such vCPU: %s", err.msg);
	memcpy(buf8, "hvtrace!", 8);
	CHECK(hvt_dbg_write(&d, 0, 100, buf8, 8, &res, &err) == 0 && !memcmp(peer->mem + 100, "hvtrace!", 8),
	      "write: %s", err.msg);
	r.gpr[1] = 0xabc;	/* rbx */
	r.gpr[7] = 0xdef;	/* rsp */
	r.rip = 0x2000;
	CHECK(hvt_dbg_set_regs(&d, 0, &r, &res, &err) == 0 && a->vcpu[0].regs.gpr[3] == 0xabc &&
		      a->vcpu[0].regs.gpr[4] == 0xdef && a->vcpu[0].regs.gpr[0] == 0x100 && a->vcpu[0].regs.rip == 0x2000,
	      "set registers, in the encoding order: %s", err.msg);
	CHECK(hvt_dbg_step(&d, 0, &err) == 0 && hvt_dbg_regs(&d, 0, &r, &err) == 0 && r.rip == 0x2002,
	      "step: %s (rip %llx)", err.msg, (unsigned long long)r.rip);
	peer->no_restop = 1;
	d.timeout_ms = 100;
	CHECK(hvt_dbg_step(&d, 0, &err) < 0 && strstr(err.msg, "did not stop again"), "a step without a stop: %s",
	      err.msg);
	d.timeout_ms = 2000;
	CHECK(hvt_dbg_set_bp(&d, 0x401000, 1, &res, &err) == 0 && a->bp_addr == 0x401000 &&
		      hvt_dbg_set_bp(&d, 0x401000, 0, &res, &err) == 0 && a->bp_addr == 0,
	      "the breakpoint set and cleared: %s", err.msg);
	CHECK(hvt_dbg_set_bp(&d, 0, 1, &res, &err) < 0 && res == -HVTRACE_EINVAL, "a refused breakpoint: %s",
	      err.msg);
	CHECK(hvt_dbg_set_hw(&d, 2, 1, 1, 2, 0x2008, 0, &res, &err) == 0 &&
		      peer->hw_arg0 == (2 | 1u << 8 | 1u << 16 | 2u << 24) && peer->hw_arg1 == 0x2008,
	      "SET_HW: slot 2, a write watchpoint of 8 bytes: arg0 %llx (%s)", (unsigned long long)peer->hw_arg0,
	      err.msg);
	CHECK(hvt_dbg_set_hw(&d, 2, 0, 1, 2, 0x2008, 0, &res, &err) == 0 && peer->hw_arg0 == 2 && !peer->hw_arg1,
	      "SET_HW cleared: slot alone, no address: %s", err.msg);
	/* a page slot: an instruction breakpoint with the vCPU that translates in bits 47:32 */
	CHECK(hvt_dbg_set_hw(&d, 9, 1, 0, 0, 0x1000, 0, &res, &err) == 0 && peer->hw_arg0 == (9 | 1u << 8) &&
		      peer->hw_arg1 == 0x1000,
	      "SET_HW: page slot 9: arg0 %llx (%s)", (unsigned long long)peer->hw_arg0, err.msg);
	/* a page slot's write watchpoint (ABI 1.13): its length less one in bits 59:48 */
	CHECK(hvt_dbg_set_hw(&d, 9, 1, 1, 8, 0x2ff8, 0, &res, &err) == 0 &&
		      peer->hw_arg0 == (9 | 1u << 8 | 1u << 16 | 7ull << 48) && peer->hw_arg1 == 0x2ff8,
	      "SET_HW: page slot 9, a write watchpoint of 8 bytes: arg0 %llx (%s)", (unsigned long long)peer->hw_arg0,
	      err.msg);
	CHECK(hvt_dbg_set_hw(&d, 32, 1, 0, 0, 0x1000, 0, &res, &err) < 0 &&
		      hvt_dbg_set_hw(&d, 4, 1, 3, 2, 0x1000, 0, &res, &err) < 0 &&
		      hvt_dbg_set_hw(&d, 4, 1, 1, 8, 0x1ffc, 0, &res, &err) < 0 &&
		      hvt_dbg_set_hw(&d, 4, 1, 1, 0, 0x1000, 0, &res, &err) < 0 &&
		      hvt_dbg_set_hw(&d, 4, 1, 0, 0, 0x1000, 7, &res, &err) < 0 &&
		      hvt_dbg_set_hw(&d, 0, 1, 4, 0, 1, 0, &res, &err) < 0,
	      "no slot 32, no read watchpoint in a page slot, nor one past its page or of no bytes, no vCPU 7, "
	      "no RW 4: %s", err.msg);
	a->vcpu[0].hits = 0x100000f0;
	CHECK(hvt_dbg_hits(&d, 0) == 0x100000f0 && hvt_dbg_hits(&d, 1) == 0,
	      "hits: the 32 slots of a stopped vCPU only");
	a->vcpu[0].hits = 0;
	CHECK(hvt_dbg_read_phys(&d, 0, 16, buf8, 8, &res, &err) == 0 && peer->phys && buf8[0] == 16,
	      "read guest-physical: READ with bit 48: %s", err.msg);
	CHECK(hvt_dbg_read(&d, 0, 16, buf8, 8, &res, &err) == 0 && !peer->phys, "a linear read has no bit 48");
	{
		uint64_t pa = 0;

		CHECK(hvt_dbg_translate(&d, 0, 16, &pa, &res, &err) == 0 && pa == 0x7010, "translate: %s", err.msg);
		CHECK(hvt_dbg_translate(&d, 0, 4096, &pa, &res, &err) < 0 && res == -HVTRACE_EFAULT &&
			      hvt_dbg_translate(&d, 1, 16, &pa, &res, &err) < 0,
		      "translate: not mapped (EFAULT), no such vCPU");
	}
	h->abi_version = (1u << 16) | 9;
	CHECK(hvt_dbg_set_hw(&d, 0, 1, 0, 0, 0x1000, 0, &res, &err) < 0 && strstr(err.msg, "ABI 1.10"),
	      "SET_HW of an ABI 1.9 hypervisor: %s", err.msg);
	h->abi_version = (1u << 16) | 10;
	CHECK(hvt_dbg_set_hw(&d, 5, 1, 0, 0, 0x1000, 0, &res, &err) < 0 && strstr(err.msg, "ABI 1.11"),
	      "a page slot of an ABI 1.10 hypervisor: %s", err.msg);
	h->abi_version = (1u << 16) | 12;
	CHECK(hvt_dbg_set_hw(&d, 5, 1, 1, 8, 0x1000, 0, &res, &err) < 0 && strstr(err.msg, "ABI 1.13"),
	      "a page watchpoint of an ABI 1.12 hypervisor: %s", err.msg);
	h->abi_version = HVTRACE_ABI_VERSION;
	CHECK(hvt_dbg_resume(&d, &err) == 0 && hvt_dbg_regs(&d, 0, &r, &err) < 0 && strstr(err.msg, "not stopped"),
	      "resume: %s", err.msg);
	{
		uint32_t who = 7;

		a->held = 0;
		CHECK(!hvt_dbg_held(&d, &who), "not held");
		a->held = 1;
		a->stop_vcpu = 1;
		CHECK(hvt_dbg_held(&d, &who) && who == 0, "held by vCPU 0's breakpoint: %u", who);
		a->stop_vcpu = 0;
		CHECK(hvt_dbg_held(&d, &who) && who == UINT32_MAX, "held by the host: %u", who);
		a->stop_vcpu = 99;
		CHECK(hvt_dbg_held(&d, &who) && who == UINT32_MAX, "a vCPU that does not exist: %u", who);
		a->held = 0;
	}
	peer->quit = 1;
	pthread_join(th, NULL);
	free(peer);
	free(buf);
}

/* The GDB server over a live target played here: what each live packet
 * asks of the target, and an error reply for every malformed one. */
static struct hvt_vcpu_regs live_regs[2];
static uint8_t live_mem[0x100];
static int live_running, live_steps, live_stops;
static char live_out[4096];
static size_t live_nout;

static int lv_stop(void *c) { (void)c; live_running = 0; live_stops++; return 0; }
static int lv_resume(void *c) { (void)c; live_running = 1; return 0; }
static int lv_step(void *c, size_t t) { (void)c; live_steps++; live_regs[t].rip++; return 0; }
static int64_t lv_read(void *c, size_t t, uint64_t la, void *buf, uint64_t len)
{
	(void)c, (void)t;
	if (la < 0x1000 || la >= 0x1100)
		return -1;
	if (len > 0x1100 - la)
		len = 0x1100 - la;
	memcpy(buf, live_mem + (la - 0x1000), len);
	return (int64_t)len;
}
static int lv_write(void *c, size_t t, uint64_t la, const void *buf, uint64_t len)
{
	(void)c, (void)t;
	if (la < 0x1000 || la >= 0x1100 || len > 0x1100 - la)
		return -1;
	memcpy(live_mem + (la - 0x1000), buf, len);
	return 0;
}
static int lv_set_regs(void *c, size_t t, const struct hvt_vcpu_regs *r) { (void)c; live_regs[t] = *r; return 0; }
static struct { int on; unsigned rw, len; uint64_t addr; size_t th; } live_hw[HVT_GDB_ALL_SLOTS];
static int live_hw_calls;
static uint32_t live_hits, live_hits2;	/* the slots that fired at thread 1's stop, thread 2's */
static uint64_t live_hw_refuse;	/* an address the hypervisor refuses */
static int lv_set_hw(void *c, unsigned slot, int on, unsigned rw, unsigned len, uint64_t a, size_t th)
{
	(void)c;
	live_hw_calls++;
	if (on && a == live_hw_refuse)
		return -1;
	if (slot >= HVT_GDB_ALL_SLOTS || (on && live_hw[slot].on) || (!on && !live_hw[slot].on) ||
	    (on && slot >= HVT_GDB_SLOTS && (rw ? rw != 1 || !len || len > 4096 : len != 0)))
		return -1;	/* the server must never set a set slot or clear a clear one; a page slot
				 * holds a breakpoint or a write watchpoint of its bytes */
	live_hw[slot].th = th;
	live_hw[slot].on = on;
	live_hw[slot].rw = rw;
	live_hw[slot].len = len;
	live_hw[slot].addr = a;
	return 0;
}
static uint32_t lv_hits(void *c, size_t t) { (void)c; return t ? live_hits2 : live_hits; }
static int lv_translate(void *c, size_t t, uint64_t la, uint64_t *pa)
{
	(void)c, (void)t;
	if (la >= 0x10000)
		return -1;
	*pa = la + 0x200000;
	return 0;
}
static int lv_read_phys(void *c, size_t t, uint64_t pa, void *buf, uint64_t len)
{
	(void)c, (void)t;
	if (pa >= sizeof(live_mem) || len > sizeof(live_mem) - pa)
		return -1;
	memcpy(buf, live_mem + pa, len);
	return 0;
}
static int lv_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	if (live_nout + len < sizeof(live_out)) {
		memcpy(live_out + live_nout, buf, len);
		live_nout += len;
		live_out[live_nout] = 0;
	}
	return 0;
}

/* One packet in (framed here); the reply's body out ("" when none). */
static const char *live_pkt(struct hvt_gdb *g, const char *body)
{
	static char reply[4096];
	char frame[600];
	unsigned sum = 0;
	size_t i;

	for (i = 0; body[i]; i++)
		sum += (uint8_t)body[i];
	snprintf(frame, sizeof(frame), "$%s#%02x", body, sum & 0xff);
	live_nout = 0;
	live_out[0] = 0;
	hvt_gdb_input(g, frame, strlen(frame));
	const char *d = strchr(live_out, '$'), *h = d ? strchr(d, '#') : NULL;
	snprintf(reply, sizeof(reply), "%.*s", d && h ? (int)(h - d - 1) : 0, d ? d + 1 : "");
	return reply;
}

static void test_gdb_live(void)
{
	static const struct hvt_gdb_live live = { .stop = lv_stop, .resume = lv_resume, .step = lv_step,
						  .read = lv_read, .write = lv_write, .set_regs = lv_set_regs,
						  .set_hw = lv_set_hw, .hits = lv_hits, .read_phys = lv_read_phys,
						  .translate = lv_translate };
	struct hvt_gdb_thread th[2] = { { .regs = &live_regs[0] }, { .regs = &live_regs[1] } };
	struct hvt_gdb_target t = { .th = th, .nth = 2, .live = &live };
	struct hvt_gdb *g;
	uint64_t packets, malformed;
	const char *r;

	for (int i = 0; i < 2; i++)
		live_regs[i] = (struct hvt_vcpu_regs){ .id = (uint32_t)i + 1, .has_sys = 1, .has_apic = 1,
						      .apic_id = (uint32_t)i, .rip = 0x1000, .seg = { 0x10 } };
	g = hvt_gdb_new(&t, lv_send, NULL);
	CHECK(g && !strcmp(live_pkt(g, "QStartNoAckMode"), "OK"), "no-ack mode");
	CHECK(!strcmp(live_pkt(g, "vCont?"), "vCont;c;s"), "vCont offered");
	r = live_pkt(g, "qThreadExtraInfo,2");
	CHECK(!strcmp(r, "764350552031202841504943204944203129"), "thread 2's name, vCPU 1 (APIC ID 1): %s", r);
	/* registers */
	CHECK(!strcmp(live_pkt(g, "P0=0100000000000000"), "OK") && live_regs[0].gpr[0] == 1, "P rax");
	CHECK(!strcmp(live_pkt(g, "P12=10000000"), "OK"), "P cs with its own value");
	CHECK(live_pkt(g, "P12=18000000")[0] == 'E' && live_regs[0].seg[0] == 0x10, "P cs with another value refused");
	CHECK(live_pkt(g, "P10=1122")[0] == 'E', "P of the wrong size");
	CHECK(live_pkt(g, "Pzz=00")[0] == 'E' && live_pkt(g, "P0")[0] == 'E' && live_pkt(g, "P999=00")[0] == 'E',
	      "P malformed, without a value, no such register");
	CHECK(live_pkt(g, "G0011")[0] == 'E' && live_pkt(g, "Gzz")[0] == 'E', "G malformed");
	/* memory */
	CHECK(!strcmp(live_pkt(g, "M1000,2:abcd"), "OK") && live_mem[0] == 0xab && live_mem[1] == 0xcd, "M");
	CHECK(!strcmp(live_pkt(g, "m1000,2"), "abcd"), "m reads it back");
	CHECK(live_pkt(g, "M1000,2:abc")[0] == 'E' && live_pkt(g, "M1000,2:zzzz")[0] == 'E' &&
		      live_pkt(g, "Mzz")[0] == 'E' && live_pkt(g, "M1000,2")[0] == 'E',
	      "M malformed: short data, not hex, no address, no data");
	CHECK(live_pkt(g, "M2000,1:00")[0] == 'E', "M where the target refuses");
	CHECK(!strcmp(live_pkt(g, "X1000,0:"), ""), "X: empty, GDB uses M");
	/* breakpoints and watchpoints in the hypervisor's four slots */
	CHECK(!strcmp(live_pkt(g, "qSupported:multiprocess+;swbreak+;hwbreak+"),
		      "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;swbreak+;hwbreak+"),
	      "swbreak and hwbreak offered");
	CHECK(!strcmp(live_pkt(g, "Z1,1010,1"), "OK") && live_hw[0].on && live_hw[0].addr == 0x1010 && !live_hw[0].rw,
	      "Z1 in slot 0");
	CHECK(!strcmp(live_pkt(g, "Z0,1010,1"), "OK") && live_hw_calls == 1, "Z0 at the same address shares it");
	CHECK(!strcmp(live_pkt(g, "Z0,1020,1"), "OK") && live_hw[1].on && live_hw[1].addr == 0x1020, "Z0 in slot 1");
	CHECK(!strcmp(live_pkt(g, "Z2,1040,8"), "OK") && live_hw[2].rw == 1 && live_hw[2].len == 2, "Z2 of 8 bytes");
	CHECK(!strcmp(live_pkt(g, "Z4,1048,4"), "OK") && live_hw[3].rw == 3 && live_hw[3].len == 3, "Z4 of 4 bytes");
	CHECK(!strcmp(live_pkt(g, "Z3,1048,4"), "OK") && live_hw_calls == 4, "Z3 shares Z4's read-or-write slot");
	CHECK(!strcmp(live_pkt(g, "Z0,1030,1"), "OK") && live_hw[4].on && live_hw[4].addr == 0x1030 &&
		      !live_hw[4].rw && !live_hw[4].len && live_hw[4].th == 0 && live_hw_calls == 5,
	      "a fifth breakpoint: page slot 4, translated by the selected thread");
	live_hits = 1u << 4;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;swbreak:;"), "a page slot's stop reply");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "z0,1030,1"), "OK") && !live_hw[4].on && live_hw_calls == 6, "z0 clears the page slot");
	CHECK(live_pkt(g, "Z4,1050,2")[0] == 'E' && live_pkt(g, "Z3,1050,2")[0] == 'E' && live_hw_calls == 6,
	      "a fifth read or access watchpoint refused: debug registers only");
	CHECK(!strcmp(live_pkt(g, "Z2,1050,2"), "OK") && live_hw[4].on && live_hw[4].rw == 1 && live_hw[4].len == 2 &&
		      live_hw[4].addr == 0x1050 && live_hw_calls == 7,
	      "a fifth write watchpoint: page slot 4, its 2 bytes");
	live_hits = 1u << 4;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;watch:1050;"), "a page watchpoint's stop reply");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "Z2,1ffc,8"), "OK") && live_hw[5].addr == 0x1ffc && live_hw[5].len == 4 &&
		      live_hw[6].addr == 0x2000 && live_hw[6].len == 4 && live_hw_calls == 9,
	      "8 bytes across a page boundary: a page slot per page, 4 bytes each");
	CHECK(!strcmp(live_pkt(g, "Z2,1ffc,8"), "OK") && live_hw_calls == 9, "the same again: its slots shared");
	CHECK(!strcmp(live_pkt(g, "z2,1ffc,8"), "OK") && live_hw[5].on && !strcmp(live_pkt(g, "z2,1ffc,8"), "OK") &&
		      !live_hw[5].on && !live_hw[6].on && !strcmp(live_pkt(g, "z2,1050,2"), "OK") && !live_hw[4].on &&
		      live_hw_calls == 12, "removed: the shared pieces at the second z2");
	CHECK(live_pkt(g, "Z4,1041,8")[0] == 'E' && live_pkt(g, "Z4,1040,3")[0] == 'E' &&
		      live_pkt(g, "Z0,1010,2")[0] == 'E' && live_pkt(g, "Z1,zz")[0] == 'E' &&
		      live_pkt(g, "Z5,1000,1")[0] == 'E' && live_pkt(g, "Z0,1000")[0] == 'E',
	      "all slots taken: an access watchpoint of pieces refused; a breakpoint of 2 bytes, malformed, Z5, no kind");
	live_hits = 1u << 2;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;watch:1040;"), "a write watchpoint's stop reply");
	live_hits = 1u << 3;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;awatch:1048;"), "an access watchpoint's");
	live_hits = 1u << 1;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;swbreak:;"), "a software breakpoint's");
	live_hits = 1u;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;swbreak:;"), "Z0 and Z1 at one address: swbreak");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "z3,1048,4"), "OK") && live_hw[3].on, "z3: Z4 keeps the slot");
	CHECK(!strcmp(live_pkt(g, "z4,1048,4"), "OK") && !live_hw[3].on, "z4: the slot cleared");
	CHECK(!strcmp(live_pkt(g, "z4,1048,4"), "OK") && !strcmp(live_pkt(g, "z0,2000,1"), "OK") && live_hw_calls == 13,
	      "z of what is not inserted: nothing");
	live_hits = 1u << 3;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;"), "a cleared slot's hit: no reason");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "Z2,1050,2"), "OK") && live_hw[3].on && live_hw[3].addr == 0x1050, "a freed slot reused");
	CHECK(!strcmp(live_pkt(g, "z2,1050,2"), "OK") && !strcmp(live_pkt(g, "z2,1040,8"), "OK") &&
		      !strcmp(live_pkt(g, "z0,1020,1"), "OK") && !strcmp(live_pkt(g, "z0,1010,1"), "OK") && live_hw[0].on,
	      "removed but slot 0's Z1");
	live_hits = 1u;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;hwbreak:;"), "a hardware breakpoint's stop reply");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "z1,1010,1"), "OK") && !live_hw[0].on && !live_hw[1].on &&
		      !live_hw[2].on && !live_hw[3].on,
	      "all removed");
	/* 32 breakpoints: 4 debug registers and 28 page slots; a 33rd refused */
	{
		char z[32];
		int ok = 1, i;

		for (i = 0; i < HVT_GDB_ALL_SLOTS; i++) {
			snprintf(z, sizeof(z), "Z0,%x,1", 0x3000 + 0x10 * i);
			ok &= !strcmp(live_pkt(g, z), "OK") && live_hw[i].on && live_hw[i].addr == (uint64_t)0x3000 + 0x10 * i;
		}
		CHECK(ok && live_pkt(g, "Z0,4000,1")[0] == 'E', "32 breakpoints, the 33rd refused");
		CHECK(strstr(live_pkt(g, "qRcmd,736c6f7473"), "7061676520736c6f742033313a20627265616b"), "monitor slots lists page slot 31");
		for (i = 0; i < HVT_GDB_ALL_SLOTS; i++) {
			snprintf(z, sizeof(z), "z0,%x,1", 0x3000 + 0x10 * i);
			ok &= !strcmp(live_pkt(g, z), "OK") && !live_hw[i].on;
		}
		CHECK(ok, "all 32 removed");
	}
	/* a misaligned or long watchpoint: a slot per aligned piece, all or none */
	CHECK(!strcmp(live_pkt(g, "Z2,1041,8"), "OK") && live_hw[0].addr == 0x1041 && live_hw[0].len == 0 &&
		      live_hw[1].addr == 0x1042 && live_hw[1].len == 1 && live_hw[2].addr == 0x1044 &&
		      live_hw[2].len == 3 && live_hw[3].addr == 0x1048 && live_hw[3].len == 0 && live_hw[3].rw == 1,
	      "Z2 of 8 bytes at an odd address: 1 + 2 + 4 + 1 bytes in four slots");
	live_hits = 1u << 2;
	CHECK(!strcmp(live_pkt(g, "?"), "T05thread:1;watch:1044;"), "a piece's hit: its address, in GDB's range");
	live_hits = 0;
	CHECK(!strcmp(live_pkt(g, "Z0,2000,1"), "OK") && live_hw[4].on && !strcmp(live_pkt(g, "z0,2000,1"), "OK") &&
		      !live_hw[4].on,
	      "the debug registers taken by a watchpoint: a breakpoint takes a page slot");
	CHECK(!strcmp(live_pkt(g, "z2,1041,8"), "OK") && !live_hw[0].on && !live_hw[1].on && !live_hw[2].on &&
		      !live_hw[3].on, "z2 clears all four");
	CHECK(!strcmp(live_pkt(g, "Z4,1040,10"), "OK") && live_hw[0].addr == 0x1040 && live_hw[0].len == 2 &&
		      live_hw[1].addr == 0x1048 && live_hw[1].len == 2 && live_hw[0].rw == 3 && !live_hw[2].on,
	      "Z4 of 16 aligned bytes: two slots of 8");
	int calls = live_hw_calls;
	CHECK(live_pkt(g, "Z4,1041,10")[0] == 'E' && live_pkt(g, "Z2,fffffffffffffff8,10")[0] == 'E' &&
		      live_pkt(g, "Z2,1000,0")[0] == 'E' && live_pkt(g, "Z2,1000,ffffffffffffffff")[0] == 'E' &&
		      live_pkt(g, "Z2,1000,4001")[0] == 'E' && live_hw_calls == calls,
	      "an access watchpoint of five pieces, a range past 2^64, no bytes, all of memory, a write watchpoint "
	      "over five pages: refused, nothing set");
	live_hw_refuse = 0x1058;
	CHECK(live_pkt(g, "Z2,1050,10")[0] == 'E' && !live_hw[2].on && !live_hw[3].on,
	      "the hypervisor refuses the second piece: the first cleared again");
	live_hw_refuse = 0;
	CHECK(!strcmp(live_pkt(g, "Z3,1048,8"), "OK") && !live_hw[2].on, "Z3 on Z4's second piece shares its slot");
	CHECK(!strcmp(live_pkt(g, "z4,1040,10"), "OK") && !live_hw[0].on && live_hw[1].on,
	      "z4: the piece Z3 shares stays");
	CHECK(!strcmp(live_pkt(g, "z3,1048,8"), "OK") && !live_hw[1].on, "z3: then it goes");
	/* monitor */
	r = live_pkt(g, "qRcmd,68656c70");	/* help */
	CHECK(strstr(r, "706879732041444452204c454e"), "monitor help lists phys ADDR LEN: %.40s", r);
	live_mem[0x10] = 0xab;
	r = live_pkt(g, "qRcmd,7068797320307831302031");	/* phys 0x10 1 */
	CHECK(strstr(r, "206162"), "monitor phys reads guest-physical memory: %s", r);	/* " ab" */
	r = live_pkt(g, "qRcmd,706879732030783130303030302031");	/* phys 0x100000 1 */
	CHECK(strstr(r, "43616e6e6f74"), "monitor phys where nothing is: Cannot: %.20s", r);
	r = live_pkt(g, "qRcmd,7472616e736c6174652030783130");	/* translate 0x10 */
	CHECK(strstr(r, "3078323030303130"), "monitor translate: 0x200010: %.60s", r);	/* "0x200010" */
	r = live_pkt(g, "qRcmd,7472616e736c617465203078313030303030");	/* translate 0x100000 */
	CHECK(strstr(r, "6e6f74206d6170706564"), "monitor translate where nothing is: not mapped: %.60s", r);
	r = live_pkt(g, "qRcmd,736c6f7473");	/* slots */
	CHECK(strstr(r, "736c6f7420303a2066726565"), "monitor slots: slot 0: free: %.30s", r);
	CHECK(live_pkt(g, "qRcmd,7")[0] == 'E' && live_pkt(g, "qRcmd,zz")[0] == 'E' && live_pkt(g, "qRcmd,6800")[0] == 'E',
	      "qRcmd malformed: odd, not hex, a NUL");
	/* step and continue */
	CHECK(live_pkt(g, "vCont;x")[0] == 'E' && live_pkt(g, "vCont;s:99")[0] == 'E' && live_pkt(g, "c1000")[0] == 'E',
	      "vCont with another action, no such thread; c with an address");
	CHECK(!strcmp(live_pkt(g, "vCont;s:2"), "T05thread:2;") && live_steps == 1 && live_regs[1].rip == 0x1001,
	      "vCont;s:2 steps thread 2");
	CHECK(!strcmp(live_pkt(g, "s"), "T05thread:2;") && live_steps == 2, "s steps the selected thread");
	CHECK(!strcmp(live_pkt(g, "c"), "") && live_running && hvt_gdb_running(g), "c: no reply, running");
	CHECK(!strcmp(live_pkt(g, "g"), "") && live_running, "a packet while running: no reply");
	live_nout = 0;
	hvt_gdb_input(g, "\x03", 1);
	CHECK(!live_running && strstr(live_out, "$T02thread:2;#"), "the interrupt stops it: %s", live_out);
	/* issue 28: gdb sends a second interrupt when it gets a second SIGINT
	 * before the stop reply (it then asks whether to give up): one stop,
	 * one reply, whether both come in one read or the second after it */
	CHECK(!strcmp(live_pkt(g, "c"), "") && live_running, "c again");
	live_nout = 0;
	live_stops = 0;
	hvt_gdb_input(g, "\x03\x03", 2);
	CHECK(!live_running && live_stops == 1 && strstr(live_out, "$T02thread:2;#") &&
		      !strstr(strstr(live_out, "$T02") + 1, "$T02"),
	      "two interrupts in one read: one stop, one reply: %s", live_out);
	live_nout = 0;
	live_out[0] = 0;
	hvt_gdb_input(g, "\x03", 1);
	CHECK(live_stops == 1 && !live_nout, "an interrupt while stopped: nothing (%d stops, %zu bytes)", live_stops,
	      live_nout);
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "") && live_running, "vCont;c");
	live_nout = 0;
	CHECK(hvt_gdb_stopped(g, 0) == 0 && !live_running && strstr(live_out, "$T05thread:1;#"),
	      "stopped by itself (a breakpoint on thread 1): %s", live_out);
	CHECK(hvt_gdb_stopped(g, 1) == 0 && !strstr(live_out + 1, "$T05"), "not again when not running");
	/* two vCPUs at two watchpoints at once: the second's stop pending until the next resume */
	CHECK(!strcmp(live_pkt(g, "Z2,1040,8"), "OK") && !strcmp(live_pkt(g, "Z2,1050,8"), "OK") && live_hw[0].on &&
		      live_hw[1].on, "two watchpoints in slots 0 and 1");
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "") && live_running, "continued");
	live_hits = 1u;
	live_hits2 = 1u << 1;
	live_nout = 0;
	CHECK(hvt_gdb_stopped(g, 0) == 0 && strstr(live_out, "$T05thread:1;watch:1040;#"),
	      "thread 1's watchpoint reported: %s", live_out);
	/* gdb takes its watchpoints out and puts them back in the other order */
	CHECK(!strcmp(live_pkt(g, "z2,1040,8"), "OK") && !strcmp(live_pkt(g, "z2,1050,8"), "OK") &&
		      !strcmp(live_pkt(g, "Z2,1050,8"), "OK") && !strcmp(live_pkt(g, "Z2,1040,8"), "OK") &&
		      live_hw[0].addr == 0x1050, "removed, inserted again in other slots");
	int stops = live_stops;
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "T05thread:2;watch:1050;") && !live_running && live_stops == stops,
	      "the next continue: thread 2's watchpoint at once, the guest still held");
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "") && live_running, "reported once: the next continue resumes");
	live_hits2 = 0;
	live_nout = 0;
	CHECK(hvt_gdb_stopped(g, 0) == 0 && strstr(live_out, "$T05thread:1;watch:1050;#"), "a stop of thread 1 alone");
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "") && live_running, "nothing pending: resumed");
	/* pending at a Ctrl-C stop; a step of that thread reports it instead of stepping */
	live_hits = 0;
	live_hits2 = 1u << 1;
	live_nout = 0;
	hvt_gdb_input(g, "\x03", 1);
	CHECK(!live_running && strstr(live_out, "$T02thread:1;#"), "interrupted: %s", live_out);
	int steps = live_steps;
	CHECK(!strcmp(live_pkt(g, "vCont;s:2"), "T05thread:2;watch:1040;") && live_steps == steps,
	      "vCont;s:2: thread 2's pending watchpoint, not a step");
	CHECK(!strcmp(live_pkt(g, "vCont;s:2"), "T05thread:2;watch:1040;") && live_steps == steps + 1,
	      "then a step (its slots fired anew, as the fake says)");
	live_hits2 = 0;
	CHECK(!strcmp(live_pkt(g, "vCont;c"), "") && live_running, "resumed");
	/* a pending stop whose watchpoint gdb removed meanwhile: dropped */
	live_hits2 = 1u << 1;
	live_hits = 1u;
	live_nout = 0;
	CHECK(hvt_gdb_stopped(g, 0) == 0 && strstr(live_out, "$T05thread:1;watch:1050;#"), "thread 1's stop: %s", live_out);
	CHECK(!strcmp(live_pkt(g, "z2,1040,8"), "OK") && !strcmp(live_pkt(g, "vCont;c"), "") && live_running,
	      "thread 2's watchpoint removed: its pending stop dropped, resumed");
	live_hits = live_hits2 = 0;
	CHECK(hvt_gdb_stopped(g, 0) == 0 && !strcmp(live_pkt(g, "z2,1050,8"), "OK"), "stopped, removed");
	hvt_gdb_stats(g, &packets, &malformed);
	CHECK(malformed >= 12, "malformed packets counted: %llu", (unsigned long long)malformed);
	CHECK(!strcmp(live_pkt(g, "D"), "OK"), "detach");
	hvt_gdb_free(g);
}

/* The live branch trace: the flight recorder read again at each stop
 * (history), the document made from it, forgotten at each resume. */
static struct hvt_gdb_thread *lvb_th;
static struct hvtrace_rec lvb_recs[4];
static uint64_t lvb_nr;
static int lvb_calls, lvb_fail;
static int lv_history(void *c, size_t t)
{
	(void)c;
	lvb_calls++;
	if (lvb_fail || live_running)
		return -1;
	lvb_th[t].recs = lvb_recs;
	lvb_th[t].nr = lvb_nr;
	return 0;
}

static void test_gdb_live_btrace(void)
{
	static const struct hvt_gdb_live live = { .stop = lv_stop, .resume = lv_resume, .step = lv_step,
						  .read = lv_read, .write = lv_write, .set_regs = lv_set_regs,
						  .set_hw = lv_set_hw, .hits = lv_hits, .read_phys = lv_read_phys,
						  .translate = lv_translate, .history = lv_history };
	struct hvt_gdb_thread th[2] = { { .regs = &live_regs[0] }, { .regs = &live_regs[1] } };
	struct hvt_gdb_target t = { .th = th, .nth = 2, .live = &live, .bts_size = 0x1000 };
	struct hvt_gdb *g;
	const char *r;

	lvb_th = th;
	live_running = 0;
	for (int i = 0; i < 2; i++)
		live_regs[i] = (struct hvt_vcpu_regs){ .id = (uint32_t)i + 1, .has_apic = 1, .apic_id = (uint32_t)i,
						      .rip = 0x1048 };
	/* call 0x1040 from 0x1010, then a jump from 0x1044 to 0x1046 */
	lvb_recs[0] = (struct hvtrace_rec){ .from = 0x1010, .to = 0x1040, .kind = HVTRACE_REC_BRANCH,
					    .aux = HVTRACE_BR_CALL };
	lvb_recs[1] = (struct hvtrace_rec){ .from = 0x1044, .to = 0x1046, .kind = HVTRACE_REC_BRANCH,
					    .aux = HVTRACE_BR_JMP };
	lvb_nr = 1;
	g = hvt_gdb_new(&t, lv_send, NULL);
	CHECK(g && !strcmp(live_pkt(g, "QStartNoAckMode"), "OK"), "no-ack mode");
	r = live_pkt(g, "qSupported:multiprocess+;swbreak+;hwbreak+");
	CHECK(strstr(r, ";qXfer:btrace:read+;qXfer:btrace-conf:read+;Qbtrace:bts+;Qbtrace:off+;Qbtrace:pt-"),
	      "live with a history: btrace offered: %s", r);
	CHECK(live_pkt(g, "qXfer:btrace:read:all:0,fff")[0] == 'E' && !lvb_calls, "not on: an error, nothing read");
	CHECK(live_pkt(g, "Qbtrace:pt")[0] == 'E' && live_pkt(g, "Qbtrace:bogus")[0] == 'E', "pt and others refused");
	CHECK(!strcmp(live_pkt(g, "Qbtrace:bts"), "OK") && live_pkt(g, "Qbtrace:bts")[0] == 'E', "bts on, once");
	r = live_pkt(g, "qXfer:btrace-conf:read::0,fff");
	CHECK(strstr(r, "<bts size=\"0x1000\"/>"), "btrace-conf: bts and its size: %s", r);
	CHECK(live_pkt(g, "qXfer:btrace:read:delta:0,fff")[0] == 'E', "no delta");
	r = live_pkt(g, "qXfer:btrace:read:new:0,fff");
	CHECK(lvb_calls == 1 && strstr(r, "<block begin=\"0x1040\" end=\"0x1048\"/>"),
	      "new: the records read at this stop, the block to the RIP: %s", r);
	CHECK(strstr(live_pkt(g, "qXfer:btrace:read:new:0,fff"), "<btrace version=\"1.0\"/>") && lvb_calls == 1,
	      "new again while stopped: nothing new, not read again");
	r = live_pkt(g, "qXfer:btrace:read:all:0,20");
	CHECK(r[0] == 'm' && lvb_calls == 1, "all, a slice: from the same document");
	/* the guest runs, records a branch more, stops */
	lvb_nr = 2;
	CHECK(!strcmp(live_pkt(g, "c"), "") && live_running, "continue");
	live_nout = 0;
	hvt_gdb_input(g, "\x03", 1);
	CHECK(!live_running && strstr(live_out, "$T02thread:1;#"), "interrupted");
	r = live_pkt(g, "qXfer:btrace:read:new:0,fff");
	CHECK(lvb_calls == 2 && strstr(r, "<block begin=\"0x1046\" end=\"0x1048\"/>\n<block begin=\"0x1040\" "
					  "end=\"0x1044\"/>"),
	      "after a stop: read again, the new branch newest: %s", r);
	/* a step: the document is made again */
	live_regs[0].rip = 0x1047;
	CHECK(!strcmp(live_pkt(g, "s"), "T05thread:1;"), "step");
	r = live_pkt(g, "qXfer:btrace:read:new:0,fff");
	CHECK(lvb_calls == 3 && strstr(r, "end=\"0x1048\""), "after a step: read again: %s", r);
	/* a recorder that cannot be read: an error, never a stale trace */
	lvb_fail = 1;
	CHECK(!strcmp(live_pkt(g, "s"), "T05thread:1;"), "step again");
	CHECK(live_pkt(g, "qXfer:btrace:read:new:0,fff")[0] == 'E', "history unreadable: an error");
	lvb_fail = 0;
	CHECK(!strcmp(live_pkt(g, "Qbtrace:off"), "OK") && live_pkt(g, "Qbtrace:off")[0] == 'E', "bts off, once");
	CHECK(!strcmp(live_pkt(g, "D"), "OK"), "detach");
	hvt_gdb_free(g);
	/* no flight recorder in the channel: bts refused */
	t.bts_size = 0;
	g = hvt_gdb_new(&t, lv_send, NULL);
	CHECK(g && live_pkt(g, "Qbtrace:bts")[0] == 'E' && !th[0].bts, "no flight recorder: bts refused");
	hvt_gdb_free(g);
	/* a live target without a history: nothing offered */
	static const struct hvt_gdb_live bare = { .stop = lv_stop, .resume = lv_resume, .step = lv_step };
	t.live = &bare;
	g = hvt_gdb_new(&t, lv_send, NULL);
	r = live_pkt(g, "qSupported:swbreak+");
	CHECK(g && !strstr(r, "btrace") && !strcmp(live_pkt(g, "Qbtrace:bts"), ""), "no history: no btrace: %s", r);
	hvt_gdb_free(g);
}

/* The page walks of every paging mode over a raw dump of 64 KiB, and an
 * ELF of symbols read back. */
static void put_pte(uint8_t *m, uint64_t pa, uint64_t v, unsigned size)
{
	memcpy(m + pa, &v, size);
}

static void test_page_walks(void)
{
	static uint8_t mem[0x10000];
	struct hvt_dump d;
	struct hvt_err err;
	struct hvt_vcpu_regs c = { .has_sys = 1 };
	uint64_t pa, left, v = 0;
	char path[] = "/tmp/hvt-unit-syms-XXXXXX";
	static const char map[] = "ffffffff81000000 T a\nffffffff81000010 T b\nffffffff81000010 t b_alias\n"
				  "ffffffff81000100 T c\n";
	struct hvt_syms s, back;
	const struct hvt_sym *sym;
	uint64_t off;
	int fd;

	memset(mem, 0, sizeof(mem));
	/* 32-bit paging: PD at 0x1000; PDE 1 -> PT at 0x2000 (PTE 3 -> 0x5000);
	 * PDE 2: a 4 MiB page at 0x400000 (PSE) */
	put_pte(mem, 0x1000 + 1 * 4, 0x2000 | 1, 4);
	put_pte(mem, 0x2000 + 3 * 4, 0x5000 | 1, 4);
	put_pte(mem, 0x1000 + 2 * 4, 0x400000 | 0x81, 4);
	/* PAE: PDPT at 0x3000 (32-byte aligned); PDPTE 1 -> PD at 0x4000;
	 * PDE 0 -> PT at 0x6000 (PTE 2 -> 0x7000); PDE 1: a 2 MiB page */
	put_pte(mem, 0x3000 + 8, 0x4000 | 1, 8);
	put_pte(mem, 0x4000, 0x6000 | 1, 8);
	put_pte(mem, 0x6000 + 2 * 8, 0x8000000000007000ull | 1, 8);	/* NX ignored */
	put_pte(mem, 0x4000 + 8, 0x200000 | 0x81, 8);
	put_pte(mem, 0x5000 + 8, 0x1122334455667788ull, 8);
	/* 4-level: PML4 0x8000, [0] -> PDPT 0x9000, [1]: a 1 GiB page at 1 GiB */
	put_pte(mem, 0x8000, 0x9000 | 1, 8);
	put_pte(mem, 0x9000 + 8, 0x40000000 | 0x81, 8);
	CHECK(hvt_dump_open_any_mem(&d, mem, sizeof(mem), &err) == 0, "%s", err.msg);

	c.cr[0] = 0x80000011, c.cr[3] = 0x1000, c.cr[4] = 0x10;	/* 32-bit, PSE */
	CHECK(!hvt_vcpu_translate(&d, &c, 0x403008, &pa, &left) && pa == 0x5008 && left == 0xff8,
	      "32-bit 4 KiB: 0x%llx", (unsigned long long)pa);
	CHECK(hvt_vcpu_read(&d, &c, 0x403008, &v, 8) == 8 && v == 0x1122334455667788ull, "32-bit read");
	CHECK(!hvt_vcpu_translate(&d, &c, 0x812345, &pa, &left) && pa == 0x412345, "32-bit 4 MiB: 0x%llx",
	      (unsigned long long)pa);
	CHECK(hvt_vcpu_translate(&d, &c, 0xc00000, &pa, &left), "32-bit: PDE 3 not present");
	c.cr[4] = 0;
	CHECK(hvt_vcpu_translate(&d, &c, 0x812345, &pa, &left), "32-bit: PS ignored without CR4.PSE");
	c.cr[3] = 0x3000, c.cr[4] = 0x20;				/* PAE */
	CHECK(!hvt_vcpu_translate(&d, &c, 0x40002010, &pa, &left) && pa == 0x7010, "PAE 4 KiB: 0x%llx",
	      (unsigned long long)pa);
	CHECK(!hvt_vcpu_translate(&d, &c, 0x40212345, &pa, &left) && pa == 0x212345, "PAE 2 MiB: 0x%llx",
	      (unsigned long long)pa);
	CHECK(hvt_vcpu_translate(&d, &c, 0x1000, &pa, &left), "PAE: PDPTE 0 not present");
	c.cr[3] = 0x8000, c.cs_flags = 1u << 21;			/* long mode, 4 levels */
	CHECK(!hvt_vcpu_translate(&d, &c, 0x40123456, &pa, &left) && pa == 0x40123456 &&
	      left == 0x40000000 - 0x123456, "1 GiB page: 0x%llx", (unsigned long long)pa);
	CHECK(hvt_vcpu_read(&d, &c, 0x40123456, &v, 8) < 0, "a page the dump lacks");
	CHECK(hvt_vcpu_translate(&d, &c, 0x0000800000000000ull, &pa, &left), "non-canonical");
	c.cr[0] = 0x11;						/* no paging */
	CHECK(!hvt_vcpu_translate(&d, &c, 0x5008, &pa, &left) && pa == 0x5008, "no paging: physical");
	hvt_dump_close(&d);

	/* symbols written as an ELF read back the same, sizes from the gaps */
	CHECK(hvt_syms_parse_map(&s, map, strlen(map), &err) == 0, "%s", err.msg);
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd >= 0)
		close(fd);
	CHECK(hvt_syms_write_elf(&s, path, &err) == 0, "%s", err.msg);
	CHECK(hvt_syms_load(&back, path, &err) == 0 && back.n == s.n && s.n >= 3, "%s %zu %zu", err.msg, back.n, s.n);
	sym = hvt_syms_lookup(&back, 0xffffffff81000018ull, &off);
	CHECK(sym && !strncmp(sym->name, "b", 1) && off == 8 && sym->size == 0xf0, "b+8, size 0xf0");
	sym = hvt_syms_lookup(&back, 0xffffffff81000004ull, &off);
	CHECK(sym && !strcmp(sym->name, "a") && sym->size == 0x10, "a, size 0x10");
	hvt_syms_free(&back);
	hvt_syms_free(&s);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_ring_arithmetic();
	test_torn_records();
	test_lossless_single();
	test_lossless_threads();
	test_sort();
	test_file_roundtrip();
	test_file_merge_tsc();
	test_symbols();
	test_corrupt_channels();
	test_dumps();
	test_dump_candidates();
	test_dump_raw_base();
	test_corrupt_files();
	test_gap_marker();
	test_corrupt_syms();
	test_ctl();
	test_dbg();
	test_gdb_live();
	test_gdb_live_btrace();
	test_page_walks();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return unit_done("test_libhvtrace");
}
