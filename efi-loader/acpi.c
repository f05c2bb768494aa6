/* ACPI table lookup: EFI configuration table (ACPI 2.0 GUID) -> RSDP
 * (ACPI 6.x 5.2.5) -> XSDT (5.2.8) -> the table by signature. Boot
 * services; the tables are identity-mapped firmware memory. */
#include <efi.h>
#include <efilib.h>

#include "acpi.h"

struct acpi_rsdp { /* ACPI 6.x Table 5-27 */
	char sig[8];
	u8 checksum;
	char oem_id[6];
	u8 revision;
	u32 rsdt;
	u32 length;
	u64 xsdt;
	u8 ext_checksum, reserved[3];
} __packed;

static EFI_GUID acpi20_guid = ACPI_20_TABLE_GUID;

const struct acpi_sdt_hdr *acpi_find_table(const char *sig)
{
	const struct acpi_rsdp *rsdp = NULL;
	for (UINTN i = 0; i < ST->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &ST->ConfigurationTable[i];
		if (!CompareMem(&t->VendorGuid, &acpi20_guid, sizeof(EFI_GUID)))
			rsdp = t->VendorTable;
	}
	if (!rsdp || CompareMem(rsdp->sig, "RSD PTR ", 8) || rsdp->revision < 2 || !rsdp->xsdt)
		return NULL;
	const struct acpi_sdt_hdr *xsdt = (const void *)(uintptr_t)rsdp->xsdt;
	if (CompareMem(xsdt->sig, "XSDT", 4) || xsdt->length < sizeof(*xsdt))
		return NULL;
	u32 n = (xsdt->length - sizeof(*xsdt)) / 8;
	const u8 *entries = (const u8 *)(xsdt + 1);
	for (u32 i = 0; i < n; i++) {
		u64 pa;
		CopyMem(&pa, (void *)(entries + 8 * i), 8); /* unaligned in the XSDT */
		const struct acpi_sdt_hdr *t = (const void *)(uintptr_t)pa;
		if (t && !CompareMem((void *)t->sig, (void *)sig, 4))
			return t;
	}
	return NULL;
}
