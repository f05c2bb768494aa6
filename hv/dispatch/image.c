/* The header at the start of the flat hypervisor image (hv/hv.ld puts
 * .hvhdr first), read by efi-loader/ to place and enter the image. */
#include "hvtrace/abi.h"
#include "base/boot.h"

extern char __hv_file_end[], __hv_mem_end[];

__attribute__((section(".hvhdr"), used))
const struct hv_image_hdr hv_image_hdr = {
	.magic = HV_IMAGE_HDR_MAGIC,
	.entry = (u64)(uintptr_t)hv_entry,
	.file_end = (u64)(uintptr_t)__hv_file_end,
	.mem_end = (u64)(uintptr_t)__hv_mem_end,
	.sig = HVTRACE_IMAGE_MAGIC,
};
