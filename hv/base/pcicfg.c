/* PCI configuration mechanism #1 decisions and MCFG lookup (see pcicfg.h).
 * Pure logic: no port access here; host-tested. */
#include "base/pcicfg.h"

static bool overlaps(u16 port, u8 size, u16 first, u16 n)
{
	return port < first + n && first < port + size;
}

struct pci_io_decision pci_io_decide(const struct pci_hide_fn *h, u32 *cf8, u16 port, u8 size,
				     bool in, u32 val)
{
	struct pci_io_decision d = { false, false };

	/* PCI 3.0 3.2.2.3.2: only a dword access to 0xCF8 is CONFIG_ADDRESS;
	 * byte and word accesses there are ordinary I/O (0xCF9 among them). */
	if (port == PCI_CONFIG_ADDRESS && size == 4) {
		if (!in)
			*cf8 = val;
		return d;
	}
	if (!in && overlaps(port, size, PCI_RESET_CONTROL, 1)) {
		u8 rst = (u8)(val >> (8 * (PCI_RESET_CONTROL - port)));
		d.reset = rst & RST_CNT_RST_CPU;
	}
	if (h->active && (*cf8 & PCI_CF8_ENABLE) && overlaps(port, size, PCI_CONFIG_DATA, 4) &&
	    pci_cf8_bus(*cf8) == h->bus && pci_cf8_dev(*cf8) == h->dev &&
	    pci_cf8_fn(*cf8) == h->fn)
		d.hide = true;
	return d;
}

bool acpi_mcfg_find(const void *mcfg, u32 len, u16 segment, u8 bus, u64 *base, u8 *bus_start,
		    u8 *bus_end)
{
	const u8 *t = mcfg;
	u32 hdr_len;

	if (len < ACPI_MCFG_ENTRIES_OFFSET || t[0] != 'M' || t[1] != 'C' || t[2] != 'F' ||
	    t[3] != 'G')
		return false;
	hdr_len = (u32)t[4] | (u32)t[5] << 8 | (u32)t[6] << 16 | (u32)t[7] << 24;
	if (hdr_len < len)
		len = hdr_len;	/* never read past what the table says it is */
	for (u32 off = ACPI_MCFG_ENTRIES_OFFSET; off + sizeof(struct acpi_mcfg_entry) <= len;
	     off += sizeof(struct acpi_mcfg_entry)) {
		struct acpi_mcfg_entry e;
		__builtin_memcpy(&e, t + off, sizeof(e));
		if (e.segment == segment && bus >= e.bus_start && bus <= e.bus_end && e.base) {
			*base = e.base;
			*bus_start = e.bus_start;
			*bus_end = e.bus_end;
			return true;
		}
	}
	return false;
}
