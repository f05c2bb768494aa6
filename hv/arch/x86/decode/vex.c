/* VEX (C4/C5), XOP (8F) and EVEX (62) encodings: the prefix fields, then the row of the opcode
 * tables (vex_tables.c) and the checks it asks for. */
#include "internal.h"

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
		case 1: t = vex1; n = vex1_n; break;
		case 2: t = vex2; n = vex2_n; break;
		case 3: t = vex3; n = vex3_n; break;
		default: return DEC_INVALID;
		}
		break;
	case DEC_ENC_XOP:
		switch (o->map) {
		case 8: t = xop8; n = xop8_n; break;
		case 9: t = xop9; n = xop9_n; break;
		case 10: t = xopa; n = xopa_n; break;
		default: return DEC_INVALID;
		}
		break;
	default:
		switch (o->map) {
		case 1: t = evex1; n = evex1_n; break;
		case 2: t = evex2; n = evex2_n; break;
		case 3: t = evex3; n = evex3_n; break;
		case 5: t = evex5; n = evex5_n; break;
		case 6: t = evex6; n = evex6_n; break;
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
int do_vex(struct st *s, uint8_t esc)
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
int do_xop(struct st *s)
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
int do_evex(struct st *s)
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
