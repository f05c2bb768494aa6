/* Leaving the hypervisor before it ever ran a guest: reload the captured
 * (firmware's) descriptor tables and jump back into the loader natively. */
#ifndef HV_X86_RESUME_H
#define HV_X86_RESUME_H
#include "arch/x86/types.h"

struct native_state {
	u64 gdtr_base;		/* 0x00 */
	u64 idtr_base;		/* 0x08 */
	u64 cr3;		/* 0x10 */
	u64 rsp;		/* 0x18 */
	u64 rip;		/* 0x20 */
	u64 rax;		/* 0x28 */
	u16 gdtr_limit;		/* 0x30 */
	u16 idtr_limit;		/* 0x32 */
	u16 cs, ss, ds, es;	/* 0x34 */
};
_Static_assert(__builtin_offsetof(struct native_state, es) == 0x3a, "resume.S offsets");

void __noreturn resume_native(const struct native_state *ns);
#endif
