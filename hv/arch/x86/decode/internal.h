/* The decoder's own declarations, shared by its files (decode.c: the entry
 * point, prefixes, ModRM/SIB/displacement/immediates; legacy.c: the one-,
 * two- and three-byte maps; vex.c: VEX, XOP and EVEX; tables.c and
 * vex_tables.c: the opcode tables). Nothing outside hv/arch/x86/decode
 * includes it: decode.h is the interface. */
#ifndef HV_X86_DECODE_INTERNAL_H
#define HV_X86_DECODE_INTERNAL_H

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

static inline bool is64(const struct st *s)
{
	return s->mode == DEC_MODE_64;
}

/* decode.c */
bool need(struct st *s, unsigned n);
bool do_modrm(struct st *s, bool force_reg);
bool do_imm(struct st *s, unsigned n);
int64_t sval(const uint8_t *p, unsigned n);
uint64_t trunc_ip(uint64_t v, unsigned osz);
unsigned pfx_index(const struct st *s);
bool pfx_ok(const struct st *s, uint8_t mask);
void mand_consumed(struct st *s);
bool lock_ok(const struct st *s, bool lockable);

/* ---------------------------------------------------------------------------------------------
 * Legacy maps (tables.c, legacy.c)
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

extern const uint16_t op1[256];
extern const struct op2 op2[256];
extern const uint8_t op38[256], op3a[256];
extern const uint8_t amd3dnow[32];
extern const uint8_t grp7_reg[64];
int one_byte(struct st *s, uint8_t op);
int two_byte(struct st *s);

/* ---------------------------------------------------------------------------------------------
 * VEX / XOP / EVEX (vex_tables.c, vex.c)
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

extern const struct vop vex1[];
extern const unsigned vex1_n;
extern const struct vop vex2[];
extern const unsigned vex2_n;
extern const struct vop vex3[];
extern const unsigned vex3_n;
extern const struct vop xop8[];
extern const unsigned xop8_n;
extern const struct vop xop9[];
extern const unsigned xop9_n;
extern const struct vop xopa[];
extern const unsigned xopa_n;
extern const struct vop evex1[];
extern const unsigned evex1_n;
extern const struct vop evex2[];
extern const unsigned evex2_n;
extern const struct vop evex3[];
extern const unsigned evex3_n;
extern const struct vop evex5[];
extern const unsigned evex5_n;
extern const struct vop evex6[];
extern const unsigned evex6_n;
int do_vex(struct st *s, uint8_t esc);
int do_xop(struct st *s);
int do_evex(struct st *s);

#endif
