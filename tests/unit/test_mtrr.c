/* The guest's virtual MTRRs (hv/dispatch/mtrr.c): which MSRs exist by
 * IA32_MTRRCAP, the load order, and every #GP case of SDM Vol. 3 12.11
 * (reserved bits, memory types 2, 3, 7 and up, WC without MTRRCAP.WC,
 * address bits at or above MAXPHYADDR); values written read back. */
#include "unit.h"
#include "arch/x86/msr.h"
#include "dispatch/mtrr.h"

#define CAP_FIX (1ull << 8)
#define CAP_WC (1ull << 10)

static struct vmtrr fresh(u64 cap)
{
	struct vmtrr m = { .loaded = true, .cap = cap };
	return m;
}

int main(void)
{
	struct vmtrr m = fresh(8 | CAP_FIX | CAP_WC);
	u64 v = 1;

	/* which MSRs */
	CHECK(mtrr_is_mtrr(MSR_IA32_MTRR_DEF_TYPE) && mtrr_is_mtrr(0x200) && mtrr_is_mtrr(0x21f) &&
		      mtrr_is_mtrr(0x250) && mtrr_is_mtrr(0x258) && mtrr_is_mtrr(0x259) && mtrr_is_mtrr(0x26f),
	      "the MTRRs");
	CHECK(!mtrr_is_mtrr(MSR_IA32_MTRRCAP) && !mtrr_is_mtrr(0x220) && !mtrr_is_mtrr(0x251) &&
		      !mtrr_is_mtrr(0x25a) && !mtrr_is_mtrr(0x267) && !mtrr_is_mtrr(0x270),
	      "not MTRRs");
	u32 n = 0;
	while (mtrr_msr_at(m.cap, n) >= 0)
		n++;
	CHECK(n == 1 + 16 + 11, "DEF_TYPE, 8 pairs, 11 fixed: %u", n);
	CHECK(mtrr_msr_at(m.cap, 0) == MSR_IA32_MTRR_DEF_TYPE && mtrr_msr_at(m.cap, 1) == 0x200 &&
		      mtrr_msr_at(m.cap, 16) == 0x20f && mtrr_msr_at(m.cap, 17) == 0x250 &&
		      mtrr_msr_at(m.cap, 27) == 0x26f,
	      "load order");
	n = 0;
	while (mtrr_msr_at(2, n) >= 0)
		n++;
	CHECK(n == 1 + 4, "no fixed ranges, 2 pairs: %u", n);
	n = 0;
	while (mtrr_msr_at(200, n) >= 0)
		n++;
	CHECK(n == 1 + 32, "VCNT above 16 kept to 16 pairs: %u", n);

	/* DEF_TYPE: Linux's disable and the old value back */
	CHECK(mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, 0, 36) && mtrr_read(&m, MSR_IA32_MTRR_DEF_TYPE, &v) && v == 0,
	      "DEF_TYPE 0: %llx", (unsigned long long)v);
	CHECK(mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, 0xc06, 36) && mtrr_read(&m, MSR_IA32_MTRR_DEF_TYPE, &v) &&
		      v == 0xc06,
	      "DEF_TYPE E|FE|WB");
	for (u64 t = 0; t < 256; t++) {
		bool ok = t == 0 || t == 1 || t == 4 || t == 5 || t == 6;
		CHECK(mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, 0x800 | t, 36) == ok, "DEF_TYPE type %llu",
		      (unsigned long long)t);
	}
	CHECK(!mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, 0x906, 36), "DEF_TYPE bit 8 reserved");
	CHECK(!mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, 0x1806, 36), "DEF_TYPE bit 12 reserved");
	CHECK(!mtrr_write(&m, MSR_IA32_MTRR_DEF_TYPE, (1ull << 63) | 6, 36), "DEF_TYPE bit 63 reserved");
	CHECK(mtrr_read(&m, MSR_IA32_MTRR_DEF_TYPE, &v) && v == 0x806, "a refused write changes nothing: %llx",
	      (unsigned long long)v);

	/* variable ranges */
	CHECK(mtrr_write(&m, 0x204, 0xfee00000ull | 0, 36) && mtrr_write(&m, 0x205, 0xffffff000ull | 0x800, 36),
	      "pair 2: UC at the APIC's page");
	CHECK(mtrr_read(&m, 0x204, &v) && v == 0xfee00000ull, "base back");
	CHECK(mtrr_read(&m, 0x205, &v) && v == 0xffffff800ull, "mask back");
	CHECK(!mtrr_write(&m, 0x204, 0xfee00000ull | 2, 36), "base type 2");
	CHECK(!mtrr_write(&m, 0x204, 0xfee00000ull | 0x100, 36), "base bit 8 reserved");
	CHECK(!mtrr_write(&m, 0x204, 1ull << 36, 36), "base at MAXPHYADDR");
	CHECK(mtrr_write(&m, 0x204, (1ull << 35) | 6, 36), "base below MAXPHYADDR");
	CHECK(!mtrr_write(&m, 0x205, 0x400, 36), "mask bit 10 reserved");
	CHECK(!mtrr_write(&m, 0x205, (1ull << 36) | 0x800, 36), "mask at MAXPHYADDR");
	CHECK(mtrr_write(&m, 0x205, (1ull << 45) | 0x800, 46), "mask below a wider MAXPHYADDR");
	CHECK(!mtrr_write(&m, 0x210, 6, 36) && !mtrr_read(&m, 0x210, &v), "pair 8 of VCNT 8: no such MSR");
	CHECK(mtrr_write(&m, 0x20f, 0, 36), "pair 7 exists");

	/* fixed ranges */
	CHECK(mtrr_write(&m, 0x26f, 0x0506040100060606ull, 36) && mtrr_read(&m, 0x26f, &v) &&
		      v == 0x0506040100060606ull,
	      "FIX4K_F8000 every type");
	CHECK(!mtrr_write(&m, 0x26f, 0x0206060606060606ull, 36), "a byte of type 2");
	CHECK(!mtrr_write(&m, 0x250, 0x0606060606060607ull, 36), "a byte of type 7");
	struct vmtrr nofix = fresh(8);
	CHECK(!mtrr_write(&nofix, 0x250, 0, 36) && !mtrr_read(&nofix, 0x250, &v), "no fixed ranges: #GP");
	struct vmtrr nowc = fresh(8 | CAP_FIX);
	CHECK(!mtrr_write(&nowc, MSR_IA32_MTRR_DEF_TYPE, 0x801, 36), "WC without MTRRCAP.WC");
	CHECK(!mtrr_write(&nowc, 0x258, 0x0101010101010101ull, 36), "fixed WC without MTRRCAP.WC");
	struct vmtrr none = fresh(0);
	CHECK(mtrr_write(&none, MSR_IA32_MTRR_DEF_TYPE, 6, 36), "DEF_TYPE with VCNT 0");
	CHECK(!mtrr_read(&none, 0x200, &v), "no pairs with VCNT 0");
	CHECK(mtrr_load(&m, 0x20e, 0xdeadbeef) && mtrr_read(&m, 0x20e, &v) && v == 0xdeadbeef,
	      "a processor's value loads unchecked");
	CHECK(!mtrr_load(&nofix, 0x268, 1), "no slot, no load");
	return unit_done("test_mtrr");
}
