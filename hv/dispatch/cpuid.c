/* CPUID policy: what the guest sees. The hypervisor announces itself
 * (leaf 1 ECX[31], leaves 0x40000000+), hides virtualization (SVM, VMX)
 * so that the guest behaves as on a CPU without it, and offers the Debug
 * Store it virtualizes (leaf 1 EDX[21] DS, ECX[2] DTES64) and, to a guest
 * that sees an Intel vendor, the virtual PMU (leaf 0xA, and PDCM, leaf 1
 * ECX[15], for its IA32_PERF_CAPABILITIES); Intel PT is hidden (leaf 7
 * EBX[25], leaf 0x14), and so are architectural LBRs (leaf 7 EDX[19],
 * leaf 0x1C, XSAVE component 15). The same whichever backend runs and
 * whichever vendor the processor names. Also what the processor's CPUID
 * decides at start-up: the backend, by capability. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/paging.h"
#include "dispatch/cpuid.h"
#include "trace/pmu.h"

/* Leaf 0AH, the architectural PMU (SDM Vol. 2A CPUID, Vol. 3 20.2): the
 * virtual one of hv/trace/pmu.c for a guest that sees an Intel (or any
 * non-AMD) vendor; zeros, as AMD reserves the leaf, for an AMD or Hygon
 * guest. EBX marks the events that count nothing here (docs/pmu.md). */
void cpuid_pmu_leaf(bool vendor_amd, struct cpuid_regs *r)
{
	r->eax = r->ebx = r->ecx = r->edx = 0;
	if (vendor_amd)
		return;
	r->eax = CPUID_A_EAX(PMU_VERSION, PMU_NR_GP, PMU_WIDTH, CPUID_A_EBX_LEN);
	r->ebx = CPUID_A_EBX_NO_LLC_REF | CPUID_A_EBX_NO_LLC_MISSES | CPUID_A_EBX_NO_BRANCH_MISSES;
	r->edx = CPUID_A_EDX(PMU_NR_FIXED, PMU_WIDTH);
}

/* Does the processor's leaf 0 name AMD (or Hygon)? The guest sees that
 * vendor, and the PMU is offered by it (trace_vcpu_init: hv.vendor_amd). */
static bool cpuid_leaf0_amd(void)
{
	struct cpuid_ident id = { 0 };
	cpuid_count(0, 0, &id.l0);
	return cpuid_vendor_amd(&id);
}

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
	cpuid_hide(leaf, sub, r);
	/* IA32_PERF_CAPABILITIES (full-width writes, adaptive PEBS) and leaf
	 * 0AH: the virtual PMU's, for a guest that has it (not AMD's) */
	if (leaf == 1 && !cpuid_leaf0_amd())
		r->ecx |= CPUID_1_ECX_PDCM;
	if (leaf == 0xa)
		cpuid_pmu_leaf(cpuid_leaf0_amd(), r);
}

/* What the processor's CPUID says that the guest must not see (pure: the
 * hardware's answer in, the guest's out; tests/unit/test_cpuid.c). */
void cpuid_hide(u32 leaf, u32 sub, struct cpuid_regs *r)
{
	switch (leaf) {
	case 1:
		r->ecx |= CPUID_1_ECX_HYPERVISOR;
		r->ecx &= ~CPUID_1_ECX_VMX;
		/* the virtual Debug Store: DS with 64-bit records (hv/trace/ds.c) */
		r->edx |= CPUID_1_EDX_DS;
		r->ecx |= CPUID_1_ECX_DTES64;
		/* the host's IA32_PERF_CAPABILITIES: not the guest's (the
		 * virtual PMU's is added back for a guest that has one) */
		r->ecx &= ~CPUID_1_ECX_PDCM;
		break;
	case 7:
		/* Intel PT writes its trace at physical addresses: not offered,
		 * its MSRs #GP (dispatch/msr.c) */
		if (sub == 0)
			r->ebx &= ~CPUID_7_EBX_INTEL_PT;
		/* Architectural LBRs record in root mode too once the guest
		 * enables them (IA32_LBR_CTL is not switched at exits): not
		 * offered, their MSRs #GP, IA32_XSS bit 15 refused
		 * (docs/security.md attack 29) */
		if (sub == 0)
			r->edx &= ~CPUID_7_EDX_ARCH_LBR;
		break;
	case 0xd:
		/* the XSAVE state component of the LBRs (15): not supported */
		if (sub == 1)
			r->ecx &= ~CPUID_D_1_ECX_XSS_LBR;
		else if (sub == XSAVE_COMPONENT_LBR)
			r->eax = r->ebx = r->ecx = r->edx = 0;
		break;
	case 0x14:
	case 0x1c:
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
	const struct { u32 regs, bit; u64 cr4; } map[] = {
		{ ecx1, CPUID_1_ECX_SMX, CR4_SMXE },	   { ecx1, CPUID_1_ECX_PCID, CR4_PCIDE },
		{ ecx1, CPUID_1_ECX_XSAVE, CR4_OSXSAVE },  { ebx7, CPUID_7_EBX_FSGSBASE, CR4_FSGSBASE },
		{ ebx7, CPUID_7_EBX_SMEP, CR4_SMEP },	   { ebx7, CPUID_7_EBX_SMAP, CR4_SMAP },
		{ ecx7, CPUID_7_ECX_UMIP, CR4_UMIP },	   { ecx7, CPUID_7_ECX_LA57, CR4_LA57 },
		{ ecx7, CPUID_7_ECX_PKU, CR4_PKE },	   { ecx7, CPUID_7_ECX_CET_SS, CR4_CET },
		{ ecx7, CPUID_7_ECX_PKS, CR4_PKS },
	};
	u64 ok = CR4_BASE;
	for (u32 i = 0; i < ARRAY_SIZE(map); i++)
		if (map[i].regs & map[i].bit)
			ok |= map[i].cr4;
	return ok;
}

/* ... for this machine, as the guest's CPUID shows it: worked out at the
 * first MOV to CR4, not at each one (Linux writes CR4 for every global TLB
 * flush without INVPCID). The processors of one machine offer the same
 * features, as an SMP operating system assumes too. */
u64 cr4_valid_bits_here(void)
{
	static u64 known;
	u64 ok = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (ok)
		return ok;
	struct cpuid_regs r0, r1, r7 = { 0 };
	cpuid_count(0, 0, &r0);
	cpuid_policy(1, 0, &r1);
	if (r0.eax >= 7)
		cpuid_policy(7, 0, &r7);
	ok = cr4_valid_bits(r1.ecx, r7.ebx, r7.ecx);
	__atomic_store_n(&known, ok, __ATOMIC_RELAXED);
	return ok;
}

void cpuid_ident_read(struct cpuid_ident *id)
{
	*id = (struct cpuid_ident){ 0 };
	cpuid_count(0, 0, &id->l0);
	if (id->l0.eax >= 1)
		cpuid_count(1, 0, &id->l1);
	cpuid_count(0x80000000, 0, &id->x0);
	/* Intel SDM Vol. 2A CPUID: a leaf above the maximum returns another
	 * leaf's data, not zeros */
	if (id->x0.eax >= 0x80000001 && id->x0.eax <= 0x8000ffff)
		cpuid_count(0x80000001, 0, &id->x1);
}

bool cpuid_vendor_amd(const struct cpuid_ident *id)
{
	return cpuid_l0_amd(&id->l0);
}

/*
 * The backend by what the processor can do, not by its vendor string
 * (issue 14): SVM where CPUID 0x80000001 ECX[2] is set, VMX where CPUID 1
 * ECX[5] is. An emulator told `-cpu max,vendor=GenuineIntel` still has
 * SVM, and its guest then sees an Intel processor. A processor with both
 * (none is made; an emulator can be configured so) gets its vendor's own
 * backend, SVM for AMD and Hygon, VMX for any other, so that the guest's
 * hypercall instruction exits as it is (cpuid_foreign_hypercall).
 * Leaves past the processor's maximum count as absent.
 */
u32 cpuid_backend(const struct cpuid_ident *id)
{
	bool svm = id->x0.eax >= 0x80000001 && id->x0.eax <= 0x8000ffff &&
		   (id->x1.ecx & CPUID_80000001_ECX_SVM);
	bool vmx = id->l0.eax >= 1 && (id->l1.ecx & CPUID_1_ECX_VMX);
	if (svm && vmx)
		return cpuid_vendor_amd(id) ? HVTRACE_BACKEND_SVM : HVTRACE_BACKEND_VMX;
	return svm ? HVTRACE_BACKEND_SVM : vmx ? HVTRACE_BACKEND_VMX : HVTRACE_BACKEND_NONE;
}

/*
 * The guest uses its vendor's hypercall instruction (docs/hypercalls.md):
 * VMMCALL when CPUID says AMD or Hygon, VMCALL otherwise, whichever
 * backend runs. VMMCALL exits under SVM and VMCALL under VMX; the other
 * one is #UD there (APM Vol. 3 VMMCALL: a processor without it; SDM Vol.
 * 2B VMCALL outside VMX operation), and the backend intercepts #UD to
 * take it as the hypercall, only when the two differ.
 */
u8 cpuid_foreign_hypercall(u32 backend, bool vendor_amd)
{
	if (backend == HVTRACE_BACKEND_SVM && !vendor_amd)
		return INSN_0F01_VMCALL;
	if (backend == HVTRACE_BACKEND_VMX && vendor_amd)
		return INSN_0F01_VMMCALL;
	return 0;
}
