/* hv/arch/x86/decode/decode.h — x86 instruction length and branch decoder (freestanding).
 * Decodes one instruction of 16-, 32- or 64-bit code: length, validity, control-transfer kind and static target. */
#ifndef HV_X86_DECODE_H
#define HV_X86_DECODE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* Default operand/address size of the code segment; 64 = long mode with CS.L=1. */
enum dec_mode { DEC_MODE_16, DEC_MODE_32, DEC_MODE_64 };

enum dec_branch {
	DEC_BR_NONE,        /* not a control transfer */
	DEC_BR_JCC,         /* Jcc rel8/rel32 (conditional) */
	DEC_BR_LOOP,        /* LOOP/LOOPE/LOOPNE/JCXZ/JECXZ/JRCXZ (conditional) */
	DEC_BR_JMP,         /* JMP rel (direct) */
	DEC_BR_JMP_IND,     /* JMP r/m (indirect near) */
	DEC_BR_CALL,        /* CALL rel */
	DEC_BR_CALL_IND,    /* CALL r/m */
	DEC_BR_RET,         /* RET / RET imm16 (near) */
	DEC_BR_JMP_FAR,     /* JMP ptr16:xx, JMP m16:xx */
	DEC_BR_CALL_FAR,    /* CALL ptr16:xx, CALL m16:xx */
	DEC_BR_RET_FAR,     /* RETF / RETF imm16 */
	DEC_BR_INT,         /* INT n, INT3, INTO, INT1 (F1) */
	DEC_BR_IRET,        /* IRET/IRETD/IRETQ */
	DEC_BR_SYSCALL,
	DEC_BR_SYSRET,
	DEC_BR_SYSENTER,
	DEC_BR_SYSEXIT,
	DEC_BR_XBEGIN,      /* XBEGIN rel16/rel32: continues at the next insn, jumps to target on abort */
	DEC_BR_XABORT,      /* XABORT imm8: inside a transaction, jumps to the XBEGIN fallback */
	DEC_BR_UD,          /* UD0/UD1/UD2: valid encodings that always raise #UD */
	DEC_BR_UIRET,       /* UIRET (user-interrupt return) */
	DEC_BR_RSM,         /* RSM (return from SMM) */
};

/* Which encoding space the opcode came from. */
enum dec_encoding {
	DEC_ENC_LEGACY,     /* one-byte, 0F, 0F 38, 0F 3A maps */
	DEC_ENC_3DNOW,      /* 0F 0F /r ib */
	DEC_ENC_VEX,        /* C4/C5 */
	DEC_ENC_EVEX,       /* 62 */
	DEC_ENC_XOP,        /* 8F (AMD) */
};

struct dec_insn {
	uint8_t len;            /* 1..15 */
	enum dec_branch branch;
	bool has_target;        /* target is static (direct branches) */
	uint64_t target;        /* rip + len + disp, truncated to the operand size as the CPU does */
	uint8_t opsize, addrsize; /* effective, in bytes */
	uint8_t rep;            /* 0, 0xF2 or 0xF3 when a REP/REPNE prefix applies to a string insn */

	enum dec_encoding encoding;
	uint8_t map;            /* 0: one-byte, 1: 0F, 2: 0F 38, 3: 0F 3A, 5/6: EVEX maps, 8..10: XOP maps */
	uint8_t opcode;         /* last opcode byte (the imm8 suffix for 3DNow!) */
	uint8_t nprefixes;      /* legacy + REX prefix bytes before the opcode/VEX/EVEX/XOP escape */
	uint8_t seg;            /* last segment-override prefix byte, 0 if none */
	bool lock;              /* F0 present */
	uint8_t rex;            /* effective REX byte (0 if none or cancelled by a later prefix) */
	bool has_modrm, has_sib;
	uint8_t modrm, sib;
	uint8_t disp_size;      /* bytes */
	int32_t disp;
	uint8_t imm_size;       /* total immediate/offset bytes (both parts of ENTER/far ptr) */
	uint8_t modrm_offset;   /* offset of ModRM within the insn (valid if has_modrm) */
	uint8_t imm_offset;     /* offset of the first immediate byte (valid if imm_size) */
	bool rip_relative;      /* 64-bit mode ModRM mod=00 rm=101 */
};

enum dec_status {
	DEC_OK = 0,
	DEC_INVALID = -1,       /* #UD: undefined, or longer than 15 bytes */
	DEC_TRUNCATED = -2,     /* avail too small to know */
};

/* Decodes the instruction at bytes[0..avail) executing at rip in the given mode. Returns a
 * dec_status; *out is filled on DEC_OK (and left partially filled otherwise). */
int dec_decode(const uint8_t *bytes, size_t avail, enum dec_mode mode, uint64_t rip, struct dec_insn *out);

/* Human-readable name of a branch kind ("none", "jcc", ...). */
const char *dec_branch_name(enum dec_branch br);

#endif
