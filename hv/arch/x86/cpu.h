/* Thin inline wrappers for privileged x86 instructions, used in VMX/SVM root
 * mode by the hypervisor (never in the host unit tests). */
#ifndef HV_X86_CPU_H
#define HV_X86_CPU_H

#include "arch/x86/types.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/dr.h"

/* The hypercall instructions: 0F 01 and this ModRM byte (SDM Vol. 2B
 * VMCALL, APM Vol. 3 VMMCALL) */
#define INSN_0F01_VMCALL		0xc1
#define INSN_0F01_VMMCALL		0xd9

struct cpuid_regs {
	u32 eax, ebx, ecx, edx;
};

/* Leaf 0 (`l0`) names AMD or Hygon (arch/x86/cpuid.h's vendor words) */
static inline bool cpuid_l0_amd(const struct cpuid_regs *l0)
{
	return (l0->ebx == CPUID_VENDOR_AMD_EBX && l0->edx == CPUID_VENDOR_AMD_EDX &&
		l0->ecx == CPUID_VENDOR_AMD_ECX) ||
	       (l0->ebx == CPUID_VENDOR_HYGON_EBX && l0->edx == CPUID_VENDOR_HYGON_EDX &&
		l0->ecx == CPUID_VENDOR_HYGON_ECX);
}

static inline void cpuid_count(u32 leaf, u32 sub, struct cpuid_regs *r)
{
	asm volatile("cpuid"
		     : "=a"(r->eax), "=b"(r->ebx), "=c"(r->ecx), "=d"(r->edx)
		     : "a"(leaf), "c"(sub));
}

/* This processor's local APIC ID: the x2APIC ID from leaf 0BH where the
 * CPU has it, else the xAPIC ID in CPUID.1:EBX[31:24] (SDM Vol. 2A CPUID).
 * Also the loader's (efi-loader/mp.c). */
static inline u32 cpu_apic_id(void)
{
	struct cpuid_regs r;
	cpuid_count(0, 0, &r);
	if (r.eax >= 0xb) {
		cpuid_count(0xb, 0, &r);
		if (r.ebx)
			return r.edx;
	}
	cpuid_count(1, 0, &r);
	return r.ebx >> 24;
}

static inline u64 rdmsr(u32 msr)
{
	u32 lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((u64)hi << 32) | lo;
}

static inline void wrmsr(u32 msr, u64 v)
{
	asm volatile("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32)) : "memory");
}

/* Fault-safe forms (exc.S): 0, or -1 when the instruction raised #GP. */
int rdmsr_safe(u32 msr, u64 *val);
int wrmsr_safe(u32 msr, u64 val);

#define DEFINE_READ_CR(n) \
	static inline u64 read_cr##n(void) { u64 v; asm volatile("mov %%cr" #n ", %0" : "=r"(v)); return v; }
DEFINE_READ_CR(0)
DEFINE_READ_CR(2)
DEFINE_READ_CR(3)
DEFINE_READ_CR(4)
#undef DEFINE_READ_CR

static inline void write_cr0(u64 v) { asm volatile("mov %0, %%cr0" ::"r"(v) : "memory"); }
static inline void write_cr3(u64 v) { asm volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }
static inline void write_cr4(u64 v) { asm volatile("mov %0, %%cr4" ::"r"(v) : "memory"); }
static inline void write_cr8(u64 v) { asm volatile("mov %0, %%cr8" ::"r"(v) : "memory"); }

/* RDPKRU (SDM Vol. 2B; #UD unless CR4.PKE): EAX = PKRU, ECX must be 0 */
static inline u32 rdpkru(void)
{
	u32 eax, edx;
	asm volatile(".byte 0x0f, 0x01, 0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static inline u64 read_dr0(void) { u64 v; asm volatile("mov %%dr0, %0" : "=r"(v)); return v; }
static inline void write_dr0(u64 v) { asm volatile("mov %0, %%dr0" ::"r"(v)); }
static inline u64 read_dr1(void) { u64 v; asm volatile("mov %%dr1, %0" : "=r"(v)); return v; }
static inline void write_dr1(u64 v) { asm volatile("mov %0, %%dr1" ::"r"(v)); }
static inline u64 read_dr6(void) { u64 v; asm volatile("mov %%dr6, %0" : "=r"(v)); return v; }
static inline void write_dr6(u64 v) { asm volatile("mov %0, %%dr6" ::"r"(v)); }
static inline u64 read_dr7(void) { u64 v; asm volatile("mov %%dr7, %0" : "=r"(v)); return v; }
static inline u64 read_dr2(void) { u64 v; asm volatile("mov %%dr2, %0" : "=r"(v)); return v; }
static inline void write_dr2(u64 v) { asm volatile("mov %0, %%dr2" ::"r"(v)); }
static inline u64 read_dr3(void) { u64 v; asm volatile("mov %%dr3, %0" : "=r"(v)); return v; }
static inline void write_dr3(u64 v) { asm volatile("mov %0, %%dr3" ::"r"(v)); }
static inline void write_dr7(u64 v) { asm volatile("mov %0, %%dr7" ::"r"(v)); }

/* The host's DR7 with every breakpoint off, whatever was armed before.
 * QEMU's TCG keeps a breakpoint it inserted for an earlier DR7 until a MOV
 * to DR7 changes more than enable bits (cpu_x86_update_dr7 then removes
 * all four; its fast path revisits only those whose enable bit changed,
 * and VMRUN and #VMEXIT assign DR7 without revisiting any): the first
 * write differs in an RW field, the second leaves DR7 at its reset value.
 * On hardware #VMEXIT and VM exit have already cleared DR7 (APM Vol. 2
 * 15.7.2, SDM Vol. 3 28.5.1): two MOVs. */
static inline void host_dr7_disarm(void)
{
	write_dr7(DR7_FIXED1 | (1ull << DR7_RW_SHIFT(0)));	/* RW0 = 01 */
	write_dr7(DR7_FIXED1);
}

static inline u64 read_rflags(void)
{
	u64 v;
	asm volatile("pushfq; popq %0" : "=r"(v));
	return v;
}

static inline u64 rdtsc(void)
{
	u32 lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

static inline void outb(u16 port, u8 v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline u8 inb(u16 port) { u8 v; asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline void outw(u16 port, u16 v) { asm volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline u16 inw(u16 port) { u16 v; asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline void outl(u16 port, u32 v) { asm volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline u32 inl(u16 port) { u32 v; asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline void cpu_relax(void) { asm volatile("pause" ::: "memory"); }

struct desc_ptr {
	u16 limit;
	u64 base;
} __attribute__((packed));

static inline void sgdt(struct desc_ptr *d) { asm volatile("sgdt %0" : "=m"(*d)); }
static inline void sidt(struct desc_ptr *d) { asm volatile("sidt %0" : "=m"(*d)); }

#define DEFINE_READ_SEG(s) \
	static inline u16 read_##s(void) { u16 v; asm volatile("mov %%" #s ", %0" : "=r"(v)); return v; }
DEFINE_READ_SEG(cs)
DEFINE_READ_SEG(ss)
DEFINE_READ_SEG(ds)
DEFINE_READ_SEG(es)
DEFINE_READ_SEG(fs)
DEFINE_READ_SEG(gs)
#undef DEFINE_READ_SEG

static inline u16 read_tr(void) { u16 v; asm volatile("str %0" : "=r"(v)); return v; }
static inline u16 read_ldtr(void) { u16 v; asm volatile("sldt %0" : "=r"(v)); return v; }

static inline __attribute__((noreturn)) void cpu_halt_forever(void)
{
	for (;;)
		asm volatile("cli; hlt");
}

/* Shuts this processor down as a triple fault does (SDM Vol. 3 6.15
 * "Interrupt 8"; APM Vol. 2 8.2.9): with an IDT of limit 0 the INT3 is a
 * #GP, which is a #GP again, then #DF, and the #DF's own #GP is the
 * shutdown the platform answers (QEMU: a reset, or an exit with
 * -no-reboot; a chipset: usually a reset). */
static inline __attribute__((noreturn)) void cpu_shutdown(void)
{
	struct __attribute__((packed)) { u16 limit; u64 base; } idt = { 0, 0 };
	asm volatile("cli; lidt %0; int3" ::"m"(idt) : "memory");
	cpu_halt_forever();
}

#endif
