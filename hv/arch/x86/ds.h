/* The Debug Store (SDM Vol. 3 20.4.9 / 18.4.9 in older editions): the
 * 64-bit DS save area (DTES64) and the BTS record, as the guest lays them
 * out in its own memory (the guest test programs lay theirs out with
 * these too). */
#ifndef HV_X86_DS_H
#define HV_X86_DS_H
#include "base/types.h"

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
	u64 pebs_counter_reset[4]; /* 0x40 */
};
_Static_assert(__builtin_offsetof(struct ds_area64, bts_index) == 0x08, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, bts_int_threshold) == 0x18, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, pebs_base) == 0x20, "DS save area");
_Static_assert(__builtin_offsetof(struct ds_area64, pebs_counter_reset) == 0x40, "DS save area");

/* Figure "64-bit Branch Trace Record Format" */
struct bts_record64 {
	u64 from;		/* linear address of the branch source */
	u64 to;			/* linear address of the destination */
	u64 flags;		/* bit 4: predicted */
};
_Static_assert(sizeof(struct bts_record64) == 24, "BTS record is 24 bytes");
#define BTS_FLAG_PREDICTED (1ull << 4)

#endif
