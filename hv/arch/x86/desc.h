/* The hypervisor's own GDT, TSS and IDT (root mode). Loaded once the
 * guest's descriptor tables have been captured. */
#ifndef HV_X86_DESC_H
#define HV_X86_DESC_H
#include "base/types.h"

#define HOST_CS 0x08
#define HOST_DS 0x10
#define HOST_TR 0x18

void desc_load_host(void);

struct exc_frame {
	u64 r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, error;
	u64 rip, cs, rflags, rsp, ss;	/* pushed by the CPU (SDM Vol. 3 6.14.1) */
};

/* Segment attribute (VMCB format) of a GDT/LDT descriptor. */
static inline u16 desc_attr(u64 d)
{
	return (u16)(((d >> 40) & 0xff) | (((d >> 52) & 0xf) << 8));
}
static inline u32 desc_limit(u64 d)
{
	u32 l = (u32)((d & 0xffff) | ((d >> 32) & 0xf0000));
	return (d & (1ull << 55)) ? (l << 12) | 0xfff : l;
}
static inline u64 desc_base(u64 d)
{
	return ((d >> 16) & 0xffffff) | ((d >> 32) & 0xff000000);
}

#endif
