/* Access to guest memory on the guest's behalf: guest-linear to
 * guest-physical translation through the guest's own page tables, and
 * copies that only ever touch guest RAM (never the hypervisor's ranges,
 * never MMIO; code is also fetched from the firmware's reserved memory). */
#ifndef HV_BASE_GMEM_H
#define HV_BASE_GMEM_H
#include "arch/x86/types.h"
#include "arch/x86/decode/decode.h"
#include "arch/x86/paging.h"
#include "arch/x86/pgwalk.h"
struct vcpu;
/* What the strict walk (arch/x86/pgwalk.h) of this vCPU's accesses now
 * depends on: its control registers, EFER, CPL, RFLAGS.AC (PKRU not read:
 * pkru_known false; ad_set false) */
void gmem_walk_ctl(struct vcpu *v, struct pgwalk_ctl *c);
bool gmem_translate(struct vcpu *v, u64 gva, u64 *gpa);
/* Copies all len bytes at guest-physical gpa (guest RAM only), or none. */
bool gmem_read_phys(u64 gpa, void *buf, size_t len);
/* Copies up to len bytes at guest-linear gva; returns how many could be read. */
size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len);
/* The same for the guest's code at gva, which may also lie in the
 * firmware's reserved memory (hv.guest_code): instruction bytes only. */
size_t gmem_fetch_linear(struct vcpu *v, u64 gva, void *buf, size_t len);
/* Writes all len bytes or none (every page present, writable, guest RAM);
 * sets accessed/dirty bits as the processor does. */
bool gmem_write_linear(struct vcpu *v, u64 gva, const void *buf, size_t len);

/* Translations of a few linear pages kept across exits, each checked at
 * every use against the paging-structure entries it came from (gmem.c):
 * the _cached copies behave as the plain ones, walking only when the
 * guest changed what the walk read. For the guest's own buffers. */
struct gmem_xlat {
	u64 cr3, lin, gpa;	/* the root it was walked from; the linear and guest-physical page */
	u64 *ent[PAGING_LEVELS_MAX];	/* the entries walked, root first (guest RAM) */
	u64 val[PAGING_LEVELS_MAX];		/* ... and what the walk left in them */
	u8 levels;		/* entries walked; 0: none kept */
	u8 mode;		/* 4- or 5-level paging */
	bool write;		/* walked for writing: every level writable, D set */
};
#define GMEM_XLAT_WAYS	4
struct gmem_xlat_cache {
	struct gmem_xlat e[GMEM_XLAT_WAYS];
	u32 next;
};
void gmem_xlat_flush(struct gmem_xlat_cache *c);
/* The guest's paging root and mode, which kept translations are keyed
 * by: read once for copies between which nothing can change them (one
 * record, one plan; never across an emulated MOV to a CR). */
struct gmem_xlat_key {
	u64 cr3;
	u64 levels;	/* 4 or 5; 0: legacy paging or none, nothing kept */
};
struct gmem_xlat_key gmem_xlat_key(struct vcpu *v);
size_t gmem_read_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			       void *buf, size_t len);
bool gmem_write_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			      const void *buf, size_t len);
/* Whether all len bytes at gva can be read and equal `expect`. */
bool gmem_equal_linear_cached(struct vcpu *v, struct gmem_xlat_cache *c, const struct gmem_xlat_key *k, u64 gva,
			      const void *expect, size_t len);

/* A burst's pins (trace/interp_engine.c: one interpreted burst, at most its budget, in
 * which the guest cannot load CR3 or a mode: those instructions end it). A page's
 * translation, once found exact through the cache above, is used for the rest of the
 * burst without reading its entries again: what a TLB may do (SDM Vol. 3 4.10.2.3:
 * translations may be used until invalidated, and invalidating ones end the burst). */
#define GMEM_PIN_WAYS	2
struct gmem_pin {
	bool on;
	bool wrote;		/* a write went through a pin: the read TLB is emptied at the end */
	struct gmem_xlat_key key;
	struct { u64 page; u8 *host; bool write; } e[GMEM_PIN_WAYS];
	u32 used, next;
};
void gmem_pin_begin(struct vcpu *v, struct gmem_pin *pin);
void gmem_pin_end(struct vcpu *v, struct gmem_pin *pin);
/* A pin's answer for len bytes at gva within one page, or NULL (inline: the records' path) */
static inline void *gmem_pin_hit(struct gmem_pin *pin, u64 gva, size_t len, bool write)
{
	u64 page = gva & ~(PAGE_SIZE - 1), off = gva & (PAGE_SIZE - 1);
	if (!pin->on || off + len > PAGE_SIZE)
		return NULL;
	for (u32 i = 0; i < pin->used; i++)
		if (pin->e[i].page == page && (pin->e[i].write || !write)) {
			pin->wrote |= write;
			return pin->e[i].host + off;
		}
	return NULL;
}
/* The host's pointer to len bytes at gva within one page, through the pins, else the cache
 * (and pinned); NULL where the cached path would refuse, or the bytes cross a page. */
void *gmem_pin_ptr(struct vcpu *v, struct gmem_xlat_cache *c, struct gmem_pin *pin, u64 gva, size_t len,
		   bool write);

/* The guest's code: its mode from CS (and CS's base, 0 in 64-bit mode)... */
enum dec_mode gmem_code_mode(struct vcpu *v, u64 *cs_base);
/* ...the linear address of its RIP (CS base + RIP)... */
u64 gmem_linear_rip(struct vcpu *v);
/* ...and the instruction at linear `lin` (RIP `rip`) decoded: a
 * dec_decode() status; `bytes` (15) gets what could be read. */
int gmem_decode(struct vcpu *v, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes,
		struct dec_insn *in);
/* A MOV to or from a control or debug register (0F 20-23 /r, SDM Vol. 2B):
 * the opcode, the CR/DR number (ModRM.reg with REX.R), the general register
 * (ModRM.rm with REX.B), the code's mode. */
struct hv_mov_crdr {
	u8 opcode;
	int reg, gpr;
	enum dec_mode mode;
};
/* Decodes the instruction at the guest's RIP (base/insn.c); false when the bytes there
 * are not such a MOV (unreadable, or changed under us). */
bool hv_decode_mov_crdr(struct vcpu *v, struct hv_mov_crdr *m);

#endif
