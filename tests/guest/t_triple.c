/*
 * t_triple: ends the machine on purpose. Load options:
 *   (none)  a triple fault (an IDT of limit 0, then INT3: #BP, #GP and #DF
 *           all fail to deliver): the hypervisor freezes the recorder,
 *           dumps the guest state and then does what the platform does
 *           (triple_fault = reset), or stays resident (halt);
 *   nw      CR0.NW set with CR0.CD clear, then CPUID (an exit): the
 *           hardware #GPs the MOV; QEMU's TCG takes it, and the next VMRUN
 *           refuses the guest state. The hypervisor must name the field
 *           (issue #15 item 3) and end the machine, not hang.
 */
#include "guest.h"

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_LOADED_IMAGE *li = NULL;
	guest_init(image, systab, "t_triple");
	uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol, (void **)&li);
	const CHAR16 *opt = li && li->LoadOptionsSize >= 2 ? li->LoadOptions : L"";
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	if (opt[0] == 'n' && opt[1] == 'w') {
		faults_catch();
		uint64_t cr0 = read_cr0();
		report_info("about to set CR0.NW with CR0.CD clear");
		asm volatile("cli");
		int vec = TRY(3, "mov %0, %%cr0" ::"a"((cr0 & ~(1ull << 30)) | (1ull << 29)));
		uint64_t now = read_cr0();
		struct cpuid c = cpuid(0, 0);
		TRY(3, "mov %0, %%cr0" ::"a"(cr0));
		asm volatile("sti");
		faults_release();
		report(vec == 13 || (now & (1ull << 29)), "cr0_nw_without_cd", "vec %d cr0 %lx cpuid %x", vec, now,
		       c.a);
		report_done();
	}
	report_info("about to triple-fault");
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) empty = { 0, 0 };
	asm volatile("cli; lidt %0; int3" ::"m"(empty));
	report(false, "triple_fault", "still running after the fault");
	report_done();
}
