/*
 * Finds the host channel device before the hypervisor starts: the first
 * ivshmem-plain function (PCI 1af4:1110, lowest segment/bus/device/function)
 * among the firmware's EFI_PCI_IO_PROTOCOL instances (UEFI 2.x 14.4), its
 * BAR0 (registers) and BAR2 (shared memory, 64-bit prefetchable) as the
 * firmware programmed them, with memory decode turned on, and the ECAM
 * base of its segment from the ACPI MCFG table (efi-loader/acpi.c; PCI
 * Firmware 3.2 4.1.2). Boot services, before hv_enter().
 */
#include <efi.h>
#include <efilib.h>

#include "arch/x86/paging.h"
#include "base/boot.h"
#include "base/pcicfg.h"
#include "acpi.h"
#include "loader.h"

static bool bar_range(EFI_PCI_IO_PROTOCOL *pio, u8 bar, u64 *base, u64 *size)
{
	struct acpi_qword_desc *d = NULL;
	EFI_STATUS st = uefi_call_wrapper(pio->GetBarAttributes, 4, pio, bar, NULL, (void **)&d);
	if (EFI_ERROR(st) || !d)
		return false;
	bool ok = d->tag == ACPI_QWORD_DESC_TAG && d->type == ACPI_QWORD_TYPE_MEMORY && d->length;
	*base = ok ? d->min : 0;
	*size = ok ? d->length : 0;
	FreePool(d);
	return ok;
}

static u64 location_key(UINTN seg, UINTN bus, UINTN dev, UINTN fn)
{
	return ((u64)seg << 16) | (bus << 8) | (dev << 3) | fn;
}

/* Another function's memory BAR in one of the pages the hypervisor will
 * sink (they would go dark with the device): says which. */
static void check_neighbours(EFI_HANDLE *h, UINTN n, EFI_PCI_IO_PROTOCOL *self,
			     const struct hv_boot_ivshmem *iv)
{
	const u64 lo[2] = { ALIGN_DOWN(iv->bar0_pa, PAGE_SIZE), ALIGN_DOWN(iv->bar2_pa, PAGE_SIZE) };
	const u64 hi[2] = { ALIGN_UP(iv->bar0_pa + iv->bar0_size, PAGE_SIZE),
			    ALIGN_UP(iv->bar2_pa + iv->bar2_size, PAGE_SIZE) };
	for (UINTN i = 0; i < n; i++) {
		EFI_PCI_IO_PROTOCOL *pio;
		UINTN seg, bus, dev, fn;
		if (EFI_ERROR(uefi_call_wrapper(BS->HandleProtocol, 3, h[i], &PciIoProtocol, (void **)&pio)) ||
		    pio == self ||
		    EFI_ERROR(uefi_call_wrapper(pio->GetLocation, 5, pio, &seg, &bus, &dev, &fn)))
			continue;
		for (u8 bar = 0; bar < 6; bar++) {
			u64 b, s;
			if (!bar_range(pio, bar, &b, &s))
				continue;
			for (int k = 0; k < 2; k++)
				if (b < hi[k] && lo[k] < b + s)
					say("warning: BAR%u of %02lx:%02lx.%lx at %lx shares a page with the hidden ivshmem BAR%u: it will be hidden too",
					    bar, (u64)bus, (u64)dev, (u64)fn, b, k * 2);
		}
	}
}

void pci_find_ivshmem(struct hv_boot_ivshmem *iv)
{
	UINTN n = 0;
	EFI_HANDLE *h = NULL;
	EFI_PCI_IO_PROTOCOL *best = NULL;
	u64 best_key = ~0ull;

	ZeroMem(iv, sizeof(*iv));
	if (EFI_ERROR(LibLocateHandle(ByProtocol, &PciIoProtocol, NULL, &n, &h)) || !n) {
		say("no PCI devices from the firmware: no ivshmem channel");
		return;
	}
	for (UINTN i = 0; i < n; i++) {
		EFI_PCI_IO_PROTOCOL *pio;
		UINT32 id = 0;
		UINTN seg, bus, dev, fn;
		if (EFI_ERROR(uefi_call_wrapper(BS->HandleProtocol, 3, h[i], &PciIoProtocol, (void **)&pio)) ||
		    EFI_ERROR(uefi_call_wrapper(pio->Pci.Read, 5, pio, EfiPciIoWidthUint32, 0, 1, &id)) ||
		    id != (PCI_DEVICE_IVSHMEM << 16 | PCI_VENDOR_REDHAT_QUMRANET) ||
		    EFI_ERROR(uefi_call_wrapper(pio->GetLocation, 5, pio, &seg, &bus, &dev, &fn)))
			continue;
		if (location_key(seg, bus, dev, fn) < best_key) {
			best_key = location_key(seg, bus, dev, fn);
			best = pio;
			iv->segment = (u16)seg;
			iv->bus = (u8)bus;
			iv->dev = (u8)dev;
			iv->fn = (u8)fn;
		}
	}
	if (!best) {
		say("no ivshmem-plain device (1af4:1110): no ivshmem channel");
		goto out;
	}

	/* PCI 3.0 6.2.5.1: BAR2/BAR3 hold a 64-bit memory BAR (type 10b) */
	UINT32 bars[6] = { 0 };
	uefi_call_wrapper(best->Pci.Read, 5, best, EfiPciIoWidthUint32, 0x10, 6, bars);
	bool bar2_64 = (bars[2] & 7) == 4;
	if (!bar_range(best, 0, &iv->bar0_pa, &iv->bar0_size) ||
	    !bar_range(best, 2, &iv->bar2_pa, &iv->bar2_size) || !bar2_64 ||
	    iv->bar0_pa != (bars[0] & ~0xfull) ||
	    iv->bar2_pa != ((bars[2] & ~0xfull) | (u64)bars[3] << 32)) {
		say("ivshmem %02x:%02x.%x: BARs not as expected (BAR0 %x, BAR2 %x:%x): not used",
		    iv->bus, iv->dev, iv->fn, bars[0], bars[3], bars[2]);
		ZeroMem(iv, sizeof(*iv));
		goto out;
	}
	/* memory decode on (PCI 3.0 6.2.2, Command bit 1), through the
	 * firmware so that its own bookkeeping agrees */
	uefi_call_wrapper(best->Attributes, 4, best, EfiPciIoAttributeOperationEnable,
			  EFI_PCI_IO_ATTRIBUTE_MEMORY, NULL);
	UINT16 cmd = 0;
	uefi_call_wrapper(best->Pci.Read, 5, best, EfiPciIoWidthUint16, 4, 1, &cmd);
	if (!(cmd & 2)) {
		say("ivshmem %02x:%02x.%x: memory decode stays off (command %x): not used", iv->bus,
		    iv->dev, iv->fn, cmd);
		ZeroMem(iv, sizeof(*iv));
		goto out;
	}

	const struct acpi_sdt_hdr *mcfg = acpi_find_table("MCFG");
	if (!mcfg || !acpi_mcfg_find(mcfg, mcfg->length, iv->segment, iv->bus, &iv->ecam_pa,
				     &iv->ecam_bus_start, &iv->ecam_bus_end))
		iv->ecam_pa = 0;
	iv->found = 1;
	say("ivshmem channel %04x:%02x:%02x.%x: BAR0 %lx (%lu bytes), BAR2 %lx (%lu KiB)",
	    iv->segment, iv->bus, iv->dev, iv->fn, iv->bar0_pa, iv->bar0_size, iv->bar2_pa,
	    iv->bar2_size >> 10);
	if (iv->ecam_pa)
		say("ECAM for segment %u buses %u-%u at %lx (MCFG)", iv->segment, iv->ecam_bus_start,
		    iv->ecam_bus_end, iv->ecam_pa);
	else
		say("no MCFG entry for segment %u bus %u: no ECAM to hide", iv->segment, iv->bus);
	check_neighbours(h, n, best, iv);
out:
	FreePool(h);
}
