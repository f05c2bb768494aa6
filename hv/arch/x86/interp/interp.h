/* hv/arch/x86/interp/interp.h — the interpreter's pure core (freestanding): executes one
 * guest instruction on a register file and a memory interface, or leaves it to the processor.
 * No guest page tables, no vCPU: the caller (the interpreting engine, or the host harness
 * tests/unit/test_interp.c) supplies both. Design: docs/branch-engine.md, "The interpreting
 * engine (interp): the core". */
#ifndef HV_X86_INTERP_H
#define HV_X86_INTERP_H

#include "arch/x86/types.h"
#include "arch/x86/decode/decode.h"

/* Guest register file, index = x86 register number (RAX 0 ... R15 15), as base/vcpu.h's gpr[]. */
#define INTERP_NGPR	16

struct interp_cpu {
	u64 gpr[INTERP_NGPR];
	u64 rip;
	u64 rflags;
	u64 fs_base, gs_base;	/* the only segment bases that count in 64-bit mode (SDM Vol. 3 3.4.4) */
	u16 sel[6];		/* the segment selectors ES CS SS DS FS GS, for MOV r/m, Sreg */
	enum dec_mode mode;	/* only DEC_MODE_64 is interpreted; anything else is left */
	u8 cpl;
	/* CR0.AM: with CPL 3 and RFLAGS.AC a misaligned access raises #AC (SDM Vol. 3 6.15,
	 * interrupt 17); such accesses are left to the processor */
	bool cr0_am;
	/* CR4.CET with shadow stacks or IBT enabled: CALL, RET and indirect branches have
	 * effects the core does not model (SDM Vol. 1 18), so it leaves them */
	bool cet;
	/* CR4.LA57 with IA-32e paging: linear addresses are canonical in 57 bits, not 48 (SDM Vol. 1
	 * 3.3.7.1); Linux then keeps its direct map and page structures above 48 bits */
	bool la57;
	/* the caller can honour an STI's interrupt shadow (SDM Vol. 2B STI): it runs the next
	 * instruction before any interrupt could come, or puts the STI back (interp_result.shadow);
	 * clear: an STI that would set IF is left */
	bool shadow_ok;
	/* CPUID.80000001H:ECX.PREFETCHW[bit 8] of the processor under the guest: 0F 0D /1 is
	 * PREFETCHW, a hint; clear, it is left */
	bool prefetchw;
	/* the caller takes a REP string instruction in parts (interp_mem_ops.fill, .copy): RIP stays at
	 * it while RCX is not 0, and the caller runs it again as the next instruction; each part
	 * then counts as an instruction of the caller's. Clear (the virtual PMU counts retired
	 * instructions): one that does not end in its first part is left */
	bool rep_parts;
	/* NMIs are not blocked now (SDM Vol. 3 6.7.1): an IRET would end that blocking, which only
	 * the processor's own IRET (or the caller, who knows) can do. Clear: IRETQ is left */
	bool iret_ok;
};
_Static_assert(__builtin_offsetof(struct interp_cpu, gpr) == 0 && sizeof(((struct interp_cpu *)0)->gpr) == 128,
	       "gpr[] first, 16 registers");

struct interp_pre;

/* What a memory callback answers. */
enum interp_mem_status {
	INTERP_MEM_OK = 0,
	INTERP_MEM_LEAVE = 1,	/* would fault, not ordinary RAM, or anything uncertain */
};

/* The memory interface, over LINEAR addresses (segment bases already added, canonical).
 *
 * read: all len bytes (1, 2, 4 or 8) or none. An access the core makes with an address aligned
 *   to its size is one call, and the callback must make it one access (single-copy atomic, SDM
 *   Vol. 3 9.1.1); a misaligned one is one call too, and may be split at a page boundary by the
 *   callback (the processor makes no atomicity promise for it either).
 * write: the same, and all-or-nothing: either every byte is written (every page present,
 *   writable, guest RAM, accessed/dirty bits as the processor sets them) or nothing is and
 *   LEAVE is returned. The core makes at most ONE write per instruction, last, after every read
 *   and every computation, and changes no register before it: so a LEAVE from any callback
 *   leaves the guest's state exactly as it was (all-or-nothing instructions).
 * fetch: up to max (<= 15) instruction bytes at lin; returns how many it could read (it stops
 *   at the first byte it cannot: the decoder then says truncated and the core leaves). */
struct interp_mem_ops {
	int (*read)(void *ctx, u64 lin, void *buf, unsigned len);
	int (*write)(void *ctx, u64 lin, const void *buf, unsigned len);
	unsigned (*fetch)(void *ctx, u64 lin, u8 *buf, unsigned max);
	/* Optional (NULL: fetch, then dec_decode): the instruction at lin (64-bit code, RIP = lin)
	 * decoded, as a dec_decode status; on DEC_OK *in and *bytes point at the decoded form and
	 * its bytes, and *pre at the derived fields kept with them (struct interp_pre, below;
	 * cleared when the entry is decoded anew), which stay valid until the next call. It must give exactly what dec_decode
	 * gives for the bytes in memory now: a cache of decoded instructions checks every byte of
	 * the instruction against memory before it answers (trace/interp_engine.c). */
	int (*decode)(void *ctx, u64 lin, const u8 **bytes, const struct dec_insn **in, struct interp_pre **pre);
	/* Optional (NULL: LOCKed instructions and XCHG with memory are left): a locked
	 * read-modify-write's write (SDM Vol. 3 9.1.2), all or nothing: if the len bytes at lin
	 * (aligned to len: a split lock may be left) still hold *old (what the instruction read),
	 * they become new and *done is set; else nothing is written, *old gets what is there and
	 * *done is clear (another processor wrote meanwhile: the core runs the instruction again).
	 * The checks are a write's, the comparison failing or not. INTERP_MEM_OK, or LEAVE. */
	int (*cmpxchg)(void *ctx, u64 lin, u64 *old, u64 new, unsigned len, bool *done);
	/* Optional (NULL: REP STOS is left): a REP STOS's part, count elements of len (1, 2, 4, 8)
	 * bytes, each `val`, from lin up; all in lin's page (the core makes sure), lin canonical.
	 * All or nothing, with a write's checks; each aligned element one store (a store of
	 * several elements at once is as good: the processor's fast strings make no promise of
	 * order or atomicity between them, Vol. 1 7.3.9.3). INTERP_MEM_OK, or LEAVE. */
	int (*fill)(void *ctx, u64 lin, u64 val, unsigned len, unsigned count);
	/* Optional (NULL: CMPXCHG16B is left): CMPXCHG16B's access (SDM Vol. 2A CMPXCHG8B/
	 * CMPXCHG16B), as one locked access whether the guest's had LOCK or not: if the 16 bytes
	 * at lin (aligned to 16: the core makes sure) hold old[0] (low) and old[1], they become
	 * new[0], new[1] and *done is set; else *done is clear, old gets what is there, and it is
	 * written back unchanged, as the processor's access writes it either way. A write's
	 * checks. INTERP_MEM_OK, or LEAVE. */
	int (*cmpxchg16)(void *ctx, u64 lin, u64 old[2], const u64 new[2], bool *done);
	/* Optional (NULL: REP MOVS is left): a REP MOVS's part, count elements of len (1, 2, 4, 8)
	 * bytes from src up to dst up; each range in one page (the core makes sure), both
	 * canonical. All or nothing, with a read's checks on src and a write's on dst; the
	 * elements moved one after the other as the processor's own REP MOVS of that width moves
	 * them, so overlapping ranges come out as its element-by-element definition says (Vol. 2B
	 * MOVS; its fast strings keep that result, Vol. 1 7.3.9.3). INTERP_MEM_OK, or LEAVE. */
	int (*copy)(void *ctx, u64 dst, u64 src, unsigned len, unsigned count);
};

/* Why an instruction was left to the processor (counted per reason and opcode). */
enum interp_leave {
	INTERP_LEAVE_NONE = 0,
	INTERP_LEAVE_MODE,	/* not 64-bit code */
	INTERP_LEAVE_FETCH,	/* bytes unreadable or truncated */
	INTERP_LEAVE_INVALID,	/* the decoder says #UD */
	INTERP_LEAVE_OPCODE,	/* an opcode (or group member, or operand form) not interpreted */
	INTERP_LEAVE_PREFIX,	/* LOCK, REP, a 16-bit stack or branch operand size, VEX/EVEX/XOP */
	INTERP_LEAVE_MEMORY,	/* a callback said LEAVE */
	INTERP_LEAVE_CANONICAL,	/* a non-canonical data or stack address: #GP/#SS */
	INTERP_LEAVE_ALIGN,	/* a misaligned access with alignment checking on: #AC */
	INTERP_LEAVE_TARGET,	/* a branch to a non-canonical address: #GP */
	INTERP_LEAVE_TRAP,	/* RFLAGS.TF: a single-step trap follows the instruction */
	INTERP_LEAVE_CET,	/* a transfer with CET enabled */
	INTERP_LEAVE_NREASONS
};

/* The outcome of one step. */
struct interp_result {
	enum interp_leave leave;	/* NONE: executed and committed; else nothing changed */
	/* the instruction, once decoded: len for executed ones and leaves; the others for leaves from
	 * OPCODE on (coverage) */
	u8 len;
	u8 map;			/* 0: one-byte, 1: 0F, 2: 0F 38, 3: 0F 3A (dec_insn.map) */
	u8 opcode;
	u8 modrm_reg;		/* ModRM.reg (the group member), 0 without ModRM; 0F 01 with a
				 * register operand: the whole ModRM byte (C0-FF) */
	enum dec_encoding encoding;
	/* executed control transfers: what BTS would record for it (from = its linear address,
	 * to = the next instruction's; BTS records only taken ones, SDM Vol. 3 18.4.8) */
	enum dec_branch branch;	/* DEC_BR_NONE for others */
	bool taken;
	u64 from, to;
	/* an STI that set IF: maskable interrupts stay blocked until the next instruction has
	 * completed (only with interp_cpu.shadow_ok) */
	bool shadow;
	/* an INVLPG executed (CPL 0, a canonical address): the caller drops the translations it
	 * keeps for the page holding `inval` (a TLB's), has the processor's dropped before the
	 * guest runs again, and, INVLPG being serializing (SDM Vol. 3 9.3), sees other
	 * processors' writes to code from the next instruction on */
	bool invlpg;
	u64 inval;
};

/* Executes the instruction at cpu->rip, or changes nothing and says why not. Returns
 * out->leave (0 when it executed). */
int interp_step(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, struct interp_result *out);

/* What the core derives from a decoded instruction alone (its ModRM fields with REX, the
 * prefixes as written, whether they leave it, its immediate), kept by a decode cache beside
 * the instruction so that it is derived once: the core fills it when `valid` is clear. */
struct interp_pre {
	bool valid;
	u8 mod, reg, rm, grp;
	u8 pfx;			/* INTERP_PFX_*: 66, F2, F3 as they apply (the last of F2/F3 wins) */
	u8 leave;		/* INTERP_LEAVE_PREFIX where the encoding or prefixes alone leave it */
	u64 imm;		/* the first immediate, sign-extended from its size */
};
#define INTERP_PFX_66	1
#define INTERP_PFX_F2	2
#define INTERP_PFX_F3	4

/* The same for an instruction the caller has decoded: `in` is dec_decode's answer (DEC_OK) for
 * `bytes`, the bytes at cpu->rip now, in 64-bit mode with RIP = cpu->rip (a decode cache checked
 * against memory: trace/interp_engine.c); `pre` the cache's derived fields for it (NULL: none
 * kept). */
int interp_exec(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, const u8 *bytes,
		const struct dec_insn *in, struct interp_pre *pre, struct interp_result *out);

/* interp_exec without its checks of the state no instruction it executes changes: the caller
 * knows that cpu->mode is DEC_MODE_64, RFLAGS.TF is clear and cpu->rip canonical (an
 * instruction at rip was fetched: a decode cache hit). For a burst's loop. The coverage
 * fields of out (map, opcode, encoding, modrm_reg) are set for leaves only, as interp_exec's
 * and interp_step's are (they are 0 for an executed instruction). */
int interp_exec_next(struct interp_cpu *cpu, const struct interp_mem_ops *mem, void *ctx, const u8 *bytes,
		     const struct dec_insn *in, struct interp_pre *pre, struct interp_result *out);

/* A coverage key for the "most often left" table: (encoding, map, opcode, ModRM.reg). */
static inline u32 interp_opkey(const struct interp_result *r)
{
	return (u32)r->encoding << 20 | (u32)r->map << 16 | (u32)r->opcode << 8 | r->modrm_reg;
}

/* The reason's name ("opcode", "memory", ...). */
const char *interp_leave_name(enum interp_leave why);

/* --- native arithmetic (native.c) ------------------------------------------------------------
 * Results and arithmetic flags (CF PF AF ZF SF OF) computed by running the same operation on
 * the processor the hypervisor runs on, which is the processor the guest runs on: flags the SDM
 * leaves undefined come out as that processor makes them. Inputs are zero-extended values of
 * the operand width; only the arithmetic flags of `flags` are used and returned. */
#define INTERP_ARITH_FLAGS	0x8d5ull	/* CF 0, PF 2, AF 4, ZF 6, SF 7, OF 11 */

enum interp_op {
	/* two operands a op= b, in the order of the 00-3F opcode rows (SDM Vol. 2 Table A-2) */
	IOP_ADD, IOP_OR, IOP_ADC, IOP_SBB, IOP_AND, IOP_SUB, IOP_XOR, IOP_CMP,
	IOP_TEST,
	/* one operand */
	IOP_INC, IOP_DEC, IOP_NEG, IOP_NOT,
	/* 16/32/64-bit only */
	IOP_IMUL2,		/* a = a * b (signed, truncated) */
	IOP_BT, IOP_BTS, IOP_BTR, IOP_BTC,	/* register forms: b = the bit offset */
	IOP_BSF, IOP_BSR,	/* a = the destination's old value (kept when b is 0), b = the source */
	/* F3 0F BC/BD: BSF/BSR on processors without BMI1/LZCNT, which run them as such (so the
	 * destination's old value goes in as for BSF/BSR) */
	IOP_TZCNT, IOP_LZCNT,
	IOP_NOPS
};
/* a op b at width w (1, 2, 4, 8 bytes); *flags in and out. Returns the result (for CMP, TEST
 * and BT the first operand unchanged). */
u64 interp_native_alu(enum interp_op op, unsigned w, u64 a, u64 b, u64 *flags);
/* Group 2 shifts and rotates (ModRM.reg grp, /6 excluded) in the form the guest used: the
 * same operation by 1, by an imm8 and by CL do not make the same undefined flags (native.c). */
enum interp_shift { INTERP_SHIFT_1, INTERP_SHIFT_IMM, INTERP_SHIFT_CL };
u64 interp_native_shift(enum interp_shift form, bool mem, unsigned grp, unsigned w, u64 a, u8 count, u64 *flags);
/* SHLD (right false) / SHRD (true) of a by src, w 2, 4 or 8, by imm8 (INTERP_SHIFT_IMM) or CL
 * (INTERP_SHIFT_CL), in the guest's form as interp_native_shift (mem: the destination is
 * memory): a's new value, the flags as the processor left them */
u64 interp_native_shd(bool right, enum interp_shift form, bool mem, unsigned w, u64 a, u64 src, u8 count, u64 *flags);
/* Whether the stub table is laid out as its index assumes */
bool interp_native_selftest(void);
/* MUL/IMUL with one operand (F6/F7 /4 /5): *ax (and *dx) in and out as the SDM's tables. */
void interp_native_mul(bool sign, unsigned w, u64 *ax, u64 *dx, u64 src, u64 *flags);
/* DIV/IDIV (F6/F7 /6 /7), the same registers. The caller has made sure it cannot raise #DE:
 * here it would be the hypervisor's. */
void interp_native_div(bool sign, unsigned w, u64 *ax, u64 *dx, u64 src, u64 *flags);

#endif
