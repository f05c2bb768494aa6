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
/* The hypervisor's own hardware definitions (hv/arch/x86): MSRs and their
 * bits, control registers and RFLAGS, vectors, the DS save area and the
 * BTS record, the local APIC. One definition for the hypervisor and its
 * tests. */
#include "arch/x86/apic.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/ds.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/vectors.h"

/* hv/base/fmt.c, linked into every guest test */
int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hv_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void guest_init(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, const char *name);
/* The load options hvtrace.efi passed (its config's `cmdline`), as ASCII;
 * "" when none. */
const char *guest_args(void);
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

static inline uint64_t read_cr0(void) { uint64_t v; asm volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr4(void) { uint64_t v; asm volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline uint8_t inb(uint16_t port) { uint8_t v; asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline uint64_t rdtsc(void)
{
	uint64_t v;
	asm volatile("rdtsc; shl $32, %%rdx; or %%rdx, %%rax" : "=a"(v)::"rdx");
	return v;
}

struct cpuid { uint32_t a, b, c, d; };
static inline struct cpuid cpuid(uint32_t leaf, uint32_t sub)
{
	struct cpuid r;
	asm volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(sub));
	return r;
}

/* MSRs; the _fault forms need faults_catch() and return the vector (or -1) */
uint64_t rdmsr(uint32_t msr);
void wrmsr(uint32_t msr, uint64_t v);
int rdmsr_fault(uint32_t msr, uint64_t *v);
int wrmsr_fault(uint32_t msr, uint64_t v);
/* The hypervisor's reserve, as the firmware's memory map shows it (one
 * range of HVTRACE_EFI_MEMTYPE). */
bool find_reserve(uint64_t *base, uint64_t *size);

bool under_hvtrace(void);
/* Says whether the program runs under hvtrace; without it, skips
 * everything and ends the program (report_done). */
void require_hvtrace(void);

#define A(x) ((uint64_t)(uintptr_t)(x))

/* Interrupt gates in the firmware's IDT (64-bit, DPL 0, the current CS) */
struct gate { uint16_t off0, sel; uint8_t ist, type; uint16_t off1; uint32_t off2, rsvd; } __attribute__((packed));
struct gate *idt_base(void);
void set_gate(struct gate *g, void *handler);
/* Points vector `vec` at `handler` and returns the gate it replaced, for
 * gate_restore() (the kvm-unit-tests handle_exception() idea). */
struct gate handle_exception(uint8_t vec, void *handler);
void gate_restore(uint8_t vec, struct gate old);
/* Ring 3 (t_bts, t_pmu): a GDT of our own, the firmware's entries first,
 * then user data and 64-bit code at DPL 3 and a TSS whose RSP0 is
 * ring0_stack's top (an interrupt from ring 3 lands there); the caller may
 * fill entries GDT_FIRST_FREE to GDT_ENTRIES - 1 between ring3_gdt() and
 * ring3_gdt_load(). ring3_gdt() returns NULL when the firmware's GDT is
 * larger than the 9 entries it leaves room for. make_user() sets U/S on
 * every paging-structure entry mapping `va`; ring3_stack is user-mapped by
 * ring3_gdt_load(). */
#define SEL_UDATA	0x48
#define SEL_UCODE	0x50
#define SEL_TSS		0x58
#define GDT_FIRST_FREE	13
#define GDT_ENTRIES	23
extern uint8_t ring0_stack[8192], ring3_stack[8192];
uint64_t *ring3_gdt(void);
void ring3_gdt_load(void);
void make_user(uint64_t va);

/* SYSCALL at CPL 0 into `handler` (t_bts, t_gdb): EFER.SCE, STAR's
 * SYSCALL CS our own (SYSCALL loads SS with CS + 8: the caller's code
 * puts its SS back), LSTAR, SFMASK = fmask (0x700: TF, IF and DF, as
 * Linux); returns the MSRs of before for syscall_restore() */
struct syscall_msrs { uint64_t efer, star, lstar, fmask; };
struct syscall_msrs syscall_setup(const void *handler, uint64_t fmask);
void syscall_restore(struct syscall_msrs old);

/* CLI, returning the RFLAGS to give irq_restore() */
uint64_t irq_save(void);
void irq_restore(uint64_t rflags);

/* pmi.S: the PMI handler (pmi_handler, for vector PMI_VECTOR) and its count */
#define PMI_VECTOR 0xe0
/* IA32_DEBUGCTL with BTS on (TR and BTS) */
#define TRACE (DEBUGCTL_TR | DEBUGCTL_BTS)
extern volatile uint64_t pmi_count __attribute__((visibility("hidden")));
/* The local APIC's LVT performance counter entry: the x2APIC MSR in
 * x2APIC mode, otherwise at the xAPIC's reset address (as pmi.S's EOI:
 * never where IA32_APIC_BASE says, which t_hostile moves) */
/* The local APIC: in x2APIC mode (IA32_APIC_BASE.EXTD); an xAPIC register
 * at the base IA32_APIC_BASE names now */
bool x2apic_mode(void);
/* An interrupt handler's EOI, in asm (t_fidel, t_bts): to the xAPIC register whose address the
 * 64-bit variable `addr` holds, or when that is 0 to the x2APIC's EOI MSR. Clobbers RAX, RCX
 * and RDX (the handler saves them) and the local labels 1 and 2. */
#define ASM_EOI(addr)                                   \
	"	movq " addr "(%rip), %rax\n"              \
	"	testq %rax, %rax\n"                       \
	"	jz 1f\n"                                  \
	"	movl $0, (%rax)\n"                        \
	"	jmp 2f\n"                                 \
	"1:	movl $0x80b, %ecx\n" /* x2APIC EOI */    \
	"	xorl %eax, %eax\n"                        \
	"	xorl %edx, %edx\n"                        \
	"	wrmsr\n"                                  \
	"2:\n"
volatile uint32_t *xapic_reg(uint32_t off);
uint32_t lvtpc_read(void);
void lvtpc_write(uint32_t lvt);
/* The vendor CPUID leaf 0 names is AMD or Hygon: the hardware's rules
 * that differ by vendor, and the hypercall instruction, follow it (the
 * backend is chosen by what the processor has: hv_backend()) */
bool cpu_is_amd(void);
/* The backend running (the status hypercall's), enum hvtrace_backend */
uint32_t hv_backend(void);
/* VMMCALL on AMD and Hygon, VMCALL on any other vendor, whichever backend
 * runs (docs/hypercalls.md); returns RAX and updates b, c. */
int64_t hypercall(uint64_t nr, uint64_t *b, uint64_t *c);
/* ... and with RDX as a third argument */
int64_t hypercall3(uint64_t nr, uint64_t *b, uint64_t *c, uint64_t *d);

#endif
