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
