/* Code sequences t_debug runs (single steps, shadows, breakpoints, faults
 * during event delivery) and the handlers they end up in. Every handler
 * appends to one event log: the vector, the RIP and RFLAGS of its frame,
 * its error code and, for #DB, DR6 as the handler found it. The labels
 * are the addresses t_debug expects in that log. */
#include "arch/x86/vectors.h"

#include "seq.h"

#define LOG_MAX	32
#define TF	0x100

	.data
	.balign 8
G ev_n
	.quad 0
G ev_vec
	.fill LOG_MAX, 8, 0
G ev_rip
	.fill LOG_MAX, 8, 0
G ev_fl
	.fill LOG_MAX, 8, 0
G ev_err
	.fill LOG_MAX, 8, 0
G ev_dr6
	.fill LOG_MAX, 8, 0
/* #DB: set RF in the frame before returning (an instruction breakpoint
 * must not fire again on the same instruction) */
G db_set_rf
	.quad 0
G ss_pushf_image
	.quad 0
/* what MOV SS loads, and what a data breakpoint watches */
G ms_sel
	.word 0
	.balign 8
G dv_word
	.quad 0

	.text
/* LOG vec, frame: appends an event; `frame` is where the interrupted
 * RIP lies on the stack after the handler's three pushes (RAX, RBX,
 * RCX), an error code below it when there is one. */
	.macro LOG vec, frame
	pushq %rax
	pushq %rbx
	pushq %rcx
	movq ev_n(%rip), %rbx
	cmpq $LOG_MAX, %rbx
	jae 9f
	leaq ev_vec(%rip), %rax
	movq $\vec, (%rax,%rbx,8)
	movq \frame(%rsp), %rcx
	leaq ev_rip(%rip), %rax
	movq %rcx, (%rax,%rbx,8)
	movq \frame+16(%rsp), %rcx
	leaq ev_fl(%rip), %rax
	movq %rcx, (%rax,%rbx,8)
	.if \frame == 32
	movq 24(%rsp), %rcx
	leaq ev_err(%rip), %rax
	movq %rcx, (%rax,%rbx,8)
	.endif
	.if \vec == X86_DB
	movq %dr6, %rcx
	leaq ev_dr6(%rip), %rax
	movq %rcx, (%rax,%rbx,8)
	.endif
9:	incq ev_n(%rip)
	.endm

	.macro UNLOG
	popq %rcx
	popq %rbx
	popq %rax
	.endm

/* #DB: logged; DR6 cleared so that the next one shows only its own
 * causes; after 64 the guest's TF and breakpoints go (nothing may run
 * away) */
G dbg_db_handler
	LOG X86_DB, 24
	xorl %ecx, %ecx
	movq %rcx, %dr6
	cmpq $0, db_set_rf(%rip)
	je 1f
	orq $0x10000, 40(%rsp)
1:	cmpq $64, ev_n(%rip)
	jb 2f
	andq $~TF, 40(%rsp)
	movl $0x400, %ecx
	movq %rcx, %dr7
2:	UNLOG
	iretq

/* the self-IPI (vector 0xe1): logged; t_debug sends the EOI */
G dbg_irq_handler
	LOG 0xe1, 24
	UNLOG
	iretq

/* #NP: logged, the faulting INT n or UD2 (2 bytes) skipped */
G dbg_np_handler
	LOG X86_NP, 32
	addq $2, 32(%rsp)
	UNLOG
	addq $8, %rsp
	iretq

/* #DF: logged; the saved RIP is undefined (SDM Vol. 3 6.15 "Interrupt
 * 8"), so it returns to df_after, the stack being as it was at the INT */
G dbg_df_handler
	LOG X86_DF, 32
	leaq df_after(%rip), %rax
	movq %rax, 32(%rsp)
	UNLOG
	addq $8, %rsp
	iretq

	.macro TF_ON
	pushfq
	orq $TF, (%rsp)
	popfq
	.endm

/* void seq_step(void): TF over ordinary instructions and those a
 * hypervisor intercepts (CPUID, RDMSR/WRMSR of EFER, port I/O, MOV from
 * DR7), PUSHF (its image shows TF) and a POPF that clears TF (it still
 * traps). A trap after each, at ss_1 ... ss_16. */
G seq_step
	pushq %rbx
	TF_ON
	nop
G ss_1
	xorl %eax, %eax
G ss_2
	cpuid
G ss_3
	movl $0xc0000080, %ecx
G ss_4
	rdmsr
G ss_5
	wrmsr
G ss_6
	outb %al, $0x80
G ss_7
	movw $0xcf8, %dx
G ss_8
	inl %dx, %eax
G ss_9
	movq %dr7, %rax
G ss_10
	pushfq
G ss_11
	popq %rax
G ss_12
	movq %rax, ss_pushf_image(%rip)
G ss_13
	andq $~TF, %rax
G ss_14
	pushq %rax
G ss_15
	popfq
G ss_16
	nop
	popq %rbx
	ret

/* void seq_movss(void): TF over MOV SS (from a register, then from
 * memory): its trap waits for the instruction after it (SDM Vol. 3
 * 6.8.3), one #DB then. Traps at ms_1, ms_3, ms_5, ms_6, ms_7, ms_8. */
G seq_movss
	movw %ss, %ax
	movw %ax, ms_sel(%rip)
	TF_ON
	nop
G ms_1
	movw %ax, %ss
G ms_2
	nop
G ms_3
	movw ms_sel(%rip), %ss
G ms_4
	nop
G ms_5
	pushfq
G ms_6
	andq $~TF, (%rsp)
G ms_7
	popfq
G ms_8
	ret

/* void seq_movss_data(void): a data breakpoint (t_debug sets DR0 on
 * ms_sel) hit by MOV SS: the #DB waits for the next instruction too */
G seq_movss_data
	movw %ss, %ax
	movw %ax, ms_sel(%rip)
G md_1
	movw ms_sel(%rip), %ss
G md_2
	nop
G md_3
	ret

/* void seq_data(void): a write then a read of dv_word (t_debug watches
 * it with DR0): data breakpoints are traps, after the access */
G seq_data
	movl $1, dv_word(%rip)
G dv_1
	movl dv_word(%rip), %eax
G dv_2
	nop
	ret

/* void seq_data_tf(void): the write of seq_data under TF: the single
 * step and the data breakpoint (DR0, writes) are one #DB after it, DR6
 * with BS and B0 (SDM Vol. 3 18.3.1); the read after it only steps (the
 * first trap is after the instruction that follows the POPF setting TF). Under
 * QEMU's TCG the hit reached root mode after the step's exit (svm_root_db). */
G seq_data_tf
	TF_ON
	movl $2, dv_word(%rip)
G dt_1
	movl dv_word(%rip), %eax
G dt_2
	pushfq
G dt_3
	andq $~TF, (%rsp)
G dt_4
	popfq
G dt_5
	ret

/* void seq_rf(void): instruction breakpoints on rf_1 and rf_2 (DR0/DR1
 * or DR2/DR3): each fires once, the handler setting RF */
G seq_rf
	nop
G rf_1
	nop
G rf_2
	ret

/* u64 seq_gd(void): DR7.GD, then a MOV from DR0: #DB at it with DR6.BD,
 * GD cleared; returns DR7 as read after */
G seq_gd
	movl $0x2400, %eax
	movq %rax, %dr7
G gd_1
	movq %dr0, %rax
	movq %dr7, %rax
	ret

/* void seq_sti(void), IF clear, an interrupt pending: it comes after the
 * instruction that follows STI (st_2) */
G seq_sti
	sti
G st_1
	nop
G st_2
	cli
	ret

/* void seq_popf_if(void): POPF that sets IF has no shadow: at pf_1 */
G seq_popf_if
	pushfq
	orq $0x200, (%rsp)
	popfq
G pf_1
	nop
	cli
	ret

/* void seq_sti_hlt(void): STI; HLT with an interrupt pending: HLT runs
 * and the interrupt ends it, at sh_1 */
G seq_sti_hlt
	sti
	hlt
G sh_1
	cli
	ret

/* void seq_tf_sti(void): TF, IF clear, an interrupt pending, then STI:
 * the single-step trap after STI is not held by its shadow; the
 * interrupt follows as soon as that #DB's IRET sets IF (at ts_2), and
 * stepping goes on. */
G seq_tf_sti
	TF_ON
	nop
G ts_1
	sti
G ts_2
	nop
G ts_3
	pushfq
G ts_4
	andq $~(TF | 0x200), (%rsp)
G ts_5
	popfq
G ts_6
	ret

/* void seq_int81(void) / seq_ud(void): INT 0x81 and UD2 through a gate
 * t_debug made not present */
G seq_int81
	int $0x81
	ret
G seq_ud
	ud2
	ret

/* void seq_df(void): INT 0x81, its gate and #NP's not present: #DF */
G seq_df
	int $0x81
G df_after
	ret

	.section .note.GNU-stack,"",@progbits
