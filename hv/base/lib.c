/* Freestanding memory and string helpers (root mode, any context). */
#include "base/lib.h"

/* REP STOSQ/MOVSQ for the whole words, then REP STOSB/MOVSB for the rest: one instruction
 * each for any length and alignment (fast strings on hardware). Under TCG every iteration is
 * a step of its own, so words take an eighth of a byte loop's (a burst's TLB, 512 bytes, is
 * cleared at each INVLPG the interpreter runs). The direction flag is clear in root mode (the
 * run loops and handlers never set it). */
void *memset(void *d, int c, size_t n)
{
	void *p = d;
	size_t q = n >> 3, b = n & 7;
	u64 x = (u8)c * 0x0101010101010101ull;
	asm volatile("rep stosq" : "+D"(p), "+c"(q) : "a"(x) : "memory");
	asm volatile("rep stosb" : "+D"(p), "+c"(b) : "a"(x) : "memory");
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	void *dp = d;
	size_t q = n >> 3, b = n & 7;
	asm volatile("rep movsq" : "+D"(dp), "+S"(s), "+c"(q) : : "memory");
	asm volatile("rep movsb" : "+D"(dp), "+S"(s), "+c"(b) : : "memory");
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

