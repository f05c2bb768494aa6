/*
 * LD_PRELOAD for the OUTER QEMU of the nested tier only (QEMU 7.2 TCG, and
 * 10.0 from bookworm-backports): works around an assertion that aborts it
 * when KVM's nested SVM runs OVMF.
 *
 * The fault: helper_write_crN (target/i386/tcg/sysemu/misc_helper.c), on a
 * MOV to CR8 by a guest that runs with V_INTR_MASKING (KVM's nested VMCB)
 * while a virtual interrupt is pending, calls cpu_interrupt() without the
 * big QEMU lock; tcg_handle_interrupt() (accel/tcg/tcg-accel-ops.c) then
 * fails g_assert(qemu_mutex_iothread_locked()) and QEMU aborts with
 *   tcg_handle_interrupt: assertion failed: (qemu_mutex_iothread_locked())
 *
 * The fix: this library defines tcg_handle_interrupt itself. The TCG
 * module (accel-tcg-x86_64.so) takes the function's address through its
 * GOT for its ops table, so the preloaded definition is the one QEMU
 * calls; it takes the lock when the caller does not hold it and calls the
 * module's own function, found with dlsym in the already loaded module.
 * Nothing else changes. tests/integration-nested.sh detects the abort
 * message anyway and says so if it ever comes back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct CPUState CPUState;

/* exported by qemu-system-x86_64 7.2 */
bool qemu_mutex_iothread_locked(void);
void qemu_mutex_lock_iothread_impl(const char *file, int line);
void qemu_mutex_unlock_iothread(void);

static void (*real_handle)(CPUState *, int);

static void find_real(void)
{
	static const char *const dirs[] = {
		"/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so",
		"/usr/lib/qemu/accel-tcg-x86_64.so",
	};
	for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !real_handle; i++) {
		void *h = dlopen(dirs[i], RTLD_NOLOAD | RTLD_LAZY);
		if (h)
			real_handle = (void (*)(CPUState *, int))dlsym(h, "tcg_handle_interrupt");
	}
	if (!real_handle) {
		fprintf(stderr, "tcg-lock-fix: the TCG module's tcg_handle_interrupt is not loaded\n");
		abort();
	}
}

void tcg_handle_interrupt(CPUState *cpu, int mask)
{
	if (!real_handle)
		find_real();
	if (qemu_mutex_iothread_locked()) {
		real_handle(cpu, mask);
		return;
	}
	qemu_mutex_lock_iothread_impl(__FILE__, __LINE__);
	real_handle(cpu, mask);
	qemu_mutex_unlock_iothread();
}
