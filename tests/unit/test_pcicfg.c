/* PCI configuration mechanism #1 decisions (what the hypervisor hides,
 * performs or sees as a reset), ECAM offsets and the MCFG lookup. */
#include <string.h>
#include "unit.h"
#include "base/pcicfg.h"

static const struct pci_hide_fn hid = { true, 0, 2, 0 };	/* 00:02.0 */

static u32 addr(u8 bus, u8 dev, u8 fn, u8 reg)
{
	return PCI_CF8_ENABLE | (u32)bus << 16 | (u32)dev << 11 | (u32)fn << 8 | reg;
}

static struct pci_io_decision io(u32 *cf8, u16 port, u8 size, bool in, u32 val)
{
	return pci_io_decide(&hid, cf8, port, size, in, val);
}

int main(void)
{
	u32 cf8 = 0;
	struct pci_io_decision d;

	/* CONFIG_ADDRESS fields */
	u32 a = addr(0x12, 0x1f, 7, 0xfc);
	CHECK(pci_cf8_bus(a) == 0x12 && pci_cf8_dev(a) == 0x1f && pci_cf8_fn(a) == 7 &&
	      pci_cf8_reg(a) == 0xfc, "fields of %x", a);

	/* only a dword OUT to 0xCF8 is CONFIG_ADDRESS, and it is performed */
	d = io(&cf8, 0xcf8, 4, false, addr(0, 2, 0, 0));
	CHECK(cf8 == addr(0, 2, 0, 0) && !d.hide && !d.reset, "dword OUT latches");
	d = io(&cf8, 0xcf8, 2, false, 0x1234);
	CHECK(cf8 == addr(0, 2, 0, 0) && !d.hide, "word OUT to 0xCF8 is ordinary I/O");
	d = io(&cf8, 0xcf8, 4, true, 0);
	CHECK(cf8 == addr(0, 2, 0, 0) && !d.hide, "IN from 0xCF8 performed, latch kept");

	/* CONFIG_DATA naming the hidden function: every size and offset */
	for (u16 port = 0xcfc; port < 0xd00; port++)
		for (u8 size = 1; size <= 4; size *= 2) {
			if (port + size > 0xd00)
				continue;
			CHECK(io(&cf8, port, size, true, 0).hide, "IN %x/%u hidden", port, size);
			CHECK(io(&cf8, port, size, false, 0).hide, "OUT %x/%u dropped", port, size);
		}
	/* a dword at 0xCFA overlaps CONFIG_DATA */
	CHECK(io(&cf8, 0xcfa, 4, true, 0).hide, "straddling access hidden");

	/* other functions, enable clear, another bus */
	io(&cf8, 0xcf8, 4, false, addr(0, 2, 1, 0));
	CHECK(!io(&cf8, 0xcfc, 4, true, 0).hide, "function 1 of the same device visible");
	io(&cf8, 0xcf8, 4, false, addr(0, 3, 0, 0x10));
	CHECK(!io(&cf8, 0xcfc, 4, true, 0).hide, "another device visible");
	io(&cf8, 0xcf8, 4, false, addr(1, 2, 0, 0));
	CHECK(!io(&cf8, 0xcfc, 4, true, 0).hide, "another bus visible");
	io(&cf8, 0xcf8, 4, false, addr(0, 2, 0, 0) & ~PCI_CF8_ENABLE);
	CHECK(!io(&cf8, 0xcfc, 4, true, 0).hide, "enable bit clear: not a config cycle");
	io(&cf8, 0xcf8, 4, false, addr(0, 2, 0, 0x3c));
	CHECK(io(&cf8, 0xcfe, 2, false, 0).hide, "any register of the function");

	/* nothing hidden: everything performed */
	const struct pci_hide_fn none = { false, 0, 2, 0 };
	CHECK(!pci_io_decide(&none, &cf8, 0xcfc, 4, true, 0).hide, "inactive hides nothing");

	/* resets through 0xCF9: RST_CPU in the byte that lands there */
	cf8 = 0;
	CHECK(io(&cf8, 0xcf9, 1, false, 0x06).reset, "0x06 to 0xCF9 resets");
	CHECK(io(&cf8, 0xcf9, 1, false, 0x0e).reset, "0x0e to 0xCF9 resets");
	CHECK(!io(&cf8, 0xcf9, 1, false, 0x02).reset, "0x02 only arms SYS_RST");
	CHECK(!io(&cf8, 0xcf9, 1, true, 0).reset, "IN never resets");
	CHECK(io(&cf8, 0xcf8, 2, false, 0x0400).reset, "word OUT to 0xCF8 writes 0xCF9");
	CHECK(!io(&cf8, 0xcf8, 2, false, 0x00ff).reset, "low byte is 0xCF8's");
	CHECK(!io(&cf8, 0xcf8, 4, false, 0x0400).reset && cf8 == 0x0400,
	      "dword OUT to 0xCF8 is CONFIG_ADDRESS, not a reset");
	CHECK(!io(&cf8, 0xcfc, 1, false, 0x06).reset, "0xCFC is not 0xCF9");

	/* ECAM: PCIe 7.2.2 */
	CHECK(pci_ecam_offset(0, 0, 0, 0) == 0, "00:00.0");
	CHECK(pci_ecam_offset(0, 1, 0, 0) == 0x8000, "00:01.0 %lx", pci_ecam_offset(0, 1, 0, 0));
	CHECK(pci_ecam_offset(0, 2, 0, 0) == 0x10000, "00:02.0");
	CHECK(pci_ecam_offset(0xff, 0x1f, 7, 0) == 0xffff000, "ff:1f.7");
	CHECK(pci_ecam_offset(0x12, 3, 1, 0x10) == (2u << 20 | 3u << 15 | 1u << 12),
	      "relative to the entry's first bus");

	/* MCFG: header, 8 reserved bytes, 16-byte entries */
	u8 t[44 + 2 * 16];
	memset(t, 0, sizeof(t));
	memcpy(t, "MCFG", 4);
	t[4] = sizeof(t);
	struct acpi_mcfg_entry e0 = { 0xb0000000, 0, 0, 0x7f, 0 }, e1 = { 0xe0000000, 1, 0x80, 0xff, 0 };
	memcpy(t + 44, &e0, 16);
	memcpy(t + 60, &e1, 16);
	u64 base = 0;
	u8 s = 0, e = 0;
	CHECK(acpi_mcfg_find(t, sizeof(t), 0, 5, &base, &s, &e) && base == 0xb0000000 && s == 0 &&
	      e == 0x7f, "segment 0");
	CHECK(!acpi_mcfg_find(t, sizeof(t), 0, 0x80, &base, &s, &e), "bus outside the range");
	CHECK(acpi_mcfg_find(t, sizeof(t), 1, 0x90, &base, &s, &e) && base == 0xe0000000 && s == 0x80,
	      "segment 1");
	t[4] = 60; /* the table says it ends after the first entry */
	CHECK(!acpi_mcfg_find(t, sizeof(t), 1, 0x90, &base, &s, &e), "entries past its length ignored");
	t[4] = sizeof(t);
	t[0] = 'X';
	CHECK(!acpi_mcfg_find(t, sizeof(t), 0, 0, &base, &s, &e), "wrong signature");
	CHECK(!acpi_mcfg_find(t, 20, 0, 0, &base, &s, &e), "truncated");

	return unit_done("test_pcicfg");
}
