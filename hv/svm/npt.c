/* Nested page tables (AMD APM Vol. 2 15.25): guest-physical = host-physical
 * for the whole physical address width, with the largest pages available;
 * the hypervisor's own ranges are replaced by a sink page, so a guest that
 * reads them sees nothing of ours and its writes change nothing of ours.
 * Afterwards, the debugger's page breakpoints take execute from single
 * pages (svm_npt_set_exec) and write from the debugger's page watchpoints'
 * (svm_npt_set_write). Root mode. */
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/pgbuild.h"
#include "svm/svm.h"

/* The tables every vCPU shares, kept for svm_npt_set_exec */
static struct pg_builder npt;
volatile u32 svm_npt_gen;

int svm_npt_build(u64 *ncr3)
{
	struct cpuid_regs r;
	struct pg_builder b;
	u64 sink_pa, limit = MIN(hv.boot.phys_limit, 1ull << 48);
	/* APM 15.25.5: US must be set on every level of the nested tables */
	const u64 flags = PTE_P | PTE_RW | PTE_US;

	cpuid_count(0x80000001, 0, &r);
	u8 *sink = mm_alloc_pages(1, &sink_pa);
	if (!sink || !pg_init(&b, &mm_pg_alloc, (r.edx & CPUID_80000001_EDX_PAGE1GB) ? PAGE_1G : PAGE_2M, flags))
		return HV_ERR_NO_MEMORY;
	memset(sink, 0xff, PAGE_SIZE);
	if (!pg_identity_map(&b, limit, hv.hidden.r, hv.hidden.nr, sink_pa, flags))
		return HV_ERR_NO_MEMORY;
	/* The local APIC's page is read-only to the guest: its writes exit,
	 * so that no INIT or SIPI reaches a processor without the
	 * hypervisor (dispatch/mp.c; SVM has no INIT/SIPI exits of its own) */
	if (!pg_set_page_flags(&b, hv.boot.apic_pa & ~(PAGE_SIZE - 1), 0, PTE_RW))
		return HV_ERR_NO_MEMORY;
	LOG_INFO("nested paging: identity map of %lu GiB in %lu table pages", limit >> 30, b.tables);
	*ncr3 = b.root_pa;
	npt = b;
	return HV_OK;
}

/*
 * The 4 KiB page at gpa executable or not in the nested tables, for every
 * vCPU (a large page that maps it split first: that needs a table page,
 * false when there is none; the caller splits while every vCPU is held).
 * The leaf's NX (APM Vol. 2 15.25.5: nested tables take NX as the host's
 * EFER.NXE has it, so false without it) is changed by one atomic
 * operation (pg_leaf_flag). *was: it was executable. Each vCPU flushes its guest TLB
 * at its next entry (svm_npt_gen); one that runs meanwhile may still use
 * what it cached.
 */
bool svm_npt_set_exec(u64 gpa, bool exec, bool *was)
{
	if (!(rdmsr(MSR_EFER) & EFER_NXE))
		return false;
	bool nx;
	if (!pg_leaf_flag(&npt, gpa & ~(PAGE_SIZE - 1), PTE_NX, !exec, &nx))
		return false;
	if (was)
		*was = !nx;
	__atomic_fetch_add(&svm_npt_gen, 1, __ATOMIC_SEQ_CST);
	return true;
}

/* The 4 KiB page at gpa writable or not for every vCPU (the debugger's
 * page watchpoints): the leaf's RW (APM Vol. 2 15.25.5: a write the
 * nested tables refuse is a nested page fault, EXITINFO1 bits 0 and 1
 * set), split and seen as for svm_npt_set_exec. *was: it was writable. */
bool svm_npt_set_write(u64 gpa, bool write, bool *was)
{
	if (!pg_leaf_flag(&npt, gpa & ~(PAGE_SIZE - 1), PTE_RW, write, was))
		return false;
	__atomic_fetch_add(&svm_npt_gen, 1, __ATOMIC_SEQ_CST);
	return true;
}
