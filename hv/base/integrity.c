/* Image checksum over text+rodata (hv/hv.ld marks the range), taken at
 * start-up and compared on each status hypercall. */
#include "base/boot.h"
#include "base/integrity.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/vcpu.h"

extern const char __hv_ro_start[], __hv_ro_end[];

static u64 ro_checksum(void)
{
	return hv_fnv1a(__hv_ro_start, (size_t)(__hv_ro_end - __hv_ro_start));
}

bool hv_image_code(u64 addr)
{
	return addr >= HV_VA_BASE && addr < (u64)(uintptr_t)__hv_ro_end;
}

bool hv_own_linear(u64 addr, u64 n)
{
	return addr + n - 1 >= HV_VA_BASE && addr < HV_APIC_VA + PAGE_SIZE;
}

void integrity_init(void)
{
	hv.ro_checksum = ro_checksum();
}

bool integrity_ok(void)
{
	u64 now = ro_checksum();
	if (now == hv.ro_checksum)
		return true;
	LOG_ERR("image checksum changed: %016lx, was %016lx", now, hv.ro_checksum);
	return false;
}
