/* void resume_native(const struct native_state *ns): see resume.h. Runs on
 * the hypervisor's stack and page tables; the loader's stub at ns->rip
 * (identity-mapped, efi-loader/enter.S) switches CR3 and RSP itself:
 * it takes RAX = status, RDX = CR3, RSI = RSP. */
	.text
	.globl resume_native
resume_native:
	subq $16, %rsp
	movw 0x30(%rdi), %ax
	movw %ax, (%rsp)
	movq 0x00(%rdi), %rax
	movq %rax, 2(%rsp)
	lgdt (%rsp)
	movw 0x32(%rdi), %ax
	movw %ax, (%rsp)
	movq 0x08(%rdi), %rax
	movq %rax, 2(%rsp)
	lidt (%rsp)
	addq $16, %rsp
	movzwq 0x34(%rdi), %rax
	pushq %rax
	leaq 1f(%rip), %rax
	pushq %rax
	lretq
1:	movw 0x36(%rdi), %ss
	movw 0x38(%rdi), %ds
	movw 0x3a(%rdi), %es
	movq 0x20(%rdi), %rcx
	movq 0x28(%rdi), %rax
	movq 0x10(%rdi), %rdx
	movq 0x18(%rdi), %rsi
	jmp *%rcx
	.section .note.GNU-stack,"",@progbits
