/* Root-mode exception entry stubs: normalize the frame (push a dummy error
 * code where the CPU pushes none, SDM Vol. 3 6.15) and call exc_handler.
 * NMI (2) and external interrupts (32-255) are not errors: the hypervisor
 * takes them only in the short window where it opens GIF/IF to acknowledge
 * an interrupt meant for the guest (core/irq.c); their stubs record the
 * vector in host_irq_vector / host_nmi_pending and return. */
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
	movl $1, host_nmi_pending(%rip)
	iretq

	.macro IRQ n
irq_stub_\n:
	movl $\n, host_irq_vector(%rip)
	iretq
	.endm
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
	andq $-16, %rsp
	call exc_handler
1:	cli
	hlt
	jmp 1b

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

	.data
	.globl host_irq_vector, host_nmi_pending
	.balign 4
host_irq_vector:	.long 0
host_nmi_pending:	.long 0
	.section .note.GNU-stack,"",@progbits
