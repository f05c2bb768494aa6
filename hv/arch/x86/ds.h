/* The Debug Store (SDM Vol. 3 20.4.9 / 18.4.9 in older editions): the
 * 64-bit DS save area (DTES64), the BTS record and the adaptive PEBS
 * record (SDM Vol. 3 20.9 "PEBS Facility": record format 4), as the guest
 * lays them out in its own memory (the guest test programs lay theirs out
 * with these too). */
#ifndef HV_X86_DS_H
#define HV_X86_DS_H
#include "arch/x86/types.h"

/* Figure "IA-32e Mode DS Save Area" */
struct ds_area64 {
	u64 bts_base;		/* 0x00 */
	u64 bts_index;		/* 0x08 */
	u64 bts_abs_max;	/* 0x10 */
	u64 bts_int_threshold;	/* 0x18 */
	u64 pebs_base;		/* 0x20 */
	u64 pebs_index;		/* 0x28 */
	u64 pebs_abs_max;	/* 0x30 */
	u64 pebs_int_threshold;	/* 0x38 */
	/* the counters' PEBS reset values (Figure "PEBS Programming
	 * Environment"; format 4 places the fixed counters' at 0x80, as
	 * Linux's struct debug_store does) */
	u64 pebs_gp_reset[8];	/* 0x40: IA32_PMC0-7 */
	u64 pebs_fixed_reset[4]; /* 0x80: IA32_FIXED_CTR0-3 */
};
_Static_assert(__builtin_offsetof(struct ds_area64, bts_index) == 0x08, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, bts_int_threshold) == 0x18, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, pebs_base) == 0x20, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, pebs_gp_reset) == 0x40, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, pebs_fixed_reset) == 0x80, "DS save area");

/* Figure "64-bit Branch Trace Record Format" */
struct bts_record64 {
	u64 from;		/* linear address of the branch source */
	u64 to;			/* linear address of the destination */
	u64 flags;		/* bit 4: predicted */
};
_Static_assert(sizeof(struct bts_record64) == 24, "BTS record is 24 bytes");
#define BTS_FLAG_PREDICTED (1ull << 4)

/* The adaptive PEBS record's groups (SDM Vol. 3 "PEBS Record Format" for
 * format 4; Linux's struct pebs_basic...): the basic group always, then
 * those PEBS_DATA_CFG selects, in this order. */
struct pebs_basic {
	u64 format_size;	/* 47:0 the groups (PEBS_DATA_CFG's bits), 63:48 the size */
	u64 ip;			/* the eventing IP: the instruction that overflowed */
	u64 applicable_counters; /* GLOBAL_STATUS numbering: 0-7 PMCs, 32+ fixed */
	u64 tsc;
};
_Static_assert(sizeof(struct pebs_basic) == 0x20, "PEBS basic group");
#define PEBS_SIZE_SHIFT		48
#define PEBS_FORMAT_MASK	((1ull << PEBS_SIZE_SHIFT) - 1)

struct pebs_meminfo {
	u64 address, aux, latency, tsx_tuning;
};
_Static_assert(sizeof(struct pebs_meminfo) == 0x20, "PEBS memory info group");

/* the registers after the instruction: RFLAGS, RIP, then RAX..R15 in the
 * encoding's order */
struct pebs_gprs {
	u64 flags, ip;
	u64 gpr[16];		/* RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15 */
};
_Static_assert(sizeof(struct pebs_gprs) == 0x90, "PEBS GPR group");

#endif
