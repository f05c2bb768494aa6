/* Guest-physical memory ranges: which addresses are guest RAM (from the
 * firmware's memory map) and which the hypervisor hides. Pure logic,
 * host-tested. */
#ifndef HV_BASE_MEMMAP_H
#define HV_BASE_MEMMAP_H

#include "arch/x86/types.h"

#define HV_MAX_RANGES 200

struct hv_memrange {
	u64 base;
	u64 size;
};

struct hv_memmap {
	u32 nr;
	struct hv_memrange r[HV_MAX_RANGES];
};

/* Adds [base, base+size) to a sorted, merged list. Returns false when the
 * list is full or the range wraps. */
bool memmap_add(struct hv_memmap *m, u64 base, u64 size);

/* Removes [base, base+size) (splitting ranges as needed). */
bool memmap_remove(struct hv_memmap *m, u64 base, u64 size);

/* True when [gpa, gpa+len) lies wholly inside the map (len > 0, no wrap). */
bool memmap_contains(const struct hv_memmap *m, u64 gpa, u64 len);

/* The range holding gpa, or NULL */
const struct hv_memrange *memmap_range(const struct hv_memmap *m, u64 gpa);

/* True when [a, a+alen) and [b, b+blen) overlap. */
static inline bool range_overlaps(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

#endif
