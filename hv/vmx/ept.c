/* Extended page tables (SDM Vol. 3 29.3): guest-physical = host-physical
 * for the whole physical address width, with the largest pages the CPU
 * offers; guest RAM write-back and everything else uncacheable (with EPT the
 * guest's MTRRs are not consulted, 29.3.7.2: the EPT memory type is the
 * MTRR type's replacement); the hypervisor's own ranges replaced by a sink
 * page exactly as hv/svm/npt.c does. Built once at start-up, root mode;
 * afterwards the debugger's page breakpoints take execute from single
 * pages (vmx_ept_set_exec), its page watchpoints write (vmx_ept_set_write). */
#include "arch/x86/paging.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/pgbuild.h"
#include "vmx/ept.h"
#include "vmx/vmx.h"

/*
 * Leaves: read/write/execute, memory type in bits 5:3, "ignore PAT" clear so
 * that the guest's PAT still combines with it as on bare metal (29.3.7.2:
 * EPT WB with a guest PAT UC is UC; EPT UC is UC whatever the PAT says).
 * Non-leaf entries carry only R/W/X (bits 7:3 reserved there, 29.3.2).
 */
int vmx_ept_build_tables(struct pg_builder *b, const struct pg_alloc *a, u64 limit, u64 max_leaf,
			 const struct hv_memmap *ram, const struct hv_memmap *hidden, u64 sink_pa)
{
	if (!pg_init(b, a, max_leaf, EPT_RWX))
		return HV_ERR_NO_MEMORY;
	if (!pg_identity_map_typed(b, limit, ram->r, ram->nr, hidden->r, hidden->nr, sink_pa,
				   EPT_RWX | EPT_MEMTYPE(VMX_MEMTYPE_WB),
				   EPT_RWX | EPT_MEMTYPE(VMX_MEMTYPE_UC)))
		return HV_ERR_NO_MEMORY;
	return HV_OK;
}

/* The tables every vCPU shares, kept for vmx_ept_set_exec */
static struct pg_builder ept;
volatile u32 vmx_ept_gen;

int vmx_ept_build(u64 *eptp)
{
	struct pg_builder b;
	/* 4-level EPT translates 48 bits of guest-physical address */
	u64 sink_pa, limit = MIN(hv.boot.phys_limit, 1ull << 48);
	u8 *sink = mm_alloc_pages(1, &sink_pa);
	int st;

	if (!sink)
		return HV_ERR_NO_MEMORY;
	memset(sink, 0xff, PAGE_SIZE);
	st = vmx_ept_build_tables(&b, &mm_pg_alloc, limit, vmx_caps.ept_max_leaf, &hv.guest_ram, &hv.hidden,
				  sink_pa);
	if (st)
		return st;
	/* the local APIC's page read-only: its writes exit, so that no INIT
	 * or SIPI reaches a processor without the hypervisor (dispatch/mp.c).
	 * EPT's write bit is bit 1, as PTE_RW. */
	if (!pg_set_page_flags(&b, hv.boot.apic_pa & ~(PAGE_SIZE - 1), 0, EPT_WRITE))
		return HV_ERR_NO_MEMORY;
	LOG_INFO("EPT: identity map of %lu GiB in %lu table pages, %lu KiB leaves at most, "
		 "%u RAM ranges write-back", limit >> 30, b.tables, vmx_caps.ept_max_leaf >> 10,
		 hv.guest_ram.nr);
	*eptp = b.root_pa | EPTP_MEMTYPE(vmx_caps.eptp_memtype) | EPTP_WALK_LENGTH_4;
	ept = b;
	return HV_OK;
}

/*
 * The 4 KiB page at gpa executable or not for every vCPU (the debugger's
 * page breakpoints): the leaf's execute bit (29.3.2; reads and writes
 * stay, and read-write without execute is a valid entry, 29.3.3.1), a
 * large page split first, as svm_npt_set_exec does. Each vCPU
 * invalidates its guest-physical mappings at its next entry (INVEPT,
 * 29.4.3.1: vmx_ept_gen): false where the processor has no INVEPT.
 */
/* One permission bit of the 4 KiB leaf at gpa, seen by every vCPU at its next entry */
static bool ept_leaf_bit(u64 gpa, u64 bit, bool on, bool *was)
{
	if (!(vmx_caps.ept_cap & (EPT_CAP_INVEPT_ALL_CONTEXTS | EPT_CAP_INVEPT_SINGLE_CONTEXT)) ||
	    !pg_leaf_flag(&ept, gpa & ~(PAGE_SIZE - 1), bit, on, was))
		return false;
	__atomic_fetch_add(&vmx_ept_gen, 1, __ATOMIC_SEQ_CST);
	return true;
}

bool vmx_ept_set_exec(u64 gpa, bool exec, bool *was)
{
	return ept_leaf_bit(gpa, EPT_EXECUTE, exec, was);
}

/* The same for writing (the debugger's page watchpoints): the leaf's write
 * bit (29.3.2; read without write is a valid entry, 29.3.3.1: a write is
 * then an EPT violation whose qualification says write and readable,
 * 28.2.1). *was: it was writable. */
bool vmx_ept_set_write(u64 gpa, bool write, bool *was)
{
	return ept_leaf_bit(gpa, EPT_WRITE, write, was);
}
