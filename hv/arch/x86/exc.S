/* Root-mode exception entry stubs: normalize the frame (push a dummy error
 * code where the CPU pushes none, SDM Vol. 3 6.15) and call exc_handler.
 * NMI (2) and external interrupts (32-255) are not errors: the hypervisor
 * takes them only in the short window where it opens GIF/IF to acknowledge
 * an interrupt meant for the guest (dispatch/event.c); their stubs record the
 * vector in this processor's struct host_cpu (%gs, desc.h) and return. A #GP of
 * rdmsr_safe/wrmsr_safe resumes at their fix-up; any other exception stops
 * the processor (desc.c). */
#include "arch/x86/desc.h"

	.text
	.macro STUB n
exc_stub_\n:
	.if (\n == 8 || (\n >= 10 && \n <= 14) || \n == 17 || \n == 21 || \n == 29 || \n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp exc_common
	.endm

	.irp n,0,1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	STUB \n
	.endr

exc_stub_2:
	movl $1, %gs:HOST_CPU_NMI_PENDING
	iretq

/* One interrupt per window: the IRET goes back with IF clear (SDM Vol. 3
 * 6.14.1: RFLAGS at 16 in the frame), so the window's remaining instructions
 * take no second one. A second would overwrite the vector of the first,
 * which the local APIC then holds in service for ever (or the 8259, for
 * an ExtINT) and no EOI from the guest would ever end. What else is
 * pending stays pending: it makes the next exit.
 *
 * A vector that arrives with IF clear in the frame is no external
 * interrupt (the processor takes those only with IF set, SDM Vol. 3
 * 6.8.1): the one source known is QEMU's TCG delivering an EVENTINJ's
 * vector a second time, as an exception, whatever IF says (docs/smp.md
 * "Found"). Nothing was acknowledged for it: it is counted, dropped (said
 * once, svm_take_pending), and cannot overwrite the vector of a real one
 * taken in the same window. */
	.macro IRQ n
irq_stub_\n:
	btq $HOST_RFLAGS_IF_BIT, HOST_FRAME_RFLAGS(%rsp)
	jnc irq_stale
	movl $\n, %gs:HOST_CPU_IRQ_VECTOR
	btrq $HOST_RFLAGS_IF_BIT, HOST_FRAME_RFLAGS(%rsp)
	iretq
	.endm
irq_stale:
	incl %gs:HOST_CPU_IRQ_STALE
	iretq
	.altmacro
	.set i, 32
	.rept 224
	IRQ %i
	.set i, i + 1
	.endr

exc_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	movq %rsp, %rbx		/* callee-saved: the frame, for the return */
	andq $-16, %rsp
	call exc_handler	/* returns only when it moved RIP to a fix-up */
	movq %rbx, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp		/* vector, error code */
	iretq

/* int rdmsr_safe(u32 msr, u64 *val), int wrmsr_safe(u32 msr, u64 val):
 * 0, or -1 when the instruction raised #GP (an MSR this processor does not
 * have, or a value it refuses): exc_handler resumes at the fix-up. For
 * MSRs the guest names, which root mode must never fault on. */
	.globl rdmsr_safe, rdmsr_safe_insn, rdmsr_safe_fixup
rdmsr_safe:
	movl %edi, %ecx
rdmsr_safe_insn:
	rdmsr
	shlq $32, %rdx
	movl %eax, %eax
	orq %rdx, %rax
	movq %rax, (%rsi)
	xorl %eax, %eax
	ret
rdmsr_safe_fixup:
	movl $-1, %eax
	ret

	.globl wrmsr_safe, wrmsr_safe_insn, wrmsr_safe_fixup
wrmsr_safe:
	movl %edi, %ecx
	movl %esi, %eax
	movq %rsi, %rdx
	shrq $32, %rdx
wrmsr_safe_insn:
	wrmsr
	xorl %eax, %eax
	ret
wrmsr_safe_fixup:
	movl $-1, %eax
	ret

	.section .rodata
	.globl exc_stubs
	.balign 8
exc_stubs:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad exc_stub_\n
	.endr
	.macro IRQPTR n
	.quad irq_stub_\n
	.endm
	.set i, 32
	.rept 224
	IRQPTR %i
	.set i, i + 1
	.endr

	.section .note.GNU-stack,"",@progbits
