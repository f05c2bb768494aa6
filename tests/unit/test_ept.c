/* EPT building (hv/vmx/ept.c over hv/base/pgbuild.c): memory types per
 * range (guest RAM write-back, everything else uncacheable), the
 * hypervisor's pages sunk, the largest pages that keep one type per leaf,
 * and EPT's entry format, checked by walking the tables it built. */
#include <string.h>
#include "unit.h"
#include "arch/x86/paging.h"
#include "base/memmap.h"
#include "base/pgbuild.h"
#include "vmx/ept.h"
#include "vmx/vmx.h"

/* Link seams for ept.c's start-up wrapper (not exercised here). */
struct hv hv;
struct vmx_caps vmx_caps;
void *mm_alloc_pages(u64 n, u64 *pa) { (void)n; (void)pa; return NULL; }
const struct pg_alloc mm_pg_alloc;	/* vmx_ept_build's, unused here */
void log_printf(int level, const char *func, const char *fmt, ...) { (void)level; (void)func; (void)fmt; }
void vmx_vmcs_failed(const char *op, u32 field) { (void)op; (void)field; abort(); }

#define FAKE_PAGES 4096
#include "fake_pages.h"
#define MT(fl) (((fl) >> 3) & 7)

/* va translates to pa with R/W/X, memory type `mt`, a leaf of `leaf` bytes
 * (0: any), and the large-page bit exactly on large leaves */
static void expect(struct pg_builder *b, u64 va, u64 want_pa, unsigned mt, u64 leaf, const char *what)
{
	u64 pa = 0, fl = 0, ls = 0;
	bool ok = pg_translate(b, va, &pa, &fl, &ls);
	CHECK(ok && pa == want_pa && (fl & EPT_RWX) == EPT_RWX && MT(fl) == mt &&
		      (!leaf || ls == leaf) && !!(fl & EPT_LARGE_PAGE) == (ls > PAGE_SIZE),
	      "%s: %llx -> %llx (ok %d) type %llu leaf %llx, want %llx type %u leaf %llx", what,
	      (unsigned long long)va, (unsigned long long)pa, ok, (unsigned long long)MT(fl),
	      (unsigned long long)ls, (unsigned long long)want_pa, mt, (unsigned long long)leaf);
}

/* Non-leaf entries: R/W/X only (29.3.2: bits 7:3 reserved there). */
static void check_tables(const u64 *t, int level)
{
	for (int i = 0; i < 512; i++) {
		u64 e = t[i];
		if (!(e & EPT_READ))
			continue;
		if (level > 0 && !(e & EPT_LARGE_PAGE)) {
			CHECK((e & 0xff8) == 0, "non-leaf entry %llx at level %d has bits 11:3 set",
			      (unsigned long long)e, level);
			check_tables(fake_ptr(NULL, e & PTE_ADDR_MASK), level - 1);
		} else {
			CHECK(MT(e) == VMX_MEMTYPE_WB || MT(e) == VMX_MEMTYPE_UC,
			      "leaf %llx has memory type %llu", (unsigned long long)e,
			      (unsigned long long)MT(e));
			CHECK(level < 3, "a PML4 entry cannot be a leaf");
		}
	}
}

int main(void)
{
	pages = aligned_alloc(4096, (size_t)FAKE_PAGES * 4096);
	struct hv_memmap ram, hidden;
	struct pg_builder b;
	const u64 sink = 0x1c1a0000, res = 0x1c1ad000, res_size = 32 << 20;

	/* A RAM map as OVMF gives it (512 MiB, a hole under 1 MiB, RAM above
	 * 4 GiB) with the reserve carved out, as dispatch/entry.c does. */
	memset(&ram, 0, sizeof(ram));
	memset(&hidden, 0, sizeof(hidden));
	memmap_add(&ram, 0, 0x9f000);
	memmap_add(&ram, 0x100000, 0x1f800000 - 0x100000);
	memmap_add(&ram, 4ull << 30, 2ull << 30);
	memmap_add(&ram, (6ull << 30) + PAGE_2M + 0x3000, 0x5000);
	memmap_add(&hidden, res, res_size);
	memmap_remove(&ram, res, res_size);

	used = 0;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 39, PAGE_1G, &ram, &hidden, sink) == HV_OK, "build");
	/* RAM write-back up to its last page, then uncacheable */
	expect(&b, 0x0, 0x0, VMX_MEMTYPE_WB, PAGE_SIZE, "first page");
	expect(&b, 0x9e123, 0x9e123, VMX_MEMTYPE_WB, PAGE_SIZE, "last page below 640K");
	expect(&b, 0x9f000, 0x9f000, VMX_MEMTYPE_UC, PAGE_SIZE, "EBDA/VGA hole");
	expect(&b, 0xb8000, 0xb8000, VMX_MEMTYPE_UC, PAGE_SIZE, "VGA text");
	expect(&b, 0xff000, 0xff000, VMX_MEMTYPE_UC, PAGE_SIZE, "below 1 MiB");
	expect(&b, 0x100000, 0x100000, VMX_MEMTYPE_WB, PAGE_SIZE, "1 MiB");
	expect(&b, 0x200000, 0x200000, VMX_MEMTYPE_WB, PAGE_2M, "2 MiB leaf in RAM");
	/* the reserve: every page to the sink, write-back */
	expect(&b, res - 1, res - 1, VMX_MEMTYPE_WB, PAGE_SIZE, "below the reserve");
	expect(&b, res, sink, VMX_MEMTYPE_WB, PAGE_SIZE, "reserve start");
	expect(&b, res + 0x12345, sink + 0x345, VMX_MEMTYPE_WB, PAGE_SIZE, "inside the reserve");
	expect(&b, res + res_size - 1, sink + 0xfff, VMX_MEMTYPE_WB, PAGE_SIZE, "reserve end");
	expect(&b, res + res_size, res + res_size, VMX_MEMTYPE_WB, PAGE_SIZE, "above the reserve");
	expect(&b, 0x1f7ff000, 0x1f7ff000, VMX_MEMTYPE_WB, PAGE_2M, "last RAM page below 4G");
	expect(&b, 0x1f800000, 0x1f800000, VMX_MEMTYPE_UC, PAGE_2M, "above RAM: 2 MiB UC");
	expect(&b, 0x40000000, 0x40000000, VMX_MEMTYPE_UC, PAGE_1G, "1 GiB UC leaf");
	expect(&b, 0xfee00000, 0xfee00000, VMX_MEMTYPE_UC, PAGE_1G, "local APIC");
	expect(&b, 4ull << 30, 4ull << 30, VMX_MEMTYPE_WB, PAGE_1G, "RAM above 4G: 1 GiB WB");
	expect(&b, (5ull << 30) + 0x1234, (5ull << 30) + 0x1234, VMX_MEMTYPE_WB, PAGE_1G, "second GiB");
	/* a 4 KiB RAM island in MMIO: UC 2 MiB, UC 4 KiB pages, WB 4 KiB pages */
	expect(&b, 6ull << 30, 6ull << 30, VMX_MEMTYPE_UC, PAGE_2M, "before the island");
	expect(&b, (6ull << 30) + PAGE_2M + 0x2000, (6ull << 30) + PAGE_2M + 0x2000, VMX_MEMTYPE_UC,
	       PAGE_SIZE, "island's UC neighbour");
	expect(&b, (6ull << 30) + PAGE_2M + 0x3000, (6ull << 30) + PAGE_2M + 0x3000, VMX_MEMTYPE_WB,
	       PAGE_SIZE, "island start");
	expect(&b, (6ull << 30) + PAGE_2M + 0x7fff, (6ull << 30) + PAGE_2M + 0x7fff, VMX_MEMTYPE_WB,
	       PAGE_SIZE, "island end");
	expect(&b, (6ull << 30) + PAGE_2M + 0x8000, (6ull << 30) + PAGE_2M + 0x8000, VMX_MEMTYPE_UC,
	       PAGE_SIZE, "after the island");
	expect(&b, 500ull << 30, 500ull << 30, VMX_MEMTYPE_UC, PAGE_1G, "a high BAR");
	expect(&b, (1ull << 39) - 1, (1ull << 39) - 1, VMX_MEMTYPE_UC, PAGE_1G, "the last byte");
	u64 pa, fl, ls;
	CHECK(!pg_translate(&b, 1ull << 39, &pa, &fl, &ls), "nothing past the limit");
	check_tables(fake_ptr(NULL, b.root_pa), 3);
	CHECK(used < 40, "%u table pages", used);

	/* every page sampled: the type follows the RAM map, hidden pages sink */
	for (u64 a = 0; a < (8ull << 30); a += 0x1000 * 997) {
		bool in_hidden = memmap_contains(&hidden, a, 1);
		bool in_ram = memmap_contains(&ram, a, 1);
		expect(&b, a, in_hidden ? sink + (a & 0xfff) : a,
		       in_hidden || in_ram ? VMX_MEMTYPE_WB : VMX_MEMTYPE_UC, 0, "sample");
	}

	/* the debugger's page breakpoints (vmx_ept_set_exec's pg_leaf_flag):
	 * execute taken from one page of a 2 MiB leaf in RAM, read, write
	 * and the memory type kept, its neighbours whole; then given back */
	{
		bool was = false;
		CHECK(pg_leaf_flag(&b, 0x1234000, EPT_EXECUTE, false, &was) && was &&
			      pg_translate(&b, 0x1234567, &pa, &fl, &ls) && pa == 0x1234567 && ls == PAGE_SIZE &&
			      (fl & EPT_RWX) == (EPT_READ | EPT_WRITE) && ((fl >> 3) & 7) == VMX_MEMTYPE_WB,
		      "EPT: a page read-write, not executable, still write-back (flags %llx)", (unsigned long long)fl);
		expect(&b, 0x1235000, 0x1235000, VMX_MEMTYPE_WB, PAGE_SIZE, "its neighbour after the split");
		CHECK(pg_translate(&b, 0x1235000, &pa, &fl, &ls) && (fl & EPT_RWX) == EPT_RWX, "the neighbour executable");
		CHECK(pg_leaf_flag(&b, 0x1234000, EPT_EXECUTE, true, &was) && !was &&
			      pg_translate(&b, 0x1234000, &pa, &fl, &ls) && (fl & EPT_RWX) == EPT_RWX,
		      "EPT: executable again");
		check_tables(fake_ptr(NULL, b.root_pa), 3);
	}

	/* the debugger's page watchpoints (vmx_ept_set_write's pg_leaf_flag): write taken
	 * from a page (read and execute kept: a valid entry, SDM Vol. 3 29.3.3.1, where
	 * write without read would not be), with execute taken too: read alone; then
	 * each given back; the neighbour whole */
	{
		bool was = false;
		CHECK(pg_leaf_flag(&b, 0x1236000, EPT_WRITE, false, &was) && was &&
			      pg_translate(&b, 0x1236abc, &pa, &fl, &ls) && pa == 0x1236abc && ls == PAGE_SIZE &&
			      (fl & EPT_RWX) == (EPT_READ | EPT_EXECUTE) && ((fl >> 3) & 7) == VMX_MEMTYPE_WB,
		      "EPT: a page readable and executable, not writable, still write-back (flags %llx)",
		      (unsigned long long)fl);
		CHECK(pg_leaf_flag(&b, 0x1236000, EPT_EXECUTE, false, &was) && was &&
			      pg_translate(&b, 0x1236000, &pa, &fl, &ls) && (fl & EPT_RWX) == EPT_READ,
		      "EPT: a breakpoint and a watchpoint on one page: read alone (flags %llx)", (unsigned long long)fl);
		CHECK(pg_leaf_flag(&b, 0x1236000, EPT_WRITE, true, &was) && !was &&
			      pg_leaf_flag(&b, 0x1236000, EPT_EXECUTE, true, &was) && !was &&
			      pg_translate(&b, 0x1236000, &pa, &fl, &ls) && (fl & EPT_RWX) == EPT_RWX,
		      "EPT: writable and executable again");
		CHECK(pg_translate(&b, 0x1237000, &pa, &fl, &ls) && (fl & EPT_RWX) == EPT_RWX, "the neighbour whole");
		check_tables(fake_ptr(NULL, b.root_pa), 3);
	}

	/* without 1 GiB pages: 2 MiB leaves where 1 GiB ones were */
	used = 0;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 36, PAGE_2M, &ram, &hidden, sink) == HV_OK, "2M build");
	expect(&b, 4ull << 30, 4ull << 30, VMX_MEMTYPE_WB, PAGE_2M, "2M: RAM above 4G");
	expect(&b, 0x40000000, 0x40000000, VMX_MEMTYPE_UC, PAGE_2M, "2M: MMIO");
	expect(&b, res + 0x1000, sink, VMX_MEMTYPE_WB, PAGE_SIZE, "2M: reserve");

	/* a RAM range overlapping the reserve: the reserve still wins */
	struct hv_memmap all;
	memset(&all, 0, sizeof(all));
	memmap_add(&all, 0, 1ull << 30);
	used = 0;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 32, PAGE_1G, &all, &hidden, sink) == HV_OK, "overlap build");
	expect(&b, res + 0x5000, sink, VMX_MEMTYPE_WB, PAGE_SIZE, "hidden over RAM");
	expect(&b, res - 0x1000, res - 0x1000, VMX_MEMTYPE_WB, PAGE_SIZE, "RAM before hidden");
	expect(&b, 0x3ffff000, 0x3ffff000, VMX_MEMTYPE_WB, 0, "RAM after hidden");
	expect(&b, 1ull << 30, 1ull << 30, VMX_MEMTYPE_UC, PAGE_1G, "past RAM");

	/* refusals: unaligned or unsorted RAM ranges, and running out of pages */
	struct hv_memmap bad;
	memset(&bad, 0, sizeof(bad));
	bad.nr = 1;
	bad.r[0] = (struct hv_memrange){ 0x1800, 0x1000 };
	used = 0;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 32, PAGE_1G, &bad, &hidden, sink) != HV_OK, "unaligned RAM refused");
	bad.nr = 2;
	bad.r[0] = (struct hv_memrange){ 0x200000, 0x1000 };
	bad.r[1] = (struct hv_memrange){ 0x100000, 0x1000 };
	used = 0;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 32, PAGE_1G, &bad, &hidden, sink) != HV_OK, "unsorted RAM refused");
	used = FAKE_PAGES - 3;
	CHECK(vmx_ept_build_tables(&b, &fake, 1ull << 39, PAGE_1G, &ram, &hidden, sink) == HV_ERR_NO_MEMORY, "out of pages");
	free(pages);
	return unit_done("test_ept");
}
