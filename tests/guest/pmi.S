/* The guest tests' PMI handler (t_bts, t_hostile): counts, EOIs, returns.
 * The EOI goes to the x2APIC EOI MSR in x2APIC mode, otherwise to the
 * local APIC at its reset address: never to whatever IA32_APIC_BASE reads,
 * which t_hostile moves (the firmware never does). */
	.text
	.globl pmi_handler
	.hidden pmi_handler
pmi_handler:
	pushq %rax
	pushq %rcx
	pushq %rdx
	lock incq pmi_count(%rip)
	movl $0x1b, %ecx	/* IA32_APIC_BASE */
	rdmsr
	testl $0x400, %eax	/* EXTD */
	jnz 1f
	movl $0xfee000b0, %eax
	movl $0, (%rax)		/* xAPIC EOI */
	jmp 2f
1:	movl $0x80b, %ecx	/* x2APIC EOI */
	xorl %eax, %eax
	xorl %edx, %edx
	wrmsr
2:	popq %rdx
	popq %rcx
	popq %rax
	iretq

	.data
	.balign 8
	.globl pmi_count
	.hidden pmi_count
pmi_count:
	.quad 0
	.section .note.GNU-stack,"",@progbits
