/* #UD and #GP handlers for the guest tests: record the vector (and error
 * code), skip the faulting instruction by fault_skip bytes, return. */
	.data
	.globl fault_vector, fault_error, fault_skip
	.hidden fault_vector, fault_error, fault_skip
fault_vector:	.quad -1
fault_error:	.quad 0
fault_skip:	.quad 0

	.text
	.globl trap_ud, trap_gp
	.hidden trap_ud, trap_gp
trap_ud:
	pushq %rax
	movq $6, %rax
	movq %rax, fault_vector(%rip)
	movq fault_skip(%rip), %rax
	addq %rax, 8(%rsp)
	popq %rax
	iretq
trap_gp:
	pushq %rax
	movq 8(%rsp), %rax
	movq %rax, fault_error(%rip)
	movq $13, %rax
	movq %rax, fault_vector(%rip)
	movq fault_skip(%rip), %rax
	addq %rax, 16(%rsp)
	popq %rax
	addq $8, %rsp
	iretq
	.section .note.GNU-stack,"",@progbits
