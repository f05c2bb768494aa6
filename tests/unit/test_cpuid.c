/* The backend chosen by capability and the hypercall instruction it must
 * take from #UD (hv/dispatch/cpuid.c cpuid_backend, issue 14); CPUID bits
 * that follow the guest's state at the moment of the CPUID
 * (hv/dispatch/cpuid.c cpuid_apply_state): OSXSAVE, OSPKE, the APIC bit;
 * everything else untouched (issue #15: OSXSAVE did not follow the guest's
 * CR4 under SVM, where CPUID runs in root mode with the hypervisor's CR4). */
#include <string.h>
#include "unit.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/paging.h"
#include "dispatch/cpuid.h"
#include "hvtrace/abi.h"

/* A processor as CPUID describes it: its vendor string (EBX, EDX, ECX),
 * leaf 1 ECX, the highest extended leaf and leaf 0x80000001 ECX. */
static struct cpuid_ident ident(const char *vendor, u32 ecx1, u32 max_ext, u32 ecx_ext1)
{
	struct cpuid_ident id = { .l0.eax = 0xd, .x0.eax = max_ext };
	memcpy(&id.l0.ebx, vendor, 4);
	memcpy(&id.l0.edx, vendor + 4, 4);
	memcpy(&id.l0.ecx, vendor + 8, 4);
	id.l1.ecx = ecx1;
	id.x1.ecx = ecx_ext1;
	return id;
}

/* The backend by capability (issue 14), not by vendor; the hypercall
 * instruction the backend must take from #UD. */
static void test_backend_choice(void)
{
	const u32 svm = CPUID_80000001_ECX_SVM, vmx = CPUID_1_ECX_VMX, ext = 0x80000021;
	struct cpuid_ident id;

	id = ident("AuthenticAMD", 0, ext, svm);
	CHECK(cpuid_vendor_amd(&id) && cpuid_backend(&id) == HVTRACE_BACKEND_SVM, "AMD with SVM");
	id = ident("HygonGenuine", 0, ext, svm);
	CHECK(cpuid_vendor_amd(&id) && cpuid_backend(&id) == HVTRACE_BACKEND_SVM, "Hygon with SVM");
	/* QEMU -cpu max,vendor=GenuineIntel: SVM, the guest sees Intel */
	id = ident("GenuineIntel", 0, ext, svm);
	CHECK(!cpuid_vendor_amd(&id) && cpuid_backend(&id) == HVTRACE_BACKEND_SVM, "Intel vendor with SVM");
	id = ident("GenuineIntel", vmx, 0x80000008, 0);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_VMX, "Intel with VMX");
	id = ident("AuthenticAMD", vmx, ext, 0);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_VMX, "AMD vendor with VMX");
	id = ident("CentaurHauls", vmx, 0x80000008, 0);
	CHECK(!cpuid_vendor_amd(&id) && cpuid_backend(&id) == HVTRACE_BACKEND_VMX, "another vendor with VMX");
	/* both: the vendor's own */
	id = ident("AuthenticAMD", vmx, ext, svm);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_SVM, "both, AMD: SVM");
	id = ident("GenuineIntel", vmx, ext, svm);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_VMX, "both, Intel: VMX");
	/* neither, whatever the vendor */
	id = ident("AuthenticAMD", 0, ext, 0);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_NONE, "AMD without SVM");
	id = ident("GenuineIntel", ~vmx, ext, ~svm);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_NONE, "Intel without VMX, every other bit set");
	/* leaves past the maximum do not count */
	id = ident("AuthenticAMD", 0, 0x80000000, svm);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_NONE, "SVM bit past the highest extended leaf");
	id = ident("AuthenticAMD", 0, 0x12345678, svm);
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_NONE, "no extended leaves (EAX not 0x8000xxxx)");
	id = ident("GenuineIntel", vmx, 0, 0);
	id.l0.eax = 0;
	CHECK(cpuid_backend(&id) == HVTRACE_BACKEND_NONE, "VMX bit without leaf 1");
	/* the wrong half of a vendor string is another vendor */
	id = ident("AuthenticAMD", 0, ext, svm);
	id.l0.ecx = 0;
	CHECK(!cpuid_vendor_amd(&id), "AuthenticAMD's EBX alone is not AMD");

	CHECK(cpuid_foreign_hypercall(HVTRACE_BACKEND_SVM, false) == INSN_0F01_VMCALL, "Intel guest under SVM: VMCALL");
	CHECK(cpuid_foreign_hypercall(HVTRACE_BACKEND_SVM, true) == 0, "AMD guest under SVM: none");
	CHECK(cpuid_foreign_hypercall(HVTRACE_BACKEND_VMX, true) == INSN_0F01_VMMCALL, "AMD guest under VMX: VMMCALL");
	CHECK(cpuid_foreign_hypercall(HVTRACE_BACKEND_VMX, false) == 0, "Intel guest under VMX: none");
	CHECK(cpuid_foreign_hypercall(HVTRACE_BACKEND_NONE, false) == 0, "no backend: none");
}

int main(void)
{
	struct cpuid_regs r;

	/* leaf 0AH: the virtual PMU, version 2, for a non-AMD vendor */
	cpuid_pmu_leaf(false, &r);
	CHECK((r.eax & 0xff) == 2 && ((r.eax >> 8) & 0xff) == 4 && ((r.eax >> 16) & 0xff) == 48 &&
	      (r.eax >> 24) == 7, "0AH EAX %x", r.eax);
	CHECK(r.ebx == (CPUID_A_EBX_NO_LLC_REF | CPUID_A_EBX_NO_LLC_MISSES | CPUID_A_EBX_NO_BRANCH_MISSES),
	      "0AH EBX: cycles, instructions, reference cycles, branches available: %x", r.ebx);
	CHECK(r.ecx == 0 && (r.edx & 0x1f) == 3 && ((r.edx >> 5) & 0xff) == 48, "0AH EDX %x", r.edx);
	cpuid_pmu_leaf(true, &r);
	CHECK(!r.eax && !r.ebx && !r.ecx && !r.edx, "0AH zeros for AMD");

	/* hidden from a processor that has everything (docs/security.md):
	 * Intel PT, architectural LBRs (attack 28), SVM, VMX, PDCM */
	const struct cpuid_regs every = { ~0u, ~0u, ~0u, ~0u };
	r = every;
	cpuid_hide(7, 0, &r);
	CHECK(!(r.edx & CPUID_7_EDX_ARCH_LBR) && !(r.ebx & CPUID_7_EBX_INTEL_PT) &&
	      r.edx == (~0u & ~CPUID_7_EDX_ARCH_LBR), "leaf 7: no Arch LBR, no PT, the rest kept: %x %x", r.ebx, r.edx);
	r = every;
	cpuid_hide(7, 1, &r);
	CHECK(r.eax == ~0u && r.ebx == ~0u && r.ecx == ~0u && r.edx == ~0u, "leaf 7.1 untouched");
	r = every;
	cpuid_hide(0x1c, 0, &r);
	CHECK(!r.eax && !r.ebx && !r.ecx && !r.edx, "leaf 1CH (Arch LBR) zeros");
	r = every;
	cpuid_hide(0xd, 1, &r);
	CHECK(r.ecx == (~0u & ~CPUID_D_1_ECX_XSS_LBR) && r.eax == ~0u, "leaf 0DH.1: IA32_XSS cannot hold the LBR component: %x", r.ecx);
	r = every;
	cpuid_hide(0xd, XSAVE_COMPONENT_LBR, &r);
	CHECK(!r.eax && !r.ebx && !r.ecx && !r.edx, "leaf 0DH.15 (the LBR component's size) zeros");
	r = every;
	cpuid_hide(0xd, 2, &r);
	CHECK(r.eax == ~0u, "leaf 0DH.2 untouched");
	r = every;
	cpuid_hide(0x14, 0, &r);
	CHECK(!r.eax && !r.ebx && !r.ecx && !r.edx, "leaf 14H (PT) zeros");
	r = every;
	cpuid_hide(1, 0, &r);
	CHECK(!(r.ecx & CPUID_1_ECX_VMX) && !(r.ecx & CPUID_1_ECX_PDCM), "leaf 1: no VMX, no PDCM");

	/* XSAVE present: OSXSAVE is CR4.OSXSAVE, whatever root mode said */
	r = (struct cpuid_regs){ .ecx = CPUID_1_ECX_XSAVE | CPUID_1_ECX_OSXSAVE, .edx = CPUID_1_EDX_APIC };
	cpuid_apply_state(1, 0, 0, true, &r);
	CHECK(!(r.ecx & CPUID_1_ECX_OSXSAVE) && (r.ecx & CPUID_1_ECX_XSAVE), "OSXSAVE clear with CR4.OSXSAVE clear: %x", r.ecx);
	r = (struct cpuid_regs){ .ecx = CPUID_1_ECX_XSAVE, .edx = CPUID_1_EDX_APIC };
	cpuid_apply_state(1, 0, CR4_OSXSAVE, true, &r);
	CHECK(r.ecx & CPUID_1_ECX_OSXSAVE, "OSXSAVE set with CR4.OSXSAVE set: %x", r.ecx);
	/* no XSAVE: never OSXSAVE */
	r = (struct cpuid_regs){ .ecx = 0 };
	cpuid_apply_state(1, 0, CR4_OSXSAVE, true, &r);
	CHECK(!(r.ecx & CPUID_1_ECX_OSXSAVE), "no OSXSAVE without XSAVE");
	/* the APIC bit follows IA32_APIC_BASE.EN, never appears from nothing */
	r = (struct cpuid_regs){ .edx = CPUID_1_EDX_APIC | 1 };
	cpuid_apply_state(1, 0, 0, false, &r);
	CHECK(r.edx == 1, "APIC bit clear with the APIC disabled: %x", r.edx);
	r = (struct cpuid_regs){ .edx = 1 };
	cpuid_apply_state(1, 0, 0, true, &r);
	CHECK(r.edx == 1, "APIC bit not invented: %x", r.edx);
	/* leaf 7.0: OSPKE is CR4.PKE where PKU exists */
	r = (struct cpuid_regs){ .ecx = CPUID_7_ECX_PKU | CPUID_7_ECX_OSPKE, .ebx = 0x1234 };
	cpuid_apply_state(7, 0, 0, true, &r);
	CHECK(r.ecx == CPUID_7_ECX_PKU && r.ebx == 0x1234, "OSPKE clear with CR4.PKE clear: %x", r.ecx);
	r = (struct cpuid_regs){ .ecx = CPUID_7_ECX_PKU };
	cpuid_apply_state(7, 0, CR4_PKE, true, &r);
	CHECK(r.ecx & CPUID_7_ECX_OSPKE, "OSPKE set with CR4.PKE set");
	r = (struct cpuid_regs){ .ecx = 0 };
	cpuid_apply_state(7, 0, CR4_PKE, true, &r);
	CHECK(!r.ecx, "no OSPKE without PKU");
	/* other leaves and subleaves untouched */
	r = (struct cpuid_regs){ .eax = 1, .ebx = 2, .ecx = ~0u, .edx = ~0u };
	cpuid_apply_state(7, 1, 0, false, &r);
	CHECK(r.ecx == ~0u && r.edx == ~0u, "leaf 7.1 untouched");
	cpuid_apply_state(0x80000001, 0, 0, false, &r);
	CHECK(r.ecx == ~0u && r.edx == ~0u && r.eax == 1 && r.ebx == 2, "leaf 0x80000001 untouched");

	/* CR4's settable bits from CPUID: the base set always, each feature's
	 * bit only with its CPUID bit, VMXE never, nothing at 32 and up */
	u64 none = cr4_valid_bits(0, 0, 0);
	CHECK(none == CR4_BASE, "no features: %llx", (unsigned long long)none);
	u64 all = cr4_valid_bits(~0u, ~0u, ~0u);
	CHECK(!(all & CR4_VMXE) && !(all >> 32) && (all & CR4_OSXSAVE) && (all & CR4_SMEP) &&
		      (all & CR4_SMAP) && (all & CR4_PKE) && (all & CR4_LA57) && (all & CR4_PCIDE) &&
		      (all & CR4_FSGSBASE) && (all & CR4_UMIP) && !(all & (1ull << 15)),
	      "all features: %llx", (unsigned long long)all);
	CHECK(cr4_valid_bits(CPUID_1_ECX_XSAVE, 0, 0) == (CR4_BASE | CR4_OSXSAVE), "XSAVE alone");
	CHECK(cr4_valid_bits(0, 1u << 7, 0) == (CR4_BASE | CR4_SMEP), "SMEP alone");
	CHECK(cr4_valid_bits(0, 0, CPUID_7_ECX_PKU) == (CR4_BASE | CR4_PKE), "PKU alone");
	test_backend_choice();
	return unit_done("test_cpuid");
}
