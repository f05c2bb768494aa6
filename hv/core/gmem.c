/* Guest page walks (Intel SDM Vol. 3 4.3-4.5, AMD APM Vol. 2 5.2-5.3):
 * 32-bit, PAE and 4/5-level paging, read-only (accessed/dirty bits are the
 * guest's business). Runs in root mode on exits. */
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "core/gmem.h"
#include "core/lib.h"
#include "core/memmap.h"
#include "core/mm.h"
#include "core/vcpu.h"

static bool read_gpa(u64 gpa, void *buf, size_t len)
{
	if (!memmap_contains(&hv.guest_ram, gpa, len))
		return false;
	memcpy(buf, guest_pa_ptr(gpa), len);
	return true;
}

static bool walk_long(u64 cr3, u64 gva, int levels, u64 *gpa)
{
	u64 table = cr3 & PTE_ADDR_MASK;
	for (int l = levels - 1; l >= 0; l--) {
		unsigned shift = PAGE_SHIFT + 9 * l;
		u64 e;
		if (!read_gpa(table + ((gva >> shift) & 511) * 8, &e, 8) || !(e & PTE_P))
			return false;
		if (l == 0 || ((e & PTE_PS) && l <= 2)) {
			u64 mask = (1ull << shift) - 1;
			*gpa = ((e & PTE_ADDR_MASK) & ~mask) | (gva & mask);
			return true;
		}
		table = e & PTE_ADDR_MASK;
	}
	return false;
}

static bool walk_pae(u64 cr3, u64 gva, u64 *gpa)
{
	u64 pdpte, e;
	if (!read_gpa((cr3 & 0xffffffe0ull) + ((gva >> 30) & 3) * 8, &pdpte, 8) || !(pdpte & PTE_P))
		return false;
	if (!read_gpa((pdpte & PTE_ADDR_MASK) + ((gva >> 21) & 511) * 8, &e, 8) || !(e & PTE_P))
		return false;
	if (e & PTE_PS) {
		*gpa = (e & PTE_ADDR_MASK & ~(PAGE_2M - 1)) | (gva & (PAGE_2M - 1));
		return true;
	}
	if (!read_gpa((e & PTE_ADDR_MASK) + ((gva >> 12) & 511) * 8, &e, 8) || !(e & PTE_P))
		return false;
	*gpa = (e & PTE_ADDR_MASK) | (gva & 0xfff);
	return true;
}

static bool walk_32(u64 cr3, u64 cr4, u64 gva, u64 *gpa)
{
	u32 e;
	if (!read_gpa((cr3 & 0xfffff000ull) + ((gva >> 22) & 1023) * 4, &e, 4) || !(e & PTE_P))
		return false;
	if ((e & PTE_PS) && (cr4 & CR4_PSE)) {
		/* SDM 4.3: PDE bits 20:13 are physical-address bits 39:32 */
		*gpa = (e & 0xffc00000ull) | ((u64)(e >> 13) & 0xff) << 32 | (gva & 0x3fffff);
		return true;
	}
	if (!read_gpa((e & 0xfffff000ull) + ((gva >> 12) & 1023) * 4, &e, 4) || !(e & PTE_P))
		return false;
	*gpa = (e & 0xfffff000ull) | (gva & 0xfff);
	return true;
}

bool gmem_translate(struct vcpu *v, u64 gva, u64 *gpa)
{
	u64 cr0 = hv.ops->get_cr(v, 0), cr3 = hv.ops->get_cr(v, 3), cr4 = hv.ops->get_cr(v, 4);
	if (!(cr0 & CR0_PG)) {
		*gpa = gva & 0xffffffffull;
		return true;
	}
	if (hv.ops->get_efer(v) & EFER_LMA)
		return walk_long(cr3, gva, (cr4 & CR4_LA57) ? 5 : 4, gpa);
	if (cr4 & CR4_PAE)
		return walk_pae(cr3, gva & 0xffffffffull, gpa);
	return walk_32(cr3, cr4, gva & 0xffffffffull, gpa);
}

size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		u64 gpa, chunk = MIN(len - done, PAGE_SIZE - ((gva + done) & (PAGE_SIZE - 1)));
		if (!gmem_translate(v, gva + done, &gpa) || !read_gpa(gpa, (u8 *)buf + done, chunk))
			break;
		done += chunk;
	}
	return done;
}
