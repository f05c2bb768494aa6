/* Freestanding replacements for the few libc functions the hypervisor
 * needs; the compiler may also emit calls to memcpy/memset itself. */
#ifndef HV_BASE_LIB_H
#define HV_BASE_LIB_H

#include <stdarg.h>
#include "arch/x86/types.h"

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hv_snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);

/* FNV-1a, 64-bit: the image integrity checksum */
u64 hv_fnv1a(const void *p, size_t n);

/* A test-and-set lock for the few structures every processor shares (the
 * allocator, the log, the PCI configuration ports); never held across a
 * guest entry. The record path takes none. */
struct spinlock {
	volatile u32 held;
};
static inline bool spin_trylock(struct spinlock *l)
{
	return !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}
static inline void spin_lock(struct spinlock *l)
{
	while (!spin_trylock(l))
		while (l->held)
			__builtin_ia32_pause();
}
static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

#endif
