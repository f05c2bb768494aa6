/* MSR and I/O permission maps (AMD APM Vol. 2 15.10, 15.11): two bits per
 * MSR (read, write) in three 2 KiB blocks; one bit per port in the I/O map
 * (12 KiB: the bits past port 0xFFFF stay clear), set only for the ports
 * dispatch/ioport.c names (an access exits when any of the ports it covers
 * has its bit set, 15.10.1). */
#include "arch/x86/msr.h"
#include "base/mm.h"
#include "dispatch/msr.h"
#include "dispatch/dispatch.h"
#include "svm/svm.h"

#define MSRPM_READ	1u
#define MSRPM_WRITE	2u

static void msrpm_intercept(u8 *pm, u32 msr, u32 rw)
{
	static const u32 base[3] = { 0x00000000, 0xc0000000, 0xc0010000 };
	for (u32 i = 0; i < 3; i++) {
		if (msr - base[i] < 0x2000) {
			u32 bit = i * 0x4000 + (msr - base[i]) * 2;
			pm[bit / 8] |= rw << (bit % 8);
			return;
		}
	}
}

/* the shared MSR permission map (every vCPU's VMCB points at it) */
static u8 *shared_pm;

int svm_msrpm_build(u64 *msrpm_pa, u64 *iopm_pa)
{
	u8 *pm = shared_pm = mm_alloc_pages(2, msrpm_pa), *io;
	if (!pm || !(io = mm_alloc_pages(3, iopm_pa)))
		return HV_ERR_NO_MEMORY;
	io_bitmap_fill(io);
	for (u32 i = 0; i < hv_nr_owned_msrs; i++)
		for (u32 msr = hv_owned_msrs[i].first; msr <= hv_owned_msrs[i].last; msr++)
			msrpm_intercept(pm, msr, MSRPM_READ | MSRPM_WRITE);
	for (u32 i = 0; i < hv_nr_write_owned_msrs; i++)
		msrpm_intercept(pm, hv_write_owned_msrs[i], MSRPM_WRITE);
	/* the segment-base MSRs' writes, for their canonical check
	 * (dispatch/msr.c): QEMU's TCG takes a non-canonical one */
	msrpm_intercept(pm, MSR_FS_BASE, MSRPM_WRITE);
	msrpm_intercept(pm, MSR_GS_BASE, MSRPM_WRITE);
	msrpm_intercept(pm, MSR_KERNEL_GS_BASE, MSRPM_WRITE);
	return HV_OK;
}

/* hv_arch_ops.intercept_msr_read: the processor consults the map as the
 * guest runs RDMSR (APM Vol. 2 15.11), so it holds from this vCPU's next
 * entry; one byte written by one vCPU (dispatch/msr.c's flag), the
 * processors only read it */
void svm_intercept_msr_read(u32 msr)
{
	msrpm_intercept(shared_pm, msr, MSRPM_READ);
}
