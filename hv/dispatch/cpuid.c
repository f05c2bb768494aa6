/* CPUID policy: what the guest sees. The hypervisor announces itself
 * (leaf 1 ECX[31], leaves 0x40000000+), hides virtualization (SVM, VMX)
 * so that the guest behaves as on a CPU without it, and offers the Debug
 * Store it virtualizes (leaf 1 EDX[21] DS, ECX[2] DTES64); Intel PT is
 * hidden (leaf 7 EBX[25], leaf 0x14). */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/paging.h"
#include "dispatch/cpuid.h"

void cpuid_policy(u32 leaf, u32 sub, struct cpuid_regs *r)
{
	if (leaf >= HVTRACE_CPUID_BASE && leaf <= HVTRACE_CPUID_BASE + 0xff) {
		r->eax = r->ebx = r->ecx = r->edx = 0;
		if (leaf == HVTRACE_CPUID_BASE) {
			r->eax = HVTRACE_CPUID_MAX;
			r->ebx = HVTRACE_CPUID_SIG_EBX;
			r->ecx = HVTRACE_CPUID_SIG_ECX;
			r->edx = HVTRACE_CPUID_SIG_EDX;
		} else if (leaf == HVTRACE_CPUID_VERSION) {
			r->eax = HVTRACE_ABI_VERSION;
			r->ebx = HVTRACE_FEAT_HYPERCALL;
		}
		return;
	}
	cpuid_count(leaf, sub, r);
	switch (leaf) {
	case 1:
		r->ecx |= CPUID_1_ECX_HYPERVISOR;
		r->ecx &= ~CPUID_1_ECX_VMX;
		/* the virtual Debug Store: DS with 64-bit records (hv/trace/ds.c) */
		r->edx |= CPUID_1_EDX_DS;
		r->ecx |= CPUID_1_ECX_DTES64;
		break;
	case 7:
		/* Intel PT writes its trace at physical addresses: not offered,
		 * its MSRs #GP (dispatch/msr.c) */
		if (sub == 0)
			r->ebx &= ~CPUID_7_EBX_INTEL_PT;
		break;
	case 0x14:
		r->eax = r->ebx = r->ecx = r->edx = 0;
		break;
	case 0x80000001:
		r->ecx &= ~CPUID_80000001_ECX_SVM;
		break;
	case 0x8000000a:
		/* AMD APM Vol. 3 E.4.9: reserved when SVM is absent */
		r->eax = r->ebx = r->ecx = r->edx = 0;
		break;
	}
}

/* The bits hardware derives from the processor's state at the moment of
 * the CPUID (SDM Vol. 2A CPUID): OSXSAVE from CR4.OSXSAVE, OSPKE from
 * CR4.PKE, the APIC bit from IA32_APIC_BASE.EN. Executed in root mode,
 * CPUID reports the hypervisor's CR4 and would not follow the guest's. */
void cpuid_apply_state(u32 leaf, u32 sub, u64 guest_cr4, bool apic_enabled, struct cpuid_regs *r)
{
	if (leaf == 1) {
		r->ecx &= ~CPUID_1_ECX_OSXSAVE;
		if ((r->ecx & CPUID_1_ECX_XSAVE) && (guest_cr4 & CR4_OSXSAVE))
			r->ecx |= CPUID_1_ECX_OSXSAVE;
		if (!apic_enabled)
			r->edx &= ~CPUID_1_EDX_APIC;
	} else if (leaf == 7 && sub == 0) {
		r->ecx &= ~CPUID_7_ECX_OSPKE;
		if ((r->ecx & CPUID_7_ECX_PKU) && (guest_cr4 & CR4_PKE))
			r->ecx |= CPUID_7_ECX_OSPKE;
	}
}

/* The CR4 bits a MOV to CR4 may set on a processor with these CPUID leaf
 * 1 ECX, leaf 7.0 EBX and ECX (SDM Vol. 3 2.5, Vol. 2A CPUID; APM Vol. 2
 * 3.1.3): the rest are reserved, #GP. VMXE is never one (the guest's CPU
 * has no VMX). */
u64 cr4_valid_bits(u32 ecx1, u32 ebx7, u32 ecx7)
{
	u64 ok = CR4_BASE;
	if (ecx7 & (1u << 2))
		ok |= CR4_UMIP;
	if (ecx7 & (1u << 16))
		ok |= CR4_LA57;
	if (ecx1 & (1u << 6))
		ok |= CR4_SMXE;
	if (ebx7 & (1u << 0))
		ok |= CR4_FSGSBASE;
	if (ecx1 & (1u << 17))
		ok |= CR4_PCIDE;
	if (ecx1 & CPUID_1_ECX_XSAVE)
		ok |= CR4_OSXSAVE;
	if (ebx7 & (1u << 7))
		ok |= CR4_SMEP;
	if (ebx7 & (1u << 20))
		ok |= CR4_SMAP;
	if (ecx7 & CPUID_7_ECX_PKU)
		ok |= CR4_PKE;
	if (ecx7 & (1u << 7))
		ok |= CR4_CET;
	if (ecx7 & (1u << 31))
		ok |= CR4_PKS;
	return ok;
}

/* ... for this processor, as the guest's CPUID shows it */
u64 cr4_valid_bits_here(void)
{
	struct cpuid_regs r0, r1, r7 = { 0 };
	cpuid_count(0, 0, &r0);
	cpuid_policy(1, 0, &r1);
	if (r0.eax >= 7)
		cpuid_policy(7, 0, &r7);
	return cr4_valid_bits(r1.ecx, r7.ebx, r7.ecx);
}
