/* Exceptions the hypervisor takes itself, in root mode (arch/x86/exc.S
 * calls here). Each is a hypervisor bug: the frame is logged and the
 * processor stopped. The exceptions: the #GP that rdmsr_safe and
 * wrmsr_safe expect, which resumes at their fix-up, and a #DB the backend
 * recognizes as the guest's (root_db_after_exit, base/rootexc.h). */
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/vectors.h"
#include "base/log.h"
#include "base/rootexc.h"

extern const char rdmsr_safe_insn[], rdmsr_safe_fixup[], wrmsr_safe_insn[], wrmsr_safe_fixup[];

bool (*root_db_after_exit)(struct exc_frame *f);

/* Returns only after moving RIP to a fix-up, or after root_db_after_exit
 * took a #DB that belongs to the guest (exc.S). */
void exc_handler(struct exc_frame *f);
void exc_handler(struct exc_frame *f)
{
	if (f->vector == X86_DB && root_db_after_exit && root_db_after_exit(f))
		return;
	if (f->vector == X86_GP && f->rip == (u64)(uintptr_t)rdmsr_safe_insn) {
		f->rip = (u64)(uintptr_t)rdmsr_safe_fixup;
		return;
	}
	if (f->vector == X86_GP && f->rip == (u64)(uintptr_t)wrmsr_safe_insn) {
		f->rip = (u64)(uintptr_t)wrmsr_safe_fixup;
		return;
	}
	LOG_ERR("exception %lu error %lx in the hypervisor at rip %016lx rsp %016lx cr2 %016lx",
		f->vector, f->error, f->rip, f->rsp, read_cr2());
	LOG_ERR("rax %016lx rbx %016lx rcx %016lx rdx %016lx", f->rax, f->rbx, f->rcx, f->rdx);
	LOG_ERR("rsi %016lx rdi %016lx rbp %016lx r8  %016lx", f->rsi, f->rdi, f->rbp, f->r8);
	HV_PANIC("hypervisor bug");
}
