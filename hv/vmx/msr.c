/* The MSR bitmap (SDM Vol. 3 25.6.9): one 4 KiB page, four 1 KiB bitmaps
 * (read low, read high, write low, write high) of one bit per MSR for
 * 0x0-0x1fff and 0xc0000000-0xc0001fff. A set bit makes RDMSR/WRMSR exit;
 * MSRs outside both ranges always exit (26.1.3), which is how the SVM MSRs
 * (VM_CR, VM_HSAVE_PA...) reach core/msr.c and get #GP as on the SVM side. */
#include "arch/x86/msr.h"
#include "core/mm.h"
#include "vmx/vmx.h"

#define BITMAP_READ_LOW		0x000
#define BITMAP_WRITE_LOW	0x800

/* read and write of one MSR in 0x0-0x1fff (the only range used so far) */
static void msr_bitmap_intercept_low(u8 *bm, u32 msr)
{
	bm[BITMAP_READ_LOW + msr / 8] |= (u8)(1u << (msr % 8));
	bm[BITMAP_WRITE_LOW + msr / 8] |= (u8)(1u << (msr % 8));
}

int vmx_msr_bitmap_build(u64 *bitmap_pa)
{
	u8 *bm = mm_alloc_pages(1, bitmap_pa);
	if (!bm)
		return HV_ERR_NO_MEMORY;
	/* VMX is hidden: IA32_FEATURE_CONTROL reads as locked with VMX off
	 * (core/msr.c), the capability MSRs #GP as on a CPU without VMX. */
	msr_bitmap_intercept_low(bm, MSR_IA32_FEATURE_CONTROL);
	for (u32 msr = MSR_IA32_VMX_BASIC; msr <= MSR_IA32_VMX_EXIT_CTLS2; msr++)
		msr_bitmap_intercept_low(bm, msr);
	return HV_OK;
}
