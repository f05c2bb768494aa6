/* x86-64 4-level paging entry bits (Intel SDM Vol. 3 4.5, AMD APM Vol. 2
 * 5.3), shared by the host page tables and AMD nested page tables; the
 * CR0, CR4 and RFLAGS bits. Macros only: the guest test programs and
 * assembly use them too. */
#ifndef HV_X86_PAGING_H
#define HV_X86_PAGING_H

#define PAGE_SHIFT	12
#define PAGE_SIZE	0x1000ull
#define PAGE_2M		0x200000ull
#define PAGE_1G		0x40000000ull

#define PTE_P		(1ull << 0)
#define PTE_RW		(1ull << 1)
#define PTE_US		(1ull << 2)
#define PTE_PWT		(1ull << 3)
#define PTE_PCD		(1ull << 4)
#define PTE_A		(1ull << 5)
#define PTE_D		(1ull << 6)
#define PTE_PS		(1ull << 7)
#define PTE_G		(1ull << 8)
#define PTE_NX		(1ull << 63)
#define PTE_ADDR_MASK	0x000ffffffffff000ull
#define PAGING_LEVELS_MAX 5		/* 5-level paging: PML5, PML4, PDPT, PD, PT (SDM Vol. 3 4.5) */
#define PTE_PKEY_SHIFT	59		/* bits 62:59: the protection key (SDM Vol. 3 4.6.2) */

/* #PF error code (SDM Vol. 3 4.7, APM Vol. 2 8.4.2) */
#define PF_ERR_P	(1ull << 0)
#define PF_ERR_W	(1ull << 1)
#define PF_ERR_U	(1ull << 2)
#define PF_ERR_RSVD	(1ull << 3)
#define PF_ERR_ID	(1ull << 4)
#define PF_ERR_PK	(1ull << 5)

/* CR0/CR4 bits needed to know the guest's paging mode, and the others the
 * hypervisor reads (SDM Vol. 3 2.5) */
#define CR0_PE		(1ull << 0)
#define CR0_ET		(1ull << 4)	/* reads as 1 on every processor since the 486 */
#define CR0_NE		(1ull << 5)
#define CR0_WP		(1ull << 16)
#define CR0_AM		(1ull << 18)	/* alignment mask: #AC at CPL 3 with RFLAGS.AC */
#define CR0_NW		(1ull << 29)
#define CR0_CD		(1ull << 30)
#define CR0_PG		(1ull << 31)
#define CR4_VME		(1ull << 0)
#define CR4_DE		(1ull << 3)	/* debugging extensions: DR4/DR5 #UD */
#define CR4_PSE		(1ull << 4)
#define CR4_PAE		(1ull << 5)
#define CR4_PGE		(1ull << 7)
#define CR4_PCE		(1ull << 8)	/* RDPMC at any CPL */
#define CR4_BASE	0x7ffull	/* VME ... OSXMMEXCPT: every x86-64 processor */
#define CR4_UMIP	(1ull << 11)
#define CR4_LA57	(1ull << 12)
#define CR4_VMXE	(1ull << 13)
#define CR4_SMXE	(1ull << 14)
#define CR4_FSGSBASE	(1ull << 16)
#define CR4_PCIDE	(1ull << 17)
/* SDM Vol. 3 4.10.4.1: MOV to CR3 with CR4.PCIDE, bit 63 = keep the PCID's
 * translations (not loaded into CR3); 4.5.3 (LAM): bits 62:61 LAM_U57/U48 */
#define CR3_PCID_NOFLUSH	(1ull << 63)
#define CR3_LAM_BITS		(3ull << 61)
#define CR4_OSXSAVE	(1ull << 18)
#define CR4_SMEP	(1ull << 20)
#define CR4_SMAP	(1ull << 21)
#define CR4_PKE		(1ull << 22)
#define CR4_CET		(1ull << 23)
#define CR4_PKS		(1ull << 24)

/* RFLAGS (SDM Vol. 1 3.4.3, Vol. 3 2.3) */
#define RFLAGS_CF	(1ull << 0)
#define RFLAGS_FIXED1	(1ull << 1)	/* reads as 1 */
#define RFLAGS_PF	(1ull << 2)
#define RFLAGS_AF	(1ull << 4)
#define RFLAGS_ZF	(1ull << 6)
#define RFLAGS_SF	(1ull << 7)
#define RFLAGS_TF	(1ull << 8)
#define RFLAGS_IF	(1ull << 9)
#define RFLAGS_DF	(1ull << 10)
#define RFLAGS_OF	(1ull << 11)
#define RFLAGS_IOPL	(3ull << 12)
#define RFLAGS_IOPL_SHIFT	12
#define RFLAGS_NT	(1ull << 14)
#define RFLAGS_RF	(1ull << 16)
#define RFLAGS_VM	(1ull << 17)
#define RFLAGS_AC	(1ull << 18)
#define RFLAGS_VIF	(1ull << 19)
#define RFLAGS_VIP	(1ull << 20)
#define RFLAGS_ID	(1ull << 21)

/* A linear address is canonical when bits 63:width-1 are all equal
 * (width 48, or 57 with CR4.LA57; SDM Vol. 1 3.3.7.1, APM Vol. 2 5.3.1). */
#define ADDR_CANONICAL(a, width) \
	((unsigned long long)((long long)((unsigned long long)(a) << (64 - (width))) >> (64 - (width))) == \
	 (unsigned long long)(a))

#endif
