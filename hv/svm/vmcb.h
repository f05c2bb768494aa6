/* AMD VMCB layout, AMD APM Vol. 2 Appendix B ("Layout of VMCB"), with the
 * exit codes of Appendix C. Offsets are checked at compile time. */
#ifndef HV_SVM_VMCB_H
#define HV_SVM_VMCB_H

#include "arch/x86/types.h"

/* Table B-1: intercept vector 3 (offset 0x0C) */
#define INTERCEPT3_INTR		BIT(0)
#define INTERCEPT3_NMI		BIT(1)
#define INTERCEPT3_INIT		BIT(3)
#define INTERCEPT3_VINTR	BIT(4)
#define INTERCEPT3_RDPMC	BIT(15)
#define INTERCEPT3_CPUID	BIT(18)
#define INTERCEPT3_IRET		BIT(20)
#define INTERCEPT3_INVD		BIT(22)
#define INTERCEPT3_HLT		BIT(24)
#define INTERCEPT3_INVLPGA	BIT(26)
#define INTERCEPT3_IOIO_PROT	BIT(27)
#define INTERCEPT3_MSR_PROT	BIT(28)
#define INTERCEPT3_SHUTDOWN	BIT(31)
/* intercept vector 4 (offset 0x10) */
#define INTERCEPT4_VMRUN	BIT(0)
#define INTERCEPT4_VMMCALL	BIT(1)
#define INTERCEPT4_VMLOAD	BIT(2)
#define INTERCEPT4_VMSAVE	BIT(3)
#define INTERCEPT4_STGI		BIT(4)
#define INTERCEPT4_CLGI		BIT(5)
#define INTERCEPT4_SKINIT	BIT(6)
#define INTERCEPT4_WBINVD	BIT(9)

#define TLB_CONTROL_FLUSH_ALL	1
#define INTERCEPT_CR_WRITE(n)	BIT(16 + (n))	/* offset 0: writes in bits 16-31 */
#define NP_ENABLE		BIT(0)

/* VMCB offset 0x60, APM 15.21.4: a virtual interrupt (V_IRQ) of the
 * highest priority that ignores V_TPR, taken when the guest's IF allows */
#define INT_CTL_V_TPR		0xfull	/* the guest's CR8 as VMRUN and #VMEXIT see it */
#define INT_CTL_V_IRQ		BIT(8)
#define INT_CTL_V_INTR_PRIO	(0xfull << 16)
#define INT_CTL_V_IGN_TPR	BIT(20)
#define INT_STATE_SHADOW	BIT(0)	/* offset 0x68: STI/MOV SS shadow */

/* EVENTINJ, APM 15.20 */
#define EVENTINJ_TYPE_MASK	(7u << 8)
#define EVENTINJ_TYPE_NMI	(2u << 8)
#define EVENTINJ_TYPE_EXCEPTION	(3u << 8)
#define EVENTINJ_EV		(1u << 11)
#define EVENTINJ_V		(1u << 31)

/* APM 15.10.2 Figure 15-2: EXITINFO1 of an IOIO intercept (EXITINFO2 is
 * the RIP of the next instruction, with or without NRIP save) */
#define IOIO_TYPE_IN		BIT(0)
#define IOIO_STR		BIT(2)
#define IOIO_REP		BIT(3)
#define IOIO_SZ8		BIT(4)
#define IOIO_SZ16		BIT(5)
#define IOIO_SZ32		BIT(6)
#define IOIO_PORT(info1)	((u16)((info1) >> 16))

/* Appendix C: exit codes */
#define SVM_EXIT_CR0_WRITE	0x010	/* 0x10-0x1f: writes to CR0-CR15 */
#define SVM_EXIT_CR4_WRITE	0x014
#define SVM_EXIT_CR8_WRITE	0x018
#define SVM_EXIT_DR_BASE	0x020	/* 0x20-0x2f reads, 0x30-0x3f writes */
#define SVM_EXIT_EXCP_BASE	0x040
#define SVM_EXIT_INTR		0x060
#define SVM_EXIT_NMI		0x061
#define SVM_EXIT_INIT		0x063
#define SVM_EXIT_VINTR		0x064
#define SVM_EXIT_RDPMC		0x06f
#define SVM_EXIT_CPUID		0x072
#define SVM_EXIT_IRET		0x074
#define SVM_EXIT_INVD		0x076
#define SVM_EXIT_HLT		0x078
#define SVM_EXIT_INVLPGA	0x07a
#define SVM_EXIT_IOIO		0x07b
#define SVM_EXIT_MSR		0x07c
#define SVM_EXIT_SHUTDOWN	0x07f
#define SVM_EXIT_VMRUN		0x080
#define SVM_EXIT_VMMCALL	0x081
#define SVM_EXIT_VMLOAD		0x082
#define SVM_EXIT_VMSAVE		0x083
#define SVM_EXIT_STGI		0x084
#define SVM_EXIT_CLGI		0x085
#define SVM_EXIT_SKINIT		0x086
#define SVM_EXIT_WBINVD		0x089
#define SVM_EXIT_NPF		0x400
#define SVM_EXIT_INVALID	((u64)-1)
/* VMEXIT_INVALID is -1 (Appendix C); QEMU's TCG stores it as a 32-bit -1
 * (0x00000000ffffffff), so the low half decides: no exit code is that
 * large otherwise */
#define SVM_EXIT_IS_INVALID(code)	((u32)(code) == 0xffffffffu)

/* struct vmcb_seg attr: the descriptor's access byte in bits 7:0, its
 * AVL, L, D/B and G in bits 11:8 (APM Vol. 2 15.5.1, Table B-2) */
#define VMCB_ATTR_L		BIT(9)
#define VMCB_ATTR_DB		BIT(10)

struct vmcb_seg {
	u16 sel;
	u16 attr;
	u32 limit;
	u64 base;
};

struct vmcb_control {
	u32 intercept_cr;		/* 0x000 */
	u32 intercept_dr;		/* 0x004 */
	u32 intercept_exceptions;	/* 0x008 */
	u32 intercept_misc3;		/* 0x00c: vector 3 */
	u32 intercept_misc4;		/* 0x010: vector 4 */
	u32 intercept_misc5;		/* 0x014: vector 5 */
	u8 reserved_018[0x03c - 0x018];
	u16 pause_filter_thresh;	/* 0x03c */
	u16 pause_filter_count;		/* 0x03e */
	u64 iopm_base_pa;		/* 0x040 */
	u64 msrpm_base_pa;		/* 0x048 */
	u64 tsc_offset;			/* 0x050 */
	u32 asid;			/* 0x058 */
	u8 tlb_control;			/* 0x05c */
	u8 reserved_05d[3];
	u64 int_ctl;			/* 0x060 */
	u64 int_state;			/* 0x068: interrupt shadow */
	u64 exit_code;			/* 0x070 */
	u64 exit_info1;			/* 0x078 */
	u64 exit_info2;			/* 0x080 */
	u64 exit_int_info;		/* 0x088 */
	u64 np_ctl;			/* 0x090 */
	u64 avic_apic_bar;		/* 0x098 */
	u64 ghcb_pa;			/* 0x0a0 */
	u64 event_inj;			/* 0x0a8 */
	u64 n_cr3;			/* 0x0b0 */
	u64 virt_ext;			/* 0x0b8: LBR virtualization */
	u32 clean;			/* 0x0c0 */
	u32 reserved_0c4;
	u64 next_rip;			/* 0x0c8 */
	u8 insn_len;			/* 0x0d0 */
	u8 insn_bytes[15];		/* 0x0d1 */
	u8 reserved_0e0[0x400 - 0x0e0];
};

struct vmcb_save {
	struct vmcb_seg es, cs, ss, ds, fs, gs, gdtr, ldtr, idtr, tr;	/* 0x000 */
	u8 reserved_0a0[0x0cb - 0x0a0];
	u8 cpl;				/* 0x0cb */
	u32 reserved_0cc;
	u64 efer;			/* 0x0d0 */
	u8 reserved_0d8[0x148 - 0x0d8];
	u64 cr4;			/* 0x148 */
	u64 cr3;			/* 0x150 */
	u64 cr0;			/* 0x158 */
	u64 dr7;			/* 0x160 */
	u64 dr6;			/* 0x168 */
	u64 rflags;			/* 0x170 */
	u64 rip;			/* 0x178 */
	u8 reserved_180[0x1d8 - 0x180];
	u64 rsp;			/* 0x1d8 */
	u64 s_cet, ssp, isst_addr;	/* 0x1e0 */
	u64 rax;			/* 0x1f8 */
	u64 star;			/* 0x200 */
	u64 lstar;			/* 0x208 */
	u64 cstar;			/* 0x210 */
	u64 sfmask;			/* 0x218 */
	u64 kernel_gs_base;		/* 0x220 */
	u64 sysenter_cs;		/* 0x228 */
	u64 sysenter_esp;		/* 0x230 */
	u64 sysenter_eip;		/* 0x238 */
	u64 cr2;			/* 0x240 */
	u8 reserved_248[0x268 - 0x248];
	u64 g_pat;			/* 0x268 */
	u64 dbgctl;			/* 0x270 */
	u64 br_from;			/* 0x278 */
	u64 br_to;			/* 0x280 */
	u64 last_excp_from;		/* 0x288 */
	u64 last_excp_to;		/* 0x290 */
	u8 reserved_298[0xc00 - 0x298];
};

struct vmcb {
	struct vmcb_control control;
	struct vmcb_save save;
};

#define VMCB_CHECK(s, f, off) _Static_assert(__builtin_offsetof(struct s, f) == (off), #s "." #f)
VMCB_CHECK(vmcb_control, intercept_misc4, 0x010);
VMCB_CHECK(vmcb_control, iopm_base_pa, 0x040);
VMCB_CHECK(vmcb_control, asid, 0x058);
VMCB_CHECK(vmcb_control, int_ctl, 0x060);
VMCB_CHECK(vmcb_control, exit_code, 0x070);
VMCB_CHECK(vmcb_control, np_ctl, 0x090);
VMCB_CHECK(vmcb_control, event_inj, 0x0a8);
VMCB_CHECK(vmcb_control, n_cr3, 0x0b0);
VMCB_CHECK(vmcb_control, next_rip, 0x0c8);
VMCB_CHECK(vmcb_control, insn_bytes, 0x0d1);
VMCB_CHECK(vmcb_save, tr, 0x090);
VMCB_CHECK(vmcb_save, cpl, 0x0cb);
VMCB_CHECK(vmcb_save, efer, 0x0d0);
VMCB_CHECK(vmcb_save, cr4, 0x148);
VMCB_CHECK(vmcb_save, rip, 0x178);
VMCB_CHECK(vmcb_save, rsp, 0x1d8);
VMCB_CHECK(vmcb_save, rax, 0x1f8);
VMCB_CHECK(vmcb_save, cr2, 0x240);
VMCB_CHECK(vmcb_save, g_pat, 0x268);
VMCB_CHECK(vmcb_save, last_excp_to, 0x290);
VMCB_CHECK(vmcb, save, 0x400);
_Static_assert(sizeof(struct vmcb) == 4096, "a VMCB is one page");

#endif
