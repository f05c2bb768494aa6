/* The debugger's page breakpoints' and watchpoints' bookkeeping
 * (pagebp.h): pure logic, host-tested (tests/unit/test_pagebp.c). */
#include "arch/x86/paging.h"
#include "trace/pagebp.h"

#define PAGE_OF(a) ((a) & ~(u64)(PAGE_SIZE - 1))

int pagebp_find(const struct pagebp *p, u64 gpa)
{
	for (int i = 0; i < PAGEBP_SLOTS; i++)
		if (p->page[i].used && p->page[i].gpa == PAGE_OF(gpa))
			return i;
	return -1;
}

/* Slot s at (addr, gpa): len 0 a breakpoint, else a watchpoint of len bytes */
static int slot_set(struct pagebp *p, u32 s, u64 addr, u64 gpa, u32 len)
{
	if (s >= (u32)PAGEBP_SLOTS || p->slot[s].on)
		return -1;
	int i = pagebp_find(p, gpa);
	if (i < 0) {
		/* as many entries as slots: one is free */
		for (i = 0; i < PAGEBP_SLOTS && p->page[i].used; i++)
			;
		if (i == PAGEBP_SLOTS)
			return -1;
		p->page[i] = (struct pagebp_page){ .used = true, .orig_exec = true, .orig_write = true,
						   .gpa = PAGE_OF(gpa) };
	}
	if (len)
		p->page[i].wps++;
	else
		p->page[i].bps++;
	p->slot[s].on = true;
	p->slot[s].len = len;
	p->slot[s].addr = addr;
	p->slot[s].gpa = gpa;
	return i;
}

int pagebp_set(struct pagebp *p, u32 s, u64 addr, u64 gpa)
{
	return slot_set(p, s, addr, gpa, 0);
}

int pagebp_set_watch(struct pagebp *p, u32 s, u64 addr, u64 gpa, u32 len)
{
	if (!len || len > PAGE_SIZE || (gpa & (PAGE_SIZE - 1)) + len > PAGE_SIZE)
		return -1;
	return slot_set(p, s, addr, gpa, len);
}

int pagebp_clear(struct pagebp *p, u32 s)
{
	if (s >= (u32)PAGEBP_SLOTS || !p->slot[s].on)
		return -1;
	int i = pagebp_find(p, p->slot[s].gpa);
	u32 *n = i < 0 ? NULL : p->slot[s].len ? &p->page[i].wps : &p->page[i].bps;
	p->slot[s].on = false;
	if (n && *n)
		(*n)--;
	return i;
}

u32 pagebp_hits(const struct pagebp *p, u64 lin, u64 gpa)
{
	u32 hits = 0;
	for (u32 s = 0; s < (u32)PAGEBP_SLOTS; s++)
		if (p->slot[s].on && !p->slot[s].len && p->slot[s].addr == lin && PAGE_OF(p->slot[s].gpa) == PAGE_OF(gpa))
			hits |= 1u << s;
	return hits;
}

u32 pagebp_watches(const struct pagebp *p, u64 gpa)
{
	u32 w = 0;
	for (u32 s = 0; s < (u32)PAGEBP_SLOTS; s++)
		if (p->slot[s].on && p->slot[s].len && PAGE_OF(p->slot[s].gpa) == PAGE_OF(gpa))
			w |= 1u << s;
	return w;
}

void pagebp_release(struct pagebp *p, int i)
{
	struct pagebp_page *pg = &p->page[i];
	if (pg->used && !pg->bps && !pg->wps && !pg->open && !pg->nx && !pg->ro)
		pg->used = false;
}

/* Whether [a, a + alen) and [b, b + blen) share a byte (no wrap: lengths up to a page) */
static bool overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

u32 pagebp_watch_hits(const struct pagebp_watch *w, u32 n, u64 lin, u64 gpa, u32 len, const u8 *old,
		      const u8 *new)
{
	u32 hits = 0;
	for (u32 i = 0; i < n; i++) {
		if (w[i].slot < HVTRACE_DBG_SLOTS) {
			if ((old || w[i].reads) && overlap(lin, len, w[i].addr, w[i].len))
				hits |= 1u << w[i].slot;
			continue;
		}
		if (!old || !overlap(gpa, len, w[i].gpa, w[i].len))
			continue;
		/* the watched bytes within the access, compared */
		u64 from = MAX(gpa, w[i].gpa), to = MIN(gpa + len, w[i].gpa + w[i].len);
		for (u64 a = from; a < to; a++)
			if (old[a - gpa] != new[a - gpa]) {
				hits |= 1u << w[i].slot;
				break;
			}
	}
	return hits;
}

bool pagebp_watch_near(const struct pagebp_watch *w, u32 n, u64 lin, u64 gpa, u64 len)
{
	for (u32 i = 0; i < n; i++)
		if (w[i].slot < HVTRACE_DBG_SLOTS ? overlap(lin, len, w[i].addr, w[i].len)
						  : overlap(gpa, len, w[i].gpa, w[i].len))
			return true;
	return false;
}
