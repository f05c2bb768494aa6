/* Report and fault-catching helpers for the guest test programs. */
#include <stdarg.h>
#include <stddef.h>
#include "guest.h"
#include "hvtrace/abi.h"

extern char trap_ud[], trap_gp[];

static unsigned passed, failed, skipped;
static const char *prog;

static struct gate saved[2];

void faults_catch(void)
{
	struct gate *t = idt_base();
	saved[0] = t[6];
	saved[1] = t[13];
	set_gate(&t[6], trap_ud);
	set_gate(&t[13], trap_gp);
}

void faults_release(void)
{
	struct gate *t = idt_base();
	t[6] = saved[0];
	t[13] = saved[1];
}

static void line(const char *s)
{
	Print(L"GUEST-TEST: %a\n", s);
}

static char args[128];

const char *guest_args(void)
{
	return args;
}

/* Keeps the ASCII part of the UCS-2 load options (a cmdline is ASCII). */
static void read_args(EFI_HANDLE image)
{
	EFI_LOADED_IMAGE *li = NULL;
	if (uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol, (void **)&li) !=
		    EFI_SUCCESS || !li || !li->LoadOptions)
		return;
	const CHAR16 *o = li->LoadOptions;
	size_t n = li->LoadOptionsSize / sizeof(CHAR16), k = 0;
	for (size_t i = 0; i < n && o[i] && k + 1 < sizeof(args); i++)
		args[k++] = o[i] < 0x80 ? (char)o[i] : '?';
	args[k] = 0;
}

void guest_init(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, const char *name)
{
	InitializeLib(image, st);
	read_args(image);
	prog = name;
	char buf[96];
	hv_snprintf(buf, sizeof(buf), "START: %s", name);
	line(buf);
}

void report(bool ok, const char *name, const char *fmt, ...)
{
	char detail[160] = "", buf[256];
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		hv_vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
	}
	if (ok)
		passed++;
	else
		failed++;
	hv_snprintf(buf, sizeof(buf), "%s: %s%s%s%s", ok ? "PASS" : "FAIL", name,
		    detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
	line(buf);
}

void report_skip(const char *name, const char *reason)
{
	char buf[256];
	skipped++;
	hv_snprintf(buf, sizeof(buf), "SKIP: %s (%s)", name, reason);
	line(buf);
}

void report_info(const char *fmt, ...)
{
	char msg[200], buf[220];
	va_list ap;
	va_start(ap, fmt);
	hv_vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hv_snprintf(buf, sizeof(buf), "INFO: %s", msg);
	line(buf);
}

void report_done(void)
{
	char buf[128];
	hv_snprintf(buf, sizeof(buf), "SUMMARY: %s: %u passed, %u failed, %u skipped", prog, passed,
		    failed, skipped);
	line(buf);
	/* Bochs ends at "Shutdown" written to its port 0x8900 (nothing is
	 * there on QEMU); everywhere else the firmware powers off. */
	for (const char *p = "Shutdown"; *p; p++)
		outb(0x8900, (uint8_t)*p);
	uefi_call_wrapper(RT->ResetSystem, 4, EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	for (;;)
		asm volatile("hlt");
}

void require_hvtrace(void)
{
	bool hv = under_hvtrace();
	report_info("running %s hvtrace", hv ? "under" : "without");
	if (!hv) {
		report_skip("all", "not running under hvtrace");
		report_done();
	}
}

bool under_hvtrace(void)
{
	struct cpuid r = cpuid(1, 0);
	if (!(r.c & (1u << 31)))
		return false;
	r = cpuid(HVTRACE_CPUID_BASE, 0);
	return r.b == HVTRACE_CPUID_SIG_EBX && r.c == HVTRACE_CPUID_SIG_ECX &&
	       r.d == HVTRACE_CPUID_SIG_EDX;
}

bool cpu_is_amd(void)
{
	struct cpuid v = cpuid(0, 0);
	return (v.b == CPUID_VENDOR_AMD_EBX && v.d == CPUID_VENDOR_AMD_EDX && v.c == CPUID_VENDOR_AMD_ECX) ||
	       (v.b == CPUID_VENDOR_HYGON_EBX && v.d == CPUID_VENDOR_HYGON_EDX &&
		v.c == CPUID_VENDOR_HYGON_ECX);
}

uint32_t hv_backend(void)
{
	static struct hvtrace_status st;
	uint64_t b = (uint64_t)(uintptr_t)&st, c = sizeof(st);
	return hypercall(HVTRACE_HC_STATUS, &b, &c) == 0 ? st.backend : HVTRACE_BACKEND_NONE;
}

int64_t hypercall3(uint64_t nr, uint64_t *b, uint64_t *c, uint64_t *d)
{
	uint64_t a = nr;
	if (cpu_is_amd())
		asm volatile("vmmcall" : "+a"(a), "+b"(*b), "+c"(*c), "+d"(*d) :: "memory");
	else
		asm volatile("vmcall" : "+a"(a), "+b"(*b), "+c"(*c), "+d"(*d) :: "memory");
	return (int64_t)a;
}

int64_t hypercall(uint64_t nr, uint64_t *b, uint64_t *c)
{
	uint64_t d = 0;
	return hypercall3(nr, b, c, &d);
}

uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

int rdmsr_fault(uint32_t msr, uint64_t *v)
{
	uint32_t lo = 0, hi = 0;
	int vec = TRY(2, "rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	*v = ((uint64_t)hi << 32) | lo;
	return vec;
}

int wrmsr_fault(uint32_t msr, uint64_t v)
{
	return TRY(2, "wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

bool find_reserve(uint64_t *base, uint64_t *size)
{
	UINTN n, key, dsize;
	UINT32 dver;
	EFI_MEMORY_DESCRIPTOR *map = LibMemoryMap(&n, &key, &dsize, &dver);
	unsigned found = 0;
	for (UINTN i = 0; map && i < n; i++) {
		EFI_MEMORY_DESCRIPTOR *d = (void *)((uint8_t *)map + i * dsize);
		if (d->Type == HVTRACE_EFI_MEMTYPE) {
			*base = d->PhysicalStart;
			*size = d->NumberOfPages * 4096;
			found++;
		}
	}
	if (map)
		FreePool(map);
	return found == 1;
}

struct gate *idt_base(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) d;
	asm volatile("sidt %0" : "=m"(d));
	return (struct gate *)(uintptr_t)d.base;
}

void set_gate(struct gate *g, void *h)
{
	uint16_t cs;
	uint64_t a = A(h);
	asm volatile("mov %%cs, %0" : "=r"(cs));
	*g = (struct gate){ (uint16_t)a, cs, 0, 0x8e, (uint16_t)(a >> 16), (uint32_t)(a >> 32), 0 };
}

struct gate handle_exception(uint8_t vec, void *handler)
{
	struct gate *idt = idt_base(), old = idt[vec];
	set_gate(&idt[vec], handler);
	return old;
}

void gate_restore(uint8_t vec, struct gate old)
{
	idt_base()[vec] = old;
}

uint64_t irq_save(void)
{
	uint64_t f;
	asm volatile("pushfq; popq %0; cli" : "=r"(f)::"memory");
	return f;
}

void irq_restore(uint64_t f)
{
	if (f & (1 << 9))
		asm volatile("sti" ::: "memory");
}

struct syscall_msrs syscall_setup(const void *handler, uint64_t fmask)
{
	struct syscall_msrs old = { rdmsr(MSR_EFER), rdmsr(MSR_STAR), rdmsr(MSR_LSTAR), rdmsr(MSR_SFMASK) };
	uint16_t cs;
	asm volatile("mov %%cs, %0" : "=r"(cs));
	wrmsr(MSR_EFER, old.efer | EFER_SCE);
	wrmsr(MSR_STAR, (uint64_t)cs << 32);	/* SYSCALL's CS = ours, SS = CS + 8 */
	wrmsr(MSR_LSTAR, A(handler));
	wrmsr(MSR_SFMASK, fmask);
	return old;
}

void syscall_restore(struct syscall_msrs old)
{
	wrmsr(MSR_SFMASK, old.fmask);
	wrmsr(MSR_LSTAR, old.lstar);
	wrmsr(MSR_STAR, old.star);
	wrmsr(MSR_EFER, old.efer);
}

#define APIC_RESET_BASE	0xfee00000ull

bool x2apic_mode(void)
{
	return rdmsr(MSR_IA32_APICBASE) & APICBASE_EXTD;
}

volatile uint32_t *xapic_reg(uint32_t off)
{
	return (volatile uint32_t *)(uintptr_t)((rdmsr(MSR_IA32_APICBASE) & APICBASE_ADDR_MASK) + off);
}

uint32_t apic_reg_read(uint32_t off)
{
	return x2apic_mode() ? (uint32_t)rdmsr(X2APIC_MSR(off)) : *xapic_reg(off);
}

void apic_reg_write(uint32_t off, uint32_t v)
{
	if (x2apic_mode())
		wrmsr(X2APIC_MSR(off), v);
	else
		*xapic_reg(off) = v;
}

uint32_t lvtpc_read(void)
{
	if (x2apic_mode())
		return (uint32_t)rdmsr(X2APIC_MSR(APIC_LVTPC));
	return *(volatile uint32_t *)(uintptr_t)(APIC_RESET_BASE + APIC_LVTPC);
}

void lvtpc_write(uint32_t lvt)
{
	if (x2apic_mode())
		wrmsr(X2APIC_MSR(APIC_LVTPC), lvt);
	else
		*(volatile uint32_t *)(uintptr_t)(APIC_RESET_BASE + APIC_LVTPC) = lvt;
}

/* --- ring 3 ----------------------------------------------------------------- */

static uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16)));
static uint8_t tss[104] __attribute__((aligned(16)));
uint8_t ring0_stack[8192] __attribute__((aligned(16)));
uint8_t ring3_stack[8192] __attribute__((aligned(4096)));

void make_user(uint64_t va)
{
	uint64_t cr3, cr0;
	asm volatile("mov %%cr3, %0; mov %%cr0, %1" : "=r"(cr3), "=r"(cr0));
	asm volatile("mov %0, %%cr0" ::"r"(cr0 & ~(1ull << 16)));	/* WP off: tables may be R/O */
	uint64_t *t = (uint64_t *)(uintptr_t)(cr3 & 0x000ffffffffff000ull);
	for (int l = 3; l >= 0; l--) {
		uint64_t *e = &t[(va >> (12 + 9 * l)) & 511];
		*e |= 4;
		if (l == 0 || (*e & 0x80))
			break;
		t = (uint64_t *)(uintptr_t)(*e & 0x000ffffffffff000ull);
	}
	asm volatile("mov %0, %%cr0; mov %1, %%cr3" ::"r"(cr0), "r"(cr3) : "memory");
}

uint64_t *ring3_gdt(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) g;
	asm volatile("sgdt %0" : "=m"(g));
	if (g.limit + 1 > 9 * 8)
		return NULL;
	CopyMem(gdt, (void *)(uintptr_t)g.base, g.limit + 1);
	gdt[SEL_UDATA / 8] = 0x00cff3000000ffffull;
	gdt[SEL_UCODE / 8] = 0x00affb000000ffffull;	/* L=1 */
	uint64_t b = A(tss);
	gdt[SEL_TSS / 8] = (sizeof(tss) - 1) | ((b & 0xffffff) << 16) | (0x89ull << 40) | (((b >> 24) & 0xff) << 56);
	gdt[SEL_TSS / 8 + 1] = b >> 32;
	*(uint64_t *)(tss + 4) = A(ring0_stack + sizeof(ring0_stack));	/* RSP0 */
	*(uint16_t *)(tss + 102) = sizeof(tss);
	return gdt;
}

void ring3_gdt_load(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) g = { sizeof(gdt) - 1, A(gdt) };
	asm volatile("lgdt %0; ltr %w1" ::"m"(g), "r"(SEL_TSS));
	make_user(A(ring3_stack));
	make_user(A(ring3_stack) + 4096);
}
