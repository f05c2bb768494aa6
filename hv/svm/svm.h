/* SVM backend internals (hv/svm/ only). */
#ifndef HV_SVM_SVM_H
#define HV_SVM_SVM_H

#include "arch/x86/cpu.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "svm/vmcb.h"

struct svm_vcpu {
	struct vmcb *vmcb;
	u64 vmcb_pa;
	u64 host_save_pa;	/* VMSAVE/VMLOAD area for the host's FS/GS/TR... */
	u64 hsave_pa;		/* VM_HSAVE_PA */
	u64 efer_before;	/* host EFER before we set SVME (abort path) */
	bool launched;
	bool nmi_pending;	/* an NMI the host took while acknowledging an INTR */
	bool cr4_passthrough;	/* one MOV to CR4 runs unintercepted (svm_mov_to_cr4) */
};

/* run.S: enters the guest once; returns after the #VMEXIT with the guest's
 * GPRs (but RAX/RSP, which live in the VMCB) saved in v->gpr[]. */
void svm_vmrun(struct vcpu *v, u64 vmcb_pa, u64 host_save_pa);

int svm_npt_build(u64 *ncr3);
int svm_msrpm_build(u64 *msrpm_pa, u64 *iopm_pa);
void svm_handle_exit(struct vcpu *v, struct svm_vcpu *sv);
void svm_dump(struct vcpu *v);

static inline void svm_vmsave(u64 pa) { asm volatile("vmsave %%rax" ::"a"(pa) : "memory"); }
static inline void svm_clgi(void) { asm volatile("clgi" ::: "memory"); }
static inline void svm_stgi(void) { asm volatile("stgi" ::: "memory"); }

#endif
