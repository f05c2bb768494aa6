/* hv/arch/x86/pgwalk.h — a strict, side-effect-free walk of the guest's 4- and 5-level page
 * tables for the interpreting engine: every check the processor makes on a data access or an
 * instruction fetch (SDM Vol. 3 4.5, 4.6; APM Vol. 2 5.3, 5.6), and a refusal ("leave") for
 * anything the processor would fault on or would change (accessed and dirty bits). Pure: the
 * caller maps a paging-structure entry's guest-physical address to memory it may read (guest
 * RAM only), so the host tests run it on fake pages (tests/unit/test_pgwalk.c). */
#ifndef HV_X86_PGWALK_H
#define HV_X86_PGWALK_H

#include "arch/x86/types.h"

/* What decides the walk and the access checks, read once from the vCPU. */
struct pgwalk_ctl {
	u64 cr0, cr3, cr4, efer;
	u64 phys_limit;		/* 1 << MAXPHYADDR: address bits at and above it are reserved */
	bool pg1g;		/* CPUID.80000001H:EDX[26]: 1-GByte pages exist */
	u8 cpl;
	bool ac;		/* RFLAGS.AC (SMAP, SDM Vol. 3 4.6.1) */
	bool pkru_known;	/* CR4.PKE: pkru is the guest's PKRU, else user-page data is left */
	u32 pkru;
	bool ad_set;		/* the caller sets accessed and dirty bits as the processor would
				 * (base/gmem.c's copies): a missing one is no refusal */
};

enum pgwalk_access { PGWALK_READ, PGWALK_WRITE, PGWALK_FETCH };

/* The outcome: 0 when the access may be made by the hypervisor exactly as the processor makes
 * it, else why not (the processor then makes it, faulting or setting bits). */
enum pgwalk_status {
	PGWALK_OK = 0,
	PGWALK_MODE,		/* not 4/5-level paging, or CR4.PKS or CET that add checks */
	PGWALK_CANONICAL,	/* #GP/#SS before any walk */
	PGWALK_NOT_RAM,		/* a paging-structure entry outside guest RAM */
	PGWALK_NOT_PRESENT,	/* #PF */
	PGWALK_RESERVED,	/* #PF with RSVD (or a bit the walk does not model: left too) */
	PGWALK_RIGHTS,		/* #PF: R/W, U/S, NX, SMEP, SMAP */
	PGWALK_AD,		/* an accessed or dirty bit the processor would set */
	PGWALK_PKEY,		/* a data access to a user-mode page under CR4.PKE, PKRU not known */
	PGWALK_NSTATUS
};

/* A pointer to the 8-byte entry at guest-physical `pa` (8-aligned), or NULL when it is not
 * ordinary guest RAM. The walk reads each entry once, with one 8-byte load. */
typedef const u64 *(*pgwalk_entry_fn)(void *ctx, u64 pa);

/* Translates linear `lin` for `acc`: on PGWALK_OK, *gpa is its guest-physical address and
 * *page the size of the page it is in (4 KiB, 2 MiB, 1 GiB). Nothing is written. */
int pgwalk(const struct pgwalk_ctl *c, pgwalk_entry_fn entry, void *ctx, u64 lin, enum pgwalk_access acc,
	   u64 *gpa, u64 *page);

#endif
