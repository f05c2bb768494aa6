/*
 * t_triple: triple-faults on purpose (an IDT of limit 0, then INT3: #BP,
 * #GP and #DF all fail to deliver). The hypervisor must catch the shutdown,
 * dump the guest state to the serial console and stay resident.
 */
#include "guest.h"

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_triple");
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	report_info("about to triple-fault");
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) empty = { 0, 0 };
	asm volatile("cli; lidt %0; int3" ::"m"(empty));
	report(false, "triple_fault", "still running after the fault");
	report_done();
}
