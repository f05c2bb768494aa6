/* Intel VMX backend: probe, VMXON, the VMCS built from the live processor
 * state (the firmware becomes the guest), the run loop, and the ops table.
 * Runs in VMX root operation with interrupts off. SDM Vol. 3 chapters 24-31. */
#include "hvtrace/abi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/desc.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/resume.h"
#include "base/lapic.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/prof.h"
#include "trace/lbr.h"
#include "trace/rec.h"
#include "vmx/ctls.h"
#include "vmx/vmx.h"

_Static_assert(VMCS_HOST_RSP == 0x6c14, "run.S writes HOST_RSP by its encoding");

struct vmx_caps vmx_caps;

static const char *const pin_names[32] = {
	[0] = "external-interrupt exiting", [3] = "NMI exiting", [5] = "virtual NMIs",
	[6] = "activate VMX-preemption timer",
};
static const char *const proc_names[32] = {
	[7] = "HLT exiting", [11] = "RDPMC exiting", [15] = "CR3-load exiting", [16] = "CR3-store exiting",
	[25] = "use I/O bitmaps", [27] = "monitor trap flag", [28] = "use MSR bitmaps",
	[31] = "activate secondary controls",
};
static const char *const proc2_names[32] = {
	[1] = "enable EPT", [3] = "enable RDTSCP", [5] = "enable VPID",
	[7] = "unrestricted guest", [12] = "enable INVPCID", [20] = "enable XSAVES/XRSTORS",
	[26] = "enable user wait and pause",
};
static const char *const exit_names[32] = {
	[2] = "save debug controls", [9] = "host address-space size",
	[18] = "save IA32_PAT", [19] = "load IA32_PAT", [20] = "save IA32_EFER",
	[21] = "load IA32_EFER",
};
static const char *const entry_names[32] = {
	[2] = "load debug controls", [9] = "IA-32e mode guest", [14] = "load IA32_PAT",
	[15] = "load IA32_EFER",
};

/*
 * What hvtrace needs and what it uses when offered. No interrupt, NMI or HLT
 * exiting while nothing traces: the guest takes its own interrupts through
 * its own IDT, as on SVM (tracing turns them on, dispatch/irq.c); I/O exits only for the ports dispatch/ioport.c names (I/O bitmaps).
 * Every MOV to or from a debug register exits: the guest's debug registers
 * are the hypervisor's to load (trace_host_dr7, docs/security.md).
 * EPT and unrestricted guest let the firmware run exactly as it was; the
 * MSR bitmap keeps MSR exits to the few MSRs hvtrace owns. RDTSCP,
 * INVPCID, XSAVES and the user-wait instructions #UD in the guest unless
 * enabled (25.6.2), so they are turned on wherever the CPU allows them.
 */
/* The preemption timer, where the CPU has it: with more than one
 * processor every vCPU exits at least every VMX_POLL_US, and notices then
 * what other processors asked of it (base/hv.c hv_kick) */
static const struct vmx_ctl_word want_pin = {
	"pin-based VM-execution", "IA32_VMX_PINBASED_CTLS", 0, PIN_PREEMPTION_TIMER, pin_names,
};
static const struct vmx_ctl_word want_proc = {
	"primary processor-based VM-execution", "IA32_VMX_PROCBASED_CTLS",
	PROC_USE_MSR_BITMAPS | PROC_USE_IO_BITMAPS | PROC_ACTIVATE_SECONDARY_CONTROLS |
		PROC_MOV_DR_EXITING | PROC_RDPMC_EXITING,	/* RDPMC: the virtual PMU's */
	0, proc_names,
};
static const struct vmx_ctl_word want_proc2 = {
	"secondary processor-based VM-execution", "IA32_VMX_PROCBASED_CTLS2",
	PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST,
	PROC2_ENABLE_RDTSCP | PROC2_ENABLE_INVPCID | PROC2_ENABLE_XSAVES_XRSTORS |
		PROC2_ENABLE_USER_WAIT_AND_PAUSE,
	proc2_names,
};
static const struct vmx_ctl_word want_exit = {
	"VM-exit", "IA32_VMX_EXIT_CTLS",
	EXIT_HOST_ADDRESS_SPACE_SIZE | EXIT_SAVE_IA32_EFER | EXIT_LOAD_IA32_EFER,
	EXIT_SAVE_DEBUG_CONTROLS | EXIT_SAVE_IA32_PAT | EXIT_LOAD_IA32_PAT, exit_names,
};
static const struct vmx_ctl_word want_entry = {
	"VM-entry", "IA32_VMX_ENTRY_CTLS",
	ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_IA32_EFER,
	ENTRY_LOAD_DEBUG_CONTROLS | ENTRY_LOAD_IA32_PAT, entry_names,
};

static int adjust(const struct vmx_ctl_word *w, u32 msr, u32 *out)
{
	char msg[200];
	int st = vmx_adjust_ctls(w, rdmsr(msr), out, msg, sizeof(msg));
	if (st)
		LOG_ERR("%s", msg);
	return st;
}

/* LBR batching's capability (docs/branch-engine.md "LBR batching"): from
 * CPUID and the VMX capability MSRs only, never an LBR or PMU MSR. Each
 * leaf is read only where CPUID.0 says it exists. The VM-entry/exit
 * controls that switch IA32_LBR_CTL and IA32_PERF_GLOBAL_CTRL (A.4, A.5:
 * allowed-1 settings in the high halves) keep the guest's LBR and counters
 * off in root mode. Returns the depth, 0: none usable. */
static u32 vmx_lbr_depth(bool true_ctls)
{
	struct cpuid_regs r;
	struct lbr_cpuid c = { 0 };
	cpuid_count(0, 0, &r);
	c.max_leaf = r.eax;
	if (c.max_leaf >= 7) {
		cpuid_count(7, 0, &r);
		c.leaf7_edx = r.edx;
	}
	if (c.max_leaf >= 0xa) {
		cpuid_count(0xa, 0, &r);
		c.leaf0a_eax = r.eax;
	}
	if (c.max_leaf >= 0x1c) {
		cpuid_count(0x1c, 0, &r);
		c.leaf1c_eax = r.eax;
		c.leaf1c_ebx = r.ebx;
		c.leaf1c_ecx = r.ecx;
	}
	u32 entry1 = (u32)(rdmsr(true_ctls ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS) >> 32);
	u32 exit1 = (u32)(rdmsr(true_ctls ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS) >> 32);
	u32 want_entry1 = ENTRY_LOAD_IA32_LBR_CTL | ENTRY_LOAD_IA32_PERF_GLOBAL_CTRL;
	u32 want_exit1 = EXIT_CLEAR_IA32_LBR_CTL | EXIT_LOAD_IA32_PERF_GLOBAL_CTRL;
	return lbr_usable(&c, (entry1 & want_entry1) == want_entry1 && (exit1 & want_exit1) == want_exit1);
}

/* --- LBR batching: the backend's side (docs/branch-engine.md) ------------- */

static u64 vmx_lbr_rdmsr(u32 msr)
{
	return rdmsr(msr);
}

static void vmx_lbr_wrmsr(u32 msr, u64 val)
{
	wrmsr(msr, val);
}

/*
 * On: the guest IA32_LBR_CTL field with "load guest IA32_LBR_CTL" at
 * entry and "clear IA32_LBR_CTL" at exit (SDM Vol. 3 25.7.1, 25.8.1,
 * 28.3.1, 27.3.1.1: the stack records guest branches only and is frozen
 * at every exit); IA32_PERF_GLOBAL_CTRL loaded with the batch counters'
 * enables at entry and with 0 at exit (the host-state field), so they
 * count the guest's branches only; the LVT performance-counter entry of
 * this processor's local APIC delivers their overflow as an NMI (SDM Vol.
 * 3 20.2.1 / 12.5.1), which NMI exiting (on while tracing) turns into an
 * exit (vmx_lbr_pmi); CR3-load exiting (25.6.2), so that a batch never
 * spans an address-space switch. The root-mode GLOBAL_CTRL is cleared
 * first: the selects lbr_arm() enables must not count the hypervisor.
 * Off: all as before, the LVT entry as the guest left it.
 */
static void vmx_lbr_switch(struct vcpu *v, u64 lbr_ctl, u64 global_ctrl)
{
	struct vmx_vcpu *vx = v->arch;
	const u32 entry = ENTRY_LOAD_IA32_LBR_CTL | ENTRY_LOAD_IA32_PERF_GLOBAL_CTRL;
	const u32 exit = EXIT_CLEAR_IA32_LBR_CTL | EXIT_LOAD_IA32_PERF_GLOBAL_CTRL;
	u32 e = vmcs_read32(VMCS_VM_ENTRY_CONTROLS), x = vmcs_read32(VMCS_PRIMARY_VM_EXIT_CONTROLS);
	u32 proc = vmcs_read32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS);
	bool on = lbr_ctl != 0;

	wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
	vmcs_write64(VMCS_GUEST_IA32_LBR_CTL, lbr_ctl);
	vmcs_write64(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, global_ctrl);
	vmcs_write64(VMCS_HOST_IA32_PERF_GLOBAL_CTRL, 0);
	vmcs_write32(VMCS_VM_ENTRY_CONTROLS, on ? e | entry : e & ~entry);
	vmcs_write32(VMCS_PRIMARY_VM_EXIT_CONTROLS, on ? x | exit : x & ~exit);
	/* CR3-load exiting stays where the CPU cannot clear it (default1) */
	if (on)
		proc |= PROC_CR3_LOAD_EXITING;
	else
		proc = (proc & ~PROC_CR3_LOAD_EXITING) | (vmx_caps.proc & PROC_CR3_LOAD_EXITING);
	vmcs_write32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS, proc);
	vx->lbr_on = on;
}

/* SDM Vol. 3 20.2.2 / 20.8: the overflow bits of the hypervisor's two
 * counters in IA32_PERF_GLOBAL_STATUS say the NMI is their PMI; they are
 * cleared through IA32_PERF_GLOBAL_OVF_CTRL, and the LVT entry's mask bit,
 * which delivering the PMI set (12.5.1), cleared again. */
bool vmx_lbr_pmi(struct vcpu *v)
{
	struct vmx_vcpu *vx = v->arch;
	if (!vx->lbr_on)
		return false;
	u64 ours = lbr_pmi_bits(rdmsr(MSR_IA32_PERF_GLOBAL_STATUS));
	if (!ours)
		return false;
	wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, ours);
	lapic_write(APIC_LVTPC, lapic_read(APIC_LVTPC) & ~LVT_MASKED);
	return true;
}

static int vmx_probe(u32 *caps)
{
	struct cpuid_regs r;
	u64 fc, basic;
	int st;

	cpuid_count(1, 0, &r);
	if (!(r.ecx & CPUID_1_ECX_VMX))
		return HV_ERR_NO_VMX;
	/* 24.7: a locked IA32_FEATURE_CONTROL without "VMX outside SMX" makes
	 * VMXON #GP; an unlocked one is locked by vcpu_init. */
	fc = rdmsr(MSR_IA32_FEATURE_CONTROL);
	if ((fc & FEATURE_CONTROL_LOCK) && !(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX))
		return HV_ERR_VMX_DISABLED;

	/* A.1; bit 48 (32-bit VMCS addresses) is 0 on every CPU with Intel 64 */
	basic = rdmsr(MSR_IA32_VMX_BASIC);
	vmx_caps.revision = VMX_BASIC_REVISION(basic);
	if (VMX_BASIC_VMCS_SIZE(basic) > PAGE_SIZE) {
		LOG_ERR("IA32_VMX_BASIC %016lx: a VMCS larger than a page", basic);
		return HV_ERR_VMX_CONTROLS;
	}
	/* A.2: with bit 55 the TRUE_ MSRs say which default1 controls may be 0 */
	bool t = basic & VMX_BASIC_TRUE_CONTROLS;
	if ((st = adjust(&want_pin, t ? MSR_IA32_VMX_TRUE_PINBASED_CTLS : MSR_IA32_VMX_PINBASED_CTLS,
			 &vmx_caps.pin)) ||
	    (st = adjust(&want_proc, t ? MSR_IA32_VMX_TRUE_PROCBASED_CTLS : MSR_IA32_VMX_PROCBASED_CTLS,
			 &vmx_caps.proc)) ||
	    (st = adjust(&want_proc2, MSR_IA32_VMX_PROCBASED_CTLS2, &vmx_caps.proc2)) ||
	    (st = adjust(&want_exit, t ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS,
			 &vmx_caps.exit)) ||
	    (st = adjust(&want_entry, t ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS,
			 &vmx_caps.entry)))
		return st;

	/* A.10: a 4-level walk and a cacheable type for the EPT structures */
	vmx_caps.ept_cap = rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
	if (!(vmx_caps.ept_cap & EPT_CAP_WALK_LENGTH_4) ||
	    !(vmx_caps.ept_cap & (EPT_CAP_MEMTYPE_WB | EPT_CAP_MEMTYPE_UC))) {
		LOG_ERR("IA32_VMX_EPT_VPID_CAP %016lx: no 4-level EPT with a usable memory type",
			vmx_caps.ept_cap);
		return HV_ERR_NO_EPT;
	}
	vmx_caps.eptp_memtype = (vmx_caps.ept_cap & EPT_CAP_MEMTYPE_WB) ? VMX_MEMTYPE_WB
									 : VMX_MEMTYPE_UC;
	vmx_caps.ept_max_leaf = (vmx_caps.ept_cap & EPT_CAP_1G_PAGES)   ? PAGE_1G
				: (vmx_caps.ept_cap & EPT_CAP_2M_PAGES) ? PAGE_2M
									: PAGE_SIZE;
	vmx_caps.cr0_fixed0 = rdmsr(MSR_IA32_VMX_CR0_FIXED0);
	vmx_caps.cr0_fixed1 = rdmsr(MSR_IA32_VMX_CR0_FIXED1);
	vmx_caps.cr4_fixed0 = rdmsr(MSR_IA32_VMX_CR4_FIXED0);
	vmx_caps.cr4_fixed1 = rdmsr(MSR_IA32_VMX_CR4_FIXED1);

	/* 28.2.5: every instruction exit reports the instruction's length */
	/* INIT and SIPI are delivered by the hypervisor (dispatch/mp.c): the
	 * APIC page read-only in the EPT; instead of kicks, the preemption
	 * timer makes every vCPU exit often enough to notice them (no IPI:
	 * the guest's NMIs and INITs stay its own) */
	*caps = HV_CAP_NRIP | HV_CAP_IPI_GATE | HV_CAP_KICK_POLL;
	if (vmx_caps.pin & PIN_PREEMPTION_TIMER) {
		*caps |= HV_CAP_SMP;
		vmx_caps.timer_shift = (u8)(rdmsr(MSR_IA32_VMX_MISC) & 0x1f);	/* A.6 */
	}
	/* A.3.2: the monitor trap flag is an allowed-1 primary control */
	if (rdmsr(t ? MSR_IA32_VMX_TRUE_PROCBASED_CTLS : MSR_IA32_VMX_PROCBASED_CTLS) >> 32 &
	    PROC_MONITOR_TRAP_FLAG)
		*caps |= HV_CAP_MTF;
	hv.lbr_depth = vmx_lbr_depth(t);
	if (hv.lbr_depth)
		*caps |= HV_CAP_ARCH_LBR;
	LOG_INFO("VMX: revision %x, controls pin %x proc %x proc2 %x exit %x entry %x%s",
		 vmx_caps.revision, vmx_caps.pin, vmx_caps.proc, vmx_caps.proc2, vmx_caps.exit,
		 vmx_caps.entry, (*caps & HV_CAP_MTF) ? ", monitor trap flag" : "");
	return HV_OK;
}

/* VMX access rights (25.4.1 Table 25-2) of a GDT descriptor: the
 * descriptor's type/S/DPL/P in bits 7:0 and AVL/L/D/G in bits 15:12. */
static u32 vmx_ar(u64 d)
{
	u32 a = desc_attr(d);
	return (a & 0xff) | ((a & 0xf00) << 4);
}

struct vmx_seg_fields {
	u32 sel, limit, ar, base;	/* VMCS field encodings */
};
static const struct vmx_seg_fields seg_fields[] = {
	[SEG_ES] = { VMCS_GUEST_ES_SELECTOR, VMCS_GUEST_ES_LIMIT, VMCS_GUEST_ES_ACCESS_RIGHTS, VMCS_GUEST_ES_BASE },
	[SEG_CS] = { VMCS_GUEST_CS_SELECTOR, VMCS_GUEST_CS_LIMIT, VMCS_GUEST_CS_ACCESS_RIGHTS, VMCS_GUEST_CS_BASE },
	[SEG_SS] = { VMCS_GUEST_SS_SELECTOR, VMCS_GUEST_SS_LIMIT, VMCS_GUEST_SS_ACCESS_RIGHTS, VMCS_GUEST_SS_BASE },
	[SEG_DS] = { VMCS_GUEST_DS_SELECTOR, VMCS_GUEST_DS_LIMIT, VMCS_GUEST_DS_ACCESS_RIGHTS, VMCS_GUEST_DS_BASE },
	[SEG_FS] = { VMCS_GUEST_FS_SELECTOR, VMCS_GUEST_FS_LIMIT, VMCS_GUEST_FS_ACCESS_RIGHTS, VMCS_GUEST_FS_BASE },
	[SEG_GS] = { VMCS_GUEST_GS_SELECTOR, VMCS_GUEST_GS_LIMIT, VMCS_GUEST_GS_ACCESS_RIGHTS, VMCS_GUEST_GS_BASE },
};
static const struct vmx_seg_fields ldtr_fields = {
	VMCS_GUEST_LDTR_SELECTOR, VMCS_GUEST_LDTR_LIMIT, VMCS_GUEST_LDTR_ACCESS_RIGHTS, VMCS_GUEST_LDTR_BASE,
};
static const struct vmx_seg_fields tr_fields = {
	VMCS_GUEST_TR_SELECTOR, VMCS_GUEST_TR_LIMIT, VMCS_GUEST_TR_ACCESS_RIGHTS, VMCS_GUEST_TR_BASE,
};

/* The hidden part of a segment register loaded from the current GDT, as
 * the processor holds it (27.3.1.2 checks it on entry). A null selector is
 * "unusable"; code and data segments are accessed (the CPU set A when it
 * loaded them); a system descriptor (TR, LDT) is 16 bytes in IA-32e mode. */
static void seg_from_gdt(const struct vmx_seg_fields *f, u16 sel, const struct desc_ptr *gdt,
			 bool system)
{
	u64 d = 0, base = 0;
	u32 ar = VMX_AR_UNUSABLE, limit = 0;

	if ((sel & ~3u) && !(sel & 4) && (sel | 7u) + (system ? 8 : 0) <= gdt->limit) {
		const u64 *p = (const u64 *)(uintptr_t)(gdt->base + (sel & ~7u));
		d = p[0];
		ar = vmx_ar(d);
		limit = desc_limit(d);
		base = desc_base(d);
		if (system)
			base |= p[1] << 32;
		else
			ar |= VMX_AR_TYPE_ACCESSED;
	}
	vmcs_write_any(f->sel, sel);
	vmcs_write_any(f->limit, limit);
	vmcs_write_any(f->ar, ar);
	vmcs_write_any(f->base, base);
}

static u64 fixed(u64 v, u64 fixed0, u64 fixed1)
{
	return (v | fixed0) & fixed1;
}

/* Guest state := this processor's state now (25.4, 27.3.1). */
static void vmcs_setup_guest(struct vcpu *v, struct vmx_vcpu *vx, u64 cr0, u64 cr4)
{
	struct desc_ptr gdt, idt;
	u64 efer = rdmsr(MSR_EFER);

	sgdt(&gdt);
	sidt(&idt);
	seg_from_gdt(&seg_fields[SEG_ES], read_es(), &gdt, false);
	seg_from_gdt(&seg_fields[SEG_CS], read_cs(), &gdt, false);
	seg_from_gdt(&seg_fields[SEG_SS], read_ss(), &gdt, false);
	seg_from_gdt(&seg_fields[SEG_DS], read_ds(), &gdt, false);
	seg_from_gdt(&seg_fields[SEG_FS], read_fs(), &gdt, false);
	seg_from_gdt(&seg_fields[SEG_GS], read_gs(), &gdt, false);
	seg_from_gdt(&ldtr_fields, read_ldtr(), &gdt, true);
	seg_from_gdt(&tr_fields, read_tr(), &gdt, true);
	/* 64-bit mode takes FS/GS bases from the MSRs, not the descriptors */
	vmcs_writel(VMCS_GUEST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmcs_writel(VMCS_GUEST_GS_BASE, rdmsr(MSR_GS_BASE));
	/* 27.3.1.2: TR must be usable, a busy TSS. The firmware may never have
	 * loaded one (TR = 0): give the guest an empty 64-bit TSS as the
	 * processor would hold it; nothing uses it until the guest loads its own. */
	if (vmcs_read32(VMCS_GUEST_TR_ACCESS_RIGHTS) & VMX_AR_UNUSABLE) {
		vmcs_write32(VMCS_GUEST_TR_ACCESS_RIGHTS, VMX_AR_P | VMX_AR_TSS64_BUSY);
		vmcs_write32(VMCS_GUEST_TR_LIMIT, 0x67);
	} else {
		u32 ar = vmcs_read32(VMCS_GUEST_TR_ACCESS_RIGHTS);
		vmcs_write32(VMCS_GUEST_TR_ACCESS_RIGHTS, (ar & ~0xfu) | VMX_AR_TSS64_BUSY);
	}
	vmcs_writel(VMCS_GUEST_GDTR_BASE, gdt.base);
	vmcs_write32(VMCS_GUEST_GDTR_LIMIT, gdt.limit);
	vmcs_writel(VMCS_GUEST_IDTR_BASE, idt.base);
	vmcs_write32(VMCS_GUEST_IDTR_LIMIT, idt.limit);

	/* Control registers: the hardware runs with the fixed bits VMX needs
	 * (24.8: CR0.NE and CR4.VMXE); the guest reads its own values through
	 * the read shadows. Unrestricted guest lets CR0.PE/PG be the guest's. */
	vx->cr0_mask = vmx_caps.cr0_fixed0 & ~(CR0_PE | CR0_PG) & 0xffffffffull;
	vx->cr4_mask = vmx_caps.cr4_fixed0 | CR4_VMXE;
	vmcs_writel(VMCS_GUEST_CR0, cr0);
	vmcs_writel(VMCS_CR0_GUEST_HOST_MASK, vx->cr0_mask);
	vmcs_writel(VMCS_CR0_READ_SHADOW, vx->cr0_before);
	vmcs_writel(VMCS_GUEST_CR3, v->boot->guest.cr3);
	vmcs_writel(VMCS_GUEST_CR4, cr4);
	vmcs_writel(VMCS_CR4_GUEST_HOST_MASK, vx->cr4_mask);
	vmcs_writel(VMCS_CR4_READ_SHADOW, vx->cr4_before);
	vmcs_writel(VMCS_GUEST_DR7, read_dr7());
	vmcs_write64(VMCS_GUEST_IA32_DEBUGCTL, rdmsr(MSR_IA32_DEBUGCTL));
	vmcs_write64(VMCS_GUEST_IA32_EFER, efer);
	/* the field exists where the CPU has the PAT controls (A.4, A.5) */
	if (vmx_caps.entry & ENTRY_LOAD_IA32_PAT)
		vmcs_write64(VMCS_GUEST_IA32_PAT, rdmsr(MSR_IA32_PAT));
	vmcs_write32(VMCS_GUEST_IA32_SYSENTER_CS, rdmsr(MSR_IA32_SYSENTER_CS));
	vmcs_writel(VMCS_GUEST_IA32_SYSENTER_ESP, rdmsr(MSR_IA32_SYSENTER_ESP));
	vmcs_writel(VMCS_GUEST_IA32_SYSENTER_EIP, rdmsr(MSR_IA32_SYSENTER_EIP));
	/* 25.4.2: active, no interrupt shadow, nothing pending; no shadow VMCS */
	vmcs_write32(VMCS_GUEST_ACTIVITY_STATE, 0);
	vmcs_write32(VMCS_GUEST_INTERRUPTIBILITY_STATE, 0);
	vmcs_writel(VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS, 0);
	vmcs_write64(VMCS_VMCS_LINK_POINTER, ~0ull);

	/* 27.3.1.1: "IA-32e mode guest" must match EFER.LMA (the firmware runs
	 * in long mode: the loader is a 64-bit UEFI application) */
	vmx_set_guest_efer(efer);
}

static void vmcs_setup_controls(struct vmx_vcpu *vx)
{
	vmcs_write32(VMCS_PIN_BASED_VM_EXECUTION_CONTROLS, vmx_caps.pin);
	vmcs_write32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS, vmx_caps.proc);
	vmcs_write32(VMCS_SECONDARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS, vmx_caps.proc2);
	vmcs_write32(VMCS_PRIMARY_VM_EXIT_CONTROLS, vmx_caps.exit);
	vmcs_write32(VMCS_VM_ENTRY_CONTROLS, vmx_caps.entry);
	vmcs_write32(VMCS_EXCEPTION_BITMAP, hv_exception_intercepts(0));
	vmcs_write32(VMCS_PAGE_FAULT_ERROR_CODE_MASK, 0);
	vmcs_write32(VMCS_PAGE_FAULT_ERROR_CODE_MATCH, 0);
	vmcs_write32(VMCS_CR3_TARGET_COUNT, 0);
	vmcs_write32(VMCS_VM_EXIT_MSR_STORE_COUNT, 0);
	vmcs_write32(VMCS_VM_EXIT_MSR_LOAD_COUNT, 0);
	vmcs_write32(VMCS_VM_ENTRY_MSR_LOAD_COUNT, 0);
	vmcs_write32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION, 0);
	vmcs_write64(VMCS_MSR_BITMAPS, vx->msr_bitmap_pa);
	vmcs_write64(VMCS_IO_BITMAP_A, vx->io_bitmap_pa);
	vmcs_write64(VMCS_IO_BITMAP_B, vx->io_bitmap_pa + PAGE_SIZE);
	vmcs_write64(VMCS_EPT_POINTER, vx->eptp);
}

/* Host state (25.5, 28.5): the hypervisor's own GDT/TSS/IDT (loaded by
 * dispatch/entry.c before vcpu_run), page tables and stack; RSP is written by
 * run.S before each entry. */
static void vmcs_setup_host(void)
{
	struct desc_ptr gdt, idt;
	struct cpuid_regs r;
	u64 cr4 = read_cr4();

	sgdt(&gdt);
	sidt(&idt);
	/* XSETBV exits are emulated here in root mode (hv/vmx/exit.c) */
	cpuid_count(1, 0, &r);
	if (r.ecx & CPUID_1_ECX_XSAVE)
		cr4 |= CR4_OSXSAVE;
	vmcs_writel(VMCS_HOST_CR0, read_cr0());
	vmcs_writel(VMCS_HOST_CR3, read_cr3());
	vmcs_writel(VMCS_HOST_CR4, cr4);
	vmcs_write16(VMCS_HOST_CS_SELECTOR, HOST_CS);
	vmcs_write16(VMCS_HOST_SS_SELECTOR, HOST_DS);
	vmcs_write16(VMCS_HOST_DS_SELECTOR, HOST_DS);
	vmcs_write16(VMCS_HOST_ES_SELECTOR, HOST_DS);
	vmcs_write16(VMCS_HOST_FS_SELECTOR, 0);
	vmcs_write16(VMCS_HOST_GS_SELECTOR, 0);
	vmcs_write16(VMCS_HOST_TR_SELECTOR, HOST_TR);
	vmcs_writel(VMCS_HOST_FS_BASE, 0);
	/* this processor's struct host_cpu (desc_load_host put it there) */
	vmcs_writel(VMCS_HOST_GS_BASE, rdmsr(MSR_GS_BASE));
	const u64 *tss = (const u64 *)(uintptr_t)(gdt.base + HOST_TR);
	vmcs_writel(VMCS_HOST_TR_BASE, desc_base(tss[0]) | tss[1] << 32);
	vmcs_writel(VMCS_HOST_GDTR_BASE, gdt.base);
	vmcs_writel(VMCS_HOST_IDTR_BASE, idt.base);
	vmcs_write32(VMCS_HOST_IA32_SYSENTER_CS, 0);
	vmcs_writel(VMCS_HOST_IA32_SYSENTER_ESP, 0);
	vmcs_writel(VMCS_HOST_IA32_SYSENTER_EIP, 0);
	vmcs_write64(VMCS_HOST_IA32_EFER, rdmsr(MSR_EFER));
	if (vmx_caps.exit & EXIT_LOAD_IA32_PAT)
		vmcs_write64(VMCS_HOST_IA32_PAT, rdmsr(MSR_IA32_PAT));
	vmcs_writel(VMCS_HOST_RIP, (u64)(uintptr_t)vmx_exit_entry);
}

/* Leaves VMX operation and gives CR0/CR4 back as vcpu_init found them. */
static void vmx_off(struct vmx_vcpu *vx)
{
	vmclear(vx->vmcs_pa);
	vmxoff();
	write_cr4(vx->cr4_before);
	write_cr0(vx->cr0_before);
}

/* The tables every vCPU shares: EPT (the same map for every processor),
 * the MSR and I/O bitmaps. */
static u64 shared_eptp, shared_msr_bitmap_pa, shared_io_bitmap_pa;

static int vmx_setup(void)
{
	int st;
	if ((st = vmx_ept_build(&shared_eptp)) || (st = vmx_msr_bitmap_build(&shared_msr_bitmap_pa)) ||
	    (st = vmx_io_bitmap_build(&shared_io_bitmap_pa)))
		return st;
	return HV_OK;
}

static int vmx_vcpu_init(struct vcpu *v)
{
	struct vmx_vcpu *vx;
	u32 *vmxon_region, *vmcs;
	u64 fc;

	vx = mm_alloc_pages(1, NULL);
	if (!vx || !(vmxon_region = mm_alloc_pages(1, &vx->vmxon_pa)) ||
	    !(vmcs = mm_alloc_pages(1, &vx->vmcs_pa)))
		return HV_ERR_NO_MEMORY;
	vx->eptp = shared_eptp;
	vx->msr_bitmap_pa = shared_msr_bitmap_pa;
	vx->io_bitmap_pa = shared_io_bitmap_pa;
	v->arch = vx;

	/* 24.7: VMXON needs IA32_FEATURE_CONTROL locked with "VMX outside SMX".
	 * Once locked it stays so until reset: the one change a failed start
	 * leaves behind (harmless: it is what firmware normally does). */
	fc = rdmsr(MSR_IA32_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK))
		wrmsr(MSR_IA32_FEATURE_CONTROL,
		      fc | FEATURE_CONTROL_LOCK | FEATURE_CONTROL_VMX_OUTSIDE_SMX);

	/* 24.8: CR0 and CR4 must respect the fixed bits in VMX operation */
	vx->cr0_before = read_cr0();
	vx->cr4_before = read_cr4();
	u64 cr0 = fixed(vx->cr0_before, vmx_caps.cr0_fixed0, vmx_caps.cr0_fixed1);
	u64 cr4 = fixed(vx->cr4_before | CR4_VMXE, vmx_caps.cr4_fixed0, vmx_caps.cr4_fixed1);
	write_cr0(cr0);
	write_cr4(cr4);

	/* 25.2, 24.11.5: both regions start with the VMCS revision identifier */
	*vmxon_region = vmx_caps.revision;
	*vmcs = vmx_caps.revision;
	if (!vmxon(vx->vmxon_pa)) {
		write_cr4(vx->cr4_before);
		write_cr0(vx->cr0_before);
		LOG_ERR("VMXON failed (IA32_FEATURE_CONTROL %016lx, CR0 %lx, CR4 %lx)",
			rdmsr(MSR_IA32_FEATURE_CONTROL), cr0, cr4);
		return HV_ERR_VMX_SETUP;
	}
	if (!vmclear(vx->vmcs_pa) || !vmptrld(vx->vmcs_pa)) {
		LOG_ERR("VMCLEAR/VMPTRLD of the VMCS at %lx failed: %s", vx->vmcs_pa,
			vmx_insn_error_str(vmcs_read32(VMCS_VM_INSTRUCTION_ERROR)));
		vmx_off(vx);
		return HV_ERR_VMX_SETUP;
	}

	u32 failures = vmx_vmcs_failures;
	vmcs_setup_controls(vx);
	/* with other processors to hear from: the preemption timer (the pin
	 * control is on in vmx_caps.pin only where the CPU has it). Every VM
	 * entry loads the timer from this field, and without the "save
	 * VMX-preemption timer value" exit control nothing writes it back
	 * (25.5.1, 27.3.1.6): written once, it is the period of every entry. */
	/* and with host control requests to look for (rec_ctl_polled) */
	if ((hv.nr_vcpus > 1 || rec_ctl_polled()) && (vmx_caps.pin & PIN_PREEMPTION_TIMER)) {
		u64 ticks = ((hv.boot.tsc_hz ? hv.boot.tsc_hz : 1000000000ull) / 1000000 * VMX_POLL_US) >>
			    vmx_caps.timer_shift;
		vmcs_write32(VMCS_PREEMPTION_TIMER_VALUE, (u32)MIN(MAX(ticks, 1ull), 0xffffffffull));
	} else {
		vmcs_write32(VMCS_PIN_BASED_VM_EXECUTION_CONTROLS,
			     vmx_caps.pin & ~(u32)PIN_PREEMPTION_TIMER);
	}
	vmcs_setup_guest(v, vx, cr0, cr4);
	if (vmx_vmcs_failures != failures) {
		vmx_off(vx);
		return HV_ERR_VMX_SETUP;
	}
	/* 29.4.3.1: no stale guest-physical mappings for this EPTP */
	if (vmx_caps.ept_cap & EPT_CAP_INVEPT_ALL_CONTEXTS)
		invept(INVEPT_TYPE_ALL_CONTEXTS, 0);
	else if (vmx_caps.ept_cap & EPT_CAP_INVEPT_SINGLE_CONTEXT)
		invept(INVEPT_TYPE_SINGLE_CONTEXT, vx->eptp);
	return HV_OK;
}

/* The first VM entry failed: leave VMX operation and return to the loader
 * natively, as if hv_enter() had failed (which it did), with the
 * firmware's descriptor tables and segments as they were. */
static void __noreturn vmx_abort_start(struct vcpu *v, struct vmx_vcpu *vx)
{
	struct native_state ns = {
		.gdtr_base = vmcs_readl(VMCS_GUEST_GDTR_BASE),
		.gdtr_limit = (u16)vmcs_read32(VMCS_GUEST_GDTR_LIMIT),
		.idtr_base = vmcs_readl(VMCS_GUEST_IDTR_BASE),
		.idtr_limit = (u16)vmcs_read32(VMCS_GUEST_IDTR_LIMIT),
		.cs = vmcs_read16(VMCS_GUEST_CS_SELECTOR), .ss = vmcs_read16(VMCS_GUEST_SS_SELECTOR),
		.ds = vmcs_read16(VMCS_GUEST_DS_SELECTOR), .es = vmcs_read16(VMCS_GUEST_ES_SELECTOR),
		.cr3 = v->boot->guest.cr3, .rsp = v->boot->guest.rsp, .rip = v->boot->guest.abort_rip,
		.rax = (u64)(s64)HV_ERR_VMENTRY_FAILED,
	};
	u16 fs = vmcs_read16(VMCS_GUEST_FS_SELECTOR), gs = vmcs_read16(VMCS_GUEST_GS_SELECTOR);
	u16 tr = vmcs_read16(VMCS_GUEST_TR_SELECTOR), ldtr = vmcs_read16(VMCS_GUEST_LDTR_SELECTOR);
	u64 fs_base = vmcs_readl(VMCS_GUEST_FS_BASE), gs_base = vmcs_readl(VMCS_GUEST_GS_BASE);
	struct desc_ptr gdt = { ns.gdtr_limit, ns.gdtr_base };

	LOG_ERR("%s; guest state follows", hv_status_str(HV_ERR_VMENTRY_FAILED));
	vmx_dump(v);
	vmx_off(vx);

	/* dispatch/entry.c loaded the host's GDT and TR: reload the firmware's.
	 * LTR needs an available TSS descriptor (SDM Vol. 2 LTR), and the
	 * firmware's is marked busy since it loaded it. */
	asm volatile("lgdt %0" ::"m"(gdt));
	if (ldtr & ~3u)
		asm volatile("lldt %0" ::"r"(ldtr));
	if (tr & ~3u) {
		u64 *d = (u64 *)(uintptr_t)(gdt.base + (tr & ~7u));
		*d &= ~(2ull << 40);
		asm volatile("ltr %0" ::"r"(tr) : "memory");
	}
	asm volatile("mov %0, %%fs; mov %1, %%gs" ::"r"((u32)fs), "r"((u32)gs));
	wrmsr(MSR_FS_BASE, fs_base);
	wrmsr(MSR_GS_BASE, gs_base);
	resume_native(&ns);
}

/* A VM entry failed (27.8, 31.4): before the guest ever ran, back to the
 * loader; afterwards it is a state that cannot happen (the hypervisor's
 * own emulation produced a bad guest state): log and stop. */
static void __noreturn vmx_entry_failed(struct vcpu *v, struct vmx_vcpu *vx, int rc, u32 reason)
{
	if (rc == VMX_ENTER_FAIL_INVALID)
		LOG_ERR("%s failed: VMfailInvalid (no current VMCS)",
			vx->launched ? "VMRESUME" : "VMLAUNCH");
	else if (rc == VMX_ENTER_FAIL_VALID)
		LOG_ERR("%s failed: VM-instruction error %u: %s", vx->launched ? "VMRESUME" : "VMLAUNCH",
			vmcs_read32(VMCS_VM_INSTRUCTION_ERROR),
			vmx_insn_error_str(vmcs_read32(VMCS_VM_INSTRUCTION_ERROR)));
	else
		vmx_log_entry_failure(reason);
	if (!vx->launched)
		vmx_abort_start(v, vx);
	hv_guest_refused(v, rc ? "VMRESUME failed (VM-instruction error above)"
				: "VM-entry failure (exit reason and qualification above)");
}

static void __noreturn vmx_vcpu_run(struct vcpu *v)
{
	struct vmx_vcpu *vx = v->arch;

	vmcs_setup_host();
	prof_start(v);
	for (;;) {
		/* an NMI the host's IDT took in root mode (it came during an
		 * exit) goes to the guest through core, which records it while
		 * tracing */
		struct host_cpu *h = &v->host;
		if (h->nmi_pending &&
		    !(vmcs_read32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION) & VMX_INTR_INFO_VALID)) {
			struct hv_event nmi = { .kind = HV_EV_NMI };
			h->nmi_pending = 0;
			/* the batch counters' PMI, late (its skid ran past the
			 * exit): the hypervisor's, nothing for the guest */
			if (!vmx_lbr_pmi(v))
				hv_handle_event(v, &nmi);
		}
		/* the EPT changed (vmx_ept_set_exec): what this processor
		 * cached of it goes (29.4.3.1) */
		u32 gen = __atomic_load_n(&vmx_ept_gen, __ATOMIC_ACQUIRE);
		if (gen != vx->ept_gen) {
			vx->ept_gen = gen;
			if (vmx_caps.ept_cap & EPT_CAP_INVEPT_SINGLE_CONTEXT)
				invept(INVEPT_TYPE_SINGLE_CONTEXT, vx->eptp);
			else
				invept(INVEPT_TYPE_ALL_CONTEXTS, 0);
		}
		vmcs_writel(VMCS_GUEST_RSP, v->gpr[GPR_RSP]);
		vmcs_writel(VMCS_GUEST_RIP, v->rip);
		vmcs_writel(VMCS_GUEST_RFLAGS, v->rflags);
		prof_switch(v, HVTRACE_PROF_GUEST);
		int rc = vmx_enter(v, vx->launched);
		prof_switch(v, HVTRACE_PROF_EXIT);
		v->prof.exits++;
		u32 reason = rc ? 0 : vmcs_read32(VMCS_EXIT_REASON);
		if (rc || (reason & VMX_EXIT_REASON_ENTRY_FAILURE))
			vmx_entry_failed(v, vx, rc, reason);
		vx->launched = true;
		v->gpr[GPR_RSP] = vmcs_readl(VMCS_GUEST_RSP);
		v->rip = vmcs_readl(VMCS_GUEST_RIP);
		v->rflags = vmcs_readl(VMCS_GUEST_RFLAGS);
		vmx_handle_exit(v, vx, reason);
		prof_switch(v, HVTRACE_PROF_ENTRY);
	}
}

/* The next entry delivers a hardware exception (27.6.1.1). With CR0.PE
 * clear (unrestricted guest in real mode) no error code is pushed, and
 * the entry would fail if one were asked for (27.2.1.3). */
static void vmx_inject_exception(struct vcpu *v, u8 vector, bool has_err, u32 err)
{
	u32 info = vector | VMX_INTR_TYPE_HW_EXCEPTION | VMX_INTR_INFO_VALID;
	(void)v;
	if (has_err && (vmcs_readl(VMCS_GUEST_CR0) & CR0_PE)) {
		info |= VMX_INTR_INFO_DELIVER_ERROR_CODE;
		vmcs_write32(VMCS_VM_ENTRY_EXCEPTION_ERROR_CODE, err);
	}
	vmcs_write32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION, info);
}

/* 26.3: the CPL is SS.DPL in VMX non-root operation (27.3.1.2) */
static int vmx_get_cpl(struct vcpu *v)
{
	(void)v;
	return (int)VMX_AR_DPL(vmcs_read32(VMCS_GUEST_SS_ACCESS_RIGHTS));
}

/* What the guest reads: the read shadow for the bits hvtrace owns (25.6.6) */
static u64 vmx_get_cr(struct vcpu *v, int n)
{
	struct vmx_vcpu *vx = v->arch;
	switch (n) {
	case 0:
		return (vmcs_readl(VMCS_GUEST_CR0) & ~vx->cr0_mask) |
		       (vmcs_readl(VMCS_CR0_READ_SHADOW) & vx->cr0_mask);
	case 2:
		return read_cr2();	/* not in the VMCS: root mode leaves it alone */
	case 3:
		return vmcs_readl(VMCS_GUEST_CR3);
	case 4:
		return (vmcs_readl(VMCS_GUEST_CR4) & ~vx->cr4_mask) |
		       (vmcs_readl(VMCS_CR4_READ_SHADOW) & vx->cr4_mask);
	}
	return 0;
}

static u64 vmx_get_efer(struct vcpu *v)
{
	(void)v;
	return vmcs_read64(VMCS_GUEST_IA32_EFER);
}

/* EFER and the "IA-32e mode guest" entry control move together (27.3.1.1) */
void vmx_set_guest_efer(u64 efer)
{
	u32 entry = vmcs_read32(VMCS_VM_ENTRY_CONTROLS);
	vmcs_write64(VMCS_GUEST_IA32_EFER, efer);
	if (efer & EFER_LMA)
		entry |= ENTRY_IA32E_MODE_GUEST;
	else
		entry &= ~ENTRY_IA32E_MODE_GUEST;
	vmcs_write32(VMCS_VM_ENTRY_CONTROLS, entry);
}

static void vmx_set_efer(struct vcpu *v, u64 efer)
{
	(void)v;
	vmx_set_guest_efer(efer);
}

/* Segments in the VMCB's 12-bit attribute format (base/vcpu.h); an
 * unusable segment reads as not present. */
static void vmx_get_seg(struct vcpu *v, enum hv_seg seg, struct hv_segment *out)
{
	if (seg == SEG_GDTR || seg == SEG_IDTR) {
		out->sel = 0;
		out->attr = 0;
		out->limit = vmcs_read32(seg == SEG_GDTR ? VMCS_GUEST_GDTR_LIMIT : VMCS_GUEST_IDTR_LIMIT);
		out->base = vmcs_readl(seg == SEG_GDTR ? VMCS_GUEST_GDTR_BASE : VMCS_GUEST_IDTR_BASE);
		return;
	}
	const struct vmx_seg_fields *f = &seg_fields[seg];
	u32 ar = (u32)vmcs_read_any(f->ar);
	(void)v;
	out->sel = (u16)vmcs_read_any(f->sel);
	out->attr = (ar & VMX_AR_UNUSABLE) ? 0 : (u16)((ar & 0xff) | ((ar >> 4) & 0xf00));
	out->limit = (u32)vmcs_read_any(f->limit);
	out->base = vmcs_read_any(f->base);
}

/* CR2 and DR6 are not in the VMCS: the guest's values live in the
 * registers, which root mode leaves alone (SDM Vol. 3 27.3.1.1 / 28.3). */
static void vmx_set_cr2(struct vcpu *v, u64 val)
{
	(void)v;
	asm volatile("mov %0, %%cr2" ::"r"(val));
}

static u64 vmx_get_dr(struct vcpu *v, int n)
{
	(void)v;
	return n == 6 ? read_dr6() : vmcs_readl(VMCS_GUEST_DR7);
}

static void vmx_set_dr(struct vcpu *v, int n, u64 val)
{
	(void)v;
	if (n == 6)
		asm volatile("mov %0, %%dr6" ::"r"(val));
	else
		vmcs_writel(VMCS_GUEST_DR7, val);
}

static void vmx_set_exception_intercepts(struct vcpu *v, u32 mask)
{
	(void)v;
	/* #PF: with mask = match = 0 in the PFEC fields every #PF exits (25.6.3) */
	vmcs_write32(VMCS_EXCEPTION_BITMAP, hv_exception_intercepts(mask));
}

/* External-interrupt exiting with "acknowledge interrupt on exit" (25.6.1,
 * 25.7.1): the exit carries the vector, the guest gets it by injection and
 * EOIs it itself. Left off where the CPU does not allow it. NMI exiting
 * with it, without virtual NMIs: an injected NMI blocks NMIs in the guest
 * until its IRET, as a delivered one does (26.6.1.2, 27.3). */
static void vmx_set_intr_intercept(struct vcpu *v, bool on)
{
	u32 pin = vmcs_read32(VMCS_PIN_BASED_VM_EXECUTION_CONTROLS);
	u32 exit = vmcs_read32(VMCS_PRIMARY_VM_EXIT_CONTROLS);
	u32 pin_ok = (u32)(rdmsr(MSR_IA32_VMX_PINBASED_CTLS) >> 32);
	u32 exit_ok = (u32)(rdmsr(MSR_IA32_VMX_EXIT_CTLS) >> 32);
	(void)v;
	if (!(pin_ok & PIN_EXTERNAL_INTERRUPT_EXITING) || !(exit_ok & EXIT_ACKNOWLEDGE_INTERRUPT_ON_EXIT))
		return;
	if (on) {
		pin |= PIN_EXTERNAL_INTERRUPT_EXITING | (pin_ok & PIN_NMI_EXITING);
		exit |= EXIT_ACKNOWLEDGE_INTERRUPT_ON_EXIT;
	} else {
		pin = (pin & ~(PIN_EXTERNAL_INTERRUPT_EXITING | PIN_NMI_EXITING)) |
		      (vmx_caps.pin & (PIN_EXTERNAL_INTERRUPT_EXITING | PIN_NMI_EXITING));
		exit = (exit & ~EXIT_ACKNOWLEDGE_INTERRUPT_ON_EXIT) |
		       (vmx_caps.exit & EXIT_ACKNOWLEDGE_INTERRUPT_ON_EXIT);
	}
	vmcs_write32(VMCS_PIN_BASED_VM_EXECUTION_CONTROLS, pin);
	vmcs_write32(VMCS_PRIMARY_VM_EXIT_CONTROLS, exit);
}

static void vmx_set_sti_shadow(struct vcpu *v)
{
	(void)v;
	vmcs_write32(VMCS_GUEST_INTERRUPTIBILITY_STATE,
		     vmcs_read32(VMCS_GUEST_INTERRUPTIBILITY_STATE) | VMX_INTR_BLOCKING_BY_STI);
}

/* The CPU may have left a single-step trap pending for the instruction
 * that exited (27.3.4); the guest's TF decides (SDM Vol. 3 18.3.1.4). */
static void vmx_set_single_step_trap(struct vcpu *v, bool trap)
{
	(void)v;
	vmcs_writel(VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS, trap ? DR6_BS : 0);
}

static void vmx_end_interrupt_shadow(struct vcpu *v)
{
	(void)v;
	if (vmcs_read32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION) & VMX_INTR_INFO_VALID)
		return;
	u32 intr = vmcs_read32(VMCS_GUEST_INTERRUPTIBILITY_STATE);
	if (intr & (VMX_INTR_BLOCKING_BY_STI | VMX_INTR_BLOCKING_BY_MOV_SS))
		vmcs_write32(VMCS_GUEST_INTERRUPTIBILITY_STATE,
			     intr & ~(VMX_INTR_BLOCKING_BY_STI | VMX_INTR_BLOCKING_BY_MOV_SS));
}

static void vmx_inject_interrupt(struct vcpu *v, u8 vector)
{
	(void)v;
	/* 25.8.3: type 0, external interrupt */
	vmcs_write32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION, vector | VMX_INTR_INFO_VALID);
}

/* An external-interrupt exit comes whatever the guest's IF (25.2), and an
 * external interrupt injected into IF = 0, into an STI or MOV SS shadow,
 * fails the entry (26.2.1.3); nor can it replace an event being injected. */
static bool vmx_irq_blocked(struct vcpu *v)
{
	return !(v->rflags & RFLAGS_IF) ||
	       (vmcs_read32(VMCS_GUEST_INTERRUPTIBILITY_STATE) &
		(VMX_INTR_BLOCKING_BY_STI | VMX_INTR_BLOCKING_BY_MOV_SS)) ||
	       (vmcs_read32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION) & VMX_INTR_INFO_VALID);
}

static bool vmx_guest_nmi_blocked(struct vcpu *v)
{
	return vmcs_read32(VMCS_GUEST_INTERRUPTIBILITY_STATE) & VMX_INTR_BLOCKING_BY_NMI;
}

static void vmx_set_proc_ctl(u32 bit, bool on)
{
	u32 proc = vmcs_read32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS);
	vmcs_write32(VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS, on ? proc | bit : proc & ~bit);
}

/* 25.6.2: interrupt-window exiting (every VMX CPU allows it) */
static void vmx_set_irq_window(struct vcpu *v, bool on)
{
	(void)v;
	vmx_set_proc_ctl(PROC_INTERRUPT_WINDOW_EXITING, on);
}

static void vmx_set_hlt_intercept(struct vcpu *v, bool on)
{
	(void)v;
	vmx_set_proc_ctl(PROC_HLT_EXITING, on);
}

/* Root mode takes what is pending through the host's IDT in a short
 * window of IF (hv/arch/x86/exc.S records the vector; the caller EOIs).
 * An NMI needs no window in VMX root mode: the run loop hands the one the
 * host's IDT took to core (h->nmi_pending), so none is reported here. */
static u32 vmx_take_pending(struct vcpu *v, u8 *vector)
{
	struct host_cpu *h = host_cpu_this();
	(void)v;
	h->irq_vector = 0;
	asm volatile("sti; nop; nop; nop; nop; cli" ::: "memory");
	*vector = (u8)h->irq_vector;
	return h->irq_vector ? HV_PENDING_IRQ : 0;
}

static void vmx_inject_nmi(struct vcpu *v)
{
	(void)v;
	/* 25.8.3: type 2, NMI, vector 2 */
	vmcs_write32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION, X86_NMI | VMX_INTR_TYPE_NMI | VMX_INTR_INFO_VALID);
}

/* SYSENTER_* are guest-state fields; STAR, LSTAR, CSTAR, SFMASK and
 * KERNEL_GS_BASE are not switched by VMX and hold the guest's values. */
static u64 vmx_get_msr(struct vcpu *v, u32 msr)
{
	(void)v;
	switch (msr) {
	case MSR_IA32_SYSENTER_CS: return vmcs_read32(VMCS_GUEST_IA32_SYSENTER_CS);
	case MSR_IA32_SYSENTER_ESP: return vmcs_readl(VMCS_GUEST_IA32_SYSENTER_ESP);
	case MSR_IA32_SYSENTER_EIP: return vmcs_readl(VMCS_GUEST_IA32_SYSENTER_EIP);
	case MSR_STAR: case MSR_LSTAR: case MSR_CSTAR: case MSR_SFMASK: case MSR_KERNEL_GS_BASE:
		return rdmsr(msr);
	}
	return 0;
}

/* SDM Vol. 3 Table 10-1 "IA-32 and Intel 64 Processor States Following
 * Power-up, Reset, or INIT", as an INIT leaves it: real mode at F000:FFF0
 * (CR0.CD/NW kept), RDX the family/model/stepping. The vCPU then waits
 * for its SIPI in root mode (dispatch/mp.c), not in the wait-for-SIPI
 * activity state: the INIT and SIPI the guest sends never reach the
 * processor (the APIC page is read-only in the EPT, as under SVM), so no
 * SIPI can arrive while the hypervisor still handles the INIT and be lost.
 * Unrestricted guest runs real mode directly; the hardware CR0/CR4 keep
 * the bits VMX fixes, the guest reads its own. */
static void vmx_reset_to_init(struct vcpu *v)
{
	struct cpuid_regs r;
	u64 cr0 = CR0_ET | (vmcs_readl(VMCS_CR0_READ_SHADOW) & (CR0_CD | CR0_NW));
	static const u32 segs[] = { SEG_ES, SEG_SS, SEG_DS, SEG_FS, SEG_GS };

	vmcs_writel(VMCS_GUEST_CR0, fixed(cr0, vmx_caps.cr0_fixed0 & ~(CR0_PE | CR0_PG), vmx_caps.cr0_fixed1));
	vmcs_writel(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_writel(VMCS_GUEST_CR3, 0);
	vmcs_writel(VMCS_GUEST_CR4, fixed(0, vmx_caps.cr4_fixed0, vmx_caps.cr4_fixed1));
	vmcs_writel(VMCS_CR4_READ_SHADOW, 0);
	vmx_set_guest_efer(0);
	vmcs_write16(VMCS_GUEST_CS_SELECTOR, 0xf000);
	vmcs_writel(VMCS_GUEST_CS_BASE, 0xffff0000);
	vmcs_write32(VMCS_GUEST_CS_LIMIT, 0xffff);
	vmcs_write32(VMCS_GUEST_CS_ACCESS_RIGHTS, 0x9b);
	for (u32 i = 0; i < ARRAY_SIZE(segs); i++) {
		vmcs_write_any(seg_fields[segs[i]].sel, 0);
		vmcs_write_any(seg_fields[segs[i]].base, 0);
		vmcs_write_any(seg_fields[segs[i]].limit, 0xffff);
		vmcs_write_any(seg_fields[segs[i]].ar, 0x93);
	}
	vmcs_write_any(ldtr_fields.sel, 0);
	vmcs_write_any(ldtr_fields.base, 0);
	vmcs_write_any(ldtr_fields.limit, 0xffff);
	vmcs_write_any(ldtr_fields.ar, 0x82);
	vmcs_write_any(tr_fields.sel, 0);
	vmcs_write_any(tr_fields.base, 0);
	vmcs_write_any(tr_fields.limit, 0xffff);
	vmcs_write_any(tr_fields.ar, 0x8b);
	vmcs_writel(VMCS_GUEST_GDTR_BASE, 0);
	vmcs_write32(VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmcs_writel(VMCS_GUEST_IDTR_BASE, 0);
	vmcs_write32(VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmcs_writel(VMCS_GUEST_DR7, DR7_FIXED1);
	vmcs_write64(VMCS_GUEST_IA32_DEBUGCTL, 0);
	vmcs_write32(VMCS_GUEST_INTERRUPTIBILITY_STATE, 0);
	vmcs_writel(VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS, 0);
	vmcs_write32(VMCS_VM_ENTRY_INTERRUPTION_INFORMATION, 0);
	vmcs_write32(VMCS_GUEST_ACTIVITY_STATE, VMX_ACTIVITY_ACTIVE);
	memset(v->gpr, 0, sizeof(v->gpr));
	cpuid_count(1, 0, &r);
	v->gpr[GPR_RDX] = r.eax;
	v->rip = 0xfff0;
	v->rflags = RFLAGS_FIXED1;
}

/* SDM Vol. 3 10.4.4.1: CS = vector << 8, IP = 0, and the processor runs
 * again. A processor coming out of a real wait-for-SIPI state may report
 * NMI and SMI blocking (Bochs does): outside SMM, SMI blocking fails the
 * entry (27.3.1.5), and a started processor blocks neither. */
static void vmx_start_at_sipi(struct vcpu *v, u8 vector)
{
	vmcs_write16(VMCS_GUEST_CS_SELECTOR, (u16)(vector << 8));
	vmcs_writel(VMCS_GUEST_CS_BASE, (u64)vector << 12);
	vmcs_write32(VMCS_GUEST_ACTIVITY_STATE, VMX_ACTIVITY_ACTIVE);
	vmcs_write32(VMCS_GUEST_INTERRUPTIBILITY_STATE, 0);
	vmcs_writel(VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS, 0);
	v->rip = 0;
}

const struct hv_arch_ops vmx_ops = {
	.name = "vmx",
	.backend = HVTRACE_BACKEND_VMX,
	.probe = vmx_probe,
	.setup = vmx_setup,
	.reset_to_init = vmx_reset_to_init,
	.start_at_sipi = vmx_start_at_sipi,
	.lbr_rdmsr = vmx_lbr_rdmsr,
	.lbr_wrmsr = vmx_lbr_wrmsr,
	.lbr_switch = vmx_lbr_switch,
	.vcpu_init = vmx_vcpu_init,
	.vcpu_run = vmx_vcpu_run,
	.inject_exception = vmx_inject_exception,
	.get_cpl = vmx_get_cpl,
	.get_cr = vmx_get_cr,
	.get_efer = vmx_get_efer,
	.set_efer = vmx_set_efer,
	.get_seg = vmx_get_seg,
	.dump = vmx_dump,
	.set_cr2 = vmx_set_cr2,
	.get_dr = vmx_get_dr,
	.set_dr = vmx_set_dr,
	.set_exception_intercepts = vmx_set_exception_intercepts,
	.set_intr_intercept = vmx_set_intr_intercept,
	.inject_interrupt = vmx_inject_interrupt,
	.irq_blocked = vmx_irq_blocked,
	.guest_nmi_blocked = vmx_guest_nmi_blocked,
	.set_irq_window = vmx_set_irq_window,
	.set_hlt_intercept = vmx_set_hlt_intercept,
	.inject_nmi = vmx_inject_nmi,
	.take_pending = vmx_take_pending,
	.get_msr = vmx_get_msr,
	.intercept_msr_read = vmx_intercept_msr_read,
	.set_sti_shadow = vmx_set_sti_shadow,
	.set_single_step_trap = vmx_set_single_step_trap,
	.end_interrupt_shadow = vmx_end_interrupt_shadow,
	.npt_set_exec = vmx_ept_set_exec,
	.npt_set_write = vmx_ept_set_write,
};
