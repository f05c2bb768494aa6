/* Bump allocator over the reserved range: the hypervisor never frees (its
 * structures live as long as the machine). Every processor may allocate
 * while it is set up: under a lock. */
#include "base/boot.h"
#include "base/lib.h"
#include "base/mm.h"
#include "base/pgbuild.h"
#include "arch/x86/paging.h"

static u64 mm_base, mm_next, mm_end;
static struct spinlock mm_lock;

void mm_init(u64 reserve_pa, u64 reserve_size, u64 heap_pa)
{
	mm_base = reserve_pa;
	mm_next = ALIGN_UP(heap_pa, PAGE_SIZE);
	mm_end = reserve_pa + reserve_size;
}

void *mm_alloc_pages(u64 n, u64 *pa)
{
	u64 bytes = n * PAGE_SIZE;
	spin_lock(&mm_lock);
	if (!n || n > (mm_end - mm_next) / PAGE_SIZE) {
		spin_unlock(&mm_lock);
		return NULL;
	}
	u64 p = mm_next;
	mm_next += bytes;
	spin_unlock(&mm_lock);
	void *va = hv_pa_to_va(p);
	memset(va, 0, bytes);
	if (pa)
		*pa = p;
	return va;
}

static void *pg_page_alloc(void *ctx, u64 *pa)
{
	(void)ctx;
	return mm_alloc_pages(1, pa);
}

static void *pg_page_ptr(void *ctx, u64 pa)
{
	(void)ctx;
	return hv_pa_to_va(pa);
}

const struct pg_alloc mm_pg_alloc = { pg_page_alloc, pg_page_ptr, NULL };

u64 mm_free_bytes(void)
{
	return mm_end - mm_next;
}

u64 hv_va_to_pa(const void *va)
{
	return (u64)(uintptr_t)va - HV_VA_BASE + mm_base;
}

void *hv_pa_to_va(u64 pa)
{
	return (void *)(uintptr_t)(pa - mm_base + HV_VA_BASE);
}
