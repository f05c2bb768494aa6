/* CPUID policy (see cpuid.c). */
#ifndef HV_DISPATCH_CPUID_H
#define HV_DISPATCH_CPUID_H
#include "arch/x86/cpu.h"
void cpuid_policy(u32 leaf, u32 sub, struct cpuid_regs *r);
/* The bits that follow the guest's state now: CR4.OSXSAVE, CR4.PKE,
 * IA32_APIC_BASE.EN (host-tested: tests/unit/test_cpuid.c). */
void cpuid_apply_state(u32 leaf, u32 sub, u64 guest_cr4, bool apic_enabled, struct cpuid_regs *r);
/* CR4's settable bits for CPUID leaf 1 ECX and leaf 7.0 EBX/ECX (host-
 * tested), and for this processor as the guest sees it. */
u64 cr4_valid_bits(u32 ecx1, u32 ebx7, u32 ecx7);
u64 cr4_valid_bits_here(void);
#endif
