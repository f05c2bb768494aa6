/* void svm_vmrun(struct vcpu *v, u64 vmcb_pa, u64 host_save_pa)
 * AMD APM Vol. 2 15.5: VMRUN saves host state to VM_HSAVE_PA and loads the
 * guest from the VMCB; FS/GS/TR/LDTR/KernelGSBase/STAR/SYSENTER come from
 * VMLOAD. On #VMEXIT, RSP and RAX are the host's again (RAX = vmcb_pa); all
 * other GPRs hold the guest's and are saved into v->gpr[] (index = x86
 * register number, struct vcpu offset 0). GIF stays 0 in the host. */
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
	movq 1*8(%rdi), %rcx
	movq 2*8(%rdi), %rdx
	movq 3*8(%rdi), %rbx
	movq 5*8(%rdi), %rbp
	movq 6*8(%rdi), %rsi
	movq 8*8(%rdi), %r8
	movq 9*8(%rdi), %r9
	movq 10*8(%rdi), %r10
	movq 11*8(%rdi), %r11
	movq 12*8(%rdi), %r12
	movq 13*8(%rdi), %r13
	movq 14*8(%rdi), %r14
	movq 15*8(%rdi), %r15
	movq 7*8(%rdi), %rdi

	vmload %rax
	vmrun %rax
	vmsave %rax

	xchgq %rdi, (%rsp)	/* rdi = v, stack top = guest rdi */
	movq %rcx, 1*8(%rdi)
	movq %rdx, 2*8(%rdi)
	movq %rbx, 3*8(%rdi)
	movq %rbp, 5*8(%rdi)
	movq %rsi, 6*8(%rdi)
	movq %r8, 8*8(%rdi)
	movq %r9, 9*8(%rdi)
	movq %r10, 10*8(%rdi)
	movq %r11, 11*8(%rdi)
	movq %r12, 12*8(%rdi)
	movq %r13, 13*8(%rdi)
	movq %r14, 14*8(%rdi)
	movq %r15, 15*8(%rdi)
	popq %rax
	movq %rax, 7*8(%rdi)

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
