/* This processor's local APIC, located and mapped by the hypervisor itself
 * (base/lapic.c). Root mode. */
#ifndef HV_BASE_LAPIC_H
#define HV_BASE_LAPIC_H
#include "arch/x86/types.h"
/* The APIC is enabled (IA32_APIC_BASE.EN as the hardware has it). */
bool lapic_enabled(void);
u32 lapic_read(u32 reg);
void lapic_write(u32 reg, u32 val);
/* delivery: LVT_DM_FIXED (with `vector`) or LVT_DM_NMI */
void lapic_self_ipi(u32 delivery, u8 vector);
/* An interrupt command as written: lo = the ICR's low half, dest = the
 * destination (xAPIC ID, or x2APIC ID in x2APIC mode). */
void lapic_send_icr(u32 lo, u32 dest);
/* An NMI to the processor with this APIC ID (a kick, dispatch/mp.c). */
void lapic_send_nmi(u32 apic_id);
/* A write to an xAPIC register at its page offset, as the guest made it. */
void lapic_mmio_write(u32 reg, u32 val);
/* The APIC is in x2APIC mode (its MMIO page is not decoded). */
bool lapic_x2apic_mode(void);
/* Whether the local APIC would now present an interrupt to the processor, were its
 * interrupts enabled: a vector requested in the IRR whose priority class is above the
 * processor-priority class in the PPR (SDM Vol. 3 11.8.3.1, 11.8.4). False with the APIC disabled. What it cannot see: an NMI, and an ExtINT
 * from the 8259 through LINT0 (neither is in the IRR). Root mode; reads IRR7 down to the
 * first word with a bit set, then the PPR. */
bool lapic_irq_pending(void);
/* The highest vector in service (ISR7 down to ISR0, SDM Vol. 3 11.8.4); -1: none, or the
 * APIC disabled. Root mode. */
int lapic_isr_highest(void);
/* Its decision: `irr`, the IRR's word `word` (vectors 32 * word ... + 31), the highest one
 * with a bit set; `ppr`, the PPR. Pure (tests/unit/test_icr.c). */
static inline bool lapic_irr_above_ppr(u32 word, u32 irr, u32 ppr)
{
	if (!irr)
		return false;
	u32 vector = 32 * word + 31 - (u32)__builtin_clz(irr);
	return (vector >> 4) > ((ppr >> 4) & 0xf);
}
#endif
