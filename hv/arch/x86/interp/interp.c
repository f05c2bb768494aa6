/* hv/arch/x86/interp/interp.c — the interpreter's pure core: one 64-bit-mode instruction at a
 * time on a register file (struct interp_cpu) and a memory interface over linear addresses,
 * all or nothing. Whatever it does not model exactly it leaves to the processor, changing
 * nothing. Freestanding; host-tested against the processor by tests/unit/test_interp.c. */
#include "arch/x86/interp/interp.h"
#include "arch/x86/cond.h"
#include "arch/x86/paging.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI };
enum { SREG_ES, SREG_CS, SREG_SS };	/* interp_cpu.sel[]: ModRM.reg's Sreg order */

/* One step's working state. The instruction changes the caller's register file in place (n);
 * every register it changes is first noted in the undo log, so that a leave after a change (a
 * branch target found non-canonical after the push, the one write refused) puts the state back
 * as it was: all or nothing, without copying the register file at every step. */
#define UNDO_MAX	4	/* at most three registers per instruction (POP r: r and RSP; MUL: rAX, rDX) */
struct step {
	struct interp_cpu *n;		/* the state, changed in place */
	const struct interp_mem_ops *mem;
	void *ctx;
	const struct dec_insn *in;
	const u8 *bytes;
	u64 next;			/* RIP of the next instruction */
	/* what the instruction alone decides: ModRM with REX (grp: ModRM.reg without REX.R, the
	 * group member), the prefixes as written, the first immediate */
	const struct interp_pre *pre;
	/* the memory operand (mod != 3): its offset (what LEA yields) and its linear address */
	u64 ea, lin;
	/* the one write, made last */
	bool wpend;
	u64 wlin, wval;
	unsigned wlen;
	/* a locked read-modify-write (LOCK, XCHG with memory): the value read at the memory
	 * operand, which its write must still find there (mem_ops.cmpxchg) */
	bool locked, have_rval;
	u64 rval;
	/* a control transfer */
	bool branched;
	bool shadow;			/* an STI that set IF */
	bool invlpg;			/* an INVLPG of the page at lin */
	enum interp_leave leave;
	/* the undo log: RIP and RFLAGS as they were, and each register changed, in order */
	u64 rip0, rflags0;
	unsigned nundo;
	u8 undo_r[UNDO_MAX];
	u64 undo_v[UNDO_MAX];
};

static inline __attribute__((always_inline)) u64 mask_of(unsigned w)
{
	return w >= 8 ? ~0ull : (1ull << (w * 8)) - 1;
}

static inline __attribute__((always_inline)) u64 sext(u64 v, unsigned w)
{
	unsigned sh = 64 - w * 8;
	return w >= 8 ? v : (u64)((s64)(v << sh) >> sh);
}

/* SDM Vol. 1 3.3.7.1: canonical in 48 bits, or 57 with 5-level paging (CR4.LA57) */
static inline __attribute__((always_inline)) bool canonical(const struct interp_cpu *c, u64 a)
{
	return c->la57 ? ADDR_CANONICAL(a, 57) : ADDR_CANONICAL(a, 48);
}

static inline __attribute__((always_inline)) bool range_canonical(const struct interp_cpu *c, u64 a, unsigned len)
{
	return canonical(c, a) && canonical(c, a + len - 1);
}

/* --- registers --------------------------------------------------------------------------- */

/* SDM Vol. 1 3.4.1.1: without any REX prefix, byte registers 4-7 are AH CH DH BH */
static inline __attribute__((always_inline)) u64 reg_get(const struct step *s, unsigned r, unsigned w)
{
	if (w == 1 && !s->in->rex && r >= 4 && r < 8)
		return (s->n->gpr[r - 4] >> 8) & 0xff;
	return s->n->gpr[r] & mask_of(w);
}

static bool leave(struct step *s, enum interp_leave why);

/* Every change of a general register: noted in the undo log first. One more than the log
 * holds (no interpreted instruction changes more than three) is not made: the instruction is
 * left, and undone whole. */
static inline __attribute__((always_inline)) void gpr_set(struct step *s, unsigned r, u64 v)
{
	if (s->nundo >= UNDO_MAX) {
		leave(s, INTERP_LEAVE_OPCODE);
		return;
	}
	s->undo_r[s->nundo] = (u8)r;
	s->undo_v[s->nundo] = s->n->gpr[r];
	s->nundo++;
	s->n->gpr[r] = v;
}

/* 32-bit results zero-extend into the whole register; 8- and 16-bit ones merge (SDM Vol. 1
 * 3.4.1.1) */
static inline __attribute__((always_inline)) void reg_set(struct step *s, unsigned r, unsigned w, u64 v)
{
	u64 g;
	if (w == 1 && !s->in->rex && r >= 4 && r < 8) {
		g = s->n->gpr[r - 4];
		gpr_set(s, r - 4, (g & ~0xff00ull) | (v & 0xff) << 8);
		return;
	}
	g = s->n->gpr[r];
	if (w == 4)
		g = v & 0xffffffffull;
	else if (w == 8)
		g = v;
	else
		g = (g & ~mask_of(w)) | (v & mask_of(w));
	gpr_set(s, r, g);
}

/* --- memory ------------------------------------------------------------------------------ */

static bool leave(struct step *s, enum interp_leave why)
{
	if (!s->leave)
		s->leave = why;
	return false;
}

/* The checks the core itself makes before an access (the callback makes the paging ones); any
 * failure leaves, so their order, which decides the processor's fault, does not matter here:
 * canonical (#GP/#SS, SDM Vol. 3 6.15) and alignment (#AC: CR0.AM, RFLAGS.AC, CPL 3). */
static inline __attribute__((always_inline)) bool mem_check(struct step *s, u64 lin, unsigned len)
{
	if (!range_canonical(s->n, lin, len))
		return leave(s, INTERP_LEAVE_CANONICAL);
	if (s->n->cr0_am && s->n->cpl == 3 && (s->n->rflags & RFLAGS_AC) && (lin & (len - 1)))
		return leave(s, INTERP_LEAVE_ALIGN);
	return true;
}

static inline __attribute__((always_inline)) bool mem_read(struct step *s, u64 lin, unsigned len, u64 *v)
{
	u64 x = 0;
	if (!mem_check(s, lin, len))
		return false;
	if (s->mem->read(s->ctx, lin, &x, len) != INTERP_MEM_OK)
		return leave(s, INTERP_LEAVE_MEMORY);
	*v = x & mask_of(len);
	if (s->locked && lin == s->lin) {
		s->rval = *v;
		s->have_rval = true;
	}
	return true;
}

/* Queues the instruction's one write; interp_step makes it after everything else. */
static inline __attribute__((always_inline)) bool mem_write(struct step *s, u64 lin, unsigned len, u64 v)
{
	if (s->wpend)
		return leave(s, INTERP_LEAVE_OPCODE);	/* two writes: not modelled */
	if (!mem_check(s, lin, len))
		return false;
	s->wpend = true;
	s->wlin = lin;
	s->wlen = len;
	s->wval = v;
	return true;
}

/* FS's or GS's base where one overrides; other segments' bases are 0 in 64-bit mode (Vol. 3
 * 3.2.4) */
static inline __attribute__((always_inline)) u64 override_base(const struct step *s)
{
	return s->in->seg == 0x64 ? s->n->fs_base : s->in->seg == 0x65 ? s->n->gs_base : 0;
}

/* SDM Vol. 2A 2.2.1: the effective address in 64-bit mode (ModRM, SIB, RIP-relative), then
 * FS/GS's base if one overrides; other segments' bases are treated as 0 (Vol. 3 3.2.4). */
static inline __attribute__((always_inline)) void modrm_address(struct step *s)
{
	const struct dec_insn *in = s->in;
	u64 ea;
	if (in->rip_relative) {
		ea = s->next + (u64)(s64)in->disp;
	} else if (in->has_sib) {
		unsigned base = (in->sib & 7) | (in->rex & 1) << 3;
		unsigned index = ((in->sib >> 3) & 7) | (in->rex & 2) << 2;
		ea = (u64)(s64)in->disp;
		if (!((in->sib & 7) == 5 && s->pre->mod == 0))
			ea += s->n->gpr[base];
		if (index != RSP)
			ea += s->n->gpr[index] << (in->sib >> 6);
	} else {
		ea = s->n->gpr[s->pre->rm] + (u64)(s64)in->disp;
	}
	if (in->addrsize == 4)
		ea &= 0xffffffffull;
	s->ea = ea;
	s->lin = ea + override_base(s);
}

/* The r/m operand of width w: a register or memory */
static inline __attribute__((always_inline)) bool rm_read(struct step *s, unsigned w, u64 *v)
{
	if (s->pre->mod == 3) {
		*v = reg_get(s, s->pre->rm, w);
		return true;
	}
	return mem_read(s, s->lin, w, v);
}

static inline __attribute__((always_inline)) bool rm_write(struct step *s, unsigned w, u64 v)
{
	if (s->pre->mod == 3) {
		reg_set(s, s->pre->rm, w, v);
		return true;
	}
	return mem_write(s, s->lin, w, v);
}

/* The stack: RSP itself in 64-bit mode (SS's base is 0, Vol. 3 3.4.4), 8 bytes a push or pop
 * (the 66 forms are left) */
static inline __attribute__((always_inline)) bool push(struct step *s, u64 v)
{
	u64 sp = s->n->gpr[RSP] - 8;
	if (!mem_write(s, sp, 8, v))
		return false;
	gpr_set(s, RSP, sp);
	return true;
}

static inline __attribute__((always_inline)) bool pop(struct step *s, u64 *v)
{
	if (!mem_read(s, s->n->gpr[RSP], 8, v))
		return false;
	gpr_set(s, RSP, s->n->gpr[RSP] + 8);
	return true;
}

/* --- immediates and conditions ----------------------------------------------------------- */

/* The first immediate, sign-extended from its size (the SDM's imm8/imm16/imm32 forms) */
static u64 imm_of(const struct dec_insn *in, const u8 *bytes)
{
	u64 v = 0;
	if (!in->imm_size)
		return 0;
	for (unsigned i = 0; i < in->imm_size && i < 8; i++)
		v |= (u64)bytes[in->imm_offset + i] << (i * 8);
	return in->imm_size >= 8 ? v : sext(v, in->imm_size);
}

static inline __attribute__((always_inline)) u64 imm(const struct step *s)
{
	return s->pre->imm;
}

static inline __attribute__((always_inline)) bool alu(struct step *s, enum interp_op op, unsigned w, u64 a, u64 b, u64 *r)
{
	*r = interp_native_alu(op, w, a, b, &s->n->rflags);
	return true;
}

/* --- control transfers ------------------------------------------------------------------- */

static inline __attribute__((always_inline)) bool jump(struct step *s, u64 to)
{
	/* Vol. 2A JMP/CALL/RET: a non-canonical target raises #GP (Intel: at the branch; AMD:
	 * at the target). Either way not ours. */
	if (!canonical(s->n, to))
		return leave(s, INTERP_LEAVE_TARGET);
	s->n->rip = to;
	s->branched = true;
	return true;
}

static inline __attribute__((always_inline)) bool branch_prefix_ok(struct step *s)
{
	/* 66 on a near branch: Intel ignores it in 64-bit mode, AMD makes it a 16-bit transfer
	 * (docs/decoder.md); F2 is MPX's BND prefix. Left to the processor. */
	if ((s->pre->pfx & INTERP_PFX_66) || (s->pre->pfx & INTERP_PFX_F2))
		return leave(s, INTERP_LEAVE_PREFIX);
	if (s->n->cet && s->in->branch != DEC_BR_JCC && s->in->branch != DEC_BR_JMP && s->in->branch != DEC_BR_LOOP)
		return leave(s, INTERP_LEAVE_CET);
	return true;
}

/* Jcc rel8 / rel32 */
static inline __attribute__((always_inline)) bool jcc(struct step *s)
{
	if (!branch_prefix_ok(s))
		return false;
	return x86_cond(s->in->opcode, s->n->rflags) ? jump(s, s->in->target) : true;
}

/* --- the instructions -------------------------------------------------------------------- */

/* Group 2 (C0 C1 D0-D3): shifts and rotates, run in the guest's own form (native.c). A memory
 * destination whose masked count is 0 is left: whether the processor then writes (and sets
 * D) is not documented. */
static bool group2(struct step *s, unsigned w, enum interp_shift form, u8 count)
{
	u64 a;
	if (s->pre->grp == 6)
		return leave(s, INTERP_LEAVE_OPCODE);
	if (s->pre->mod != 3 && (count & (w == 8 ? 0x3f : 0x1f)) == 0)
		return leave(s, INTERP_LEAVE_OPCODE);
	if (!rm_read(s, w, &a))
		return false;
	return rm_write(s, w, interp_native_shift(form, s->pre->mod != 3, s->pre->grp, w, a, count, &s->n->rflags));
}

/* CMPXCHG8B m64 (SDM Vol. 2A CMPXCHG8B/CMPXCHG16B): EDX:EAX compared with the operand; equal:
 * ZF set and ECX:EBX written; else ZF clear, EDX:EAX loaded (each zero-extended: 32-bit
 * destinations) and the operand written back as it was. Only ZF changes. Its LOCK form is
 * the core's locked read-modify-write (exec: the write made only where the read still is). */
static bool cmpxchg8b(struct step *s)
{
	u64 dst, cmp = (s->n->gpr[RDX] & 0xffffffffull) << 32 | (s->n->gpr[RAX] & 0xffffffffull);
	if (!mem_read(s, s->lin, 8, &dst))
		return false;
	bool eq = dst == cmp;
	s->n->rflags = (s->n->rflags & ~RFLAGS_ZF) | (eq ? RFLAGS_ZF : 0);
	if (eq)
		return mem_write(s, s->lin, 8, (s->n->gpr[RCX] & 0xffffffffull) << 32 | (s->n->gpr[RBX] & 0xffffffffull));
	reg_set(s, RAX, 4, dst);
	reg_set(s, RDX, 4, dst >> 32);
	return mem_write(s, s->lin, 8, dst);
}

/* CMPXCHG16B m128: the same with RDX:RAX and RCX:RBX, the operand aligned to 16 (else #GP:
 * the processor's), made by one locked access (interp_mem_ops.cmpxchg16), the LOCK form's and
 * the plain one's alike; the registers change after it, when nothing can fail any more. */
static bool cmpxchg16b(struct step *s)
{
	u64 old[2] = { s->n->gpr[RAX], s->n->gpr[RDX] }, new[2] = { s->n->gpr[RBX], s->n->gpr[RCX] };
	bool done = false;
	if ((s->lin & 15) || !s->mem->cmpxchg16)
		return leave(s, INTERP_LEAVE_OPCODE);
	if (!mem_check(s, s->lin, 16))
		return false;
	if (s->mem->cmpxchg16(s->ctx, s->lin, old, new, &done) != INTERP_MEM_OK)
		return leave(s, INTERP_LEAVE_MEMORY);
	s->n->rflags = (s->n->rflags & ~RFLAGS_ZF) | (done ? RFLAGS_ZF : 0);
	if (!done) {
		gpr_set(s, RAX, old[0]);
		gpr_set(s, RDX, old[1]);
	}
	return true;
}

/* SHLD/SHRD, run in the guest's own form (native.c) as group 2: a memory destination whose
 * masked count is 0 is left. With a count above 16 the 16-bit forms' result and flags are
 * undefined: the processor's own. */
static bool double_shift(struct step *s, unsigned w, bool right, enum interp_shift form, u8 count)
{
	u64 a;
	if (s->pre->mod != 3 && (count & (w == 8 ? 0x3f : 0x1f)) == 0)
		return leave(s, INTERP_LEAVE_OPCODE);
	u64 src = reg_get(s, s->pre->reg, w);
	if (!rm_read(s, w, &a))
		return false;
	return rm_write(s, w, interp_native_shd(right, form, s->pre->mod != 3, w, a, src, count, &s->n->rflags));
}

/* MUL/IMUL/DIV/IDIV's results: AX for byte operands, else rAX and rDX */
static void set_ax_dx(struct step *s, unsigned w, u64 ax, u64 dx)
{
	if (w == 1) {
		reg_set(s, RAX, 2, ax);
		return;
	}
	reg_set(s, RAX, w, ax);
	reg_set(s, RDX, w, dx);
}

/* DIV/IDIV r/m (F6/F7 /6 /7, SDM Vol. 2A): run natively, so only when it cannot raise #DE
 * (that would be the hypervisor's): unsigned, when the dividend's high half is below the
 * divisor; signed, when the dividend is its low half sign-extended (after CBW/CWD/CDQ/CQO,
 * the usual case) and not the most negative value divided by -1. Other signed divisions
 * are left, faulting or not. */
static bool divide(struct step *s, unsigned w)
{
	u64 ax = s->n->gpr[RAX], dx = s->n->gpr[RDX], src, lo, hi;
	if (!rm_read(s, w, &src))
		return false;
	if (w == 1) {
		lo = ax & 0xff;
		hi = (ax >> 8) & 0xff;
	} else {
		lo = ax & mask_of(w);
		hi = dx & mask_of(w);
	}
	if (src == 0)
		return leave(s, INTERP_LEAVE_OPCODE);
	if (s->pre->grp == 6) {
		if (hi >= src)
			return leave(s, INTERP_LEAVE_OPCODE);
	} else {
		u64 sign_fill = (lo >> (w * 8 - 1)) ? mask_of(w) : 0;
		u64 min = 1ull << (w * 8 - 1);
		if (hi != sign_fill || (lo == min && src == mask_of(w)))
			return leave(s, INTERP_LEAVE_OPCODE);
	}
	interp_native_div(s->pre->grp == 7, w, &ax, &dx, src, &s->n->rflags);
	set_ax_dx(s, w, ax, dx);
	return true;
}

/* 00-3D, 80-83: ADD OR ADC SBB AND SUB XOR CMP, destination r/m or reg */
static inline __attribute__((always_inline)) bool arith(struct step *s, enum interp_op op, unsigned w, bool to_reg, bool has_imm, bool to_acc)
{
	u64 a, b, r;
	if (to_acc) {
		a = reg_get(s, RAX, w);
		b = imm(s) & mask_of(w);
		alu(s, op, w, a, b, &r);
		if (op != IOP_CMP && op != IOP_TEST)
			reg_set(s, RAX, w, r);
		return true;
	}
	if (has_imm) {
		b = imm(s) & mask_of(w);
		if (!rm_read(s, w, &a))
			return false;
	} else if (to_reg) {
		a = reg_get(s, s->pre->reg, w);
		if (!rm_read(s, w, &b))
			return false;
	} else {
		b = reg_get(s, s->pre->reg, w);
		if (!rm_read(s, w, &a))
			return false;
	}
	alu(s, op, w, a, b, &r);
	if (op == IOP_CMP || op == IOP_TEST)
		return true;
	if (to_reg) {
		reg_set(s, s->pre->reg, w, r);
		return true;
	}
	return rm_write(s, w, r);
}

static const enum interp_op bt_op[4] = { IOP_BT, IOP_BTS, IOP_BTR, IOP_BTC };

/* BT/BTS/BTR/BTC on the r/m operand (s->lin already moved for bit-string addressing): the bit
 * offset modulo the operand's width; the result written back but for BT (without LOCK: an
 * ordinary read and write, as the processor makes them) */
static bool bit_op(struct step *s, enum interp_op op, unsigned w, u64 offset)
{
	u64 a, r;
	if (!rm_read(s, w, &a))
		return false;
	alu(s, op, w, a, offset & (w * 8 - 1), &r);
	return op == IOP_BT || rm_write(s, w, r);
}

static inline __attribute__((always_inline)) bool exec_0f(struct step *s)
{
	u8 op = s->in->opcode;
	unsigned w = s->in->opsize;
	u64 a, b, r;

	if (op >= 0x80 && op <= 0x8f)		/* Jcc rel32 */
		return jcc(s);
	if (op >= 0x40 && op <= 0x4f) {		/* CMOVcc: the source is read whatever the condition */
		if (!rm_read(s, w, &b))
			return false;
		/* Vol. 2A CMOVcc: in 64-bit mode a 32-bit CMOV zero-extends even when false */
		reg_set(s, s->pre->reg, w, x86_cond(op, s->n->rflags) ? b : reg_get(s, s->pre->reg, w));
		return true;
	}
	if (op >= 0x90 && op <= 0x9f)		/* SETcc r/m8 */
		return rm_write(s, 1, x86_cond(op, s->n->rflags));
	if (op >= 0xc8 && op <= 0xcf) {		/* BSWAP: the 16-bit form is undefined */
		unsigned rr = (op & 7) | (s->in->rex & 1) << 3;
		if (w == 2)
			return leave(s, INTERP_LEAVE_OPCODE);
		a = reg_get(s, rr, w);
		r = __builtin_bswap64(a);
		reg_set(s, rr, w, w == 4 ? r >> 32 : r);
		return true;
	}
	switch (op) {
	case 0x01:	/* 0F 01 /7, memory: INVLPG m (SDM Vol. 2A INVLPG); the rest of group 7 is left */
		if (s->pre->mod == 3 || s->pre->grp != 7 || s->pre->pfx)
			return leave(s, INTERP_LEAVE_OPCODE);
		/* at CPL > 0 a #GP, the processor's; a non-canonical address makes it a NOP, which
		 * the processor then is. No access: no page walk, fault or accessed bit. The
		 * translations' drop is the caller's (interp_result.invlpg) */
		if (s->n->cpl != 0)
			return leave(s, INTERP_LEAVE_OPCODE);
		if (!canonical(s->n, s->lin))
			return leave(s, INTERP_LEAVE_CANONICAL);
		s->invlpg = true;
		return true;
	case 0x1e:	/* F3 0F 1E FA/FB: ENDBR64/ENDBR32, NOPs without CET (Vol. 2A ENDBR64) */
		if ((s->pre->pfx & INTERP_PFX_F3) && s->pre->mod == 3 && (s->in->modrm == 0xfa || s->in->modrm == 0xfb) && !s->n->cet)
			return true;
		return leave(s, INTERP_LEAVE_OPCODE);
	case 0x1f:	/* NOP r/m: no memory access (Vol. 2B NOP) */
		if (s->pre->grp == 0)
			return true;
		return leave(s, INTERP_LEAVE_OPCODE);
	case 0xb0: case 0xb1: {	/* CMPXCHG Eb/Ev, Gb/Gv (Vol. 2A CMPXCHG), memory forms */
		unsigned cw = op == 0xb0 ? 1 : w;
		u64 acc = reg_get(s, RAX, cw), dst;
		/* the register forms write their destination on failure too on some
		 * processors (zero-extending it): left */
		if (s->pre->mod == 3)
			return leave(s, INTERP_LEAVE_OPCODE);
		if (!rm_read(s, cw, &dst))
			return false;
		alu(s, IOP_CMP, cw, acc, dst, &r);
		if (acc == dst)
			return mem_write(s, s->lin, cw, reg_get(s, s->pre->reg, cw));
		/* not equal: the accumulator gets the destination, which is written back as
		 * it was ("the processor never produces a locked read without also producing a
		 * locked write") */
		reg_set(s, RAX, cw, dst);
		return mem_write(s, s->lin, cw, dst);
	}
	case 0xc0: case 0xc1: {	/* XADD Eb/Ev, Gb/Gv (Vol. 2B XADD), memory forms */
		unsigned cw = op == 0xc0 ? 1 : w;
		u64 src, dst;
		if (s->pre->mod == 3)
			return leave(s, INTERP_LEAVE_OPCODE);
		src = reg_get(s, s->pre->reg, cw);
		if (!rm_read(s, cw, &dst))
			return false;
		alu(s, IOP_ADD, cw, dst, src, &r);
		reg_set(s, s->pre->reg, cw, dst);
		return mem_write(s, s->lin, cw, r);
	}
	case 0xaf:	/* IMUL Gv, Ev */
		return rm_read(s, w, &b) && alu(s, IOP_IMUL2, w, reg_get(s, s->pre->reg, w), b, &r) &&
		       (reg_set(s, s->pre->reg, w, r), true);
	case 0xb6: case 0xb7:	/* MOVZX Gv, Eb/Ew */
		if (!rm_read(s, op == 0xb6 ? 1 : 2, &b))
			return false;
		reg_set(s, s->pre->reg, w, b);
		return true;
	case 0xbe: case 0xbf:	/* MOVSX */
		if (!rm_read(s, op == 0xbe ? 1 : 2, &b))
			return false;
		reg_set(s, s->pre->reg, w, sext(b, op == 0xbe ? 1 : 2));
		return true;
	case 0x0d:	/* PREFETCHW m (/1): a hint, no access and no fault (Vol. 2B PREFETCHW), where the
			 * processor has it (interp_cpu.prefetchw); the other members are left */
		if (s->pre->mod != 3 && s->pre->grp == 1 && s->n->prefetchw)
			return true;
		return leave(s, INTERP_LEAVE_OPCODE);
	case 0x18:	/* PREFETCHh m (/0-/3): a hint, no access and no fault (Vol. 2B PREFETCHh) */
		if (s->pre->mod != 3 && s->pre->grp < 4)
			return true;
		return leave(s, INTERP_LEAVE_OPCODE);
	case 0xa3: case 0xab: case 0xb3: case 0xbb:	/* BT/BTS/BTR/BTC Ev, Gv */
		b = reg_get(s, s->pre->reg, w);
		if (s->pre->mod != 3) {
			/* bit-string addressing (Vol. 2A BT): the offset is signed, and the operand
			 * accessed is the w bytes at ea + w * (offset DIV 8w), DIV rounding down
			 * (the 67 form's wrap of that sum is left) */
			if (s->in->addrsize != 8)
				return leave(s, INTERP_LEAVE_OPCODE);
			s->lin += (u64)((s64)sext(b, w) >> (w == 8 ? 6 : w == 4 ? 5 : 4)) * w;
		}
		return bit_op(s, bt_op[(op >> 3) & 3], w, b);
	case 0xc7:	/* group 9 /1, memory: CMPXCHG8B / CMPXCHG16B (REX.W); the rest is left */
		if (s->pre->mod == 3 || s->pre->grp != 1 || s->pre->pfx)
			return leave(s, INTERP_LEAVE_OPCODE);
		return s->in->rex & 8 ? cmpxchg16b(s) : cmpxchg8b(s);
	case 0xa4: case 0xa5: case 0xac: case 0xad:	/* SHLD/SHRD Ev, Gv, Ib/CL (Vol. 2B SHLD, SHRD) */
		return double_shift(s, w, op >= 0xac, (op & 1) ? INTERP_SHIFT_CL : INTERP_SHIFT_IMM,
				    (op & 1) ? (u8)s->n->gpr[RCX] : (u8)imm(s));
	case 0xba:		/* group 8: BT/BTS/BTR/BTC Ev, Ib */
		if (s->pre->grp < 4)
			return leave(s, INTERP_LEAVE_OPCODE);
		return bit_op(s, bt_op[s->pre->grp - 4], w, imm(s) & 0xff);
	case 0xbc: case 0xbd: {	/* BSF/BSR; F3: TZCNT/LZCNT (or BSF/BSR where the processor lacks them) */
		u64 old = s->n->gpr[s->pre->reg];
		enum interp_op bop = (s->pre->pfx & INTERP_PFX_F3) ? (op == 0xbc ? IOP_TZCNT : IOP_LZCNT) : (op == 0xbc ? IOP_BSF : IOP_BSR);
		if (!rm_read(s, w, &b))
			return false;
		/* with a zero source BSF/BSR leave the destination "undefined" (Intel) or unchanged
		 * (AMD): the whole register as the processor leaves it, not a zero-extended guess */
		r = interp_native_alu(bop, w, old, b, &s->n->rflags);
		if (b == 0 && w >= 4)
			gpr_set(s, s->pre->reg, r);
		else
			reg_set(s, s->pre->reg, w, r);
		return true;
	}
	}
	return leave(s, INTERP_LEAVE_OPCODE);
}

/* The privilege level IF changes at: CPL <= IOPL (SDM Vol. 1 3.4.3.3) */
static bool if_allowed(const struct step *s)
{
	return s->n->cpl <= (s->n->rflags & RFLAGS_IOPL) >> RFLAGS_IOPL_SHIFT;
}

/* RFLAGS loaded from an image as POPF and IRET load them: the arithmetic flags, TF, DF, NT, AC, ID
 * and `more`, IF at CPL <= IOPL, IOPL at CPL 0, the rest kept. False (left) where TF, NT, AC,
 * ID, IOPL or one of `more` but RF would change. */
static bool flags_image(struct step *s, u64 img, u64 more, u64 *now)
{
	u64 old = s->n->rflags;
	u64 chg = INTERP_ARITH_FLAGS | RFLAGS_TF | RFLAGS_DF | RFLAGS_NT | RFLAGS_AC | RFLAGS_ID | more;
	if (s->n->cpl == 0)
		chg |= RFLAGS_IOPL;
	if (if_allowed(s))
		chg |= RFLAGS_IF;
	*now = (old & ~chg) | (img & chg);
	return !((*now ^ old) & (RFLAGS_TF | RFLAGS_NT | RFLAGS_AC | RFLAGS_ID | RFLAGS_IOPL | (more & ~RFLAGS_RF)));
}

/* POPF in 64-bit mode (Vol. 2B POPF, protected mode): the arithmetic flags, TF, DF, NT, AC and
 * ID from the image; IF only at CPL <= IOPL, IOPL only at CPL 0 (else silently kept); VIP, VIF
 * and VM unaffected, RF cleared. Interpreted when only the arithmetic flags, DF and IF change:
 * TF would trap after the next instruction, AC changes what the burst's page walk checks
 * (SMAP), NT, IOPL and ID are rare and left. IF going to 1 opens no interrupt shadow (that is
 * STI's); the engine looks for a held interrupt after it. */
static bool popf(struct step *s, u64 img)
{
	u64 now;
	if (!flags_image(s, img, 0, &now))
		return leave(s, INTERP_LEAVE_OPCODE);
	s->n->rflags = now & ~RFLAGS_RF;
	return true;
}

/* IRETQ (Vol. 2A IRET, IA-32e mode): RIP, CS, RFLAGS, RSP and SS popped, in that order.
 * Interpreted only where it returns to the same privilege level with the CS and SS selectors
 * the vCPU already has (an interrupt or exception that came in kernel code; Linux's
 * sync_core(), IRET to itself): their descriptors are then taken as the ones loaded (a guest
 * that rewrote its GDT's entry under a loaded selector and counts on IRET to reload it is
 * outside this), and only when NMIs are not blocked (interp_cpu.iret_ok). RFLAGS as POPF
 * takes them, IF at CPL <= IOPL, IOPL at CPL 0, plus RF, VIF and VIP; a change of TF, NT, AC,
 * ID, IOPL, VIF or VIP, a popped RF, and RFLAGS.NT now (a task return: #GP in IA-32e mode)
 * are left. A non-canonical RIP is left (#GP). */
static bool iretq(struct step *s)
{
	u64 sp = s->n->gpr[RSP], rip, cs, img, rsp, ss;
	if (!(s->in->rex & 8) || (s->pre->pfx & INTERP_PFX_66))
		return leave(s, INTERP_LEAVE_OPCODE);	/* IRETD, IRET: other frames */
	if (!s->n->iret_ok || (s->n->rflags & RFLAGS_NT) || s->n->cet)
		return leave(s, INTERP_LEAVE_OPCODE);
	if (!mem_read(s, sp, 8, &rip) || !mem_read(s, sp + 8, 8, &cs) || !mem_read(s, sp + 16, 8, &img) ||
	    !mem_read(s, sp + 24, 8, &rsp) || !mem_read(s, sp + 32, 8, &ss))
		return false;
	if ((u16)cs != s->n->sel[SREG_CS] || (u16)ss != s->n->sel[SREG_SS])
		return leave(s, INTERP_LEAVE_OPCODE);
	u64 now;
	if (!flags_image(s, img, RFLAGS_RF | RFLAGS_VIF | RFLAGS_VIP, &now) || (now & RFLAGS_RF))
		return leave(s, INTERP_LEAVE_OPCODE);
	if (!jump(s, rip))
		return false;
	s->n->rflags = now;
	gpr_set(s, RSP, rsp);
	return true;
}

/* CLI / STI (Vol. 2A CLI, Vol. 2B STI): at CPL <= IOPL they clear or set IF; otherwise #GP, or
 * VIF with CR4.PVI at CPL 3: left. An STI that sets IF blocks interrupts until the next
 * instruction completes: only when the caller can hold that shadow (interp_cpu.shadow_ok). */
static bool cli_sti(struct step *s, bool sti)
{
	if (!if_allowed(s))
		return leave(s, INTERP_LEAVE_OPCODE);
	if (!sti) {
		s->n->rflags &= ~RFLAGS_IF;
		return true;
	}
	if (!(s->n->rflags & RFLAGS_IF)) {
		if (!s->n->shadow_ok)
			return leave(s, INTERP_LEAVE_OPCODE);
		s->shadow = true;
	}
	s->n->rflags |= RFLAGS_IF;
	return true;
}

/* A REP string instruction's part (interp_cpu.rep_parts): *n of RCX's elements, at
 * most `room` of them (the elements wholly in the pages it touches; 0: the one across a
 * boundary goes alone). 1: go on; 0: RCX is 0, no iteration (the next instruction); -1: left (a
 * part short of RCX where the caller takes none). */
static int rep_part(struct step *s, u64 room, u64 *n)
{
	u64 rcx = s->n->gpr[RCX];
	if (!rcx)
		return 0;
	*n = rcx < room ? rcx : room;
	if (*n < rcx && !s->n->rep_parts) {
		leave(s, INTERP_LEAVE_PREFIX);
		return -1;
	}
	return 1;
}

/* The elements of w bytes from lin to the end of its page */
static inline u64 room_of(u64 lin, unsigned w)
{
	return (PAGE_SIZE - (lin & (PAGE_SIZE - 1))) / w;
}

/* After a part of n elements (at least 1): RCX less n, and while it is not 0 RIP stays at the
 * instruction, which runs again from the next element */
static void rep_next(struct step *s, u64 n)
{
	u64 rcx = s->n->gpr[RCX] - n;
	gpr_set(s, RCX, rcx);
	if (rcx) {
		s->n->rip = s->rip0;
		s->branched = true;
	}
}

/* STOS m8/m16/m32/m64 (AA, AB; Vol. 2B STOS), and with REP (F3) the string of them (Vol. 2B
 * REP): 64-bit addresses only (67h left), ES's base ignored in 64-bit mode. One STOS is the
 * instruction's one write. A REP STOS goes a page at a time: the elements that lie wholly in
 * RDI's page are written by mem_ops.fill, then RCX and RDI move on; while RCX is not 0, RIP
 * stays at the instruction, as after an interrupt between iterations (Vol. 1 7.3.9.1: the
 * processor may take one there), and the caller runs it again (interp_cpu.rep_parts; without
 * it a REP STOS that does not end in the page is left). An element across the page boundary
 * goes alone, as one write. DF set, or no fill callback: left. */
static bool stos(struct step *s, unsigned w)
{
	if (s->in->addrsize != 8)
		return leave(s, INTERP_LEAVE_PREFIX);
	u64 rdi = s->n->gpr[RDI], val = s->n->gpr[RAX] & mask_of(w);
	bool down = s->n->rflags & RFLAGS_DF;
	if (!s->in->rep) {
		if (!mem_write(s, rdi, w, val))
			return false;
		gpr_set(s, RDI, down ? rdi - w : rdi + w);
		return !s->leave;
	}
	if (s->in->rep != 0xf3 || down || !s->mem->fill)
		return leave(s, INTERP_LEAVE_PREFIX);
	u64 n;
	int part = rep_part(s, room_of(rdi, w), &n);
	if (part <= 0)
		return !part;
	if (!n) {
		/* the element across the page boundary, alone */
		if (!mem_write(s, rdi, w, val))
			return false;
		n = 1;
	} else {
		/* the page is within one canonical half if its first byte is (the boundaries are
		 * page aligned); #AC for a misaligned RDI as for any element */
		if (!mem_check(s, rdi, w))
			return false;
		if (s->mem->fill(s->ctx, rdi, val, w, (unsigned)n) != INTERP_MEM_OK)
			return leave(s, INTERP_LEAVE_MEMORY);
	}
	gpr_set(s, RDI, rdi + n * w);
	rep_next(s, n);
	return !s->leave;
}

/* MOVS m, m (A4, A5; Vol. 2B MOVS), and with REP (F3) the string of them: 64-bit addresses only
 * (67h left), from DS:RSI (FS's or GS's base if one overrides; DS's is ignored in 64-bit mode,
 * Vol. 3 3.2.4) to ES:RDI (ES's base ignored, no override). One MOVS: its read, then its one
 * write. A REP MOVS goes a part at a time as REP STOS does (stos, above): the elements that lie
 * wholly in RSI's page and in RDI's page are moved by mem_ops.copy, an element across either
 * page boundary alone (a read and a write), then RCX, RSI and RDI move on and, while RCX is not
 * 0, RIP stays at the instruction. DF set, or no copy callback: left. */
static bool movs(struct step *s, unsigned w)
{
	if (s->in->addrsize != 8)
		return leave(s, INTERP_LEAVE_PREFIX);
	u64 rsi = s->n->gpr[RSI], rdi = s->n->gpr[RDI], v;
	u64 src = rsi + override_base(s);
	bool down = s->n->rflags & RFLAGS_DF;
	if (!s->in->rep) {
		if (!mem_read(s, src, w, &v) || !mem_write(s, rdi, w, v))
			return false;
		gpr_set(s, RSI, down ? rsi - w : rsi + w);
		gpr_set(s, RDI, down ? rdi - w : rdi + w);
		return !s->leave;
	}
	if (s->in->rep != 0xf3 || down || !s->mem->copy)
		return leave(s, INTERP_LEAVE_PREFIX);
	u64 n, room_s = room_of(src, w), room_d = room_of(rdi, w);
	int part = rep_part(s, room_s < room_d ? room_s : room_d, &n);
	if (part <= 0)
		return !part;
	if (!n) {
		/* an element across a page boundary, alone */
		if (!mem_read(s, src, w, &v) || !mem_write(s, rdi, w, v))
			return false;
		n = 1;
	} else {
		/* each page within one canonical half if its first byte is; #AC as for any element */
		if (!mem_check(s, src, w) || !mem_check(s, rdi, w))
			return false;
		if (s->mem->copy(s->ctx, rdi, src, w, (unsigned)n) != INTERP_MEM_OK)
			return leave(s, INTERP_LEAVE_MEMORY);
	}
	gpr_set(s, RSI, rsi + n * w);
	gpr_set(s, RDI, rdi + n * w);
	rep_next(s, n);
	return !s->leave;
}

static inline __attribute__((always_inline)) bool exec_1b(struct step *s)
{
	u8 op = s->in->opcode;
	unsigned w = (op & 1) ? s->in->opsize : 1;	/* the byte forms have the low bit clear */
	u64 a, b, r;

	if (op < 0x40 && (op & 7) < 6) {	/* ADD ... CMP, six forms each */
		enum interp_op aop = (enum interp_op)(op >> 3);
		switch (op & 7) {
		case 0: case 1: return arith(s, aop, w, false, false, false);
		case 2: case 3: return arith(s, aop, w, true, false, false);
		default: return arith(s, aop, w, false, true, true);
		}
	}
	if (op >= 0x50 && op <= 0x57) {		/* PUSH r64 */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		return push(s, s->n->gpr[(op & 7) | (s->in->rex & 1) << 3]);
	}
	if (op >= 0x58 && op <= 0x5f) {		/* POP r64 */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		if (!pop(s, &a))
			return false;
		gpr_set(s, (op & 7) | (s->in->rex & 1) << 3, a);
		return true;
	}
	if (op >= 0x70 && op <= 0x7f)		/* Jcc rel8 */
		return jcc(s);
	if (op >= 0x91 && op <= 0x97) {		/* XCHG rAX, r */
		unsigned rr = (op & 7) | (s->in->rex & 1) << 3;
		w = s->in->opsize;
		a = reg_get(s, RAX, w);
		b = reg_get(s, rr, w);
		reg_set(s, RAX, w, b);
		reg_set(s, rr, w, a);
		return true;
	}
	if (op >= 0xb0 && op <= 0xbf) {		/* MOV r, imm (B8+ with REX.W: imm64) */
		unsigned rr = (op & 7) | (s->in->rex & 1) << 3;
		w = op < 0xb8 ? 1 : s->in->opsize;
		reg_set(s, rr, w, imm(s));
		return true;
	}
	switch (op) {
	case 0x63:		/* MOVSXD Gv, Ed (the 16-bit form is left) */
		if (w == 2)
			return leave(s, INTERP_LEAVE_OPCODE);
		if (!rm_read(s, 4, &b))
			return false;
		reg_set(s, s->pre->reg, w, sext(b, 4));
		return true;
	case 0x68: case 0x6a:	/* PUSH imm (sign-extended to 64 bits) */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		return push(s, imm(s));
	case 0x69: case 0x6b:	/* IMUL Gv, Ev, imm */
		return rm_read(s, s->in->opsize, &b) &&
		       alu(s, IOP_IMUL2, s->in->opsize, b, imm(s) & mask_of(s->in->opsize), &r) &&
		       (reg_set(s, s->pre->reg, s->in->opsize, r), true);
	case 0x80: case 0x81: case 0x83:	/* group 1: imm8, imm, sign-extended imm8 */
		return arith(s, (enum interp_op)s->pre->grp, w, false, true, false);
	case 0x84: case 0x85:
		return arith(s, IOP_TEST, w, false, false, false);
	case 0x86: case 0x87:	/* XCHG; with memory implicitly LOCKed (Vol. 2B XCHG): exec locks it */
		if (s->pre->mod != 3) {
			a = reg_get(s, s->pre->reg, w);
			if (!rm_read(s, w, &b))
				return false;
			reg_set(s, s->pre->reg, w, b);
			return mem_write(s, s->lin, w, a);
		}
		a = reg_get(s, s->pre->reg, w);
		b = reg_get(s, s->pre->rm, w);
		reg_set(s, s->pre->reg, w, b);
		reg_set(s, s->pre->rm, w, a);
		return true;
	case 0x88: case 0x89:	/* MOV Ev, Gv */
		return rm_write(s, w, reg_get(s, s->pre->reg, w));
	case 0x8a: case 0x8b:	/* MOV Gv, Ev */
		if (!rm_read(s, w, &b))
			return false;
		reg_set(s, s->pre->reg, w, b);
		return true;
	case 0x8d:		/* LEA: the offset, no segment base, no access */
		if (s->pre->mod == 3)
			return leave(s, INTERP_LEAVE_INVALID);
		reg_set(s, s->pre->reg, s->in->opsize, s->ea);
		return true;
	case 0x90:		/* NOP (REX.B: XCHG r8, rAX above would be 0x90 with B; F3: PAUSE) */
		if ((s->pre->pfx & INTERP_PFX_F3)) {
			/* PAUSE, a hint: no architectural effect but RIP's (Vol. 2B PAUSE); with
			 * REX.B left (the manuals do not say which of PAUSE and XCHG that is) */
			if (s->in->rex & 1)
				return leave(s, INTERP_LEAVE_OPCODE);
			return true;
		}
		if (s->in->rex & 1) {
			w = s->in->opsize;
			a = reg_get(s, RAX, w);
			b = reg_get(s, 8, w);
			reg_set(s, RAX, w, b);
			reg_set(s, 8, w, a);
		}
		return true;
	case 0xaa: case 0xab:	/* STOS, REP STOS */
		return stos(s, w);
	case 0xa4: case 0xa5:	/* MOVS, REP MOVS */
		return movs(s, w);
	case 0x98:		/* CBW/CWDE/CDQE */
		w = s->in->opsize;
		reg_set(s, RAX, w, sext(reg_get(s, RAX, w / 2), w / 2));
		return true;
	case 0x99:		/* CWD/CDQ/CQO */
		w = s->in->opsize;
		reg_set(s, RDX, w, (reg_get(s, RAX, w) >> (w * 8 - 1)) ? ~0ull : 0);
		return true;
	case 0xa8: case 0xa9:	/* TEST AL/rAX, imm */
		return arith(s, IOP_TEST, w, false, true, true);
	case 0xc0: case 0xc1:
		return group2(s, w, INTERP_SHIFT_IMM, (u8)imm(s));
	case 0xd0: case 0xd1:
		return group2(s, w, INTERP_SHIFT_1, 1);
	case 0xd2: case 0xd3:
		return group2(s, w, INTERP_SHIFT_CL, (u8)s->n->gpr[RCX]);
	case 0xc2: case 0xc3:	/* RET / RET imm16 (F3 C3, "rep ret", is a RET) */
		if (!branch_prefix_ok(s) || !pop(s, &a))
			return false;
		if (op == 0xc2)
			gpr_set(s, RSP, s->n->gpr[RSP] + (imm(s) & 0xffff));
		return jump(s, a);
	case 0xc6: case 0xc7:	/* MOV Ev, imm (/0 only: C6 F8 / C7 F8 are XABORT / XBEGIN) */
		if (s->pre->grp != 0)
			return leave(s, INTERP_LEAVE_OPCODE);
		return rm_write(s, w, imm(s));
	case 0xc9:		/* LEAVE: RSP = RBP, POP RBP */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		if (!mem_read(s, s->n->gpr[RBP], 8, &a))
			return false;
		gpr_set(s, RSP, s->n->gpr[RBP] + 8);
		gpr_set(s, RBP, a);
		return true;
	case 0xe0: case 0xe1: case 0xe2: {	/* LOOPNE, LOOPE, LOOP: RCX only (67: left) */
		bool t;
		if (s->in->addrsize != 8)
			return leave(s, INTERP_LEAVE_PREFIX);
		if (!branch_prefix_ok(s))
			return false;
		gpr_set(s, RCX, s->n->gpr[RCX] - 1);	/* no flags change (Vol. 2A LOOP/LOOPcc) */
		t = s->n->gpr[RCX] != 0;
		if (op == 0xe1)
			t = t && (s->n->rflags & RFLAGS_ZF);
		else if (op == 0xe0)
			t = t && !(s->n->rflags & RFLAGS_ZF);
		return t ? jump(s, s->in->target) : true;
	}
	case 0xe3:		/* JRCXZ / JECXZ (67) */
		if (!branch_prefix_ok(s))
			return false;
		if ((s->n->gpr[RCX] & mask_of(s->in->addrsize)) == 0)
			return jump(s, s->in->target);
		return true;
	case 0xe8:		/* CALL rel32 */
		if (!branch_prefix_ok(s) || !push(s, s->next))
			return false;
		return jump(s, s->in->target);
	case 0xe9: case 0xeb:	/* JMP rel */
		if (!branch_prefix_ok(s))
			return false;
		return jump(s, s->in->target);
	case 0x8c:		/* MOV r/m, Sreg (Vol. 2B MOV): ES ... GS; reg 6 and 7 are #UD */
		if (s->pre->grp > 5)
			return leave(s, INTERP_LEAVE_INVALID);
		if (s->pre->mod != 3)
			return mem_write(s, s->lin, 2, s->n->sel[s->pre->grp]);	/* 16 bits, any size */
		/* a 32- or 64-bit register gets the selector zero-extended, a 16-bit one merges */
		reg_set(s, s->pre->rm, s->in->opsize, s->n->sel[s->pre->grp]);
		return true;
	case 0xcf:		/* IRETQ */
		return iretq(s);
	case 0x9c:		/* PUSHFQ: RF and VM are cleared in the image (Vol. 2B PUSHF) */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		return push(s, s->n->rflags & ~(RFLAGS_RF | RFLAGS_VM));
	case 0x9d:		/* POPFQ */
		if ((s->pre->pfx & INTERP_PFX_66))
			return leave(s, INTERP_LEAVE_PREFIX);
		if (!pop(s, &a))
			return false;
		return popf(s, a);
	case 0xfa: case 0xfb:	/* CLI, STI */
		return cli_sti(s, op == 0xfb);
	case 0xf5: s->n->rflags ^= RFLAGS_CF; return true;	/* CMC */
	case 0xf8: s->n->rflags &= ~RFLAGS_CF; return true;	/* CLC */
	case 0xf9: s->n->rflags |= RFLAGS_CF; return true;	/* STC */
	case 0xfc: s->n->rflags &= ~RFLAGS_DF; return true;	/* CLD */
	case 0xfd: s->n->rflags |= RFLAGS_DF; return true;	/* STD */
	case 0xf6: case 0xf7:	/* group 3 */
		switch (s->pre->grp) {
		case 0:		/* TEST r/m, imm (/1 is an undocumented alias: left) */
			return arith(s, IOP_TEST, w, false, true, false);
		case 2: case 3:
			return rm_read(s, w, &a) && alu(s, s->pre->grp == 2 ? IOP_NOT : IOP_NEG, w, a, 0, &r) &&
			       rm_write(s, w, r);
		case 4: case 5: {
			u64 ax = s->n->gpr[RAX], dx = s->n->gpr[RDX];
			if (!rm_read(s, w, &b))
				return false;
			interp_native_mul(s->pre->grp == 5, w, &ax, &dx, b, &s->n->rflags);
			set_ax_dx(s, w, ax, dx);
			return true;
		}
		case 6: case 7:
			return divide(s, w);
		}
		return leave(s, INTERP_LEAVE_OPCODE);	/* F6/F7 /1: an undocumented TEST */
	case 0xfe: case 0xff:	/* groups 4 and 5 */
		switch (s->pre->grp) {
		case 0: case 1:
			return rm_read(s, w, &a) && alu(s, s->pre->grp ? IOP_DEC : IOP_INC, w, a, 0, &r) &&
			       rm_write(s, w, r);
		}
		if (op == 0xfe)
			return leave(s, INTERP_LEAVE_OPCODE);
		switch (s->pre->grp) {
		case 2:		/* CALL r/m64: the target is read before the push */
			if (!branch_prefix_ok(s) || !rm_read(s, 8, &a) || !push(s, s->next))
				return false;
			return jump(s, a);
		case 4:		/* JMP r/m64 */
			if (!branch_prefix_ok(s) || !rm_read(s, 8, &a))
				return false;
			return jump(s, a);
		case 6:		/* PUSH r/m64 */
			if ((s->pre->pfx & INTERP_PFX_66))
				return leave(s, INTERP_LEAVE_PREFIX);
			return rm_read(s, 8, &a) && push(s, a);
		}
		return leave(s, INTERP_LEAVE_OPCODE);	/* far CALL/JMP */
	}
	return leave(s, INTERP_LEAVE_OPCODE);
}

/* The fields derived from the instruction alone (struct interp_pre) */
static void derive(const struct dec_insn *in, const u8 *bytes, struct interp_pre *p)
{
	p->mod = p->reg = p->rm = p->grp = 0;
	if (in->has_modrm) {
		p->mod = in->modrm >> 6;
		p->reg = ((in->modrm >> 3) & 7) | (in->rex & 4) << 1;
		p->rm = (in->modrm & 7) | (in->rex & 1) << 3;
		p->grp = (in->modrm >> 3) & 7;
	}
	/* prefix bytes as written (the decoder has already checked their order and count; it
	 * reports REP only for strings) */
	p->pfx = 0;
	for (unsigned i = 0; i < in->nprefixes; i++) {
		switch (bytes[i]) {
		case 0x66: p->pfx |= INTERP_PFX_66; break;
		case 0xf2: p->pfx = (p->pfx & ~INTERP_PFX_F3) | INTERP_PFX_F2; break;
		case 0xf3: p->pfx = (p->pfx & ~INTERP_PFX_F2) | INTERP_PFX_F3; break;
		}
	}
	p->leave = INTERP_LEAVE_NONE;
	bool rep_string = in->map == 0 && ((in->opcode | 1) == 0xab || (in->opcode | 1) == 0xa5);
	if (in->encoding != DEC_ENC_LEGACY || (in->rep && !rep_string) ||
	    (p->pfx & INTERP_PFX_F2) ||
	    ((p->pfx & INTERP_PFX_F3) && !(in->map == 1 && (in->opcode == 0x1e || in->opcode == 0xbc || in->opcode == 0xbd)) &&
	     !(in->map == 0 && (in->opcode == 0xc3 || in->opcode == 0x90)) && !rep_string))
		/* F2/F3 select other instructions (POPCNT, string forms...) or are hints we do not
		 * model; the ones kept: ENDBR, TZCNT/LZCNT, PAUSE, "rep ret", REP STOS and REP MOVS */
		p->leave = INTERP_LEAVE_PREFIX;
	p->imm = imm_of(in, bytes);
	p->valid = true;
}

/* A leave after the instruction changed registers: each change undone, the last first */
static int undo(struct step *s)
{
	for (unsigned i = s->nundo; i--;)
		s->n->gpr[s->undo_r[i]] = s->undo_v[i];
	s->n->rip = s->rip0;
	s->n->rflags = s->rflags0;
	return s->leave;
}

/* The result's fields every outcome has (the instruction's for coverage once decoded) */
static void result_init(struct interp_result *out)
{
	out->leave = INTERP_LEAVE_NONE;
	out->len = out->map = out->opcode = out->modrm_reg = 0;
	out->encoding = DEC_ENC_LEGACY;
	out->branch = DEC_BR_NONE;
	out->taken = false;
	out->shadow = false;
	out->invlpg = false;
}

/* What no decoded form decides: the mode, RFLAGS.TF, a canonical RIP */
static int state_leave(const struct interp_cpu *cpu)
{
	if (cpu->mode != DEC_MODE_64)
		return INTERP_LEAVE_MODE;
	/* a single-step trap after the instruction (SDM Vol. 3 18.3.1.4) is the processor's */
	if (cpu->rflags & RFLAGS_TF)
		return INTERP_LEAVE_TRAP;
	if (!canonical(cpu, cpu->rip))
		return INTERP_LEAVE_FETCH;
	return INTERP_LEAVE_NONE;
}

/* A leave: the instruction's coverage fields, the state as it was */
static int left(struct step *s, const struct interp_pre *pre, struct interp_result *out)
{
	out->map = s->in->map;
	out->opcode = s->in->opcode;
	out->encoding = s->in->encoding;
	/* 0F 01's register forms are each another instruction (RDTSCP, SWAPGS, CLAC...; SDM
	 * Vol. 2 A.4.2 table A-6): their whole ModRM byte, C0-FF, which no ModRM.reg can be,
	 * so that INVLPG (0F 01 /7, memory) and RDTSCP (0F 01 F9) are not counted as one */
	out->modrm_reg = s->in->map == 1 && s->in->opcode == 0x01 && pre->mod == 3 ? s->in->modrm : pre->grp;
	return out->leave = undo(s);
}

/* interp_exec but for its state checks (the caller's: interp_exec_next) */
static inline __attribute__((always_inline)) int exec(struct interp_cpu *cpu, const struct interp_mem_ops *mem,
							void *ctx, const u8 *bytes, const struct dec_insn *in,
							struct interp_pre *pre, struct interp_result *out)
{
	struct step s;
	struct interp_pre local;
	u64 from = cpu->rip;

	if (!pre)
		pre = &local, local.valid = false;
	if (!pre->valid)
		derive(in, bytes, pre);
	s.bytes = bytes;
	s.in = in;
	out->len = in->len;
	out->branch = in->branch;
	out->taken = false;
	out->shadow = false;
	out->invlpg = false;
	s.n = cpu;
	s.mem = mem;
	s.ctx = ctx;
	s.next = from + in->len;
	s.pre = pre;
	s.rip0 = from;
	s.rflags0 = cpu->rflags;
	/* a locked read-modify-write (the decoder let LOCK only on a lockable instruction with
	 * a memory destination; XCHG with memory locks without it): its write is made only if
	 * the memory still holds what it read; if another processor wrote there meanwhile, the
	 * instruction runs again on the new value, as the processor's locked access would have
	 * seen it */
	s.locked = in->lock || (in->map == 0 && (in->opcode | 1) == 0x87 && pre->mod != 3);
	for (unsigned tries = 0;; tries++) {
		s.wpend = s.branched = s.shadow = s.have_rval = s.invlpg = false;
		s.leave = pre->leave;
		s.nundo = 0;
		if (s.locked && !mem->cmpxchg)
			s.leave = in->lock ? INTERP_LEAVE_PREFIX : INTERP_LEAVE_OPCODE;
		if (!s.leave) {
			if (in->has_modrm && pre->mod != 3)
				modrm_address(&s);
			if (in->map == 0)
				exec_1b(&s);
			else if (in->map == 1)
				exec_0f(&s);
			else
				s.leave = INTERP_LEAVE_OPCODE;
		}
		if (s.leave)
			return left(&s, pre, out);

		if (!s.branched)
			cpu->rip = s.next;
		if (!s.wpend)
			break;
		/* the write, last: the callback makes all of it or none */
		if (!s.locked) {
			if (mem->write(ctx, s.wlin, &s.wval, s.wlen) != INTERP_MEM_OK) {
				s.leave = INTERP_LEAVE_MEMORY;
				return left(&s, pre, out);
			}
			break;
		}
		/* every lockable instruction reads its destination before it writes it */
		if (!s.have_rval || s.wlin != s.lin) {
			s.leave = INTERP_LEAVE_OPCODE;
			return left(&s, pre, out);
		}
		bool done = false;
		u64 seen = s.rval;
		if (mem->cmpxchg(ctx, s.wlin, &seen, s.wval, s.wlen, &done) != INTERP_MEM_OK || (!done && tries >= 7)) {
			s.leave = INTERP_LEAVE_MEMORY;
			return left(&s, pre, out);
		}
		if (done)
			break;
		undo(&s);	/* raced: the registers, RIP and RFLAGS as they were, then again */
	}
	/* RF is cleared when an instruction completes (SDM Vol. 3 18.3.1.1) */
	cpu->rflags &= ~RFLAGS_RF;
	out->shadow = s.shadow;
	if (__builtin_expect(s.invlpg, 0)) {
		out->invlpg = true;
		out->inval = s.lin;
	}
	if (in->branch != DEC_BR_NONE) {
		out->taken = s.branched;
		out->from = from;
		out->to = cpu->rip;
	}
	return out->leave = INTERP_LEAVE_NONE;
}

int interp_exec(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, const u8 *bytes,
		const struct dec_insn *in, struct interp_pre *pre, struct interp_result *out)
{
	result_init(out);
	if ((out->leave = state_leave(cpu)))
		return out->leave;
	return exec(cpu, mem, ctx, bytes, in, pre, out);
}

int interp_exec_next(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, const u8 *bytes,
		     const struct dec_insn *in, struct interp_pre *pre, struct interp_result *out)
{
	return exec(cpu, mem, ctx, bytes, in, pre, out);
}

int interp_step(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, struct interp_result *out)
{
	const u8 *bytes;
	const struct dec_insn *in;
	struct interp_pre *pre = NULL;
	struct dec_insn dec;
	u8 buf[15];
	int st;

	result_init(out);
	if ((out->leave = state_leave(cpu)))
		return out->leave;
	if (mem->decode) {
		st = mem->decode(ctx, cpu->rip, &bytes, &in, &pre);
	} else {
		unsigned got = mem->fetch(ctx, cpu->rip, buf, sizeof(buf));
		if (got > sizeof(buf))
			got = 0;
		st = dec_decode(buf, got, DEC_MODE_64, cpu->rip, &dec);
		bytes = buf;
		in = &dec;
	}
	switch (st) {
	case DEC_OK:
		return interp_exec(cpu, mem, ctx, bytes, in, pre, out);
	case DEC_INVALID:
		return out->leave = INTERP_LEAVE_INVALID;
	default:
		return out->leave = INTERP_LEAVE_FETCH;
	}
}

const char *interp_leave_name(enum interp_leave why)
{
	static const char *const names[INTERP_LEAVE_NREASONS] = {
		[INTERP_LEAVE_NONE] = "none", [INTERP_LEAVE_MODE] = "mode", [INTERP_LEAVE_FETCH] = "fetch",
		[INTERP_LEAVE_INVALID] = "invalid", [INTERP_LEAVE_OPCODE] = "opcode",
		[INTERP_LEAVE_PREFIX] = "prefix", [INTERP_LEAVE_MEMORY] = "memory",
		[INTERP_LEAVE_CANONICAL] = "canonical", [INTERP_LEAVE_ALIGN] = "align",
		[INTERP_LEAVE_TARGET] = "target", [INTERP_LEAVE_TRAP] = "trap", [INTERP_LEAVE_CET] = "cet",
	};
	return (unsigned)why < INTERP_LEAVE_NREASONS ? names[why] : "?";
}
