/* Minimal host unit-test harness: CHECK() counts and reports each check;
 * unit_done() prints "NAME: N passed, M failed" and sets the exit code. */
#ifndef HVTRACE_UNIT_H
#define HVTRACE_UNIT_H
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static unsigned unit_passed, unit_failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		unit_passed++;						\
	} else {							\
		unit_failed++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

/* xorshift64: the same pseudo-random sequence at every run */
static uint64_t unit_rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t unit_rand(void)
{
	unit_rng ^= unit_rng << 13;
	unit_rng ^= unit_rng >> 7;
	unit_rng ^= unit_rng << 17;
	return unit_rng;
}

static inline int unit_done(const char *name)
{
	printf("%s: %u passed, %u failed\n", name, unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}
#endif
