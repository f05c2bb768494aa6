/* Freestanding replacements for the few libc functions the hypervisor
 * needs; the compiler may also emit calls to memcpy/memset itself. */
#ifndef HV_BASE_LIB_H
#define HV_BASE_LIB_H

#include <stdarg.h>
#include "base/types.h"

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hv_snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);

/* FNV-1a, 64-bit: the image integrity checksum */
u64 hv_fnv1a(const void *p, size_t n);

#endif
