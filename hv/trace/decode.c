/* hv/trace/decode.c — x86 instruction length and branch decoder (freestanding, no libc).
 * Validity follows the Intel SDM opcode maps (Vol. 2D Appendix A) and is cross-checked against Zydis. */
#include "decode.h"

/* ---------------------------------------------------------------------------------------------
 * Decoder state (on the stack; no global mutable state).
 * ------------------------------------------------------------------------------------------- */

struct st {
	const uint8_t *b;
	size_t avail;
	enum dec_mode mode;
	unsigned pos;
	int err;
	bool p66, p67;
	uint8_t mand;           /* mandatory-prefix candidate: last F2/F3, else 66 if present, else 0 */
	uint8_t last_f2f3;
	uint8_t rex;
	uint8_t osz, asz;       /* effective sizes in bytes */
	/* VEX/EVEX/XOP fields (decoded, non-inverted) */
	uint8_t pp, vvvv, vraw, L, W, R, X, B, R2, V2, aaa, z, bb;   /* vraw: vvvv before masking */
	struct dec_insn *o;
};

#define MOD(m)  ((uint8_t)((m) >> 6))
#define REG(m)  ((uint8_t)(((m) >> 3) & 7))
#define RM(m)   ((uint8_t)((m) & 7))

/* Makes bytes [pos, pos+n) available. An instruction longer than 15 bytes is rejected as
 * DEC_INVALID (the CPU raises #GP: SDM Vol. 2A 2.3.11, Vol. 3A 6.15 "Interrupt 13");
 * running out of input before that is DEC_TRUNCATED. */
static bool need(struct st *s, unsigned n)
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
static bool do_modrm(struct st *s, bool force_reg)
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

static bool do_imm(struct st *s, unsigned n)
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
static int64_t sval(const uint8_t *p, unsigned n)
{
	if (n == 1)
		return (int8_t)p[0];
	if (n == 2)
		return (int16_t)(p[0] | p[1] << 8);
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static uint64_t trunc_ip(uint64_t v, unsigned osz)
{
	if (osz == 2)
		return v & 0xffff;
	if (osz == 4)
		return v & 0xffffffffu;
	return v;
}

static inline bool is64(const struct st *s)
{
	return s->mode == DEC_MODE_64;
}

/* ---------------------------------------------------------------------------------------------
 * One-byte opcode map (SDM Vol. 2D Table A-2)
 * ------------------------------------------------------------------------------------------- */

enum {
	F_M   = 1u << 0,    /* ModRM follows */
	F_I8  = 1u << 1,
	F_I16 = 1u << 2,
	F_IZ  = 1u << 3,    /* imm16/imm32 by operand size */
	F_IV  = 1u << 4,    /* imm16/32/64 by operand size (MOV r, imm) */
	F_IA  = 1u << 5,    /* moffs: address-size offset */
	F_IP  = 1u << 6,    /* far pointer ptr16:16/32 */
	F_I64 = 1u << 7,    /* invalid in 64-bit mode */
	F_D64 = 1u << 8,    /* operand size defaults to 64 in 64-bit mode */
	F_F64 = 1u << 9,    /* operand size forced to 64 in 64-bit mode (Intel) */
	F_PFX = 1u << 10,   /* prefix byte */
	F_X   = 1u << 11,   /* handled specially */
	F_BAD = 1u << 12,   /* undefined */
	F_LCK = 1u << 13,   /* LOCK allowed (memory destination) */
	F_STR = 1u << 14,   /* string instruction: REP/REPNE applies */
};

#define M   F_M
#define I8  F_I8
#define IZ  F_IZ
#define L_  F_LCK
#define D64 F_D64
#define F64 F_F64
#define I64 F_I64
#define ALU(x) M | L_, M | L_, M, M, I8, IZ

static const uint16_t op1[256] = {
	/* 00 */ ALU(0), I64, I64,
	/* 08 */ ALU(0), I64, F_X,
	/* 10 */ ALU(0), I64, I64,
	/* 18 */ ALU(0), I64, I64,
	/* 20 */ ALU(0), F_PFX, I64,
	/* 28 */ ALU(0), F_PFX, I64,
	/* 30 */ ALU(0), F_PFX, I64,
	/* 38 */ M, M, M, M, I8, IZ, F_PFX, I64,
	/* 40 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 50 */ D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64, D64,
	/* 60 */ I64, I64, F_X, M, F_PFX, F_PFX, F_PFX, F_PFX,
	/* 68 */ IZ | D64, M | IZ, I8 | D64, M | I8, F_STR, F_STR, F_STR, F_STR,
	/* 70 */ I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64,
	/* 78 */ I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8 | F64,
	/* 80 */ M | I8 | L_, M | IZ | L_, M | I8 | L_ | I64, M | I8 | L_, M, M, M | L_, M | L_,
	/* 88 */ M, M, M, M, M, M, M, F_X,
	/* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, F_IP | I64, 0, D64, D64, 0, 0,
	/* A0 */ F_IA, F_IA, F_IA, F_IA, F_STR, F_STR, F_STR, F_STR,
	/* A8 */ I8, IZ, F_STR, F_STR, F_STR, F_STR, F_STR, F_STR,
	/* B0 */ I8, I8, I8, I8, I8, I8, I8, I8,
	/* B8 */ F_IV, F_IV, F_IV, F_IV, F_IV, F_IV, F_IV, F_IV,
	/* C0 */ M | I8, M | I8, F_I16 | F64, F64, F_X, F_X, M | I8, M | IZ,
	/* C8 */ F_I16 | I8 | D64, D64, F_I16, 0, 0, I8, I64, 0,
	/* D0 */ M, M, M, M, I8 | I64, I8 | I64, I64, 0,
	/* D8 */ M, M, M, M, M, M, M, M,
	/* E0 */ I8 | F64, I8 | F64, I8 | F64, I8 | F64, I8, I8, I8, I8,
	/* E8 */ IZ | F64, IZ | F64, F_IP | I64, I8 | F64, 0, 0, 0, 0,
	/* F0 */ F_PFX, 0, F_PFX, F_PFX, 0, 0, M, M,
	/* F8 */ 0, 0, 0, 0, 0, 0, M, M,
};

/* ---------------------------------------------------------------------------------------------
 * Two-byte (0F) map (SDM Vol. 2D Table A-3). Each entry: flags, and which mandatory prefixes
 * select a defined instruction, with register (mod=11) and/or memory forms. Zero "pfx" means
 * the opcode has no mandatory prefixes (66/F2/F3 are plain prefixes).
 * ------------------------------------------------------------------------------------------- */

enum {
	NR = 0x01, NM = 0x02,   /* no prefix: reg / mem form defined */
	OR = 0x04, OM = 0x08,   /* 66 */
	SR = 0x10, SM = 0x20,   /* F3 */
	DR = 0x40, DM = 0x80,   /* F2 */
	N_ = NR | NM, O_ = OR | OM, S_ = SR | SM, D_ = DR | DM,
	NO = N_ | O_, ALLP = N_ | O_ | S_ | D_,
};

struct op2 {
	uint16_t f;
	uint8_t pfx;
};

#define E(f, p) { (uint16_t)(f), (uint8_t)(p) }
#define BAD2 E(F_BAD, 0)
#define PL(f) E(f, 0)

static const struct op2 op2[256] = {
	/* 00 */ E(F_X, 0), E(F_X, 0), PL(M), PL(M), BAD2, E(F_X, 0), PL(0), E(F_X, 0),
	/* 08 */ PL(0), E(F_X, 0), BAD2, PL(0), BAD2, E(F_X, 0), PL(0), E(F_X, 0),
	/* 10 */ E(M, ALLP), E(M, ALLP), E(M, N_ | OM | S_ | D_), E(M, NM | OM), E(M, NO), E(M, NO), E(M, N_ | OM | S_), E(M, NM | OM),
	/* 18 */ E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0),
	/* 20 */ E(F_X, 0), E(F_X, 0), E(F_X, 0), E(F_X, 0), BAD2, BAD2, BAD2, BAD2,
	/* 28 */ E(M, NO), E(M, NO), E(M, ALLP), E(M, NM | OM | SM | DM), E(M, ALLP), E(M, ALLP), E(M, NO), E(M, NO),
	/* 30 */ PL(0), PL(0), PL(0), PL(0), PL(0), PL(0), BAD2, E(0, NR),
	/* 38 */ E(F_X, 0), BAD2, E(F_X, 0), BAD2, BAD2, BAD2, BAD2, BAD2,
	/* 40 */ PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M),
	/* 48 */ PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M),
	/* 50 */ E(M, NR | OR), E(M, ALLP), E(M, N_ | S_), E(M, N_ | S_), E(M, NO), E(M, NO), E(M, NO), E(M, NO),
	/* 58 */ E(M, ALLP), E(M, ALLP), E(M, ALLP), E(M, NO | S_), E(M, ALLP), E(M, ALLP), E(M, ALLP), E(M, ALLP),
	/* 60 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO),
	/* 68 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, O_), E(M, O_), E(M, NO), E(M, NO | S_),
	/* 70 */ E(M | I8, ALLP), E(F_X, 0), E(F_X, 0), E(F_X, 0), E(M, NO), E(M, NO), E(M, NO), E(0, NR),
	/* 78 */ E(F_X, 0), E(F_X, 0), BAD2, BAD2, E(M, O_ | D_), E(M, O_ | D_), E(M, NO | S_), E(M, NO | S_),
	/* 80 */ PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64),
	/* 88 */ PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64), PL(IZ | F64),
	/* 90 */ PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M),
	/* 98 */ PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M), PL(M),
	/* A0 */ PL(D64), PL(D64), PL(0), PL(M), PL(M | I8), PL(M), E(F_X, 0), E(F_X, 0),
	/* A8 */ PL(D64), PL(D64), PL(0), PL(M | L_), PL(M | I8), PL(M), E(F_X, 0), PL(M),
	/* B0 */ PL(M | L_), PL(M | L_), E(M, 0), PL(M | L_), E(M, 0), E(M, 0), PL(M), PL(M),
	/* B8 */ E(M, S_), PL(M), E(F_X, 0), PL(M | L_), PL(M), PL(M), PL(M), PL(M),
	/* C0 */ PL(M | L_), PL(M | L_), E(M | I8, ALLP), E(M, NM), E(M | I8, NO), E(M | I8, NR | OR), E(M | I8, NO), E(F_X, 0),
	/* C8 */ PL(0), PL(0), PL(0), PL(0), PL(0), PL(0), PL(0), PL(0),
	/* D0 */ E(M, O_ | D_), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, O_ | SR | DR), E(M, NR | OR),
	/* D8 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO),
	/* E0 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, O_ | S_ | D_), E(M, NM | OM),
	/* E8 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO),
	/* F0 */ E(M, DM), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NR | OR),
	/* F8 */ E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), E(M, NO), PL(M),
};

/* 0F 38 map (SDM Vol. 2D Table A-4), legacy (non-VEX) encodings only. */
static const uint8_t op38[256] = {
	/* 00 */ NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, NO, 0, 0, 0, 0,
	/* 10 */ O_, 0, 0, 0, O_, O_, 0, O_, 0, 0, 0, 0, NO, NO, NO, 0,
	/* 20 */ O_, O_, O_, O_, O_, O_, 0, 0, O_, O_, OM, O_, 0, 0, 0, 0,
	/* 30 */ O_, O_, O_, O_, O_, O_, 0, O_, O_, O_, O_, O_, O_, O_, O_, O_,
	/* 40 */ O_, O_, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 60 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 70 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 80 */ OM, OM, OM, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* A0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* B0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* C0 */ 0, 0, 0, 0, 0, 0, 0, 0, N_, N_, N_, N_, N_, N_, 0, O_,
	/* D0 */ 0, 0, 0, 0, 0, 0, 0, 0, SM, 0, 0, O_, O_ | S_, O_ | SM, O_ | SM, O_ | SM,
	/* E0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* F0 */ NM | OM | D_, NM | OM | D_, 0, 0, 0, OM, NM | O_ | S_, 0, OM | SM | DM, NM, SR, SR, 0, 0, 0, 0,
};

/* 0F 3A map (SDM Vol. 2D Table A-5), legacy encodings; all take an imm8. */
static const uint8_t op3a[256] = {
	/* 00 */ 0, 0, 0, 0, 0, 0, 0, 0, O_, O_, O_, O_, O_, O_, O_, NO,
	/* 10 */ 0, 0, 0, 0, O_, O_, O_, O_, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 20 */ O_, O_, O_, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 40 */ O_, O_, O_, 0, O_, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 60 */ O_, O_, O_, O_, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 70 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 80 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* A0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* B0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* C0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, N_, 0, O_, O_,
	/* D0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, O_,
	/* E0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* F0 */ SR, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* 3DNow! opcode suffixes (AMD APM Vol. 3, Table A-13). */
static const uint8_t amd3dnow[32] = {
	/* bit map of defined imm8 suffixes, 8 per byte */
	[0x0c >> 3] = 1 << (0x0c & 7) | 1 << (0x0d & 7),
	[0x1c >> 3] = 1 << (0x1c & 7) | 1 << (0x1d & 7),
	[0x8a >> 3] = 1 << (0x8a & 7) | 1 << (0x8e & 7),
	[0x90 >> 3] = 1 << (0x90 & 7) | 1 << (0x94 & 7) | 1 << (0x96 & 7) | 1 << (0x97 & 7),
	[0x9a >> 3] = 1 << (0x9a & 7) | 1 << (0x9e & 7),
	[0xa0 >> 3] = 1 << (0xa0 & 7) | 1 << (0xa4 & 7) | 1 << (0xa6 & 7) | 1 << (0xa7 & 7),
	[0xaa >> 3] = 1 << (0xaa & 7) | 1 << (0xae & 7),
	[0xb0 >> 3] = 1 << (0xb0 & 7) | 1 << (0xb4 & 7) | 1 << (0xb6 & 7) | 1 << (0xb7 & 7),
	[0xbb >> 3] = 1 << (0xbb & 7) | 1 << (0xbf & 7),
};

/* Index of the mandatory prefix: 0 none, 1 66, 2 F3, 3 F2. */
static unsigned pfx_index(const struct st *s)
{
	switch (s->mand) {
	case 0x66: return 1;
	case 0xf3: return 2;
	case 0xf2: return 3;
	default: return 0;
	}
}

/* Is the (prefix, mod) combination defined in a prefix/form mask? */
static bool pfx_ok(const struct st *s, uint8_t mask)
{
	unsigned i = pfx_index(s);
	bool reg = !s->o->has_modrm || MOD(s->o->modrm) == 3;
	return (mask >> (2 * i + (reg ? 0 : 1))) & 1;
}

/* After a mandatory F3/F2 or a mandatory 66, the operand size is what the remaining prefixes
 * say: a 66 that selected the instruction does not also change the operand size. */
static void mand_consumed(struct st *s)
{
	if (s->mand == 0x66) {
		s->osz = is64(s) ? ((s->rex & 8) ? 8 : 4) : (s->mode == DEC_MODE_16 ? 2 : 4);
	}
}

static bool lock_ok(const struct st *s, bool lockable)
{
	if (!s->o->lock)
		return true;
	return lockable && MOD(s->o->modrm) != 3;
}

/* ---------------------------------------------------------------------------------------------
 * VEX / XOP / EVEX tables
 * ------------------------------------------------------------------------------------------- */

#define V_L0   (1ull << 0) /* VEX.L / EVEX.L'L must be 0 (128) */
#define V_L1   (1ull << 1) /* VEX.L must be 1 */
#define V_W0   (1ull << 2)
#define V_W1   (1ull << 3)
#define V_NV   (1ull << 4) /* vvvv unused: must be 1111b */
#define V_MEM  (1ull << 5) /* memory form only */
#define V_REG  (1ull << 6) /* register form only */
#define V_I8   (1ull << 7)
#define V_KR   (1ull << 8) /* ModRM.reg is a mask register (VEX.R must be 0) */
#define V_KV   (1ull << 9) /* vvvv is a mask register (k0-k7) */
#define V_KM   (1ull << 10) /* ModRM.rm (reg form) is a mask register */
#define V_VSIB (1ull << 11) /* VSIB memory operand (gather/scatter): SIB required */
#define V_O64  (1ull << 12) /* 64-bit mode only */
#define V_GRP  (1ull << 13) /* validity depends on ModRM.reg: see vex_group_ok() */
#define V_NOM  (1ull << 14) /* no ModRM (VZEROUPPER/VZEROALL) */
#define V_AMX  (1ull << 15) /* AMX tile operands: see amx_ok() */
#define V_LIG  (1ull << 17) /* EVEX: scalar, L'L ignored (except as rounding) */
#define V_NB   (1ull << 18) /* EVEX: no embedded broadcast (EVEX.b must be 0 with memory) */
#define V_NZ   (1ull << 19) /* EVEX: no zeroing (EVEX.z must be 0) */
#define V_NK   (1ull << 20) /* EVEX: masking not allowed (aaa must be 0) */
#define V_KREQ (1ull << 21) /* EVEX: aaa must be non-zero */
#define V_SAE  (1ull << 23) /* EVEX: reg-reg with b=1 is SAE only (L'L ignored) */
#define V_ER   (1ull << 24) /* EVEX: reg-reg with b=1 is embedded rounding */
#define V_NZM  (1ull << 25) /* EVEX: zeroing not allowed with memory operand (stores) */
#define V_GR   (1ull << 27) /* ModRM.reg is a GPR (EVEX.R' must be 1) */
#define V_KRD  (1ull << 28) /* EVEX: destination is a mask register (no zeroing, R/R' 0) */
#define V_L2   (1ull << 29) /* EVEX: L'L must be 2 */
#define V_L1E  (1ull << 30) /* EVEX: L'L must be >= 1 */
#define V_NSD  (1ull << 31) /* EVEX: destination must differ from the sources (FP16 complex multiply) */
#define V_ER64 (1ull << 32) /* EVEX: embedded rounding only in 64-bit mode (W1 GPR source is 32-bit there) */

struct vop {
	uint8_t op;
	uint8_t pp;     /* 0 none, 1 66, 2 F3, 3 F2 */
	uint64_t f;
};

static const struct vop vex1[] = {
	{ 0x10, 0, V_NV },
	{ 0x10, 1, V_NV },
	{ 0x10, 2, V_MEM | V_NV },
	{ 0x10, 2, V_REG },
	{ 0x10, 3, V_MEM | V_NV },
	{ 0x10, 3, V_REG },
	{ 0x11, 0, V_NV },
	{ 0x11, 1, V_NV },
	{ 0x11, 2, V_MEM | V_NV },
	{ 0x11, 2, V_REG },
	{ 0x11, 3, V_MEM | V_NV },
	{ 0x11, 3, V_REG },
	{ 0x12, 0, V_L0 },
	{ 0x12, 1, V_L0 | V_MEM },
	{ 0x12, 2, V_NV },
	{ 0x12, 3, V_NV },
	{ 0x13, 0, V_L0 | V_MEM | V_NV },
	{ 0x13, 1, V_L0 | V_MEM | V_NV },
	{ 0x14, 0, 0 },
	{ 0x14, 1, 0 },
	{ 0x15, 0, 0 },
	{ 0x15, 1, 0 },
	{ 0x16, 0, V_L0 },
	{ 0x16, 1, V_L0 | V_MEM },
	{ 0x16, 2, V_NV },
	{ 0x17, 0, V_L0 | V_MEM | V_NV },
	{ 0x17, 1, V_L0 | V_MEM | V_NV },
	{ 0x28, 0, V_NV },
	{ 0x28, 1, V_NV },
	{ 0x29, 0, V_NV },
	{ 0x29, 1, V_NV },
	{ 0x2a, 2, 0 },
	{ 0x2a, 3, 0 },
	{ 0x2b, 0, V_MEM | V_NV },
	{ 0x2b, 1, V_MEM | V_NV },
	{ 0x2c, 2, V_NV },
	{ 0x2c, 3, V_NV },
	{ 0x2d, 2, V_NV },
	{ 0x2d, 3, V_NV },
	{ 0x2e, 0, V_NV },
	{ 0x2e, 1, V_NV },
	{ 0x2f, 0, V_NV },
	{ 0x2f, 1, V_NV },
	{ 0x41, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x41, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x42, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x42, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x44, 0, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x44, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x45, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x45, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x46, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x46, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x47, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x47, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x4a, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x4a, 1, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x4b, 0, V_L1 | V_REG | V_KR | V_KV | V_KM },
	{ 0x4b, 1, V_L1 | V_W0 | V_REG | V_KR | V_KV | V_KM },
	{ 0x50, 0, V_REG | V_NV },
	{ 0x50, 1, V_REG | V_NV },
	{ 0x51, 0, V_NV },
	{ 0x51, 1, V_NV },
	{ 0x51, 2, 0 },
	{ 0x51, 3, 0 },
	{ 0x52, 0, V_NV },
	{ 0x52, 2, 0 },
	{ 0x53, 0, V_NV },
	{ 0x53, 2, 0 },
	{ 0x54, 0, 0 },
	{ 0x54, 1, 0 },
	{ 0x55, 0, 0 },
	{ 0x55, 1, 0 },
	{ 0x56, 0, 0 },
	{ 0x56, 1, 0 },
	{ 0x57, 0, 0 },
	{ 0x57, 1, 0 },
	{ 0x58, 0, 0 },
	{ 0x58, 1, 0 },
	{ 0x58, 2, 0 },
	{ 0x58, 3, 0 },
	{ 0x59, 0, 0 },
	{ 0x59, 1, 0 },
	{ 0x59, 2, 0 },
	{ 0x59, 3, 0 },
	{ 0x5a, 0, V_NV },
	{ 0x5a, 1, V_NV },
	{ 0x5a, 2, 0 },
	{ 0x5a, 3, 0 },
	{ 0x5b, 0, V_NV },
	{ 0x5b, 1, V_NV },
	{ 0x5b, 2, V_NV },
	{ 0x5c, 0, 0 },
	{ 0x5c, 1, 0 },
	{ 0x5c, 2, 0 },
	{ 0x5c, 3, 0 },
	{ 0x5d, 0, 0 },
	{ 0x5d, 1, 0 },
	{ 0x5d, 2, 0 },
	{ 0x5d, 3, 0 },
	{ 0x5e, 0, 0 },
	{ 0x5e, 1, 0 },
	{ 0x5e, 2, 0 },
	{ 0x5e, 3, 0 },
	{ 0x5f, 0, 0 },
	{ 0x5f, 1, 0 },
	{ 0x5f, 2, 0 },
	{ 0x5f, 3, 0 },
	{ 0x60, 1, 0 },
	{ 0x61, 1, 0 },
	{ 0x62, 1, 0 },
	{ 0x63, 1, 0 },
	{ 0x64, 1, 0 },
	{ 0x65, 1, 0 },
	{ 0x66, 1, 0 },
	{ 0x67, 1, 0 },
	{ 0x68, 1, 0 },
	{ 0x69, 1, 0 },
	{ 0x6a, 1, 0 },
	{ 0x6b, 1, 0 },
	{ 0x6c, 1, 0 },
	{ 0x6d, 1, 0 },
	{ 0x6e, 1, V_L0 | V_NV },
	{ 0x6f, 1, V_NV },
	{ 0x6f, 2, V_NV },
	{ 0x70, 1, V_NV | V_I8 },
	{ 0x70, 2, V_NV | V_I8 },
	{ 0x70, 3, V_NV | V_I8 },
	{ 0x71, 1, V_REG | V_GRP | V_I8 },
	{ 0x72, 1, V_REG | V_GRP | V_I8 },
	{ 0x73, 1, V_REG | V_GRP | V_I8 },
	{ 0x74, 1, 0 },
	{ 0x75, 1, 0 },
	{ 0x76, 1, 0 },
	{ 0x77, 0, V_NOM | V_NV },
	{ 0x7c, 1, 0 },
	{ 0x7c, 3, 0 },
	{ 0x7d, 1, 0 },
	{ 0x7d, 3, 0 },
	{ 0x7e, 1, V_L0 | V_NV },
	{ 0x7e, 2, V_L0 | V_NV },
	{ 0x7f, 1, V_NV },
	{ 0x7f, 2, V_NV },
	{ 0x90, 0, V_L0 | V_NV | V_KR | V_KM },
	{ 0x90, 1, V_L0 | V_NV | V_KR | V_KM },
	{ 0x91, 0, V_L0 | V_MEM | V_NV | V_KR },
	{ 0x91, 1, V_L0 | V_MEM | V_NV | V_KR },
	{ 0x92, 0, V_L0 | V_W0 | V_REG | V_NV | V_KR },
	{ 0x92, 1, V_L0 | V_W0 | V_REG | V_NV | V_KR },
	{ 0x92, 3, V_L0 | V_REG | V_NV | V_KR },
	{ 0x93, 0, V_L0 | V_W0 | V_REG | V_NV | V_KM },
	{ 0x93, 1, V_L0 | V_W0 | V_REG | V_NV | V_KM },
	{ 0x93, 3, V_L0 | V_REG | V_NV | V_KM },
	{ 0x98, 0, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x98, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x99, 0, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x99, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0xae, 0, V_L0 | V_MEM | V_NV | V_GRP },
	{ 0xc2, 0, V_I8 },
	{ 0xc2, 1, V_I8 },
	{ 0xc2, 2, V_I8 },
	{ 0xc2, 3, V_I8 },
	{ 0xc4, 1, V_L0 | V_I8 },
	{ 0xc5, 1, V_L0 | V_REG | V_NV | V_I8 },
	{ 0xc6, 0, V_I8 },
	{ 0xc6, 1, V_I8 },
	{ 0xd0, 1, 0 },
	{ 0xd0, 3, 0 },
	{ 0xd1, 1, 0 },
	{ 0xd2, 1, 0 },
	{ 0xd3, 1, 0 },
	{ 0xd4, 1, 0 },
	{ 0xd5, 1, 0 },
	{ 0xd6, 1, V_L0 | V_NV },
	{ 0xd7, 1, V_REG | V_NV },
	{ 0xd8, 1, 0 },
	{ 0xd9, 1, 0 },
	{ 0xda, 1, 0 },
	{ 0xdb, 1, 0 },
	{ 0xdc, 1, 0 },
	{ 0xdd, 1, 0 },
	{ 0xde, 1, 0 },
	{ 0xdf, 1, 0 },
	{ 0xe0, 1, 0 },
	{ 0xe1, 1, 0 },
	{ 0xe2, 1, 0 },
	{ 0xe3, 1, 0 },
	{ 0xe4, 1, 0 },
	{ 0xe5, 1, 0 },
	{ 0xe6, 1, V_NV },
	{ 0xe6, 2, V_NV },
	{ 0xe6, 3, V_NV },
	{ 0xe7, 1, V_MEM | V_NV },
	{ 0xe8, 1, 0 },
	{ 0xe9, 1, 0 },
	{ 0xea, 1, 0 },
	{ 0xeb, 1, 0 },
	{ 0xec, 1, 0 },
	{ 0xed, 1, 0 },
	{ 0xee, 1, 0 },
	{ 0xef, 1, 0 },
	{ 0xf0, 3, V_MEM | V_NV },
	{ 0xf1, 1, 0 },
	{ 0xf2, 1, 0 },
	{ 0xf3, 1, 0 },
	{ 0xf4, 1, 0 },
	{ 0xf5, 1, 0 },
	{ 0xf6, 1, 0 },
	{ 0xf7, 1, V_L0 | V_REG | V_NV },
	{ 0xf8, 1, 0 },
	{ 0xf9, 1, 0 },
	{ 0xfa, 1, 0 },
	{ 0xfb, 1, 0 },
	{ 0xfc, 1, 0 },
	{ 0xfd, 1, 0 },
	{ 0xfe, 1, 0 },
};

static const struct vop vex2[] = {
	{ 0x00, 1, 0 },
	{ 0x01, 1, 0 },
	{ 0x02, 1, 0 },
	{ 0x03, 1, 0 },
	{ 0x04, 1, 0 },
	{ 0x05, 1, 0 },
	{ 0x06, 1, 0 },
	{ 0x07, 1, 0 },
	{ 0x08, 1, 0 },
	{ 0x09, 1, 0 },
	{ 0x0a, 1, 0 },
	{ 0x0b, 1, 0 },
	{ 0x0c, 1, V_W0 },
	{ 0x0d, 1, V_W0 },
	{ 0x0e, 1, V_W0 | V_NV },
	{ 0x0f, 1, V_W0 | V_NV },
	{ 0x13, 1, V_W0 | V_NV },
	{ 0x16, 1, V_W0 | V_L1 },
	{ 0x17, 1, V_NV },
	{ 0x18, 1, V_W0 | V_NV },
	{ 0x19, 1, V_W0 | V_L1 | V_NV },
	{ 0x1a, 1, V_W0 | V_L1 | V_MEM | V_NV },
	{ 0x1c, 1, V_NV },
	{ 0x1d, 1, V_NV },
	{ 0x1e, 1, V_NV },
	{ 0x20, 1, V_NV },
	{ 0x21, 1, V_NV },
	{ 0x22, 1, V_NV },
	{ 0x23, 1, V_NV },
	{ 0x24, 1, V_NV },
	{ 0x25, 1, V_NV },
	{ 0x28, 1, 0 },
	{ 0x29, 1, 0 },
	{ 0x2a, 1, V_MEM | V_NV },
	{ 0x2b, 1, 0 },
	{ 0x2c, 1, V_W0 | V_MEM },
	{ 0x2d, 1, V_W0 | V_MEM },
	{ 0x2e, 1, V_W0 | V_MEM },
	{ 0x2f, 1, V_W0 | V_MEM },
	{ 0x30, 1, V_NV },
	{ 0x31, 1, V_NV },
	{ 0x32, 1, V_NV },
	{ 0x33, 1, V_NV },
	{ 0x34, 1, V_NV },
	{ 0x35, 1, V_NV },
	{ 0x36, 1, V_W0 | V_L1 },
	{ 0x37, 1, 0 },
	{ 0x38, 1, 0 },
	{ 0x39, 1, 0 },
	{ 0x3a, 1, 0 },
	{ 0x3b, 1, 0 },
	{ 0x3c, 1, 0 },
	{ 0x3d, 1, 0 },
	{ 0x3e, 1, 0 },
	{ 0x3f, 1, 0 },
	{ 0x40, 1, 0 },
	{ 0x41, 1, V_L0 | V_NV },
	{ 0x45, 1, 0 },
	{ 0x46, 1, V_W0 },
	{ 0x47, 1, 0 },
	{ 0x49, 0, V_W0 | V_L0 | V_NV | V_O64 | V_AMX },
	{ 0x49, 1, V_W0 | V_L0 | V_MEM | V_NV | V_O64 | V_AMX },
	{ 0x49, 3, V_W0 | V_L0 | V_REG | V_NV | V_O64 | V_AMX },
	{ 0x4b, 1, V_W0 | V_L0 | V_MEM | V_NV | V_O64 | V_AMX },
	{ 0x4b, 2, V_W0 | V_L0 | V_MEM | V_NV | V_O64 | V_AMX },
	{ 0x4b, 3, V_W0 | V_L0 | V_MEM | V_NV | V_O64 | V_AMX },
	{ 0x50, 1, V_W0 },
	{ 0x51, 1, V_W0 },
	{ 0x52, 1, V_W0 },
	{ 0x53, 1, V_W0 },
	{ 0x58, 1, V_W0 | V_NV },
	{ 0x59, 1, V_W0 | V_NV },
	{ 0x5a, 1, V_W0 | V_L1 | V_MEM | V_NV },
	{ 0x5c, 2, V_W0 | V_L0 | V_REG | V_O64 | V_AMX },
	{ 0x5e, 0, V_W0 | V_L0 | V_REG | V_O64 | V_AMX },
	{ 0x5e, 1, V_W0 | V_L0 | V_REG | V_O64 | V_AMX },
	{ 0x5e, 2, V_W0 | V_L0 | V_REG | V_O64 | V_AMX },
	{ 0x5e, 3, V_W0 | V_L0 | V_REG | V_O64 | V_AMX },
	{ 0x78, 1, V_W0 | V_NV },
	{ 0x79, 1, V_W0 | V_NV },
	{ 0x8c, 1, V_MEM },
	{ 0x8e, 1, V_MEM },
	{ 0x90, 1, V_VSIB },
	{ 0x91, 1, V_VSIB },
	{ 0x92, 1, V_VSIB },
	{ 0x93, 1, V_VSIB },
	{ 0x96, 1, 0 },
	{ 0x97, 1, 0 },
	{ 0x98, 1, 0 },
	{ 0x99, 1, 0 },
	{ 0x9a, 1, 0 },
	{ 0x9b, 1, 0 },
	{ 0x9c, 1, 0 },
	{ 0x9d, 1, 0 },
	{ 0x9e, 1, 0 },
	{ 0x9f, 1, 0 },
	{ 0xa6, 1, 0 },
	{ 0xa7, 1, 0 },
	{ 0xa8, 1, 0 },
	{ 0xa9, 1, 0 },
	{ 0xaa, 1, 0 },
	{ 0xab, 1, 0 },
	{ 0xac, 1, 0 },
	{ 0xad, 1, 0 },
	{ 0xae, 1, 0 },
	{ 0xaf, 1, 0 },
	{ 0xb6, 1, 0 },
	{ 0xb7, 1, 0 },
	{ 0xb8, 1, 0 },
	{ 0xb9, 1, 0 },
	{ 0xba, 1, 0 },
	{ 0xbb, 1, 0 },
	{ 0xbc, 1, 0 },
	{ 0xbd, 1, 0 },
	{ 0xbe, 1, 0 },
	{ 0xbf, 1, 0 },
	{ 0xcf, 1, V_W0 },
	{ 0xdb, 1, V_L0 | V_NV },
	{ 0xdc, 1, 0 },
	{ 0xdd, 1, 0 },
	{ 0xde, 1, 0 },
	{ 0xdf, 1, 0 },
	{ 0xf2, 0, V_L0 },
	{ 0xf3, 0, V_L0 | V_GRP },
	{ 0xf5, 0, V_L0 },
	{ 0xf5, 2, V_L0 },
	{ 0xf5, 3, V_L0 },
	{ 0xf6, 3, V_L0 },
	{ 0xf7, 0, V_L0 },
	{ 0xf7, 1, V_L0 },
	{ 0xf7, 2, V_L0 },
	{ 0xf7, 3, V_L0 },
};

static const struct vop vex3[] = {
	{ 0x00, 1, V_W1 | V_L1 | V_NV },
	{ 0x01, 1, V_W1 | V_L1 | V_NV },
	{ 0x02, 1, V_W0 },
	{ 0x04, 1, V_W0 | V_NV },
	{ 0x05, 1, V_W0 | V_NV },
	{ 0x06, 1, V_W0 | V_L1 },
	{ 0x08, 1, V_NV },
	{ 0x09, 1, V_NV },
	{ 0x0a, 1, 0 },
	{ 0x0b, 1, 0 },
	{ 0x0c, 1, 0 },
	{ 0x0d, 1, 0 },
	{ 0x0e, 1, 0 },
	{ 0x0f, 1, 0 },
	{ 0x14, 1, V_L0 | V_NV },
	{ 0x15, 1, V_L0 | V_NV },
	{ 0x16, 1, V_L0 | V_NV },
	{ 0x17, 1, V_L0 | V_NV },
	{ 0x18, 1, V_W0 | V_L1 },
	{ 0x19, 1, V_W0 | V_L1 | V_NV },
	{ 0x1d, 1, V_W0 | V_NV },
	{ 0x20, 1, V_L0 },
	{ 0x21, 1, V_L0 },
	{ 0x22, 1, V_L0 },
	{ 0x30, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x31, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x32, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x33, 1, V_L0 | V_REG | V_NV | V_KR | V_KM },
	{ 0x38, 1, V_W0 | V_L1 },
	{ 0x39, 1, V_W0 | V_L1 | V_NV },
	{ 0x40, 1, 0 },
	{ 0x41, 1, V_L0 },
	{ 0x42, 1, 0 },
	{ 0x44, 1, 0 },
	{ 0x46, 1, V_W0 | V_L1 },
	{ 0x48, 1, 0 },
	{ 0x49, 1, 0 },
	{ 0x4a, 1, V_W0 },
	{ 0x4b, 1, V_W0 },
	{ 0x4c, 1, V_W0 },
	{ 0x5c, 1, 0 },
	{ 0x5d, 1, 0 },
	{ 0x5e, 1, 0 },
	{ 0x5f, 1, 0 },
	{ 0x60, 1, V_L0 | V_NV },
	{ 0x61, 1, V_L0 | V_NV },
	{ 0x62, 1, V_L0 | V_NV },
	{ 0x63, 1, V_L0 | V_NV },
	{ 0x68, 1, 0 },
	{ 0x69, 1, 0 },
	{ 0x6a, 1, 0 },
	{ 0x6b, 1, 0 },
	{ 0x6c, 1, 0 },
	{ 0x6d, 1, 0 },
	{ 0x6e, 1, 0 },
	{ 0x6f, 1, 0 },
	{ 0x78, 1, 0 },
	{ 0x79, 1, 0 },
	{ 0x7a, 1, 0 },
	{ 0x7b, 1, 0 },
	{ 0x7c, 1, 0 },
	{ 0x7d, 1, 0 },
	{ 0x7e, 1, 0 },
	{ 0x7f, 1, 0 },
	{ 0xce, 1, V_W1 },
	{ 0xcf, 1, V_W1 },
	{ 0xdf, 1, V_L0 | V_NV },
	{ 0xf0, 3, V_L0 | V_NV },
};

static const struct vop xop8[] = {
	{ 0x85, 0, V_W0 | V_L0 },
	{ 0x86, 0, V_W0 | V_L0 },
	{ 0x87, 0, V_W0 | V_L0 },
	{ 0x8e, 0, V_W0 | V_L0 },
	{ 0x8f, 0, V_W0 | V_L0 },
	{ 0x95, 0, V_W0 | V_L0 },
	{ 0x96, 0, V_W0 | V_L0 },
	{ 0x97, 0, V_W0 | V_L0 },
	{ 0x9e, 0, V_W0 | V_L0 },
	{ 0x9f, 0, V_W0 | V_L0 },
	{ 0xa2, 0, 0 },
	{ 0xa3, 0, V_L0 },
	{ 0xa6, 0, V_W0 | V_L0 },
	{ 0xb6, 0, V_W0 | V_L0 },
	{ 0xc0, 0, V_W0 | V_L0 | V_NV },
	{ 0xc1, 0, V_W0 | V_L0 | V_NV },
	{ 0xc2, 0, V_W0 | V_L0 | V_NV },
	{ 0xc3, 0, V_W0 | V_L0 | V_NV },
	{ 0xcc, 0, V_W0 | V_L0 },
	{ 0xcd, 0, V_W0 | V_L0 },
	{ 0xce, 0, V_W0 | V_L0 },
	{ 0xcf, 0, V_W0 | V_L0 },
	{ 0xec, 0, V_W0 | V_L0 },
	{ 0xed, 0, V_W0 | V_L0 },
	{ 0xee, 0, V_W0 | V_L0 },
	{ 0xef, 0, V_W0 | V_L0 },
};

static const struct vop xop9[] = {
	{ 0x01, 0, V_L0 | V_GRP },
	{ 0x02, 0, V_L0 | V_GRP },
	{ 0x12, 0, V_L0 | V_REG | V_NV | V_GRP },
	{ 0x80, 0, V_W0 | V_NV },
	{ 0x81, 0, V_W0 | V_NV },
	{ 0x82, 0, V_W0 | V_L0 | V_NV },
	{ 0x83, 0, V_W0 | V_L0 | V_NV },
	{ 0x90, 0, V_L0 },
	{ 0x91, 0, V_L0 },
	{ 0x92, 0, V_L0 },
	{ 0x93, 0, V_L0 },
	{ 0x94, 0, V_L0 },
	{ 0x95, 0, V_L0 },
	{ 0x96, 0, V_L0 },
	{ 0x97, 0, V_L0 },
	{ 0x98, 0, V_L0 },
	{ 0x99, 0, V_L0 },
	{ 0x9a, 0, V_L0 },
	{ 0x9b, 0, V_L0 },
	{ 0xc1, 0, V_W0 | V_L0 | V_NV },
	{ 0xc2, 0, V_W0 | V_L0 | V_NV },
	{ 0xc3, 0, V_W0 | V_L0 | V_NV },
	{ 0xc6, 0, V_W0 | V_L0 | V_NV },
	{ 0xc7, 0, V_W0 | V_L0 | V_NV },
	{ 0xcb, 0, V_W0 | V_L0 | V_NV },
	{ 0xd1, 0, V_W0 | V_L0 | V_NV },
	{ 0xd2, 0, V_W0 | V_L0 | V_NV },
	{ 0xd3, 0, V_W0 | V_L0 | V_NV },
	{ 0xd6, 0, V_W0 | V_L0 | V_NV },
	{ 0xd7, 0, V_W0 | V_L0 | V_NV },
	{ 0xdb, 0, V_W0 | V_L0 | V_NV },
	{ 0xe1, 0, V_W0 | V_L0 | V_NV },
	{ 0xe2, 0, V_W0 | V_L0 | V_NV },
	{ 0xe3, 0, V_W0 | V_L0 | V_NV },
};

static const struct vop xopa[] = {
	{ 0x10, 0, V_L0 | V_NV },
	{ 0x12, 0, V_L0 | V_GRP },
};

static const struct vop evex1[] = {
	{ 0x10, 0, V_W0 | V_NV | V_NB },
	{ 0x10, 1, V_W1 | V_NV | V_NB },
	{ 0x10, 2, V_W0 | V_LIG | V_MEM | V_NV | V_NB },
	{ 0x10, 2, V_W0 | V_LIG | V_REG | V_NB },
	{ 0x10, 3, V_W1 | V_LIG | V_MEM | V_NV | V_NB },
	{ 0x10, 3, V_W1 | V_LIG | V_REG | V_NB },
	{ 0x11, 0, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x11, 1, V_W1 | V_NV | V_NB | V_NZM },
	{ 0x11, 2, V_W0 | V_LIG | V_MEM | V_NV | V_NB | V_NZM },
	{ 0x11, 2, V_W0 | V_LIG | V_REG | V_NB },
	{ 0x11, 3, V_W1 | V_LIG | V_MEM | V_NV | V_NB | V_NZM },
	{ 0x11, 3, V_W1 | V_LIG | V_REG | V_NB },
	{ 0x12, 0, V_W0 | V_L0 | V_NB | V_NK },
	{ 0x12, 1, V_W1 | V_L0 | V_MEM | V_NB | V_NK },
	{ 0x12, 2, V_W0 | V_NV | V_NB },
	{ 0x12, 3, V_W1 | V_NV | V_NB },
	{ 0x13, 0, V_W0 | V_L0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x13, 1, V_W1 | V_L0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x14, 0, V_W0 },
	{ 0x14, 1, V_W1 },
	{ 0x15, 0, V_W0 },
	{ 0x15, 1, V_W1 },
	{ 0x16, 0, V_W0 | V_L0 | V_NB | V_NK },
	{ 0x16, 1, V_W1 | V_L0 | V_MEM | V_NB | V_NK },
	{ 0x16, 2, V_W0 | V_NV | V_NB },
	{ 0x17, 0, V_W0 | V_L0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x17, 1, V_W1 | V_L0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x28, 0, V_W0 | V_NV | V_NB },
	{ 0x28, 1, V_W1 | V_NV | V_NB },
	{ 0x29, 0, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x29, 1, V_W1 | V_NV | V_NB | V_NZM },
	{ 0x2a, 2, V_LIG | V_ER | V_NK },
	{ 0x2a, 3, V_W0 | V_LIG | V_SAE | V_NK },
	{ 0x2a, 3, V_W1 | V_LIG | V_ER | V_ER64 | V_NK },
	{ 0x2b, 0, V_W0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x2b, 1, V_W1 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x2c, 2, V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x2c, 3, V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x2d, 2, V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x2d, 3, V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x2e, 0, V_W0 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x2e, 1, V_W1 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x2f, 0, V_W0 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x2f, 1, V_W1 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x51, 0, V_W0 | V_ER | V_NV },
	{ 0x51, 1, V_W1 | V_ER | V_NV },
	{ 0x51, 2, V_W0 | V_LIG | V_ER },
	{ 0x51, 3, V_W1 | V_LIG | V_ER },
	{ 0x54, 0, V_W0 },
	{ 0x54, 1, V_W1 },
	{ 0x55, 0, V_W0 },
	{ 0x55, 1, V_W1 },
	{ 0x56, 0, V_W0 },
	{ 0x56, 1, V_W1 },
	{ 0x57, 0, V_W0 },
	{ 0x57, 1, V_W1 },
	{ 0x58, 0, V_W0 | V_ER },
	{ 0x58, 1, V_W1 | V_ER },
	{ 0x58, 2, V_W0 | V_LIG | V_ER },
	{ 0x58, 3, V_W1 | V_LIG | V_ER },
	{ 0x59, 0, V_W0 | V_ER },
	{ 0x59, 1, V_W1 | V_ER },
	{ 0x59, 2, V_W0 | V_LIG | V_ER },
	{ 0x59, 3, V_W1 | V_LIG | V_ER },
	{ 0x5a, 0, V_W0 | V_SAE | V_NV },
	{ 0x5a, 1, V_W1 | V_ER | V_NV },
	{ 0x5a, 2, V_W0 | V_LIG | V_SAE },
	{ 0x5a, 3, V_W1 | V_LIG | V_ER },
	{ 0x5b, 0, V_ER | V_NV },
	{ 0x5b, 1, V_W0 | V_ER | V_NV },
	{ 0x5b, 2, V_W0 | V_SAE | V_NV },
	{ 0x5c, 0, V_W0 | V_ER },
	{ 0x5c, 1, V_W1 | V_ER },
	{ 0x5c, 2, V_W0 | V_LIG | V_ER },
	{ 0x5c, 3, V_W1 | V_LIG | V_ER },
	{ 0x5d, 0, V_W0 | V_SAE },
	{ 0x5d, 1, V_W1 | V_SAE },
	{ 0x5d, 2, V_W0 | V_LIG | V_SAE },
	{ 0x5d, 3, V_W1 | V_LIG | V_SAE },
	{ 0x5e, 0, V_W0 | V_ER },
	{ 0x5e, 1, V_W1 | V_ER },
	{ 0x5e, 2, V_W0 | V_LIG | V_ER },
	{ 0x5e, 3, V_W1 | V_LIG | V_ER },
	{ 0x5f, 0, V_W0 | V_SAE },
	{ 0x5f, 1, V_W1 | V_SAE },
	{ 0x5f, 2, V_W0 | V_LIG | V_SAE },
	{ 0x5f, 3, V_W1 | V_LIG | V_SAE },
	{ 0x60, 1, V_NB },
	{ 0x61, 1, V_NB },
	{ 0x62, 1, V_W0 },
	{ 0x63, 1, V_NB },
	{ 0x64, 1, V_NB | V_KRD },
	{ 0x65, 1, V_NB | V_KRD },
	{ 0x66, 1, V_W0 | V_KRD },
	{ 0x67, 1, V_NB },
	{ 0x68, 1, V_NB },
	{ 0x69, 1, V_NB },
	{ 0x6a, 1, V_W0 },
	{ 0x6b, 1, V_W0 },
	{ 0x6c, 1, V_W1 },
	{ 0x6d, 1, V_W1 },
	{ 0x6e, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x6f, 1, V_NV | V_NB },
	{ 0x6f, 2, V_NV | V_NB },
	{ 0x6f, 3, V_NV | V_NB },
	{ 0x70, 1, V_W0 | V_NV | V_I8 },
	{ 0x70, 2, V_NV | V_NB | V_I8 },
	{ 0x70, 3, V_NV | V_NB | V_I8 },
	{ 0x71, 1, V_NB | V_GRP | V_I8 },
	{ 0x72, 1, V_GRP | V_I8 },
	{ 0x73, 1, V_GRP | V_I8 },
	{ 0x74, 1, V_NB | V_KRD },
	{ 0x75, 1, V_NB | V_KRD },
	{ 0x76, 1, V_W0 | V_KRD },
	{ 0x78, 0, V_SAE | V_NV },
	{ 0x78, 1, V_SAE | V_NV },
	{ 0x78, 2, V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x78, 3, V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x79, 0, V_ER | V_NV },
	{ 0x79, 1, V_ER | V_NV },
	{ 0x79, 2, V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x79, 3, V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x7a, 1, V_SAE | V_NV },
	{ 0x7a, 2, V_W0 | V_SAE | V_NV },
	{ 0x7a, 2, V_W1 | V_ER | V_NV },
	{ 0x7a, 3, V_ER | V_NV },
	{ 0x7b, 1, V_ER | V_NV },
	{ 0x7b, 2, V_LIG | V_ER | V_NK },
	{ 0x7b, 3, V_W0 | V_LIG | V_SAE | V_NK },
	{ 0x7b, 3, V_W1 | V_LIG | V_ER | V_ER64 | V_NK },
	{ 0x7e, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x7e, 2, V_W1 | V_L0 | V_NV | V_NB | V_NK },
	{ 0x7f, 1, V_NV | V_NB | V_NZM },
	{ 0x7f, 2, V_NV | V_NB | V_NZM },
	{ 0x7f, 3, V_NV | V_NB | V_NZM },
	{ 0xc2, 0, V_W0 | V_SAE | V_I8 | V_KRD },
	{ 0xc2, 1, V_W1 | V_SAE | V_I8 | V_KRD },
	{ 0xc2, 2, V_W0 | V_LIG | V_SAE | V_I8 | V_KRD },
	{ 0xc2, 3, V_W1 | V_LIG | V_SAE | V_I8 | V_KRD },
	{ 0xc4, 1, V_L0 | V_NB | V_NK | V_I8 },
	{ 0xc5, 1, V_L0 | V_REG | V_NV | V_NB | V_NK | V_I8 | V_GR },
	{ 0xc6, 0, V_W0 | V_I8 },
	{ 0xc6, 1, V_W1 | V_I8 },
	{ 0xd1, 1, V_NB },
	{ 0xd2, 1, V_W0 | V_NB },
	{ 0xd3, 1, V_W1 | V_NB },
	{ 0xd4, 1, V_W1 },
	{ 0xd5, 1, V_NB },
	{ 0xd6, 1, V_W1 | V_L0 | V_NV | V_NB | V_NK },
	{ 0xd8, 1, V_NB },
	{ 0xd9, 1, V_NB },
	{ 0xda, 1, V_NB },
	{ 0xdb, 1, 0 },
	{ 0xdc, 1, V_NB },
	{ 0xdd, 1, V_NB },
	{ 0xde, 1, V_NB },
	{ 0xdf, 1, 0 },
	{ 0xe0, 1, V_NB },
	{ 0xe1, 1, V_NB },
	{ 0xe2, 1, V_NB },
	{ 0xe3, 1, V_NB },
	{ 0xe4, 1, V_NB },
	{ 0xe5, 1, V_NB },
	{ 0xe6, 1, V_W1 | V_SAE | V_NV },
	{ 0xe6, 2, V_W0 | V_SAE | V_NV },
	{ 0xe6, 2, V_W1 | V_ER | V_NV },
	{ 0xe6, 3, V_W1 | V_ER | V_NV },
	{ 0xe7, 1, V_W0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0xe8, 1, V_NB },
	{ 0xe9, 1, V_NB },
	{ 0xea, 1, V_NB },
	{ 0xeb, 1, 0 },
	{ 0xec, 1, V_NB },
	{ 0xed, 1, V_NB },
	{ 0xee, 1, V_NB },
	{ 0xef, 1, 0 },
	{ 0xf1, 1, V_NB },
	{ 0xf2, 1, V_W0 | V_NB },
	{ 0xf3, 1, V_W1 | V_NB },
	{ 0xf4, 1, V_W1 },
	{ 0xf5, 1, V_NB },
	{ 0xf6, 1, V_NB | V_NK | V_NZ },
	{ 0xf8, 1, V_NB },
	{ 0xf9, 1, V_NB },
	{ 0xfa, 1, V_W0 },
	{ 0xfb, 1, V_W1 },
	{ 0xfc, 1, V_NB },
	{ 0xfd, 1, V_NB },
	{ 0xfe, 1, V_W0 },
};

static const struct vop evex2[] = {
	{ 0x00, 1, V_NB },
	{ 0x04, 1, V_NB },
	{ 0x0b, 1, V_NB },
	{ 0x0c, 1, V_W0 },
	{ 0x0d, 1, V_W1 },
	{ 0x10, 1, V_W1 | V_NB },
	{ 0x10, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x11, 1, V_W1 | V_NB },
	{ 0x11, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x12, 1, V_W1 | V_NB },
	{ 0x12, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x13, 1, V_W0 | V_SAE | V_NV | V_NB },
	{ 0x13, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x14, 1, 0 },
	{ 0x14, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x15, 1, 0 },
	{ 0x15, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x16, 1, V_L1E },
	{ 0x18, 1, V_W0 | V_NV | V_NB },
	{ 0x19, 1, V_L1E | V_NV | V_NB },
	{ 0x1a, 1, V_L1E | V_MEM | V_NV | V_NB },
	{ 0x1b, 1, V_L2 | V_MEM | V_NV | V_NB },
	{ 0x1c, 1, V_NV | V_NB },
	{ 0x1d, 1, V_NV | V_NB },
	{ 0x1e, 1, V_W0 | V_NV },
	{ 0x1f, 1, V_W1 | V_NV },
	{ 0x20, 1, V_NV | V_NB },
	{ 0x20, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x21, 1, V_NV | V_NB },
	{ 0x21, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x22, 1, V_NV | V_NB },
	{ 0x22, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x23, 1, V_NV | V_NB },
	{ 0x23, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x24, 1, V_NV | V_NB },
	{ 0x24, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x25, 1, V_W0 | V_NV | V_NB },
	{ 0x25, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x26, 1, V_NB | V_KRD },
	{ 0x26, 2, V_NB | V_KRD },
	{ 0x27, 1, V_KRD },
	{ 0x27, 2, V_KRD },
	{ 0x28, 1, V_W1 },
	{ 0x28, 2, V_REG | V_NV | V_NB | V_NK | V_KM },
	{ 0x29, 1, V_W1 | V_KRD },
	{ 0x29, 2, V_REG | V_NV | V_NB | V_NK | V_KR },
	{ 0x2a, 1, V_W0 | V_MEM | V_NV | V_NB | V_NK },
	{ 0x2a, 2, V_W1 | V_REG | V_NV | V_NB | V_NK | V_KM },
	{ 0x2b, 1, V_W0 },
	{ 0x2c, 1, V_ER },
	{ 0x2d, 1, V_LIG | V_ER },
	{ 0x30, 1, V_NV | V_NB },
	{ 0x30, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x31, 1, V_NV | V_NB },
	{ 0x31, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x32, 1, V_NV | V_NB },
	{ 0x32, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x33, 1, V_NV | V_NB },
	{ 0x33, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x34, 1, V_NV | V_NB },
	{ 0x34, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x35, 1, V_W0 | V_NV | V_NB },
	{ 0x35, 2, V_W0 | V_NV | V_NB | V_NZM },
	{ 0x36, 1, V_L1E },
	{ 0x37, 1, V_W1 | V_KRD },
	{ 0x38, 1, V_NB },
	{ 0x38, 2, V_REG | V_NV | V_NB | V_NK | V_KM },
	{ 0x39, 1, 0 },
	{ 0x39, 2, V_REG | V_NV | V_NB | V_NK | V_KR },
	{ 0x3a, 1, V_NB },
	{ 0x3a, 2, V_W0 | V_REG | V_NV | V_NB | V_NK | V_KM },
	{ 0x3b, 1, 0 },
	{ 0x3c, 1, V_NB },
	{ 0x3d, 1, 0 },
	{ 0x3e, 1, V_NB },
	{ 0x3f, 1, 0 },
	{ 0x40, 1, 0 },
	{ 0x42, 1, V_SAE | V_NV },
	{ 0x43, 1, V_LIG | V_SAE },
	{ 0x44, 1, V_NV },
	{ 0x45, 1, 0 },
	{ 0x46, 1, 0 },
	{ 0x47, 1, 0 },
	{ 0x4c, 1, V_NV },
	{ 0x4d, 1, V_LIG },
	{ 0x4e, 1, V_NV },
	{ 0x4f, 1, V_LIG },
	{ 0x50, 1, V_W0 },
	{ 0x51, 1, V_W0 },
	{ 0x52, 1, V_W0 },
	{ 0x52, 2, V_W0 },
	{ 0x52, 3, V_W0 | V_L2 | V_MEM | V_NB },
	{ 0x53, 1, V_W0 },
	{ 0x53, 3, V_W0 | V_L2 | V_MEM | V_NB },
	{ 0x54, 1, V_NV | V_NB },
	{ 0x55, 1, V_NV },
	{ 0x58, 1, V_W0 | V_NV | V_NB },
	{ 0x59, 1, V_NV | V_NB },
	{ 0x5a, 1, V_L1E | V_MEM | V_NV | V_NB },
	{ 0x5b, 1, V_L2 | V_MEM | V_NV | V_NB },
	{ 0x62, 1, V_NV | V_NB },
	{ 0x63, 1, V_NV | V_NB | V_NZM },
	{ 0x64, 1, 0 },
	{ 0x65, 1, 0 },
	{ 0x66, 1, V_NB },
	{ 0x68, 3, V_NZ | V_NK | V_KRD },
	{ 0x70, 1, V_W1 | V_NB },
	{ 0x71, 1, 0 },
	{ 0x72, 1, V_W1 | V_NB },
	{ 0x72, 2, V_W0 | V_NV },
	{ 0x72, 3, V_W0 },
	{ 0x73, 1, 0 },
	{ 0x75, 1, V_NB },
	{ 0x76, 1, 0 },
	{ 0x77, 1, 0 },
	{ 0x78, 1, V_W0 | V_NV | V_NB },
	{ 0x79, 1, V_W0 | V_NV | V_NB },
	{ 0x7a, 1, V_W0 | V_REG | V_NV | V_NB },
	{ 0x7b, 1, V_W0 | V_REG | V_NV | V_NB },
	{ 0x7c, 1, V_REG | V_NV | V_NB },
	{ 0x7d, 1, V_NB },
	{ 0x7e, 1, 0 },
	{ 0x7f, 1, 0 },
	{ 0x83, 1, V_W1 },
	{ 0x88, 1, V_NV | V_NB },
	{ 0x89, 1, V_NV | V_NB },
	{ 0x8a, 1, V_NV | V_NB | V_NZM },
	{ 0x8b, 1, V_NV | V_NB | V_NZM },
	{ 0x8d, 1, V_NB },
	{ 0x8f, 1, V_W0 | V_NB | V_KRD },
	{ 0x90, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0x91, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0x92, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0x93, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0x96, 1, V_ER },
	{ 0x97, 1, V_ER },
	{ 0x98, 1, V_ER },
	{ 0x99, 1, V_LIG | V_ER },
	{ 0x9a, 1, V_ER },
	{ 0x9a, 3, V_W0 | V_L2 | V_MEM | V_NB },
	{ 0x9b, 1, V_LIG | V_ER },
	{ 0x9b, 3, V_W0 | V_LIG | V_MEM | V_NB },
	{ 0x9c, 1, V_ER },
	{ 0x9d, 1, V_LIG | V_ER },
	{ 0x9e, 1, V_ER },
	{ 0x9f, 1, V_LIG | V_ER },
	{ 0xa0, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0xa1, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0xa2, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0xa3, 1, V_VSIB | V_KREQ | V_NZ | V_NB | V_NV },
	{ 0xa6, 1, V_ER },
	{ 0xa7, 1, V_ER },
	{ 0xa8, 1, V_ER },
	{ 0xa9, 1, V_LIG | V_ER },
	{ 0xaa, 1, V_ER },
	{ 0xaa, 3, V_W0 | V_L2 | V_MEM | V_NB },
	{ 0xab, 1, V_LIG | V_ER },
	{ 0xab, 3, V_W0 | V_LIG | V_MEM | V_NB },
	{ 0xac, 1, V_ER },
	{ 0xad, 1, V_LIG | V_ER },
	{ 0xae, 1, V_ER },
	{ 0xaf, 1, V_LIG | V_ER },
	{ 0xb4, 1, V_W1 },
	{ 0xb5, 1, V_W1 },
	{ 0xb6, 1, V_ER },
	{ 0xb7, 1, V_ER },
	{ 0xb8, 1, V_ER },
	{ 0xb9, 1, V_LIG | V_ER },
	{ 0xba, 1, V_ER },
	{ 0xbb, 1, V_LIG | V_ER },
	{ 0xbc, 1, V_ER },
	{ 0xbd, 1, V_LIG | V_ER },
	{ 0xbe, 1, V_ER },
	{ 0xbf, 1, V_LIG | V_ER },
	{ 0xc4, 1, V_NV },
	{ 0xc6, 1, V_L2 | V_VSIB | V_KREQ | V_NV | V_NZ | V_NB | V_GRP },
	{ 0xc7, 1, V_L2 | V_VSIB | V_KREQ | V_NV | V_NZ | V_NB | V_GRP },
	{ 0xc8, 1, V_L2 | V_SAE | V_NV },
	{ 0xca, 1, V_L2 | V_SAE | V_NV },
	{ 0xcb, 1, V_LIG | V_SAE },
	{ 0xcc, 1, V_L2 | V_SAE | V_NV },
	{ 0xcd, 1, V_LIG | V_SAE },
	{ 0xcf, 1, V_W0 | V_NB },
	{ 0xdc, 1, V_NB | V_NK | V_NZ },
	{ 0xdd, 1, V_NB | V_NK | V_NZ },
	{ 0xde, 1, V_NB | V_NK | V_NZ },
	{ 0xdf, 1, V_NB | V_NK | V_NZ },
};

static const struct vop evex3[] = {
	{ 0x00, 1, V_W1 | V_L1E | V_NV },
	{ 0x01, 1, V_W1 | V_L1E | V_NV },
	{ 0x03, 1, 0 },
	{ 0x04, 1, V_W0 | V_NV },
	{ 0x05, 1, V_W1 | V_NV },
	{ 0x08, 0, V_W0 | V_SAE | V_NV },
	{ 0x08, 1, V_W0 | V_SAE | V_NV },
	{ 0x09, 1, V_W1 | V_SAE | V_NV },
	{ 0x0a, 0, V_W0 | V_LIG | V_SAE },
	{ 0x0a, 1, V_W0 | V_LIG | V_SAE },
	{ 0x0b, 1, V_W1 | V_LIG | V_SAE },
	{ 0x0f, 1, V_NB },
	{ 0x14, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x15, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x16, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x17, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x18, 1, V_L1E | V_NB },
	{ 0x19, 1, V_L1E | V_NV | V_NB | V_NZM },
	{ 0x1a, 1, V_L2 | V_NB },
	{ 0x1b, 1, V_L2 | V_NV | V_NB | V_NZM },
	{ 0x1d, 1, V_W0 | V_SAE | V_NV | V_NB | V_NZM },
	{ 0x1e, 1, V_KRD },
	{ 0x1f, 1, V_KRD },
	{ 0x20, 1, V_L0 | V_NB | V_NK },
	{ 0x21, 1, V_W0 | V_L0 | V_NB | V_NK },
	{ 0x22, 1, V_L0 | V_NB | V_NK },
	{ 0x23, 1, V_L1E },
	{ 0x25, 1, 0 },
	{ 0x26, 0, V_W0 | V_SAE | V_NV },
	{ 0x26, 1, V_SAE | V_NV },
	{ 0x27, 0, V_W0 | V_LIG | V_SAE },
	{ 0x27, 1, V_LIG | V_SAE },
	{ 0x38, 1, V_L1E | V_NB },
	{ 0x39, 1, V_L1E | V_NV | V_NB | V_NZM },
	{ 0x3a, 1, V_L2 | V_NB },
	{ 0x3b, 1, V_L2 | V_NV | V_NB | V_NZM },
	{ 0x3e, 1, V_NB | V_KRD },
	{ 0x3f, 1, V_NB | V_KRD },
	{ 0x42, 1, V_W0 | V_NB },
	{ 0x43, 1, V_L1E },
	{ 0x44, 1, V_NB | V_NK | V_NZ },
	{ 0x50, 1, V_SAE },
	{ 0x51, 1, V_LIG | V_SAE },
	{ 0x54, 1, V_SAE },
	{ 0x55, 1, V_LIG | V_SAE },
	{ 0x56, 0, V_W0 | V_SAE | V_NV },
	{ 0x56, 1, V_SAE | V_NV },
	{ 0x57, 0, V_W0 | V_LIG | V_SAE },
	{ 0x57, 1, V_LIG | V_SAE },
	{ 0x66, 0, V_W0 | V_NV | V_KRD },
	{ 0x66, 1, V_NV | V_KRD },
	{ 0x67, 0, V_W0 | V_LIG | V_NV | V_KRD | V_NB },
	{ 0x67, 1, V_LIG | V_NV | V_KRD | V_NB },
	{ 0x70, 1, V_W1 | V_NB },
	{ 0x71, 1, 0 },
	{ 0x72, 1, V_W1 | V_NB },
	{ 0x73, 1, 0 },
	{ 0xc2, 0, V_W0 | V_SAE | V_KRD },
	{ 0xc2, 2, V_W0 | V_LIG | V_SAE | V_KRD },
	{ 0xce, 1, V_W1 },
	{ 0xcf, 1, V_W1 },
};

static const struct vop evex5[] = {
	{ 0x10, 2, V_W0 | V_LIG | V_MEM | V_NV | V_NB },
	{ 0x10, 2, V_W0 | V_LIG | V_REG | V_NB },
	{ 0x11, 2, V_W0 | V_LIG | V_MEM | V_NV | V_NB | V_NZM },
	{ 0x11, 2, V_W0 | V_LIG | V_REG | V_NB },
	{ 0x1d, 0, V_W0 | V_LIG | V_ER },
	{ 0x1d, 1, V_W0 | V_ER | V_NV },
	{ 0x2a, 2, V_W0 | V_LIG | V_ER | V_NK },
	{ 0x2a, 2, V_W1 | V_LIG | V_ER | V_NK | V_O64 },
	{ 0x2c, 2, V_W0 | V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x2c, 2, V_W1 | V_LIG | V_SAE | V_NV | V_NK | V_O64 | V_GR },
	{ 0x2d, 2, V_W0 | V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x2d, 2, V_W1 | V_LIG | V_ER | V_NV | V_NK | V_O64 | V_GR },
	{ 0x2e, 0, V_W0 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x2f, 0, V_W0 | V_LIG | V_SAE | V_NV | V_NK },
	{ 0x51, 0, V_W0 | V_ER | V_NV },
	{ 0x51, 2, V_W0 | V_LIG | V_ER },
	{ 0x58, 0, V_W0 | V_ER },
	{ 0x58, 2, V_W0 | V_LIG | V_ER },
	{ 0x59, 0, V_W0 | V_ER },
	{ 0x59, 2, V_W0 | V_LIG | V_ER },
	{ 0x5a, 0, V_W0 | V_SAE | V_NV },
	{ 0x5a, 1, V_W1 | V_ER | V_NV },
	{ 0x5a, 2, V_W0 | V_LIG | V_SAE },
	{ 0x5a, 3, V_W1 | V_LIG | V_ER },
	{ 0x5b, 0, V_ER | V_NV },
	{ 0x5b, 1, V_W0 | V_ER | V_NV },
	{ 0x5b, 2, V_W0 | V_SAE | V_NV },
	{ 0x5c, 0, V_W0 | V_ER },
	{ 0x5c, 2, V_W0 | V_LIG | V_ER },
	{ 0x5d, 0, V_W0 | V_SAE },
	{ 0x5d, 2, V_W0 | V_LIG | V_SAE },
	{ 0x5e, 0, V_W0 | V_ER },
	{ 0x5e, 2, V_W0 | V_LIG | V_ER },
	{ 0x5f, 0, V_W0 | V_SAE },
	{ 0x5f, 2, V_W0 | V_LIG | V_SAE },
	{ 0x6e, 1, V_L0 | V_NV | V_NB | V_NK },
	{ 0x78, 0, V_W0 | V_SAE | V_NV },
	{ 0x78, 1, V_W0 | V_SAE | V_NV },
	{ 0x78, 2, V_W0 | V_LIG | V_SAE | V_NV | V_NK | V_GR },
	{ 0x78, 2, V_W1 | V_LIG | V_SAE | V_NV | V_NK | V_O64 | V_GR },
	{ 0x79, 0, V_W0 | V_ER | V_NV },
	{ 0x79, 1, V_W0 | V_ER | V_NV },
	{ 0x79, 2, V_W0 | V_LIG | V_ER | V_NV | V_NK | V_GR },
	{ 0x79, 2, V_W1 | V_LIG | V_ER | V_NV | V_NK | V_O64 | V_GR },
	{ 0x7a, 1, V_W0 | V_SAE | V_NV },
	{ 0x7a, 3, V_ER | V_NV },
	{ 0x7b, 1, V_W0 | V_ER | V_NV },
	{ 0x7b, 2, V_W0 | V_LIG | V_ER | V_NK },
	{ 0x7b, 2, V_W1 | V_LIG | V_ER | V_NK | V_O64 },
	{ 0x7c, 0, V_W0 | V_SAE | V_NV },
	{ 0x7c, 1, V_W0 | V_SAE | V_NV },
	{ 0x7d, 0, V_W0 | V_ER | V_NV },
	{ 0x7d, 1, V_W0 | V_ER | V_NV },
	{ 0x7d, 2, V_W0 | V_ER | V_NV },
	{ 0x7d, 3, V_W0 | V_ER | V_NV },
	{ 0x7e, 1, V_L0 | V_NV | V_NB | V_NK },
};

static const struct vop evex6[] = {
	{ 0x13, 0, V_W0 | V_LIG | V_SAE },
	{ 0x13, 1, V_W0 | V_SAE | V_NV },
	{ 0x2c, 1, V_W0 | V_ER },
	{ 0x2d, 1, V_W0 | V_LIG | V_ER },
	{ 0x42, 1, V_W0 | V_SAE | V_NV },
	{ 0x43, 1, V_W0 | V_LIG | V_SAE },
	{ 0x4c, 1, V_W0 | V_NV },
	{ 0x4d, 1, V_W0 | V_LIG },
	{ 0x4e, 1, V_W0 | V_NV },
	{ 0x4f, 1, V_W0 | V_LIG },
	{ 0x56, 2, V_W0 | V_ER | V_NSD },
	{ 0x56, 3, V_W0 | V_ER | V_NSD },
	{ 0x57, 2, V_W0 | V_LIG | V_ER | V_NSD },
	{ 0x57, 3, V_W0 | V_LIG | V_ER | V_NSD },
	{ 0x96, 1, V_W0 | V_ER },
	{ 0x97, 1, V_W0 | V_ER },
	{ 0x98, 1, V_W0 | V_ER },
	{ 0x99, 1, V_W0 | V_LIG | V_ER },
	{ 0x9a, 1, V_W0 | V_ER },
	{ 0x9b, 1, V_W0 | V_LIG | V_ER },
	{ 0x9c, 1, V_W0 | V_ER },
	{ 0x9d, 1, V_W0 | V_LIG | V_ER },
	{ 0x9e, 1, V_W0 | V_ER },
	{ 0x9f, 1, V_W0 | V_LIG | V_ER },
	{ 0xa6, 1, V_W0 | V_ER },
	{ 0xa7, 1, V_W0 | V_ER },
	{ 0xa8, 1, V_W0 | V_ER },
	{ 0xa9, 1, V_W0 | V_LIG | V_ER },
	{ 0xaa, 1, V_W0 | V_ER },
	{ 0xab, 1, V_W0 | V_LIG | V_ER },
	{ 0xac, 1, V_W0 | V_ER },
	{ 0xad, 1, V_W0 | V_LIG | V_ER },
	{ 0xae, 1, V_W0 | V_ER },
	{ 0xaf, 1, V_W0 | V_LIG | V_ER },
	{ 0xb6, 1, V_W0 | V_ER },
	{ 0xb7, 1, V_W0 | V_ER },
	{ 0xb8, 1, V_W0 | V_ER },
	{ 0xb9, 1, V_W0 | V_LIG | V_ER },
	{ 0xba, 1, V_W0 | V_ER },
	{ 0xbb, 1, V_W0 | V_LIG | V_ER },
	{ 0xbc, 1, V_W0 | V_ER },
	{ 0xbd, 1, V_W0 | V_LIG | V_ER },
	{ 0xbe, 1, V_W0 | V_ER },
	{ 0xbf, 1, V_W0 | V_LIG | V_ER },
	{ 0xd6, 2, V_W0 | V_ER | V_NSD },
	{ 0xd6, 3, V_W0 | V_ER | V_NSD },
	{ 0xd7, 2, V_W0 | V_LIG | V_ER | V_NSD },
	{ 0xd7, 3, V_W0 | V_LIG | V_ER | V_NSD },
};

/* May EVEX.b select rounding / SAE in the register form of this row? */
static bool rc_ok(const struct st *s, uint64_t f)
{
	if (f & V_SAE)
		return true;
	return (f & V_ER) && !((f & V_ER64) && !is64(s));
}

/* Does a VEX/EVEX/XOP table row accept the decoded W, L, mod? */
static bool vrow_ok(const struct st *s, uint64_t f, bool evex)
{
	bool reg = (f & V_NOM) || MOD(s->o->modrm) == 3;

	if ((f & V_W0) && s->W)
		return false;
	if ((f & V_W1) && !s->W)
		return false;
	if ((f & V_MEM) && reg)
		return false;
	if ((f & V_REG) && !reg)
		return false;
	if (!evex) {
		if ((f & V_L0) && s->L)
			return false;
		if ((f & V_L1) && !s->L)
			return false;
		return true;
	}
	/* EVEX.b with a register operand turns L'L into the rounding-control field
	 * (SDM Vol. 2A 2.7.5 / 2.7.6), so the vector length is then 512 / not checked. */
	if (reg && s->bb && rc_ok(s, f))
		return true;
	if (s->L == 3)
		return false;
	if (f & V_LIG)
		return true;
	if ((f & V_L0) && s->L)
		return false;
	if ((f & V_L2) && s->L != 2)
		return false;
	if ((f & V_L1E) && s->L == 0)
		return false;
	return true;
}

/* First row for (op, pp) whose W/L/mod constraints match; NULL if none. Tables are sorted
 * by op, then pp. */
static const struct vop *vfind(const struct st *s, const struct vop *t, unsigned n, uint8_t op, bool evex)
{
	unsigned lo = 0, hi = n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (t[mid].op < op || (t[mid].op == op && t[mid].pp < s->pp))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (unsigned i = lo; i < n && t[i].op == op && t[i].pp == s->pp; i++)
		if (vrow_ok(s, t[i].f, evex))
			return &t[i];
	return 0;
}

/* Does any row exist for (op, pp) (ignoring W/L/mod)? Used to decide whether a ModRM follows. */
static const struct vop *vany(const struct st *s, const struct vop *t, unsigned n, uint8_t op)
{
	unsigned lo = 0, hi = n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (t[mid].op < op || (t[mid].op == op && t[mid].pp < s->pp))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && t[lo].op == op && t[lo].pp == s->pp)
		return &t[lo];
	return 0;
}

/* VEX/XOP/EVEX ModRM.reg-selected groups (shift-by-immediate, BMI1 F3, XOP TBM, ...). */
static bool vex_group_ok(const struct st *s)
{
	const struct dec_insn *o = s->o;
	uint8_t r = REG(o->modrm);
	unsigned key = (unsigned)o->encoding << 16 | (unsigned)o->map << 8 | o->opcode;

	switch (key) {
	case DEC_ENC_VEX << 16 | 1 << 8 | 0x71:
	case DEC_ENC_VEX << 16 | 1 << 8 | 0x72:
		return r == 2 || r == 4 || r == 6;
	case DEC_ENC_VEX << 16 | 1 << 8 | 0x73:
		return r == 2 || r == 3 || r == 6 || r == 7;
	case DEC_ENC_VEX << 16 | 1 << 8 | 0xae:
		return r == 2 || r == 3;
	case DEC_ENC_VEX << 16 | 2 << 8 | 0xf3:
		return r >= 1 && r <= 3;
	case DEC_ENC_EVEX << 16 | 1 << 8 | 0x71:        /* VPSRLW/VPSRAW/VPSLLW imm */
		return r == 2 || r == 4 || r == 6;
	case DEC_ENC_EVEX << 16 | 1 << 8 | 0x72:        /* VPROR/VPROL, VPSRLD, VPSRAD/Q, VPSLLD */
		return r == 0 || r == 1 || ((r == 2 || r == 6) && !s->W) || r == 4;
	case DEC_ENC_EVEX << 16 | 1 << 8 | 0x73:        /* VPSRLQ, VPSRLDQ, VPSLLQ, VPSLLDQ */
		if (r == 3 || r == 7)   /* byte shifts: no broadcast, no masking */
			return !(s->bb && MOD(o->modrm) != 3) && !s->aaa && !s->z;
		return (r == 2 || r == 6) && s->W;
	case DEC_ENC_EVEX << 16 | 2 << 8 | 0xc6:
	case DEC_ENC_EVEX << 16 | 2 << 8 | 0xc7:
		return r == 1 || r == 2 || r == 5 || r == 6;
	case DEC_ENC_XOP << 16 | 9 << 8 | 0x01:
		return r != 0;
	case DEC_ENC_XOP << 16 | 9 << 8 | 0x02:
		return r == 1 || r == 6;
	case DEC_ENC_XOP << 16 | 9 << 8 | 0x12:
		return r == 0 || r == 1;
	case DEC_ENC_XOP << 16 | 10 << 8 | 0x12:
		return r == 0 || r == 1;
	default:
		return true;
	}
}

/* FP16 complex multiplies (SDM Vol. 2C VFCMULCPH etc.): #UD if the destination is also a source. */
static bool nsd_ok(const struct st *s, bool reg)
{
	uint8_t m = s->o->modrm;
	unsigned dst = REG(m) | s->R << 3 | s->R2 << 4;
	unsigned src1 = s->vvvv | s->V2 << 4;
	unsigned src2 = RM(m) | s->B << 3 | s->X << 4;
	if (dst == src1)
		return false;
	return !reg || dst != src2;
}

/* Gathers (SDM Vol. 2A 2.3.12 VSIB; Vol. 2C VPGATHERDD/VGATHERDPS "Operation"): #UD if the
 * destination, index (and for VEX the mask) registers are not all different. */
static bool gather_ok(const struct st *s, bool evex)
{
	const struct dec_insn *o = s->o;
	unsigned dst = REG(o->modrm) | s->R << 3 | s->R2 << 4;
	unsigned idx = ((o->sib >> 3) & 7) | s->X << 3 | (evex ? s->V2 << 4 : 0);
	if (dst == idx)
		return false;
	if (!evex && (s->vvvv == dst || s->vvvv == idx))
		return false;
	return true;
}

/* AMX (SDM Vol. 2A LDTILECFG, Vol. 2C TDPBSSD/TILELOADD/TILEZERO): tile registers are TMM0-7; TDP* need three distinct tiles;
 * TILERELEASE is exactly C0, TILEZERO has rm=0, the tile loads/stores need a SIB byte. */
static bool amx_ok(const struct st *s)
{
	const struct dec_insn *o = s->o;
	uint8_t m = o->modrm, r = REG(m), rm = RM(m);
	bool reg = MOD(m) == 3;

	switch (o->opcode) {
	case 0x49:
		if (s->pp == 0 && reg)
			return m == 0xc0;       /* TILERELEASE */
		if (s->pp == 3)
			return !s->R && rm == 0;        /* TILEZERO */
		return r == 0;                  /* LDTILECFG / STTILECFG */
	case 0x4b:
		return !s->R && rm == 4;
	default:        /* 5C/5E TDP* */
		if (s->R || s->B || s->vvvv > 7)
			return false;
		return r != rm && r != s->vvvv && rm != s->vvvv;
	}
}

/* Decodes everything after the VEX/XOP/EVEX prefix: opcode, ModRM, imm; checks the row. */
static int vex_body(struct st *s)
{
	struct dec_insn *o = s->o;
	const struct vop *t;
	unsigned n;
	bool evex = o->encoding == DEC_ENC_EVEX;

	if (!need(s, 1))
		return s->err;
	o->opcode = s->b[s->pos++];

	switch (o->encoding) {
	case DEC_ENC_VEX:
		switch (o->map) {
		case 1: t = vex1; n = sizeof vex1 / sizeof vex1[0]; break;
		case 2: t = vex2; n = sizeof vex2 / sizeof vex2[0]; break;
		case 3: t = vex3; n = sizeof vex3 / sizeof vex3[0]; break;
		default: return DEC_INVALID;
		}
		break;
	case DEC_ENC_XOP:
		switch (o->map) {
		case 8: t = xop8; n = sizeof xop8 / sizeof xop8[0]; break;
		case 9: t = xop9; n = sizeof xop9 / sizeof xop9[0]; break;
		case 10: t = xopa; n = sizeof xopa / sizeof xopa[0]; break;
		default: return DEC_INVALID;
		}
		break;
	default:
		switch (o->map) {
		case 1: t = evex1; n = sizeof evex1 / sizeof evex1[0]; break;
		case 2: t = evex2; n = sizeof evex2 / sizeof evex2[0]; break;
		case 3: t = evex3; n = sizeof evex3 / sizeof evex3[0]; break;
		case 5: t = evex5; n = sizeof evex5 / sizeof evex5[0]; break;
		case 6: t = evex6; n = sizeof evex6 / sizeof evex6[0]; break;
		default: return DEC_INVALID;
		}
		break;
	}

	const struct vop *any = vany(s, t, n, o->opcode);
	if (!any)
		return DEC_INVALID;
	if (!(any->f & V_NOM)) {
		if (!do_modrm(s, false))
			return s->err;
	}
	const struct vop *row = vfind(s, t, n, o->opcode, evex);
	if (!row)
		return DEC_INVALID;
	uint64_t f = row->f;
	bool reg = (f & V_NOM) || MOD(o->modrm) == 3;

	if ((f & V_O64) && !is64(s))
		return DEC_INVALID;
	if ((f & V_GRP) && !vex_group_ok(s))
		return DEC_INVALID;
	/* SDM Vol. 2A 2.3.5.6 / 2.7.2: an unused vvvv must be 1111b, else #UD */
	/* with VSIB, EVEX.V' extends the index register instead of vvvv */
	if ((f & V_NV) && (s->vraw || (s->V2 && !(f & V_VSIB))))
		return DEC_INVALID;
	if ((f & V_KV) && (s->vvvv > 7 || s->V2))
		return DEC_INVALID;
	if ((f & (V_KR | V_KRD)) && is64(s) && (s->R || s->R2))
		return DEC_INVALID;
	if ((f & V_GR) && s->R2)
		return DEC_INVALID;
	if ((f & V_AMX) && !amx_ok(s))
		return DEC_INVALID;
	if (f & V_VSIB) {
		/* SDM Vol. 2A 2.3.12: VSIB requires a SIB byte */
		if (reg || RM(o->modrm) != 4 || s->asz == 2)
			return DEC_INVALID;
		/* gathers (not the scatters / prefetches) must use three different registers */
		bool is_gather = o->map == 2 && o->opcode >= 0x90 && o->opcode <= 0x93;
		if (is_gather && !gather_ok(s, evex))
			return DEC_INVALID;
	}
	if (evex) {
		if (s->z && (f & V_NZ))
			return DEC_INVALID;
		if (s->z && !reg && (f & V_NZM))
			return DEC_INVALID;
		if (s->z && (f & V_KRD))
			return DEC_INVALID;
		if (s->aaa && (f & V_NK))
			return DEC_INVALID;
		if (!s->aaa && (f & V_KREQ))
			return DEC_INVALID;
		if (s->bb && !reg && (f & V_NB))
			return DEC_INVALID;     /* no embedded broadcast */
		/* SDM Vol. 2A 2.7.4 / 2.7.11: zeroing-masking with k0 (EVEX.z=1, aaa=000) is #UD */
		if (s->z && !s->aaa)
			return DEC_INVALID;
		if ((f & V_NSD) && !nsd_ok(s, reg))
			return DEC_INVALID;
		if (s->bb && reg && !rc_ok(s, f))
			return DEC_INVALID;
		if (s->bb && !reg && (f & V_LIG))
			return DEC_INVALID;     /* no broadcast for scalar operations */
	}
	unsigned imm = 0;
	if (o->encoding == DEC_ENC_XOP)
		imm = o->map == 8 ? 1 : o->map == 10 ? 4 : 0;
	else if (o->map == 3 || (f & V_I8))
		imm = 1;
	if (!do_imm(s, imm))
		return s->err;
	return DEC_OK;
}

/* C4/C5 VEX prefix (SDM Vol. 2A 2.3.5). */
static int do_vex(struct st *s, uint8_t esc)
{
	struct dec_insn *o = s->o;
	/* SDM Vol. 2A 2.3.2: 66/F2/F3/LOCK/REX before VEX is #UD */
	if (s->p66 || s->last_f2f3 || o->lock || s->rex)
		return DEC_INVALID;
	o->encoding = DEC_ENC_VEX;
	if (esc == 0xc5) {
		if (!need(s, 1))
			return s->err;
		uint8_t b1 = s->b[s->pos++];
		s->R = !(b1 & 0x80);
		s->vvvv = s->vraw = (~b1 >> 3) & 15;
		s->L = (b1 >> 2) & 1;
		s->pp = b1 & 3;
		o->map = 1;
	} else {
		if (!need(s, 2))
			return s->err;
		uint8_t b1 = s->b[s->pos], b2 = s->b[s->pos + 1];
		s->pos += 2;
		s->R = !(b1 & 0x80);
		s->X = !(b1 & 0x40);
		s->B = !(b1 & 0x20);
		o->map = b1 & 0x1f;
		s->W = b2 >> 7;
		s->vvvv = s->vraw = (~b2 >> 3) & 15;
		s->L = (b2 >> 2) & 1;
		s->pp = b2 & 3;
	}
	if (!is64(s)) {
		/* Outside 64-bit mode only XMM0-7 exist: VEX.B and vvvv[3] are ignored (R/X are 1 by
		 * the LES/LDS disambiguation); an unused vvvv must still be 1111b (checked on vraw). */
		s->R = s->X = s->B = 0;
		s->vvvv &= 7;
	}
	return vex_body(s);
}

/* 8F XOP prefix (AMD APM Vol. 6 1.8.1). */
static int do_xop(struct st *s)
{
	struct dec_insn *o = s->o;
	if (s->p66 || s->last_f2f3 || o->lock || s->rex)
		return DEC_INVALID;
	o->encoding = DEC_ENC_XOP;
	if (!need(s, 2))
		return s->err;
	uint8_t b1 = s->b[s->pos], b2 = s->b[s->pos + 1];
	s->pos += 2;
	s->R = !(b1 & 0x80);
	s->X = !(b1 & 0x40);
	s->B = !(b1 & 0x20);
	o->map = b1 & 0x1f;
	s->W = b2 >> 7;
	s->vvvv = s->vraw = (~b2 >> 3) & 15;
	s->L = (b2 >> 2) & 1;
	s->pp = b2 & 3;
	if (!is64(s)) {
		s->R = s->X = s->B = 0;
		s->vvvv &= 7;
	}
	if (s->pp)
		return DEC_INVALID;
	return vex_body(s);
}

/* 62 EVEX prefix (SDM Vol. 2A 2.7.1). */
static int do_evex(struct st *s)
{
	struct dec_insn *o = s->o;
	if (s->p66 || s->last_f2f3 || o->lock || s->rex)
		return DEC_INVALID;
	o->encoding = DEC_ENC_EVEX;
	if (!need(s, 3))
		return s->err;
	uint8_t p0 = s->b[s->pos], p1 = s->b[s->pos + 1], p2 = s->b[s->pos + 2];
	s->pos += 3;
	/* P0[3] and P1[2] are fixed (0 and 1) */
	if ((p0 & 0x08) || !(p1 & 0x04))
		return DEC_INVALID;
	s->R = !(p0 & 0x80);
	s->X = !(p0 & 0x40);
	s->B = !(p0 & 0x20);
	s->R2 = !(p0 & 0x10);
	o->map = p0 & 7;
	s->W = p1 >> 7;
	s->vvvv = s->vraw = (~p1 >> 3) & 15;
	s->pp = p1 & 3;
	s->z = p2 >> 7;
	s->L = (p2 >> 5) & 3;
	s->bb = (p2 >> 4) & 1;
	s->V2 = !(p2 & 0x08);
	s->aaa = p2 & 7;
	if (!is64(s)) {
		/* outside 64-bit mode EVEX.V' must be 1 (inverted form), R'/R/X/B and vvvv[3] are ignored */
		if (s->V2)
			return DEC_INVALID;
		s->R = s->X = s->B = s->R2 = 0;
		s->vvvv &= 7;
	}
	return vex_body(s);
}

/* ---------------------------------------------------------------------------------------------
 * Legacy two- and three-byte maps
 * ------------------------------------------------------------------------------------------- */

/* 0F 01 with mod=11 (SDM Vol. 2D Table A-6, Group 7; AMD APM Vol. 3 for the AMD rows): for each
 * ModRM byte C0..FF, the mandatory prefixes (bit 0 none, 1 66, 2 F3, 3 F2) that select a defined
 * instruction in any mode (low nibble) or only in 64-bit mode (high nibble). AMD's instructions
 * ignore 66/F2/F3 (15 = any prefix). */
static const uint8_t grp7_reg[64] = {
	/* C0 ENCLV VMCALL VMLAUNCH VMRESUME VMXOFF PCONFIG - - */
	1, 1, 1, 1, 1, 1, 0, 0,
	/* C8 MONITOR MWAIT CLAC STAC 66:TDCALL 66:SEAMRET 66:SEAMOPS ENCLS/66:SEAMCALL */
	1, 1, 1, 1, 2, 2 << 4, 2 << 4, 1 | 2 << 4,
	/* D0 XGETBV XSETBV - - VMFUNC XEND XTEST ENCLU */
	1, 1, 0, 0, 1, 1, 1, 1,
	/* D8 VMRUN VMMCALL VMLOAD VMSAVE STGI CLGI SKINIT INVLPGA */
	15, 15, 15, 15, 15, 15, 15, 15,
	/* E0 SMSW r */
	15, 15, 15, 15, 15, 15, 15, 15,
	/* E8 SERIALIZE/F3:SETSSBSY/F2:XSUSLDTRK, F2:XRESLDTRK, F3:SAVEPREVSSP, -, F3:UIRET, F3:TESTUI,
	 * RDPKRU/F3:CLUI, WRPKRU/F3:STUI */
	1 | 4 | 8, 8, 4, 0, 4 << 4, 4 << 4, 1 | 4 << 4, 1 | 4 << 4,
	/* F0 LMSW r */
	15, 15, 15, 15, 15, 15, 15, 15,
	/* F8 SWAPGS RDTSCP MONITORX/F3:MCOMMIT MWAITX CLZERO RDPRU INVLPGB/F3:RMPADJUST/F2:RMPUPDATE
	 * TLBSYNC/F3:PSMASH/F2:PVALIDATE */
	15 << 4, 15, 1 | 4, 1, 15, 15, 1 | 12 << 4, 1 | 8 | 4 << 4,
};

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

static int two_byte(struct st *s)
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

static int one_byte(struct st *s, uint8_t op)
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
