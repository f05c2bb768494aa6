/*
 * The guest's MTRRs are virtual: each vCPU reads back what it wrote, and
 * the processor's MTRRs stay as the firmware left them (SDM Vol. 3 12.11).
 *
 * The physical MTRRs apply to the hypervisor's own accesses as to the
 * guest's (SVM combines them with the nested tables' types, APM Vol. 2
 * 15.25.8; in VMX root mode they are the only ones), so a guest that could
 * write them could make the hypervisor's memory uncached or
 * write-combined: slow, and no longer ordered as its code assumes. Linux
 * writes them at every processor's bring-up (set_mtrr_state: DEF_TYPE 0,
 * the ranges, DEF_TYPE back) and reads them back; refusing with #GP (as
 * hvtrace did) made it log "MTRR: CPU n: Writing MSR 2ff to 0:0 failed".
 * Kept virtual, the writes succeed and read back as on hardware, and the
 * memory types stay the firmware's, for guest and hypervisor alike, as KVM
 * leaves them on AMD hosts (its MTRR emulation stores the guest's values
 * and ignores them): a guest cannot observe a memory type but by timing,
 * and the firmware's map already makes MMIO uncacheable. docs/security.md.
 * Pure logic: msr.c loads the processor's values and holds one per vCPU.
 */
#include "arch/x86/msr.h"
#include "dispatch/mtrr.h"

static const u32 fixed_msr[MTRR_FIXED_N] = {
	MSR_IA32_MTRR_FIX64K_00000, MSR_IA32_MTRR_FIX16K_80000, MSR_IA32_MTRR_FIX16K_A0000,
	MSR_IA32_MTRR_FIX4K_C0000, MSR_IA32_MTRR_FIX4K_C0000 + 1, MSR_IA32_MTRR_FIX4K_C0000 + 2,
	MSR_IA32_MTRR_FIX4K_C0000 + 3, MSR_IA32_MTRR_FIX4K_C0000 + 4, MSR_IA32_MTRR_FIX4K_C0000 + 5,
	MSR_IA32_MTRR_FIX4K_C0000 + 6, MSR_IA32_MTRR_FIX4K_F8000,
};

#define MTRRCAP_FIX	(1ull << 8)
#define MTRRCAP_WC	(1ull << 10)

static int fixed_index(u32 msr)
{
	for (int i = 0; i < MTRR_FIXED_N; i++)
		if (fixed_msr[i] == msr)
			return i;
	return -1;
}

bool mtrr_is_mtrr(u32 msr)
{
	return (msr >= MSR_IA32_MTRR_PHYSBASE0 && msr < MSR_IA32_MTRR_PHYSBASE0 + 2 * MTRR_VAR_MAX) ||
	       fixed_index(msr) >= 0 || msr == MSR_IA32_MTRR_DEF_TYPE;
}

s64 mtrr_msr_at(u64 cap, u32 i)
{
	u32 nvar = 2 * (MTRRCAP_VCNT(cap) < MTRR_VAR_MAX ? MTRRCAP_VCNT(cap) : MTRR_VAR_MAX);
	if (i == 0)
		return MSR_IA32_MTRR_DEF_TYPE;
	i--;
	if (i < nvar)
		return MSR_IA32_MTRR_PHYSBASE0 + i;
	i -= nvar;
	if ((cap & MTRRCAP_FIX) && i < MTRR_FIXED_N)
		return fixed_msr[i];
	return -1;
}

/* 12.11.1 Table 12-8: UC 0, WC 1 (where IA32_MTRRCAP.WC), WT 4, WP 5, WB 6 */
static bool type_ok(u64 cap, u8 t)
{
	return t == 0 || (t == 1 && (cap & MTRRCAP_WC)) || t == 4 || t == 5 || t == 6;
}

/* u64 slot of `msr` in the state, or NULL where this processor has none */
static u64 *slot(struct vmtrr *m, u32 msr)
{
	if (msr == MSR_IA32_MTRR_DEF_TYPE)
		return &m->def;
	if (msr >= MSR_IA32_MTRR_PHYSBASE0 && msr < MSR_IA32_MTRR_PHYSBASE0 + 2 * MTRR_VAR_MAX)
		return (msr - MSR_IA32_MTRR_PHYSBASE0) / 2 < MTRRCAP_VCNT(m->cap)
			       ? &m->var[msr - MSR_IA32_MTRR_PHYSBASE0] : NULL;
	int f = fixed_index(msr);
	return f >= 0 && (m->cap & MTRRCAP_FIX) ? &m->fixed[f] : NULL;
}

bool mtrr_load(struct vmtrr *m, u32 msr, u64 val)
{
	u64 *s = slot(m, msr);
	if (s)
		*s = val;
	return s;
}

bool mtrr_read(const struct vmtrr *m, u32 msr, u64 *val)
{
	const u64 *s = slot((struct vmtrr *)m, msr);
	if (!s)
		return false;
	*val = *s;
	return true;
}

bool mtrr_write(struct vmtrr *m, u32 msr, u64 val, u32 phys_bits)
{
	u64 *s = slot(m, msr);
	u64 addr = phys_bits >= 64 ? ~0ull : (1ull << phys_bits) - 1;
	if (!s)
		return false;
	if (msr == MSR_IA32_MTRR_DEF_TYPE) {
		/* Figure 12-5: type in 7:0, FE 10, E 11, the rest reserved */
		if ((val & ~(MTRR_TYPE_MASK | MTRR_DEF_TYPE_FE | MTRR_DEF_TYPE_E)) ||
		    !type_ok(m->cap, (u8)val))
			return false;
	} else if (msr < MSR_IA32_MTRR_PHYSBASE0 + 2 * MTRR_VAR_MAX) {
		if (msr & 1) {
			/* Figure 12-7 PHYSMASK: V in 11, the mask from 12 up to
			 * MAXPHYADDR, the rest reserved */
			if (val & ~((addr & ~0xfffull) | MTRR_PHYSMASK_VALID))
				return false;
		} else if ((val & ~((addr & ~0xfffull) | MTRR_TYPE_MASK)) || !type_ok(m->cap, (u8)val)) {
			return false;	/* PHYSBASE: type in 7:0, 11:8 reserved */
		}
	} else {
		for (int b = 0; b < 8; b++)	/* 12.11.2.2: a type in every byte */
			if (!type_ok(m->cap, (u8)(val >> (8 * b))))
				return false;
	}
	*s = val;
	return true;
}
