/* SPDX-License-Identifier: MIT */
/*
 * hvtrace-bench-drain: host drain throughput. A producer thread writes
 * records into a LOSSLESS ring in shared memory (batches, head published
 * once per batch) while the main thread drains it with libhvtrace
 * (hvt_ring_drain: copy out, then tail). Compared, in the same run, with
 * a plain memcpy of the same byte count in the same chunk size from a
 * source as large as the ring. Prints one line per repetition and the
 * medians: "median: drain X GB/s, memcpy Y GB/s, ratio R".
 * Usage: hvtrace-bench-drain [RUNS [MIB]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "libhvtrace.h"

#define RING_RECS (1u << 15)	/* 1 MiB ring */
#define CHUNK (1u << 12)	/* records per drain step / produce batch: 128 KiB */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct prod {
	void *chan;
	uint64_t total;
	struct hvtrace_rec *batch;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	struct hvt_producer pr;
	uint64_t done = 0;

	hvt_producer_init(&pr, p->chan);
	while (done < p->total) {
		uint64_t want = p->total - done < CHUNK ? p->total - done : CHUNK;
		uint64_t k = hvt_producer_put_batch(&pr, 0, p->batch, want);

		if (!k)
			__builtin_ia32_pause();
		done += k;
	}
	return NULL;
}

static double run_drain(void *chan, uint64_t size, uint64_t total, struct hvtrace_rec *batch,
			struct hvtrace_rec *dst)
{
	struct hvt_ring_spec rs = { .vcpu = 0, .mode = HVTRACE_RING_LOSSLESS, .capacity = RING_RECS };
	struct prod p = { chan, total, batch };
	struct hvt_chan ch;
	struct hvt_err err;
	uint64_t got = 0;
	pthread_t th;
	double t0, t1;

	if (hvt_chan_layout(chan, size, &rs, 1, 1, 0, &err) || hvt_chan_validate(&ch, chan, size, &err) ||
	    hvt_ring_attach(&ch, 0, 1, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	t0 = now_s();
	pthread_create(&th, NULL, producer, &p);
	while (got < total) {
		int64_t n = hvt_ring_drain(&ch, 0, dst, CHUNK, &err);

		if (n < 0) {
			fprintf(stderr, "bench: %s\n", err.msg);
			exit(1);
		}
		if (!n)
			__builtin_ia32_pause();
		got += (uint64_t)n;
	}
	t1 = now_s();
	pthread_join(th, NULL);
	if (dst[CHUNK - 1].kind != HVTRACE_REC_BRANCH) {
		fprintf(stderr, "bench: drained records are wrong\n");
		exit(1);
	}
	return (double)(total * sizeof(struct hvtrace_rec)) / (t1 - t0) / 1e9;
}

static double run_memcpy(const uint8_t *src, uint64_t total, struct hvtrace_rec *dst)
{
	uint64_t bytes = total * sizeof(struct hvtrace_rec), off = 0, done = 0;
	const uint64_t chunk = CHUNK * sizeof(struct hvtrace_rec), ring = RING_RECS * sizeof(*dst);
	double t0 = now_s(), t1;

	while (done < bytes) {
		memcpy(dst, src + off, chunk);
		__asm__ volatile("" : : "r"(dst) : "memory");
		off = (off + chunk) % ring;
		done += chunk;
	}
	t1 = now_s();
	return (double)bytes / (t1 - t0) / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5, i;
	uint64_t mib = argc > 2 ? strtoull(argv[2], NULL, 0) : 1024;
	uint64_t total = mib * 1024 * 1024 / sizeof(struct hvtrace_rec);
	struct hvt_ring_spec rs = { .vcpu = 0, .mode = HVTRACE_RING_LOSSLESS, .capacity = RING_RECS };
	uint64_t size = hvt_chan_layout_size(&rs, 1);
	void *chan = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct hvtrace_rec *batch = malloc(CHUNK * sizeof(*batch)), *dst = malloc(CHUNK * sizeof(*dst));
	uint8_t *src = malloc(RING_RECS * sizeof(*dst));
	double d[64], m[64], r[64];

	if (runs < 1 || runs > 64 || !total || chan == MAP_FAILED || !batch || !dst || !src) {
		fprintf(stderr, "usage: hvtrace-bench-drain [RUNS (1..64) [MIB]]\n");
		return 2;
	}
	for (i = 0; i < (int)CHUNK; i++)
		hvt_synth_rec(0, (uint64_t)i, 5, &batch[i]);
	for (i = 0; i < (int)RING_RECS; i++)
		hvt_synth_rec(0, (uint64_t)i, 5, (struct hvtrace_rec *)src + i);
	run_memcpy(src, total / 8, dst);	/* warm up */
	for (i = 0; i < runs; i++) {
		/* alternate so drift on the machine hits both alike */
		d[i] = run_drain(chan, size, total, batch, dst);
		m[i] = run_memcpy(src, total, dst);
		r[i] = d[i] / m[i];
		printf("run %d: drain %.2f GB/s, memcpy %.2f GB/s, ratio %.3f\n", i + 1, d[i], m[i], r[i]);
	}
	printf("median: drain %.2f GB/s, memcpy %.2f GB/s, ratio %.3f (%llu MiB a run, %d runs)\n",
	       median(d, runs), median(m, runs), median(r, runs), (unsigned long long)mib, runs);
	return 0;
}
