/* Assembler macros for the run loops (hv/svm/run.S, hv/vmx/run.S): the
 * guest's GPRs to and from struct vcpu's gpr[] (base/vcpu.h: index = x86
 * register number, at offset 0). RAX and RSP are left to the backend: they
 * live in the VMCB/VMCS or are handled around the entry. */
#ifndef HV_X86_GPRS_H
#define HV_X86_GPRS_H
#ifdef __ASSEMBLER__

/* %rdi = v: loads RCX..R15 but RSP, and RDI last */
.macro GUEST_GPRS_LOAD
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
.endm

/* %rdi = v, the guest's RDI on top of the stack: stores RCX..R15 but RSP,
 * then pops the guest's RDI into gpr[7]. Clobbers RAX. */
.macro GUEST_GPRS_SAVE
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
.endm

#endif
#endif
