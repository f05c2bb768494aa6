/* 4-level page table builder (see pgbuild.h). Intel SDM Vol. 3 4.5 /
 * AMD APM Vol. 2 5.3: a PDPTE with PS maps 1 GiB, a PDE with PS 2 MiB. */
#include "base/pgbuild.h"
#include "base/memmap.h"
#include "arch/x86/paging.h"

#define LEVELS 4

static unsigned level_shift(int level) /* level 3 = PML4 ... 0 = PT */
{
	return PAGE_SHIFT + 9 * level;
}

static u64 *table(const struct pg_builder *b, u64 pa)
{
	return b->a.phys_to_ptr(b->a.ctx, pa);
}

bool pg_init(struct pg_builder *b, const struct pg_alloc *a, u64 max_leaf, u64 table_flags)
{
	if (max_leaf != PAGE_1G && max_leaf != PAGE_2M && max_leaf != PAGE_SIZE)
		return false;
	b->a = *a;
	b->max_leaf = max_leaf;
	b->table_flags = table_flags;
	b->tables = 0;
	if (!b->a.alloc(b->a.ctx, &b->root_pa))
		return false;
	b->tables = 1;
	return true;
}

/* Returns the entry for `va` at `level`, creating tables above it. */
static u64 *pg_entry(struct pg_builder *b, u64 va, int level)
{
	u64 *t = table(b, b->root_pa);
	for (int l = LEVELS - 1; l > level; l--) {
		u64 *e = &t[(va >> level_shift(l)) & 511];
		if (!(*e & PTE_P)) {
			u64 pa;
			if (!b->a.alloc(b->a.ctx, &pa))
				return NULL;
			b->tables++;
			*e = pa | b->table_flags;
		} else if (*e & PTE_PS) {
			return NULL; /* already mapped by a large page */
		}
		t = table(b, *e & PTE_ADDR_MASK);
	}
	return &t[(va >> level_shift(level)) & 511];
}

static bool pg_map_one(struct pg_builder *b, u64 va, u64 pa, u64 size, u64 flags, bool alias)
{
	if (!IS_ALIGNED(va | pa | size, PAGE_SIZE) || va + size < va)
		return false;
	while (size) {
		int level = 0;
		for (int l = 2; l >= 1; l--) {
			u64 ps = 1ull << level_shift(l);
			if (!alias && ps <= b->max_leaf && IS_ALIGNED(va | pa, ps) && size >= ps) {
				level = l;
				break;
			}
		}
		u64 ps = 1ull << level_shift(level);
		u64 *e = pg_entry(b, va, level);
		if (!e || (*e & PTE_P))
			return false;
		*e = pa | flags | (level ? PTE_PS : 0);
		va += ps;
		if (!alias)
			pa += ps;
		size -= ps;
	}
	return true;
}

bool pg_map(struct pg_builder *b, u64 va, u64 pa, u64 size, u64 flags)
{
	return pg_map_one(b, va, pa, size, flags, false);
}

bool pg_map_alias(struct pg_builder *b, u64 va, u64 pa, u64 size, u64 flags)
{
	return pg_map_one(b, va, pa, size, flags, true);
}

u64 *pg_leaf(struct pg_builder *b, u64 va)
{
	if (!IS_ALIGNED(va, PAGE_SIZE))
		return NULL;
	u64 *t = table(b, b->root_pa);
	for (int l = LEVELS - 1; l >= 0; l--) {
		u64 *e = &t[(va >> level_shift(l)) & 511];
		if (!(*e & PTE_P))
			return NULL;
		if (l == 0)
			return e;
		if (*e & PTE_PS) {
			/* split: 512 entries of the next size with the same flags;
			 * the table is whole before the entry points at it, so a
			 * walker sees the old mapping or the new, the same */
			u64 ps = 1ull << level_shift(l - 1), base = *e & PTE_ADDR_MASK & ~((ps << 9) - 1);
			u64 leaf = (*e & ~PTE_ADDR_MASK) & ~(l - 1 ? 0 : PTE_PS), pa;
			u64 *n = b->a.alloc(b->a.ctx, &pa);
			if (!n)
				return NULL;
			b->tables++;
			for (u64 i = 0; i < 512; i++)
				n[i] = (base + i * ps) | leaf;
			__atomic_store_n(e, pa | b->table_flags, __ATOMIC_RELEASE);
		}
		t = table(b, *e & PTE_ADDR_MASK);
	}
	return NULL;
}

bool pg_leaf_flag(struct pg_builder *b, u64 va, u64 bit, bool on, bool *was_on)
{
	u64 *e = pg_leaf(b, va);
	if (!e || (bit & (PTE_ADDR_MASK | PTE_PS)))
		return false;
	u64 old = on ? __atomic_fetch_or(e, bit, __ATOMIC_SEQ_CST) : __atomic_fetch_and(e, ~bit, __ATOMIC_SEQ_CST);
	if (was_on)
		*was_on = (old & bit) != 0;
	return true;
}

bool pg_set_page_flags(struct pg_builder *b, u64 va, u64 set, u64 clear)
{
	if ((set | clear) & (PTE_ADDR_MASK | PTE_PS))
		return false;
	u64 *e = pg_leaf(b, va);
	if (!e)
		return false;
	*e = (*e | set) & ~clear;
	return true;
}

bool pg_translate(const struct pg_builder *b, u64 va, u64 *pa, u64 *flags, u64 *leaf_size)
{
	const u64 *t = table(b, b->root_pa);
	for (int l = LEVELS - 1; l >= 0; l--) {
		u64 e = t[(va >> level_shift(l)) & 511];
		if (!(e & PTE_P))
			return false;
		if (l == 0 || (e & PTE_PS)) {
			u64 ps = 1ull << level_shift(l);
			*pa = (e & PTE_ADDR_MASK & ~(ps - 1)) | (va & (ps - 1));
			*flags = e & ~PTE_ADDR_MASK;
			*leaf_size = ps;
			return true;
		}
		t = table(b, e & PTE_ADDR_MASK);
	}
	return false;
}

bool pg_identity_map_typed(struct pg_builder *b, u64 limit, const struct hv_memrange *ram,
			   u32 nr_ram, const struct hv_memrange *hidden, u32 nr_hidden, u64 sink_pa,
			   u64 ram_flags, u64 other_flags)
{
	u64 at = 0, prev_end = 0;
	u32 ri = 0, hi = 0;

	for (u32 i = 0; i < nr_ram; i++) {
		if (ram[i].base < prev_end || !IS_ALIGNED(ram[i].base | ram[i].size, PAGE_SIZE))
			return false;
		prev_end = ram[i].base + ram[i].size;
	}
	while (at < limit) {
		if (hi < nr_hidden) {
			u64 hb = hidden[hi].base;
			if (hb < at || !IS_ALIGNED(hb | hidden[hi].size, PAGE_SIZE))
				return false;
			if (hb == at) {
				/* hidden pages win over whatever the RAM map says */
				u64 he = MIN(hb + hidden[hi].size, limit);
				if (!pg_map_alias(b, hb, sink_pa, he - hb, ram_flags))
					return false;
				at = he;
				hi++;
				continue;
			}
		}
		while (ri < nr_ram && ram[ri].base + ram[ri].size <= at)
			ri++;
		u64 end = hi < nr_hidden ? MIN(hidden[hi].base, limit) : limit, flags;
		if (ri < nr_ram && ram[ri].base <= at) {
			end = MIN(end, ram[ri].base + ram[ri].size);
			flags = ram_flags;
		} else {
			if (ri < nr_ram)
				end = MIN(end, ram[ri].base);
			flags = other_flags;
		}
		if (!pg_map(b, at, at, end - at, flags))
			return false;
		at = end;
	}
	return true;
}

bool pg_identity_map(struct pg_builder *b, u64 limit, const struct hv_memrange *hidden,
		     u32 nr_hidden, u64 sink_pa, u64 flags)
{
	return pg_identity_map_typed(b, limit, NULL, 0, hidden, nr_hidden, sink_pa, flags, flags);
}
