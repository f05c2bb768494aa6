/* The code t_pmu counts. pmu_seq(ctrl) writes ctrl to
 * IA32_PERF_GLOBAL_CTRL, runs a sequence whose instructions and branches
 * are known, and writes 0 there: the counters count from the instruction
 * after the enabling WRMSR to the disabling WRMSR. Counted (the enabling
 * WRMSR, which retires with counting on, included; the disabling one,
 * which retires with it off, not): PMU_SEQ_* in t_pmu.c. The pmu_seq_*
 * labels name the instructions PEBS records must point at: the
 * enabling WRMSR (emulated by the hypervisor), the 3rd branch (the first CALL), the 6th (the second RET, at 8:), the 9th (the
 * LOOP's second time), the 10th and 20th instruction. */
#include "seq.h"

	.text
/* void pmu_seq(u64 global_ctrl) */
G pmu_seq
	movl $0x38f, %ecx
	movl %edi, %eax
	movq %rdi, %rdx
	shrq $32, %rdx
G pmu_seq_wrmsr
	wrmsr			/* 1: counting from here */
	xorl %eax, %eax		/* 2 */
	jz 1f			/* 3: conditional, taken */
	ud2
1:	cmpl $1, %eax		/* 4 */
	jz 9f			/* 5: conditional, not taken */
G pmu_seq_br3
	call 8f			/* 6: near call; 7: its ret */
	call 8f			/* 8, 9 */
G pmu_seq_insn10
	jmp 2f			/* 10: near taken */
	ud2
G pmu_seq_jmp_to
2:	movl $3, %ecx		/* 11 */
G pmu_seq_loop
3:	loop 3b			/* 12, 13, 14: conditional, taken twice, not taken once */
	/* an IRETQ to the next instruction: one far branch */
	movl %ss, %eax		/* 15 */
	pushq %rax		/* 16 */
	leaq 8(%rsp), %rax	/* 17 */
	pushq %rax		/* 18 */
	pushfq			/* 19 */
G pmu_seq_insn20
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
G pmu_seq_ret
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

/* Ring 3: void pmu_user_seq(u64 global_ctrl, u64 user_rsp, u64 user_cs,
 * u64 user_ss) counts from ring 0 into ring 3 by IRETQ, a few branches
 * there, and INT 0x82 (a DPL-3 gate to pmu_user_gate) back to ring 0,
 * which stops counting and returns to the caller on the stack it left.
 * Only RAX, RCX, RDX, R9 and R10 are used: nothing to save but RSP.
 * Counted: PMU_USER_* in t_pmu.c. */
/* The way into ring 3 of pmu_user_seq and pmu_wait_seq: RSP kept for
 * pmu_user_gate, global_ctrl (RDI) to IA32_PERF_GLOBAL_CTRL, then IRETQ
 * to `rip` at user_rsp (RSI), user_cs (RDX), user_ss (RCX) with RFLAGS
 * `rflags`. The instructions pmu_user_seq counts are numbered. */
.macro RING3_ENTER rflags, rip
	movq %rsp, pmu_user_rsp(%rip)
	movq %rdx, %r9
	movq %rcx, %r10
	movl $0x38f, %ecx
	movl %edi, %eax
	movq %rdi, %rdx
	shrq $32, %rdx
	wrmsr			/* OS 1 */
	pushq %r10		/* OS 2: the frame for IRETQ: SS, RSP, RFLAGS, CS, RIP */
	pushq %rsi		/* OS 3 */
	pushq $\rflags		/* OS 4 */
	pushq %r9		/* OS 5 */
	leaq \rip(%rip), %rax	/* OS 6 */
	pushq %rax		/* OS 7 */
	iretq			/* OS 8: far, at CPL 0 */
.endm

G pmu_user_seq
	RING3_ENTER 2, pmu_user_code	/* IF clear */
G pmu_user_code
	xorl %eax, %eax		/* USR 1 */
	jz 1f			/* USR 2: conditional, taken */
	ud2
1:	call 2f			/* USR 3: near call; USR 4: its ret */
	jmp 3f			/* USR 5: near taken */
2:	ret
G pmu_user_int
3:	int $0x82		/* USR 6: far, at CPL 3 */
	ud2
G pmu_user_gate
	movl $0x38f, %ecx	/* OS 9 */
	xorl %eax, %eax		/* OS 10 */
	xorl %edx, %edx		/* OS 11 */
	wrmsr			/* off */
	movq pmu_user_rsp(%rip), %rsp
	ret

/* Ring 3 with interrupts on: void pmu_wait_seq(u64 global_ctrl, u64
 * user_rsp, u64 user_cs, u64 user_ss) enters ring 3 as pmu_user_seq does
 * but with IF set, spins there until pmi_count (pmi.S, its page
 * user-mapped) is no longer 0 or 2^26 rounds have gone, and comes back by
 * INT 0x82 (pmu_user_gate, which stops counting). For t_pmu's
 * pmi_storm_lets_interrupt_in. */
G pmu_wait_seq
	RING3_ENTER 0x202, pmu_wait_user	/* IF set */
G pmu_wait_user
	movl $(1 << 26), %ecx
1:	cmpq $0, pmi_count(%rip)
	jne 2f
	decl %ecx
	jnz 1b
2:	int $0x82
	ud2

	.data
	.balign 8
pmu_user_rsp:
	.quad 0
	.section .note.GNU-stack,"",@progbits
