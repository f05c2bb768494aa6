/* SVM backend internals (hv/svm/ only). */
#ifndef HV_SVM_SVM_H
#define HV_SVM_SVM_H

#include "arch/x86/cpu.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "svm/vmcb.h"

/* What VMRUN's consistency checks read (APM Vol. 2 15.5.1), as the last
 * VMRUN was given it: QEMU's TCG rewrites the VMCB's save area when it
 * refuses one, the hardware leaves it; either way the copy says what was
 * refused (svm_vmrun_refusal). */
struct svm_entry_state {
	u64 cr0, cr3, cr4, efer, dr6, dr7, event_inj;
	u32 intercept_misc4, asid;
	u16 cs_attr;
};

struct svm_vcpu {
	struct vmcb *vmcb;
	u64 vmcb_pa;
	u64 host_save_pa;	/* VMSAVE/VMLOAD area for the host's FS/GS/TR... */
	u64 hsave_pa;		/* VM_HSAVE_PA */
	u64 efer_before;	/* host EFER before we set SVME (abort path) */
	bool launched;
	bool nmi_pending;	/* an NMI the host took while acknowledging an INTR */
	u32 cr_run_once;	/* CR write intercepts off for one instruction (svm_cr_run_once) */
	struct svm_entry_state entry;	/* the last VMRUN's checked fields */
	u64 root_db_dr6;	/* B0-B3 of a guest #DB QEMU raised in root mode (svm_root_db) */
	u32 npt_gen;		/* svm_npt_gen as of its last guest TLB flush */
};

/* run.S: enters the guest once; returns after the #VMEXIT with the guest's
 * GPRs (but RAX/RSP, which live in the VMCB) saved in v->gpr[]. */
void svm_vmrun(struct vcpu *v, u64 vmcb_pa, u64 host_save_pa);

int svm_npt_build(u64 *ncr3);
/* hv_arch_ops.npt_set_exec (npt.c); svm_npt_gen counts its changes: each
 * vCPU flushes its guest TLB at the entry after one */
bool svm_npt_set_exec(u64 gpa, bool exec, bool *was);
bool svm_npt_set_write(u64 gpa, bool write, bool *was);
extern volatile u32 svm_npt_gen;
int svm_msrpm_build(u64 *msrpm_pa, u64 *iopm_pa);
void svm_intercept_msr_read(u32 msr);
void svm_handle_exit(struct vcpu *v, struct svm_vcpu *sv);
/* hv_arch_ops.take_pending (exit.c) */
u32 svm_take_pending(struct vcpu *v, u8 *vector);
void svm_dump(struct vcpu *v);

/* What this processor allows, for svm_vmrun_refusal (check.c) */
struct svm_limits {
	u64 cr4_valid;		/* CR4 bits it implements */
	u32 phys_bits;		/* MAXPHYADDR */
};
/* The first consistency check of APM Vol. 2 15.5.1 that this state fails,
 * in words; NULL: none of them (the refusal has another cause). */
const char *svm_vmrun_refusal(const struct svm_entry_state *e, const struct svm_limits *lim);

static inline void svm_vmsave(u64 pa) { asm volatile("vmsave %%rax" ::"a"(pa) : "memory"); }
static inline void svm_clgi(void) { asm volatile("clgi" ::: "memory"); }
static inline void svm_stgi(void) { asm volatile("stgi" ::: "memory"); }

#endif
