/* Host GDT/TSS/IDT. Every exception in root mode is a hypervisor bug (the
 * handler logs the frame and stops the processor), except the #GP that
 * rdmsr_safe/wrmsr_safe expect. */
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/vectors.h"
#include "core/log.h"

struct tss64 {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __packed;
_Static_assert(sizeof(struct tss64) == 104, "SDM Vol. 3 Figure 8-11");

struct idt_gate {
	u16 off0, sel;
	u8 ist, type;
	u16 off1;
	u32 off2, reserved;
} __packed;
_Static_assert(sizeof(struct idt_gate) == 16, "SDM Vol. 3 Figure 6-8");

static u64 host_gdt[5] __aligned(16);
static struct tss64 host_tss __aligned(16);
static struct idt_gate host_idt[256] __aligned(16);

extern const u64 exc_stubs[256];

void desc_load_host(void)
{
	u64 tss = (u64)(uintptr_t)&host_tss;

	host_gdt[0] = 0;
	host_gdt[1] = 0x00af9b000000ffffull;	/* code: P, DPL0, L, G */
	host_gdt[2] = 0x00cf93000000ffffull;	/* data: P, DPL0, W, G */
	host_gdt[3] = (sizeof(host_tss) - 1) | ((tss & 0xffffff) << 16) |
		      (0x89ull << 40) | (((tss >> 24) & 0xff) << 56);
	host_gdt[4] = tss >> 32;
	host_tss.iomap_base = sizeof(host_tss);

	for (int i = 0; i < 256; i++) {
		u64 h = exc_stubs[i];
		host_idt[i] = (struct idt_gate){
			.off0 = (u16)h, .sel = HOST_CS, .type = 0x8e,
			.off1 = (u16)(h >> 16), .off2 = (u32)(h >> 32),
		};
	}

	struct desc_ptr g = { sizeof(host_gdt) - 1, (u64)(uintptr_t)host_gdt };
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
}

extern const char rdmsr_safe_insn[], rdmsr_safe_fixup[], wrmsr_safe_insn[], wrmsr_safe_fixup[];

/* Returns only after moving RIP to a fix-up (exc.S). */
void exc_handler(struct exc_frame *f);
void exc_handler(struct exc_frame *f)
{
	if (f->vector == X86_GP && f->rip == (u64)(uintptr_t)rdmsr_safe_insn) {
		f->rip = (u64)(uintptr_t)rdmsr_safe_fixup;
		return;
	}
	if (f->vector == X86_GP && f->rip == (u64)(uintptr_t)wrmsr_safe_insn) {
		f->rip = (u64)(uintptr_t)wrmsr_safe_fixup;
		return;
	}
	LOG_ERR("exception %lu error %lx in the hypervisor at rip %016lx rsp %016lx cr2 %016lx",
		f->vector, f->error, f->rip, f->rsp, read_cr2());
	LOG_ERR("rax %016lx rbx %016lx rcx %016lx rdx %016lx", f->rax, f->rbx, f->rcx, f->rdx);
	LOG_ERR("rsi %016lx rdi %016lx rbp %016lx r8  %016lx", f->rsi, f->rdi, f->rbp, f->r8);
	HV_PANIC("hypervisor bug");
}
