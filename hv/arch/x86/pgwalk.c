/* hv/arch/x86/pgwalk.c — the interpreting engine's page walk: 4- and 5-level paging with every
 * check the processor makes and no side effect (pgwalk.h). Freestanding, pure; the entries it
 * reads are hostile guest values and each is read exactly once. */
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/pgwalk.h"

/* Bits no entry may have at `level` (0: PT ... 4: PML5) besides the address bits at or above
 * MAXPHYADDR (SDM Vol. 3 Tables 4-15 to 4-20; APM Vol. 2 5.3.3). `leaf`: a page maps here. */
static u64 reserved_bits(const struct pgwalk_ctl *c, int level, bool leaf)
{
	u64 rsv = PTE_ADDR_MASK & ~(c->phys_limit - 1);
	if (!(c->efer & EFER_NXE))
		rsv |= PTE_NX;
	if (level >= 3)
		rsv |= PTE_PS;	/* PML4E/PML5E bit 7 */
	if (!leaf)
		rsv |= PTE_G;	/* AMD: MBZ in the upper levels, Intel: ignored; left either way */
	if (leaf && level == 2)
		rsv |= 0x3fffe000ull;	/* 1-GByte page: bits 29:13 (bit 12 is PAT) */
	if (leaf && level == 1)
		rsv |= 0x1fe000ull;	/* 2-MByte page: bits 20:13 */
	return rsv;
}

int pgwalk(const struct pgwalk_ctl *c, pgwalk_entry_fn entry, void *ctx, u64 lin, enum pgwalk_access acc,
	   u64 *gpa, u64 *page)
{
	/* only IA-32e paging; supervisor protection keys (CR4.PKS) and CET's shadow-stack pages
	 * add checks this walk does not make: the processor makes them */
	if (!(c->cr0 & CR0_PG) || !(c->cr0 & CR0_PE) || !(c->efer & EFER_LMA) || !(c->cr4 & CR4_PAE) ||
	    (c->cr4 & (CR4_PKS | CR4_CET)) || !c->phys_limit || (c->phys_limit & (c->phys_limit - 1)))
		return PGWALK_MODE;
	int levels = (c->cr4 & CR4_LA57) ? 5 : 4;
	if (!ADDR_CANONICAL(lin, levels == 5 ? 57 : 48))
		return PGWALK_CANONICAL;

	bool write = acc == PGWALK_WRITE;
	bool rw = true, us = true, xd = false;
	u64 leaf_e = 0;
	/* CR3 bits 11:0 are flags or the PCID, the root's address bits above MAXPHYADDR must be 0
	 * (SDM Vol. 3 4.5.2; a VM entry would have refused such a CR3, a MOV faults) */
	u64 table = c->cr3 & PTE_ADDR_MASK;
	if (table & ~(c->phys_limit - 1))
		return PGWALK_RESERVED;
	for (int l = levels - 1; l >= 0; l--) {
		unsigned shift = PAGE_SHIFT + 9 * (unsigned)l;
		const u64 *p = entry(ctx, table + ((lin >> shift) & 511) * 8);
		if (!p)
			return PGWALK_NOT_RAM;
		u64 e = __atomic_load_n(p, __ATOMIC_RELAXED);	/* one read: another CPU may write it */
		if (!(e & PTE_P))
			return PGWALK_NOT_PRESENT;
		bool leaf = l == 0 || ((l == 1 || l == 2) && (e & PTE_PS));
		if (leaf && l == 2 && !c->pg1g)
			return PGWALK_RESERVED;	/* PS in a PDPTE without 1-GByte pages */
		if (e & reserved_bits(c, l, leaf))
			return PGWALK_RESERVED;
		/* SDM Vol. 3 4.8: A is set in every entry used, D in the leaf on a write */
		if (!c->ad_set && (!(e & PTE_A) || (write && leaf && !(e & PTE_D))))
			return PGWALK_AD;
		rw = rw && (e & PTE_RW);
		us = us && (e & PTE_US);
		xd = xd || ((c->efer & EFER_NXE) && (e & PTE_NX));
		if (leaf) {
			u64 size = 1ull << shift;
			leaf_e = e;
			*gpa = (e & PTE_ADDR_MASK & ~(size - 1)) | (lin & (size - 1));
			*page = size;
			break;
		}
		table = e & PTE_ADDR_MASK;
	}

	/* SDM Vol. 3 4.6.1: access rights. Every access the interpreter makes is explicit (no
	 * implicit supervisor access to descriptor tables), so CPL alone says user or supervisor. */
	bool user = c->cpl == 3;
	/* SDM Vol. 3 4.6.2: with CR4.PKE every data access to a user-mode address, at any CPL, is
	 * also checked against PKRU for the leaf's key (bits 62:59): AD forbids any data access,
	 * WD writes by user-mode accesses and, with CR0.WP, by supervisor ones. Without PKRU (the
	 * guest's register, in neither the VMCB nor the VMCS: the caller reads it where it can)
	 * such an access is the processor's. Fetches are not checked against keys. */
	if ((c->cr4 & CR4_PKE) && us && acc != PGWALK_FETCH) {
		if (!c->pkru_known)
			return PGWALK_PKEY;
		unsigned key = (unsigned)(leaf_e >> PTE_PKEY_SHIFT) & 15;
		bool ad = (c->pkru >> (2 * key)) & 1, wd = (c->pkru >> (2 * key + 1)) & 1;
		if (ad || (write && wd && (c->cpl == 3 || (c->cr0 & CR0_WP))))
			return PGWALK_RIGHTS;
	}
	if (user) {
		if (!us || (write && !rw) || (acc == PGWALK_FETCH && xd))
			return PGWALK_RIGHTS;
		return PGWALK_OK;
	}
	if (acc == PGWALK_FETCH)
		return xd || (us && (c->cr4 & CR4_SMEP)) ? PGWALK_RIGHTS : PGWALK_OK;
	if (us && (c->cr4 & CR4_SMAP) && !c->ac)
		return PGWALK_RIGHTS;
	if (write && !rw && (c->cr0 & CR0_WP))
		return PGWALK_RIGHTS;
	return PGWALK_OK;
}
