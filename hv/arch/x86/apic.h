/* Local APIC registers (Intel SDM Vol. 3 11.4 "Local APIC", 11.12 "x2APIC"):
 * xAPIC MMIO offsets; the x2APIC MSR of a register is 0x800 + offset / 16.
 * Macros only: the guest test programs and assembly use them too. */
#ifndef HV_X86_APIC_H
#define HV_X86_APIC_H

#define APIC_BASE_DEFAULT 0xfee00000u	/* 11.4.1: where reset puts the xAPIC */

#define APIC_ID		0x020
#define APIC_ID_XAPIC_MASK 0xff000000u	/* the xAPIC ID, as ICR_HI's destination wants it */
#define APIC_EOI	0x0b0
#define APIC_ICR_LO	0x300
#define APIC_ICR_HI	0x310
#define APIC_LVTPC	0x340
#define X2APIC_MSR(reg)	(0x800u + ((reg) >> 4))
#define X2APIC_MSR_FIRST 0x800u
#define X2APIC_MSR_LAST	 0x8ffu

#define LVT_VECTOR_MASK	0xffu
#define LVT_DM_MASK	(7u << 8)
#define LVT_DM_FIXED	(0u << 8)
#define LVT_DM_NMI	(4u << 8)
#define LVT_MASKED	(1u << 16)

#define ICR_LEVEL_ASSERT	(1u << 14)
#define ICR_DEST_SELF		(1u << 18)	/* destination shorthand 01 */

#endif
