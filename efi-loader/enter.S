/* u64 hv_enter(struct hv_boot_guest *g, u64 host_cr3, u64 entry, u64 stack_top,
 *              const struct hv_boot *bp, u64 op)
 *
 * Runs in the loader, on any processor (firmware page tables, identity-
 * mapped code). Records in *g where the guest resumes (hv_enter_resume,
 * with this stack) and the firmware's CR3, switches to the hypervisor's
 * page tables and this processor's root-mode stack and calls
 * hv_entry(bp, op). For HV_OP_ENTER the hypervisor makes this very
 * processor its guest and resumes it at hv_enter_resume with RAX = 0: the
 * call returns 0, now running virtualized. Otherwise (HV_OP_INIT,
 * HV_OP_PROBE, or a failure) hv_entry returns, or jumps to hv_enter_fail,
 * with RAX = its status. Offsets: hv/base/boot.h. */
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
	movq %r8, %rdi
	movq %r9, %rsi
	call *%rdx
	/* hv_entry returned: its status, with nothing of this processor changed */
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

/* void mp_ap_trampoline(void *arg): the EFI_AP_PROCEDURE the loader hands
 * the firmware's MP services. Called with the Microsoft ABI (RCX = arg;
 * RDI and RSI callee-saved), it calls mp_ap_procedure(arg) (System V).
 * Neither the loader nor the hypervisor touches XMM registers. */
	.globl mp_ap_trampoline
	.hidden mp_ap_trampoline
mp_ap_trampoline:
	pushq %rdi
	pushq %rsi
	subq $8, %rsp
	movq %rcx, %rdi
	call mp_ap_procedure
	addq $8, %rsp
	popq %rsi
	popq %rdi
	ret
	.section .note.GNU-stack,"",@progbits
