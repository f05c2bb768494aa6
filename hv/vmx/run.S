/* int vmx_enter(struct vcpu *v, bool launched)
 * SDM Vol. 3 27 (VM entries), 28.5 (loading host state). Root mode,
 * interrupts off. Loads the guest's GPRs from v->gpr[] (index = x86
 * register number, struct vcpu offset 0; RSP, RIP and RFLAGS live in the
 * VMCS) and enters with VMLAUNCH or VMRESUME. A VM exit lands at
 * vmx_exit_entry (HOST_RIP) on the stack recorded in HOST_RSP, whose top
 * holds v: the guest's GPRs are saved there and 0 is returned. An entry
 * that fails as an instruction returns 1 (VMfailValid: ZF) or 2
 * (VMfailInvalid: CF), with the guest's GPRs discarded. */
#include "arch/x86/gprs.h"
#define VMCS_HOST_RSP 0x6c14

	.text
	.globl vmx_enter
vmx_enter:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushq %rdi		/* v: found at the top of the stack after an exit */

	movq $VMCS_HOST_RSP, %rax
	vmwrite %rsp, %rax
	jbe 3f

	testb %sil, %sil	/* launched? (flags survive the MOVs below) */
	movq 0*8(%rdi), %rax
	GUEST_GPRS_LOAD
	jnz 1f
	vmlaunch
	jmp 2f
1:	vmresume
	/* still here: the entry failed as an instruction (31.2) */
2:	movl $1, %eax
	jz 4f
3:	movl $2, %eax
	jc 4f
	movl $1, %eax
4:	popq %rdi
	jmp 5f

	.globl vmx_exit_entry
vmx_exit_entry:
	xchgq %rdi, (%rsp)	/* rdi = v, stack top = guest rdi */
	movq %rax, 0*8(%rdi)
	GUEST_GPRS_SAVE
	xorl %eax, %eax

5:	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret
	.section .note.GNU-stack,"",@progbits
