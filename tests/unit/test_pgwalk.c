/* The interpreting engine's page walk (hv/arch/x86/pgwalk.c) on fake guest memory: every check
 * the processor makes (present, reserved bits, R/W with CR0.WP, U/S, NX, SMEP, SMAP with AC,
 * accessed/dirty bits it would set, canonical, 4- and 5-level, 2 MiB and 1 GiB pages, tables
 * outside guest RAM, protection keys left) and that it never writes. */
#include <string.h>
#include "unit.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/pgwalk.h"

#define NPAGES	64
#define RAM_PAGES 48	/* guest-physical pages 0..47 are RAM; above is "MMIO" */
static u64 mem[NPAGES][512];
static unsigned next_page;

static const u64 *ent(void *ctx, u64 pa)
{
	(void)ctx;
	if (pa >= RAM_PAGES * 4096ull || (pa & 7))
		return NULL;
	return &mem[pa / 4096][(pa % 4096) / 8];
}

static u64 new_table(void)
{
	u64 pa = (u64)next_page++ * 4096;
	memset(mem[pa / 4096], 0, 4096);
	return pa;
}

#define T_FLAGS (PTE_P | PTE_RW | PTE_US | PTE_A)
/* maps 4 KiB page `lin` -> `gpa` with leaf flags `leaf`, tables with T_FLAGS; returns the
 * entries' addresses, root first, in e[] */
static u64 *slot(u64 table, u64 lin, int l)
{
	return &mem[table / 4096][(lin >> (12 + 9 * l)) & 511];
}

static void map4k(u64 cr3, int levels, u64 lin, u64 gpa, u64 leaf, u64 **e)
{
	u64 table = cr3;
	for (int l = levels - 1; l > 0; l--) {
		u64 *s = slot(table, lin, l);
		if (!(*s & PTE_P))
			*s = new_table() | T_FLAGS;
		e[levels - 1 - l] = s;
		table = *s & PTE_ADDR_MASK;
	}
	u64 *s = slot(table, lin, 0);
	*s = gpa | leaf;
	e[levels - 1] = s;
}

static struct pgwalk_ctl ctl0(u64 cr3)
{
	return (struct pgwalk_ctl){ .cr0 = CR0_PE | CR0_PG | CR0_WP, .cr3 = cr3, .cr4 = CR4_PAE,
				    .efer = EFER_LME | EFER_LMA | EFER_NXE, .phys_limit = 1ull << 40,
				    .pg1g = true, .cpl = 0, .ac = false };
}

static int walk(const struct pgwalk_ctl *c, u64 lin, enum pgwalk_access a, u64 *gpa)
{
	u64 page, g = 0;
	int r = pgwalk(c, ent, NULL, lin, a, &g, &page);
	if (gpa)
		*gpa = g;
	return r;
}

int main(void)
{
	static u64 before[NPAGES][512];
	u64 *e[5], gpa;
	next_page = 0;
	u64 cr3 = new_table();
	const u64 lin = 0x00007f1234567abcull, data = 0x20000;
	const u64 leaf = PTE_P | PTE_RW | PTE_US | PTE_A | PTE_D;
	map4k(cr3, 4, lin, data, leaf, e);
	struct pgwalk_ctl c = ctl0(cr3);

	memcpy(before, mem, sizeof(mem));
	CHECK(walk(&c, lin, PGWALK_READ, &gpa) == PGWALK_OK && gpa == (data | 0xabc), "4 KiB read: %#llx",
	      (unsigned long long)gpa);
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "4 KiB write");
	CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_OK, "4 KiB fetch");
	CHECK(!memcmp(before, mem, sizeof(mem)), "the walk writes nothing");

	/* present, at each level */
	for (int l = 0; l < 4; l++) {
		u64 was = *e[l];
		*e[l] &= ~PTE_P;
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_NOT_PRESENT, "not present at depth %d", l);
		*e[l] = was;
	}
	/* accessed: any level; dirty: the leaf, writes only */
	for (int l = 0; l < 4; l++) {
		u64 was = *e[l];
		*e[l] &= ~PTE_A;
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_AD, "A clear at depth %d", l);
		*e[l] = was;
	}
	*e[3] &= ~PTE_D;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "read with D clear");
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_AD, "write with D clear");
	*e[2] &= ~PTE_D;	/* D in a non-leaf is ignored */
	*e[3] |= PTE_D;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "D of a table ignored");

	/* reserved bits */
	u64 was = *e[3];
	*e[3] |= 1ull << 45;	/* above MAXPHYADDR 40 */
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RESERVED, "address bit above MAXPHYADDR");
	*e[3] = was;
	was = *e[0];
	*e[0] |= PTE_PS;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RESERVED, "PS in a PML4E");
	*e[0] = was | PTE_G;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RESERVED, "G in a PML4E (AMD: MBZ) left");
	*e[0] = was;
	*e[3] |= PTE_NX;
	c.efer &= ~EFER_NXE;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RESERVED, "XD without EFER.NXE");
	c.efer |= EFER_NXE;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "XD read");
	CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_RIGHTS, "XD fetch");
	*e[3] &= ~PTE_NX;
	*e[1] |= PTE_NX;	/* XD at any level */
	CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_RIGHTS, "XD in a PDPTE");
	*e[1] &= ~PTE_NX;

	/* U/S and R/W */
	c.cpl = 3;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "user write to a user page");
	*e[1] &= ~PTE_US;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RIGHTS, "user read, U/S clear in a PDPTE");
	*e[1] |= PTE_US;
	*e[2] &= ~PTE_RW;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "user read, R/W clear in a PDE");
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "user write, R/W clear in a PDE");
	c.cr0 &= ~CR0_WP;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "user write read-only, WP clear");
	c.cpl = 0;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "supervisor write read-only, WP clear");
	c.cr0 |= CR0_WP;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "supervisor write read-only, WP set");
	*e[2] |= PTE_RW;

	/* SMEP, SMAP and AC on a user page */
	c.cr4 |= CR4_SMEP;
	CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_RIGHTS, "SMEP: supervisor fetch from a user page");
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "SMEP: data read allowed");
	c.cr4 = (c.cr4 & ~CR4_SMEP) | CR4_SMAP;
	CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_OK, "SMAP: fetch allowed");
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RIGHTS, "SMAP, AC clear: read");
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "SMAP, AC clear: write");
	c.ac = true;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "SMAP, AC set: write");
	c.cpl = 3;
	c.ac = false;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "SMAP does not apply at CPL 3");
	c.cpl = 0;
	c.cr4 &= ~CR4_SMAP;

	/* protection keys: with CR4.PKE data accesses to user pages are PKRU's, at any CPL;
	 * fetches and supervisor pages are not checked. CR4.PKS and CET: left whole */
	c.cr4 |= CR4_PKE;
	for (c.cpl = 0; c.cpl <= 3; c.cpl += 3) {
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_PKEY, "CR4.PKE: read of a user page, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_PKEY, "CR4.PKE: write of a user page, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_OK, "CR4.PKE: fetch from a user page, CPL %u", c.cpl);
	}
	/* with PKRU known: the leaf's key (bits 62:59) selects AD and WD */
	c.pkru_known = true;
	*e[3] |= 5ull << PTE_PKEY_SHIFT;	/* key 5: PKRU bits 10 (AD) and 11 (WD) */
	for (c.cpl = 0; c.cpl <= 3; c.cpl += 3) {
		c.pkru = 0xfffff3ffu;	/* every other key AD and WD, key 5 free */
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "PKRU: key 5 free, read, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "PKRU: key 5 free, write, CPL %u", c.cpl);
		c.pkru = 1u << 10;	/* key 5 AD */
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_RIGHTS, "PKRU: AD, read, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "PKRU: AD, write, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_FETCH, NULL) == PGWALK_OK, "PKRU: AD, fetch, CPL %u", c.cpl);
		c.pkru = 1u << 11;	/* key 5 WD */
		CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "PKRU: WD, read, CPL %u", c.cpl);
		CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_RIGHTS, "PKRU: WD, write, CPL %u, WP", c.cpl);
		c.cr0 &= ~CR0_WP;
		CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == (c.cpl == 3 ? PGWALK_RIGHTS : PGWALK_OK),
		      "PKRU: WD, write, CPL %u, WP clear: only user accesses refused", c.cpl);
		c.cr0 |= CR0_WP;
	}
	c.pkru = 3u << 10;	/* key 5 AD and WD: a supervisor page is not checked */
	c.cpl = 0;
	*e[3] &= ~PTE_US;
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "PKRU: a supervisor page's key is not checked");
	*e[3] &= ~(15ull << PTE_PKEY_SHIFT);
	c.pkru_known = false;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_OK, "CR4.PKE: read of a supervisor page");
	CHECK(walk(&c, lin, PGWALK_WRITE, NULL) == PGWALK_OK, "CR4.PKE: write of a supervisor page");
	*e[3] |= PTE_US;
	c.cr4 = (c.cr4 & ~CR4_PKE) | CR4_PKS;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_MODE, "CR4.PKS");
	c.cr4 &= ~CR4_PKS;
	CHECK(walk(&c, 0x0000800000000000ull, PGWALK_READ, NULL) == PGWALK_CANONICAL, "non-canonical");
	c.efer &= ~EFER_LMA;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_MODE, "not IA-32e paging");
	c.efer |= EFER_LMA;

	/* a table outside guest RAM */
	was = *e[2];
	*e[2] = (was & ~PTE_ADDR_MASK) | (RAM_PAGES + 2) * 4096ull;
	CHECK(walk(&c, lin, PGWALK_READ, NULL) == PGWALK_NOT_RAM, "page table in MMIO");
	*e[2] = was;

	/* 2 MiB and 1 GiB pages */
	const u64 big = 0x0000004040201000ull;	/* PML4E 0, PDPTE 257: apart from `lin`'s */
	u64 *pml4 = slot(cr3, big, 3);
	*pml4 = new_table() | T_FLAGS;
	u64 *pdpte = slot(*pml4 & PTE_ADDR_MASK, big, 2);
	*pdpte = 0x40000000ull | PTE_PS | leaf;
	CHECK(walk(&c, big, PGWALK_READ, &gpa) == PGWALK_OK && gpa == (0x40000000ull | (big & 0x3fffffff)),
	      "1 GiB page: %#llx", (unsigned long long)gpa);
	c.pg1g = false;
	CHECK(walk(&c, big, PGWALK_READ, NULL) == PGWALK_RESERVED, "1 GiB page without the feature");
	c.pg1g = true;
	*pdpte |= 1ull << 20;
	CHECK(walk(&c, big, PGWALK_READ, NULL) == PGWALK_RESERVED, "1 GiB page, bit 20 set");
	*pdpte = new_table() | T_FLAGS;
	u64 *pde = slot(*pdpte & PTE_ADDR_MASK, big, 1);
	*pde = 0x200000ull | PTE_PS | leaf | (1ull << 12);	/* PAT: not reserved */
	CHECK(walk(&c, big, PGWALK_READ, &gpa) == PGWALK_OK && gpa == (0x200000ull | (big & 0x1fffff)),
	      "2 MiB page: %#llx", (unsigned long long)gpa);
	*pde |= 1ull << 13;
	CHECK(walk(&c, big, PGWALK_READ, NULL) == PGWALK_RESERVED, "2 MiB page, bit 13 set");

	/* 5-level paging: one more level, 57-bit canonical */
	u64 cr3b = new_table();
	const u64 lin5 = 0x00ff801234567000ull;
	map4k(cr3b, 5, lin5, data, leaf, e);
	struct pgwalk_ctl c5 = ctl0(cr3b);
	c5.cr4 |= CR4_LA57;
	CHECK(walk(&c5, lin5, PGWALK_READ, &gpa) == PGWALK_OK && gpa == data, "5-level walk");
	*e[0] &= ~PTE_A;
	CHECK(walk(&c5, lin5, PGWALK_READ, NULL) == PGWALK_AD, "5-level: A clear in the PML5E");
	CHECK(walk(&c5, 0x0100000000000000ull, PGWALK_READ, NULL) == PGWALK_CANONICAL, "57-bit canonical");

	/* random entries: whatever they hold, the walk never writes and never yields an address
	 * above MAXPHYADDR */
	memcpy(before, mem, sizeof(mem));
	unsigned bad = 0;
	for (int i = 0; i < 200000; i++) {
		u64 r = unit_rand();
		u64 *victim = &mem[unit_rand() % next_page][unit_rand() % 512];
		u64 keep = *victim;
		*victim = r;
		u64 l = unit_rand() & 0x00007ffffffff000ull;
		int st = walk(&c, l, (enum pgwalk_access)(unit_rand() % 3), &gpa);
		if (st == PGWALK_OK && (gpa >> 40))
			bad++;
		*victim = keep;
	}
	CHECK(!bad, "%u random walks gave an address above MAXPHYADDR", bad);
	CHECK(!memcmp(before, mem, sizeof(mem)), "random walks write nothing");
	return unit_done("test_pgwalk");
}
