/* This processor's local APIC as the hypervisor reaches it: in x2APIC mode
 * through its MSRs, otherwise through the page the loader found it at and
 * mapped uncached in the hypervisor's own page tables (HV_APIC_VA). Never
 * at the address the guest last wrote to IA32_APIC_BASE: that is a value
 * of the guest's choosing (dispatch/msr.c keeps it virtual, docs/security.md).
 * The guest owns the APIC but for the interrupt command register, whose
 * writes reach it through the hypervisor (dispatch/mp.c): its xAPIC page is
 * read-only to the guest, its x2APIC ICR MSR intercepted. The hypervisor
 * reads LVT entries, sends IPIs on the guest's behalf, and kicks other
 * processors with NMIs. The guest's ICR high half is kept apart
 * (struct vcpu icr_hi), so the hypervisor may use the register freely
 * while the guest is out. Root mode. */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "base/boot.h"
#include "base/lapic.h"

bool lapic_enabled(void)
{
	return rdmsr(MSR_IA32_APICBASE) & APICBASE_EN;
}

bool lapic_x2apic_mode(void)
{
	return rdmsr(MSR_IA32_APICBASE) & APICBASE_EXTD;
}

static volatile u32 *lapic_mmio(u32 reg)
{
	return (volatile u32 *)(uintptr_t)(HV_APIC_VA + reg);
}

/* reg in the mode the caller found (x2: the MSR, else the MMIO page) */
static u32 lapic_read_in(bool x2, u32 reg)
{
	return x2 ? (u32)rdmsr(X2APIC_MSR(reg)) : *lapic_mmio(reg);
}

u32 lapic_read(u32 reg)
{
	return lapic_read_in(lapic_x2apic_mode(), reg);
}

void lapic_write(u32 reg, u32 val)
{
	if (lapic_x2apic_mode())
		wrmsr(X2APIC_MSR(reg), val);
	else
		*lapic_mmio(reg) = val;
}

/* The highest word, from 7 down to `lowest`, of the 256-bit register (ISR, IRR: eight words
 * 0x10 apart) at reg0 with a bit set: its index, its value in *bits; -1: none, or the APIC
 * disabled (*x2 then unset). */
static int highest_word(u32 reg0, u32 lowest, bool *x2, u32 *bits)
{
	u64 base = rdmsr(MSR_IA32_APICBASE);
	if (!(base & APICBASE_EN))
		return -1;
	*x2 = base & APICBASE_EXTD;
	for (int w = 7; w >= (int)lowest; w--) {
		*bits = lapic_read_in(*x2, reg0 + 0x10 * (u32)w);
		if (*bits)
			return w;
	}
	return -1;
}

bool lapic_irq_pending(void)
{
	bool x2;
	u32 irr;
	/* vectors 0-15 are never accepted and 16-31 are reserved (11.8.3): IRR0 is left out */
	int w = highest_word(APIC_IRR0, 1, &x2, &irr);
	return w >= 0 && lapic_irr_above_ppr((u32)w, irr, lapic_read_in(x2, APIC_PPR));
}

int lapic_isr_highest(void)
{
	bool x2;
	u32 isr;
	int w = highest_word(APIC_ISR0, 0, &x2, &isr);
	return w < 0 ? -1 : 32 * w + 31 - __builtin_clz(isr);
}

/* xAPIC: waits (bounded) for the previous IPI to leave, SDM 11.6.1 */
static void icr_wait_idle(void)
{
	for (u32 spin = 0; spin < 1000000 && (*lapic_mmio(APIC_ICR_LO) & ICR_BUSY); spin++)
		cpu_relax();
}

void lapic_send_icr(u32 lo, u32 dest)
{
	if (lapic_x2apic_mode()) {
		wrmsr(X2APIC_MSR(APIC_ICR_LO), ((u64)dest << 32) | lo);
		return;
	}
	icr_wait_idle();
	*lapic_mmio(APIC_ICR_HI) = dest << ICR_XAPIC_DEST_SHIFT;
	*lapic_mmio(APIC_ICR_LO) = lo;
}

void lapic_send_nmi(u32 apic_id)
{
	lapic_send_icr(ICR_DM_NMI | ICR_LEVEL_ASSERT, apic_id);
}

void lapic_mmio_write(u32 reg, u32 val)
{
	*lapic_mmio(reg & 0xffc) = val;
}

/* An IPI to this processor: `vector` with fixed delivery, or an NMI
 * (the self shorthand allows fixed delivery only, SDM Vol. 3 11.6.1: an
 * NMI goes to this APIC's own ID). */
void lapic_self_ipi(u32 delivery, u8 vector)
{
	if (delivery == LVT_DM_NMI) {
		u32 id = lapic_read(APIC_ID);
		lapic_send_nmi(lapic_x2apic_mode() ? id : id >> ICR_XAPIC_DEST_SHIFT);
		return;
	}
	lapic_send_icr(vector | LVT_DM_FIXED | ICR_LEVEL_ASSERT | ICR_DEST_SELF, 0);
}
