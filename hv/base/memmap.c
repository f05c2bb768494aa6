/* Sorted, merged lists of guest-physical ranges (see memmap.h). */
#include "base/memmap.h"

static void memmap_delete(struct hv_memmap *m, u32 i)
{
	for (; i + 1 < m->nr; i++)
		m->r[i] = m->r[i + 1];
	m->nr--;
}

static bool memmap_insert(struct hv_memmap *m, u32 i, u64 base, u64 size)
{
	if (m->nr >= HV_MAX_RANGES)
		return false;
	for (u32 j = m->nr; j > i; j--)
		m->r[j] = m->r[j - 1];
	m->r[i].base = base;
	m->r[i].size = size;
	m->nr++;
	return true;
}

bool memmap_add(struct hv_memmap *m, u64 base, u64 size)
{
	if (!size)
		return true;
	if (base + size < base)
		return false;
	u64 end = base + size;
	u32 i = 0;
	while (i < m->nr && m->r[i].base + m->r[i].size < base)
		i++;
	/* r[i] is the first range that ends at or after base: merge all
	 * ranges that touch or overlap [base, end). */
	while (i < m->nr && m->r[i].base <= end) {
		u64 rend = m->r[i].base + m->r[i].size;
		base = MIN(base, m->r[i].base);
		end = MAX(end, rend);
		memmap_delete(m, i);
	}
	return memmap_insert(m, i, base, end - base);
}

bool memmap_remove(struct hv_memmap *m, u64 base, u64 size)
{
	if (!size)
		return true;
	if (base + size < base)
		return false;
	u64 end = base + size;
	for (u32 i = 0; i < m->nr;) {
		u64 rb = m->r[i].base, re = rb + m->r[i].size;
		if (re <= base || rb >= end) {
			i++;
			continue;
		}
		if (rb < base && re > end) {
			m->r[i].size = base - rb;
			return memmap_insert(m, i + 1, end, re - end);
		}
		if (rb < base) {
			m->r[i].size = base - rb;
			i++;
		} else if (re > end) {
			m->r[i].base = end;
			m->r[i].size = re - end;
			i++;
		} else {
			memmap_delete(m, i);
		}
	}
	return true;
}

const struct hv_memrange *memmap_range(const struct hv_memmap *m, u64 gpa)
{
	/* the ranges are sorted and disjoint: the last one starting at or
	 * below gpa is the only candidate (a binary search: this runs for
	 * every level of every guest page walk) */
	u32 lo = 0, hi = m->nr;
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		if (m->r[mid].base <= gpa)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || gpa - m->r[lo - 1].base >= m->r[lo - 1].size)
		return NULL;
	return &m->r[lo - 1];
}

bool memmap_contains(const struct hv_memmap *m, u64 gpa, u64 len)
{
	if (!len || gpa + len < gpa)
		return false;
	const struct hv_memrange *r = memmap_range(m, gpa);
	return r && len <= r->size - (gpa - r->base);
}
