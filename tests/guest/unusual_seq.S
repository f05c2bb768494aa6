/* t_unusual's #PF handler: records the error code and CR2, then skips the
 * faulting instruction (pf_skip bytes) or, with pf_skip 0, returns from
 * the call that fetched from a page it may not (a fetch fault at a CALL's
 * target: the return address is on top of the interrupted stack). */
#include "seq.h"

	.data
	.balign 8
G pf_count
	.quad 0
G pf_error
	.quad 0
G pf_cr2
	.quad 0
G pf_skip
	.quad 0

	.text
G pf_handler
	pushq %rax
	incq pf_count(%rip)
	movq 8(%rsp), %rax
	movq %rax, pf_error(%rip)
	movq %cr2, %rax
	movq %rax, pf_cr2(%rip)
	movq pf_skip(%rip), %rax
	testq %rax, %rax
	jz 1f
	addq %rax, 16(%rsp)
	jmp 2f
1:	pushq %rbx
	movq 48(%rsp), %rbx	/* the interrupted RSP */
	movq (%rbx), %rax	/* the CALL's return address */
	movq %rax, 24(%rsp)	/* the frame's RIP */
	addq $8, 48(%rsp)
	popq %rbx
2:	popq %rax
	addq $8, %rsp
	iretq
	.section .note.GNU-stack,"",@progbits
