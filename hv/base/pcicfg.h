/* PCI configuration access as the specifications define it, pure logic
 * shared by the loader and the hypervisor and host-tested: configuration
 * mechanism #1 (PCI Local Bus 3.0 3.2.2.3.2: CONFIG_ADDRESS at 0xCF8,
 * CONFIG_DATA at 0xCFC-0xCFF), the reset control register at 0xCF9 (Intel
 * ICH9 datasheet 13.7.5, RST_CNT), ECAM (PCI Express Base 4.0 7.2.2) and
 * the ACPI MCFG table that gives its base (PCI Firmware 3.2 4.1.2). */
#ifndef HV_BASE_PCICFG_H
#define HV_BASE_PCICFG_H

#include "arch/x86/types.h"

#define PCI_CONFIG_ADDRESS	0xcf8
#define PCI_RESET_CONTROL	0xcf9
#define PCI_CONFIG_DATA		0xcfc
#define PCI_CF8_ENABLE		BIT(31)
#define RST_CNT_SYS_RST		BIT(1)	/* full reset instead of CPU reset */
#define RST_CNT_RST_CPU		BIT(2)	/* 0 -> 1 starts the reset */

#define PCI_VENDOR_REDHAT_QUMRANET	0x1af4
#define PCI_DEVICE_IVSHMEM		0x1110

/* CONFIG_ADDRESS fields: enable (31), bus (23:16), device (15:11),
 * function (10:8), register (7:2). */
static inline u8 pci_cf8_bus(u32 a) { return (u8)(a >> 16); }
static inline u8 pci_cf8_dev(u32 a) { return (a >> 11) & 0x1f; }
static inline u8 pci_cf8_fn(u32 a) { return (a >> 8) & 7; }
static inline u8 pci_cf8_reg(u32 a) { return a & 0xfc; }

/* Offset of a function's 4 KiB configuration space from the ECAM base of
 * an MCFG entry whose first bus is bus_start (PCIe 7.2.2, Table 7-1). */
static inline u64 pci_ecam_offset(u8 bus, u8 dev, u8 fn, u8 bus_start)
{
	return ((u64)(u8)(bus - bus_start) << 20) | ((u64)(dev & 0x1f) << 15) | ((u64)(fn & 7) << 12);
}

/* The one function mechanism #1 must hide (segment 0 only: CONFIG_ADDRESS
 * cannot name another segment). */
struct pci_hide_fn {
	bool active;
	u8 bus, dev, fn;
};

/* What to do with a port I/O to 0xCF8-0xCFF. */
struct pci_io_decision {
	bool hide;	/* IN: all-ones of the access size; OUT: dropped */
	bool reset;	/* an OUT that sets RST_CPU in 0xCF9: a reset follows */
};

/*
 * Decides an IN/OUT of `size` bytes (1, 2, 4) at `port`, `val` being the
 * value of an OUT. `*cf8` is the guest's CONFIG_ADDRESS: a dword OUT to
 * 0xCF8 (the only access that writes it) updates it. Everything that is not
 * hidden is to be performed on the real port.
 */
struct pci_io_decision pci_io_decide(const struct pci_hide_fn *h, u32 *cf8, u16 port, u8 size,
				     bool in, u32 val);

/* PCI Firmware 3.2 Table 4-3: one MCFG allocation entry. */
struct acpi_mcfg_entry {
	u64 base;
	u16 segment;
	u8 bus_start, bus_end;
	u32 reserved;
} __packed;
_Static_assert(sizeof(struct acpi_mcfg_entry) == 16, "MCFG entry");
#define ACPI_MCFG_ENTRIES_OFFSET 44	/* 36-byte header + 8 reserved */

/* Finds the MCFG entry (table of `len` bytes, header included) that covers
 * segment/bus: true with its base and bus range. */
bool acpi_mcfg_find(const void *mcfg, u32 len, u16 segment, u8 bus, u64 *base, u8 *bus_start,
		    u8 *bus_end);

#endif
