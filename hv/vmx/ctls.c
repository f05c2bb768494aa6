/* VMX control adjustment (see ctls.h). Pure: no MSR access, host-tested in
 * tests/unit/test_vmx_ctls.c. */
#include "base/lib.h"
#include "vmx/ctls.h"

int vmx_adjust_ctls(const struct vmx_ctl_word *w, u64 cap, u32 *out, char *msg, size_t msg_size)
{
	u32 must_be_1 = (u32)cap, may_be_1 = (u32)(cap >> 32);
	u32 missing = w->required & ~may_be_1;

	if (msg_size)
		msg[0] = 0;
	/* A.3.1: a control that must be 1 but may not be 1 cannot be set at all */
	if (must_be_1 & ~may_be_1) {
		hv_snprintf(msg, msg_size, "%s controls: %s reads %016lx: bits %08x must be 1 but may not be",
			    w->what, w->msr, cap, must_be_1 & ~may_be_1);
		return HV_ERR_VMX_CONTROLS;
	}
	if (missing) {
		int bit = __builtin_ctz(missing);
		const char *name = w->bit_names && w->bit_names[bit] ? w->bit_names[bit] : "?";
		hv_snprintf(msg, msg_size,
			    "%s control '%s' (bit %d) is not allowed by %s (%016lx)%s", w->what, name,
			    bit, w->msr, cap, missing & (missing - 1) ? ", nor are others" : "");
		return HV_ERR_VMX_CONTROLS;
	}
	*out = w->required | (w->optional & may_be_1) | must_be_1;
	return HV_OK;
}
