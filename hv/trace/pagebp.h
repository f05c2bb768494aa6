/* The debugger's page breakpoints and watchpoints (trace/dbg.c;
 * docs/channel.md "The debugger", SET_HW slots 4-31): instruction
 * breakpoints beyond the four debug registers, kept by removing execute
 * permission from the page in the nested page tables, and write
 * watchpoints, by removing write permission. This is the bookkeeping
 * alone, pure and host-tested: which slot holds which (linear address,
 * guest-physical address) pair, or which range a watchpoint watches,
 * which pages carry them, and how many vCPUs have a page open for one
 * instruction (the step past it). Root mode, under the debugger's lock. */
#ifndef HV_TRACE_PAGEBP_H
#define HV_TRACE_PAGEBP_H
#include "arch/x86/types.h"
#include "hvtrace/record.h"

#define PAGEBP_SLOTS ((int)(HVTRACE_DBG_SLOTS_MAX - HVTRACE_DBG_SLOTS))

struct pagebp_page {
	bool used;
	bool nx;		/* execute removed in the nested tables now */
	bool orig_known;	/* orig_exec is the tables' (set when nx first is) */
	bool orig_exec;		/* its permission before the first breakpoint (restored) */
	bool ro;		/* write removed in the nested tables now */
	bool worig_known;	/* orig_write is the tables' (set when ro first is) */
	bool orig_write;	/* its write permission before the first watchpoint (restored) */
	u32 bps;		/* breakpoint slots on it */
	u32 wps;		/* watchpoint slots on it */
	u32 open;		/* vCPUs stepping an instruction on it */
	u64 gpa;		/* page-aligned */
};

struct pagebp {
	/* a breakpoint at linear addr (len 0), or a write watchpoint of len
	 * bytes there; gpa: where addr mapped to when set (the range within
	 * its page) */
	struct { bool on; u32 len; u64 addr, gpa; } slot[PAGEBP_SLOTS];
	struct pagebp_page page[PAGEBP_SLOTS];
};

/* The entry of the page holding gpa; -1: none. */
int pagebp_find(const struct pagebp *p, u64 gpa);
/* Page slot s (0-based) at linear `addr`, which maps to `gpa`: the page
 * entry it counts on (made when new: used, not nx, orig_exec to be filled
 * by the caller when it first removes execute), or -1 when s is out of
 * range or already set. */
int pagebp_set(struct pagebp *p, u32 s, u64 addr, u64 gpa);
/* The same for a write watchpoint of len bytes (1-4096, not past gpa's
 * page: else -1) at linear `addr`, which maps to `gpa` */
int pagebp_set_watch(struct pagebp *p, u32 s, u64 addr, u64 gpa, u32 len);
/* Slot s cleared: its page entry (bps down), -1 when it was not set. */
int pagebp_clear(struct pagebp *p, u32 s);
/* The page slots (bit s) whose breakpoint is at linear `lin` on gpa's page. */
u32 pagebp_hits(const struct pagebp *p, u64 lin, u64 gpa);
/* The page slots (bit s) whose watchpoint lies on gpa's page. */
u32 pagebp_watches(const struct pagebp *p, u64 gpa);
/* Execute must be removed from the page now: breakpoints on it and no
 * vCPU stepping there. */
static inline bool pagebp_want_nx(const struct pagebp_page *pg)
{
	return pg->used && pg->bps && !pg->open;
}
/* Write must be removed from the page now: watchpoints on it and no vCPU
 * stepping there. */
static inline bool pagebp_want_ro(const struct pagebp_page *pg)
{
	return pg->used && pg->wps && !pg->open;
}
/* One of the debugger's watchpoints as engine = interp checks its own accesses against it
 * (trace/dbg.c builds the list, trace/interp_engine.c asks): a debug register's (`slot` 0-3,
 * `len` 1, 2, 4 or 8 bytes at `addr`, a linear address aligned to it, SDM Vol. 3 18.2.5;
 * `reads`: RW 11, reads too), or a page slot's (`slot` 4-31: `len` bytes at guest-physical
 * `gpa`, writes that change them only, as dbg_npf decides) */
struct pagebp_watch {
	u8 slot;
	bool reads;
	u32 len;
	u64 addr, gpa;
};
/* The watchpoints among w[0..n) that an access of len bytes hits (bit per slot, as in
 * hvtrace_dbg_vcpu.hits): at linear `lin`, which is guest-physical `gpa` (the access within
 * one page); a read (`old` NULL) or a write of `new` over `old` (len bytes each). A debug
 * register's fires on any access it watches that overlaps its bytes, a page slot's on a write
 * that changes one of its bytes. */
u32 pagebp_watch_hits(const struct pagebp_watch *w, u32 n, u64 lin, u64 gpa, u32 len, const u8 *old,
		      const u8 *new);
/* Whether a write of len bytes at linear `lin`, guest-physical `gpa` (within one page), may
 * hit one of them (its bytes overlap one's) */
bool pagebp_watch_near(const struct pagebp_watch *w, u32 n, u64 lin, u64 gpa, u64 len);
/* The entry is done with (no breakpoint or watchpoint, nobody stepping,
 * execute and write as they were): freed. */
void pagebp_release(struct pagebp *p, int i);
#endif
