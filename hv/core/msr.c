/* MSR policy for the MSRs the backends intercept: the guest sees a CPU
 * without SVM/VMX, and EFER behaves as on hardware (AMD APM Vol. 2 3.1.7,
 * Intel SDM Vol. 4 Table 2-2) while the hypervisor keeps what it needs;
 * the Debug Store MSRs belong to hv/trace/ds.c. */
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "core/msr.h"
#include "core/vcpu.h"

/* Every MSR the hypervisor owns: the backends intercept reads and writes of
 * exactly these (hv/svm/msr.c), and msr_read/msr_write decide for them. */
const u32 hv_owned_msrs[] = {
	MSR_EFER, MSR_VM_CR, MSR_IGNNE, MSR_SMM_CTL, MSR_VM_HSAVE_PA,
	MSR_IA32_DEBUGCTL, MSR_IA32_DS_AREA, MSR_IA32_MISC_ENABLE,
	MSR_IA32_PERF_GLOBAL_STATUS, MSR_IA32_PERF_GLOBAL_OVF_CTRL,
};
const u32 hv_nr_owned_msrs = ARRAY_SIZE(hv_owned_msrs);

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
		/* (VMX backend) as on a machine whose firmware locked VMX off
		 * (Intel SDM Vol. 3 24.7); writing a locked value is #GP */
		*val = (rdmsr(MSR_IA32_FEATURE_CONTROL) | FEATURE_CONTROL_LOCK) &
		       ~(FEATURE_CONTROL_VMX_INSIDE_SMX | FEATURE_CONTROL_VMX_OUTSIDE_SMX);
		return true;
	}
	/* VM_CR, VM_HSAVE_PA, IGNNE, SMM_CTL, IA32_VMX_*: #GP as on a CPU
	 * without SVM or VMX */
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
	}
	return false;
}
