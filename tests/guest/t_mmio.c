/*
 * t_mmio: MMIO through the hypervisor's nested page tables. Finds QEMU's
 * ivshmem device (1af4:1110) on PCI, writes a pattern into its BAR2, which
 * OVMF places above 4 GiB, and reads it back; the runner checks that the
 * pattern reached the host file behind the device.
 */
#include "guest.h"
#include "acpi.h"

#define IVSHMEM_ID 0x11101af4u
static const char pattern[] = "HVTRACE-MMIO-TEST-PATTERN";

static EFI_PCI_IO_PROTOCOL *find_ivshmem(void)
{
	UINTN n = 0;
	EFI_HANDLE *h = NULL;
	if (EFI_ERROR(LibLocateHandle(ByProtocol, &PciIoProtocol, NULL, &n, &h)))
		return NULL;
	for (UINTN i = 0; i < n; i++) {
		EFI_PCI_IO_PROTOCOL *pio;
		UINT32 id = 0;
		if (EFI_ERROR(uefi_call_wrapper(BS->HandleProtocol, 3, h[i], &PciIoProtocol, (void **)&pio)))
			continue;
		uefi_call_wrapper(pio->Pci.Read, 5, pio, EfiPciIoWidthUint32, 0, 1, &id);
		if (id == IVSHMEM_ID) {
			FreePool(h);
			return pio;
		}
	}
	FreePool(h);
	return NULL;
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_mmio");
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	report(under_hvtrace(), "under_hvtrace", NULL);

	EFI_PCI_IO_PROTOCOL *pio = find_ivshmem();
	if (!pio) {
		report(false, "ivshmem_found", "no 1af4:1110 device");
		report_done();
	}
	struct acpi_qword_desc *d = NULL;
	EFI_STATUS st = uefi_call_wrapper(pio->GetBarAttributes, 4, pio, 2, NULL, (void **)&d);
	report(!EFI_ERROR(st) && d && d->tag == ACPI_QWORD_DESC_TAG, "bar2_described", "status %lx", (uint64_t)st);
	if (EFI_ERROR(st) || !d)
		report_done();
	uint64_t base = d->min, len = d->length;
	report_info("ivshmem BAR2 at %lx, %lu KiB", base, len >> 10);
	report(base >= (1ull << 32), "bar2_above_4g", "base %lx", base);
	uefi_call_wrapper(pio->Attributes, 4, pio, EfiPciIoAttributeOperationEnable,
			  EFI_PCI_IO_ATTRIBUTE_MEMORY, NULL);

	volatile char *p = (volatile char *)(uintptr_t)base;
	volatile char *q = (volatile char *)(uintptr_t)(base + len - 64);
	for (unsigned i = 0; i < sizeof(pattern); i++) {
		p[i] = pattern[i];
		q[i] = pattern[i];
	}
	bool same = true;
	for (unsigned i = 0; i < sizeof(pattern); i++)
		same &= p[i] == pattern[i] && q[i] == pattern[i];
	report(same, "bar2_readback", NULL);
	report_done();
}
