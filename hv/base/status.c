/* Human-readable start-up status codes (shared by the hypervisor's log and
 * the loader's console message). */
#include "arch/x86/types.h"

const char *hv_status_str(int st)
{
	switch (st) {
	case HV_OK: return "ok";
	case HV_ERR_NO_SVM: return "this CPU has no usable AMD SVM (CPUID 0x80000001 ECX[2] clear, or no leaf 0x8000000A)";
	case HV_ERR_SVM_DISABLED: return "SVM is disabled by the firmware (VM_CR.SVMDIS set)";
	case HV_ERR_NO_NPT: return "SVM has no nested paging (CPUID 0x8000000A EDX[0] clear)";
	case HV_ERR_NO_MEMORY: return "the hypervisor's memory reserve is too small (raise 'memory' in hvtrace.cfg)";
	case HV_ERR_BAD_BOOT: return "malformed boot parameters from the loader";
	case HV_ERR_VMRUN_FAILED: return "the first VMRUN rejected the captured guest state (VMEXIT_INVALID)";
	case HV_ERR_UNSUPPORTED_CPU: return "this CPU has neither AMD SVM (CPUID 0x80000001 ECX[2]) nor Intel VMX (CPUID 1 ECX[5])";
	case HV_ERR_NO_VMX: return "this CPU has no Intel VMX (CPUID 1 ECX[5] clear)";
	case HV_ERR_VMX_DISABLED: return "VMX is disabled by the firmware (IA32_FEATURE_CONTROL locked without VMX)";
	case HV_ERR_VMX_CONTROLS: return "the CPU does not allow the VMX controls hvtrace needs (the serial log names them)";
	case HV_ERR_VMENTRY_FAILED: return "the first VM entry failed (the serial log has the reason and the guest state)";
	case HV_ERR_NO_EPT: return "VMX has no usable EPT (4-level, write-back or uncacheable structures)";
	case HV_ERR_REC_CONFIG: return "the recorder's rings do not fit (flight.size and stream.size against 'memory' or the ivshmem device's size; the serial log says which)";
	case HV_ERR_TOO_MANY_CPUS: return "more enabled processors than the hypervisor takes (HV_MAX_CPUS)";
	case HV_ERR_CPU_DIFFERS: return "this application processor differs from the boot processor (features or APIC ID; the serial log says which)";
	case HV_ERR_AP_NO_ANSWER: return "an application processor did not run the loader's procedure (MP services timed out or failed)";
	case HV_ERR_SMP_UNSUPPORTED: return "this CPU's virtualization cannot take application processors (VMX without the VMX-preemption timer): boot with one processor";
	case HV_ERR_CPU_DISABLED: return "a processor is disabled in the firmware and this backend cannot keep the guest from starting it outside the hypervisor: enable it, or boot without it";
	case HV_ERR_VMX_SETUP: return "entering VMX operation failed (VMXON, VMPTRLD or VMWRITE; the serial log has the VM-instruction error)";
	}
	return "unknown error";
}
