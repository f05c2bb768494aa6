/* The debugger's page breakpoints' bookkeeping (hv/trace/pagebp.c): slots
 * to pages, several breakpoints on one page, hits by linear address and
 * guest-physical page, and when a page's execute permission goes and
 * comes back (its breakpoints and the vCPUs stepping on it). */
#include <string.h>
#include "unit.h"
#include "trace/pagebp.h"

/* what the nested tables would hold: pagebp_want_nx applied as dbg.c's
 * page_sync does, the entry freed when done */
static void sync(struct pagebp *p, int i)
{
	p->page[i].nx = pagebp_want_nx(&p->page[i]);
	pagebp_release(p, i);
}

/* page watchpoints: their ranges, pages that carry breakpoints and watchpoints both */
static void test_watch(void)
{
	static struct pagebp p;
	memset(&p, 0, sizeof(p));
	CHECK(pagebp_set_watch(&p, 1, 0x7000, 0x507000, 0) < 0 && pagebp_set_watch(&p, 1, 0x7ff9, 0x507ff9, 8) < 0 &&
		      pagebp_set_watch(&p, 1, 0x7000, 0x507000, 4097) < 0 && !p.slot[1].on,
	      "a watchpoint of no bytes, one past its page, one longer than a page: refused");
	int a = pagebp_set_watch(&p, 1, 0x7040, 0x507040, 8);
	int b = pagebp_set(&p, 2, 0x7100, 0x507100);
	int c = pagebp_set_watch(&p, 3, 0x7ff8, 0x507ff8, 8);
	CHECK(a >= 0 && a == b && a == c && p.page[a].wps == 2 && p.page[a].bps == 1 && p.slot[1].len == 8,
	      "two watchpoints and a breakpoint on one page: counted apart");
	CHECK(pagebp_watches(&p, 0x507abc) == (1u << 1 | 1u << 3) && pagebp_watches(&p, 0x508000) == 0,
	      "the page's watchpoints (slots 1 and 3), none on another page");
	CHECK(pagebp_hits(&p, 0x7040, 0x507040) == 0 && pagebp_hits(&p, 0x7100, 0x507100) == 1u << 2,
	      "a watchpoint's address is no breakpoint's hit");
	CHECK(pagebp_want_nx(&p.page[a]) && pagebp_want_ro(&p.page[a]), "not executable, not writable");
	p.page[a].ro = p.page[a].nx = true;
	p.page[a].open++;
	CHECK(!pagebp_want_nx(&p.page[a]) && !pagebp_want_ro(&p.page[a]), "open for a step: both given back");
	p.page[a].open--;
	CHECK(pagebp_clear(&p, 2) == a && !pagebp_want_nx(&p.page[a]) && pagebp_want_ro(&p.page[a]),
	      "the breakpoint cleared: executable, still not writable");
	p.page[a].nx = false;
	CHECK(pagebp_clear(&p, 1) == a && pagebp_clear(&p, 3) == a && !p.page[a].wps && !pagebp_want_ro(&p.page[a]),
	      "both watchpoints cleared: writable");
	pagebp_release(&p, a);
	CHECK(p.page[a].used, "kept while the tables still say not writable");
	p.page[a].ro = false;
	pagebp_release(&p, a);
	CHECK(!p.page[a].used, "freed once writable again");
}

/* engine = interp's accesses against the debugger's watchpoints (pagebp_watch_hits): a debug
 * register's by linear overlap (reads only for a read-or-write one), a page slot's by
 * guest-physical overlap and a change of its own bytes */
static void test_watch_hits(void)
{
	const struct pagebp_watch w[] = {
		{ .slot = 0, .reads = false, .len = 8, .addr = 0x1000 },
		{ .slot = 2, .reads = true, .len = 2, .addr = 0x2002 },
		{ .slot = 5, .len = 4, .addr = 0x7044, .gpa = 0x507044 },
	};
	const u8 z[8] = { 0 }, one[8] = { 1 }, hi[8] = { 0, 0, 0, 0, 0, 0, 0, 9 };
	CHECK(pagebp_watch_hits(w, 3, 0x1000, 0x9000, 8, z, z) == 1u << 0,
	      "a write of the watched word, its value unchanged: a debug register's fires");
	CHECK(pagebp_watch_hits(w, 3, 0x1000, 0x9000, 8, NULL, NULL) == 0,
	      "a read of a write watchpoint's word: none");
	CHECK(pagebp_watch_hits(w, 3, 0x0ff8, 0x9000, 8, z, one) == 0 && pagebp_watch_hits(w, 3, 0x1007, 0x9000, 1, z, one) == 1u,
	      "a write just below the word: none; of its last byte: fires");
	CHECK(pagebp_watch_hits(w, 3, 0x2000, 0x9000, 4, NULL, NULL) == 1u << 2 &&
		      pagebp_watch_hits(w, 3, 0x2004, 0x9000, 4, NULL, NULL) == 0,
	      "a read overlapping a read-or-write watchpoint: fires; past it: none");
	CHECK(pagebp_watch_hits(w, 3, 0x7040, 0x507040, 8, z, one) == 0,
	      "a write to the page slot's page changing bytes outside its own: none");
	CHECK(pagebp_watch_hits(w, 3, 0x7040, 0x507040, 8, z, hi) == 1u << 5,
	      "a write changing one of its bytes: the page slot fires");
	CHECK(pagebp_watch_hits(w, 3, 0x9044, 0x507044, 4, z, z) == 0 &&
		      pagebp_watch_hits(w, 3, 0x9044, 0x507044, 4, NULL, NULL) == 0,
	      "a page slot: a write of the same bytes, a read: none (found by its guest-physical address)");
	CHECK(pagebp_watch_near(w, 3, 0x7000, 0x507000, 0x48) && !pagebp_watch_near(w, 3, 0x7000, 0x507000, 0x44) &&
		      pagebp_watch_near(w, 3, 0xff0, 0x9000, 0x11),
	      "a fill up to a page slot's first byte or a debug register's: near; one short of it: not");
}

int main(void)
{
	static struct pagebp p;
	memset(&p, 0, sizeof(p));
	test_watch();
	test_watch_hits();

	/* two breakpoints on one page, one on another */
	int a = pagebp_set(&p, 0, 0xffff800000401010ull, 0x401010);
	int b = pagebp_set(&p, 3, 0xffff800000401ff0ull, 0x401ff0);
	int c = pagebp_set(&p, 27, 0xffff800000402000ull, 0x402000);
	CHECK(a >= 0 && a == b && c >= 0 && c != a, "entries: %d %d %d", a, b, c);
	CHECK(p.page[a].gpa == 0x401000 && p.page[a].bps == 2 && p.page[c].bps == 1, "pages and counts");
	CHECK(pagebp_set(&p, 0, 0x1000, 0x1000) < 0 && pagebp_set(&p, PAGEBP_SLOTS, 0x1000, 0x1000) < 0,
	      "a slot set twice, a slot past the last: refused");
	sync(&p, a);
	sync(&p, c);
	CHECK(p.page[a].nx && p.page[c].nx, "pages with breakpoints lose execute");
	CHECK(pagebp_find(&p, 0x401abc) == a && pagebp_find(&p, 0x403000) < 0, "find by any address in the page");

	/* hits: the linear address and the guest-physical page both */
	CHECK(pagebp_hits(&p, 0xffff800000401010ull, 0x401000) == 1u << 0, "hit slot 0");
	CHECK(pagebp_hits(&p, 0xffff800000401ff0ull, 0x401ff0) == 1u << 3, "hit slot 3");
	CHECK(pagebp_hits(&p, 0xffff800000401014ull, 0x401014) == 0, "another instruction on the page: no hit");
	CHECK(pagebp_hits(&p, 0xffff800000401010ull, 0x501010) == 0,
	      "the address mapped to another page (another address space): no hit");
	CHECK(pagebp_hits(&p, 0xffff800000402000ull, 0x402000) == 1u << 27, "hit slot 27 (the last)");

	/* a vCPU steps one instruction there: execute back while open */
	p.page[a].open++;
	sync(&p, a);
	CHECK(!p.page[a].nx && p.page[a].used, "open: executable, the entry kept");
	p.page[a].open++;	/* a second vCPU */
	p.page[a].open--;
	sync(&p, a);
	CHECK(!p.page[a].nx, "still open by one");
	p.page[a].open--;
	sync(&p, a);
	CHECK(p.page[a].nx, "closed: protected again");

	/* clearing: the page keeps its protection while any breakpoint stays */
	CHECK(pagebp_clear(&p, 0) == a && p.page[a].bps == 1, "slot 0 cleared");
	sync(&p, a);
	CHECK(p.page[a].nx && p.page[a].used, "one breakpoint left: protected");
	CHECK(pagebp_clear(&p, 0) < 0, "a clear slot cleared again: nothing");
	CHECK(pagebp_hits(&p, 0xffff800000401010ull, 0x401000) == 0, "a cleared slot never hits");

	/* the last breakpoint cleared while a vCPU has the page open: the
	 * entry stays until it closes, executable; then it is freed */
	p.page[a].open++;
	sync(&p, a);
	CHECK(pagebp_clear(&p, 3) == a && p.page[a].bps == 0, "the last cleared");
	sync(&p, a);
	CHECK(!p.page[a].nx && p.page[a].used, "open, no breakpoint: executable, kept");
	p.page[a].open--;
	sync(&p, a);
	CHECK(!p.page[a].nx && !p.page[a].used && pagebp_find(&p, 0x401000) < 0, "closed: freed, executable");

	/* every slot on its own page, then one more page: no entry is lacking */
	for (int s = 0; s < PAGEBP_SLOTS; s++) {
		if (s == 27)
			continue;
		int i = pagebp_set(&p, (u32)s, 0x10000000ull + (u64)s * 4096, 0x10000000ull + (u64)s * 4096);
		CHECK(i >= 0, "slot %d on a page of its own: %d", s, i);
		if (i >= 0)
			sync(&p, i);
	}
	int used = 0;
	for (int i = 0; i < PAGEBP_SLOTS; i++)
		used += p.page[i].used;
	CHECK(used == PAGEBP_SLOTS, "28 pages for 28 slots: %d", used);
	/* the session's end: every slot cleared, every page as it was */
	for (int s = 0; s < PAGEBP_SLOTS; s++) {
		int i = pagebp_clear(&p, (u32)s);
		CHECK(i >= 0, "slot %d cleared", s);
		if (i >= 0)
			sync(&p, i);
	}
	used = 0;
	for (int i = 0; i < PAGEBP_SLOTS; i++)
		used += p.page[i].used || p.page[i].nx;
	CHECK(used == 0, "after the session: no page protected, no entry: %d", used);
	return unit_done("test_pagebp");
}
