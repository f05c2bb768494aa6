/* SPDX-License-Identifier: MIT */
/*
 * hvtrace-bench-drain: host drain throughput. A producer thread writes
 * records into a LOSSLESS ring in shared memory (batches, head published
 * once per batch) while the main thread drains it with libhvtrace
 * (hvt_ring_drain: copy out, then tail). Compared, in the same run, with
 * (a) a plain memcpy of the same byte count, one call from one buffer to
 * another (the target's baseline), and (b) the same bytes copied in the
 * drain's chunk size from a ring-sized source into a cache-resident
 * buffer (a best case: no other core, everything in L2). Prints one line
 * per repetition and the medians:
 * "median: drain X GB/s, memcpy Y GB/s, ratio R, cached memcpy Z GB/s, ratio Q".
 * Usage: hvtrace-bench-drain [RUNS [MIB]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

/* One thread a CPU where there are two: two spinning threads sharing one
 * core would measure the scheduler. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Waiting for the other side: spin a little, then give the CPU away. */
static void backoff(unsigned *spins)
{
	if (++*spins < 1000) {
		__builtin_ia32_pause();
	} else {
		sched_yield();
		*spins = 0;
	}
}

static void *producer(void *arg)
{
	struct prod *p = arg;
	struct hvt_producer pr;
	uint64_t done = 0;
	unsigned spins = 0;

	pin(1);
	hvt_producer_init(&pr, p->chan);
	while (done < p->total) {
		uint64_t want = p->total - done < CHUNK ? p->total - done : CHUNK;
		uint64_t k = hvt_producer_put_batch(&pr, 0, p->batch, want);

		if (!k)
			backoff(&spins);
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
	uint64_t got = 0, i;
	int64_t n = 0;
	unsigned spins = 0;
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
		n = hvt_ring_drain(&ch, 0, dst, CHUNK, &err);
		if (n < 0) {
			fprintf(stderr, "bench: %s\n", err.msg);
			exit(1);
		}
		if (!n)
			backoff(&spins);
		got += (uint64_t)n;
	}
	t1 = now_s();
	pthread_join(th, NULL);
	for (i = 0; i < (uint64_t)n; i++)	/* the last step's records are whole */
		if (hvt_rec_check(&dst[i], &err)) {
			fprintf(stderr, "bench: drained record %llu is wrong: %s\n", (unsigned long long)i,
				err.msg);
			exit(1);
		}
	return (double)(total * sizeof(struct hvtrace_rec)) / (t1 - t0) / 1e9;
}

static double run_memcpy_plain(const uint8_t *src, uint8_t *dst, uint64_t bytes)
{
	double t0 = now_s(), t1;

	memcpy(dst, src, bytes);
	__asm__ volatile("" : : "r"(dst) : "memory");
	t1 = now_s();
	return (double)bytes / (t1 - t0) / 1e9;
}

static double run_memcpy_cached(const uint8_t *src, uint64_t total, struct hvtrace_rec *dst)
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
	uint64_t bytes = total * sizeof(struct hvtrace_rec);
	uint8_t *big_src = malloc(bytes), *big_dst = malloc(bytes);
	double d[64], m[64], r[64], c[64], q[64];

	if (runs < 1 || runs > 64 || !total || chan == MAP_FAILED || !batch || !dst || !src || !big_src ||
	    !big_dst) {
		fprintf(stderr, "usage: hvtrace-bench-drain [RUNS (1..64) [MIB]]\n");
		return 2;
	}
	for (i = 0; i < (int)CHUNK; i++)
		hvt_synth_rec(0, (uint64_t)i, 5, &batch[i]);
	for (i = 0; i < (int)RING_RECS; i++)
		hvt_synth_rec(0, (uint64_t)i, 5, (struct hvtrace_rec *)src + i);
	pin(0);
	/* fault every page in before anything is timed */
	memset(big_src, 0x5a, bytes);
	memset(big_dst, 0, bytes);
	run_memcpy_cached(src, total / 8, dst);
	run_drain(chan, size, total / 8, batch, dst);
	for (i = 0; i < runs; i++) {
		/* alternate so drift on the machine hits all alike */
		d[i] = run_drain(chan, size, total, batch, dst);
		m[i] = run_memcpy_plain(big_src, big_dst, bytes);
		c[i] = run_memcpy_cached(src, total, dst);
		r[i] = d[i] / m[i];
		q[i] = d[i] / c[i];
		printf("run %d: drain %.2f GB/s, memcpy %.2f GB/s, ratio %.3f, cached memcpy %.2f GB/s, ratio %.3f\n",
		       i + 1, d[i], m[i], r[i], c[i], q[i]);
	}
	printf("median: drain %.2f GB/s, memcpy %.2f GB/s, ratio %.3f, cached memcpy %.2f GB/s, ratio %.3f "
	       "(%llu MiB a run, %d runs)\n",
	       median(d, runs), median(m, runs), median(r, runs), median(c, runs), median(q, runs),
	       (unsigned long long)mib, runs);
	return 0;
}
