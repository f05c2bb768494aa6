/* The code t_pmu counts. pmu_seq(ctrl) writes ctrl to
 * IA32_PERF_GLOBAL_CTRL, runs a sequence whose instructions and branches
 * are known, and writes 0 there: the counters count from the instruction
 * after the enabling WRMSR to the disabling WRMSR. Counted (the enabling
 * WRMSR, which retires with counting on, included; the disabling one,
 * which retires with it off, not): PMU_SEQ_* in t_pmu.c. */
#include "seq.h"

	.text
/* void pmu_seq(u64 global_ctrl) */
G pmu_seq
	movl $0x38f, %ecx
	movl %edi, %eax
	movq %rdi, %rdx
	shrq $32, %rdx
	wrmsr			/* 1: counting from here */
	xorl %eax, %eax		/* 2 */
	jz 1f			/* 3: conditional, taken */
	ud2
1:	cmpl $1, %eax		/* 4 */
	jz 9f			/* 5: conditional, not taken */
	call 8f			/* 6: near call; 7: its ret */
	call 8f			/* 8, 9 */
	jmp 2f			/* 10: near taken */
	ud2
2:	movl $3, %ecx		/* 11 */
3:	loop 3b			/* 12, 13, 14: conditional, taken twice, not taken once */
	/* an IRETQ to the next instruction: one far branch */
	movl %ss, %eax		/* 15 */
	pushq %rax		/* 16 */
	leaq 8(%rsp), %rax	/* 17 */
	pushq %rax		/* 18 */
	pushfq			/* 19 */
	movl %cs, %eax		/* 20 */
	pushq %rax		/* 21 */
	leaq 4f(%rip), %rax	/* 22 */
	pushq %rax		/* 23 */
	iretq			/* 24: far */
4:	movl $0x38f, %ecx	/* 25 */
	xorl %eax, %eax		/* 26 */
	xorl %edx, %edx		/* 27 */
	wrmsr			/* off */
	ret
8:	ret
9:	ud2

/* A REP MOVSB of 64 bytes counted: one instruction, whatever its
 * iterations. void pmu_rep_seq(u64 global_ctrl, void *dst, void *src) */
G pmu_rep_seq
	pushq %rdi
	movq %rdx, %r8
	movq %rsi, %r9
	movl $0x38f, %ecx
	movl %edi, %eax
	movq %rdi, %rdx
	shrq $32, %rdx
	wrmsr			/* 1 */
	movq %r9, %rdi		/* 2 */
	movq %r8, %rsi		/* 3 */
	movl $64, %ecx		/* 4 */
	rep movsb		/* 5 */
	movl $0x38f, %ecx	/* 6 */
	xorl %eax, %eax		/* 7 */
	xorl %edx, %edx		/* 8 */
	wrmsr
	popq %rdi
	ret
	.section .note.GNU-stack,"",@progbits
