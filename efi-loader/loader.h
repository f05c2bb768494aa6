/* Loader helpers that need no firmware calls (host-testable). */
#ifndef HVTRACE_LOADER_H
#define HVTRACE_LOADER_H
#include <stdarg.h>
#include "arch/x86/types.h"

/* The processors ACPI's MADT lists: enabled ones, and the others
 * (disabled, or hot-pluggable later); 0, or -1 for a malformed table. */
int madt_count_cpus(const u8 *madt, u32 len, u32 *enabled, u32 *not_enabled);

/* UEFI 2.x 7.2 memory types that are RAM the OS may use or that hold
 * firmware data in RAM (not MMIO, not reserved, not unusable). */
bool efi_type_is_ram(u32 type);
/* "Not Found" for EFI_NOT_FOUND, etc. (UEFI 2.x Appendix D). */
const char *efi_status_str(u64 status);

int hv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

/* main.c: one line on the console, "hvtrace: " first */
void say(const char *fmt, ...) __printf(1, 2);

/* pci.c: the ivshmem-plain device the host channel uses (found = 0: none),
 * said on the console either way */
struct hv_boot_ivshmem;
void pci_find_ivshmem(struct hv_boot_ivshmem *iv);

/* mp.c: every enabled processor into bp->cpus[] (the boot processor
 * first); HV_OK or why not, said on the console */
struct hv_boot;
int mp_collect(struct hv_boot *bp);
/* hv_entry(bp, op | k << HV_OP_CPU_SHIFT) on every application processor k */
int mp_run(struct hv_boot *bp, u64 host_cr3, u64 entry, u32 op);
#endif
