/* Guest-RAM range lists, the hypercall argument checks that use them, and
 * the loader's UEFI memory-type classification. */
#include <string.h>
#include "unit.h"
#include "hvtrace/abi.h"
#include "dispatch/hypercall.h"
#include "base/memmap.h"
#include "loader.h"

static struct hv_memmap m;

static void reset(void)
{
	memset(&m, 0, sizeof(m));
}

/* the linear search memmap_contains replaced, as the oracle */
static bool contains_ref(const struct hv_memmap *m, u64 gpa, u64 len)
{
	if (!len || gpa + len < gpa)
		return false;
	for (u32 i = 0; i < m->nr; i++)
		if (gpa >= m->r[i].base && gpa - m->r[i].base < m->r[i].size)
			return len <= m->r[i].size - (gpa - m->r[i].base);
	return false;
}

int main(void)
{
	/* binary search against the linear one, on random maps and probes
	 * near the ranges' edges */
	{
		static struct hv_memmap m;
		unsigned bad = 0, probes = 0;
		for (int map = 0; map < 200; map++) {
			memset(&m, 0, sizeof(m));
			u32 n = (u32)(unit_rand() % 60);
			for (u32 i = 0; i < n; i++)
				memmap_add(&m, (unit_rand() % 4096) << 12, ((unit_rand() % 64) + 1) << 12);
			for (int k = 0; k < 2000; k++) {
				u64 gpa = m.nr && (k & 1) ? m.r[unit_rand() % m.nr].base + (unit_rand() % 8192) - 4096
							  : (unit_rand() % (4200ull << 12));
				u64 len = unit_rand() % 3 ? unit_rand() % 8192 : unit_rand();
				probes++;
				bad += memmap_contains(&m, gpa, len) != contains_ref(&m, gpa, len);
			}
		}
		CHECK(bad == 0, "%u of %u probes differ from the linear search", bad, probes);
	}

	/* merging: adjacent, overlapping, out of order */
	reset();
	CHECK(memmap_add(&m, 0x3000, 0x1000) && memmap_add(&m, 0x1000, 0x1000) &&
	      memmap_add(&m, 0x2000, 0x1000), "adds");
	CHECK(m.nr == 1 && m.r[0].base == 0x1000 && m.r[0].size == 0x3000, "merged to one: %u", m.nr);
	memmap_add(&m, 0x10000, 0x1000);
	memmap_add(&m, 0x8000, 0x9000); /* overlaps the last, touches nothing before */
	CHECK(m.nr == 2 && m.r[1].base == 0x8000 && m.r[1].size == 0x9000, "overlap merge");
	memmap_add(&m, 0, 0x100000);
	CHECK(m.nr == 1 && m.r[0].base == 0 && m.r[0].size == 0x100000, "swallow all");
	CHECK(!memmap_add(&m, ~0ull - 10, 100), "wrapping range refused");

	/* removal splits */
	CHECK(memmap_remove(&m, 0x4000, 0x2000), "remove middle");
	CHECK(m.nr == 2 && m.r[0].size == 0x4000 && m.r[1].base == 0x6000, "split");
	memmap_remove(&m, 0, 0x1000);
	memmap_remove(&m, 0xff000, 0x10000);
	CHECK(m.nr == 2 && m.r[0].base == 0x1000 && m.r[1].base + m.r[1].size == 0xff000, "trim ends");
	memmap_remove(&m, 0, ~0ull >> 1);
	CHECK(m.nr == 0, "remove all");

	/* capacity */
	reset();
	bool ok = true;
	for (u32 i = 0; i < HV_MAX_RANGES; i++)
		ok &= memmap_add(&m, i * 0x2000ull, 0x1000);
	CHECK(ok && m.nr == HV_MAX_RANGES, "fill");
	CHECK(!memmap_add(&m, 0x10000000, 0x1000), "full list refuses");

	/* contains */
	reset();
	memmap_add(&m, 0x1000, 0x2000);
	memmap_add(&m, 0x5000, 0x1000);
	CHECK(memmap_contains(&m, 0x1000, 0x2000), "exact");
	CHECK(!memmap_contains(&m, 0x1000, 0x2001), "one past");
	CHECK(!memmap_contains(&m, 0x2fff, 0x2002), "across a gap");
	CHECK(!memmap_contains(&m, 0x1000, 0), "empty length");
	CHECK(!memmap_contains(&m, ~0ull - 4, 16), "wrap");
	CHECK(!memmap_contains(&m, 0x0, 0x10), "below");

	/* hypercall checks: RAM 1 MiB..512 MiB minus a hidden 32 MiB reserve */
	reset();
	memmap_add(&m, 0x100000, 0x1ff00000);
	memmap_remove(&m, 0x1c2bf000, 32 << 20);
	struct hc_args a = { .nr = HVTRACE_HC_VERSION, .cpl = 3 };
	CHECK(hc_check(&a, &m, 2) == 0, "version from CPL 3");
	a = (struct hc_args){ HVTRACE_HC_STATUS, 3, 0x200000, sizeof(struct hvtrace_status), 0 };
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EPERM, "status from CPL 3");
	a.cpl = 0;
	CHECK(hc_check(&a, &m, 2) == 0, "status in RAM");
	a.buf_len = sizeof(struct hvtrace_status) - 1;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EINVAL, "short buffer");
	a.buf_len = 1 << 20; /* only the bytes written must be RAM */
	a.buf_gpa = 0x1c2bf000 - sizeof(struct hvtrace_status);
	CHECK(hc_check(&a, &m, 2) == 0, "large buffer ending at the reserve");
	a.buf_gpa = 0x1c2bf000 - 8;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "buffer running into the reserve");
	a.buf_gpa = 0x1c2bf000 + 0x1000;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "buffer inside the reserve");
	a.buf_gpa = 0xfee00000;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "MMIO");
	a.buf_gpa = ~0ull - 16;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "wrapping address");
	/* per-vCPU status: CPL 0, an existing vCPU, a buffer in RAM */
	a = (struct hc_args){ HVTRACE_HC_VCPU_STATUS, 0, 0x200000, sizeof(struct hvtrace_vcpu_status), 1 };
	CHECK(hc_check(&a, &m, 2) == 0, "vcpu status of vcpu 1 of 2");
	a.index = 2;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EINVAL, "vcpu index past the last");
	a.index = ~0ull;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EINVAL, "huge vcpu index");
	a.index = 0;
	a.cpl = 3;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EPERM, "vcpu status from CPL 3");
	a.cpl = 0;
	a.buf_len = 16;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EINVAL, "vcpu status short buffer");
	a.buf_len = HVTRACE_VCPU_STATUS_SIZE_1_5 - 1;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EINVAL, "vcpu status shorter than ABI 1.5's");
	a.buf_len = HVTRACE_VCPU_STATUS_SIZE_1_5;	/* a 1.5 caller: that layout is written */
	CHECK(hc_check(&a, &m, 2) == 0, "vcpu status, ABI 1.5 size");
	a.buf_gpa = 0x1c2bf000 - HVTRACE_VCPU_STATUS_SIZE_1_5;
	CHECK(hc_check(&a, &m, 2) == 0, "ABI 1.5 size ending at the reserve");
	a.buf_len = sizeof(struct hvtrace_vcpu_status);
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "ABI 1.6 size running into the reserve");
	a.buf_gpa = 0x200000;
	a.buf_len = sizeof(struct hvtrace_vcpu_status);
	a.buf_gpa = 0x1c2bf000 + 0x10;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_EFAULT, "vcpu status into the reserve");
	a.nr = HVTRACE_HC_MAX;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_ENOSYS, "unknown number");
	a.nr = ~0ull;
	CHECK(hc_check(&a, &m, 2) == -HVTRACE_ENOSYS, "huge number");

	/* UEFI memory types */
	static const int ram[] = { 1, 2, 3, 4, 5, 6, 7, 9, 10, 14 };
	static const unsigned not_ram[] = { 0, 8, 11, 12, 13, 15, HVTRACE_EFI_MEMTYPE, 0x70000000 };
	for (unsigned i = 0; i < sizeof(ram) / sizeof(ram[0]); i++)
		CHECK(efi_type_is_ram(ram[i]), "type %d is RAM", ram[i]);
	for (unsigned i = 0; i < sizeof(not_ram) / sizeof(not_ram[0]); i++)
		CHECK(!efi_type_is_ram(not_ram[i]), "type %x is not RAM", not_ram[i]);
	CHECK(!strcmp(efi_status_str(0x800000000000000eull), "Not Found"), "Not Found");
	CHECK(!strcmp(efi_status_str(0), "Success"), "Success");
	CHECK(!strcmp(efi_status_str(0x80000000000000ffull), "error"), "unknown status");
	/* madt_count_cpus: a QEMU-like MADT (4 local APICs, an I/O APIC), an
	 * x2APIC entry, an online-capable one not enabled */
	{
		u8 t[200];
		u32 n = 44, en, hot;
		memset(t, 0, sizeof(t));
		for (int i = 0; i < 4; i++) {	/* type 0: uid, id, flags = enabled */
			u8 e[8] = { 0, 8, (u8)i, (u8)i, 1, 0, 0, 0 };
			memcpy(t + n, e, 8);
			n += 8;
		}
		u8 ioapic[12] = { 1, 12 };
		memcpy(t + n, ioapic, 12);
		n += 12;
		u8 x2[16] = { 9, 16, 0, 0, 0x00, 0x01, 0, 0, 1, 0, 0, 0 };	/* x2APIC 256, enabled */
		memcpy(t + n, x2, 16);
		n += 16;
		u8 hotplug[8] = { 0, 8, 9, 9, 2, 0, 0, 0 };	/* online capable, not enabled */
		memcpy(t + n, hotplug, 8);
		n += 8;
		CHECK(madt_count_cpus(t, n, &en, &hot) == 0 && en == 5 && hot == 1, "madt: %u enabled %u hot",
		      en, hot);
		CHECK(madt_count_cpus(t, 43, &en, &hot) < 0, "madt shorter than its header");
		t[n] = 0;
		t[n + 1] = 40;	/* runs past the end */
		CHECK(madt_count_cpus(t, n + 8, &en, &hot) < 0, "entry past the end");
		t[n + 1] = 0;	/* zero length: no endless loop */
		CHECK(madt_count_cpus(t, n + 8, &en, &hot) < 0, "zero-length entry");
	}
	return unit_done("test_memmap");
}
