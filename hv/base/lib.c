/* Freestanding memory and string helpers (root mode, any context). */
#include "base/lib.h"

/* REP STOSB/MOVSB: one instruction for any length and alignment (fast
 * strings on hardware; one helper loop under TCG, where a byte loop costs
 * each iteration's instructions). The direction flag is clear in root
 * mode (the run loops and handlers never set it). */
void *memset(void *d, int c, size_t n)
{
	void *p = d;
	asm volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(c) : "memory");
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	void *dp = d;
	asm volatile("rep movsb" : "+D"(dp), "+S"(s), "+c"(n) : : "memory");
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	u8 *dp = d;
	const u8 *sp = s;
	if (dp < sp)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const u8 *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

u64 hv_fnv1a(const void *p, size_t n)
{
	const u8 *b = p;
	u64 h = 0xcbf29ce484222325ull;
	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ull;
	}
	return h;
}

