/*
 * Hand-written sequences for t_rec: the recorder started and stopped by
 * the trace-control hypercall around code whose branches are known
 * exactly. Interrupts are off inside, so no timer handler adds records.
 * Each sequence exists twice: VMMCALL (AMD) and VMCALL (Intel).
 */
	.text
	.code64

/* RAX = HVTRACE_HC_TRACE_CTL (3), RBX = op */
.macro TRACE_CTL op, insn
	mov	$3, %eax
	mov	$\op, %ebx
	\insn
.endm

/* uint64_t rec_loop_*(uint64_t n): START, n turns of DEC/JNZ (n - 1
 * taken branches), STOP. Returns the STOP hypercall's RAX. */
.macro LOOP name, insn
	.globl \name
\name:
	push	%rbx
	pushfq
	cli
	mov	%rdi, %r8
	TRACE_CTL 1, \insn
	mov	%r8, %rcx
	.globl \name\()_back
\name\()_back:
	dec	%rcx
	jnz	\name\()_back
	TRACE_CTL 2, \insn
	popfq
	pop	%rbx
	ret
.endm
LOOP rec_loop_svm, vmmcall
LOOP rec_loop_vmx, vmcall

/* void rec_crash_*(void): START, then JMP, CALL, CALL, JMP, and a #UD
 * with an empty IDT: a triple fault. Never returns. */
.macro CRASH name, insn
	.globl \name
\name:
	cli
	TRACE_CTL 1, \insn
	.globl \name\()_jmp
\name\()_jmp:
	jmp	rec_crash_body
.endm
CRASH rec_crash_svm, vmmcall
CRASH rec_crash_vmx, vmcall

/* void rec_reset_*(void): START, a JMP and a CALL, then a hard reset
 * through the PCI reset control register (port 0xCF9). Never returns. */
.macro RESET name, insn
	.globl \name
\name:
	cli
	TRACE_CTL 1, \insn
	jmp	1f
1:	call	2f
2:	mov	$0x0e, %al
	mov	$0xcf9, %dx
	outb	%al, %dx
3:	hlt
	jmp	3b
.endm
RESET rec_reset_svm, vmmcall
RESET rec_reset_vmx, vmcall

	.globl rec_crash_body, rec_crash_a, rec_crash_b, rec_crash_c, rec_crash_fault
rec_crash_body:
	call	rec_crash_a
rec_crash_a:
	call	rec_crash_b
rec_crash_b:
	jmp	rec_crash_c
	int3
rec_crash_c:
	lidt	rec_empty_idt(%rip)
rec_crash_fault:
	ud2

	.data
rec_empty_idt:
	.word	0
	.quad	0

/* void rec_spin(uint64_t n): n turns of DEC/JNZ (n - 1 taken branches)
 * with interrupts off, no hypercall: run on every processor at once while
 * the recorder traces, its range [rec_spin, rec_spin_end) the stream's
 * filter. */
	.globl rec_spin, rec_spin_end
rec_spin:
	pushfq
	cli
	mov	%rdi, %rcx
1:	dec	%rcx
	jnz	1b
	popfq
	ret
rec_spin_end:

/* void rec_hang_*(void): START, then interrupts off and a loop that never
 * ends: a hang for the host to catch with an NMI (trace.freeze = nmi). */
.macro HANG name, insn
	.globl \name
\name:
	cli
	TRACE_CTL 1, \insn
	jmp	rec_hang_loop
.endm
HANG rec_hang_svm, vmmcall
HANG rec_hang_vmx, vmcall

	.globl rec_hang_loop, rec_hang_end
rec_hang_loop:
	mov	$100, %ecx
1:	dec	%ecx
	jnz	1b
	jmp	rec_hang_loop
rec_hang_end:

	.section .note.GNU-stack,"",@progbits
