/* Page-table builder against memory maps: identity maps with hidden ranges
 * at awkward places, checked by walking the tables it built. */
#include <stdint.h>
#include <string.h>
#include "unit.h"
#include "arch/x86/paging.h"
#include "base/memmap.h"
#include "base/pgbuild.h"

#define FAKE_PAGES 8192
#include "fake_pages.h"
static const u64 F = PTE_P | PTE_RW | PTE_US;

static void expect(struct pg_builder *b, u64 va, u64 want_pa, const char *what)
{
	u64 pa = 0, flags = 0, leaf = 0;
	bool ok = pg_translate(b, va, &pa, &flags, &leaf);
	CHECK(ok && pa == want_pa && (flags & F) == F, "%s: va %llx -> %llx (ok %d), want %llx", what,
	      (unsigned long long)va, (unsigned long long)pa, ok, (unsigned long long)want_pa);
}

/* Checks every page boundary around each hidden range, plus samples. */
static void check_map(u64 limit, const struct hv_memmap *hidden, u64 sink, u64 max_leaf)
{
	struct pg_builder b;
	used = 0;
	CHECK(pg_init(&b, &fake, max_leaf, F), "init");
	CHECK(pg_identity_map(&b, limit, hidden->r, hidden->nr, sink, F), "identity map");
	for (u32 i = 0; i < hidden->nr; i++) {
		u64 hb = hidden->r[i].base, he = hb + hidden->r[i].size;
		if (hb >= limit)
			continue;
		if (hb >= 4096)
			expect(&b, hb - 4096 + 123, hb - 4096 + 123, "below hidden");
		expect(&b, hb, sink, "hidden start");
		expect(&b, hb + 0x777, sink + 0x777, "hidden offset");
		expect(&b, he - 1, sink + 0xfff, "hidden last byte");
		if (he < limit)
			expect(&b, he, he, "after hidden");
	}
	for (u64 a = 0; a < limit; a += limit / 97 + 4096 * 13) {
		bool in_hidden = memmap_contains(hidden, a, 1);
		expect(&b, a, in_hidden ? sink + (a & 0xfff) : a, "sample");
	}
	u64 pa, fl, leaf;
	CHECK(!pg_translate(&b, limit, &pa, &fl, &leaf) || limit == (1ull << 48), "nothing past limit");
	/* large pages where possible: the first GiB-aligned GiB without hidden pages */
	for (u64 a = 0; a < limit; a += PAGE_1G) {
		if (memmap_contains(hidden, a, 1) || (hidden->nr && range_overlaps(a, PAGE_1G, hidden->r[0].base, hidden->r[0].size)))
			continue;
		bool clean = true;
		for (u32 i = 0; i < hidden->nr; i++)
			clean &= !range_overlaps(a, PAGE_1G, hidden->r[i].base, hidden->r[i].size);
		if (!clean || a + PAGE_1G > limit)
			continue;
		CHECK(pg_translate(&b, a, &pa, &fl, &leaf) && leaf == max_leaf && (fl & PTE_PS),
		      "leaf at %llx is %llx, want %llx", (unsigned long long)a, (unsigned long long)leaf,
		      (unsigned long long)max_leaf);
		break;
	}
}

int main(void)
{
	pages = aligned_alloc(4096, (size_t)FAKE_PAGES * 4096);
	struct hv_memmap h;

	/* a 32 MiB reserve not 2 MiB aligned, as OVMF hands out */
	memset(&h, 0, sizeof(h));
	memmap_add(&h, 0x1c2bf000, 32 << 20);
	check_map(1ull << 40, &h, 0x1c2c0000, PAGE_1G);
	CHECK(used < 40, "%u table pages for 1 TiB with one hole", used);
	check_map(1ull << 40, &h, 0x1c2c0000, PAGE_2M);

	/* hidden ranges at 0, across a GiB boundary, and at the very end */
	memset(&h, 0, sizeof(h));
	memmap_add(&h, 0, 0x3000);
	memmap_add(&h, PAGE_1G - 0x5000, 0xa000);
	memmap_add(&h, (64ull << 30) - 0x1000, 0x1000);
	check_map(64ull << 30, &h, 0x4000, PAGE_1G);

	/* no hidden range: 1 TiB of 1 GiB pages = PML4 + 2 PDPTs */
	memset(&h, 0, sizeof(h));
	check_map(1ull << 40, &h, 0, PAGE_1G);
	CHECK(used == 3, "%u table pages, want 3", used);

	/* the whole 48-bit space with 1 GiB leaves */
	check_map(1ull << 48, &h, 0, PAGE_1G);
	CHECK(used == 1 + 512, "%u table pages for 256 TiB", used);

	/* pg_leaf: the 4 KiB leaf of an address in a 1 GiB page, split on
	 * the way (the debugger's page breakpoints take NX there); its
	 * neighbours keep their mapping, a second call splits nothing */
	{
		struct pg_builder lb;
		used = 0;
		memset(&h, 0, sizeof(h));
		CHECK(pg_init(&lb, &fake, PAGE_1G, F) && pg_identity_map(&lb, 4ull << 30, h.r, 0, 0, F), "leaf map");
		unsigned before = used;
		u64 *e = pg_leaf(&lb, 0x40123000);
		CHECK(e && (*e & PTE_ADDR_MASK) == 0x40123000 && !(*e & PTE_PS) && used == before + 2,
		      "pg_leaf: a 4 KiB leaf after two splits (%u tables)", used - before);
		*e |= PTE_NX;
		u64 pa, fl, leaf;
		CHECK(pg_translate(&lb, 0x40123abc, &pa, &fl, &leaf) && pa == 0x40123abc && leaf == PAGE_SIZE &&
			      (fl & PTE_NX),
		      "the leaf is the one the walk finds");
		CHECK(pg_translate(&lb, 0x40124000, &pa, &fl, &leaf) && pa == 0x40124000 && !(fl & PTE_NX) &&
			      pg_translate(&lb, 0x7fffffff, &pa, &fl, &leaf) && pa == 0x7fffffff && leaf == PAGE_2M,
		      "its neighbours as they were");
		CHECK(pg_leaf(&lb, 0x40123000) == e && used == before + 2, "again: the same leaf, no new table");
		CHECK(!pg_leaf(&lb, 0x40123001) && !pg_leaf(&lb, 8ull << 30), "unaligned, not mapped: none");
		/* pg_leaf_flag: one bit of a leaf, reporting the one before */
		bool was = true;
		CHECK(pg_leaf_flag(&lb, 0x40123000, PTE_NX, false, &was) && was && !(*e & PTE_NX) &&
			      (*e & PTE_ADDR_MASK) == 0x40123000 && (*e & F) == F,
		      "pg_leaf_flag: NX cleared, it was set, the rest of the entry as it was");
		CHECK(pg_leaf_flag(&lb, 0x40123000, PTE_NX, true, &was) && !was && (*e & PTE_NX) &&
			      pg_leaf_flag(&lb, 0x40123000, PTE_NX, true, &was) && was,
		      "set, and set again: it was");
		/* the page watchpoints' write: RW the same way, NX and the rest untouched */
		CHECK(pg_leaf_flag(&lb, 0x40123000, PTE_RW, false, &was) && was && !(*e & PTE_RW) && (*e & PTE_NX) &&
			      (*e & PTE_ADDR_MASK) == 0x40123000 && (*e & PTE_P),
		      "pg_leaf_flag: RW cleared (not writable), it was set, NX and the rest kept");
		CHECK(pg_leaf_flag(&lb, 0x40123000, PTE_RW, true, &was) && !was && (*e & PTE_RW), "RW set again");
		unsigned split = used;
		CHECK(pg_leaf_flag(&lb, 0x80000000, PTE_NX, true, NULL) && used == split + 2 &&
			      pg_translate(&lb, 0x80000000, &pa, &fl, &leaf) && (fl & PTE_NX) && leaf == PAGE_SIZE &&
			      pg_translate(&lb, 0x80001000, &pa, &fl, &leaf) && !(fl & PTE_NX),
		      "in another 1 GiB page: split, that page alone");
		CHECK(!pg_leaf_flag(&lb, 0x40123000, PTE_PS, true, NULL) &&
			      !pg_leaf_flag(&lb, 0x40123000, 0x1000, true, NULL) && !pg_leaf_flag(&lb, 8ull << 30, PTE_NX, true, NULL),
		      "PS, an address bit, an address not mapped: refused");
	}

	/* hidden list must be sorted and aligned */
	struct pg_builder b;
	struct hv_memrange bad[2] = { { 0x200000, 0x1000 }, { 0x100000, 0x1000 } };
	used = 0;
	pg_init(&b, &fake, PAGE_1G, F);
	CHECK(!pg_identity_map(&b, 1ull << 32, bad, 2, 0, F), "unsorted hidden ranges refused");
	struct hv_memrange odd = { 0x1800, 0x1000 };
	used = 0;
	pg_init(&b, &fake, PAGE_1G, F);
	CHECK(!pg_identity_map(&b, 1ull << 32, &odd, 1, 0, F), "unaligned hidden range refused");

	/* pg_map: high-half mapping as the loader builds it, and its refusals */
	used = 0;
	pg_init(&b, &fake, PAGE_1G, PTE_P | PTE_RW);
	CHECK(pg_map(&b, 0xffffffff80000000ull, 0x1c2bf000, 32 << 20, PTE_P | PTE_RW), "high map");
	{
		u64 pa, fl, leaf;
		CHECK(pg_translate(&b, 0xffffffff80000000ull + 0x1234, &pa, &fl, &leaf) &&
		      pa == 0x1c2bf000 + 0x1234 && leaf == 4096, "high translate %llx",
		      (unsigned long long)pa);
	}
	CHECK(!pg_map(&b, 0xffffffff80000000ull, 0x1000, 0x1000, PTE_P), "double map refused");
	CHECK(!pg_map(&b, 0x1000, 0x1800, 0x1000, PTE_P), "unaligned pa refused");
	CHECK(!pg_map(&b, 0xfffffffffffff000ull, 0, 0x2000, PTE_P), "wrapping range refused");
	used = FAKE_PAGES;
	CHECK(!pg_map(&b, 0x40000000000ull, 0, 0x1000, PTE_P), "allocation failure reported");
	CHECK(!pg_init(&b, &fake, 12345, F), "bad leaf size refused");

	/* pg_set_page_flags: the local APIC's page read-only in a map of
	 * 1 GiB (then 2 MiB) leaves; its neighbours keep their flags */
	for (int round = 0; round < 2; round++) {
		u64 apic = 0xfee00000, pa, fl, leaf;
		used = 0;
		memset(&h, 0, sizeof(h));
		CHECK(pg_init(&b, &fake, round ? PAGE_2M : PAGE_1G, F) &&
		      pg_identity_map(&b, 1ull << 33, h.r, h.nr, 0, F), "map for set_page_flags");
		CHECK(pg_set_page_flags(&b, apic, 0, PTE_RW), "apic page read-only");
		CHECK(pg_translate(&b, apic + 0x300, &pa, &fl, &leaf) && pa == apic + 0x300 &&
		      leaf == 4096 && !(fl & PTE_RW) && (fl & PTE_P) && (fl & PTE_US) && !(fl & PTE_PS),
		      "apic page: pa %llx flags %llx leaf %llx", (unsigned long long)pa,
		      (unsigned long long)fl, (unsigned long long)leaf);
		CHECK(pg_translate(&b, apic - 1, &pa, &fl, &leaf) && pa == apic - 1 && (fl & F) == F &&
		      leaf == PAGE_2M, "the 2 MiB below keeps RW");
		CHECK(pg_translate(&b, apic + 0x1000, &pa, &fl, &leaf) && pa == apic + 0x1000 &&
		      (fl & F) == F && leaf == 4096, "the page above, split too, keeps RW");
		CHECK(pg_translate(&b, 0xc0000000, &pa, &fl, &leaf) && pa == 0xc0000000 && (fl & F) == F &&
		      leaf == PAGE_2M && (fl & PTE_PS), "the rest of the GiB in 2 MiB leaves");
		CHECK(pg_translate(&b, 0x40000000, &pa, &fl, &leaf) && leaf == (round ? PAGE_2M : PAGE_1G),
		      "other GiBs untouched");
		CHECK(pg_set_page_flags(&b, apic, PTE_RW, 0) && pg_translate(&b, apic, &pa, &fl, &leaf) &&
		      (fl & PTE_RW), "and back");
	}
	CHECK(!pg_set_page_flags(&b, 0xfee00800, 0, PTE_RW), "unaligned refused");
	CHECK(!pg_set_page_flags(&b, 1ull << 40, 0, PTE_RW), "unmapped refused");
	CHECK(!pg_set_page_flags(&b, 0, 0, PTE_ADDR_MASK), "address bits refused");
	free(pages);
	return unit_done("test_pgbuild");
}
