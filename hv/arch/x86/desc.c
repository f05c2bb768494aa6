/* Host GDT/TSS/IDT. Their exception stubs (exc.S) call exc_handler, which
 * lives with the base code (base/rootexc.c): it logs. */
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"

struct idt_gate {
	u16 off0, sel;
	u8 ist, type;
	u16 off1;
	u32 off2, reserved;
} __packed;
_Static_assert(sizeof(struct idt_gate) == 16, "SDM Vol. 3 Figure 6-8");

/* one IDT for every processor: its gates never change once written */
static struct idt_gate host_idt[256] __aligned(16);

extern const u64 exc_stubs[256];

void desc_load_host(struct host_cpu *c)
{
	u64 tss = (u64)(uintptr_t)&c->tss;

	c->self = c;
	c->gdt[0] = 0;
	c->gdt[1] = 0x00af9b000000ffffull;	/* code: P, DPL0, L, G */
	c->gdt[2] = 0x00cf93000000ffffull;	/* data: P, DPL0, W, G */
	c->gdt[3] = (sizeof(c->tss) - 1) | ((tss & 0xffffff) << 16) |
		    (0x89ull << 40) | (((tss >> 24) & 0xff) << 56);
	c->gdt[4] = tss >> 32;
	c->tss.iomap_base = sizeof(c->tss);

	for (int i = 0; i < 256; i++) {
		u64 h = exc_stubs[i];
		host_idt[i] = (struct idt_gate){
			.off0 = (u16)h, .sel = HOST_CS, .type = 0x8e,
			.off1 = (u16)(h >> 16), .off2 = (u32)(h >> 32),
		};
	}

	struct desc_ptr g = { sizeof(c->gdt) - 1, (u64)(uintptr_t)c->gdt };
	struct desc_ptr i = { sizeof(host_idt) - 1, (u64)(uintptr_t)host_idt };
	asm volatile("lgdt %0\n\t"
		     "lidt %1\n\t"
		     "pushq %2\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "pushq %%rax\n\t"
		     "lretq\n"
		     "1:\n\t"
		     "mov %3, %%eax\n\t"
		     "mov %%eax, %%ds\n\t"
		     "mov %%eax, %%es\n\t"
		     "mov %%eax, %%ss\n\t"
		     "xor %%eax, %%eax\n\t"
		     "mov %%eax, %%fs\n\t"
		     "mov %%eax, %%gs\n\t"
		     "mov %4, %%eax\n\t"
		     "ltr %%ax"
		     :
		     : "m"(g), "m"(i), "i"(HOST_CS), "i"(HOST_DS), "i"(HOST_TR)
		     : "rax", "memory");
	/* after the null selector load, which may clear the base (APM) */
	wrmsr(MSR_GS_BASE, (u64)(uintptr_t)c);
}
