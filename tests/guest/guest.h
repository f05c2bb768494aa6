/* Guest test programs: small EFI applications chain-loaded by hvtrace.efi
 * as its `next` stage. Each check prints one line the runner reads:
 *   GUEST-TEST: PASS: name | FAIL: name (detail) | SKIP: name (reason)
 * and the program ends with a SUMMARY line and a power-off. */
#ifndef HVTRACE_GUEST_H
#define HVTRACE_GUEST_H

#include <efi.h>
#include <efilib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* hv/core/fmt.c, linked into every guest test */
int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hv_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void guest_init(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, const char *name);
void report(bool ok, const char *name, const char *fmt_detail, ...);
void report_skip(const char *name, const char *reason);
void report_info(const char *fmt, ...);
__attribute__((noreturn)) void report_done(void);

/* Runs `insn` (an asm statement of `len` bytes) with #UD and #GP caught:
 * returns the vector raised (6 or 13) or -1 when none. */
extern volatile uint64_t fault_vector __attribute__((visibility("hidden")));
extern volatile uint64_t fault_error __attribute__((visibility("hidden")));
extern volatile uint64_t fault_skip __attribute__((visibility("hidden")));
void faults_catch(void);
void faults_release(void);
#define TRY(len, ...) ({ fault_vector = (uint64_t)-1; fault_skip = (len); \
			 asm volatile(__VA_ARGS__); (int)fault_vector; })

struct cpuid { uint32_t a, b, c, d; };
static inline struct cpuid cpuid(uint32_t leaf, uint32_t sub)
{
	struct cpuid r;
	asm volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(sub));
	return r;
}

bool under_hvtrace(void);
/* SVM on AMD and Hygon, VMX on Intel */
bool cpu_is_amd(void);
/* VMMCALL on AMD, VMCALL on Intel; returns RAX and updates b, c. */
int64_t hypercall(uint64_t nr, uint64_t *b, uint64_t *c);
/* ... and with RDX as a third argument */
int64_t hypercall3(uint64_t nr, uint64_t *b, uint64_t *c, uint64_t *d);

#endif
