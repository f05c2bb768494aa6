/* The legacy maps: one-byte opcodes (with x87), 0F two-byte opcodes and the 0F 38 / 0F 3A
 * three-byte maps, against the tables in tables.c. */
#include "internal.h"

static unsigned mand_bit(const struct st *s)
{
	return 1u << pfx_index(s);
}

/* Validity of the 0F opcodes marked F_X, after ModRM was read (if any). */
static bool op2_special_ok(struct st *s, uint8_t op)
{
	struct dec_insn *o = s->o;
	uint8_t m = o->modrm, r = REG(m);
	bool reg = MOD(m) == 3;
	unsigned pb = mand_bit(s);

	switch (op) {
	case 0x00: /* group 6 */
		return r <= 5;
	case 0x01: /* group 7 */
		if (!reg) {
			if (r == 5)
				return pb == 4;         /* F3: RSTORSSP */
			return true;
		} else {
			uint8_t e = grp7_reg[m - 0xc0];
			return ((e | (is64(s) ? e >> 4 : 0)) & pb) != 0;
		}
	case 0x1a: case 0x1b: {
		/* MPX (SDM Vol. 1 17, Vol. 2A BNDCL..BNDSTX). Without a prefix (and F3 0F 1B) the
		 * register form is a hint NOP. */
		bool nop_reg = pb == 1 || (op == 0x1b && pb == 4);
		if (reg && nop_reg)
			return true;
		if (r > 3 || (s->rex & 4))
			return false;           /* BND0-3 only */
		if (reg)
			return pb != 2 || (RM(m) <= 3 && !(s->rex & 1));
		if (s->asz == 2)
			return false;           /* #UD with 16-bit addressing */
		if (o->rip_relative && (pb == 1 || (op == 0x1b && pb == 4)))
			return false;           /* BNDLDX/BNDSTX/BNDMK: RIP-relative #UD */
		return true;
	}
	case 0x18: case 0x19: case 0x1c: case 0x1d: case 0x1e: case 0x1f:
		return true;
	case 0x71: case 0x72:
		if (!reg || !(pb & 3))
			return false;
		return r == 2 || r == 4 || r == 6;
	case 0x73:
		if (!reg || !(pb & 3))
			return false;
		return r == 2 || r == 6 || ((r == 3 || r == 7) && pb == 2);
	case 0xae: /* group 15 */
		if (!reg) {
			switch (r) {
			case 0: case 1: case 2: case 3: case 4: case 5:
				return pb == 1 || (r == 4 && pb == 4);
			case 6: return pb == 1 || pb == 2 || pb == 4;  /* XSAVEOPT, CLWB, F3: CLRSSBSY */
			default: return pb == 1 || pb == 2;             /* CLFLUSH, CLFLUSHOPT */
			}
		}
		switch (r) {
		case 0: case 1: case 2: case 3: return pb == 4 && is64(s);
		case 4: return pb == 4;
		case 5: return pb == 1 || pb == 4;
		case 6: return pb != 0;
		default: return pb == 1;
		}
	case 0xba:
		return r >= 4;
	case 0xa6: /* VIA PadLock: F3 0F A6 C0/C8/D0 MONTMUL, XSHA1, XSHA256 */
		return pb == 4 && (m == 0xc0 || m == 0xc8 || m == 0xd0);
	case 0xa7: /* VIA PadLock: 0F A7 C0 XSTORE, F3 0F A7 C8..E8 XCRYPT* */
		if (m == 0xc0)
			return pb != 8;
		return pb == 4 && (m == 0xc8 || m == 0xd0 || m == 0xd8 || m == 0xe0 || m == 0xe8);
	case 0xc7: /* group 9 */
		if (!reg) {
			switch (r) {
			case 1: return true;
			case 3: case 4: case 5: return pb == 1;
			case 6: return pb == 1 || pb == 2 || pb == 4;
			case 7: return pb == 1;
			default: return false;
			}
		}
		switch (r) {
		case 6: return pb == 1 || pb == 2 || (pb == 4 && is64(s));   /* RDRAND, F3: SENDUIPI */
		case 7: return pb == 1 || pb == 2 || pb == 4;                  /* RDSEED, F3: RDPID */
		default: return false;
		}
	default:
		return true;
	}
}

int two_byte(struct st *s)
{
	struct dec_insn *o = s->o;

	if (!need(s, 1))
		return s->err;
	uint8_t op = s->b[s->pos++];
	o->map = 1;
	o->opcode = op;

	if (op == 0x0f) {
		/* 3DNow!: 0F 0F /r imm8, the imm8 is the opcode (AMD APM Vol. 3 A.3) */
		o->encoding = DEC_ENC_3DNOW;
		if (!do_modrm(s, false) || !do_imm(s, 1))
			return s->err;
		uint8_t sfx = s->b[s->pos - 1];
		o->opcode = sfx;
		if (!((amd3dnow[sfx >> 3] >> (sfx & 7)) & 1))
			return DEC_INVALID;
		if (o->lock)
			return DEC_INVALID;
		return DEC_OK;
	}

	if (op == 0x38 || op == 0x3a) {
		if (!need(s, 1))
			return s->err;
		uint8_t op3 = s->b[s->pos++];
		o->map = op == 0x38 ? 2 : 3;
		o->opcode = op3;
		uint8_t mask = op == 0x38 ? op38[op3] : op3a[op3];
		if (!mask)
			return DEC_INVALID;
		if (!do_modrm(s, false))
			return s->err;
		if (!pfx_ok(s, mask))
			return DEC_INVALID;
		if (op == 0x38 && op3 == 0xd8 && REG(o->modrm) > 3)
			return DEC_INVALID;     /* AES*WIDE*KL: /0../3 */
		if (op == 0x3a && op3 == 0xf0 && o->modrm != 0xc0)
			return DEC_INVALID;     /* HRESET: ModRM is C0 */
		if (op == 0x3a && !do_imm(s, 1))
			return s->err;
		if (o->lock)
			return DEC_INVALID;
		if (s->mand == 0x66 && !(op == 0x38 && (op3 == 0xf0 || op3 == 0xf1)))
			mand_consumed(s);
		return DEC_OK;
	}

	const struct op2 *e = &op2[op];
	uint16_t f = e->f;
	if (f & F_BAD)
		return DEC_INVALID;
	if (is64(s) && (f & F_F64))
		s->osz = 8;
	if (is64(s) && (f & F_D64))
		s->osz = (s->rex & 8) || !s->p66 ? 8 : 2;

	if (f & F_X) {
		switch (op) {
		case 0x20: case 0x21: case 0x22: case 0x23:
			/* MOV CR/DR: mod is ignored, always register operands (SDM Vol. 2B MOV CR) */
			if (!do_modrm(s, true))
				return s->err;
			if (is64(s))
				s->osz = 8;
			if (o->lock)
				return DEC_INVALID;
			if (op & 1) {
				if (s->rex & 4)
					return DEC_INVALID;         /* DR8-DR15 #UD */
			} else {
				unsigned cr = REG(o->modrm) | ((s->rex & 4) << 1);
				if (!(cr == 0 || cr == 2 || cr == 3 || cr == 4 || cr == 8))
					return DEC_INVALID;
			}
			return DEC_OK;
		case 0x05: case 0x07:
			if (o->lock)
				return DEC_INVALID;
			o->branch = op == 0x05 ? DEC_BR_SYSCALL : DEC_BR_SYSRET;
			return DEC_OK;
		case 0x09:
			return o->lock ? DEC_INVALID : DEC_OK;
		case 0x0d:
			if (!do_modrm(s, false))
				return s->err;
			return o->lock ? DEC_INVALID : DEC_OK;
		case 0x78: case 0x79: {
			if (!do_modrm(s, false))
				return s->err;
			if (o->lock)
				return DEC_INVALID;
			unsigned pb = mand_bit(s);
			if (pb == 1) {
				if (is64(s))
					s->osz = 8;
				return DEC_OK;  /* VMREAD/VMWRITE */
			}
			if (MOD(o->modrm) != 3)
				return DEC_INVALID;
			if (op == 0x78 && pb == 2 && REG(o->modrm) != 0)
				return DEC_INVALID;
			if (pb == 2 || pb == 8) {
				if (op == 0x78 && !do_imm(s, 2))
					return s->err;
				return DEC_OK;  /* EXTRQ / INSERTQ */
			}
			return DEC_INVALID;
		}
		case 0xba:
			if (!do_modrm(s, false) || !do_imm(s, 1))
				return s->err;
			if (!op2_special_ok(s, op))
				return DEC_INVALID;
			return lock_ok(s, REG(o->modrm) >= 5) ? DEC_OK : DEC_INVALID;
		case 0xc7:
			if (!do_modrm(s, false))
				return s->err;
			if (!op2_special_ok(s, op))
				return DEC_INVALID;
			if (!lock_ok(s, REG(o->modrm) == 1))
				return DEC_INVALID;
			if (MOD(o->modrm) != 3)
				mand_consumed(s);
			return DEC_OK;
		default:
			if (!do_modrm(s, false))
				return s->err;
			if (!op2_special_ok(s, op))
				return DEC_INVALID;
			if (o->lock)
				return DEC_INVALID;
			if (op >= 0x71 && op <= 0x73 && !do_imm(s, 1))
				return s->err;
			if (op == 0x01 && MOD(o->modrm) == 3 && o->modrm == 0xec)
				o->branch = DEC_BR_UIRET;
			return DEC_OK;
		}
	}

	if (f & F_M) {
		if (!do_modrm(s, false))
			return s->err;
	}
	if (e->pfx) {
		if (!pfx_ok(s, e->pfx))
			return DEC_INVALID;
		if (s->mand == 0x66)
			mand_consumed(s);
	}
	if ((op == 0xb2 || op == 0xb4 || op == 0xb5) && MOD(o->modrm) == 3)
		return DEC_INVALID;
	unsigned imm = 0;
	if (f & F_I8)
		imm = 1;
	else if (f & F_IZ)
		imm = s->osz == 2 ? 2 : 4;
	if (!do_imm(s, imm))
		return s->err;
	if (!lock_ok(s, f & F_LCK))
		return DEC_INVALID;

	if (op >= 0x80 && op <= 0x8f) {
		o->branch = DEC_BR_JCC;
		o->has_target = true;
	} else if (op == 0x34) {
		o->branch = DEC_BR_SYSENTER;
	} else if (op == 0x35) {
		o->branch = DEC_BR_SYSEXIT;
	} else if (op == 0xaa) {
		o->branch = DEC_BR_RSM;
	} else if (op == 0x0b || op == 0xb9 || op == 0xff) {
		o->branch = DEC_BR_UD;
	}
	return DEC_OK;
}

/* ---------------------------------------------------------------------------------------------
 * One-byte map
 * ------------------------------------------------------------------------------------------- */

/* x87 (D8-DF) forms that are undefined (SDM Vol. 2D A.5, escape opcode maps Tables A-7..A-22). */
static bool x87_ok(uint8_t op, uint8_t m)
{
	uint8_t r = REG(m);
	if (MOD(m) != 3) {
		switch (op) {
		case 0xd9: return r != 1;
		case 0xdb: return r != 4 && r != 6;
		case 0xdd: return r != 5;
		default: return true;
		}
	}
	switch (op) {
	case 0xd9:
		if (r == 2) return m == 0xd0;
		if (r == 4) return m == 0xe0 || m == 0xe1 || m == 0xe4 || m == 0xe5;
		if (r == 5) return m != 0xef;
		return true;
	case 0xda:
		if (r == 5) return m == 0xe9;
		return r < 4;
	case 0xdb:
		if (r == 4) return m >= 0xe0 && m <= 0xe4;
		return r != 7;
	case 0xdd:
		return r != 6 && r != 7;
	case 0xde:
		if (r == 3) return m == 0xd9;
		return true;
	case 0xdf:
		if (r == 4) return m == 0xe0;
		return r != 7;
	default:
		return true;
	}
}

int one_byte(struct st *s, uint8_t op)
{
	struct dec_insn *o = s->o;
	uint16_t f = op1[op];

	if (is64(s) && (f & F_I64))
		return DEC_INVALID;
	/* SDM Vol. 2A 2.2.1.7: near branches use 64-bit operand size in 64-bit mode. Intel CPUs
	 * ignore 66 on them (Jcc/JMP/CALL rel keep rel32, RIP is not truncated); AMD would use a
	 * 16-bit operand size (APM Vol. 3 "Near branches"). We follow Intel, as Zydis does by default. */
	if (is64(s) && (f & F_F64))
		s->osz = 8;
	/* PUSH/POP & co. default to 64 bits; 66 selects 16 (there is no 32-bit form) */
	if (is64(s) && (f & F_D64))
		s->osz = (s->rex & 8) || !s->p66 ? 8 : 2;
	if (f & F_M) {
		if (!do_modrm(s, false))
			return s->err;
	}
	uint8_t m = o->modrm, r = REG(m);
	bool reg = MOD(m) == 3;
	bool lockable = (f & F_LCK) != 0;

	switch (op) {
	case 0x62: case 0xc4: case 0xc5: /* BOUND, LES, LDS: memory only (register form is EVEX/VEX) */
		if (!do_modrm(s, false))
			return s->err;
		m = o->modrm;
		if (MOD(m) == 3)
			return DEC_INVALID;
		break;
	case 0x80: case 0x81: case 0x82: case 0x83:
		lockable = r != 7;
		break;
	case 0x8c:
		if (r > 5)
			return DEC_INVALID;
		break;
	case 0x8e:
		if (r > 5 || r == 1)
			return DEC_INVALID;
		break;
	case 0x8d:
		if (reg)
			return DEC_INVALID;
		break;
	case 0x8f:
		if (!do_modrm(s, false))
			return s->err;
		if (REG(o->modrm) != 0)
			return DEC_INVALID;
		if (is64(s))
			s->osz = (s->rex & 8) || !s->p66 ? 8 : 2;
		break;
	case 0xc6: case 0xc7:
		if (r == 0)
			break;
		if (m != 0xf8)
			return DEC_INVALID;
		if (op == 0xc6) {
			f = F_I8;       /* XABORT imm8 */
			o->branch = DEC_BR_XABORT;
			break;
		}
		/* XBEGIN rel16/32 */
		o->branch = DEC_BR_XBEGIN;
		o->has_target = true;
		break;
	case 0xf6: case 0xf7:
		if (r < 2)
			f |= op == 0xf6 ? F_I8 : F_IZ;     /* TEST r/m, imm */
		lockable = r == 2 || r == 3;
		break;
	case 0xfe:
		if (r > 1)
			return DEC_INVALID;
		lockable = true;
		break;
	case 0xff:
		switch (r) {
		case 0: case 1: lockable = true; break;
		case 2: o->branch = DEC_BR_CALL_IND; if (is64(s)) s->osz = 8; break;
		case 3: if (reg) return DEC_INVALID; o->branch = DEC_BR_CALL_FAR; break;
		case 4: o->branch = DEC_BR_JMP_IND; if (is64(s)) s->osz = 8; break;
		case 5: if (reg) return DEC_INVALID; o->branch = DEC_BR_JMP_FAR; break;
		case 6: if (is64(s)) s->osz = (s->rex & 8) || !s->p66 ? 8 : 2; break;
		default: return DEC_INVALID;
		}
		break;
	case 0xd8: case 0xd9: case 0xda: case 0xdb: case 0xdc: case 0xdd: case 0xde: case 0xdf:
		if (!x87_ok(op, m))
			return DEC_INVALID;
		break;
	default:
		break;
	}

	unsigned imm = 0;
	if (f & F_I8)
		imm += 1;
	if (f & F_I16)
		imm += 2;
	if (f & F_IZ)
		imm += s->osz == 2 ? 2 : 4;
	if (f & F_IV)
		imm += s->osz;
	if (f & F_IA)
		imm += s->asz;
	if (f & F_IP)
		imm += 2 + (s->osz == 2 ? 2 : 4);
	if (!do_imm(s, imm))
		return s->err;
	if (!lock_ok(s, lockable))
		return DEC_INVALID;
	if (f & F_STR)
		o->rep = s->last_f2f3;

	switch (op) {
	case 0x70: case 0x71: case 0x72: case 0x73: case 0x74: case 0x75: case 0x76: case 0x77:
	case 0x78: case 0x79: case 0x7a: case 0x7b: case 0x7c: case 0x7d: case 0x7e: case 0x7f:
		o->branch = DEC_BR_JCC;
		o->has_target = true;
		break;
	case 0xe0: case 0xe1: case 0xe2: case 0xe3:
		o->branch = DEC_BR_LOOP;
		o->has_target = true;
		break;
	case 0xe8:
		o->branch = DEC_BR_CALL;
		o->has_target = true;
		break;
	case 0xe9: case 0xeb:
		o->branch = DEC_BR_JMP;
		o->has_target = true;
		break;
	case 0x9a: o->branch = DEC_BR_CALL_FAR; break;
	case 0xea: o->branch = DEC_BR_JMP_FAR; break;
	case 0xc2: case 0xc3: o->branch = DEC_BR_RET; break;
	case 0xca: case 0xcb: o->branch = DEC_BR_RET_FAR; break;
	case 0xcc: case 0xcd: case 0xce: case 0xf1: o->branch = DEC_BR_INT; break;
	case 0xcf: o->branch = DEC_BR_IRET; break;
	default: break;
	}
	return DEC_OK;
}
