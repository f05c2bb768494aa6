/*
 * LD_PRELOAD for the OUTER QEMU of the nested tier only (QEMU 7.2 TCG, and
 * 10.0 from bookworm-backports): works around an assertion that aborts it
 * when KVM's nested SVM runs OVMF.
 *
 * The fault: helper_write_crN (target/i386/tcg/sysemu/misc_helper.c; in
 * QEMU 10 target/i386/tcg/system/), on a MOV to CR8 by a guest that runs
 * with V_INTR_MASKING (KVM's nested VMCB) while a virtual interrupt is
 * pending, calls cpu_interrupt(cs, CPU_INTERRUPT_VIRQ) without the big
 * QEMU lock (10.0.2 takes it around cpu_set_apic_tpr only); cpu_interrupt
 * calls tcg_handle_interrupt() (accel/tcg/tcg-accel-ops.c), which fails
 * g_assert(qemu_mutex_iothread_locked()) (10: bql_locked()) and QEMU aborts:
 *   tcg_handle_interrupt: assertion failed: (qemu_mutex_iothread_locked())
 *   tcg_handle_interrupt: assertion failed: (bql_locked())       (10.0.2)
 *
 * The fix, QEMU 7.2: this library defines tcg_handle_interrupt itself. The
 * TCG module (accel-tcg-x86_64.so) takes the function's address through its
 * GOT for its ops table, so the preloaded definition is the one QEMU
 * calls; it takes the lock when the caller does not hold it and calls the
 * module's own function, found with dlsym in the already loaded module.
 *
 * The fix, QEMU 10: TCG is no module there; the binary takes
 * tcg_handle_interrupt's address PC-relative, so no preloaded definition
 * is ever called. Instead a constructor finds, in helper_write_crN's code
 * (an exported symbol), the one CALL or JMP rel32 to cpu_interrupt, and
 * points it at a trampoline within reach (mapped near the binary) that
 * jumps to locked_cpu_interrupt below: cpu_interrupt with the lock taken
 * when the caller does not hold it (bql_locked, bql_lock_impl, bql_unlock:
 * exported by the binary). No other call changes; if the code is not as
 * expected (no such branch, or more than one) it says so and QEMU runs
 * unchanged, and tests/nested/outer.sh reports the abort if it comes.
 *
 * Nothing else changes. tests/nested/outer.sh detects the abort message
 * anyway and says so if it ever comes back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct CPUState CPUState;

static void (*real_handle)(CPUState *, int);

/* the lock's functions, exported by the QEMU binary: 7.2's
 * qemu_mutex_iothread_locked, qemu_mutex_lock_iothread_impl and
 * qemu_mutex_unlock_iothread, 10's bql_locked, bql_lock_impl and bql_unlock
 * (set_lock) */
static bool (*q_locked)(void);
static void (*q_lock)(const char *, int);
static void (*q_unlock)(void);

static bool set_lock(const char *locked, const char *lock, const char *unlock)
{
	q_locked = (bool (*)(void))dlsym(RTLD_DEFAULT, locked);
	q_lock = (void (*)(const char *, int))dlsym(RTLD_DEFAULT, lock);
	q_unlock = (void (*)(void))dlsym(RTLD_DEFAULT, unlock);
	return q_locked && q_lock && q_unlock;
}

/* FN(CPU, MASK) with the big QEMU lock held: taken when the caller does
 * not hold it */
static void call_locked(void (*fn)(CPUState *, int), CPUState *cpu, int mask)
{
	if (q_locked()) {
		fn(cpu, mask);
		return;
	}
	q_lock(__FILE__, __LINE__);
	fn(cpu, mask);
	q_unlock();
}

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
	if (!real_handle || !set_lock("qemu_mutex_iothread_locked", "qemu_mutex_lock_iothread_impl",
				      "qemu_mutex_unlock_iothread")) {
		fprintf(stderr, "tcg-lock-fix: the TCG module's tcg_handle_interrupt or QEMU 7.2's lock functions not found\n");
		abort();
	}
}

/* QEMU 7.2 */
void tcg_handle_interrupt(CPUState *cpu, int mask)
{
	if (!real_handle)
		find_real();
	call_locked(real_handle, cpu, mask);
}

/* QEMU 10: the binary's cpu_interrupt, found at start-up */
static void (*q_cpu_interrupt)(CPUState *, int);

static void locked_cpu_interrupt(CPUState *cpu, int mask)
{
	call_locked(q_cpu_interrupt, cpu, mask);
}

/* a page for the trampoline within +-2 GiB of NEAR, or NULL */
static uint8_t *page_near(uintptr_t near)
{
	long pg = sysconf(_SC_PAGESIZE);
	for (uintptr_t d = 1UL << 24; d < (1UL << 31) - (1UL << 25); d += 1UL << 24) {
		uintptr_t want = (near - d) & ~(uintptr_t)(pg - 1);
		void *p = mmap((void *)want, pg, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED)
			return p;
	}
	return NULL;
}

__attribute__((constructor)) static void patch_qemu10(void)
{
	uint8_t *fn = dlsym(RTLD_DEFAULT, "helper_write_crN");
	q_cpu_interrupt = (void (*)(CPUState *, int))dlsym(RTLD_DEFAULT, "cpu_interrupt");
	if (!dlsym(RTLD_DEFAULT, "bql_locked"))
		return;	/* QEMU 7.x (or not QEMU): the tcg_handle_interrupt above */
	if (!fn || !q_cpu_interrupt || !set_lock("bql_locked", "bql_lock_impl", "bql_unlock")) {
		fprintf(stderr, "tcg-lock-fix: QEMU 10 without helper_write_crN, cpu_interrupt or the bql functions: not patched\n");
		return;
	}
	/* the CALL (e8) or JMP (e9) rel32 to cpu_interrupt in the function's
	 * first 1 KiB (10.0.2: one, its tail call "jmp cpu_interrupt") */
	uint8_t *site = NULL;
	int found = 0;
	for (int i = 0; i < 1024 - 5; i++) {
		if (fn[i] != 0xe8 && fn[i] != 0xe9)
			continue;
		int32_t rel;
		memcpy(&rel, fn + i + 1, 4);
		if (fn + i + 5 + rel == (uint8_t *)q_cpu_interrupt) {
			site = fn + i;
			found++;
		}
	}
	if (found != 1) {
		fprintf(stderr, "tcg-lock-fix: %d branches to cpu_interrupt in helper_write_crN, not 1: not patched\n", found);
		return;
	}
	uint8_t *tramp = page_near((uintptr_t)site);
	if (!tramp) {
		fprintf(stderr, "tcg-lock-fix: no page within reach of helper_write_crN: not patched\n");
		return;
	}
	/* movabs $locked_cpu_interrupt, %rax; jmp *%rax (RAX is free at a call) */
	uintptr_t target = (uintptr_t)locked_cpu_interrupt;
	tramp[0] = 0x48;
	tramp[1] = 0xb8;
	memcpy(tramp + 2, &target, 8);
	tramp[10] = 0xff;
	tramp[11] = 0xe0;
	mprotect(tramp, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC);
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *first = (uint8_t *)((uintptr_t)(site + 1) & ~(uintptr_t)(pg - 1));
	size_t len = (size_t)(site + 5 - first);
	if (mprotect(first, len, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		perror("tcg-lock-fix: mprotect");
		return;
	}
	int32_t rel = (int32_t)(tramp - (site + 5));
	memcpy(site + 1, &rel, 4);
	mprotect(first, len, PROT_READ | PROT_EXEC);
	fprintf(stderr, "tcg-lock-fix: QEMU 10: helper_write_crN's %s cpu_interrupt at %p now takes the lock\n",
		site[0] == 0xe8 ? "call of" : "jump to", (void *)site);
}
