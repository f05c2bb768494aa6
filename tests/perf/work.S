/*
 * perf-work: the Linux guest's perf test program (tests/integration-perf.sh,
 * docs/pmu.md "Linux's perf in the guest"). Static, no libc, not PIE, its
 * text at 0x10000000 where nothing else in the test guest runs, so its
 * addresses are fixed and a debug-register breakpoint on _start (the
 * recorder's trace.start) fires only for it. Pure user-mode work of a known
 * size, then exit(0); LOOPS iterations (even) of a call, a conditional
 * branch taken every other time and the loop's own branch:
 *
 *   instructions  1 + 7 LOOPS + LOOPS/2 + 3        (7504 for 1000)
 *   branches      4 LOOPS + 1 (the SYSCALL)        (4001)
 *   taken         LOOPS calls + LOOPS rets + LOOPS/2 JZ + LOOPS-1 JNZ + 1
 *                                                  (3500)
 *
 * The integration test does not take these on trust: it derives the
 * counts from the host's record stream and objdump's listing of this file
 * (scripts/trace-count.awk) and compares all three.
 */
#define LOOPS 1000

	.text
	.globl _start
_start:
	mov	$LOOPS, %ecx
1:	call	leaf
	test	$1, %ecx		/* odd ECX: not taken, ADD runs */
	jz	2f
	add	$3, %eax
2:	dec	%ecx
	jnz	1b
	mov	$60, %eax		/* exit(0) */
	xor	%edi, %edi
	syscall

leaf:
	inc	%ebx
	ret

	.section .note.GNU-stack,"",@progbits
