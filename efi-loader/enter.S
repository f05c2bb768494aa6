/* u64 hv_enter(struct hv_boot *bp, u64 host_cr3, u64 entry, u64 stack_top)
 *
 * Runs in the loader (firmware page tables, identity-mapped code). Records
 * where the guest resumes (hv_enter_resume, with this stack) and the
 * firmware's CR3 in bp->guest, switches to the hypervisor's page tables and
 * stack and calls hv_entry(bp). On success the hypervisor makes this very
 * processor its guest and resumes it at hv_enter_resume with RAX = 0: the
 * call returns 0, now running virtualized. On failure hv_entry returns (or
 * jumps to hv_enter_fail) with RAX = a negative status and nothing changed.
 * Offsets: hv/base/boot.h. */
#include "base/boot.h"

	.text
	.globl hv_enter
	.hidden hv_enter
hv_enter:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushfq
	cli
	movq %rsp, HV_BOOT_GUEST_RSP(%rdi)
	leaq hv_enter_resume(%rip), %rax
	movq %rax, HV_BOOT_GUEST_RIP(%rdi)
	leaq hv_enter_fail(%rip), %rax
	movq %rax, HV_BOOT_GUEST_ABORT(%rdi)
	movq %cr3, %rax
	movq %rax, HV_BOOT_GUEST_CR3(%rdi)
	movq %rdi, %r12
	movq %rsi, %cr3
	movq %rcx, %rsp
	call *%rdx
	/* hv_entry returned: a failure before anything was changed */
	movslq %eax, %rax
	movq HV_BOOT_GUEST_CR3(%r12), %rdx
	movq HV_BOOT_GUEST_RSP(%r12), %rsi

/* RAX = status, RDX = CR3 to restore, RSI = RSP to restore */
	.globl hv_enter_fail
	.hidden hv_enter_fail
hv_enter_fail:
	movq %rdx, %cr3
	movq %rsi, %rsp
hv_enter_resume:
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.section .note.GNU-stack,"",@progbits
