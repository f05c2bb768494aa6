/* UEFI memory types and status codes in words (UEFI 2.x 7.2, Appendix D). */
#include "loader.h"

bool efi_type_is_ram(u32 type)
{
	switch (type) {
	case 1:  /* EfiLoaderCode */
	case 2:  /* EfiLoaderData */
	case 3:  /* EfiBootServicesCode */
	case 4:  /* EfiBootServicesData */
	case 5:  /* EfiRuntimeServicesCode */
	case 6:  /* EfiRuntimeServicesData */
	case 7:  /* EfiConventionalMemory */
	case 9:  /* EfiACPIReclaimMemory */
	case 10: /* EfiACPIMemoryNVS */
	case 14: /* EfiPersistentMemory */
		return true;
	}
	return false; /* reserved, unusable, MMIO, PAL code, OEM/OS types (ours too) */
}

const char *efi_status_str(u64 st)
{
	static const char *const err[] = {
		[1] = "Load Error", [2] = "Invalid Parameter", [3] = "Unsupported",
		[4] = "Bad Buffer Size", [5] = "Buffer Too Small", [6] = "Not Ready",
		[7] = "Device Error", [8] = "Write Protected", [9] = "Out of Resources",
		[10] = "Volume Corrupted", [11] = "Volume Full", [12] = "No Media",
		[13] = "Media Changed", [14] = "Not Found", [15] = "Access Denied",
		[21] = "Aborted", [26] = "Security Violation",
	};
	if (st == 0)
		return "Success";
	if ((st >> 63) && (st & ~(1ull << 63)) < ARRAY_SIZE(err) && err[st & ~(1ull << 63)])
		return err[st & ~(1ull << 63)];
	return "error";
}

/* ACPI 6.x 5.2.12 MADT: after the 36-byte header, the local APIC address
 * and flags (8 bytes), then entries of (type, length, ...): type 0 the
 * Processor Local APIC (flags at offset 4), type 9 the Processor Local
 * x2APIC (flags at offset 8); flags bit 0 Enabled, bit 1 Online Capable
 * (before ACPI 6.3 a hot-pluggable processor is simply not enabled). */
int madt_count_cpus(const u8 *madt, u32 len, u32 *enabled, u32 *not_enabled)
{
	*enabled = *not_enabled = 0;
	if (len < 44)
		return -1;
	for (u32 off = 44; off + 2 <= len;) {
		u8 type = madt[off], l = madt[off + 1];
		u32 at = type == 0 ? 4 : type == 9 ? 8 : 0, flags;
		if (l < 2 || off + l > len)
			return -1;
		if (at && l >= at + 4) {
			flags = (u32)madt[off + at] | (u32)madt[off + at + 1] << 8 |
				(u32)madt[off + at + 2] << 16 | (u32)madt[off + at + 3] << 24;
			if (flags & 1)
				(*enabled)++;
			else
				(*not_enabled)++;
		}
		off += l;
	}
	return 0;
}
