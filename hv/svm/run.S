/* void svm_vmrun(struct vcpu *v, u64 vmcb_pa, u64 host_save_pa)
 * AMD APM Vol. 2 15.5: VMRUN saves host state to VM_HSAVE_PA and loads the
 * guest from the VMCB; FS/GS/TR/LDTR/KernelGSBase/STAR/SYSENTER come from
 * VMLOAD. On #VMEXIT, RSP and RAX are the host's again (RAX = vmcb_pa); all
 * other GPRs hold the guest's and are saved into v->gpr[] (index = x86
 * register number, struct vcpu offset 0). GIF stays 0 in the host. */
#include "arch/x86/gprs.h"

	.text
	.globl svm_vmrun
svm_vmrun:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushq %rdx		/* host_save_pa */
	pushq %rdi		/* v */

	movq %rsi, %rax
	GUEST_GPRS_LOAD

	vmload %rax
	vmrun %rax
	.globl svm_vmexit_rip	/* where #VMEXIT resumes (the hostile-guest test aims at it) */
svm_vmexit_rip:
	vmsave %rax

	xchgq %rdi, (%rsp)	/* rdi = v, stack top = guest rdi */
	GUEST_GPRS_SAVE

	popq %rax		/* host_save_pa */
	vmload %rax

	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret
	.section .note.GNU-stack,"",@progbits
