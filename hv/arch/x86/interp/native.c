/* hv/arch/x86/interp/native.c — the interpreter's arithmetic, run natively: each operation is
 * executed by the processor we run on, on registers only, with the guest's arithmetic flags
 * loaded before it and read back after it. In the hypervisor that processor is the one the
 * guest runs on (the silicon, or QEMU TCG's emulation of it), so the flags the SDM leaves
 * undefined (OF of multi-bit shifts and rotates, AF of logic ops and shifts, SF/ZF/PF/AF of
 * MUL/IMUL, CF/OF/SF/AF/PF of BSF/BSR...) are exactly what the guest would have seen.
 *
 * Only CF PF AF ZF SF OF are taken from the guest: every other RFLAGS bit (IF, TF, DF, AC, ...)
 * stays the host's own across the POPFQ (SDM Vol. 2B POPF: in 64-bit mode at CPL 0 POPFQ
 * loads all of them, so the mask is what keeps IF and TF ours). The stack is used below a
 * 128-byte gap so that a host-built test's red zone survives (the hypervisor has none). */
#include "arch/x86/interp/interp.h"
#include "arch/x86/paging.h"

_Static_assert(INTERP_ARITH_FLAGS == (RFLAGS_CF | RFLAGS_PF | RFLAGS_AF | RFLAGS_ZF | RFLAGS_SF | RFLAGS_OF),
	       "the arithmetic flags");

#define KEEP_HOST	(~INTERP_ARITH_FLAGS)

#define FLAGS_IN							\
	"lea -128(%%rsp), %%rsp\n\t"					\
	"pushfq\n\t"							\
	"andq %[keep], (%%rsp)\n\t"					\
	"orq %[fin], (%%rsp)\n\t"					\
	"popfq\n\t"
#define FLAGS_OUT							\
	"\n\tpushfq\n\t"						\
	"popq %[fout]\n\t"						\
	"lea 128(%%rsp), %%rsp"

/* a = a OP b at one width; `mod` is the operand modifier (b, w, k, q) and `sfx` the suffix */
#define ALU2(insn, sfx, mod)						\
	__asm__ volatile(FLAGS_IN insn sfx " %" mod "[b], %" mod "[a]" FLAGS_OUT \
			 : [a] "+r"(a), [fout] "=&r"(fo)			\
			 : [b] "r"(b), [fin] "r"(fi), [keep] "i"(KEEP_HOST)	\
			 : "cc", "memory")
/* a = OP a */
#define ALU1(insn, sfx, mod)						\
	__asm__ volatile(FLAGS_IN insn sfx " %" mod "[a]" FLAGS_OUT	\
			 : [a] "+r"(a), [fout] "=&r"(fo)			\
			 : [fin] "r"(fi), [keep] "i"(KEEP_HOST)		\
			 : "cc", "memory")

#define ALL_WIDTHS(M, insn)						\
	switch (w) {							\
	case 1: M(insn, "b", "b"); break;				\
	case 2: M(insn, "w", "w"); break;				\
	case 4: M(insn, "l", "k"); break;				\
	default: M(insn, "q", "q"); break;				\
	}
/* IMUL r,r/m, BT*, BSF/BSR have no 8-bit form: the core never asks for one */
#define WIDE_WIDTHS(M, insn)						\
	switch (w) {							\
	case 2: M(insn, "w", "w"); break;				\
	case 4: M(insn, "l", "k"); break;				\
	default: M(insn, "q", "q"); break;				\
	}

static u64 width_mask(unsigned w)
{
	return w >= 8 ? ~0ull : (1ull << (w * 8)) - 1;
}

u64 interp_native_alu(enum interp_op op, unsigned w, u64 a, u64 b, u64 *flags)
{
	u64 fi = *flags & INTERP_ARITH_FLAGS, fo = fi;
	u64 a0 = a;

	switch (op) {
	case IOP_ADD: ALL_WIDTHS(ALU2, "add"); break;
	case IOP_OR: ALL_WIDTHS(ALU2, "or"); break;
	case IOP_ADC: ALL_WIDTHS(ALU2, "adc"); break;
	case IOP_SBB: ALL_WIDTHS(ALU2, "sbb"); break;
	case IOP_AND: ALL_WIDTHS(ALU2, "and"); break;
	case IOP_SUB: ALL_WIDTHS(ALU2, "sub"); break;
	case IOP_XOR: ALL_WIDTHS(ALU2, "xor"); break;
	case IOP_CMP: ALL_WIDTHS(ALU2, "cmp"); break;
	case IOP_TEST: ALL_WIDTHS(ALU2, "test"); break;
	case IOP_INC: ALL_WIDTHS(ALU1, "inc"); break;
	case IOP_DEC: ALL_WIDTHS(ALU1, "dec"); break;
	case IOP_NEG: ALL_WIDTHS(ALU1, "neg"); break;
	case IOP_NOT: ALL_WIDTHS(ALU1, "not"); break;
	case IOP_IMUL2: WIDE_WIDTHS(ALU2, "imul"); break;
	case IOP_BT: WIDE_WIDTHS(ALU2, "bt"); break;
	case IOP_BTS: WIDE_WIDTHS(ALU2, "bts"); break;
	case IOP_BTR: WIDE_WIDTHS(ALU2, "btr"); break;
	case IOP_BTC: WIDE_WIDTHS(ALU2, "btc"); break;
	case IOP_BSF: WIDE_WIDTHS(ALU2, "bsf"); break;
	case IOP_BSR: WIDE_WIDTHS(ALU2, "bsr"); break;
	case IOP_TZCNT: WIDE_WIDTHS(ALU2, "tzcnt"); break;
	case IOP_LZCNT: WIDE_WIDTHS(ALU2, "lzcnt"); break;
	default:
		break;
	}
	*flags = (*flags & ~INTERP_ARITH_FLAGS) | (fo & INTERP_ARITH_FLAGS);
	if (op == IOP_CMP || op == IOP_TEST || op == IOP_BT)
		return a0;
	if (op == IOP_BSF || op == IOP_BSR || op == IOP_TZCNT || op == IOP_LZCNT)
		return a;	/* the whole register: see the core's BSF/BSR */
	return a & width_mask(w);
}

/* SDM Vol. 2A MUL / IMUL (one operand): AL*src -> AX; AX*src -> DX:AX; EAX -> EDX:EAX; RAX -> RDX:RAX.
 * DIV / IDIV: AX / src -> AL, AH; DX:AX -> AX, DX; ... */
#define MULDIV(insn, sfx, mod)						\
	__asm__ volatile(FLAGS_IN insn sfx " %" mod "[b]" FLAGS_OUT	\
			 : "+a"(a), "+d"(d), [fout] "=&r"(fo)			\
			 : [b] "r"(b), [fin] "r"(fi), [keep] "i"(KEEP_HOST)	\
			 : "cc", "memory")

void interp_native_mul(bool sign, unsigned w, u64 *ax, u64 *dx, u64 src, u64 *flags)
{
	u64 fi = *flags & INTERP_ARITH_FLAGS, fo = fi;
	u64 a = *ax, d = *dx, b = src;

	if (sign) {
		ALL_WIDTHS(MULDIV, "imul");
	} else {
		ALL_WIDTHS(MULDIV, "mul");
	}
	*ax = a;
	*dx = d;
	*flags = (*flags & ~INTERP_ARITH_FLAGS) | (fo & INTERP_ARITH_FLAGS);
}

void interp_native_div(bool sign, unsigned w, u64 *ax, u64 *dx, u64 src, u64 *flags)
{
	u64 fi = *flags & INTERP_ARITH_FLAGS, fo = fi;
	u64 a = *ax, d = *dx, b = src;

	if (sign) {
		ALL_WIDTHS(MULDIV, "idiv");
	} else {
		ALL_WIDTHS(MULDIV, "div");
	}
	*ax = a;
	*dx = d;
	*flags = (*flags & ~INTERP_ARITH_FLAGS) | (fo & INTERP_ARITH_FLAGS);
}
#undef MULDIV

/* Group 2 (SDM Vol. 2B SAL/SAR/SHL/SHR, RCL/RCR/ROL/ROR). The forms do NOT make the same
 * undefined flags: on the Intel Xeon the unit test ran on, ROR r32, 14 leaves OF as it was,
 * ROR r32, CL (CL = 14) computes it, and ROR m32, 14 computes it too (test_interp.c found both).
 * So each runs in the guest's own form: by 1 (D0/D1), by imm8 (C0/C1) or by CL (D2/D3), on a
 * register (AL/AX/EAX/RAX) or on memory (a cell on our stack holding the guest's operand,
 * at [RDX]). CL forms are inline; the others come from a table of stubs, 6 bytes each:
 * [66|48] C0/C1/D0/D1 ModRM [imm8] RET, INT3 padding, indexed by (register or memory,
 * ModRM.reg, width, count). The imm8 index is the count masked to 6 bits: the processor
 * masks it (to 5 bits below 64-bit operands) before it shifts, and the unit test checks random
 * full imm8 values of every form against this. */
#define STUB_SIZE	6
#define STUB_COUNTS	64
__asm__(".pushsection .text\n"
	".macro interp_stub w, n, m, by1\n"
	/* gas's comparisons make -1 for true: lengths are counted with .if */
	"  .set interp_len, 3\n"
	"  .if \\by1\n"
	"    .set interp_op, 0xd0\n"
	"  .else\n"
	"    .set interp_op, 0xc0\n"
	"    .set interp_len, interp_len + 1\n"
	"  .endif\n"
	"  .if \\w\n"
	"    .set interp_op, interp_op + 1\n"
	"  .endif\n"
	"  .if \\w == 1\n"
	"    .byte 0x66\n"
	"    .set interp_len, interp_len + 1\n"
	"  .elseif \\w == 3\n"
	"    .byte 0x48\n"
	"    .set interp_len, interp_len + 1\n"
	"  .endif\n"
	"  .byte interp_op, \\m + (\\n << 3)\n"
	"  .if \\by1 == 0\n"
	"    .byte interp_ii\n"
	"  .endif\n"
	"  .byte 0xc3\n"
	"  .fill 6 - interp_len, 1, 0xcc\n"
	".endm\n"
	".macro interp_stubs m, by1\n"
	"  .irp n, 0, 1, 2, 3, 4, 5, 6, 7\n"
	"    .irp w, 0, 1, 2, 3\n"
	"      .if \\by1\n"
	"        interp_stub \\w, \\n, \\m, 1\n"
	"      .else\n"
	"        .set interp_ii, 0\n"
	"        .rept 64\n"
	"          interp_stub \\w, \\n, \\m, 0\n"
	"          .set interp_ii, interp_ii + 1\n"
	"        .endr\n"
	"      .endif\n"
	"    .endr\n"
	"  .endr\n"
	".endm\n"
	"interp_stubs_imm_reg: interp_stubs 0xc0, 0\n"
	"interp_stubs_imm_mem: interp_stubs 0x02, 0\n"
	"interp_stubs_one_reg: interp_stubs 0xc0, 1\n"
	"interp_stubs_one_mem: interp_stubs 0x02, 1\n"
	"interp_stubs_end:\n"
	".purgem interp_stub\n"
	".purgem interp_stubs\n"
	".popsection\n");
extern const u8 interp_stubs_imm_reg[], interp_stubs_imm_mem[], interp_stubs_one_reg[], interp_stubs_one_mem[],
	interp_stubs_end[];

/* SHLD/SHRD Ev, Gv, imm8 (0F A4, 0F AC) the same way: [66|48] 0F A4/AC ModRM imm8 RET, the
 * destination RAX or [RDX], the source RSI; indexed by (SHRD, register or memory, width 2/4/8,
 * count masked to 6 bits). The CL forms are inline. */
__asm__(".pushsection .text\n"
	".macro interp_shd_stub w, m, op\n"
	"  .set interp_len, 5\n"
	"  .if \\w == 0\n"
	"    .byte 0x66\n"
	"  .elseif \\w == 2\n"
	"    .byte 0x48\n"
	"  .else\n"
	"    .set interp_len, 4\n"
	"  .endif\n"
	"  .byte 0x0f, \\op, \\m + (6 << 3), interp_ii, 0xc3\n"
	"  .fill 6 - interp_len - 1, 1, 0xcc\n"
	".endm\n"
	".macro interp_shd_stubs op\n"
	"  .irp m, 0xc0, 0x02\n"
	"    .irp w, 0, 1, 2\n"
	"      .set interp_ii, 0\n"
	"      .rept 64\n"
	"        interp_shd_stub \\w, \\m, \\op\n"
	"        .set interp_ii, interp_ii + 1\n"
	"      .endr\n"
	"    .endr\n"
	"  .endr\n"
	".endm\n"
	"interp_stubs_shld: interp_shd_stubs 0xa4\n"
	"interp_stubs_shrd: interp_shd_stubs 0xac\n"
	"interp_stubs_shd_end:\n"
	".purgem interp_shd_stub\n"
	".purgem interp_shd_stubs\n"
	".popsection\n");
extern const u8 interp_stubs_shld[], interp_stubs_shrd[], interp_stubs_shd_end[];

static unsigned width_index(unsigned w)
{
	return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3;
}

u64 interp_native_shift(enum interp_shift form, bool mem, unsigned grp, unsigned w, u64 a, u8 count, u64 *flags)
{
	u64 fi = *flags & INTERP_ARITH_FLAGS, fo = fi;
	u64 cell = a;		/* the memory operand, at [RDX] */
	const u8 *stub;

	grp &= 7;
	if (form == INTERP_SHIFT_CL) {
		u64 b = count;
#define SHIFT_CL(insn, sfx, mod)						\
	do {									\
		if (mem)							\
			__asm__ volatile(FLAGS_IN insn sfx " %%cl, %[m]" FLAGS_OUT \
					 : [m] "+m"(cell), [fout] "=&r"(fo)	\
					 : "c"(b), [fin] "r"(fi), [keep] "i"(KEEP_HOST) \
					 : "cc", "memory");			\
		else								\
			__asm__ volatile(FLAGS_IN insn sfx " %%cl, %" mod "[a]" FLAGS_OUT \
					 : [a] "+r"(a), [fout] "=&r"(fo)		\
					 : "c"(b), [fin] "r"(fi), [keep] "i"(KEEP_HOST) \
					 : "cc", "memory");			\
	} while (0)
		switch (grp) {
		case 0: ALL_WIDTHS(SHIFT_CL, "rol"); break;
		case 1: ALL_WIDTHS(SHIFT_CL, "ror"); break;
		case 2: ALL_WIDTHS(SHIFT_CL, "rcl"); break;
		case 3: ALL_WIDTHS(SHIFT_CL, "rcr"); break;
		case 4: ALL_WIDTHS(SHIFT_CL, "shl"); break;
		case 5: ALL_WIDTHS(SHIFT_CL, "shr"); break;
		case 7: ALL_WIDTHS(SHIFT_CL, "sar"); break;
		default: break;	/* /6: the core leaves it */
		}
#undef SHIFT_CL
	} else {
		unsigned row = grp * 4 + width_index(w);
		if (form == INTERP_SHIFT_IMM)
			stub = (mem ? interp_stubs_imm_mem : interp_stubs_imm_reg) +
			       (row * STUB_COUNTS + (count & (STUB_COUNTS - 1))) * STUB_SIZE;
		else
			stub = (mem ? interp_stubs_one_mem : interp_stubs_one_reg) + row * STUB_SIZE;
		__asm__ volatile(FLAGS_IN "call *%[stub]" FLAGS_OUT
				 : "+a"(a), [fout] "=&r"(fo)
				 : [stub] "r"(stub), "d"(&cell), [fin] "r"(fi), [keep] "i"(KEEP_HOST)
				 : "cc", "memory");
	}
	*flags = (*flags & ~INTERP_ARITH_FLAGS) | (fo & INTERP_ARITH_FLAGS);
	return (mem ? cell : a) & width_mask(w);
}

u64 interp_native_shd(bool right, enum interp_shift form, bool mem, unsigned w, u64 a, u64 src, u8 count, u64 *flags)
{
	u64 fi = *flags & INTERP_ARITH_FLAGS, fo = fi;
	u64 cell = a;		/* the memory operand, at [RDX] */

	if (form == INTERP_SHIFT_CL) {
		u64 c = count;
#define SHD_CL(insn, sfx, mod)							\
	do {									\
		if (mem)							\
			__asm__ volatile(FLAGS_IN insn sfx " %%cl, %" mod "[b], %[m]" FLAGS_OUT \
					 : [m] "+m"(cell), [fout] "=&r"(fo)	\
					 : [b] "r"(src), "c"(c), [fin] "r"(fi), [keep] "i"(KEEP_HOST) \
					 : "cc", "memory");			\
		else								\
			__asm__ volatile(FLAGS_IN insn sfx " %%cl, %" mod "[b], %" mod "[a]" FLAGS_OUT \
					 : [a] "+r"(a), [fout] "=&r"(fo)		\
					 : [b] "r"(src), "c"(c), [fin] "r"(fi), [keep] "i"(KEEP_HOST) \
					 : "cc", "memory");			\
	} while (0)
		if (right) {
			WIDE_WIDTHS(SHD_CL, "shrd");
		} else {
			WIDE_WIDTHS(SHD_CL, "shld");
		}
#undef SHD_CL
	} else {
		unsigned row = (mem ? 3 : 0) + (w == 2 ? 0 : w == 4 ? 1 : 2);
		const u8 *stub = (right ? interp_stubs_shrd : interp_stubs_shld) +
				 (row * STUB_COUNTS + (count & (STUB_COUNTS - 1))) * STUB_SIZE;
		__asm__ volatile(FLAGS_IN "call *%[stub]" FLAGS_OUT
				 : "+a"(a), [fout] "=&r"(fo)
				 : [stub] "r"(stub), "d"(&cell), "S"(src), [fin] "r"(fi), [keep] "i"(KEEP_HOST)
				 : "cc", "memory");
	}
	*flags = (*flags & ~INTERP_ARITH_FLAGS) | (fo & INTERP_ARITH_FLAGS);
	return (mem ? cell : a) & width_mask(w);
}

/* The table's layout, checked once (the unit test calls it): each part where its size says */
bool interp_native_selftest(void)
{
	return interp_stubs_imm_mem - interp_stubs_imm_reg == 8 * 4 * STUB_COUNTS * STUB_SIZE &&
	       interp_stubs_one_reg - interp_stubs_imm_mem == 8 * 4 * STUB_COUNTS * STUB_SIZE &&
	       interp_stubs_one_mem - interp_stubs_one_reg == 8 * 4 * STUB_SIZE &&
	       interp_stubs_end - interp_stubs_one_mem == 8 * 4 * STUB_SIZE &&
	       interp_stubs_shrd - interp_stubs_shld == 2 * 3 * STUB_COUNTS * STUB_SIZE &&
	       interp_stubs_shd_end - interp_stubs_shrd == 2 * 3 * STUB_COUNTS * STUB_SIZE;
}
