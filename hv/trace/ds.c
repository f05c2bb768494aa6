/*
 * The guest's virtual Debug Store: IA32_DEBUGCTL, IA32_DS_AREA,
 * IA32_MISC_ENABLE and IA32_PERF_GLOBAL_STATUS/OVF_CTRL as the guest sees
 * them, and the BTS buffer the guest's DS save area describes, written at
 * guest linear addresses as the processor would (SDM Vol. 3 "Branch Trace
 * Store (BTS)" and "Debug Store (DS) Mechanism"). Root mode, on exits.
 */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/ds.h"
#include "arch/x86/msr.h"
#include "core/gmem.h"
#include "core/lib.h"
#include "core/log.h"
#include "core/mm.h"
#include "core/vcpu.h"

/* Bits a guest may set in IA32_DEBUGCTL: the branch-trace bits this
 * hypervisor virtualizes. Anything else (reserved, or features it does not
 * offer) is #GP, as hardware does for reserved bits. */
#define DEBUGCTL_VALID	(DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_TR | DEBUGCTL_BTS | \
			 DEBUGCTL_BTINT | DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR | \
			 DEBUGCTL_FREEZE_LBRS_ON_PMI)

static bool is_canonical(u64 a)
{
	return (u64)((s64)(a << 16) >> 16) == a;
}

void ds_init(struct vcpu *v)
{
	struct ds_state *ds = &v->trace.ds;
	/* BTS available, PEBS not (yet); the rest of MISC_ENABLE as firmware
	 * left it (fast strings, ...), or 0 where the CPU has none */
	ds->misc_enable = (rdmsr(MSR_IA32_MISC_ENABLE) & ~MISC_ENABLE_BTS_UNAVAIL) |
			  MISC_ENABLE_PEBS_UNAVAIL;
}

int ds_msr_read(struct vcpu *v, u32 msr, u64 *val)
{
	struct ds_state *ds = &v->trace.ds;
	switch (msr) {
	case MSR_IA32_DEBUGCTL:
		*val = ds->debugctl;
		return 1;
	case MSR_IA32_DS_AREA:
		*val = ds->ds_area;
		return 1;
	case MSR_IA32_MISC_ENABLE:
		*val = ds->misc_enable;
		return 1;
	case MSR_IA32_PERF_GLOBAL_STATUS:
		*val = ds->perf_global_status;
		return 1;
	case MSR_IA32_PERF_GLOBAL_OVF_CTRL:
		*val = 0;
		return 1;
	}
	return 0;
}

int ds_msr_write(struct vcpu *v, u32 msr, u64 val)
{
	struct ds_state *ds = &v->trace.ds;
	switch (msr) {
	case MSR_IA32_DEBUGCTL:
		if (val & ~DEBUGCTL_VALID)
			return -1;
		ds->debugctl = val;
		trace_update(v);
		return 1;
	case MSR_IA32_DS_AREA:
		/* SDM Vol. 4: a non-canonical DS area is #GP (KVM does the same) */
		if (!is_canonical(val))
			return -1;
		ds->ds_area = val;
		ds->bad_area_logged = false;
		return 1;
	case MSR_IA32_MISC_ENABLE:
		/* BTS_UNAVAILABLE and PEBS_UNAVAILABLE are read-only */
		ds->misc_enable = (val & ~(MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL)) |
				  (ds->misc_enable & (MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL));
		return 1;
	case MSR_IA32_PERF_GLOBAL_STATUS:
		return -1; /* read-only */
	case MSR_IA32_PERF_GLOBAL_OVF_CTRL:
		if (val & ~PERF_GLOBAL_STATUS_OVF_BUFFER)
			return -1;
		ds->perf_global_status &= ~val;
		return 1;
	}
	return 0;
}

/* The guest's local APIC, which the guest programs directly: xAPIC MMIO or
 * x2APIC MSRs. */
static u32 apic_read(u32 reg, bool x2)
{
	if (x2)
		return (u32)rdmsr(0x800 + (reg >> 4));
	u64 base = rdmsr(MSR_IA32_APICBASE) & APICBASE_ADDR_MASK;
	return *(volatile u32 *)guest_pa_ptr(base + reg);
}

static void apic_write(u32 reg, u32 val, bool x2)
{
	if (x2) {
		wrmsr(0x800 + (reg >> 4), val);
		return;
	}
	u64 base = rdmsr(MSR_IA32_APICBASE) & APICBASE_ADDR_MASK;
	*(volatile u32 *)guest_pa_ptr(base + reg) = val;
}

#define APIC_ID		0x20
#define APIC_ICR_LO	0x300
#define APIC_ICR_HI	0x310
#define APIC_LVTPC	0x340
#define LVT_MASKED	(1u << 16)
#define LVT_DM_MASK	(7u << 8)
#define LVT_DM_NMI	(4u << 8)

/*
 * The PMI of a BTS threshold (SDM Vol. 3 "Setting Up the BTS Buffer":
 * BTINT set and the index reaching the threshold raise a performance
 * monitoring interrupt through the local APIC's LVT performance counter
 * entry). The guest owns the real APIC, so the interrupt is made real: an
 * IPI to this processor with the LVT's vector and delivery mode, taken by
 * the guest through its own IDT. As on Intel hardware, delivering the PMI
 * sets the LVT entry's mask bit; the guest's handler unmasks it.
 */
static void ds_raise_pmi(struct vcpu *v)
{
	bool x2 = rdmsr(MSR_IA32_APICBASE) & APICBASE_EXTD;
	u32 lvt = apic_read(APIC_LVTPC, x2);

	v->trace.ds.perf_global_status |= PERF_GLOBAL_STATUS_OVF_BUFFER;
	v->trace.ds.pmis++;
	if (lvt & LVT_MASKED)
		return;
	if ((lvt & LVT_DM_MASK) == LVT_DM_NMI) {
		u32 id = apic_read(APIC_ID, x2);
		if (x2)
			wrmsr(MSR_X2APIC_ICR, ((u64)id << 32) | LVT_DM_NMI);
		else {
			apic_write(APIC_ICR_HI, id & 0xff000000u, false);
			apic_write(APIC_ICR_LO, LVT_DM_NMI, false);
		}
	} else {
		u32 icr = (lvt & 0xff) | (1u << 14) | (1u << 18); /* fixed, assert, "self" */
		if (x2)
			wrmsr(MSR_X2APIC_ICR, icr);
		else
			apic_write(APIC_ICR_LO, icr, false);
	}
	apic_write(APIC_LVTPC, lvt | LVT_MASKED, x2);
}

static void ds_bad_area(struct vcpu *v, const char *what, u64 addr)
{
	struct ds_state *ds = &v->trace.ds;
	ds->dropped++;
	if (!ds->bad_area_logged) {
		ds->bad_area_logged = true;
		LOG_WARN("vcpu %u: %s at %016lx is not writable guest RAM: BTS records dropped "
			 "(counted) until DS_AREA is rewritten", v->id, what, addr);
	}
}

/*
 * Stores one BTS record (SDM Vol. 3 "BTS Buffer" rules):
 *  - the record goes at the BTS index, which then advances by 24;
 *  - BTINT clear: a buffer whose index reached the absolute maximum wraps
 *    to the base first (a circular buffer);
 *  - BTINT set: reaching the threshold raises a PMI (once per crossing);
 *    a full buffer stores nothing more (dropped, counted);
 *  - BTS_OFF_OS / BTS_OFF_USR: no record at CPL 0 / CPL > 0.
 */
void ds_bts_store(struct vcpu *v, u64 from, u64 to, int cpl)
{
	struct ds_state *ds = &v->trace.ds;
	struct ds_area64 area;
	struct bts_record64 rec = { from, to, 0 };

	if ((ds->debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) != (DEBUGCTL_TR | DEBUGCTL_BTS))
		return;
	if ((cpl == 0 && (ds->debugctl & DEBUGCTL_BTS_OFF_OS)) ||
	    (cpl > 0 && (ds->debugctl & DEBUGCTL_BTS_OFF_USR)))
		return;
	if (gmem_read_linear(v, ds->ds_area, &area, 0x20) != 0x20) {
		ds_bad_area(v, "the DS save area", ds->ds_area);
		return;
	}
	u64 index = area.bts_index;
	bool btint = ds->debugctl & DEBUGCTL_BTINT;
	if (index + sizeof(rec) > area.bts_abs_max || index < area.bts_base) {
		if (btint) {
			ds->dropped++;
			return;
		}
		index = area.bts_base;
		if (index + sizeof(rec) > area.bts_abs_max) {
			ds_bad_area(v, "a BTS buffer smaller than one record", area.bts_base);
			return;
		}
	}
	if (!gmem_write_linear(v, index, &rec, sizeof(rec))) {
		ds_bad_area(v, "the BTS buffer", index);
		return;
	}
	u64 next = index + sizeof(rec);
	if (!gmem_write_linear(v, ds->ds_area + 8, &next, sizeof(next))) {
		ds_bad_area(v, "the DS save area", ds->ds_area);
		return;
	}
	ds->records++;
	if (btint && index < area.bts_int_threshold && next >= area.bts_int_threshold)
		ds_raise_pmi(v);
}
