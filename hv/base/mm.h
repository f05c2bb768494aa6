/* The hypervisor's page allocator over its reserved range, and address
 * conversions between its virtual window and physical memory. */
#ifndef HV_BASE_MM_H
#define HV_BASE_MM_H

#include "arch/x86/types.h"

void mm_init(u64 reserve_pa, u64 reserve_size, u64 heap_pa);
void *mm_alloc_pages(u64 n, u64 *pa);	/* zeroed, physically contiguous; NULL when out */
u64 mm_free_bytes(void);
u64 hv_va_to_pa(const void *va);
void *hv_pa_to_va(u64 pa);

/* The heap as the page-table builder's allocator (nested and EPT tables). */
struct pg_alloc;
extern const struct pg_alloc mm_pg_alloc;

/* Guest-physical memory is identity-mapped in the host page tables below
 * 2^47 (efi-loader/ builds them so). Only use after gmem checks. */
static inline void *guest_pa_ptr(u64 gpa) { return (void *)(uintptr_t)gpa; }

#endif
