/* CPUID policy (see cpuid.c). */
#ifndef HV_DISPATCH_CPUID_H
#define HV_DISPATCH_CPUID_H
#include "arch/x86/cpu.h"
void cpuid_policy(u32 leaf, u32 sub, struct cpuid_regs *r);
void cpuid_hide(u32 leaf, u32 sub, struct cpuid_regs *r);
/* The bits that follow the guest's state now: CR4.OSXSAVE, CR4.PKE,
 * IA32_APIC_BASE.EN (host-tested: tests/unit/test_cpuid.c). */
void cpuid_apply_state(u32 leaf, u32 sub, u64 guest_cr4, bool apic_enabled, struct cpuid_regs *r);
/* CR4's settable bits for CPUID leaf 1 ECX and leaf 7.0 EBX/ECX (host-
 * tested), and for this processor as the guest sees it. */
u64 cr4_valid_bits(u32 ecx1, u32 ebx7, u32 ecx7);
u64 cr4_valid_bits_here(void);

/* The CPUID leaves that choose the backend: 0 (the vendor string), 1,
 * 0x80000000 and 0x80000001, as the processor returns them. */
struct cpuid_ident {
	struct cpuid_regs l0, l1, x0, x1;
};
void cpuid_ident_read(struct cpuid_ident *id);
/* AuthenticAMD or HygonGenuine (the vendors whose guests use VMMCALL) */
bool cpuid_vendor_amd(const struct cpuid_ident *id);
/* CPUID leaf 0AH as the guest sees it (the virtual PMU; zeros for AMD) */
void cpuid_pmu_leaf(bool vendor_amd, struct cpuid_regs *r);
/* enum hvtrace_backend for the processor, by capability (host-tested) */
u32 cpuid_backend(const struct cpuid_ident *id);
/* The ModRM byte (INSN_0F01_*) of the hypercall instruction the guest of
 * this backend uses but the processor refuses with #UD; 0 when the
 * guest's is the backend's own (host-tested). */
u8 cpuid_foreign_hypercall(u32 backend, bool vendor_amd);
#endif
