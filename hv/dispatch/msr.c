/* MSR policy for the MSRs the backends intercept: the guest sees a CPU
 * without SVM/VMX, and EFER behaves as on hardware (AMD APM Vol. 2 3.1.7,
 * Intel SDM Vol. 4 Table 2-2) while the hypervisor keeps what it needs;
 * the Debug Store MSRs belong to hv/trace/ds.c. Every other MSR reaches
 * the hardware: docs/security.md lists what the guest can and cannot do
 * with each kind, and why. The PMU's MSRs are hv/trace/pmu.c's. Root mode. */
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/log.h"
#include "dispatch/msr.h"
#include "dispatch/mp.h"
#include "dispatch/mtrr.h"
#include "base/lapic.h"
#include "arch/x86/apic.h"
#include "base/vcpu.h"
#include "trace/trace.h"

/* Every MSR the hypervisor owns: the backends intercept reads and writes of
 * exactly these ranges (hv/svm/msr.c, hv/vmx/msr.c), and msr_read/msr_write
 * decide for them. */
const struct msr_range hv_owned_msrs[] = {
	{ MSR_EFER, MSR_EFER },
	/* the processor's virtualization, hidden from the guest whichever
	 * backend runs (an Intel guest under SVM meets the VMX ones) */
	{ MSR_VM_CR, MSR_VM_HSAVE_PA },		/* VM_CR, IGNNE, SMM_CTL, VM_HSAVE_PA */
	{ MSR_IA32_FEATURE_CONTROL, MSR_IA32_FEATURE_CONTROL },
	{ MSR_IA32_VMX_BASIC, MSR_IA32_VMX_EXIT_CTLS2 },
	{ MSR_IA32_DEBUGCTL, MSR_IA32_DEBUGCTL },
	{ MSR_IA32_DS_AREA, MSR_IA32_DS_AREA },
	{ MSR_IA32_MISC_ENABLE, MSR_IA32_MISC_ENABLE },
	/* the virtual PMU (trace/pmu.c): its counters, event selects, fixed
	 * counters and global MSRs, and the features it does not offer */
	{ MSR_IA32_PMC0, MSR_IA32_PMC0 + PMU_MSR_SPAN - 1 },
	{ MSR_IA32_PERFEVTSEL0, MSR_IA32_PERFEVTSEL0 + PMU_MSR_SPAN - 1 },
	{ MSR_IA32_FIXED_CTR0, MSR_IA32_FIXED_CTR0 + PMU_FIXED_SPAN - 1 },
	{ MSR_IA32_PERF_CAPABILITIES, MSR_IA32_PERF_CAPABILITIES },
	{ MSR_IA32_FIXED_CTR_CTRL, MSR_IA32_PERF_GLOBAL_OVF_CTRL },
	{ MSR_IA32_A_PMC0, MSR_IA32_A_PMC0 + PMU_MSR_SPAN - 1 },
	/* the x2APIC interrupt command: INIT and SIPI go through the
	 * hypervisor (dispatch/mp.c) */
	{ X2APIC_MSR(APIC_ICR_LO), X2APIC_MSR(APIC_ICR_LO) },
	/* PEBS (trace/pmu.c): its enables and the adaptive record's groups */
	{ MSR_IA32_PEBS_ENABLE, MSR_PEBS_DATA_CFG },
	/* features that write memory at physical addresses or change who
	 * runs SMM: refused */
	{ MSR_IA32_RTIT_OUTPUT_BASE, MSR_IA32_RTIT_OUTPUT_MASK_PTRS },
	{ MSR_IA32_RTIT_CTL, MSR_IA32_RTIT_CR3_MATCH },
	{ MSR_IA32_RTIT_ADDR0_A, MSR_IA32_RTIT_ADDR3_B },
	{ MSR_IA32_SMM_MONITOR_CTL, MSR_IA32_SMM_MONITOR_CTL },
	/* architectural LBRs, which record in root mode too (not offered:
	 * dispatch/cpuid.c), and the XSAVES component that restores them */
	{ MSR_IA32_LBR_INFO0, MSR_IA32_LBR_INFO0 + LBR_MSR_SPAN - 1 },
	{ MSR_IA32_LBR_CTL, MSR_IA32_LBR_DEPTH },
	{ MSR_IA32_LBR_FROM_IP0, MSR_IA32_LBR_FROM_IP0 + LBR_MSR_SPAN - 1 },
	{ MSR_IA32_LBR_TO_IP0, MSR_IA32_LBR_TO_IP0 + LBR_MSR_SPAN - 1 },
	{ MSR_IA32_XSS, MSR_IA32_XSS },
	/* how memory, the reserve included, is cached and decoded */
	{ MSR_IA32_MTRR_PHYSBASE0, MSR_IA32_MTRR_PHYSBASE0 + 2 * 16 - 1 },
	{ MSR_IA32_MTRR_FIX64K_00000, MSR_IA32_MTRR_FIX64K_00000 },
	{ MSR_IA32_MTRR_FIX16K_80000, MSR_IA32_MTRR_FIX16K_A0000 },
	{ MSR_IA32_MTRR_FIX4K_C0000, MSR_IA32_MTRR_FIX4K_F8000 },
	{ MSR_IA32_MTRR_DEF_TYPE, MSR_IA32_MTRR_DEF_TYPE },
	{ MSR_SYSCFG, MSR_SYSCFG },
	{ MSR_IORR_BASE0, MSR_IORR_MASK1 },
	{ MSR_TOP_MEM, MSR_TOP_MEM },
	{ MSR_TOP_MEM2, MSR_TOP_MEM2 },
	{ MSR_SMM_ADDR, MSR_SMM_MASK },
};
const u32 hv_nr_owned_msrs = ARRAY_SIZE(hv_owned_msrs);

const u32 hv_write_owned_msrs[] = {
	/* the local APIC's location: the hypervisor's to keep; its reads
	 * only once a guest has moved it (apic_base_write) */
	MSR_IA32_APICBASE,
};
const u32 hv_nr_write_owned_msrs = ARRAY_SIZE(hv_write_owned_msrs);

static u64 efer_allowed(void)
{
	struct cpuid_regs r;
	u64 ok = EFER_SCE | EFER_LME | EFER_LMA;
	cpuid_count(0x80000001, 0, &r);
	if (r.edx & CPUID_80000001_EDX_NX)
		ok |= EFER_NXE;
	if (r.edx & CPUID_80000001_EDX_FFXSR)
		ok |= EFER_FFXSR;
	if (r.ecx & CPUID_80000001_ECX_TCE)
		ok |= EFER_TCE;
	return ok;
}

/* --- IA32_APIC_BASE --------------------------------------------------------
 * The guest turns its APIC on and off and into x2APIC mode as on hardware
 * (SDM Vol. 3 11.12.5: the transitions that #GP, reserved bits #GP), and
 * those bits reach the hardware. The base address does not: the APIC stays
 * decoded where the firmware left it and where the hypervisor reaches it
 * (base/lapic.c); the guest reads back the address it wrote. A guest
 * moving the real APIC over the hypervisor's memory would make its own
 * accesses there reach APIC registers instead.
 *
 * Reads exit only once some guest has moved its address: until then the
 * hardware's value is the one apic_base_read() would give. Firmware reads
 * this MSR in every local APIC access (edk2's LocalApicLib asks for the
 * APIC's mode each time), so its timer interrupt made several exits a
 * tick; under nested KVM, where one exit to hvtrace costs 0.3-0.7 ms,
 * that outgrew OVMF's tick and the firmware stopped advancing (the nested
 * tier's t_basic stopped in mid-line three times in three runs). */

static bool cpu_has_x2apic(void)
{
	struct cpuid_regs r;
	cpuid_count(1, 0, &r);
	return r.ecx & CPUID_1_ECX_X2APIC;
}

/* some guest moved its APIC's address: its reads exit, on every vCPU */
static bool apic_base_reads;

static u64 apic_base_read(const struct vcpu *v)
{
	return (rdmsr(MSR_IA32_APICBASE) & ~APICBASE_ADDR_MASK) | v->apic_base;
}

static bool apic_base_write(struct vcpu *v, u64 val)
{
	u64 hw = rdmsr(MSR_IA32_APICBASE);
	u64 ok = APICBASE_BSP | APICBASE_EN | (cpu_has_x2apic() ? APICBASE_EXTD : 0) |
		 ((hv.boot.phys_limit - 1) & APICBASE_ADDR_MASK);
	if (val & ~ok)
		return false;
	bool en = val & APICBASE_EN, x2 = val & APICBASE_EXTD;
	bool was_en = hw & APICBASE_EN, was_x2 = hw & APICBASE_EXTD;
	if ((x2 && !en) ||				/* invalid state */
	    (was_en && was_x2 && en && !x2) ||		/* x2APIC to xAPIC */
	    (!was_en && x2))				/* disabled to x2APIC */
		return false;
	u64 addr = val & APICBASE_ADDR_MASK;
	if (addr != v->apic_base && addr != hv.boot.apic_pa)
		LOG_WARN("vcpu %u: the guest moves its local APIC to %016lx: kept virtual, the APIC "
			 "stays at %016lx", v->id, addr, hv.boot.apic_pa);
	if (addr != hv.boot.apic_pa && !__atomic_exchange_n(&apic_base_reads, true, __ATOMIC_SEQ_CST))
		hv.ops->intercept_msr_read(MSR_IA32_APICBASE);
	v->apic_base = addr;
	if ((hw ^ val) & (APICBASE_EN | APICBASE_EXTD))
		wrmsr(MSR_IA32_APICBASE, (hw & ~(APICBASE_EN | APICBASE_EXTD)) |
						 (val & (APICBASE_EN | APICBASE_EXTD)));
	return true;
}

/* --- MTRRs ----------------------------------------------------------------
 * Virtual, one set per vCPU, loaded from its processor's at its first
 * access (dispatch/mtrr.c says why); a processor without MTRRs #GPs them
 * all, as the hardware would. */

static struct vmtrr vmtrrs[HV_MAX_CPUS];

static struct vmtrr *vmtrr_of(const struct vcpu *v)
{
	struct vmtrr *m = &vmtrrs[v->id];
	if (m->loaded)
		return m;
	m->loaded = true;
	if (rdmsr_safe(MSR_IA32_MTRRCAP, &m->cap)) {
		m->cap = 0;
		return m;	/* no MTRRs: mtrr_read/write say #GP */
	}
	for (u32 i = 0;; i++) {
		s64 msr = mtrr_msr_at(m->cap, i);
		u64 val;
		if (msr < 0)
			break;
		if (rdmsr_safe((u32)msr, &val) == 0)
			mtrr_load(m, (u32)msr, val);
	}
	return m;
}

static u32 phys_bits(void)
{
	return hv.boot.phys_limit ? (u32)__builtin_ctzll(hv.boot.phys_limit) : 52;
}

/* AMD's memory-decoding MSRs (TOP_MEM, TOP_MEM2, the IORRs, SYSCFG, the
 * SMM range): a new value could turn the reserve into MMIO, hand it to
 * SMM or change its encryption. Frozen: writing the value they hold is
 * accepted (firmware and OSes rewrite what is there), any other is #GP. */
static bool is_frozen(u32 msr)
{
	return msr == MSR_SYSCFG || (msr >= MSR_IORR_BASE0 && msr <= MSR_IORR_MASK1) ||
	       msr == MSR_TOP_MEM || msr == MSR_TOP_MEM2 ||
	       (msr >= MSR_SMM_ADDR && msr <= MSR_SMM_MASK);
}

/* A hardware MSR the guest may read: its value, or false (#GP) where this
 * processor has no such MSR. */
static bool hw_read(u32 msr, u64 *val)
{
	return rdmsr_safe(msr, val) == 0;
}

bool msr_read(struct vcpu *v, u32 msr, u64 *val)
{
	int r = ds_msr_read(v, msr, val);
	if (r)
		return r > 0;
	switch (msr) {
	case MSR_EFER:
		*val = hv.ops->get_efer(v);
		return true;
	case MSR_IA32_FEATURE_CONTROL:
		/* as on a machine whose firmware locked VMX off (Intel SDM Vol.
		 * 3 24.7; writing a locked value is #GP); #GP where the
		 * processor has no such MSR (AMD's) */
		if (!hw_read(msr, val))
			return false;
		*val = (*val | FEATURE_CONTROL_LOCK) &
		       ~(FEATURE_CONTROL_VMX_INSIDE_SMX | FEATURE_CONTROL_VMX_OUTSIDE_SMX);
		return true;
	case MSR_IA32_APICBASE:
		*val = apic_base_read(v);
		return true;
	case X2APIC_MSR(APIC_ICR_LO):
		return hw_read(msr, val);	/* #GP outside x2APIC mode, as on hardware */
	case MSR_IA32_XSS:
		return hw_read(msr, val);	/* #GP where there is none */
	}
	if (mtrr_is_mtrr(msr))
		return mtrr_read(vmtrr_of(v), msr, val);
	if (is_frozen(msr))
		return hw_read(msr, val);
	/* VM_CR, VM_HSAVE_PA, IGNNE, SMM_CTL, IA32_VMX_*: #GP as on a CPU
	 * without SVM or VMX; Intel PT, SMM_MONITOR_CTL: as on a CPU without
	 * those features */
	return false;
}

bool msr_write(struct vcpu *v, u32 msr, u64 val)
{
	int r = ds_msr_write(v, msr, val);
	if (r)
		return r > 0;
	switch (msr) {
	case MSR_EFER: {
		u64 cur = hv.ops->get_efer(v);
		if (val & ~efer_allowed())
			return false;
		/* APM 3.1.7: changing LME while paging is enabled is #GP */
		if ((hv.ops->get_cr(v, 0) & CR0_PG) && ((val ^ cur) & EFER_LME))
			return false;
		/* LMA is set and cleared by the processor; writes leave it */
		hv.ops->set_efer(v, (val & ~EFER_LMA) | (cur & EFER_LMA));
		return true;
	}
	case MSR_IA32_APICBASE:
		return apic_base_write(v, val);
	case MSR_FS_BASE:
	case MSR_GS_BASE:
	case MSR_KERNEL_GS_BASE:
		/* SDM Vol. 4, APM Vol. 2 4.5.3: a non-canonical base is #GP.
		 * QEMU's TCG takes one and its VMRUN then sign-extends it at the
		 * next exit (issue #15): under SVM the writes are intercepted
		 * for this check (svm/msr.c), the reads are not. */
		if (!hv.ops->set_base_msr ||
		    !ADDR_CANONICAL(val, (hv.ops->get_cr(v, 4) & CR4_LA57) ? 57 : 48))
			return false;
		hv.ops->set_base_msr(v, msr, val);
		return true;
	case X2APIC_MSR(APIC_ICR_LO):
		/* SDM 11.12.9: outside x2APIC mode, or with reserved bits, #GP */
		if (!lapic_x2apic_mode() || (val & X2APIC_ICR_RESERVED))
			return false;
		return mp_icr_write(v, (u32)val, (u32)(val >> 32), true);
	case MSR_IA32_XSS:
		/* the LBR component refused, as where CPUID.(0DH,1):ECX[15]
		 * is clear; the rest as the processor takes it (the hypervisor
		 * itself never uses XSAVES) */
		return !(val & XSS_LBR) && wrmsr_safe(msr, val) == 0;
	}
	if (mtrr_is_mtrr(msr))
		return mtrr_write(vmtrr_of(v), msr, val, phys_bits());
	if (is_frozen(msr)) {
		u64 cur;
		if (!hw_read(msr, &cur))
			return false;
		if (cur != val)
			LOG_WARN("the guest writes %016lx to MSR %x (now %016lx): refused (#GP), it "
				 "decides how the hypervisor's memory is decoded", val, msr, cur);
		return cur == val;
	}
	return false;
}
