/*
 * The guest's virtual Debug Store: IA32_DEBUGCTL, IA32_DS_AREA,
 * IA32_MISC_ENABLE as the guest sees them, and the BTS and PEBS buffers
 * the guest's DS save area describes, written at guest linear addresses
 * as the processor would (SDM Vol. 3 "Branch Trace Store (BTS)", "Debug
 * Store (DS) Mechanism" and "PEBS Facility"); and the virtual PMU's vCPU
 * side (its rules are trace/pmu.c's): the MSRs, the engine's counting,
 * and the PMI all of them raise. Root mode, on exits.
 */
#include "hvtrace/abi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/ds.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/lapic.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "trace/trace.h"

/* Bits a guest may set in IA32_DEBUGCTL: the branch-trace bits this
 * hypervisor virtualizes. Anything else (reserved, or features it does not
 * offer) is #GP, as hardware does for reserved bits. */
#define DEBUGCTL_VALID	(DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_TR | DEBUGCTL_BTS | \
			 DEBUGCTL_BTINT | DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR | \
			 DEBUGCTL_FREEZE_LBRS_ON_PMI | DEBUGCTL_FREEZE_PERFMON_ON_PMI)

static bool is_canonical(u64 a)
{
	return ADDR_CANONICAL(a, 48);
}

/* IA32_MISC_ENABLE as the guest sees it: BTS available, PEBS available
 * where the guest has the PMU (an Intel-vendor guest), not otherwise; the
 * rest as the firmware left it (fast strings, ...), or 0 where the
 * processor has no such MSR (AMD's: the virtual Debug Store is Intel's
 * architecture, whoever made the processor). Read at the guest's first
 * access, an exit, where root mode's own IDT takes rdmsr_safe's #GP (at
 * start-up the firmware's is still loaded). */
static u64 *misc_enable(struct vcpu *v)
{
	struct ds_state *ds = &v->trace->ds;
	if (!ds->misc_enable_known) {
		u64 hw;
		if (rdmsr_safe(MSR_IA32_MISC_ENABLE, &hw))
			hw = 0;
		hw &= ~(MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL);
		ds->misc_enable = hw | (v->trace->pmu.nr_gp ? 0 : MISC_ENABLE_PEBS_UNAVAIL);
		ds->misc_enable_known = true;
	}
	return &ds->misc_enable;
}

int ds_msr_read(struct vcpu *v, u32 msr, u64 *val)
{
	struct ds_state *ds = &v->trace->ds;
	pmu_sync(v);
	switch (msr) {
	case MSR_IA32_DEBUGCTL:
		*val = ds->debugctl;
		return 1;
	case MSR_IA32_DS_AREA:
		*val = ds->ds_area;
		return 1;
	case MSR_IA32_MISC_ENABLE:
		*val = *misc_enable(v);
		return 1;
	}
	return pmu_msr_get(&v->trace->pmu, msr, val);
}

int ds_msr_write(struct vcpu *v, u32 msr, u64 val)
{
	struct ds_state *ds = &v->trace->ds;
	pmu_sync(v);
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
	case MSR_IA32_MISC_ENABLE: {
		/* BTS_UNAVAILABLE and PEBS_UNAVAILABLE are read-only */
		const u64 ro = MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL;
		u64 *me = misc_enable(v);
		*me = (val & ~ro) | (*me & ro);
		return 1;
	}
	}
	int r = pmu_msr_set(&v->trace->pmu, msr, val);
	if (r > 0)
		trace_update(v);	/* a counter the engine counts, on or off */
	return r;
}

static void ds_store_pebs(struct vcpu *v, u64 applicable, u64 ip);

/*
 * The performance monitoring interrupt, of a BTS or PEBS threshold (SDM
 * Vol. 3 "Setting Up the BTS Buffer": BTINT set and the index reaching
 * the threshold; "PEBS Facility": the PEBS index reaching its threshold)
 * or of a counter that wrapped with its INT/PMI bit set (SDM Vol. 3
 * 20.2.1, 20.2.2): through the local APIC's LVT performance counter
 * entry. The guest owns the real APIC, so the interrupt is made real: an
 * IPI to this processor with the LVT's vector and delivery mode, taken by
 * the guest through its own IDT. As on Intel hardware, delivering the PMI
 * sets the LVT entry's mask bit; the guest's handler unmasks it. The APIC
 * is the one the hypervisor located itself (base/lapic.c), whatever the
 * guest wrote to IA32_APIC_BASE.
 *
 * Delivery mode NMI (Linux's) where the hypervisor's kicks are NMIs
 * (SVM): not a physical NMI but latched for this vCPU's next entry
 * (v->nmi_ipi, dispatch/mp.c mp_take_nmi_ipi), as the guest's own NMI
 * IPIs are. Two NMIs pending at one processor are one (an NMI is a
 * latch), and under QEMU's TCG every injected interrupt is followed by a
 * kick NMI (svm_tcg_injection_quirk): a PMI found at an interrupt's exit
 * (a TSC-counted counter's wrap, pmu_sync) merged with that kick, was
 * taken for it and lost, where SDM Vol. 3 20.2.1 has every such wrap
 * signal a PMI; the LVT entry stayed masked and later wraps raised none
 * either (Linux's perf test 35 got no cycles:u sample in 100 ms of
 * user-mode spinning; docs/pmu.md).
 *
 * FREEZE_PERFMON_ON_PMI (IA32_DEBUGCTL bit 12, SDM Vol. 3 18.4.7, the
 * legacy freeze of version 2): the PMI request clears every enable of
 * IA32_PERF_GLOBAL_CTRL, whether or not the LVT delivers it; the counters
 * stay frozen until the guest enables them again.
 */
static void raise_pmi(struct vcpu *v)
{
	if (v->trace->ds.debugctl & DEBUGCTL_FREEZE_PERFMON_ON_PMI) {
		v->trace->pmu.global_ctrl = 0;
		v->trace->update_due = true;	/* the engine may stop: before the entry */
	}
	if (!lapic_enabled())
		return;		/* a disabled APIC delivers nothing */
	u32 lvt = lapic_read(APIC_LVTPC);
	if (lvt & LVT_MASKED)
		return;
	u32 dm = lvt & LVT_DM_MASK;
	if (dm == LVT_DM_NMI && !(hv.caps & HV_CAP_KICK_POLL))
		__atomic_store_n(&v->nmi_ipi, 1, __ATOMIC_SEQ_CST);
	else
		lapic_self_ipi(dm, (u8)(lvt & LVT_VECTOR_MASK));
	lapic_write(APIC_LVTPC, lvt | LVT_MASKED);
}

static void ds_raise_pmi(struct vcpu *v)
{
	v->trace->pmu.global_status |= PERF_GLOBAL_STATUS_OVF_BUFFER;
	v->trace->ds.pmis++;
	raise_pmi(v);
}

/* Counters that wrapped (`ovf`, their GLOBAL_STATUS bits already set):
 * one PMI when any of them asks for it. */
static void pmu_overflowed(struct vcpu *v, u64 ovf)
{
	if (ovf && pmu_pmi_bits(&v->trace->pmu, ovf))
		raise_pmi(v);
}

/* The PEBS-enabled counters that wrapped at this instruction make one
 * record (the eventing IP `ip`) and are reloaded; the others are plain
 * overflows. */
u64 pmu_retired(struct vcpu *v, u32 occ, int cpl, u64 ip)
{
	u64 ovf = pmu_count(&v->trace->pmu, occ, cpl);
	u64 pebs = pmu_pebs_bits(&v->trace->pmu, ovf);
	if (pebs)
		ds_store_pebs(v, pebs, ip);
	pmu_overflowed(v, ovf & ~pebs);
	return ovf;
}

void pmu_sync(struct vcpu *v)
{
	struct pmu_state *p = &v->trace->pmu;
	if (pmu_counts_tsc(p))
		pmu_overflowed(v, pmu_tsc_advance(p, rdtsc(), pmu_tsc_level(hv.ops->get_cpl(v), v->irq_window)));
	else
		p->tsc_last = rdtsc();
}

bool pmu_rdpmc(struct vcpu *v, u32 ecx, u64 *val)
{
	pmu_sync(v);
	return pmu_read_counter(&v->trace->pmu, ecx, val);
}

/* An instruction the hypervisor emulated completed: retired, for the
 * instruction counters, at the CPL it ran at, at the linear address of
 * the RIP the exit began at (none changes the CPL or CS). */
void trace_insn_emulated(struct vcpu *v)
{
	if (v->trace->engine != HVTRACE_ENGINE_OFF)
		pmu_retired(v, PMU_OCC_INSN, hv.ops->get_cpl(v),
			    gmem_linear_rip(v) - v->rip + v->trace->exit_rip);
}

#define NOT_RAM "is not writable guest RAM"

static void ds_bad_area(struct vcpu *v, const char *what, u64 addr, const char *why)
{
	struct ds_state *ds = &v->trace->ds;
	ds->dropped++;
	if (!ds->bad_area_logged) {
		ds->bad_area_logged = true;
		LOG_WARN("vcpu %u: %s at %016lx %s: records dropped (counted) until DS_AREA "
			 "is rewritten", v->id, what, addr, why);
	}
}

/* The translations kept for the save area and the buffers (base/gmem.c:
 * each is checked against the guest's page tables at every use, so a
 * remapped area or buffer is walked again; a new DS_AREA or DEBUGCTL
 * value starts afresh). */
static struct gmem_xlat_key ds_xlat(struct vcpu *v)
{
	struct ds_state *ds = &v->trace->ds;
	if (ds->xlat_area != ds->ds_area || ds->xlat_debugctl != ds->debugctl) {
		gmem_xlat_flush(&ds->xlat);
		ds->xlat_area = ds->ds_area;
		ds->xlat_debugctl = ds->debugctl;
	}
	return gmem_xlat_key(v);
}

/* One copy to or from the guest's save area or buffers: through the burst's pins where it
 * lies in one page, else through the translations kept */
static inline bool ds_put(struct vcpu *v, const struct gmem_xlat_key *key, u64 gva, const void *buf, size_t len)
{
	struct ds_state *ds = &v->trace->ds;
	void *p = gmem_pin_hit(&ds->pin, gva, len, true);
	if (!p && ds->pin.on)
		p = gmem_pin_ptr(v, &ds->xlat, &ds->pin, gva, len, true);
	/* a record the interpreting engine's burst writes may land in code it checked */
	if (p) {
		interp_code_written(&v->trace->dcache, p, p);	/* a pin: one page */
		__builtin_memcpy(p, buf, len);	/* inline moves where len is a constant */
		return true;
	}
	interp_code_written(&v->trace->dcache, NULL, NULL);
	return gmem_write_linear_cached(v, &ds->xlat, key, gva, buf, len);
}

static inline bool ds_get(struct vcpu *v, const struct gmem_xlat_key *key, u64 gva, void *buf, size_t len)
{
	struct ds_state *ds = &v->trace->ds;
	const void *p = gmem_pin_hit(&ds->pin, gva, len, false);
	if (!p && ds->pin.on)
		p = gmem_pin_ptr(v, &ds->xlat, &ds->pin, gva, len, false);
	if (p) {
		__builtin_memcpy(buf, p, len);
		return true;
	}
	return gmem_read_linear_cached(v, &ds->xlat, key, gva, buf, len) == len;
}

void ds_burst_begin(struct vcpu *v)
{
	struct ds_state *ds = &v->trace->ds;
	ds_xlat(v);	/* a new DS_AREA or DEBUGCTL empties the kept translations first */
	gmem_pin_begin(v, &ds->pin);
}

void ds_burst_end(struct vcpu *v)
{
	gmem_pin_end(v, &v->trace->ds.pin);
}

/* Writes a record at `index` of a DS buffer and `next` into the save
 * area's index field at `index_field`; false (dropped, counted, logged)
 * where either is not guest RAM. Inline: `size` a constant at each call, the
 * record's copy is a few moves, not a call of memcpy. */
static inline __attribute__((always_inline)) bool ds_write(struct vcpu *v, const struct gmem_xlat_key *key,
							  const char *buffer, u64 index, const void *rec,
							  size_t size, size_t index_field)
{
	struct ds_state *ds = &v->trace->ds;
	if (!ds_put(v, key, index, rec, size)) {
		ds_bad_area(v, buffer, index, NOT_RAM);
		return false;
	}
	u64 next = index + size;
	if (!ds_put(v, key, ds->ds_area + index_field, &next, sizeof(next))) {
		ds_bad_area(v, "the DS save area", ds->ds_area, NOT_RAM);
		return false;
	}
	ds->records++;
	return true;
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
	struct ds_state *ds = &v->trace->ds;
	struct ds_area64 area;
	struct bts_record64 rec = { from, to, 0 };

	if ((ds->debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) != (DEBUGCTL_TR | DEBUGCTL_BTS))
		return;
	if ((cpl == 0 && (ds->debugctl & DEBUGCTL_BTS_OFF_OS)) ||
	    (cpl > 0 && (ds->debugctl & DEBUGCTL_BTS_OFF_USR)))
		return;
	/* the BTS half of the save area (the PEBS fields are not used) */
	const size_t bts_fields = offsetof(struct ds_area64, pebs_base);
	/* within a burst the key is the pins' (no CR3 load or mode change can come in one) */
	struct gmem_xlat_key key = ds->pin.on ? ds->pin.key : ds_xlat(v);
	if (!ds_get(v, &key, ds->ds_area, &area, bts_fields)) {
		ds_bad_area(v, "the DS save area", ds->ds_area, NOT_RAM);
		return;
	}
	u64 index = area.bts_index;
	bool btint = ds->debugctl & DEBUGCTL_BTINT;
	if (!ds_room(index, area.bts_abs_max, sizeof(rec)) || index < area.bts_base) {
		if (btint) {
			ds->dropped++;
			return;
		}
		index = area.bts_base;
		if (!ds_room(index, area.bts_abs_max, sizeof(rec))) {
			ds_bad_area(v, "the BTS buffer", area.bts_base,
				    "has no room for one record below its absolute maximum");
			return;
		}
	}
	if (!ds_write(v, &key, "the BTS buffer", index, &rec, sizeof(rec), offsetof(struct ds_area64, bts_index)))
		return;
	if (btint && ds_threshold_reached(index, index + sizeof(rec), area.bts_int_threshold))
		ds_raise_pmi(v);
}

/*
 * The PEBS assist (SDM Vol. 3 "PEBS Facility"; docs/pmu.md): the counters
 * `applicable` wrapped at the instruction at `ip`, which has retired (the
 * registers are those after it). One adaptive record at the PEBS index,
 * which advances by its size; the counters reloaded from the save area's
 * reset values and their overflow bits cleared; a PMI with GLOBAL_STATUS
 * bit 62 when the index reaches the interrupt threshold. A record that
 * does not fit below the absolute maximum (or an index below the base) is
 * skipped entirely, as the SDM says of a failed bounds check: nothing
 * written, the counters not reloaded, their overflow bits stay (dropped,
 * counted). A save area or buffer that is not guest RAM: dropped,
 * counted, logged, exactly as for BTS.
 */
static void ds_store_pebs(struct vcpu *v, u64 applicable, u64 ip)
{
	struct ds_state *ds = &v->trace->ds;
	struct pmu_state *p = &v->trace->pmu;
	struct ds_area64 area;
	struct pebs_gprs regs;
	u8 rec[PMU_PEBS_MAX];

	struct gmem_xlat_key key = ds_xlat(v);
	if (gmem_read_linear_cached(v, &ds->xlat, &key, ds->ds_area, &area, sizeof(area)) != sizeof(area)) {
		ds_bad_area(v, "the DS save area", ds->ds_area, NOT_RAM);
		return;
	}
	_Static_assert(sizeof(regs.gpr) == sizeof(v->gpr), "PEBS GPR group: RAX..R15 as gpr[]");
	regs.flags = v->rflags;
	regs.ip = gmem_linear_rip(v);
	memcpy(regs.gpr, v->gpr, sizeof(regs.gpr));
	u32 size = pmu_pebs_record(p, applicable, ip, rdtsc(), &regs, rec);
	u64 index = area.pebs_index;
	if (!ds_room(index, area.pebs_abs_max, size) || index < area.pebs_base) {
		ds->dropped++;
		return;
	}
	if (!ds_write(v, &key, "the PEBS buffer", index, rec, size, offsetof(struct ds_area64, pebs_index)))
		return;
	pmu_pebs_reload(p, applicable, area.pebs_gp_reset, area.pebs_fixed_reset);
	if (ds_threshold_reached(index, index + size, area.pebs_int_threshold))
		ds_raise_pmi(v);
}
