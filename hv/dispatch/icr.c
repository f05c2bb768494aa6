/* Which processors an ICR write names (icr.h). */
#include "arch/x86/apic.h"
#include "dispatch/icr.h"

enum icr_target_result icr_targets(u32 lo, u32 dest, bool x2apic, u32 self, const u32 *apic_ids,
				   u32 n, u64 *mask)
{
	u64 all = n >= 64 ? ~0ull : (1ull << n) - 1, me = self < n ? 1ull << self : 0;
	*mask = 0;
	switch (lo & ICR_SHORTHAND_MASK) {
	case ICR_DEST_SELF:
		*mask = me;
		return ICR_TARGETS_OK;
	case ICR_DEST_ALL:
		*mask = all;
		return ICR_TARGETS_OK;
	case ICR_DEST_OTHERS:
		*mask = all & ~me;
		return ICR_TARGETS_OK;
	}
	if (lo & ICR_DEST_LOGICAL)
		return ICR_TARGETS_LOGICAL;
	if (dest == (x2apic ? ICR_X2APIC_BROADCAST : ICR_XAPIC_BROADCAST)) {
		*mask = all;
		return ICR_TARGETS_OK;
	}
	for (u32 i = 0; i < n && i < 64; i++)
		if (apic_ids[i] == dest)
			*mask |= 1ull << i;
	return *mask ? ICR_TARGETS_OK : ICR_TARGETS_UNKNOWN;
}
