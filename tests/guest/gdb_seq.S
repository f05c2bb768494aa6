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
 * show there; each MOV from a debug register exits). Then the guest's
 * own breakpoint, written anew: DR7 = 0 (every register free: a debugger
 * with four breakpoints takes DR0 too), DR0 = gdb_own_bp, DR7 =
 * gdb_own_dr7 (L0, an instruction breakpoint: DR0 the guest's again),
 * both read back (gdb_dr_bad counts a value not as written); DR1 and
 * DR2, which the guest's DR7 leaves to the debugger, written with the
 * turn's number and its complement and read back (gdb_dr12_bad counts a
 * value not as written); gdb_own_bp's instruction counts the turns that
 * reached it (gdb_own_turns), gdb_db_handler the #DBs (gdb_own_hits).
 * And the code the debugger puts its breakpoints on, read as data: the
 * first 8 bytes at gdb_loop_top and gdb_loop_mid against their copies
 * taken before the debugger came (gdb_top_orig, gdb_mid_orig; gdb_code_bad
 * counts a difference). Returns the turns. */
	.globl gdb_loop, gdb_loop_top, gdb_loop_end, gdb_loop_mid, gdb_own_bp
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
	mov	$0x400, %eax
	mov	%rax, %dr7
	lea	gdb_own_bp(%rip), %rax
	mov	%rax, %dr0
	mov	gdb_own_dr7(%rip), %rax
	mov	%rax, %dr7
	mov	%dr0, %rax
	lea	gdb_own_bp(%rip), %rcx
	cmp	%rcx, %rax
	jne	3f
	mov	%dr7, %rax
	cmp	gdb_own_dr7(%rip), %rax
	je	4f
3:	incq	gdb_dr_bad(%rip)
4:	mov	%r12, %dr1
	mov	%r12, %rax
	not	%rax
	mov	%rax, %dr2
	mov	%dr1, %rax
	cmp	%r12, %rax
	jne	6f
	mov	%dr2, %rax
	not	%rax
	cmp	%r12, %rax
	je	7f
6:	incq	gdb_dr12_bad(%rip)
7:	mov	gdb_loop_top(%rip), %rax
	cmp	gdb_top_orig(%rip), %rax
	jne	5f
	mov	gdb_loop_mid(%rip), %rax
	cmp	gdb_mid_orig(%rip), %rax
	je	gdb_own_bp
5:	incq	gdb_code_bad(%rip)
gdb_own_bp:
	incq	gdb_own_turns(%rip)
gdb_loop_mid:
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

/* The guest's own #DB handler: its breakpoint at gdb_own_bp counted,
 * RF set so that the instruction then runs (SDM Vol. 3 18.3.1.1) */
	.globl gdb_db_handler
gdb_db_handler:
	incq	gdb_own_hits(%rip)
	orq	$0x10000, 16(%rsp)
	iretq

/* void gdb_chain(void): calls for the debugger's branch history
 * (`record btrace` live, svm-gdb-live): tracing on (gdb_trace(1): the
 * trace_ctl start hypercall), gdb_chain_a -> gdb_chain_b -> gdb_chain_c,
 * which turns tracing off (gdb_trace(2): stop) and then reaches
 * gdb_chain_bp, where the debugger's breakpoint waits (it is armed only
 * while the vCPU does not trace). In assembly so that no compiler
 * inlines or turns a call into a jump. Each function keeps the stack
 * 16-byte aligned at its calls (SysV ABI). */
	.globl gdb_chain, gdb_chain_a, gdb_chain_b, gdb_chain_c, gdb_chain_bp
gdb_chain:
	push	%rbx
	mov	$1, %edi
	call	gdb_trace
	mov	%rax, gdb_chain_start_rc(%rip)
	call	gdb_chain_a
	pop	%rbx
	ret
gdb_chain_a:
	push	%rbx
	call	gdb_chain_b
	pop	%rbx
	ret
gdb_chain_b:
	push	%rbx
	call	gdb_chain_c
	pop	%rbx
	ret
gdb_chain_c:
	push	%rbx
	mov	$2, %edi
	call	gdb_trace
	mov	%rax, gdb_chain_stop_rc(%rip)
gdb_chain_bp:
	incq	gdb_chain_done(%rip)
	pop	%rbx
	ret

/* void gdb_twatch(void): watched accesses on a vCPU that traces (svm-gdb-live-traced-watch):
 * tracing on (gdb_trace(1)), then a store to gdb_tw_w, a read of gdb_tw_r, a read of gdb_tw_a
 * and an increment of gdb_tw_p, each after a short loop (its branches end the engines'
 * planned blocks: engine = interp interprets from there, the access in its burst), tracing
 * off (gdb_trace(2)). */
#define TW_SPIN mov $3, %ecx; 1: dec %ecx; jnz 1b
	.globl gdb_twatch, gdb_tw_w_done, gdb_tw_r_done, gdb_tw_a_done, gdb_tw_p_done
gdb_twatch:
	push	%rbx
	mov	$1, %edi
	call	gdb_trace
	mov	%rax, gdb_tw_start_rc(%rip)
	TW_SPIN
	movq	$0x11, gdb_tw_w(%rip)
gdb_tw_w_done:
	TW_SPIN
	mov	gdb_tw_r(%rip), %rax
gdb_tw_r_done:
	TW_SPIN
	mov	gdb_tw_a(%rip), %rax
gdb_tw_a_done:
	TW_SPIN
	incq	gdb_tw_p(%rip)
gdb_tw_p_done:
	TW_SPIN
	mov	$2, %edi
	call	gdb_trace
	mov	%rax, gdb_tw_stop_rc(%rip)
	pop	%rbx
	ret

/* The fault phase (t_gdb's fault_phase, run once before the debugger
 * comes and once while it holds a breakpoint and a watchpoint at the
 * addresses): gdb_fault_fetch(addr) jumps to addr, a page that is not
 * present; gdb_fault_store(addr) stores to one (a 3-byte MOV). Each
 * faults; gdb_pf_handler records what the processor pushed and what CR2
 * says (gdb_pf: count, error code, CR2, RIP, CS, RFLAGS) and returns past
 * the access: a fetch (a jump there) to gdb_fault_fetched, a store to the
 * next instruction. gdb_fault_done is where the debugger's last
 * breakpoint waits. */
	.globl gdb_fault_fetch, gdb_fault_store, gdb_fault_store_insn, gdb_fault_done, gdb_pf_handler
gdb_fault_fetch:
	movq	$0, gdb_pf_skip(%rip)
	jmp	*%rdi
gdb_fault_fetched:
	ret
gdb_fault_store:
	movq	$3, gdb_pf_skip(%rip)
gdb_fault_store_insn:
	mov	%rsi, (%rdi)
	ret
gdb_fault_done:
	incq	gdb_fault_done_n(%rip)
	ret

/* An INT3 of the guest's own (its #BP handler, gdb_bp_handler, records
 * the frame as gdb_pf_handler does and returns to gdb_fault_fetched) */
	.globl gdb_fault_int3, gdb_int3_insn, gdb_bp_handler
gdb_fault_int3:
	movq	$0, gdb_pf_skip(%rip)
gdb_int3_insn:
	int3
	ret
gdb_bp_handler:
	push	$0	/* in the place of #PF's error code */
	jmp	gdb_pf_handler

/* uint64_t gdb_pushf(void): RFLAGS as PUSHF stores them */
	.globl gdb_pushf
gdb_pushf:
	pushfq
	pop	%rax
	ret

/* uint64_t gdb_syscall(void): a SYSCALL at CPL 0 into gdb_sys_handler
 * (LSTAR, syscall_setup), which keeps R11, the RFLAGS SYSCALL saved,
 * in gdb_sys_r11, restores them and jumps back to RCX; SS, which
 * SYSCALL loaded from STAR, is put back. Returns that R11. The debugger's
 * breakpoint is at gdb_syscall, which it steps from onto the SYSCALL and
 * through it into the handler, not yet run. */
	.globl gdb_syscall, gdb_syscall_insn, gdb_sys_handler
gdb_syscall:
	movw	%ss, %r9w
gdb_syscall_insn:
	syscall
	movw	%r9w, %ss
	mov	gdb_sys_r11(%rip), %rax
	ret
gdb_sys_handler:
	mov	%r11, gdb_sys_r11(%rip)
	push	%r11
	popfq
	jmp	*%rcx

gdb_pf_handler:
	push	%rax
	incq	gdb_pf(%rip)
	mov	8(%rsp), %rax
	mov	%rax, gdb_pf+8(%rip)
	mov	%cr2, %rax
	mov	%rax, gdb_pf+16(%rip)
	mov	16(%rsp), %rax
	mov	%rax, gdb_pf+24(%rip)
	mov	24(%rsp), %rax
	mov	%rax, gdb_pf+32(%rip)
	mov	32(%rsp), %rax
	mov	%rax, gdb_pf+40(%rip)
	lea	gdb_fault_fetched(%rip), %rax
	cmpq	$0, gdb_pf_skip(%rip)
	je	1f
	mov	16(%rsp), %rax
	add	gdb_pf_skip(%rip), %rax
1:	mov	%rax, 16(%rsp)	/* the frame's RIP */
	pop	%rax
	add	$8, %rsp	/* the error code */
	iretq

/* void gdb_six(void): six instructions the debugger breaks at in a batch
 * (svm-gdb-live: more breakpoints than the four debug registers), in this
 * order: gdb_six_1 to _4 on one page, gdb_six_5 and _6 on the next, with
 * other instructions between them (a stop at each is the breakpoint's,
 * not the end of gdb's step over the one before). gdb puts its
 * breakpoints in by address, at each resume: four on gdb_six_decoy (never
 * run, below) take the debug registers, so gdb_six's six are page
 * breakpoints, four on one page and two on the other. Each counts its runs in gdb_six_n[]; the
 * 8 bytes at gdb_six_5, read as data, are compared with their copy taken
 * before the debugger came (gdb_six_orig; gdb_six_bad counts a
 * difference). Alone on its pages: nothing else runs there. */
	.globl gdb_six_decoy
gdb_six_decoy:	/* never run: four breakpoints below gdb_six's */
	nop
	nop
	nop
	nop
	ret
	.balign 4096
	.globl gdb_six, gdb_six_1, gdb_six_2, gdb_six_3, gdb_six_4, gdb_six_5, gdb_six_6
gdb_six:
gdb_six_1:
	incq	gdb_six_n(%rip)
	nop
gdb_six_2:
	incq	gdb_six_n+8(%rip)
	nop
gdb_six_3:
	incq	gdb_six_n+16(%rip)
	nop
gdb_six_4:
	incq	gdb_six_n+24(%rip)
	jmp	gdb_six_page2
	.balign 4096
gdb_six_page2:
	nop
	mov	gdb_six_5(%rip), %rax
	cmp	gdb_six_orig(%rip), %rax
	je	1f
	incq	gdb_six_bad(%rip)
1:	nop
gdb_six_5:
	incq	gdb_six_n+32(%rip)
	nop
	xor	%eax, %eax
gdb_six_6:
	incq	gdb_six_n+40(%rip)
	nop
	ret
	.balign 4096

/* t_gdb's pair phase (svm-gdb-live-pair): two processors reach their
 * watchpoints (or breakpoints) at once, round after round. A round: the
 * boot processor (gdb_pair_a) asks for it (gdb_pair_flag = its number) and
 * waits until the other (gdb_pair_b) acknowledges it (gdb_pair_ack); each
 * then stores the round's number into its own word once, by
 * gdb_pair_store (a function: a breakpoint there is reached by both).
 * The other's turns are each one block of QEMU's TCG (no branch but the
 * last): the acknowledgement at its start, 384 additions, the store at its
 * end (into its word in a round's first turn, else into gdb_pair_dummy):
 * the boot processor stores once it saw the acknowledgement, so when its
 * watchpoint holds the guest the other is in the middle of that turn, and
 * a debugger's kick (an NMI, taken between blocks) comes after its store:
 * it reaches its watchpoint too, running or preempted by the host. Each
 * returns its stores when gdb_pair_done is set (or the TSC passes the
 * deadline, gdb_pair_a then sets it). */
	.globl gdb_pair_a, gdb_pair_b, gdb_pair_store
	.balign 4096
/* uint64_t gdb_pair_a(volatile uint64_t *word, uint64_t deadline_tsc) */
gdb_pair_a:
	push	%rbx
	mov	%rsi, %r9
	xor	%ebx, %ebx
1:	inc	%rbx
	mov	%rbx, gdb_pair_flag(%rip)
2:	mov	gdb_pair_ack(%rip), %rax
	cmp	%rbx, %rax
	jne	2b
	mov	%rbx, %rcx
	call	gdb_pair_store
	cmpq	$0, gdb_pair_done(%rip)
	jne	3f
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	cmp	%r9, %rax
	jb	1b
	movq	$2, gdb_pair_done(%rip)
3:	mov	%rbx, %rax
	pop	%rbx
	ret
/* uint64_t gdb_pair_b(volatile uint64_t *word) */
gdb_pair_b:
	xor	%r11d, %r11d
	xor	%r9d, %r9d
1:	mov	gdb_pair_flag(%rip), %rcx
	mov	%rcx, gdb_pair_ack(%rip)
	lea	gdb_pair_dummy(%rip), %rdx
	cmp	%rcx, %r11
	cmovne	%rdi, %rdx
	cmovne	%rcx, %r11
	.rept 384
	add	$1, %r8
	.endr
	mov	%rcx, (%rdx)
	cmpq	$0, gdb_pair_done(%rip)
	je	1b
	mov	%r11, %rax
	ret
/* the boot processor's store (rdi: its word, rcx: the round) */
gdb_pair_store:
	mov	%rcx, (%rdi)
	ret
/* uint64_t gdb_pair_spin(void): the pair phase traced (gdb_pair_want 2):
 * on each processor, a count to 64, then a call of gdb_pair_store (the
 * breakpoint both reach, every 200 instructions or so, which the
 * interpreting engine runs in the hypervisor: a processor held there
 * finds the other inside a burst that does not stop for the kick and
 * reaches the breakpoint too), until gdb_pair_done */
	.globl gdb_pair_spin
gdb_pair_spin:
	xor	%ecx, %ecx
1:	inc	%rcx
	test	$0x3f, %cl
	jnz	1b
	lea	gdb_pair_dummy(%rip), %rdi
	call	gdb_pair_store
	cmpq	$0, gdb_pair_done(%rip)
	je	1b
	mov	%rcx, %rax
	ret
	.balign 4096

/* void gdb_wsix(void): six words the debugger watches in a batch
 * (svm-gdb-live: more watchpoints than the four debug registers), each
 * stored once a run with a new value, in this order, a word beside them
 * on their page (gdb_wsix_other) stored between the third and the fourth:
 * gdb puts its watchpoints in by address, so the first four take the
 * debug registers and the last two page slots, which take write from
 * their page; the other word's store is stepped, no stop. */
	.globl gdb_wsix
gdb_wsix:
	incq	gdb_wsix_w(%rip)
	nop
	incq	gdb_wsix_w+8(%rip)
	nop
	incq	gdb_wsix_w+16(%rip)
	incq	gdb_wsix_other(%rip)
	incq	gdb_wsix_w+24(%rip)
	nop
	incq	gdb_wsix_w+32(%rip)
	nop
	incq	gdb_wsix_w+40(%rip)
	ret

	.data
	.balign 4096
	.globl gdb_wsix_w, gdb_wsix_other
gdb_wsix_w:	.quad 0, 0, 0, 0, 0, 0
gdb_wsix_other:	.quad 0
	.balign 4096
	.balign 8
	.globl gdb_pair_flag, gdb_pair_ack, gdb_pair_dummy
gdb_pair_flag:	.quad 0
gdb_pair_ack:	.quad 0
gdb_pair_dummy:	.quad 0
	.globl gdb_six_n, gdb_six_orig, gdb_six_bad
gdb_six_n:	.quad 0, 0, 0, 0, 0, 0
gdb_six_orig:	.quad 0
gdb_six_bad:	.quad 0
	.globl gdb_chain_start_rc, gdb_chain_stop_rc, gdb_chain_done
gdb_chain_start_rc:	.quad -1
gdb_chain_stop_rc:	.quad -1
gdb_chain_done:		.quad 0
	.globl gdb_pf, gdb_pf_skip, gdb_fault_done_n
gdb_pf:		.quad 0, 0, 0, 0, 0, 0
gdb_pf_skip:	.quad 0
gdb_sys_r11:	.quad 0
gdb_fault_done_n:	.quad 0
	.globl gdb_counter, gdb_r15, gdb_poke, gdb_bad, gdb_dr3, gdb_dr7
	.globl gdb_own_dr7, gdb_dr_bad, gdb_own_turns, gdb_own_hits, gdb_top_orig, gdb_mid_orig, gdb_code_bad
gdb_own_dr7:	.quad 0x400
gdb_dr_bad:	.quad 0
	.globl gdb_dr12_bad
gdb_dr12_bad:	.quad 0
gdb_own_turns:	.quad 0
gdb_own_hits:	.quad 0
gdb_top_orig:	.quad 0
gdb_mid_orig:	.quad 0
gdb_code_bad:	.quad 0
gdb_counter:	.quad 0
gdb_r15:	.quad 0
gdb_poke:	.quad 0
gdb_bad:	.quad 0
gdb_dr3:	.quad 0
gdb_dr7:	.quad 0
	/* gdb_twatch's words: the page slot's alone on its page, after the others (gdb puts
	 * its watchpoints in by address: the debug registers' first) */
	.balign 64
	.globl gdb_tw_start_rc, gdb_tw_stop_rc, gdb_tw_r, gdb_tw_a, gdb_tw_w, gdb_tw_p
gdb_tw_start_rc:	.quad -1
gdb_tw_stop_rc:	.quad -1
gdb_tw_r:	.quad 0x22
gdb_tw_a:	.quad 0x33
gdb_tw_w:	.quad 0
	.balign 4096
gdb_tw_p:	.quad 0
	.balign 4096

	.section .note.GNU-stack,"",@progbits
