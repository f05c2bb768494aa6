/* CPUID policy (see cpuid.c). */
#ifndef HV_DISPATCH_CPUID_H
#define HV_DISPATCH_CPUID_H
#include "arch/x86/cpu.h"
void cpuid_policy(u32 leaf, u32 sub, struct cpuid_regs *r);
#endif
