/* Builder for x86-64 4-level page tables: the hypervisor's own host page
 * tables (built by the loader), AMD nested page tables and Intel EPT (built
 * by the hypervisor; EPT entries share the layout where it matters here:
 * bit 0 present/readable, bit 7 large page, address in 51:12). Pure logic
 * over a page allocator callback; host-tested. */
#ifndef HV_BASE_PGBUILD_H
#define HV_BASE_PGBUILD_H

#include "arch/x86/types.h"

struct pg_alloc {
	/* returns a zeroed 4 KiB page: *pa gets its physical address */
	void *(*alloc)(void *ctx, u64 *pa);
	/* maps a table's physical address to a pointer the builder can use */
	void *(*phys_to_ptr)(void *ctx, u64 pa);
	void *ctx;
};

struct pg_builder {
	struct pg_alloc a;
	u64 root_pa;
	u64 max_leaf;		/* PAGE_1G, PAGE_2M or PAGE_SIZE */
	u64 table_flags;	/* flags of non-leaf entries */
	u64 tables;		/* pages used so far */
};

/* Allocates the root (PML4). */
bool pg_init(struct pg_builder *b, const struct pg_alloc *a, u64 max_leaf, u64 table_flags);

/* Maps [va, va+size) to [pa, ...) with leaf flags `flags` (PTE_PS is added
 * for large leaves), using the largest pages alignment allows. va, pa and
 * size must be 4 KiB aligned and the range must not already be mapped.
 * Returns false on allocation failure or bad arguments. */
bool pg_map(struct pg_builder *b, u64 va, u64 pa, u64 size, u64 flags);

/* Maps every 4 KiB page of [va, va+size) to the single page `pa`. */
bool pg_map_alias(struct pg_builder *b, u64 va, u64 pa, u64 size, u64 flags);

/* Sets and clears leaf flags of the 4 KiB page at va, splitting the large
 * page that maps it (its other pages keep their flags). */
bool pg_set_page_flags(struct pg_builder *b, u64 va, u64 set, u64 clear);

/* The 4 KiB leaf entry mapping va (splitting the large page that maps
 * it, as pg_set_page_flags does); NULL when va is not mapped, not
 * aligned, or a table could not be allocated. */
u64 *pg_leaf(struct pg_builder *b, u64 va);

/* The leaf flag `bit` of the 4 KiB page at va set (on) or cleared by one
 * atomic operation (the processor may set the entry's accessed and dirty
 * bits meanwhile), the large page around it split first (pg_leaf);
 * *was_on: it was set. False: as pg_leaf's NULL, or `bit` not a flag. */
bool pg_leaf_flag(struct pg_builder *b, u64 va, u64 bit, bool on, bool *was_on);

/* Walks the tables: true (with pa, flags, leaf_size) when va is mapped. */
bool pg_translate(const struct pg_builder *b, u64 va, u64 *pa, u64 *flags, u64 *leaf_size);

/* Identity-maps [0, limit) except the `nr_hidden` sorted, non-overlapping,
 * 4 KiB-aligned ranges in `hidden`, whose pages all map to `sink_pa`. */
struct hv_memrange;
bool pg_identity_map(struct pg_builder *b, u64 limit, const struct hv_memrange *hidden,
		     u32 nr_hidden, u64 sink_pa, u64 flags);

/* The same with two kinds of leaf: the pages of the `nr_ram` sorted,
 * non-overlapping, 4 KiB-aligned ranges in `ram` get `ram_flags`, all other
 * pages `other_flags` (for EPT: the memory type, write-back for RAM and
 * uncacheable elsewhere). Hidden pages win over RAM and map to `sink_pa`
 * with `ram_flags` (the sink is RAM). Large pages never straddle a change
 * of flags. */
bool pg_identity_map_typed(struct pg_builder *b, u64 limit, const struct hv_memrange *ram,
			   u32 nr_ram, const struct hv_memrange *hidden, u32 nr_hidden, u64 sink_pa,
			   u64 ram_flags, u64 other_flags);

#endif
