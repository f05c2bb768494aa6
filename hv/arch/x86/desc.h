/* The hypervisor's own GDT, TSS and IDT (root mode), one GDT and TSS per
 * processor, and the per-processor root-mode block the GS base points at
 * (exc.S writes into it). Loaded once the guest's descriptor tables have
 * been captured. */
#ifndef HV_X86_DESC_H
#define HV_X86_DESC_H

#define HOST_CS 0x08
#define HOST_DS 0x10
#define HOST_TR 0x18

/* Offsets in struct host_cpu, for exc.S (%gs-relative). */
#define HOST_CPU_IRQ_VECTOR	0
#define HOST_CPU_NMI_PENDING	4
#define HOST_CPU_SELF		8
#define HOST_CPU_IRQ_STALE	16

/* An interrupt frame without error code (SDM Vol. 3 6.14.1): RFLAGS at
 * this offset; its IF bit, cleared by the IRQ stubs */
#define HOST_FRAME_RFLAGS	16
#define HOST_RFLAGS_IF_BIT	9

#ifndef __ASSEMBLER__
#include "arch/x86/types.h"
#include "arch/x86/paging.h"

struct tss64 {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __packed;
_Static_assert(sizeof(struct tss64) == 104, "SDM Vol. 3 Figure 8-11");

/* One processor's root-mode state. The GS base holds its address while the
 * hypervisor runs (VMX: the VMCS host GS base; SVM: the host VMSAVE area),
 * so the interrupt and NMI stubs reach their own processor's flags. */
struct host_cpu {
	volatile u32 irq_vector;	/* the vector the last host interrupt window took */
	volatile u32 nmi_pending;	/* an NMI arrived in root mode */
	struct host_cpu *self;
	volatile u32 irq_stale;		/* vectors delivered with IF clear: not interrupts (exc.S) */
	u64 gdt[5] __aligned(16);
	struct tss64 tss __aligned(16);
};
_Static_assert(__builtin_offsetof(struct host_cpu, irq_vector) == HOST_CPU_IRQ_VECTOR, "exc.S");
_Static_assert(__builtin_offsetof(struct host_cpu, nmi_pending) == HOST_CPU_NMI_PENDING, "exc.S");
_Static_assert(__builtin_offsetof(struct host_cpu, self) == HOST_CPU_SELF, "exc.S");
_Static_assert(__builtin_offsetof(struct host_cpu, irq_stale) == HOST_CPU_IRQ_STALE, "exc.S");
_Static_assert(RFLAGS_IF == 1ull << HOST_RFLAGS_IF_BIT, "exc.S");

/* Loads c's GDT and TSS, the shared IDT, and points the GS base at c. */
void desc_load_host(struct host_cpu *c);

/* This processor's block (root mode, after desc_load_host). */
static inline struct host_cpu *host_cpu_this(void)
{
	struct host_cpu *c;
	asm volatile("movq %%gs:%c1, %0" : "=r"(c) : "i"(HOST_CPU_SELF));
	return c;
}

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

#endif /* __ASSEMBLER__ */
#endif
