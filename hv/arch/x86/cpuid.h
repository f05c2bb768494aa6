/* CPUID leaves and feature bits used by hvtrace (Intel SDM Vol. 2A CPUID,
 * AMD APM Vol. 3 Appendix E). Definitions only. */
#ifndef HV_X86_CPUID_H
#define HV_X86_CPUID_H

/* Leaf 0: the vendor string in EBX, EDX, ECX (SDM Vol. 2A CPUID, APM
 * Vol. 3 E.3.1); the vendors whose processors have SVM rather than VMX */
#define CPUID_VENDOR_AMD_EBX		0x68747541	/* "Auth" "enti" "cAMD" */
#define CPUID_VENDOR_AMD_EDX		0x69746e65
#define CPUID_VENDOR_AMD_ECX		0x444d4163
#define CPUID_VENDOR_HYGON_EBX		0x6f677948	/* "Hygo" "nGen" "uine" */
#define CPUID_VENDOR_HYGON_EDX		0x6e65476e
#define CPUID_VENDOR_HYGON_ECX		0x656e6975

#define CPUID_1_ECX_DTES64		(1u << 2)
#define CPUID_1_ECX_VMX			(1u << 5)
#define CPUID_1_EDX_MTRR		(1u << 12)
#define CPUID_1_EDX_DS			(1u << 21)
#define CPUID_1_ECX_X2APIC		(1u << 21)
#define CPUID_1_ECX_PDCM		(1u << 15)	/* IA32_PERF_CAPABILITIES */
#define CPUID_1_ECX_XSAVE		(1u << 26)
#define CPUID_1_ECX_OSXSAVE		(1u << 27)	/* CR4.OSXSAVE, as set now */
#define CPUID_1_EDX_APIC		(1u << 9)	/* IA32_APIC_BASE.EN, as set now */
#define CPUID_7_ECX_PKU			(1u << 3)
#define CPUID_7_ECX_OSPKE		(1u << 4)	/* CR4.PKE, as set now */
#define CPUID_1_ECX_HYPERVISOR		(1u << 31)

#define CPUID_7_EBX_INTEL_PT		(1u << 25)

/* SDM Vol. 2A CPUID leaf 0AH, Vol. 3 20.2: the architectural PMU */
#define CPUID_A_EAX(version, nr_gp, width, ebx_len) \
	((unsigned)(version) | ((unsigned)(nr_gp) << 8) | ((unsigned)(width) << 16) | ((unsigned)(ebx_len) << 24))
#define CPUID_A_EDX(nr_fixed, width)	((unsigned)(nr_fixed) | ((unsigned)(width) << 5))
/* EBX: a set bit says the architectural event is NOT available */
#define CPUID_A_EBX_NO_CORE_CYCLES	(1u << 0)
#define CPUID_A_EBX_NO_INSNS		(1u << 1)
#define CPUID_A_EBX_NO_REF_CYCLES	(1u << 2)
#define CPUID_A_EBX_NO_LLC_REF		(1u << 3)
#define CPUID_A_EBX_NO_LLC_MISSES	(1u << 4)
#define CPUID_A_EBX_NO_BRANCHES		(1u << 5)
#define CPUID_A_EBX_NO_BRANCH_MISSES	(1u << 6)
#define CPUID_A_EBX_LEN			7

/* the features that make a CR4 bit settable (SDM Vol. 3 2.5) */
#define CPUID_1_ECX_SMX			(1u << 6)
#define CPUID_1_ECX_PCID		(1u << 17)
#define CPUID_7_EBX_FSGSBASE		(1u << 0)
#define CPUID_7_EBX_SMEP		(1u << 7)
#define CPUID_7_EBX_RTM			(1u << 11)
#define CPUID_7_EBX_SMAP		(1u << 20)
#define CPUID_7_ECX_UMIP		(1u << 2)
#define CPUID_7_ECX_CET_SS		(1u << 7)
#define CPUID_7_ECX_LA57		(1u << 16)
#define CPUID_7_1_EAX_LAM		(1u << 26)	/* leaf 7 subleaf 1: linear-address masking (CR3 bits 62:61) */
#define CPUID_7_ECX_BUS_LOCK_DETECT	(1u << 24)
#define CPUID_D_1_EAX_XSAVES		(1u << 3)
#define XSAVE_COMPONENT_LBR		15		/* Arch LBR state (SDM Vol. 1 13.5.13) */
#define CPUID_D_1_ECX_XSS_LBR		(1u << XSAVE_COMPONENT_LBR)	/* IA32_XSS may set it */
#define CPUID_7_ECX_PKS			(1u << 31)
#define CPUID_7_EDX_HYBRID		(1u << 15)	/* cores of more than one type */
#define CPUID_7_EDX_ARCH_LBR		(1u << 19)	/* architectural LBRs: leaf 1CH */

/* SDM Vol. 2A CPUID leaf 1CH: architectural LBR capabilities */
#define CPUID_1C_EAX_DEPTHS(eax)	((eax) & 0xff)	/* bit n: depth 8 * (n + 1) */
#define CPUID_1C_EAX_DEEP_CSTATE_RESET	(1u << 30)	/* entries may be cleared in deep C-states */
#define CPUID_1C_EAX_LIP		(1u << 31)	/* IPs are linear (CS.base + IP) */
#define CPUID_1C_EBX_CPL_FILTER		(1u << 0)	/* LBR_CTL.OS/USR */
#define CPUID_1C_EBX_BRANCH_FILTER	(1u << 1)	/* LBR_CTL bits 22:16 */
#define CPUID_1C_EBX_CALL_STACK		(1u << 2)
#define CPUID_1C_ECX_MISPREDICT		(1u << 0)
#define CPUID_1C_ECX_TIMED_LBR		(1u << 1)	/* LBR_INFO's cycle count */
#define CPUID_1C_ECX_BRANCH_TYPE	(1u << 2)	/* LBR_INFO's branch type */

#define CPUID_80000001_ECX_SVM		(1u << 2)
#define CPUID_80000001_ECX_PREFETCHW	(1u << 8)	/* PREFETCH/PREFETCHW (AMD: 3DNowPrefetch) */
#define CPUID_80000001_EDX_NX		(1u << 20)
#define CPUID_80000001_EDX_RDTSCP	(1u << 27)
#define CPUID_80000001_EDX_FFXSR	(1u << 25)
#define CPUID_80000001_EDX_PAGE1GB	(1u << 26)
#define CPUID_80000001_EDX_LM		(1u << 29)
#define CPUID_80000001_EDX_3DNOW	(1u << 31)
#define CPUID_80000001_ECX_TCE		(1u << 17)

/* AMD APM Vol. 3 E.4.9: leaf 0x8000000A, SVM features in EDX */
#define CPUID_8000000A_EDX_NP		(1u << 0)
#define CPUID_8000000A_EDX_NRIPS	(1u << 3)

#endif
