/* A pool of fake physical pages for the page-table builder tests: page i
 * "lives" at FAKE_BASE + i * 4 KiB. Include once per test program. */
#ifndef HVTRACE_FAKE_PAGES_H
#define HVTRACE_FAKE_PAGES_H
#include <stdint.h>
#include <string.h>
#include "base/pgbuild.h"

#define FAKE_BASE 0x7000000000ull
#ifndef FAKE_PAGES
#define FAKE_PAGES 8192
#endif
static uint8_t (*pages)[4096];	/* aligned_alloc(4096, FAKE_PAGES * 4096) by the test */
static unsigned used;		/* pages handed out; set to FAKE_PAGES to fail allocations */

static void *fake_alloc(void *ctx, u64 *pa)
{
	(void)ctx;
	if (used == FAKE_PAGES)
		return NULL;
	*pa = FAKE_BASE + (u64)used * 4096;
	memset(pages[used], 0, 4096);
	return pages[used++];
}

static void *fake_ptr(void *ctx, u64 pa)
{
	(void)ctx;
	return pages[(pa - FAKE_BASE) / 4096];
}

static const struct pg_alloc fake = { fake_alloc, fake_ptr, NULL };
#endif
