/* VMX exit dispatch: each basic exit reason (SDM Vol. 3 Appendix C) is
 * translated into an arch-neutral struct hv_event (base/vcpu.h) by the
 * table below, or handled here where it is an artifact of VMX itself (the
 * CR0/CR4 guest/host masks, XSETBV's unconditional exit). An exit reason
 * not in the table becomes HV_EV_UNHANDLED, which dispatch/event.c logs with a
 * VMCS dump before stopping the guest. Also: decoding of VM-instruction
 * errors (31.4) and VM-entry failures (27.8), and the VMCS dump. Root mode. */
#include "hvtrace/abi.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/log.h"
#include "base/prof.h"
#include "vmx/vmx.h"

u32 vmx_vmcs_failures;

void vmx_vmcs_failed(const char *op, u32 field)
{
	u64 err = 0;
	vmx_vmcs_failures++;
	/* reading the error field cannot fail where the failing access did
	 * with VMfailValid; with no current VMCS it leaves err at 0 */
	asm volatile("vmread %[f], %[v]" : [v] "=r"(err) : [f] "r"((u64)VMCS_VM_INSTRUCTION_ERROR) : "cc");
	LOG_ERR("%s of VMCS field %04x failed: %s", op, field, vmx_insn_error_str((u32)err));
}

/* 31.4 Table 31-1: VM-instruction error numbers */
const char *vmx_insn_error_str(u32 err)
{
	static const char *const s[] = {
		[1] = "VMCALL executed in VMX root operation",
		[2] = "VMCLEAR with invalid physical address",
		[3] = "VMCLEAR with VMXON pointer",
		[4] = "VMLAUNCH with non-clear VMCS",
		[5] = "VMRESUME with non-launched VMCS",
		[6] = "VMRESUME after VMXOFF",
		[7] = "VM entry with invalid control field(s)",
		[8] = "VM entry with invalid host-state field(s)",
		[9] = "VMPTRLD with invalid physical address",
		[10] = "VMPTRLD with VMXON pointer",
		[11] = "VMPTRLD with incorrect VMCS revision identifier",
		[12] = "VMREAD/VMWRITE from/to unsupported VMCS component",
		[13] = "VMWRITE to read-only VMCS component",
		[15] = "VMXON executed in VMX root operation",
		[16] = "VM entry with invalid executive-VMCS pointer",
		[17] = "VM entry with non-launched executive VMCS",
		[18] = "VM entry with executive-VMCS pointer not VMXON pointer",
		[19] = "VMCALL with non-clear VMCS",
		[20] = "VMCALL with invalid VM-exit control fields",
		[22] = "VMCALL with incorrect MSEG revision identifier",
		[23] = "VMXOFF under dual-monitor treatment of SMIs and SMM",
		[24] = "VMCALL with invalid SMM-monitor features",
		[25] = "VM entry with invalid VM-execution control fields in executive VMCS",
		[26] = "VM entry with events blocked by MOV SS",
		[28] = "invalid operand to INVEPT/INVVPID",
	};
	if (err < ARRAY_SIZE(s) && s[err])
		return s[err];
	return err ? "unknown VM-instruction error" : "no VM-instruction error recorded";
}

/* Appendix C: basic exit reasons, for logs */
const char *vmx_exit_reason_str(u32 basic)
{
	static const char *const s[] = {
		[0] = "exception or NMI", [1] = "external interrupt", [2] = "triple fault",
		[3] = "INIT signal", [4] = "start-up IPI", [5] = "I/O SMI", [6] = "other SMI",
		[7] = "interrupt window", [8] = "NMI window", [9] = "task switch", [10] = "CPUID",
		[11] = "GETSEC", [12] = "HLT", [13] = "INVD", [14] = "INVLPG", [15] = "RDPMC",
		[16] = "RDTSC", [17] = "RSM", [18] = "VMCALL", [19] = "VMCLEAR", [20] = "VMLAUNCH",
		[21] = "VMPTRLD", [22] = "VMPTRST", [23] = "VMREAD", [24] = "VMRESUME",
		[25] = "VMWRITE", [26] = "VMXOFF", [27] = "VMXON",
		[28] = "control-register access", [29] = "MOV DR", [30] = "I/O instruction",
		[31] = "RDMSR", [32] = "WRMSR", [33] = "VM-entry failure: invalid guest state",
		[34] = "VM-entry failure: MSR loading", [36] = "MWAIT", [37] = "monitor trap flag",
		[39] = "MONITOR", [40] = "PAUSE", [41] = "VM-entry failure: machine-check event",
		[43] = "TPR below threshold", [44] = "APIC access", [45] = "virtualized EOI",
		[46] = "access to GDTR or IDTR", [47] = "access to LDTR or TR",
		[48] = "EPT violation", [49] = "EPT misconfiguration", [50] = "INVEPT",
		[51] = "RDTSCP", [52] = "VMX-preemption timer expired", [53] = "INVVPID",
		[54] = "WBINVD/WBNOINVD", [55] = "XSETBV", [56] = "APIC write", [57] = "RDRAND",
		[58] = "INVPCID", [59] = "VMFUNC", [60] = "ENCLS", [61] = "RDSEED",
		[62] = "page-modification log full", [63] = "XSAVES", [64] = "XRSTORS",
	};
	if (basic < ARRAY_SIZE(s) && s[basic])
		return s[basic];
	return "unknown exit reason";
}

/* 27.8: a VM entry that failed while or after loading the guest state is
 * reported as a VM exit with bit 31 of the exit reason set. */
void vmx_log_entry_failure(u32 reason)
{
	u32 basic = VMX_EXIT_REASON_BASIC(reason);
	u64 q = vmcs_readl(VMCS_EXIT_QUALIFICATION);
	const char *detail = "";

	if (basic == VMX_EXIT_INVALID_GUEST_STATE) {
		detail = q == VMX_ENTRY_FAIL_QUAL_PDPTE ? ": a PDPTE failed to load"
			 : q == VMX_ENTRY_FAIL_QUAL_NMI_BLOCKED
				 ? ": NMI injection while NMIs are blocked"
			 : q == VMX_ENTRY_FAIL_QUAL_LINK_PTR ? ": invalid VMCS link pointer"
							     : ": a guest-state check of 27.3.1 failed";
	} else if (basic == VMX_EXIT_MSR_LOADING) {
		detail = ": the qualification is the 1-based index of the VM-entry MSR-load entry";
	}
	LOG_ERR("VM entry failed: exit reason %08x (%s), qualification %lx%s", reason,
		vmx_exit_reason_str(basic), q, detail);
}

/*
 * Exit handlers. Contract: a handler returns true when it has translated
 * the exit into *ev (dispatch/event.c then emulates, injects or stops, see
 * hv_handle_event()); it returns false when it has handled the exit
 * completely here: emulated and advanced RIP, or injected the fault the
 * hardware would raise (RIP unchanged). Nothing is silently skipped.
 */
typedef bool (*vmx_exit_fn)(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev);

static bool exit_rdmsr(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	ev->kind = HV_EV_MSR_READ;
	return true;
}

static bool exit_wrmsr(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	ev->kind = HV_EV_MSR_WRITE;
	return true;
}

static bool exit_ept_violation(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	/* 29.3.3.2: the EPT maps everything; only the local APIC's page is
	 * read-only (dispatch/mp.c) and the debugger's page breakpoints'
	 * pages not executable. Table 28-7: bit 1 of the qualification a data
	 * write, bit 2 an instruction fetch, bits 5:3 the entry's read, write
	 * and execute permissions (any: it was present), as HV_NPF_* */
	u64 q = vmcs_readl(VMCS_EXIT_QUALIFICATION);
	ev->kind = HV_EV_NPF;
	ev->gpa = vmcs_read64(VMCS_GUEST_PHYSICAL_ADDRESS);
	ev->error_code = ((q & BIT(1)) ? HV_NPF_WRITE : 0) | ((q & BIT(2)) ? HV_NPF_FETCH : 0) |
			 ((q & (BIT(3) | BIT(4) | BIT(5))) ? HV_NPF_PRESENT : 0);
	return true;
}

/* 28.2.1 Table 28-5: port, size and form in the qualification; the length
 * of the instruction comes with every instruction exit (28.2.5) */
static bool exit_io(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	u64 q = vmcs_readl(VMCS_EXIT_QUALIFICATION);
	ev->kind = HV_EV_IO;
	ev->io_port = VMX_IO_QUAL_PORT(q);
	ev->io_size = (u8)VMX_IO_QUAL_SIZE(q);
	ev->io_flags = ((q & VMX_IO_QUAL_IN) ? HV_IO_IN : 0) | ((q & VMX_IO_QUAL_STRING) ? HV_IO_STRING : 0) |
		       ((q & VMX_IO_QUAL_REP) ? HV_IO_REP : 0);
	return true;
}

#define SIMPLE(name, k) \
	static bool name(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev) { ev->kind = k; return true; }
SIMPLE(exit_cpuid, HV_EV_CPUID)
SIMPLE(exit_vmcall, HV_EV_HYPERCALL)
SIMPLE(exit_virt_insn, HV_EV_VIRT_INSN)
SIMPLE(exit_triple_fault, HV_EV_TRIPLE_FAULT)
SIMPLE(exit_invd, HV_EV_INVD)	/* 26.1.2: INVD exits unconditionally */
SIMPLE(exit_hlt, HV_EV_HLT)	/* HLT exiting, while an interrupt is held */
SIMPLE(exit_rdpmc, HV_EV_RDPMC)	/* RDPMC exiting: the virtual PMU's counters */
#undef SIMPLE

/* Emulation done here ends like core's: advance RIP by the exit's length. */
static void skip(struct vcpu *v, const struct hv_event *ev, u8 base_len)
{
	hv_skip_insn(v, ev, base_len);
}

/* SDM Vol. 3 4.4.1: loading CR3 with PAE paging on (or enabling it) loads
 * the four PDPTEs from the 32-byte-aligned table CR3 names; with EPT the
 * entry takes them from the VMCS (27.3.2.4). A table outside guest RAM is
 * refused (#GP, as a PDPTE the processor cannot load). */
static bool load_pdptes(u64 cr3)
{
	u64 pdpte[4];
	if (!gmem_read_phys(cr3 & 0xffffffe0ull, pdpte, sizeof(pdpte)))
		return false;
	vmcs_write64(VMCS_GUEST_PDPTE0, pdpte[0]);
	vmcs_write64(VMCS_GUEST_PDPTE1, pdpte[1]);
	vmcs_write64(VMCS_GUEST_PDPTE2, pdpte[2]);
	vmcs_write64(VMCS_GUEST_PDPTE3, pdpte[3]);
	return true;
}

/* MOV to CR3, which exits only while LBR batching runs (CR3-load exiting,
 * vmx_lbr_switch). SDM Vol. 2B MOV—Move to/from Control Registers and
 * Vol. 3 4.10.4.1: in 64-bit mode the whole register, otherwise its low
 * 32 bits; with CR4.PCIDE bit 63 says "do not invalidate" and is not
 * loaded (no VPID here: every VM entry invalidates anyway, 29.4.3.3); a 1
 * in a bit at or above MAXPHYADDR is #GP(0), but for LAM's bits 62:61
 * where CPUID enumerates LAM; PAE paging outside long mode loads the
 * PDPTEs. */
static void mov_to_cr3(struct vcpu *v, u64 val, const struct hv_event *ev)
{
	struct cpuid_regs r;
	struct hv_segment cs;
	u64 efer = vmcs_read64(VMCS_GUEST_IA32_EFER), cr4 = hv.ops->get_cr(v, 4);
	hv.ops->get_seg(v, SEG_CS, &cs);
	if (!(efer & EFER_LMA) || !(cs.attr & SEG_ATTR_L))
		val = (u32)val;
	if (efer & EFER_LMA) {
		if (cr4 & CR4_PCIDE)
			val &= ~CR3_PCID_NOFLUSH;
		cpuid_count(0x80000000, 0, &r);
		u32 maxphy = 36;
		if (r.eax >= 0x80000008) {
			cpuid_count(0x80000008, 0, &r);
			maxphy = r.eax & 0xff;
		}
		u64 reserved = ~0ull << MIN(maxphy, 63u);
		cpuid_count(0, 0, &r);
		if (r.eax >= 7) {
			cpuid_count(7, 1, &r);
			if (r.eax & CPUID_7_1_EAX_LAM)
				reserved &= ~CR3_LAM_BITS;
		}
		if (val & reserved) {
			hv_inject_fault(v, X86_GP, true, 0);
			return;
		}
	} else if ((hv.ops->get_cr(v, 0) & CR0_PG) && (cr4 & CR4_PAE) && !load_pdptes(val)) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	vmcs_writel(VMCS_GUEST_CR3, val);
	skip(v, ev, 3);
}

/* MOV to CR0 that changes a bit of the CR0 guest/host mask (26.3: the
 * fixed-1 bits VMX needs, in practice NE). The guest's value goes to the
 * read shadow, the hardware keeps the fixed bits; the rest is MOV to CR0
 * as the SDM describes it (Vol. 2B MOV, Vol. 3 2.5, 10.8.5 for the
 * long-mode transitions), done here because this exit replaces it. */
static void mov_to_cr0(struct vcpu *v, struct vmx_vcpu *vx, u64 val, const struct hv_event *ev)
{
	u64 old = hv.ops->get_cr(v, 0), efer = vmcs_read64(VMCS_GUEST_IA32_EFER);
	u64 cr4 = hv.ops->get_cr(v, 4);

	if ((val >> 32) || ((val & CR0_PG) && !(val & CR0_PE)) ||
	    ((val & CR0_NW) && !(val & CR0_CD))) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	if (!(old & CR0_PG) && (val & CR0_PG) && (efer & EFER_LME)) {
		if (!(cr4 & CR4_PAE)) {
			hv_inject_fault(v, X86_GP, true, 0);
			return;
		}
		vmx_set_guest_efer(efer | EFER_LMA);
	} else if ((old & CR0_PG) && !(val & CR0_PG) && (efer & EFER_LMA)) {
		struct hv_segment cs;
		hv.ops->get_seg(v, SEG_CS, &cs);
		if (cs.attr & SEG_ATTR_L) {
			hv_inject_fault(v, X86_GP, true, 0);
			return;
		}
		vmx_set_guest_efer(efer & ~EFER_LMA);
	}
	if (!(old & CR0_PG) && (val & CR0_PG) && (cr4 & CR4_PAE) && !(efer & EFER_LME) &&
	    !load_pdptes(vmcs_readl(VMCS_GUEST_CR3))) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	vmcs_writel(VMCS_CR0_READ_SHADOW, val);
	vmcs_writel(VMCS_GUEST_CR0, (val | (vmx_caps.cr0_fixed0 & vx->cr0_mask)) & vmx_caps.cr0_fixed1);
	skip(v, ev, 3);
}

/* MOV to CR4 that changes a bit of the CR4 guest/host mask: VMXE, and any
 * other bit VMX fixes to 1. A CPU without VMX has no CR4.VMXE: setting it
 * is #GP (SDM Vol. 3 2.5, reserved bit), as is any bit the CPU lacks. */
static void mov_to_cr4(struct vcpu *v, struct vmx_vcpu *vx, u64 val, const struct hv_event *ev)
{
	u64 efer = vmcs_read64(VMCS_GUEST_IA32_EFER), old = hv.ops->get_cr(v, 4);

	if ((val & CR4_VMXE) || (val & ~vmx_caps.cr4_fixed1) ||
	    ((efer & EFER_LMA) && !(val & CR4_PAE)) ||
	    ((efer & EFER_LMA) && ((val ^ old) & CR4_LA57))) {
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	vmcs_writel(VMCS_CR4_READ_SHADOW, val);
	vmcs_writel(VMCS_GUEST_CR4, (val | vmx_caps.cr4_fixed0 | CR4_VMXE) & vmx_caps.cr4_fixed1);
	skip(v, ev, 3);
}

static bool exit_cr_access(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	u64 q = vmcs_readl(VMCS_EXIT_QUALIFICATION);
	u64 val = v->gpr[VMX_CR_QUAL_GPR(q)];

	/* Only MOV to CR0/CR4 can exit, and MOV to CR3 while LBR batching
	 * runs: no CR3-store or CR8 exiting, and CLTS/LMSW touch no masked
	 * bit (26.1.3) */
	switch (VMX_CR_QUAL_ACCESS(q) == VMX_CR_ACCESS_MOV_TO_CR ? VMX_CR_QUAL_CR(q) : ~0u) {
	case 0:
		mov_to_cr0(v, vx, val, ev);
		return false;
	case 3:
		mov_to_cr3(v, val, ev);
		return false;
	case 4:
		mov_to_cr4(v, vx, val, ev);
		return false;
	}
	ev->kind = HV_EV_UNHANDLED;
	return true;
}

/* XSETBV exits unconditionally (26.1.2). XCR0 is not switched between
 * guest and host (the hypervisor uses no extended state), so a valid value
 * is set here as the guest asked; an invalid one is #GP as the SDM's
 * XSETBV lists it (Vol. 2C XSETBV, Vol. 1 13.3). CPL > 0 and CR4.OSXSAVE
 * clear fault before the exit. */
static bool exit_xsetbv(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	struct cpuid_regs r;
	u32 idx = (u32)v->gpr[GPR_RCX];
	u64 val = ((v->gpr[GPR_RDX] & 0xffffffffull) << 32) | (u32)v->gpr[GPR_RAX];
	const u64 avx512 = 7ull << 5, amx = 3ull << 17;

	cpuid_count(0xd, 0, &r);
	u64 supported = ((u64)r.edx << 32) | r.eax;
	if (idx != 0 || (val & ~supported) || !(val & 1) || ((val & 4) && !(val & 2)) ||
	    ((val & avx512) && ((val & avx512) != avx512 || !(val & 4))) ||
	    ((val & amx) && (val & amx) != amx)) {
		hv_inject_fault(v, X86_GP, true, 0);
		return false;
	}
	asm volatile("xsetbv" ::"c"(idx), "a"((u32)val), "d"((u32)(val >> 32)) : "memory");
	skip(v, ev, 3);
	return false;
}

/* 27.2.2: an exception (or NMI) in the exception bitmap exits before
 * delivery; the interruption information gives vector and error code, the
 * qualification the #PF address or, for #DB, the DR6 bits the CPU did not
 * write into DR6 (27.1): written now so the engine reads DR6 as on SVM. */
static bool exit_exception(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	u32 info = vmcs_read32(VMCS_VM_EXIT_INTERRUPTION_INFORMATION);
	u64 qual = vmcs_readl(VMCS_EXIT_QUALIFICATION);
	(void)v;
	(void)vx;
	if (VMX_INTR_INFO_TYPE(info) == 2) { /* NMI exiting (25.6.1): core re-delivers it */
		/* LBR batching's PMI ends a batch: an exit with nothing to
		 * deliver (the engine drains at every exit's start) */
		ev->kind = vmx_lbr_pmi(v) ? HV_EV_INTR : HV_EV_NMI;
		ev->vector = 0;
		ev->insn_len = 0;
		return true;
	}
	ev->kind = HV_EV_EXCEPTION;
	ev->vector = (u8)VMX_INTR_INFO_VECTOR(info);
	ev->has_error = info & VMX_INTR_INFO_HAS_ERROR_CODE;
	ev->error_code = ev->has_error ? vmcs_read32(VMCS_VM_EXIT_INTERRUPTION_ERROR_CODE) : 0;
	ev->fault_addr = qual;
	ev->insn_len = 0;
	if (ev->vector == X86_DB) {
		u64 dr6 = DR6_CLEAN | (qual & DR6_CAUSES);
		asm volatile("mov %0, %%dr6" ::"r"(dr6));
	}
	return true;
}

/* 27.2.2: with "acknowledge interrupt on exit" the vector is already
 * taken from the APIC and reported here. */
static bool exit_external_interrupt(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	u32 info = vmcs_read32(VMCS_VM_EXIT_INTERRUPTION_INFORMATION);
	(void)v;
	(void)vx;
	ev->kind = HV_EV_INTR;
	ev->vector = (info & VMX_INTR_INFO_VALID) ? (u8)VMX_INTR_INFO_VECTOR(info) : 0;
	ev->insn_len = 0;
	return true;
}

/* 26.2: interrupt-window exiting, as soon as the guest's IF and
 * interruptibility state allow an external interrupt (not an instruction:
 * no length) */
static bool exit_interrupt_window(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	(void)v;
	(void)vx;
	ev->kind = HV_EV_IRQ_WINDOW;
	ev->insn_len = 0;
	return true;
}

static bool exit_mov_dr(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	(void)v;
	(void)vx;
	ev->kind = HV_EV_DR_ACCESS;	/* core decodes the MOV itself */
	return true;
}

/* 26.2: an INIT exits unconditionally in VMX non-root operation. The
 * guest's own INITs never reach a processor (dispatch/mp.c delivers them);
 * one by another path (an I/O APIC or MSI message) becomes the vCPU's INIT
 * there, never a real reset out of VMX operation. */
static bool exit_init(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	(void)v;
	(void)vx;
	ev->kind = HV_EV_INIT;
	ev->insn_len = 0;
	return true;
}

/* 26.2: a SIPI exits only in the wait-for-SIPI activity state, which the
 * hypervisor never enters: ignored, as a processor not waiting ignores it */
static bool exit_sipi(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	(void)vx;
	(void)ev;
	LOG_WARN("vcpu %u: a SIPI exit outside the wait-for-SIPI state: ignored", v->id);
	return false;
}

/* 26.5.1: the preemption timer ran out (armed with more than one
 * processor): nothing to deliver; the exit is the chance to notice what
 * other processors asked (an INIT, a recorder change) */
static bool exit_preemption_timer(struct vcpu *v, struct vmx_vcpu *vx, struct hv_event *ev)
{
	(void)v;
	(void)vx;
	ev->kind = HV_EV_INTR;	/* vector 0: nothing to deliver */
	ev->vector = 0;
	ev->insn_len = 0;
	return true;
}

static const vmx_exit_fn vmx_exit_handlers[] = {
	[VMX_EXIT_PREEMPTION_TIMER] = exit_preemption_timer,
	[VMX_EXIT_INIT_SIGNAL] = exit_init,
	[VMX_EXIT_SIPI] = exit_sipi,
	[VMX_EXIT_MOV_DR] = exit_mov_dr,
	[VMX_EXIT_EXCEPTION_OR_NMI] = exit_exception,
	[VMX_EXIT_EXTERNAL_INTERRUPT] = exit_external_interrupt,
	[VMX_EXIT_INTERRUPT_WINDOW] = exit_interrupt_window,
	[VMX_EXIT_HLT] = exit_hlt,
	[VMX_EXIT_TRIPLE_FAULT] = exit_triple_fault,
	[VMX_EXIT_CPUID] = exit_cpuid,
	[VMX_EXIT_INVD] = exit_invd,
	[VMX_EXIT_RDPMC] = exit_rdpmc,
	[VMX_EXIT_VMCALL] = exit_vmcall,
	[VMX_EXIT_VMCLEAR] = exit_virt_insn,
	[VMX_EXIT_VMLAUNCH] = exit_virt_insn,
	[VMX_EXIT_VMPTRLD] = exit_virt_insn,
	[VMX_EXIT_VMPTRST] = exit_virt_insn,
	[VMX_EXIT_VMREAD] = exit_virt_insn,
	[VMX_EXIT_VMRESUME] = exit_virt_insn,
	[VMX_EXIT_VMWRITE] = exit_virt_insn,
	[VMX_EXIT_VMXOFF] = exit_virt_insn,
	[VMX_EXIT_VMXON] = exit_virt_insn,
	[VMX_EXIT_CONTROL_REGISTER_ACCESS] = exit_cr_access,
	[VMX_EXIT_IO_INSTRUCTION] = exit_io,
	[VMX_EXIT_RDMSR] = exit_rdmsr,
	[VMX_EXIT_WRMSR] = exit_wrmsr,
	[VMX_EXIT_EPT_VIOLATION] = exit_ept_violation,
	[VMX_EXIT_INVEPT] = exit_virt_insn,
	[VMX_EXIT_INVVPID] = exit_virt_insn,
	[VMX_EXIT_XSETBV] = exit_xsetbv,
	[VMX_EXIT_VMFUNC] = exit_virt_insn,
};
_Static_assert(ARRAY_SIZE(vmx_exit_handlers) <= VMX_EXIT_REASON_MAX, "Appendix C");

void vmx_handle_exit(struct vcpu *v, struct vmx_vcpu *vx, u32 reason)
{
	u32 basic = VMX_EXIT_REASON_BASIC(reason);
	u32 len = vmcs_read32(VMCS_VM_EXIT_INSTRUCTION_LENGTH);
	struct hv_event ev = {
		.kind = HV_EV_UNHANDLED,
		.raw = reason,
		.msr = (u32)v->gpr[GPR_RCX],
	};
	bool to_core = true;

	/* 28.2.5: the length is reported for exits caused by instructions,
	 * the only events core advances RIP for */
	if (len >= 1 && len <= 15)
		ev.insn_len = (u8)len;
	/* 27.2.4: the event this exit interrupted the delivery of (types 4-6,
	 * software interrupts and exceptions, count as software) */
	u32 vec = vmcs_read32(VMCS_IDT_VECTORING_INFORMATION);
	if (vec & VMX_INTR_INFO_VALID) {
		u8 type = (u8)((vec >> 8) & 7);
		ev.vectoring = true;
		ev.vec_vector = (u8)vec;
		ev.vec_type = type >= 4 ? HV_VEC_SOFT : type;
	}

	u64 rip = v->rip;
	prof_switch(v, HVTRACE_PROF_HANDLER);
	/* The instructions emulated here (MOV to CR0/CR3/CR4, XSETBV) take
	 * core's first step first, like every exit: the engine settles what
	 * it planned and LBR batching drains before anything moves (a MOV to
	 * CR3's batch belongs to the old address space). One that is not
	 * emulated after all stops the guest through core. */
	bool own = basic == VMX_EXIT_CONTROL_REGISTER_ACCESS || basic == VMX_EXIT_XSETBV;
	if (own) {
		ev.kind = HV_EV_CR_WRITE;
		hv_exit_begin(v, &ev);
	}
	if (basic < ARRAY_SIZE(vmx_exit_handlers) && vmx_exit_handlers[basic])
		to_core = vmx_exit_handlers[basic](v, vx, &ev);
	if (to_core)
		hv_handle_event(v, &ev);
	else if (own)
		hv_backend_done(v, v->rip != rip);
	else
		hv_backend_emulated(v, v->rip != rip);
}

static void dump_seg(const char *n, u32 sel, u32 ar, u32 limit, u32 base)
{
	LOG_ERR("  %-4s sel %04lx ar %05lx limit %08lx base %016lx", n, vmcs_read_any(sel),
		vmcs_read_any(ar), vmcs_read_any(limit), vmcs_read_any(base));
}

void vmx_dump(struct vcpu *v)
{
	struct vmx_vcpu *vx = v->arch;
	u32 reason = vmcs_read32(VMCS_EXIT_REASON);

	if (!vx->launched && !(reason & VMX_EXIT_REASON_ENTRY_FAILURE))
		LOG_ERR("vcpu %u VMCS at %016lx: no VM exit yet", v->id, vx->vmcs_pa);
	else
		LOG_ERR("vcpu %u VMCS at %016lx: exit reason %x (%s) qualification %lx", v->id,
			vx->vmcs_pa, reason, vmx_exit_reason_str(VMX_EXIT_REASON_BASIC(reason)),
			vmcs_readl(VMCS_EXIT_QUALIFICATION));
	LOG_ERR("  VM-instruction error %u, exit intr %x/%x, idt vectoring %x/%x, insn len %u",
		vmcs_read32(VMCS_VM_INSTRUCTION_ERROR),
		vmcs_read32(VMCS_VM_EXIT_INTERRUPTION_INFORMATION),
		vmcs_read32(VMCS_VM_EXIT_INTERRUPTION_ERROR_CODE),
		vmcs_read32(VMCS_IDT_VECTORING_INFORMATION), vmcs_read32(VMCS_IDT_VECTORING_ERROR_CODE),
		vmcs_read32(VMCS_VM_EXIT_INSTRUCTION_LENGTH));
	LOG_ERR("  rip %016lx rsp %016lx rflags %016lx cpl %d", vmcs_readl(VMCS_GUEST_RIP),
		vmcs_readl(VMCS_GUEST_RSP), vmcs_readl(VMCS_GUEST_RFLAGS), hv.ops->get_cpl(v));
	LOG_ERR("  rax %016lx rbx %016lx rcx %016lx rdx %016lx", v->gpr[GPR_RAX], v->gpr[GPR_RBX],
		v->gpr[GPR_RCX], v->gpr[GPR_RDX]);
	LOG_ERR("  rsi %016lx rdi %016lx rbp %016lx", v->gpr[GPR_RSI], v->gpr[GPR_RDI],
		v->gpr[GPR_RBP]);
	LOG_ERR("  cr0 %016lx (shadow %lx) cr3 %016lx cr4 %016lx (shadow %lx)",
		vmcs_readl(VMCS_GUEST_CR0), vmcs_readl(VMCS_CR0_READ_SHADOW),
		vmcs_readl(VMCS_GUEST_CR3), vmcs_readl(VMCS_GUEST_CR4),
		vmcs_readl(VMCS_CR4_READ_SHADOW));
	LOG_ERR("  efer %016lx pat %016lx debugctl %lx dr7 %lx", vmcs_read64(VMCS_GUEST_IA32_EFER),
		vmcs_read64(VMCS_GUEST_IA32_PAT), vmcs_read64(VMCS_GUEST_IA32_DEBUGCTL),
		vmcs_readl(VMCS_GUEST_DR7));
	LOG_ERR("  interruptibility %x activity %x pending dbg %lx entry intr %x",
		vmcs_read32(VMCS_GUEST_INTERRUPTIBILITY_STATE), vmcs_read32(VMCS_GUEST_ACTIVITY_STATE),
		vmcs_readl(VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS),
		vmcs_read32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION));
	LOG_ERR("  controls pin %x proc %x proc2 %x exit %x entry %x eptp %lx",
		vmcs_read32(VMCS_PIN_BASED_VM_EXECUTION_CONTROLS),
		vmcs_read32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS),
		vmcs_read32(VMCS_SECONDARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS),
		vmcs_read32(VMCS_PRIMARY_VM_EXIT_CONTROLS), vmcs_read32(VMCS_VM_ENTRY_CONTROLS),
		vmcs_read64(VMCS_EPT_POINTER));
	dump_seg("es", VMCS_GUEST_ES_SELECTOR, VMCS_GUEST_ES_ACCESS_RIGHTS, VMCS_GUEST_ES_LIMIT, VMCS_GUEST_ES_BASE);
	dump_seg("cs", VMCS_GUEST_CS_SELECTOR, VMCS_GUEST_CS_ACCESS_RIGHTS, VMCS_GUEST_CS_LIMIT, VMCS_GUEST_CS_BASE);
	dump_seg("ss", VMCS_GUEST_SS_SELECTOR, VMCS_GUEST_SS_ACCESS_RIGHTS, VMCS_GUEST_SS_LIMIT, VMCS_GUEST_SS_BASE);
	dump_seg("ds", VMCS_GUEST_DS_SELECTOR, VMCS_GUEST_DS_ACCESS_RIGHTS, VMCS_GUEST_DS_LIMIT, VMCS_GUEST_DS_BASE);
	dump_seg("fs", VMCS_GUEST_FS_SELECTOR, VMCS_GUEST_FS_ACCESS_RIGHTS, VMCS_GUEST_FS_LIMIT, VMCS_GUEST_FS_BASE);
	dump_seg("gs", VMCS_GUEST_GS_SELECTOR, VMCS_GUEST_GS_ACCESS_RIGHTS, VMCS_GUEST_GS_LIMIT, VMCS_GUEST_GS_BASE);
	dump_seg("ldtr", VMCS_GUEST_LDTR_SELECTOR, VMCS_GUEST_LDTR_ACCESS_RIGHTS, VMCS_GUEST_LDTR_LIMIT, VMCS_GUEST_LDTR_BASE);
	dump_seg("tr", VMCS_GUEST_TR_SELECTOR, VMCS_GUEST_TR_ACCESS_RIGHTS, VMCS_GUEST_TR_LIMIT, VMCS_GUEST_TR_BASE);
	LOG_ERR("  gdtr %016lx/%x idtr %016lx/%x exits %lu", vmcs_readl(VMCS_GUEST_GDTR_BASE),
		vmcs_read32(VMCS_GUEST_GDTR_LIMIT), vmcs_readl(VMCS_GUEST_IDTR_BASE),
		vmcs_read32(VMCS_GUEST_IDTR_LIMIT), v->exits);
}
