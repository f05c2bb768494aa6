/* The legacy opcode maps: one-byte (SDM Vol. 2D Table A-2), 0F, 0F 38 / 0F 3A,
 * 3DNow! suffixes and 0F 01's register forms (Group 7). */
#include "internal.h"

/* ---------------------------------------------------------------------------------------------
 * One-byte opcode map (SDM Vol. 2D Table A-2)
 * ------------------------------------------------------------------------------------------- */


#define M   F_M
#define I8  F_I8
#define IZ  F_IZ
#define L_  F_LCK
#define D64 F_D64
#define F64 F_F64
#define I64 F_I64
#define ALU(x) M | L_, M | L_, M, M, I8, IZ

const uint16_t op1[256] = {
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



#define E(f, p) { (uint16_t)(f), (uint8_t)(p) }
#define BAD2 E(F_BAD, 0)
#define PL(f) E(f, 0)

const struct op2 op2[256] = {
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
const uint8_t op38[256] = {
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
const uint8_t op3a[256] = {
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
const uint8_t amd3dnow[32] = {
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

/* ---------------------------------------------------------------------------------------------
 * Legacy two- and three-byte maps
 * ------------------------------------------------------------------------------------------- */

/* 0F 01 with mod=11 (SDM Vol. 2D Table A-6, Group 7; AMD APM Vol. 3 for the AMD rows): for each
 * ModRM byte C0..FF, the mandatory prefixes (bit 0 none, 1 66, 2 F3, 3 F2) that select a defined
 * instruction in any mode (low nibble) or only in 64-bit mode (high nibble). AMD's instructions
 * ignore 66/F2/F3 (15 = any prefix). */
const uint8_t grp7_reg[64] = {
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
