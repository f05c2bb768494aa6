/* Branch semantics: whether a decoded near transfer is taken and where it
 * goes, from the live guest state (flags, RCX, the stack, the ModRM
 * operand), before it runs. Used by the fast engine to plan its stops and
 * host-tested on its own (tests/unit/test_branch.c). Root mode. */
#include "hvtrace/abi.h"
#include "arch/x86/cond.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "trace/branch.h"

/* The record kind and branch type of a decoded transfer. */
u8 rec_kind_of(const struct dec_insn *in, u32 *type)
{
	static const u8 types[] = {
		[DEC_BR_JCC] = HVTRACE_BR_JCC, [DEC_BR_LOOP] = HVTRACE_BR_LOOP,
		[DEC_BR_JMP] = HVTRACE_BR_JMP, [DEC_BR_JMP_IND] = HVTRACE_BR_JMP_IND,
		[DEC_BR_CALL] = HVTRACE_BR_CALL, [DEC_BR_CALL_IND] = HVTRACE_BR_CALL_IND,
		[DEC_BR_RET] = HVTRACE_BR_RET, [DEC_BR_JMP_FAR] = HVTRACE_BR_FAR_JMP,
		[DEC_BR_CALL_FAR] = HVTRACE_BR_FAR_CALL, [DEC_BR_RET_FAR] = HVTRACE_BR_FAR_RET,
		[DEC_BR_IRET] = HVTRACE_BR_IRET, [DEC_BR_SYSCALL] = HVTRACE_BR_SYSCALL,
		[DEC_BR_SYSRET] = HVTRACE_BR_SYSRET, [DEC_BR_SYSENTER] = HVTRACE_BR_SYSENTER,
		[DEC_BR_SYSEXIT] = HVTRACE_BR_SYSEXIT,
	};
	u32 t = in->branch < ARRAY_SIZE(types) ? types[in->branch] : 0;
	*type = t ? t : HVTRACE_BR_OTHER;
	return t && t <= HVTRACE_BR_RET ? HVTRACE_REC_BRANCH : HVTRACE_REC_FAR;
}

/* --- branch semantics ---------------------------------------------------- */

/* SDM Vol. 2A Jcc / Table B-1: condition codes (arch/x86/cond.h); LOOPcc and JrCXZ. */
bool branch_taken(const struct dec_insn *insn, u64 rflags, u64 rcx)
{
	bool zf = rflags & RFLAGS_ZF;
	u8 op = insn->opcode;

	if (insn->branch == DEC_BR_LOOP) {
		u64 mask = insn->addrsize == 8 ? ~0ull : insn->addrsize == 4 ? 0xffffffffull : 0xffff;
		rcx &= mask;
		switch (op) {
		case 0xe3: return rcx == 0;			/* JrCXZ */
		case 0xe2: return rcx != 1;			/* LOOP */
		case 0xe1: return rcx != 1 && zf;		/* LOOPE */
		case 0xe0: return rcx != 1 && !zf;		/* LOOPNE */
		}
		return false;
	}
	return x86_cond(op, rflags);
}

bool is_legacy_op(const struct dec_insn *insn, u8 map, u8 op)
{
	return insn->encoding == DEC_ENC_LEGACY && insn->map == map && insn->opcode == op;
}

static u64 trunc_to(u64 v, unsigned bytes)
{
	return bytes >= 8 ? v : v & ((1ull << (bytes * 8)) - 1);
}

/* The linear address of the top of the guest's stack: RSP in 64-bit mode,
 * else SS.base + ESP or SP as SS.B says (SDM Vol. 3 3.4.5, 6.2.3). */
u64 stack_top(struct vcpu *v, enum dec_mode mode)
{
	struct hv_segment ss;
	u64 sp = v->gpr[GPR_RSP];
	if (mode == DEC_MODE_64)
		return sp;
	hv.ops->get_seg(v, SEG_SS, &ss);
	return ss.base + trunc_to(sp, (ss.attr & SEG_ATTR_DB) ? 4 : 2);
}

/* The memory or register operand of a near indirect JMP/CALL (FF /2, /4):
 * SDM Vol. 2A 2.1.5 and 2.2.1 (ModRM, SIB, RIP-relative, REX). 16-bit
 * addressing is left to the single-step fallback. */
static bool rm_operand(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 *val)
{
	u8 mod = in->modrm >> 6, rm = in->modrm & 7;
	u8 rexb = (in->rex >> 0) & 1, rexx = (in->rex >> 1) & 1;

	if (mod == 3) {
		*val = trunc_to(v->gpr[rm | (rexb << 3)], in->opsize);
		return true;
	}
	if (in->addrsize == 2)
		return false;
	u64 ea = (u64)(s64)in->disp;
	bool ss_default = false;
	if (in->rip_relative) {
		ea += v->rip + in->len;
	} else if (in->has_sib) {
		u8 base = in->sib & 7, index = (in->sib >> 3) & 7, scale = in->sib >> 6;
		u8 idx = index | (rexx << 3);
		if (idx != 4)
			ea += v->gpr[idx] << scale;
		if (!(base == 5 && mod == 0)) {
			ea += v->gpr[base | (rexb << 3)];
			ss_default = base == 4 || base == 5;
		}
	} else if (!(rm == 5 && mod == 0)) {
		ea += v->gpr[rm | (rexb << 3)];
		ss_default = rm == 5;
	}
	ea = trunc_to(ea, in->addrsize);

	/* segment base: only FS/GS count in 64-bit mode */
	struct hv_segment seg;
	enum hv_seg s = ss_default ? SEG_SS : SEG_DS;
	switch (in->seg) {
	case 0x26: s = SEG_ES; break;
	case 0x2e: s = SEG_CS; break;
	case 0x36: s = SEG_SS; break;
	case 0x3e: s = SEG_DS; break;
	case 0x64: s = SEG_FS; break;
	case 0x65: s = SEG_GS; break;
	}
	if (mode != DEC_MODE_64 || s == SEG_FS || s == SEG_GS) {
		hv.ops->get_seg(v, s, &seg);
		ea += seg.base;
	}
	*val = 0;
	return gmem_read_linear(v, ea, val, in->opsize) == in->opsize;
}

/* Where the near branch `in` at RIP goes, computed before it runs.
 * Returns false for kinds left to the single-step fallback. */
bool resolve_near(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 cs_base,
		  bool *taken, u64 *to)
{
	u64 next = trunc_to(v->rip + in->len, mode == DEC_MODE_64 ? 8 : mode == DEC_MODE_32 ? 4 : 2);
	u64 target;
	switch (in->branch) {
	case DEC_BR_JCC:
	case DEC_BR_LOOP:
		*taken = branch_taken(in, v->rflags, v->gpr[GPR_RCX]);
		*to = cs_base + (*taken ? in->target : next);
		return true;
	case DEC_BR_JMP:
	case DEC_BR_CALL:
		*taken = true;
		*to = cs_base + in->target;
		return true;
	case DEC_BR_RET: {
		u64 sp = stack_top(v, mode);
		target = 0;
		if (gmem_read_linear(v, sp, &target, in->opsize) != in->opsize)
			return false;
		*taken = true;
		*to = cs_base + trunc_to(target, in->opsize);
		return true;
	}
	case DEC_BR_JMP_IND:
	case DEC_BR_CALL_IND:
		if (!rm_operand(v, in, mode, &target))
			return false;
		*taken = true;
		*to = cs_base + trunc_to(target, in->opsize);
		return true;
	default:
		return false;
	}
}

/* Which decoded kinds end a block for the fast engine. */
bool ends_block(const struct dec_insn *in)
{
	switch (in->branch) {
	case DEC_BR_NONE:
	case DEC_BR_XBEGIN:
	case DEC_BR_UD:
		return false;
	default:
		return true;
	}
}

/* SDM Vol. 2, "Flags Affected: None": MOV (88-8B, B0-BF, C6/C7 /0), LEA,
 * NOP (90, which is also PAUSE and XCHG r8, rAX; 0F 1F), PUSH and POP of
 * a register (50-5F in every mode), MOVZX, MOVSX and CMOVcc (which reads
 * them). Not every such instruction, only ones common between a Jcc and
 * where its two paths meet; a fault on one leaves the flags as they were
 * too. */
bool keeps_flags(const struct dec_insn *in)
{
	if (in->encoding != DEC_ENC_LEGACY || in->branch != DEC_BR_NONE)
		return false;
	u8 op = in->opcode;
	if (in->map == 0)
		return (op >= 0x88 && op <= 0x8b) || op == 0x8d || (op >= 0xb0 && op <= 0xbf) || op == 0x90 ||
		       (op >= 0x50 && op <= 0x5f) || ((op == 0xc6 || op == 0xc7) && !((in->modrm >> 3) & 7));
	if (in->map == 1)
		return op == 0x1f || (op >= 0x40 && op <= 0x4f) || op == 0xb6 || op == 0xb7 || op == 0xbe ||
		       op == 0xbf;
	return false;
}
