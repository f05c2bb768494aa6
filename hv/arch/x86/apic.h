/* Local APIC registers (Intel SDM Vol. 3 11.4 "Local APIC", 11.12 "x2APIC"):
 * xAPIC MMIO offsets; the x2APIC MSR of a register is 0x800 + offset / 16.
 * Macros only: the guest test programs and assembly use them too. */
#ifndef HV_X86_APIC_H
#define HV_X86_APIC_H

#define APIC_BASE_DEFAULT 0xfee00000u	/* 11.4.1: where reset puts the xAPIC */

#define APIC_ID		0x020
#define APIC_ID_XAPIC_MASK 0xff000000u	/* the xAPIC ID, as ICR_HI's destination wants it */
#define APIC_TPR	0x080
#define APIC_PPR	0x0a0	/* processor priority (11.8.3.1), read-only */
#define APIC_EOI	0x0b0
#define APIC_LDR	0x0d0	/* x2APIC: read-only */
#define APIC_DFR	0x0e0	/* xAPIC only */
#define APIC_SVR	0x0f0
#define APIC_ISR0	0x100	/* ISR bits 0-31; ISR1-7 at 0x110 ... 0x170 */
#define APIC_IRR0	0x200	/* IRR bits 0-31; IRR1-7 at 0x210 ... 0x270 */
#define APIC_ESR	0x280
#define APIC_ICR_LO	0x300
#define APIC_ICR_HI	0x310
#define APIC_LVTT	0x320
#define APIC_LVTPC	0x340
#define APIC_LVT_LINT0	0x350
#define APIC_LVT_LINT1	0x360
#define APIC_LVT_ERROR	0x370
#define APIC_TMICT	0x380	/* timer initial count */
#define APIC_TDCR	0x3e0	/* timer divide configuration */
#define APIC_SVR_ENABLE	(1u << 8)
#define APIC_SVR_RESET	0xffu	/* 11.9: software-disabled, spurious vector 0xff */
#define X2APIC_MSR(reg)	(0x800u + ((reg) >> 4))
#define X2APIC_MSR_FIRST 0x800u
#define X2APIC_MSR_LAST	 0x8ffu

#define LVT_VECTOR_MASK	0xffu
#define LVT_DM_MASK	(7u << 8)
#define LVT_DM_FIXED	(0u << 8)
#define LVT_DM_NMI	(4u << 8)
#define LVT_DM_EXTINT	(7u << 8)
#define LVT_MASKED	(1u << 16)
#define LVT_TIMER_PERIODIC (1u << 17)	/* LVT timer mode 01 (11.5.4, Figure 11-8) */

/* Interrupt command register (11.6.1, Figure 11-12; x2APIC: 11.12.9) */
#define ICR_VECTOR_MASK		0xffu
#define ICR_DM_MASK		(7u << 8)
#define ICR_DM_FIXED		(0u << 8)
#define ICR_DM_NMI		(4u << 8)
#define ICR_DM_INIT		(5u << 8)
#define ICR_DM_STARTUP		(6u << 8)
#define ICR_DEST_LOGICAL	(1u << 11)
#define ICR_BUSY		(1u << 12)	/* xAPIC delivery status: send pending */
#define ICR_LEVEL_ASSERT	(1u << 14)
#define ICR_TRIGGER_LEVEL	(1u << 15)
#define ICR_SHORTHAND_SHIFT	18
#define ICR_SHORTHAND_MASK	(3u << 18)
#define ICR_DEST_SELF		(1u << 18)	/* destination shorthand 01 */
#define ICR_DEST_ALL		(2u << 18)	/* 10: all including self */
#define ICR_DEST_OTHERS		(3u << 18)	/* 11: all excluding self */
#define ICR_XAPIC_DEST_SHIFT	24		/* in ICR_HI */
#define ICR_XAPIC_BROADCAST	0xffu
#define ICR_X2APIC_BROADCAST	0xffffffffu
#define X2APIC_ICR_RESERVED	0xfff33000ull	/* bits 12-13, 16-17, 20-31 (Figure 11-28) */

#endif
