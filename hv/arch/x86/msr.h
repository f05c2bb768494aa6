/* x86 model-specific register numbers and bits, named as in the Intel SDM
 * Vol. 4 and the AMD APM Vol. 2. Definitions only: the guest test programs
 * and assembly use them too. */
#ifndef HV_X86_MSR_H
#define HV_X86_MSR_H

#define MSR_IA32_TSC			0x00000010
#define MSR_IA32_APICBASE		0x0000001b
#define MSR_IA32_SYSENTER_CS		0x00000174
#define MSR_IA32_SYSENTER_ESP		0x00000175
#define MSR_IA32_SYSENTER_EIP		0x00000176
#define MSR_IA32_FEATURE_CONTROL	0x0000003a
#define MSR_IA32_PMC0			0x000000c1	/* IA32_PMCn = 0xc1 + n */
#define MSR_IA32_SMM_MONITOR_CTL	0x0000009b
#define MSR_IA32_MTRRCAP		0x000000fe
#define MSR_IA32_PERFEVTSEL0		0x00000186	/* IA32_PERFEVTSELn = 0x186 + n */
#define MSR_IA32_MISC_ENABLE		0x000001a0
#define MSR_IA32_DEBUGCTL		0x000001d9
#define MSR_IA32_PAT			0x00000277
#define MSR_IA32_MTRR_PHYSBASE0		0x00000200	/* PHYSBASEn = 0x200 + 2n, PHYSMASKn + 1 */
#define MSR_IA32_MTRR_FIX64K_00000	0x00000250
#define MSR_IA32_MTRR_FIX16K_80000	0x00000258
#define MSR_IA32_MTRR_FIX16K_A0000	0x00000259
#define MSR_IA32_MTRR_FIX4K_C0000	0x00000268	/* ... FIX4K_F8000 = 0x26f */
#define MSR_IA32_MTRR_FIX4K_F8000	0x0000026f
#define MSR_IA32_MTRR_DEF_TYPE		0x000002ff
#define MSR_IA32_FIXED_CTR0		0x00000309	/* IA32_FIXED_CTRn = 0x309 + n */
#define MSR_IA32_PERF_CAPABILITIES	0x00000345
#define MSR_IA32_FIXED_CTR_CTRL		0x0000038d
#define MSR_IA32_PERF_GLOBAL_STATUS	0x0000038e
#define MSR_IA32_PERF_GLOBAL_CTRL	0x0000038f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL	0x00000390
#define MSR_IA32_PEBS_ENABLE		0x000003f1
#define MSR_PEBS_DATA_CFG		0x000003f2	/* adaptive PEBS (PERF_CAPABILITIES.PEBS_BASELINE) */
#define MSR_IA32_A_PMC0			0x000004c1	/* full-width writes: IA32_A_PMCn */
#define MSR_IA32_RTIT_OUTPUT_BASE	0x00000560	/* Intel PT: 0x560-0x561, 0x570-0x572, 0x580-0x587 */
#define MSR_IA32_RTIT_OUTPUT_MASK_PTRS	0x00000561
#define MSR_IA32_RTIT_CTL		0x00000570
#define MSR_IA32_RTIT_STATUS		0x00000571
#define MSR_IA32_RTIT_CR3_MATCH		0x00000572
#define MSR_IA32_RTIT_ADDR0_A		0x00000580
#define MSR_IA32_RTIT_ADDR3_B		0x00000587
#define MSR_IA32_DS_AREA		0x00000600
#define MSR_IA32_XSS			0x00000da0
#define XSS_LBR				(1ull << 15)	/* the Arch LBR state component */
/* Architectural LBRs (SDM Vol. 3 "Last Branch Records", Arch LBR; CPUID
 * leaf 1CH): the stack is entry 0 = the most recent, no TOS */
#define MSR_IA32_LBR_CTL		0x000014ce
#define MSR_IA32_LBR_DEPTH		0x000014cf	/* a write clears every entry */
#define MSR_IA32_LBR_FROM_IP0		0x00001500	/* IA32_LBR_x_FROM_IP = 0x1500 + x */
#define MSR_IA32_LBR_TO_IP0		0x00001600	/* IA32_LBR_x_TO_IP = 0x1600 + x */
#define MSR_IA32_LBR_INFO0		0x00001200	/* IA32_LBR_x_INFO = 0x1200 + x */
#define LBR_MSR_SPAN			64		/* x = 0..63: the deepest stack CPUID.1CH can give */
/* the x2APIC registers: X2APIC_MSR() in apic.h */

/* SDM Vol. 4 Table 2-2 / Vol. 3 17.4.1: IA32_DEBUGCTL */
#define DEBUGCTL_LBR			(1ull << 0)
#define DEBUGCTL_BTF			(1ull << 1)
#define DEBUGCTL_TR			(1ull << 6)
#define DEBUGCTL_BTS			(1ull << 7)
#define DEBUGCTL_BTINT			(1ull << 8)
#define DEBUGCTL_BTS_OFF_OS		(1ull << 9)
#define DEBUGCTL_BTS_OFF_USR		(1ull << 10)
#define DEBUGCTL_FREEZE_LBRS_ON_PMI	(1ull << 11)
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI	(1ull << 12)

/* IA32_LBR_CTL (Arch LBR): enable, the CPL filter, call-stack mode and
 * the branch-type filter (a set bit records that type) */
#define LBR_CTL_LBREN			(1ull << 0)
#define LBR_CTL_OS			(1ull << 1)
#define LBR_CTL_USR			(1ull << 2)
#define LBR_CTL_CALL_STACK		(1ull << 3)
#define LBR_CTL_JCC			(1ull << 16)
#define LBR_CTL_NEAR_REL_JMP		(1ull << 17)
#define LBR_CTL_NEAR_IND_JMP		(1ull << 18)
#define LBR_CTL_NEAR_REL_CALL		(1ull << 19)
#define LBR_CTL_NEAR_IND_CALL		(1ull << 20)
#define LBR_CTL_NEAR_RET		(1ull << 21)
#define LBR_CTL_OTHER_BRANCH		(1ull << 22)
/* IA32_LBR_x_INFO: cycles since the previous entry (valid with bit 60),
 * the branch type (bits 59:56, with CPUID.1CH:ECX[2]), TSX, mispredict */
#define LBR_INFO_CYC_CNT(i)		((u32)(i) & 0xffff)
#define LBR_INFO_BR_TYPE(i)		((u32)((i) >> 56) & 0xf)
#define LBR_INFO_CYC_CNT_VALID		(1ull << 60)
#define LBR_INFO_TSX_ABORT		(1ull << 61)
#define LBR_INFO_IN_TSX			(1ull << 62)
#define LBR_INFO_MISPRED		(1ull << 63)
/* LBR_INFO's branch types: 0-5 the near kinds, 8-15 "other" (far
 * transfers, interrupts, exceptions...: the record does not say which) */
#define LBR_BR_TYPE_JCC			0
#define LBR_BR_TYPE_NEAR_IND_JMP	1
#define LBR_BR_TYPE_NEAR_REL_JMP	2
#define LBR_BR_TYPE_NEAR_IND_CALL	3
#define LBR_BR_TYPE_NEAR_REL_CALL	4
#define LBR_BR_TYPE_NEAR_RET		5
#define LBR_BR_TYPE_OTHER_MIN		8
/* SDM Vol. 4 Table 2-2 / Vol. 3 20.6.2.4 (Figure "IA32_PERF_CAPABILITIES"):
 * IA32_PERF_CAPABILITIES */
#define PERF_CAP_LBR_FORMAT		0x3full
#define PERF_CAP_PEBS_TRAP		(1ull << 6)	/* records after the instruction */
#define PERF_CAP_PEBS_ARCH_REG		(1ull << 7)	/* records hold the registers */
#define PERF_CAP_PEBS_FORMAT(f)		((unsigned long long)(f) << 8)	/* bits 11:8 */
#define PERF_CAP_SMM_FREEZE		(1ull << 12)
#define PERF_CAP_FW_WRITE		(1ull << 13)	/* IA32_A_PMCx */
#define PERF_CAP_PEBS_BASELINE		(1ull << 14)	/* adaptive PEBS */

/* MSR_PEBS_DATA_CFG: the adaptive record's groups beyond the basic one */
#define PEBS_DATACFG_MEMINFO		(1ull << 0)
#define PEBS_DATACFG_GP			(1ull << 1)
#define PEBS_DATACFG_XMMS		(1ull << 2)
#define PEBS_DATACFG_LBRS		(1ull << 3)
#define PEBS_DATACFG_LBR_ENTRIES	(0xffull << 24)

/* SDM Vol. 4 Table 2-2: IA32_MISC_ENABLE */
#define MISC_ENABLE_BTS_UNAVAIL		(1ull << 11)
#define MISC_ENABLE_PEBS_UNAVAIL	(1ull << 12)

/* SDM Vol. 3 20.2.4: IA32_PERF_GLOBAL_STATUS, DS buffer overflow */
#define PERF_GLOBAL_STATUS_OVF_BUFFER	(1ull << 62)
#define PERF_GLOBAL_STATUS_COND_CHGD	(1ull << 63)

/* SDM Vol. 3 20.2.1-20.2.2, Vol. 4 Table 2-2: the architectural PMU.
 * IA32_PERFEVTSELx: */
#define PERFEVTSEL_EVENT(sel)		((unsigned)(sel) & 0xff)
#define PERFEVTSEL_UMASK(sel)		(((unsigned)(sel) >> 8) & 0xff)
#define PERFEVTSEL_USR			(1ull << 16)
#define PERFEVTSEL_OS			(1ull << 17)
#define PERFEVTSEL_EDGE			(1ull << 18)
#define PERFEVTSEL_PC			(1ull << 19)
#define PERFEVTSEL_INT			(1ull << 20)
#define PERFEVTSEL_ANY			(1ull << 21)	/* AnyThread: version 3 and later */
#define PERFEVTSEL_EN			(1ull << 22)
#define PERFEVTSEL_INV			(1ull << 23)
#define PERFEVTSEL_CMASK		(0xffull << 24)
#define PERFEVTSEL_ADAPTIVE		(1ull << 34)	/* Adaptive_Record: PEBS_BASELINE */
/* IA32_FIXED_CTR_CTRL: four bits per fixed counter n */
#define FIXED_CTRL_OS(n)		(1ull << (4 * (n)))
#define FIXED_CTRL_USR(n)		(2ull << (4 * (n)))
#define FIXED_CTRL_ANY(n)		(4ull << (4 * (n)))	/* version 3 and later */
#define FIXED_CTRL_PMI(n)		(8ull << (4 * (n)))
#define FIXED_CTRL_ADAPTIVE(n)		(1ull << (32 + 4 * (n)))	/* PEBS_BASELINE */
/* IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL: the counters' bits */
#define PERF_GLOBAL_PMC(n)		(1ull << (n))
#define PERF_GLOBAL_FIXED(n)		(1ull << (32 + (n)))
/* the architectural events (SDM Vol. 3 Table 20-1): event select, umask */
#define ARCH_EV_CORE_CYCLES		0x003c
#define ARCH_EV_INSNS_RETIRED		0x00c0
#define ARCH_EV_REF_CYCLES		0x013c
#define ARCH_EV_BRANCHES		0x00c4
#define ARCH_EV_BRANCH_MISSES		0x00c5
/* BR_INST_RETIRED's sub-events (Intel's event lists for Skylake and later
 * cores, SDM Vol. 3B Ch. 20's model tables): event C4H with these umasks */
#define BR_INST_RETIRED_CONDITIONAL	0x01c4
#define BR_INST_RETIRED_NEAR_CALL	0x02c4
#define BR_INST_RETIRED_ALL_BRANCHES	0x04c4
#define BR_INST_RETIRED_NEAR_RETURN	0x08c4
#define BR_INST_RETIRED_NOT_TAKEN	0x10c4
#define BR_INST_RETIRED_NEAR_TAKEN	0x20c4
#define BR_INST_RETIRED_FAR_BRANCH	0x40c4

/* SDM Vol. 3 11.4.4 and 11.12.1: IA32_APIC_BASE */
#define APICBASE_BSP			(1ull << 8)
#define APICBASE_EXTD			(1ull << 10)	/* x2APIC mode */
#define APICBASE_EN			(1ull << 11)
#define APICBASE_ADDR_MASK		0x000ffffffffff000ull

/* SDM Vol. 3 12.11: MTRRs (memory types 0 UC, 1 WC, 4 WT, 5 WP, 6 WB) */
#define MTRRCAP_VCNT(cap)		((u32)(cap) & 0xff)
#define MTRR_DEF_TYPE_E			(1ull << 11)
#define MTRR_DEF_TYPE_FE		(1ull << 10)
#define MTRR_PHYSMASK_VALID		(1ull << 11)
#define MTRR_TYPE_MASK			0xffull
#define MTRR_TYPE_WB			6

/* Intel SDM Vol. 3 Appendix A: VMX capability MSRs (0x480-0x493) */
#define MSR_IA32_VMX_BASIC		0x00000480
#define MSR_IA32_VMX_PINBASED_CTLS	0x00000481
#define MSR_IA32_VMX_PROCBASED_CTLS	0x00000482
#define MSR_IA32_VMX_EXIT_CTLS		0x00000483
#define MSR_IA32_VMX_ENTRY_CTLS		0x00000484
#define MSR_IA32_VMX_MISC		0x00000485
#define MSR_IA32_VMX_CR0_FIXED0		0x00000486
#define MSR_IA32_VMX_CR0_FIXED1		0x00000487
#define MSR_IA32_VMX_CR4_FIXED0		0x00000488
#define MSR_IA32_VMX_CR4_FIXED1		0x00000489
#define MSR_IA32_VMX_VMCS_ENUM		0x0000048a
#define MSR_IA32_VMX_PROCBASED_CTLS2	0x0000048b
#define MSR_IA32_VMX_EPT_VPID_CAP	0x0000048c
#define MSR_IA32_VMX_TRUE_PINBASED_CTLS	0x0000048d
#define MSR_IA32_VMX_TRUE_PROCBASED_CTLS 0x0000048e
#define MSR_IA32_VMX_TRUE_EXIT_CTLS	0x0000048f
#define MSR_IA32_VMX_TRUE_ENTRY_CTLS	0x00000490
#define MSR_IA32_VMX_VMFUNC		0x00000491
#define MSR_IA32_VMX_PROCBASED_CTLS3	0x00000492
#define MSR_IA32_VMX_EXIT_CTLS2		0x00000493

/* Intel SDM Vol. 3 24.7: IA32_FEATURE_CONTROL */
#define FEATURE_CONTROL_LOCK		(1ull << 0)
#define FEATURE_CONTROL_VMX_INSIDE_SMX	(1ull << 1)
#define FEATURE_CONTROL_VMX_OUTSIDE_SMX	(1ull << 2)

#define MSR_EFER			0xc0000080
#define MSR_STAR			0xc0000081
#define MSR_LSTAR			0xc0000082
#define MSR_CSTAR			0xc0000083
#define MSR_SFMASK			0xc0000084
#define MSR_FS_BASE			0xc0000100
#define MSR_GS_BASE			0xc0000101
#define MSR_KERNEL_GS_BASE		0xc0000102
#define MSR_TSC_AUX			0xc0000103	/* RDTSCP's ECX */

/* AMD APM Vol. 2 7.9 and BKDGs: memory decoding and system configuration */
#define MSR_SYSCFG			0xc0010010
#define MSR_IORR_BASE0			0xc0010016	/* BASE0, MASK0, BASE1, MASK1 */
#define MSR_IORR_MASK0			0xc0010017
#define MSR_IORR_MASK1			0xc0010019
#define MSR_TOP_MEM			0xc001001a
#define MSR_TOP_MEM2			0xc001001d
#define MSR_SMM_ADDR			0xc0010112
#define MSR_SMM_MASK			0xc0010113

/* AMD APM Vol. 2 15.30: SVM-related MSRs */
#define MSR_VM_CR			0xc0010114
#define MSR_IGNNE			0xc0010115
#define MSR_SMM_CTL			0xc0010116
#define MSR_VM_HSAVE_PA			0xc0010117

#define VM_CR_LOCK			(1ull << 3)
#define VM_CR_SVMDIS			(1ull << 4)

/* AMD APM Vol. 2 3.1.7 / Intel SDM Vol. 3 2.2.1: EFER */
#define EFER_SCE			(1ull << 0)
#define EFER_LME			(1ull << 8)
#define EFER_LMA			(1ull << 10)
#define EFER_NXE			(1ull << 11)
#define EFER_SVME			(1ull << 12)
#define EFER_LMSLE			(1ull << 13)
#define EFER_FFXSR			(1ull << 14)
#define EFER_TCE			(1ull << 15)

#endif
