/* VMX control adjustment (SDM Vol. 3 Appendix A.3-A.5): pure logic over the
 * capability MSRs' values, shared by hv/vmx/vmx.c and the host unit tests. */
#ifndef HV_VMX_CTLS_H
#define HV_VMX_CTLS_H

#include "arch/x86/types.h"

/* One 32-bit VM-execution, VM-exit or VM-entry control word. */
struct vmx_ctl_word {
	const char *what;		/* "secondary processor-based VM-execution" */
	const char *msr;		/* the capability MSR, for messages */
	u32 required;			/* hvtrace cannot run without these */
	u32 optional;			/* used when the CPU allows them */
	const char *const *bit_names;	/* 32 names (NULL entries allowed) */
};

/*
 * A.3.1: bits 31:0 of the capability MSR are the allowed-0 settings (a 1
 * means the control must be 1: "default1"), bits 63:32 the allowed-1
 * settings. Returns HV_OK with *out = required | allowed optional | forced
 * default1 bits, or HV_ERR_VMX_CONTROLS with a message in msg naming the
 * first required control the CPU does not allow (or a malformed MSR).
 */
int vmx_adjust_ctls(const struct vmx_ctl_word *w, u64 cap, u32 *out, char *msg, size_t msg_size);

#endif
