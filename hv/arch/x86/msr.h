/* x86 model-specific register numbers and bits, named as in the Intel SDM
 * Vol. 4 and the AMD APM Vol. 2. Definitions only. */
#ifndef HV_X86_MSR_H
#define HV_X86_MSR_H

#define MSR_IA32_APICBASE		0x0000001b
#define MSR_IA32_SYSENTER_CS		0x00000174
#define MSR_IA32_SYSENTER_ESP		0x00000175
#define MSR_IA32_SYSENTER_EIP		0x00000176
#define MSR_IA32_FEATURE_CONTROL	0x0000003a
#define MSR_IA32_MISC_ENABLE		0x000001a0
#define MSR_IA32_DEBUGCTL		0x000001d9
#define MSR_IA32_PAT			0x00000277
#define MSR_IA32_PERF_GLOBAL_STATUS	0x0000038e
#define MSR_IA32_PERF_GLOBAL_CTRL	0x0000038f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL	0x00000390
#define MSR_IA32_DS_AREA		0x00000600
#define MSR_X2APIC_ICR			0x00000830
#define MSR_X2APIC_LVTPC		0x00000834

/* SDM Vol. 4 Table 2-2 / Vol. 3 17.4.1: IA32_DEBUGCTL */
#define DEBUGCTL_LBR			(1ull << 0)
#define DEBUGCTL_BTF			(1ull << 1)
#define DEBUGCTL_TR			(1ull << 6)
#define DEBUGCTL_BTS			(1ull << 7)
#define DEBUGCTL_BTINT			(1ull << 8)
#define DEBUGCTL_BTS_OFF_OS		(1ull << 9)
#define DEBUGCTL_BTS_OFF_USR		(1ull << 10)
#define DEBUGCTL_FREEZE_LBRS_ON_PMI	(1ull << 11)

/* SDM Vol. 4 Table 2-2: IA32_MISC_ENABLE */
#define MISC_ENABLE_BTS_UNAVAIL		(1ull << 11)
#define MISC_ENABLE_PEBS_UNAVAIL	(1ull << 12)

/* SDM Vol. 3 20.2.4: IA32_PERF_GLOBAL_STATUS, DS buffer overflow */
#define PERF_GLOBAL_STATUS_OVF_BUFFER	(1ull << 62)

#define APICBASE_EXTD			(1ull << 10)	/* x2APIC mode */
#define APICBASE_ADDR_MASK		0x000ffffffffff000ull

#define MSR_EFER			0xc0000080
#define MSR_STAR			0xc0000081
#define MSR_LSTAR			0xc0000082
#define MSR_CSTAR			0xc0000083
#define MSR_SFMASK			0xc0000084
#define MSR_FS_BASE			0xc0000100
#define MSR_GS_BASE			0xc0000101
#define MSR_KERNEL_GS_BASE		0xc0000102

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
