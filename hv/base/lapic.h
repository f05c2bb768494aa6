/* This processor's local APIC, located and mapped by the hypervisor itself
 * (base/lapic.c). Root mode. */
#ifndef HV_BASE_LAPIC_H
#define HV_BASE_LAPIC_H
#include "base/types.h"
/* The APIC is enabled (IA32_APIC_BASE.EN as the hardware has it). */
bool lapic_enabled(void);
u32 lapic_read(u32 reg);
void lapic_write(u32 reg, u32 val);
/* delivery: LVT_DM_FIXED (with `vector`) or LVT_DM_NMI */
void lapic_self_ipi(u32 delivery, u8 vector);
#endif
