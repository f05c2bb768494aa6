/* hv/arch/x86/decode/decode.c — x86 instruction length and branch decoder (freestanding, no libc):
 * the entry point, prefix bookkeeping and the ModRM/SIB/displacement/immediate readers the maps
 * share. Validity follows the Intel SDM opcode maps (Vol. 2D Appendix A) and is cross-checked
 * against Zydis. */
#include "internal.h"

/* Makes bytes [pos, pos+n) available. An instruction longer than 15 bytes is rejected as
 * DEC_INVALID (the CPU raises #GP: SDM Vol. 2A 2.3.11, Vol. 3A 6.15 "Interrupt 13");
 * running out of input before that is DEC_TRUNCATED. */
bool need(struct st *s, unsigned n)
{
	if (s->err)
		return false;
	if (s->pos + n > 15) {
		s->err = DEC_INVALID;
		return false;
	}
	if (s->pos + n > s->avail) {
		s->err = DEC_TRUNCATED;
		return false;
	}
	return true;
}

/* Reads ModRM (+SIB, +displacement). force_reg: MOV CR/DR ignore ModRM.mod and always
 * use the register form (SDM Vol. 2B MOV—Move to/from Control Registers). */
bool do_modrm(struct st *s, bool force_reg)
{
	struct dec_insn *o = s->o;
	unsigned disp = 0;

	if (!need(s, 1))
		return false;
	o->has_modrm = true;
	o->modrm_offset = (uint8_t)s->pos;
	o->modrm = s->b[s->pos++];
	uint8_t mod = MOD(o->modrm), rm = RM(o->modrm);
	if (mod == 3 || force_reg)
		return true;
	if (s->asz == 2) {
		/* SDM Vol. 2A Table 2-1: 16-bit addressing, no SIB */
		if (mod == 0 && rm == 6)
			disp = 2;
		else if (mod == 1)
			disp = 1;
		else if (mod == 2)
			disp = 2;
	} else {
		/* SDM Vol. 2A Tables 2-2/2-3 */
		if (rm == 4) {
			if (!need(s, 1))
				return false;
			o->has_sib = true;
			o->sib = s->b[s->pos++];
			if (mod == 0 && (o->sib & 7) == 5)
				disp = 4;
		}
		if (mod == 0 && rm == 5) {
			disp = 4;
			o->rip_relative = s->mode == DEC_MODE_64;
		}
		if (mod == 1)
			disp = 1;
		else if (mod == 2)
			disp = 4;
	}
	if (disp) {
		if (!need(s, disp))
			return false;
		const uint8_t *p = s->b + s->pos;
		if (disp == 1)
			o->disp = (int8_t)p[0];
		else if (disp == 2)
			o->disp = (int16_t)(p[0] | p[1] << 8);
		else
			o->disp = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		o->disp_size = (uint8_t)disp;
		s->pos += disp;
	}
	return true;
}

bool do_imm(struct st *s, unsigned n)
{
	if (!n)
		return true;
	if (!need(s, n))
		return false;
	if (!s->o->imm_size)
		s->o->imm_offset = (uint8_t)s->pos;
	s->o->imm_size = (uint8_t)(s->o->imm_size + n);
	s->pos += n;
	return true;
}

/* Signed little-endian value of the n-byte immediate at offset off. */
int64_t sval(const uint8_t *p, unsigned n)
{
	if (n == 1)
		return (int8_t)p[0];
	if (n == 2)
		return (int16_t)(p[0] | p[1] << 8);
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

uint64_t trunc_ip(uint64_t v, unsigned osz)
{
	if (osz == 2)
		return v & 0xffff;
	if (osz == 4)
		return v & 0xffffffffu;
	return v;
}

unsigned pfx_index(const struct st *s)
{
	switch (s->mand) {
	case 0x66: return 1;
	case 0xf3: return 2;
	case 0xf2: return 3;
	default: return 0;
	}
}

/* Is the (prefix, mod) combination defined in a prefix/form mask? */
bool pfx_ok(const struct st *s, uint8_t mask)
{
	unsigned i = pfx_index(s);
	bool reg = !s->o->has_modrm || MOD(s->o->modrm) == 3;
	return (mask >> (2 * i + (reg ? 0 : 1))) & 1;
}

/* After a mandatory F3/F2 or a mandatory 66, the operand size is what the remaining prefixes
 * say: a 66 that selected the instruction does not also change the operand size. */
void mand_consumed(struct st *s)
{
	if (s->mand == 0x66) {
		s->osz = is64(s) ? ((s->rex & 8) ? 8 : 4) : (s->mode == DEC_MODE_16 ? 2 : 4);
	}
}

bool lock_ok(const struct st *s, bool lockable)
{
	if (!s->o->lock)
		return true;
	return lockable && MOD(s->o->modrm) != 3;
}

int dec_decode(const uint8_t *bytes, size_t avail, enum dec_mode mode, uint64_t rip, struct dec_insn *out)
{
	struct st s = { 0 };
	int rc;

	*out = (struct dec_insn){ 0 };
	s.b = bytes;
	s.avail = avail;
	s.mode = mode;
	s.o = out;

	/* Legacy prefixes, any order and count (SDM Vol. 2A 2.1.1), then REX. */
	for (;;) {
		if (!need(&s, 1))
			return s.err;
		uint8_t c = bytes[s.pos];
		if (mode == DEC_MODE_64 && (c & 0xf0) == 0x40) {
			s.rex = c;
			s.pos++;
			continue;
		}
		switch (c) {
		case 0xf0:
			out->lock = true;
			break;
		case 0xf2: case 0xf3:
			s.last_f2f3 = c;
			s.mand = c;
			break;
		case 0x66:
			s.p66 = true;
			if (s.mand != 0xf2 && s.mand != 0xf3)
				s.mand = 0x66;
			break;
		case 0x67:
			s.p67 = true;
			break;
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
			out->seg = c;
			break;
		default:
			goto opcode;
		}
		/* SDM Vol. 2A 2.2.1: a REX prefix not immediately before the opcode is ignored */
		s.rex = 0;
		s.pos++;
	}
opcode:
	out->nprefixes = (uint8_t)s.pos;
	out->rex = s.rex;
	switch (mode) {
	case DEC_MODE_16:
		s.osz = s.p66 ? 4 : 2;
		s.asz = s.p67 ? 4 : 2;
		break;
	case DEC_MODE_32:
		s.osz = s.p66 ? 2 : 4;
		s.asz = s.p67 ? 2 : 4;
		break;
	default:
		/* SDM Vol. 2A 2.2.1.2: REX.W takes precedence over 66 */
		s.osz = (s.rex & 8) ? 8 : s.p66 ? 2 : 4;
		s.asz = s.p67 ? 4 : 8;
		break;
	}

	uint8_t op = bytes[s.pos++];
	out->opcode = op;
	switch (op) {
	case 0x0f:
		rc = two_byte(&s);
		break;
	case 0xc4: case 0xc5:
	case 0x62:
		/* Outside 64-bit mode these are LES/LDS/BOUND unless ModRM.mod would be 11b
		 * (SDM Vol. 2A 2.3.5 / 2.7.1) */
		if (!is64(&s)) {
			if (!need(&s, 1))
				return s.err;
			if (MOD(bytes[s.pos]) != 3) {
				rc = one_byte(&s, op);
				break;
			}
		}
		rc = op == 0x62 ? do_evex(&s) : do_vex(&s, op);
		break;
	case 0x8f:
		/* XOP if the would-be ModRM has map_select >= 8 (AMD APM Vol. 3 1.8.1) */
		if (!need(&s, 1))
			return s.err;
		if ((bytes[s.pos] & 0x1f) >= 8) {
			rc = do_xop(&s);
			break;
		}
		rc = one_byte(&s, op);
		break;
	default:
		rc = one_byte(&s, op);
		break;
	}
	if (rc)
		return rc;
	if (s.err)
		return s.err;

	out->len = (uint8_t)s.pos;
	out->opsize = s.osz;
	out->addrsize = s.asz;
	if (out->has_target) {
		int64_t d = sval(bytes + out->imm_offset, out->imm_size);
		uint64_t t = rip + out->len + (uint64_t)d;
		if (out->branch == DEC_BR_XBEGIN)
			/* SDM Vol. 2D XBEGIN: a 16-bit operand size does not truncate the fallback address */
			t = mode == DEC_MODE_64 ? t : (t & 0xffffffffu);
		else
			t = trunc_ip(t, s.osz);
		out->target = t;
	}
	return DEC_OK;
}

const char *dec_branch_name(enum dec_branch br)
{
	static const char *const names[] = {
		"none", "jcc", "loop", "jmp", "jmp_ind", "call", "call_ind", "ret", "jmp_far", "call_far",
		"ret_far", "int", "iret", "syscall", "sysret", "sysenter", "sysexit", "xbegin", "xabort", "ud", "uiret",
		"rsm",
	};
	if ((unsigned)br < sizeof names / sizeof names[0])
		return names[br];
	return "?";
}
