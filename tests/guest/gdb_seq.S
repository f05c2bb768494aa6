/*
 * t_gdb's loop, the code a host debugger stops, reads, steps and writes
 * into (tests/integration-rec.sh svm-gdb-live): known registers and
 * memory at every instruction. Interrupts stay as the caller has them
 * (on: a busy guest the firmware's timer interrupts).
 */
	.text
	.code64

/* uint64_t gdb_loop(uint64_t deadline_tsc): turns until the debugger
 * writes GDB_MAGIC (0x6764626d61676963) into gdb_poke or the TSC passes
 * the deadline. Every turn: gdb_counter = the turns so far, RBX = 3 *
 * R12 kept and checked (gdb_bad counts breaks of it), R15 stored into
 * gdb_r15 (the debugger sets R15), DR3 and DR7 as the guest reads them
 * ORed into gdb_dr3 and gdb_dr7 (the debugger's breakpoint must never
 * show there; each MOV from a debug register exits). Returns the turns. */
	.globl gdb_loop, gdb_loop_top, gdb_loop_end
gdb_loop:
	push	%rbx
	push	%r12
	push	%r13
	push	%r15
	mov	%rdi, %r13
	xor	%r12d, %r12d
	xor	%ebx, %ebx
	xor	%r15d, %r15d
gdb_loop_top:
	inc	%r12
	add	$3, %rbx
	lea	(%r12, %r12, 2), %rax
	cmp	%rax, %rbx
	je	1f
	incq	gdb_bad(%rip)
	mov	%rax, %rbx
1:	mov	%r12, gdb_counter(%rip)
	mov	%r15, gdb_r15(%rip)
	mov	%dr3, %rax
	or	%rax, gdb_dr3(%rip)
	mov	%dr7, %rax
	or	%rax, gdb_dr7(%rip)
	movabs	$0x6764626d61676963, %rax
	cmp	%rax, gdb_poke(%rip)
	je	2f
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	cmp	%r13, %rax
	jb	gdb_loop_top
gdb_loop_end:
2:	mov	%r12, %rax
	pop	%r15
	pop	%r13
	pop	%r12
	pop	%rbx
	ret

	.data
	.balign 8
	.globl gdb_counter, gdb_r15, gdb_poke, gdb_bad, gdb_dr3, gdb_dr7
gdb_counter:	.quad 0
gdb_r15:	.quad 0
gdb_poke:	.quad 0
gdb_bad:	.quad 0
gdb_dr3:	.quad 0
gdb_dr7:	.quad 0

	.section .note.GNU-stack,"",@progbits
