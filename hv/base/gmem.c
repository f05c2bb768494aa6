/* Guest page walks (Intel SDM Vol. 3 4.3-4.5, AMD APM Vol. 2 5.2-5.3):
 * 32-bit, PAE and 4/5-level paging. Reads and writes on the guest's behalf
 * (instruction fetch for decoding, the guest's BTS buffer) set the accessed
 * and dirty bits as the processor would. Only guest RAM is ever touched:
 * page tables or buffers that point at MMIO or at the hypervisor fail the
 * walk. Runs in root mode on exits. */
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/lib.h"
#include "base/memmap.h"
#include "base/mm.h"
#include "base/prof.h"
#include "base/vcpu.h"

static void *gpa_ptr(u64 gpa, size_t len)
{
	if (!memmap_contains(&hv.guest_ram, gpa, len))
		return NULL;
	return guest_pa_ptr(gpa);
}

bool gmem_read_phys(u64 gpa, void *buf, size_t len)
{
	const void *p = gpa_ptr(gpa, len);
	if (!p)
		return false;
	memcpy(buf, p, len);
	return true;
}

/* One paging-structure entry: present (and writable for a write) or fail;
 * sets A (and D on the leaf of a write). */
static bool use_entry(u64 *e, bool write, bool leaf, u64 *val)
{
	u64 v = *e;
	if (!(v & PTE_P) || (write && !(v & PTE_RW)))
		return false;
	u64 set = PTE_A | ((write && leaf) ? PTE_D : 0);
	if ((v & set) != set)
		__atomic_fetch_or(e, set, __ATOMIC_RELAXED);
	*val = v;
	return true;
}

static bool use_entry32(u32 *e, bool write, bool leaf, u32 *val)
{
	u32 v = *e;
	if (!(v & PTE_P) || (write && !(v & PTE_RW)))
		return false;
	u32 set = (u32)(PTE_A | ((write && leaf) ? PTE_D : 0));
	if ((v & set) != set)
		__atomic_fetch_or(e, set, __ATOMIC_RELAXED);
	*val = v;
	return true;
}

/* `path`, when given, gets every entry walked and its value as the walk
 * left it (A/D set), for gmem_xlat's check at each later use. */
static bool walk_long(u64 cr3, u64 gva, int levels, bool write, u64 *gpa, struct gmem_xlat *path)
{
	u64 table = cr3 & PTE_ADDR_MASK;
	for (int l = levels - 1; l >= 0; l--) {
		unsigned shift = PAGE_SHIFT + 9 * l;
		u64 *e = gpa_ptr(table + ((gva >> shift) & 511) * 8, 8), v;
		bool large = e && (*e & PTE_PS) && l >= 1 && l <= 2;
		if (!e || !use_entry(e, write, l == 0 || large, &v))
			return false;
		if (path) {
			path->ent[path->levels] = e;
			path->val[path->levels++] = v | PTE_A | ((write && (l == 0 || large)) ? PTE_D : 0);
		}
		if (l == 0 || large) {
			u64 mask = (1ull << shift) - 1;
			*gpa = ((v & PTE_ADDR_MASK) & ~mask) | (gva & mask);
			return true;
		}
		table = v & PTE_ADDR_MASK;
	}
	return false;
}

static bool walk_pae(u64 cr3, u64 gva, bool write, u64 *gpa)
{
	/* SDM 4.4.1: PDPTEs are loaded with CR3 and have no R/W or A bits */
	u64 *pdpte = gpa_ptr((cr3 & 0xffffffe0ull) + ((gva >> 30) & 3) * 8, 8), v;
	if (!pdpte || !(*pdpte & PTE_P))
		return false;
	u64 *e = gpa_ptr((*pdpte & PTE_ADDR_MASK) + ((gva >> 21) & 511) * 8, 8);
	bool large = e && (*e & PTE_PS);
	if (!e || !use_entry(e, write, large, &v))
		return false;
	if (large) {
		*gpa = (v & PTE_ADDR_MASK & ~(PAGE_2M - 1)) | (gva & (PAGE_2M - 1));
		return true;
	}
	e = gpa_ptr((v & PTE_ADDR_MASK) + ((gva >> 12) & 511) * 8, 8);
	if (!e || !use_entry(e, write, true, &v))
		return false;
	*gpa = (v & PTE_ADDR_MASK) | (gva & 0xfff);
	return true;
}

static bool walk_32(u64 cr3, u64 cr4, u64 gva, bool write, u64 *gpa)
{
	u32 *e = gpa_ptr((cr3 & 0xfffff000ull) + ((gva >> 22) & 1023) * 4, 4), v;
	bool large = e && (*e & PTE_PS) && (cr4 & CR4_PSE);
	if (!e || !use_entry32(e, write, large, &v))
		return false;
	if (large) {
		/* SDM 4.3: PDE bits 20:13 are physical-address bits 39:32 */
		*gpa = (v & 0xffc00000ull) | ((u64)(v >> 13) & 0xff) << 32 | (gva & 0x3fffff);
		return true;
	}
	e = gpa_ptr((v & 0xfffff000ull) + ((gva >> 12) & 1023) * 4, 4);
	if (!e || !use_entry32(e, write, true, &v))
		return false;
	*gpa = (v & 0xfffff000ull) | (gva & 0xfff);
	return true;
}

static bool translate_walk(struct vcpu *v, u64 gva, bool write, u64 *gpa)
{
	u64 cr0 = hv.ops->get_cr(v, 0), cr3 = hv.ops->get_cr(v, 3), cr4 = hv.ops->get_cr(v, 4);
	if (!(cr0 & CR0_PG)) {
		*gpa = gva & 0xffffffffull;
		return true;
	}
	if (hv.ops->get_efer(v) & EFER_LMA) {
		/* SDM Vol. 3 4.5: a non-canonical address faults (#GP or #SS)
		 * before any walk; it never aliases a canonical one */
		unsigned bits = (cr4 & CR4_LA57) ? 57 : 48;
		if ((u64)((s64)(gva << (64 - bits)) >> (64 - bits)) != gva)
			return false;
		return walk_long(cr3, gva, bits == 57 ? 5 : 4, write, gpa, NULL);
	}
	if (cr4 & CR4_PAE)
		return walk_pae(cr3, gva & 0xffffffffull, write, gpa);
	return walk_32(cr3, cr4, gva & 0xffffffffull, write, gpa);
}

/* Every walk's time is the walk bucket's (base/prof.h) */
static bool translate(struct vcpu *v, u64 gva, bool write, u64 *gpa)
{
	u32 was = prof_switch(v, HVTRACE_PROF_WALK);
	bool ok = translate_walk(v, gva, write, gpa);
	prof_switch(v, was);
	return ok;
}

bool gmem_translate(struct vcpu *v, u64 gva, u64 *gpa)
{
	return translate(v, gva, false, gpa);
}

void gmem_walk_ctl(struct vcpu *v, struct pgwalk_ctl *c)
{
	struct cpuid_regs r;
	cpuid_count(0x80000001u, 0, &r);
	c->cr0 = hv.ops->get_cr(v, 0);
	c->cr3 = hv.ops->get_cr(v, 3);
	c->cr4 = hv.ops->get_cr(v, 4);
	c->efer = hv.ops->get_efer(v);
	c->phys_limit = hv.boot.phys_limit;
	c->pg1g = r.edx & CPUID_80000001_EDX_PAGE1GB;
	c->cpl = (u8)hv.ops->get_cpl(v);
	c->ac = v->rflags & RFLAGS_AC;
	c->pkru_known = false;	/* the caller reads it when a walk needs it */
	c->ad_set = false;
}

/*
 * Read translations, remembered for the rest of one exit: the engine
 * decodes a block instruction by instruction, and each would walk the
 * same code page again. The guest does not run during an exit, so its
 * page tables hold still; the hypervisor's own writes to guest memory (a
 * BTS record, an A/D bit) forget them all, in case a guest put a buffer
 * over its page tables. Per vCPU (struct vcpu), keyed by exit number and
 * CR3; 4 KiB pages. Another processor's guest may change these page
 * tables meanwhile, as it may under a hardware page walk.
 */
static void read_tlb_flush(struct vcpu *v)
{
	for (u32 i = 0; i < GMEM_TLB_SIZE; i++)
		v->read_tlb[i].exit = ~0ull;
}

static bool translate_read(struct vcpu *v, u64 gva, u64 *gpa)
{
	u64 page = gva & ~(PAGE_SIZE - 1), cr3 = hv.ops->get_cr(v, 3);
	for (u32 i = 0; i < GMEM_TLB_SIZE; i++) {
		if (v->read_tlb[i].exit == v->exits && v->read_tlb[i].cr3 == cr3 &&
		    v->read_tlb[i].lin == page) {
			*gpa = v->read_tlb[i].gpa | (gva & (PAGE_SIZE - 1));
			return true;
		}
	}
	if (!translate(v, gva, false, gpa))
		return false;
	u32 i = v->read_tlb_next++ % GMEM_TLB_SIZE;
	v->read_tlb[i].exit = v->exits;
	v->read_tlb[i].cr3 = cr3;
	v->read_tlb[i].lin = page;
	v->read_tlb[i].gpa = *gpa & ~(PAGE_SIZE - 1);
	return true;
}

/* A write, a read, or a fetch of the guest's code, which may also come
 * from the firmware's reserved memory (hv.guest_code: the AP loop edk2
 * parks processors in; efi-loader/main.c collect_ram). The page tables
 * walked are guest RAM in every case, as their A/D bits are written. */
enum copy_kind { COPY_READ, COPY_WRITE, COPY_FETCH };

static size_t copy_linear(struct vcpu *v, u64 gva, void *buf, size_t len, enum copy_kind kind)
{
	bool write = kind == COPY_WRITE;
	size_t done = 0;
	if (write)
		read_tlb_flush(v);
	while (done < len) {
		u64 gpa, chunk = MIN(len - done, PAGE_SIZE - ((gva + done) & (PAGE_SIZE - 1)));
		void *p;
		bool ok = write ? translate(v, gva + done, true, &gpa) : translate_read(v, gva + done, &gpa);
		if (!ok)
			break;
		if (kind == COPY_FETCH)
			p = memmap_contains(&hv.guest_code, gpa, chunk) ? guest_pa_ptr(gpa) : NULL;
		else
			p = gpa_ptr(gpa, chunk);
		if (!p)
			break;
		if (write)
			memcpy(p, (const u8 *)buf + done, chunk);
		else
			memcpy((u8 *)buf + done, p, chunk);
		done += chunk;
	}
	return done;
}

enum dec_mode gmem_code_mode(struct vcpu *v, u64 *cs_base)
{
	struct hv_segment cs;
	hv.ops->get_seg(v, SEG_CS, &cs);
	if ((cs.attr & SEG_ATTR_L) && (hv.ops->get_efer(v) & EFER_LMA)) {
		*cs_base = 0;
		return DEC_MODE_64;
	}
	*cs_base = cs.base;
	return (cs.attr & SEG_ATTR_DB) ? DEC_MODE_32 : DEC_MODE_16;
}

u64 gmem_linear_rip(struct vcpu *v)
{
	u64 base;
	gmem_code_mode(v, &base);
	return base + v->rip;
}

int gmem_decode(struct vcpu *v, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes,
		struct dec_insn *in)
{
	size_t n = gmem_fetch_linear(v, lin, bytes, 15);
	return dec_decode(bytes, n, mode, rip, in);
}

size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	return copy_linear(v, gva, buf, len, COPY_READ);
}

size_t gmem_fetch_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	return copy_linear(v, gva, buf, len, COPY_FETCH);
}

bool gmem_write_linear(struct vcpu *v, u64 gva, const void *buf, size_t len)
{
	if (!len)
		return true;
	/* a range that wraps past 2^64 is no range of the guest's (hardware
	 * faults on its non-canonical end first) */
	u64 last = gva + len - 1;
	if (last < gva)
		return false;
	/* all or nothing: translate every page for writing before copying */
	read_tlb_flush(v);	/* a walk for writing may set A/D bits */
	for (u64 page = gva >> PAGE_SHIFT; page <= last >> PAGE_SHIFT; page++) {
		u64 gpa, a = page << PAGE_SHIFT;
		if (!translate(v, a < gva ? gva : a, true, &gpa) || !gpa_ptr(gpa, 1))
			return false;
	}
	return copy_linear(v, gva, (void *)buf, len, COPY_WRITE) == len;
}

/*
 * Translations kept across exits for the guest's buffers (its DS save
 * area and BTS buffer: trace/ds.c), so that a record costs no page walk.
 * An entry is used only while exact: at every use the paging-structure
 * entries its walk went through are read again and must hold the values
 * the walk left in them (present, R/W, the address, A and D as set), CR3
 * (PCID included) must be the same and the paging mode (CR0.PG,
 * EFER.LMA, CR4.LA57) too. Those entries and the root decide the walk, so
 * a fresh walk would give the same page, touch no bit, and succeed for
 * writing where the entry was made for writing: any change the guest
 * makes to its page tables (a PTE edited, with or without INVLPG; a table
 * swapped higher up; A or D cleared), a CR3 load or a mode change is seen
 * at the next use, without intercepting INVLPG, INVPCID or MOV to CR3.
 * This is stricter than a TLB (hardware may keep using a stale
 * translation until INVLPG), never looser. Only 4- and 5-level paging is
 * kept (the other modes walk each time); a page that is not wholly guest
 * RAM is never kept. Per vCPU, its own processor only.
 */
void gmem_xlat_flush(struct gmem_xlat_cache *c)
{
	for (u32 i = 0; i < GMEM_XLAT_WAYS; i++)
		c->e[i].levels = 0;
}

struct gmem_xlat_key gmem_xlat_key(struct vcpu *v)
{
	struct gmem_xlat_key k = { 0, 0 };
	if (!(hv.ops->get_cr(v, 0) & CR0_PG) || !(hv.ops->get_efer(v) & EFER_LMA))
		return k;
	k.cr3 = hv.ops->get_cr(v, 3);
	k.levels = (hv.ops->get_cr(v, 4) & CR4_LA57) ? 5 : 4;
	return k;
}

static bool xlat_valid(const struct gmem_xlat *x)
{
	for (u32 i = 0; i < x->levels; i++)
		if (__atomic_load_n(x->ent[i], __ATOMIC_RELAXED) != x->val[i])
			return false;
	return true;
}

/* The host's pointer to `len` bytes at gva (within one page), through the
 * cache, or NULL: only where a walk now would succeed and give that page,
 * and the page is guest RAM. */
static void *xlat_ptr(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
		      size_t len, bool write)
{
	u64 gpa, page = gva & ~(PAGE_SIZE - 1);
	if (!k->levels)
		return translate(v, gva, write, &gpa) ? gpa_ptr(gpa, len) : NULL;
	for (u32 i = 0; i < GMEM_XLAT_WAYS; i++) {
		struct gmem_xlat *x = &c->e[i];
		/* a kept page is wholly guest RAM, which never changes after
		 * start-up (dispatch/entry.c) */
		if (x->levels && x->lin == page && x->cr3 == k->cr3 && x->mode == k->levels &&
		    (x->write || !write) && xlat_valid(x))
			return guest_pa_ptr(x->gpa | (gva & (PAGE_SIZE - 1)));
	}
	/* a walk (and the entry for this page, replacing any other for it) */
	struct gmem_xlat *x = NULL;
	for (u32 i = 0; i < GMEM_XLAT_WAYS && !x; i++)
		if (c->e[i].levels && c->e[i].lin == page)
			x = &c->e[i];
	if (!x)
		x = &c->e[c->next++ % GMEM_XLAT_WAYS];
	x->levels = 0;
	u32 was = prof_switch(v, HVTRACE_PROF_WALK);
	struct gmem_xlat w = { .levels = 0 };
	unsigned bits = k->levels == 5 ? 57 : 48;
	bool ok = (u64)((s64)(gva << (64 - bits)) >> (64 - bits)) == gva &&
		  walk_long(k->cr3, gva, (int)k->levels, write, &gpa, &w);
	prof_switch(v, was);
	if (!ok)
		return NULL;
	if (memmap_contains(&hv.guest_ram, gpa & ~(PAGE_SIZE - 1), PAGE_SIZE)) {
		*x = w;
		x->cr3 = k->cr3;
		x->mode = (u8)k->levels;
		x->lin = page;
		x->gpa = gpa & ~(PAGE_SIZE - 1);
		x->write = write;
	}
	return gpa_ptr(gpa, len);
}

void gmem_pin_begin(struct vcpu *v, struct gmem_pin *pin)
{
	pin->on = true;
	pin->wrote = false;
	pin->key = gmem_xlat_key(v);
	pin->used = pin->next = 0;
}

void gmem_pin_end(struct vcpu *v, struct gmem_pin *pin)
{
	if (pin->wrote)
		read_tlb_flush(v);	/* as gmem_write_linear_cached: it may have written page tables */
	pin->on = false;
	pin->used = 0;
}

void *gmem_pin_ptr(struct vcpu *v, struct gmem_xlat_cache *c, struct gmem_pin *pin, u64 gva, size_t len,
		   bool write)
{
	u64 page = gva & ~(PAGE_SIZE - 1), off = gva & (PAGE_SIZE - 1);
	if (!pin->on || !len || off + len > PAGE_SIZE || !pin->key.levels)
		return NULL;
	u8 *p = gmem_pin_hit(pin, gva, len, write);
	if (p)
		return p;
	p = xlat_ptr(v, c, &pin->key, gva, len, write);
	bool kept = false;	/* only what the cache keeps (wholly guest RAM) is pinned */
	for (u32 i = 0; i < GMEM_XLAT_WAYS && p; i++)
		kept |= c->e[i].levels && c->e[i].lin == page && c->e[i].cr3 == pin->key.cr3 && (c->e[i].write || !write);
	if (!kept) {
		pin->wrote |= p && write;
		return p;
	}
	u32 i = pin->used < GMEM_PIN_WAYS ? pin->used++ : pin->next++ % GMEM_PIN_WAYS;
	pin->e[i].page = page;
	pin->e[i].host = p - off;
	pin->e[i].write = write;
	pin->wrote |= write;
	return p;
}

size_t gmem_read_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			       void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		u64 chunk = MIN(len - done, PAGE_SIZE - ((gva + done) & (PAGE_SIZE - 1)));
		void *p = xlat_ptr(v, c, k, gva + done, chunk, false);
		if (!p)
			break;
		memcpy((u8 *)buf + done, p, chunk);
		done += chunk;
	}
	return done;
}

static bool bytes_equal(const u8 *a, const u8 *b, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		u64 x, y;
		__builtin_memcpy(&x, a + i, 8);
		__builtin_memcpy(&y, b + i, 8);
		if (x != y)
			return false;
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

bool gmem_equal_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			      const void *expect, size_t len)
{
	size_t done = 0;
	while (done < len) {
		u64 chunk = MIN(len - done, PAGE_SIZE - ((gva + done) & (PAGE_SIZE - 1)));
		const void *p = xlat_ptr(v, c, k, gva + done, chunk, false);
		if (!p || !bytes_equal(p, (const u8 *)expect + done, chunk))
			return false;
		done += chunk;
	}
	return true;
}

bool gmem_write_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			      const void *buf, size_t len)
{
	if (!len)
		return true;
	u64 last = gva + len - 1;
	if (last < gva)
		return false;
	read_tlb_flush(v);	/* as gmem_write_linear: it may be writing page tables */
	if ((gva ^ last) < PAGE_SIZE) {	/* one page: nothing written before its check */
		void *p = xlat_ptr(v, c, k, gva, len, true);
		if (p)
			memcpy(p, buf, len);
		return p != NULL;
	}
	for (u64 page = gva >> PAGE_SHIFT; page <= last >> PAGE_SHIFT; page++) {
		u64 a = page << PAGE_SHIFT;
		if (!xlat_ptr(v, c, k, a < gva ? gva : a, 1, true))
			return false;
	}
	/* each page again before its bytes: writing the one before may have
	 * changed its translation (a buffer over its own page tables) */
	size_t done = 0;
	while (done < len) {
		u64 chunk = MIN(len - done, PAGE_SIZE - ((gva + done) & (PAGE_SIZE - 1)));
		void *p = xlat_ptr(v, c, k, gva + done, chunk, true);
		if (!p)
			return false;
		memcpy(p, (const u8 *)buf + done, chunk);
		done += chunk;
	}
	return true;
}
