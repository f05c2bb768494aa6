/* Code sequences traced by t_bts. Each one enables BTS itself (DEBUGCTL =
 * %rdi) and disables it at the end, so exactly the branches between the two
 * WRMSRs are recorded; the labels give the expected from/to addresses. */
	.macro ENABLE
	movl $0x1d9, %ecx
	movl %edi, %eax
	xorl %edx, %edx
	wrmsr
	.endm
	.macro DISABLE
	movl $0x1d9, %ecx
	xorl %eax, %eax
	xorl %edx, %edx
	wrmsr
	.endm
#include "seq.h"

	.text
/* void seq_near(u64 debugctl): near branches of every kind */
G seq_near
	pushq %rbx
	pushq %rsi
	pushq %rdi
	ENABLE
	xorl %eax, %eax
G n_jz_taken
	jz n_t1			/* taken, rel8 */
	nop
n_t1:	cmpl $1, %eax
	jz n_never		/* not taken: no record */
G n_jnz_near
	.byte 0x0f, 0x85	/* jnz rel32, taken */
	.long n_t2 - . - 4
n_never:
	nop
G n_t2
G n_jmp_short
	jmp n_t3
	ud2
G n_t3
G n_call
	call n_func
G n_after_call
	leaq n_ind(%rip), %rbx
G n_call_ind
	call *%rbx
G n_after_ind
	leaq n_t4(%rip), %rax
	pushq %rax
G n_jmp_mem
	jmp *(%rsp)
	ud2
G n_t4
	addq $8, %rsp
	movl $3, %ecx
G n_loop
	loop n_loop		/* taken twice, then not */
	xorl %ecx, %ecx
G n_jrcxz
	jrcxz n_t5		/* taken */
	nop
G n_t5
	incl %ecx
	jrcxz n_t6		/* not taken */
n_t6:
	leaq bts_scratch(%rip), %rsi
	leaq bts_scratch+64(%rip), %rdi
	movl $16, %ecx
	rep movsb		/* 16 iterations, no branch */
	xorl %eax, %eax
G n_jz_zero
	.byte 0x74, 0x00	/* jz to the next instruction, taken */
G n_jz_zero_t
	DISABLE
	popq %rdi
	popq %rsi
	popq %rbx
	ret
G n_func
	nop
G n_ret
	ret
G n_ind
G n_ret2
	ret

/* void seq_events(u64 debugctl): INT3, a #UD fault, INT n, each with a
 * handler that IRETs (t_bts installs them as vectors 3, 6, 0x81) */
G seq_events
	ENABLE
G e_int3
	int3
G e_after_int3
G e_ud
	ud2
G e_after_ud
G e_intn
	int $0x81
G e_after_intn
	DISABLE
	ret
G bp_handler
G e_bp_iret
	iretq
G ud_handler
	addq $2, (%rsp)		/* skip the ud2 */
G e_ud_iret
	iretq
G intn_handler
G e_intn_iret
	iretq

/* void seq_chain(u64 debugctl): six distinct taken jumps */
G seq_chain
	ENABLE
G c_j1
	jmp c_t1
	ud2
G c_t1
G c_j2
	jmp c_t2
	ud2
G c_t2
G c_j3
	jmp c_t3
	ud2
G c_t3
G c_j4
	jmp c_t4
	ud2
G c_t4
G c_j5
	jmp c_t5
	ud2
G c_t5
G c_j6
	jmp c_t6
	ud2
G c_t6
	DISABLE
	ret

/* void seq_pushf(u64 debugctl, u64 *out): the flags PUSHF stores */
G seq_pushf
	movq %rsi, %r8
	ENABLE
	pushfq
	popq %rax
	movq %rax, (%r8)
	DISABLE
	ret

/* void seq_irq(u64 debugctl): an interrupt already pending in the local
 * APIC is taken after STI's shadow, i.e. just before i_after */
G seq_irq
	ENABLE
	sti
	nop
G i_after
	cli
	DISABLE
	ret

/* its handler (vector 0xe1): EOI through xAPIC or x2APIC, return */
G irq_handler
	pushq %rax
	pushq %rcx
	pushq %rdx
	movl $0x1b, %ecx
	rdmsr
	testl $0x400, %eax
G i_jnz
	jnz i_x2
	andl $0xfffff000, %eax
	movl $0, 0xb0(%rax)
G i_jmp
	jmp i_done
G i_x2
	movl $0x80b, %ecx
	xorl %eax, %eax
	xorl %edx, %edx
	wrmsr
G i_done
	popq %rdx
	popq %rcx
	popq %rax
G i_iret
	iretq

/* void seq_syscall(u64 debugctl): SYSCALL at CPL 0 into sys_handler (the
 * test points LSTAR there), which returns with the flags SYSCALL saved and
 * a jump to RCX; SS is restored after (SYSCALL loads it from STAR). */
G seq_syscall
	pushq %r11
	movw %ss, %r9w
	ENABLE
G s_sys
	syscall
G s_after
	DISABLE
	movw %r9w, %ss
	popq %r11
	ret
G sys_handler
	pushq %r11
	popfq
G s_jmp
	jmp *%rcx

/* void seq_guest_tf(u64 debugctl): the guest single-steps itself while
 * BTS traces. Each step's #DB goes to db_handler (vector 1), which reads
 * DR6 (BS must be set), clears it, counts and IRETs; the POPF that clears
 * TF still traps (TF was set at its start). */
G seq_guest_tf
	ENABLE
	pushfq
	orq $0x100, (%rsp)
	popfq			/* TF was clear at its start: no trap */
G g_1
	nop
G g_2
	jmp g_3
	ud2
G g_3
	nop
G g_4
	pushfq
G g_5
	andq $~0x100, (%rsp)
G g_6
	popfq
G g_7
	DISABLE
	ret
G db_handler
	pushq %rax
	movq %dr6, %rax
	andq %rax, db_dr6_and(%rip)	/* every entry saw BS? */
	xorl %eax, %eax
	movq %rax, %dr6
	lock incq db_count(%rip)
	popq %rax
G g_iret
	iretq

/* void seq_guest_bp(u64 debugctl): b_hit is the guest's own DR0
 * instruction breakpoint; bp_db_handler ORs DR6 into bp_dr6 and sets RF
 * in the frame so the instruction runs when it returns (SDM Vol. 3
 * 18.3.1.1). */
G seq_guest_bp
	ENABLE
	nop
G b_hit
	nop
	DISABLE
	ret
G bp_db_handler
	pushq %rax
	movq %dr6, %rax
	orq %rax, bp_dr6(%rip)
	xorl %eax, %eax
	movq %rax, %dr6
	orq $0x10000, 24(%rsp)	/* RF in the pushed RFLAGS */
	lock incq db_count(%rip)
	popq %rax
G b_iret
	iretq

/* void seq_guest_bp23(u64 debugctl): d_hit2 and d_hit3 are the guest's
 * own DR2 and DR3 instruction breakpoints (the registers the engine
 * holds), taken by bp_db_handler too. */
G seq_guest_bp23
	ENABLE
	nop
G d_hit2
	nop
G d_jmp
	jmp d_t
	ud2
G d_t
	nop
G d_hit3
	nop
	DISABLE
	ret

/* void seq_user(u64 debugctl, u64 user_rsp, u64 user_cs, u64 user_ss):
 * IRETQ to ring 3 at u_start, a few branches there, then INT 0x82 (a DPL-3
 * gate to u_gate) back to ring 0, which turns BTS off and returns to the
 * caller on the stack it left. */
	/* from the C caller (debugctl, user_rsp, user_cs, user_ss): its
	 * registers and RSP kept for USER_RETURN, BTS on, IRETQ (at the
	 * label \iret) to \start in ring 3 */
	.macro TO_RING3 iret, start
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, u_saved_rsp(%rip)
	movq %rdx, %r9		/* ENABLE clobbers RCX and RDX */
	movq %rcx, %r10
	ENABLE
	pushq %r10		/* the frame for IRETQ: SS, RSP, RFLAGS, CS, RIP */
	pushq %rsi
	pushq $2
	pushq %r9
	leaq \start(%rip), %rax
	pushq %rax
G \iret
	iretq
	.endm
	/* in ring 0 again: BTS off, back to TO_RING3's caller */
	.macro USER_RETURN
	DISABLE
	movq u_saved_rsp(%rip), %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret
	.endm

G seq_user
	TO_RING3 u_iret, u_start
G u_start
G u_jmp
	jmp u_t1
	ud2
G u_t1
G u_call
	call u_func
G u_after_call
G u_sys
	syscall			/* to u_sysret (LSTAR), which returns here */
G u_after_sys
	movq %rsp, %rcx		/* SYSEXIT's RSP and RIP */
	leaq u_after_sysenter(%rip), %rdx
G u_sysenter
	sysenter		/* Intel: to u_sysexit; AMD: #UD in long mode */
G u_after_sysenter
G u_int
	int $0x82
	ud2
G u_func
G u_ret
	ret
G u_sysret
	sysretq			/* RCX, R11: back to u_after_sys in ring 3 */
G u_sysexit
	sysexitq		/* RDX, RCX: back to u_after_sysenter in ring 3 */
G u_gate
	USER_RETURN

/* void seq_jchain(u64 debugctl): direct JMPs and a CALL the fast engine
 * goes through without stopping (a chain of blocks), a RET, a taken JZ.
 * k_hit is in the chain's third block (the guest's DR0 breakpoint there
 * in one run). */
G seq_jchain
	ENABLE
	xorl %eax, %eax
G k_j1
	jmp k_t1
	ud2
G k_t1
	nop
G k_c1
	call k_f
G k_after
	testl %eax, %eax
G k_jz
	jz k_t3			/* taken */
	ud2
G k_t3
	DISABLE
	ret
G k_f
	nop
G k_hit
	nop
G k_j2
	jmp k_t2
	ud2
G k_t2
G k_ret
	ret

/* void seq_jcc_skip(u64 debugctl): forward Jcc over a few instructions
 * (both successors end at one stop): m_j1 taken and m_j3 not, over
 * instructions that keep the flags; m_j2 not taken, over a NOP and then
 * DISABLE's XOR, which changes them. */
G seq_jcc_skip
	ENABLE
	xorl %eax, %eax
G m_j1
	jz m_t1			/* taken */
	nop
G m_t1
	leaq m_t2(%rip), %rcx
	pushq %rcx
G m_r1
	ret
G m_t2
	testl %eax, %eax
G m_j3
	jnz m_t3		/* not taken */
G m_f3
	movl $2, %ecx
G m_t3
	leaq m_t4(%rip), %rcx
	pushq %rcx
G m_r2
	ret
G m_t4
	testl %eax, %eax
G m_j2
	jnz m_t5		/* not taken */
	nop
G m_t5
	DISABLE
	ret

/* void seq_jchain_irq(u64 debugctl): an interrupt already pending in the
 * local APIC comes after STI's shadow, at q_x, inside a chain: before the
 * JMP there has run, after the one before it. */
G seq_jchain_irq
	ENABLE
G q_j1
	jmp q_t1
	ud2
G q_t1
	sti
	nop
G q_x
	jmp q_t2
	ud2
G q_t2
G q_c
	call q_f
G q_after
	cli
	DISABLE
	ret
G q_f
G q_ret
	ret

/* void seq_user_pf(u64 debugctl, u64 user_rsp, u64 user_cs, u64 user_ss,
 * u64 bad_rsp): in ring 3, a chain whose CALL pushes to a page that is
 * not mapped: the #PF (to p_gate in ring 0, on the TSS's RSP0) comes at
 * the CALL, which has not run; BTS off there and back to the caller on
 * the stack it left. */
G seq_user_pf
	TO_RING3 p_iret, p_start
G p_start
	movq %r8, %rsp		/* not mapped */
G p_jmp
	jmp p_t1
	ud2
G p_t1
G p_call
	call p_func		/* #PF on the push */
	ud2
G p_func
	ret
G p_gate
	USER_RETURN

/* void seq_far(u64 debugctl, u64 cs): far JMP, CALL and RET between two
 * 64-bit code selectors, a 32-bit compatibility-mode segment (branches,
 * INTO taken and not) and a 16-bit one; t_bts fills the far pointers and
 * the 16-bit segment's base (c16_base) in its GDT. Back to `cs` at the end. */
G seq_far
	pushq %rbx		/* the 16-bit code uses BX */
	movq %rsi, %r8
	movw %ss, %r9w		/* a null SS or DS (ring 3 leaves them so) */
	movw %ds, %r10w		/* faults in compatibility mode: use 0x88 */
	movw %es, %r11w
	movl $0x88, %eax
	movw %ax, %ss
	movw %ax, %ds
	movw %ax, %es
	ENABLE
G f_ljmp
	ljmpl *far_jmp(%rip)	/* m16:32: to f_t1 in the second 64-bit selector */
	ud2
G f_t1
G f_lcall
	lcalll *far_call32(%rip) /* to c32_entry, 32-bit code */
G f_after_call
	pushq %r8
	leaq f_back(%rip), %rax
	pushq %rax
G f_lret
	lretq			/* back to the caller's selector */
	ud2
G f_back
	DISABLE
	movw %si, pushf16_image(%rip)
	movw %r9w, %ss
	movw %r10w, %ds
	movw %r11w, %es
	popq %rbx
	ret

	.code32
G c32_entry
	jmp c32_t1
	ud2
G c32_t1
	xorl %eax, %eax
G c32_jz
	jz c32_t2
	ud2
G c32_t2
G c32_call
	call c32_func
G c32_after_call
	movl $0x7fffffff, %eax
	addl $1, %eax		/* OF set */
G c32_into
	into			/* taken: to of_handler (vector 4) */
G c32_after_into
	xorl %eax, %eax		/* OF clear */
	into			/* not taken: no record */
G c32_lcall
	lcall $0x78, $(c16_entry - c16_base)
G c32_after16
G c32_lret
	lret			/* to f_after_call, 64-bit */
G c32_func
G c32_ret
	ret

	.code16
G c16_base
	ud2
G c16_entry
	jmp c16_t1
	ud2
G c16_t1
G c16_call
	call c16_func
G c16_after_call
	/* PUSHF on a stack whose segment base is not 0: the image the
	 * engine corrects (its own TF hidden) is at SS.base + SP, not at
	 * RSP. SEL_STACK16 (0xb0, t_bts.c) has its base at stack16. */
	movw %ss, %bx
	movl %esp, %edi
	movw $0xb0, %cx
	movw %cx, %ss
	nop			/* MOV SS holds the single-step trap one instruction */
	movl $0x100, %esp
	pushfw
	popw %si		/* seq_far stores it in pushf16_image */
	movw %bx, %ss
	nop
	movl %edi, %esp
	xorw %ax, %ax
	jnz c16_entry		/* not taken */
G c16_lret
	lretl			/* 32-bit far return to c32_after16 */
G c16_func
G c16_ret
	ret
	.code64

G of_handler
G of_iret
	iretq

/* void seq_int1(u64 debugctl): INT1 (ICEBP, F1) delivers #DB through
 * vector 1 like INT n; QEMU 7.2's TCG raises #UD for it instead, which
 * x_ud_handler (vector 6) skips */
G seq_int1
	ENABLE
G x_int1
	.byte 0xf1
G x_after_int1
	DISABLE
	ret
G int1_handler
	lock incq int1_count(%rip)
G x_int1_iret
	iretq
G x_ud_handler
	lock incq int1_ud_count(%rip)
	incq (%rsp)
G x_ud_iret
	iretq

/* void seq_tf_cpuid(u64 debugctl): the guest single-steps over a CPUID, which the
 * hypervisor emulates; btf_db_handler logs the traps: after the XOR, after
 * the CPUID (the one an intercept can lose), after the NOP, ... */
G seq_tf_cpuid
	pushq %rbx
	ENABLE			/* DEBUGCTL from RDI: 0 untraced, or TR|BTS */
	pushfq
	orq $0x100, (%rsp)
	popfq
	xorl %eax, %eax
G tf_c0
	cpuid
G tf_c1
	nop
G tf_c2
	pushfq
G tf_c3
	andq $~0x100, (%rsp)
G tf_c4
	popfq
G tf_c5
	DISABLE
	popq %rbx
	ret

/* void seq_btf(u64 debugctl): the guest single-steps on branches
 * (DEBUGCTL.BTF and TF): btf_db_handler (vector 1) logs each #DB's return
 * RIP in btf_log and ANDs DR6 into db_dr6_and; a #DB only after the jmp,
 * the call and the ret (not after the nop, the not-taken jnz, the popf) */
G seq_btf
	ENABLE
	pushfq
	orq $0x100, (%rsp)
	popfq			/* TF from the next instruction on */
	nop
G t_jmp
	jmp t_1
	ud2
G t_1
	xorl %eax, %eax
	jnz t_1			/* not taken */
G t_call
	call t_func
G t_after
	pushfq
	andq $~0x100, (%rsp)
	popfq
	DISABLE
	ret
G t_func
	nop
G t_ret
	ret
G btf_db_handler
	pushq %rax
	pushq %rcx
	movq %dr6, %rax
	andq %rax, db_dr6_and(%rip)
	xorl %eax, %eax
	movq %rax, %dr6
	movq btf_n(%rip), %rcx
	andl $7, %ecx
	leaq btf_log(%rip), %rax
	leaq (%rax,%rcx,8), %rcx
	movq 16(%rsp), %rax	/* the frame's RIP */
	movq %rax, (%rcx)
	incq btf_n(%rip)
	popq %rcx
	popq %rax
G btf_iret
	iretq

/* void seq_nmi(u64 debugctl, u64 icr, u64 value): the guest sends itself
 * an NMI through its local APIC's ICR (icr: the xAPIC ICR's address, 0 for
 * x2APIC's MSR) and takes it before the jmp at nm_x / nm_x2 (the write
 * ends QEMU's translation block there: a stop or the MSR write) */
G seq_nmi
	movq %rsi, %r8
	movq %rdx, %r9
	testq %r8, %r8
	jz 1f
	ENABLE
	movl %r9d, (%r8)
G nm_x
	jmp nm_done
1:	ENABLE
	movl $0x830, %ecx
	movl %r9d, %eax
	movq %r9, %rdx
	shrq $32, %rdx
	wrmsr
G nm_x2
	jmp nm_done
	ud2
G nm_done
	DISABLE
	ret
G nmi_handler
	lock incq nmi_count(%rip)
G nm_iret
	iretq

/* void self_iret(void): an IRET to the next instruction (unblocks NMIs) */
G self_iret
	movl %ss, %eax
	pushq %rax
	pushq %rsp
	addq $8, (%rsp)
	pushfq
	movl %cs, %eax
	pushq %rax
	leaq 1f(%rip), %rax
	pushq %rax
	iretq
1:	ret

/* void seq_df(u64 debugctl, u64 bad): a non-canonical access raises #GP,
 * whose gate t_bts marks not present: the #NP that delivering it raises
 * makes a #DF (SDM Vol. 3 Table 6-5). df_handler (and np_handler, were
 * #NP delivered instead) skip the 3-byte access. */
G seq_df
	movq %rsi, %r8
	ENABLE
G x_gp
	movq (%r8), %rax
G x_after_gp
	DISABLE
	ret
G df_handler
	addq $8, %rsp		/* the error code (0) */
	addq $3, (%rsp)
	lock incq df_count(%rip)
G df_iret
	iretq
G np_handler
	addq $8, %rsp
	addq $3, (%rsp)
	lock incq np_count(%rip)
	iretq

	.data
	.balign 64
G bts_scratch
	.fill 128, 1, 0x11
G pushf16_image
	.quad 0
G db_count
	.quad 0
G db_dr6_and
	.quad -1
G bp_dr6
	.quad 0
G u_saved_rsp
	.quad 0
G int1_count
	.quad 0
G int1_ud_count
	.quad 0
G nmi_count
	.quad 0
G df_count
	.quad 0
G np_count
	.quad 0
G btf_n
	.quad 0
G btf_log
	.fill 8, 8, 0
G far_jmp			/* m16:32 far pointers, filled by t_bts */
	.long 0
	.word 0
G far_call32
	.long 0
	.word 0
	.section .note.GNU-stack,"",@progbits
