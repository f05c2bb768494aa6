/* VMX backend internals (hv/vmx/ only): per-vCPU state, what probe found
 * out about the CPU, and the VMX instructions (SDM Vol. 3 chapter 31). */
#ifndef HV_VMX_VMX_H
#define HV_VMX_VMX_H

#include "arch/x86/cpu.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "vmx/vmcs.h"

/* What vmx_probe() found: the controls to use and the limits to respect. */
struct vmx_caps {
	u32 revision;			/* IA32_VMX_BASIC[30:0] */
	u32 pin, proc, proc2, exit, entry;	/* adjusted control words */
	u64 cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;	/* A.7, A.8 */
	u64 ept_cap;			/* IA32_VMX_EPT_VPID_CAP */
	u64 ept_max_leaf;		/* PAGE_1G, PAGE_2M or PAGE_SIZE */
	u8 eptp_memtype;		/* WB where allowed, else UC */
	u8 timer_shift;			/* the preemption timer ticks at TSC >> this (A.6) */
};
extern struct vmx_caps vmx_caps;

/* With more than one processor, each vCPU exits at least this often (the
 * preemption timer, docs/smp.md) */
#define VMX_POLL_US 1000

struct vmx_vcpu {
	u64 vmxon_pa, vmcs_pa, msr_bitmap_pa, eptp;
	u64 io_bitmap_pa;		/* A, then B in the next page */
	u64 cr0_mask, cr4_mask;		/* guest/host masks (25.6.6) */
	u64 cr0_before, cr4_before;	/* the processor's before VMXON (abort path) */
	bool launched;
	bool lbr_on;			/* LBR batching armed (vmx_lbr_switch) */
	u32 ept_gen;			/* vmx_ept_gen as of its last INVEPT */
};

/* LBR batching's PMI (docs/branch-engine.md "LBR batching"): whether the
 * NMI this processor took is the overflow of the hypervisor's counters,
 * consumed (not the guest's) */
bool vmx_lbr_pmi(struct vcpu *v);

/* run.S: loads the guest's GPRs from v->gpr[] (index = x86 register
 * number; RSP lives in the VMCS), VMLAUNCHes or VMRESUMEs, and on the VM
 * exit saves them back. Returns 0 after a VM exit (including a VM-entry
 * failure that is reported as one, 27.8), 1 on VMfailValid (the
 * VM-instruction error field says why), 2 on VMfailInvalid. */
int vmx_enter(struct vcpu *v, bool launched);
extern const char vmx_exit_entry[];	/* HOST_RIP */
#define VMX_ENTER_FAIL_VALID	1
#define VMX_ENTER_FAIL_INVALID	2

int vmx_ept_build(u64 *eptp);
/* hv_arch_ops.npt_set_exec (ept.c); vmx_ept_gen counts its changes: each
 * vCPU invalidates its EPT mappings at the entry after one */
bool vmx_ept_set_exec(u64 gpa, bool exec, bool *was);
bool vmx_ept_set_write(u64 gpa, bool write, bool *was);
extern volatile u32 vmx_ept_gen;
int vmx_msr_bitmap_build(u64 *bitmap_pa);
void vmx_intercept_msr_read(u32 msr);
int vmx_io_bitmap_build(u64 *bitmaps_pa);
void vmx_handle_exit(struct vcpu *v, struct vmx_vcpu *vx, u32 reason);
void vmx_dump(struct vcpu *v);
const char *vmx_insn_error_str(u32 err);
const char *vmx_exit_reason_str(u32 basic);
void vmx_log_entry_failure(u32 reason);
void vmx_set_guest_efer(u64 efer);

/* SDM Vol. 3 31.2: VMsucceed clears CF and ZF; VMfailInvalid sets CF,
 * VMfailValid sets ZF. These return true on success. */
static inline bool vmxon(u64 pa)
{
	bool fail;
	asm volatile("vmxon %[pa]" : "=@ccbe"(fail) : [pa] "m"(pa) : "cc", "memory");
	return !fail;
}

static inline bool vmclear(u64 pa)
{
	bool fail;
	asm volatile("vmclear %[pa]" : "=@ccbe"(fail) : [pa] "m"(pa) : "cc", "memory");
	return !fail;
}

static inline bool vmptrld(u64 pa)
{
	bool fail;
	asm volatile("vmptrld %[pa]" : "=@ccbe"(fail) : [pa] "m"(pa) : "cc", "memory");
	return !fail;
}

static inline void vmxoff(void) { asm volatile("vmxoff" ::: "cc", "memory"); }

static inline bool invept(u64 type, u64 eptp)
{
	struct { u64 eptp, zero; } desc = { eptp, 0 };
	bool fail;
	asm volatile("invept %[d], %[t]" : "=@ccbe"(fail) : [d] "m"(desc), [t] "r"(type) : "cc", "memory");
	return !fail;
}

#endif
