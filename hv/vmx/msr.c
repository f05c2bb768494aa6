/* The MSR bitmap (SDM Vol. 3 25.6.9): one 4 KiB page, four 1 KiB bitmaps
 * (read low, read high, write low, write high) of one bit per MSR for
 * 0x0-0x1fff and 0xc0000000-0xc0001fff. A set bit makes RDMSR/WRMSR exit;
 * MSRs outside both ranges always exit (26.1.3), which is how the SVM MSRs
 * (VM_CR, VM_HSAVE_PA...) reach dispatch/msr.c and get #GP as on the SVM side.
 * Also the I/O bitmaps (25.6.4), the counterpart of the SVM I/O map. */
#include "arch/x86/msr.h"
#include "base/mm.h"
#include "dispatch/msr.h"
#include "dispatch/dispatch.h"
#include "vmx/vmx.h"

#define BITMAP_READ_LOW		0x000
#define BITMAP_READ_HIGH	0x400
#define BITMAP_WRITE_LOW	0x800
#define BITMAP_WRITE_HIGH	0xc00

#define BITMAP_READ	1u
#define BITMAP_WRITE	2u

/* reads and/or writes (`rw`) of one MSR in 0x0-0x1fff or
 * 0xc0000000-0xc0001fff; MSRs outside both exit anyway */
static void msr_bitmap_intercept(u8 *bm, u32 msr, u32 rw)
{
	u32 rd, wr;
	if (msr < 0x2000) {
		rd = BITMAP_READ_LOW;
		wr = BITMAP_WRITE_LOW;
	} else if (msr - 0xc0000000u < 0x2000) {
		rd = BITMAP_READ_HIGH;
		wr = BITMAP_WRITE_HIGH;
		msr -= 0xc0000000u;
	} else {
		return;
	}
	if (rw & BITMAP_READ)
		bm[rd + msr / 8] |= (u8)(1u << (msr % 8));
	if (rw & BITMAP_WRITE)
		bm[wr + msr / 8] |= (u8)(1u << (msr % 8));
}

/* the bitmap every vCPU's VMCS points at */
static u8 *shared_bm;

int vmx_msr_bitmap_build(u64 *bitmap_pa)
{
	u8 *bm = shared_bm = mm_alloc_pages(1, bitmap_pa);
	if (!bm)
		return HV_ERR_NO_MEMORY;
	/* every MSR core owns: EFER, the Debug Store MSRs (hv/trace/ds.c),
	 * IA32_FEATURE_CONTROL and the VMX capability MSRs (VMX hidden) */
	for (u32 i = 0; i < hv_nr_owned_msrs; i++)
		for (u32 msr = hv_owned_msrs[i].first; msr <= hv_owned_msrs[i].last; msr++)
			msr_bitmap_intercept(bm, msr, BITMAP_READ | BITMAP_WRITE);
	for (u32 i = 0; i < hv_nr_write_owned_msrs; i++)
		msr_bitmap_intercept(bm, hv_write_owned_msrs[i], BITMAP_WRITE);
	return HV_OK;
}

/* hv_arch_ops.intercept_msr_read: the processor consults the bitmap as
 * the guest runs RDMSR (SDM Vol. 3 26.1.3), so it holds from this vCPU's
 * next entry; one byte written by one vCPU (dispatch/msr.c's flag), the
 * processors only read it */
void vmx_intercept_msr_read(u32 msr)
{
	msr_bitmap_intercept(shared_bm, msr, BITMAP_READ);
}

/* I/O bitmaps A (ports 0-0x7fff) and B (0x8000-0xffff), SDM Vol. 3
 * 25.6.4, in two consecutive pages: one bit per port, set only for the
 * ports dispatch/ioport.c names (an access exits when any port it covers
 * has its bit set, 26.1.3). */
int vmx_io_bitmap_build(u64 *bitmaps_pa)
{
	u8 *bm = mm_alloc_pages(2, bitmaps_pa);
	if (!bm)
		return HV_ERR_NO_MEMORY;
	io_bitmap_fill(bm);
	return HV_OK;
}
