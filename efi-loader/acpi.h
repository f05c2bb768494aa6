/* ACPI tables the firmware publishes (ACPI 6.x 5.2), found through the EFI
 * configuration table. Boot services. Also linked into guest tests. */
#ifndef HVTRACE_EFI_ACPI_H
#define HVTRACE_EFI_ACPI_H

#include "core/types.h"

struct acpi_sdt_hdr { /* ACPI 6.x Table 5-29 */
	char sig[4];
	u32 length;
	u8 revision, checksum;
	char oem_id[6], oem_table_id[8];
	u32 oem_revision, creator_id, creator_revision;
} __packed;
_Static_assert(sizeof(struct acpi_sdt_hdr) == 36, "ACPI table header");

/* The table with this signature ("MCFG"...) that the XSDT lists, or NULL. */
const struct acpi_sdt_hdr *acpi_find_table(const char *sig);

#endif
