/* ACPI tables the firmware publishes (ACPI 6.x 5.2), found through the EFI
 * configuration table. Boot services. Also linked into guest tests. */
#ifndef HVTRACE_EFI_ACPI_H
#define HVTRACE_EFI_ACPI_H

#include "arch/x86/types.h"

struct acpi_sdt_hdr { /* ACPI 6.x Table 5-29 */
	char sig[4];
	u32 length;
	u8 revision, checksum;
	char oem_id[6], oem_table_id[8];
	u32 oem_revision, creator_id, creator_revision;
} __packed;
_Static_assert(sizeof(struct acpi_sdt_hdr) == 36, "ACPI table header");

/* ACPI 6.x 6.4.3.5.1: QWORD Address Space Descriptor (what PciIo's
 * GetBarAttributes returns for a BAR) */
struct acpi_qword_desc {
	u8 tag;
	u16 len;
	u8 type, gflags, tflags;
	u64 gran, min, max, xlat, length;
} __packed;
#define ACPI_QWORD_DESC_TAG	0x8a
#define ACPI_QWORD_TYPE_MEMORY	0

/* The table with this signature ("MCFG"...) that the XSDT lists, or NULL. */
const struct acpi_sdt_hdr *acpi_find_table(const char *sig);

#endif
