/* The interpreter's pure core (hv/arch/x86/interp/) against the host processor: random
 * instruction sequences over the supported opcodes and operand forms, and windows of Debian's
 * kernel text (function prologues and epilogues), run natively on the host from a trampoline
 * that loads every GPR and the arithmetic flags, and through interp_step() on the same state;
 * GPRs, RFLAGS (CF PF AF ZF SF OF DF), RIP and the sandbox memory must be equal.
 *
 *   test_interp [--cases N] [--seed S] [--kernel VMLINUX] [--kernel-windows N] [--verbose]
 *
 * Memory: one mapping at a fixed low address (so 32-bit addressing, 67h, reaches it too):
 * the code page, then an 8 KiB sandbox that every memory operand of a random sequence lands
 * in (RBX, RSP, RBP and R12 are reserved as bases and index, never a destination, but for the
 * stack instructions' own effects). Branches only go forward, to an instruction boundary of
 * the sequence or its end. */
#define _GNU_SOURCE
#include <elf.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "unit.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/interp/interp.h"
#include "arch/x86/paging.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

#define REGION_ADDR	0x40000000ull
#define REGION_SIZE	0x10000ull
#define CODE		(REGION_ADDR)
#define CODE_SIZE	0x1000ull
#define SANDBOX		(REGION_ADDR + 0x2000)
#define SANDBOX_SIZE	0x2000ull
#define DATA_MID	(SANDBOX + 0x800)	/* RBX */
#define STACK_TOP	(SANDBOX + 0x1800)	/* RSP */
#define FRAME		(SANDBOX + 0x1900)	/* RBP */
#define GS_BASE		0x100ull
#define FLAGS_CMP	(INTERP_ARITH_FLAGS | RFLAGS_DF)

/* --- the native side ----------------------------------------------------------------------- */

struct nstate {
	uint64_t gpr[16];
	uint64_t rflags;
};
_Static_assert(sizeof(struct nstate) == 136, "the trampoline's offsets");

void native_run(struct nstate *s, uint64_t code);
void native_exit(void);
/* native_run: saves the host's callee-saved registers and stack, loads the arithmetic flags and
 * DF, then every GPR (RSP included, RDI last) and jumps to the code; the code ends with a JMP to
 * native_exit, which stores everything back (flags before anything could change them), clears
 * DF and returns on the host's stack. */
__asm__(".text\n"
	".globl native_run\n"
	"native_run:\n"
	"push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"mov %rsp, nat_host_rsp(%rip)\n"
	"mov %rdi, nat_state(%rip)\n"
	"mov %rsi, nat_code(%rip)\n"
	"mov 128(%rdi), %rax\n"
	"and $0xcd5, %rax\n"
	"pushfq\n"
	"andq $-0xcd6, (%rsp)\n"
	"or %rax, (%rsp)\n"
	"popfq\n"
	"mov 8(%rdi), %rcx\n mov 16(%rdi), %rdx\n mov 24(%rdi), %rbx\n"
	"mov 40(%rdi), %rbp\n mov 48(%rdi), %rsi\n"
	"mov 64(%rdi), %r8\n mov 72(%rdi), %r9\n mov 80(%rdi), %r10\n mov 88(%rdi), %r11\n"
	"mov 96(%rdi), %r12\n mov 104(%rdi), %r13\n mov 112(%rdi), %r14\n mov 120(%rdi), %r15\n"
	"mov 32(%rdi), %rsp\n"
	"mov 0(%rdi), %rax\n"
	"mov 56(%rdi), %rdi\n"
	"jmp *nat_code(%rip)\n"
	".globl native_exit\n"
	"native_exit:\n"
	"mov %rax, nat_rax(%rip)\n"
	"mov nat_state(%rip), %rax\n"
	"mov %rcx, 8(%rax)\n mov %rdx, 16(%rax)\n mov %rbx, 24(%rax)\n mov %rsp, 32(%rax)\n"
	"mov %rbp, 40(%rax)\n mov %rsi, 48(%rax)\n mov %rdi, 56(%rax)\n"
	"mov %r8, 64(%rax)\n mov %r9, 72(%rax)\n mov %r10, 80(%rax)\n mov %r11, 88(%rax)\n"
	"mov %r12, 96(%rax)\n mov %r13, 104(%rax)\n mov %r14, 112(%rax)\n mov %r15, 120(%rax)\n"
	"mov nat_rax(%rip), %rcx\n mov %rcx, 0(%rax)\n"
	"mov nat_host_rsp(%rip), %rsp\n"
	"pushfq\n pop %rcx\n mov %rcx, 128(%rax)\n"
	"cld\n"
	"pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"ret\n"
	".data\n"
	".balign 8\n"
	"nat_host_rsp: .quad 0\n nat_state: .quad 0\n nat_code: .quad 0\n nat_rax: .quad 0\n"
	".text\n");

static uint8_t *region;
static volatile sig_atomic_t in_native;
static void crash(int sig)
{
	static const char msg[] = "test_interp: the native run crashed (a sequence left its sandbox)\n";
	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

/* --- the interpreter's side: memory callbacks over the same addresses ---------------------------- */

static int mem_read(void *ctx, uint64_t lin, void *buf, unsigned len)
{
	(void)ctx;
	if (lin < SANDBOX || lin > SANDBOX + SANDBOX_SIZE - len)
		return INTERP_MEM_LEAVE;
	memcpy(buf, (void *)lin, len);
	return INTERP_MEM_OK;
}
static int mem_write(void *ctx, uint64_t lin, const void *buf, unsigned len)
{
	(void)ctx;
	if (lin < SANDBOX || lin > SANDBOX + SANDBOX_SIZE - len)
		return INTERP_MEM_LEAVE;
	memcpy((void *)lin, buf, len);
	return INTERP_MEM_OK;
}
static unsigned mem_fetch(void *ctx, uint64_t lin, uint8_t *buf, unsigned max)
{
	(void)ctx;
	if (lin < CODE || lin >= CODE + CODE_SIZE)
		return 0;
	uint64_t room = CODE + CODE_SIZE - lin;
	unsigned n = room < max ? (unsigned)room : max;
	memcpy(buf, (void *)lin, n);
	return n;
}
/* the locked write: single-threaded here, so a compare and a copy */
static int mem_cmpxchg(void *ctx, uint64_t lin, uint64_t *old, uint64_t new, unsigned len, bool *done)
{
	uint64_t now = 0;
	(void)ctx;
	if (lin < SANDBOX || lin > SANDBOX + SANDBOX_SIZE - len)
		return INTERP_MEM_LEAVE;
	memcpy(&now, (void *)lin, len);
	*done = now == *old;
	if (*done)
		memcpy((void *)lin, &new, len);
	else
		*old = now;
	return INTERP_MEM_OK;
}
/* CMPXCHG16B: the same, 16 bytes aligned to 16 */
static int mem_cmpxchg16(void *ctx, uint64_t lin, uint64_t old[2], const uint64_t new[2], bool *done)
{
	uint64_t now[2];
	(void)ctx;
	if (lin < SANDBOX || lin > SANDBOX + SANDBOX_SIZE - 16 || (lin & 15)) {
		fprintf(stderr, "FAIL cmpxchg16 at %#llx: outside the sandbox or misaligned\n", (unsigned long long)lin);
		exit(1);
	}
	memcpy(now, (void *)lin, 16);
	*done = now[0] == old[0] && now[1] == old[1];
	if (*done)
		memcpy((void *)lin, new, 16);
	else
		old[0] = now[0], old[1] = now[1];
	return INTERP_MEM_OK;
}
/* a REP STOS's part: count elements in one page of the sandbox */
static int mem_fill(void *ctx, uint64_t lin, uint64_t val, unsigned len, unsigned count)
{
	(void)ctx;
	if (lin < SANDBOX || lin > SANDBOX + SANDBOX_SIZE - (uint64_t)len * count)
		return INTERP_MEM_LEAVE;
	if ((lin >> 12) != ((lin + (uint64_t)len * count - 1) >> 12)) {
		fprintf(stderr, "FAIL fill %#llx x %u of %u bytes: across a page\n", (unsigned long long)lin, count, len);
		exit(1);
	}
	for (unsigned i = 0; i < count; i++)
		memcpy((void *)(lin + (uint64_t)i * len), &val, len);
	return INTERP_MEM_OK;
}
/* a REP MOVS's part: count elements from one page of the sandbox to one page, each element
 * read whole and then written, one after the other (the architectural result where they
 * overlap) */
static int mem_copy(void *ctx, uint64_t dst, uint64_t src, unsigned len, unsigned count)
{
	uint64_t bytes = (uint64_t)len * count;
	(void)ctx;
	if (src < SANDBOX || src > SANDBOX + SANDBOX_SIZE - bytes || dst < SANDBOX || dst > SANDBOX + SANDBOX_SIZE - bytes)
		return INTERP_MEM_LEAVE;
	if ((src >> 12) != ((src + bytes - 1) >> 12) || (dst >> 12) != ((dst + bytes - 1) >> 12)) {
		fprintf(stderr, "FAIL copy %#llx -> %#llx x %u of %u bytes: across a page\n", (unsigned long long)src,
			(unsigned long long)dst, count, len);
		exit(1);
	}
	for (unsigned i = 0; i < count; i++) {
		uint64_t e;
		memcpy(&e, (void *)(src + (uint64_t)i * len), len);
		memcpy((void *)(dst + (uint64_t)i * len), &e, len);
	}
	return INTERP_MEM_OK;
}
static const struct interp_mem_ops ops = { .read = mem_read, .write = mem_write, .fetch = mem_fetch,
					   .cmpxchg = mem_cmpxchg, .fill = mem_fill, .cmpxchg16 = mem_cmpxchg16,
					   .copy = mem_copy };

/* A decode cache as the engine keeps one (trace/interp_engine.c): an entry answers when the
 * bytes at its address are still the ones it was decoded from, and keeps the core's derived
 * fields (struct interp_pre) across executions, so a loop runs its instructions from them */
#define DCACHE 64
static struct {
	uint64_t lin;
	uint8_t len;
	uint8_t bytes[15];
	struct dec_insn in;
	struct interp_pre pre;
} dcache[DCACHE];
static unsigned long long dcache_hits;
static int mem_decode(void *ctx, uint64_t lin, const uint8_t **bytes, const struct dec_insn **in,
		      struct interp_pre **pre)
{
	uint8_t now[15];
	unsigned got = mem_fetch(ctx, lin, now, sizeof(now));
	__typeof__(dcache[0]) *e = &dcache[(lin ^ (lin >> 6)) % DCACHE];
	if (e->len && e->lin == lin && got >= e->len && !memcmp(now, e->bytes, e->len)) {
		dcache_hits++;
	} else {
		e->len = 0;
		memcpy(e->bytes, now, got);
		int st = dec_decode(e->bytes, got, DEC_MODE_64, lin, &e->in);
		if (st != DEC_OK)
			return st;
		e->lin = lin;
		e->len = e->in.len;
		e->pre.valid = false;
	}
	*bytes = e->bytes;
	*in = &e->in;
	*pre = &e->pre;
	return DEC_OK;
}
static const struct interp_mem_ops ops_cached = { .read = mem_read, .write = mem_write, .fetch = mem_fetch,
						  .decode = mem_decode, .cmpxchg = mem_cmpxchg, .fill = mem_fill,
						  .cmpxchg16 = mem_cmpxchg16, .copy = mem_copy };
static bool use_cache;	/* one random case in four runs through ops_cached */

/* --- random instruction sequences ------------------------------------------------------------- */

static uint64_t rnd(uint64_t n)
{
	return unit_rand() % n;
}

/* one instruction being built: [seg][66][67][REX] opcode ModRM SIB disp imm */
struct ib {
	uint8_t seg;
	bool lock;		/* F0, first */
	bool p66, p67, pf3;
	uint8_t rex;		/* 0x40 | WRXB, or 0 for none */
	uint8_t op[3];
	int nop;
	bool has_modrm, has_sib;
	uint8_t modrm, sib;
	int disp_size;
	int32_t disp;
	int rip_kind;		/* 0: none, 1: data address rip_to, 2: the start of unit rip_unit */
	uint64_t rip_to;
	int rip_unit;
	uint8_t imm[8];
	int nimm;
	int rel_size, rel_unit;	/* a relative branch to the start of unit rel_unit */
};

#define MAX_INSNS 128	/* 12 units of at most 10 (IRETQ to itself) */
struct seq {
	struct ib in[MAX_INSNS];
	int unit_of[MAX_INSNS];
	int first[MAX_INSNS + 1];	/* each unit's first instruction */
	int n, nunits;
	uint64_t addr[MAX_INSNS + 1];
	uint64_t end;
	bool leave_used;
};

static bool reserved(int r)
{
	return r == RSP || r == RBX || r == RBP || r == R12;
}
static int real_reg(int enc, int w, bool rex)
{
	return (w == 1 && !rex && enc >= 4 && enc < 8) ? enc - 4 : enc;
}
/* a register number for an operand of width w; dest: not a reserved one */
static int pick_reg(struct ib *b, int w, bool dest)
{
	for (;;) {
		int r = b->rex ? (int)rnd(16) : (int)rnd(8);
		if (dest && reserved(real_reg(r, w, b->rex)))
			continue;
		return r;
	}
}
static void set_reg_field(struct ib *b, int r)
{
	b->modrm = (uint8_t)((b->modrm & ~0x38) | (r & 7) << 3);
	if (r & 8)
		b->rex |= 0x44;
}
static void set_rm_reg(struct ib *b, int r)
{
	b->has_modrm = true;
	b->modrm = (uint8_t)((b->modrm & 0x38) | 0xc0 | (r & 7));
	if (r & 8)
		b->rex |= 0x41;
}
/* a memory operand in the sandbox: [RBX+disp], [RBX/RSP + R12*s + disp], [R12*s + abs32],
 * [abs32], RIP-relative; sometimes GS:, an ignored segment, or 32-bit addressing */
static void set_rm_mem(struct ib *b)
{
	int k = (int)rnd(10);
	int mod = (int)rnd(3);
	b->has_modrm = true;
	b->modrm &= 0x38;
	if (k == 0) {
		mod = 0;
		b->modrm |= 0x05;
		b->disp_size = 4;
		b->rip_kind = 1;
		b->rip_to = DATA_MID - 0x200 + rnd(0x400);
	} else if (k < 4) {
		b->modrm |= (uint8_t)(mod << 6 | RBX);
	} else {
		int base = k < 6 ? RBX : k < 8 ? RSP : 5;
		bool index = rnd(2);
		b->has_sib = true;
		if (base == 5)
			mod = 0;
		b->modrm |= (uint8_t)(mod << 6 | 4);
		b->sib = (uint8_t)(rnd(4) << 6 | (index ? (R12 & 7) : 4) << 3 | base);
		if (index)
			b->rex |= 0x42;
		if (base == 5) {
			b->disp_size = 4;
			b->disp = (int32_t)(DATA_MID - 0x200 + rnd(0x400));
		}
	}
	if (k != 0 && (!b->has_sib || (b->sib & 7) != 5)) {
		if (mod == 1) {
			b->disp_size = 1;
			b->disp = (int8_t)rnd(256);
		} else if (mod == 2) {
			b->disp_size = 4;
			b->disp = (int32_t)rnd(0x400) - 0x200;
		}
	}
	switch (rnd(16)) {
	case 0: b->seg = 0x65; break;		/* GS: base GS_BASE */
	case 1: b->seg = 0x2e; break;		/* CS/DS/ES/SS: ignored in 64-bit mode */
	case 2: b->seg = 0x36; break;
	case 3: b->seg = 0x3e; break;
	case 4: b->seg = 0x26; break;
	}
	if (!rnd(8))
		b->p67 = true;	/* everything is below 4 GiB */
}
/* any memory-form ModRM/SIB/displacement, for the instructions that do not access memory
 * (LEA, NOP r/m) */
static void set_rm_any(struct ib *b)
{
	int mod = (int)rnd(3);
	b->has_modrm = true;
	b->modrm = (uint8_t)((b->modrm & 0x38) | mod << 6 | rnd(8));
	b->has_sib = (b->modrm & 7) == 4;
	b->sib = b->has_sib ? (uint8_t)rnd(256) : 0;
	b->rex |= (uint8_t)(rnd(4) ? 0 : 0x40 | rnd(4));	/* X, B */
	b->rip_kind = 0;
	b->disp_size = mod == 1 ? 1 : mod == 2 ? 4 : 0;
	if (mod == 0 && ((b->modrm & 7) == 5 || (b->has_sib && (b->sib & 7) == 5)))
		b->disp_size = 4;
	b->disp = b->disp_size == 1 ? (int8_t)unit_rand() : (int32_t)unit_rand();
	b->p67 = !rnd(8);
}

/* the r/m operand: register (dest: not reserved) or memory; mem: 0 register only, 1 either,
 * 2 memory only */
static void set_rm(struct ib *b, int w, bool dest, int mem)
{
	if (mem == 2 || (mem == 1 && rnd(2)))
		set_rm_mem(b);
	else
		set_rm_reg(b, pick_reg(b, w, dest));
}
static void set_imm(struct ib *b, int n)
{
	uint64_t v = unit_rand();
	if (rnd(4) == 0)
		v = rnd(2) ? rnd(64) : -rnd(64);
	b->nimm = n;
	memcpy(b->imm, &v, 8);
}
/* the operand size of a v-sized instruction: 66 (2), none (4), REX.W (8) */
static int set_vsize(struct ib *b, bool allow16)
{
	int k = (int)rnd(allow16 ? 3 : 2);
	if (k == 2) {
		b->p66 = true;
		return 2;
	}
	if (k == 1) {
		b->rex |= 0x48;
		return 8;
	}
	return 4;
}
/* byte operands: REX (0x40) or not, which decides SPL..DIL vs AH..BH */
static void maybe_rex(struct ib *b)
{
	if (rnd(2))
		b->rex |= 0x40;
}
static void op1(struct ib *b, uint8_t o) { b->op[0] = o; b->nop = 1; }
static void op2(struct ib *b, uint8_t o) { b->op[0] = 0x0f; b->op[1] = o; b->nop = 2; }

static int ib_encode(const struct ib *b, uint8_t *out, uint64_t at, const struct seq *q)
{
	int n = 0;
	if (b->lock)
		out[n++] = 0xf0;
	if (b->seg)
		out[n++] = b->seg;
	if (b->p66)
		out[n++] = 0x66;
	if (b->p67)
		out[n++] = 0x67;
	if (b->pf3)
		out[n++] = 0xf3;
	if (b->rex)
		out[n++] = b->rex;
	for (int i = 0; i < b->nop; i++)
		out[n++] = b->op[i];
	if (b->has_modrm)
		out[n++] = b->modrm;
	if (b->has_sib)
		out[n++] = b->sib;
	int disp_at = n;
	n += b->disp_size;
	int rel_at = n;
	n += b->rel_size;
	memcpy(out + n, b->imm, b->nimm);
	n += b->nimm;
	int64_t d = b->disp;
	if (b->rip_kind == 1)
		d = (int64_t)(b->rip_to - (at + n));
	else if (b->rip_kind == 2)
		d = (int64_t)(q->addr[q->first[b->rip_unit]] - (at + n));
	memcpy(out + disp_at, &d, b->disp_size);
	if (b->rel_size) {
		int64_t r = (int64_t)(q->addr[q->first[b->rel_unit]] - (at + n));
		memcpy(out + rel_at, &r, b->rel_size);
	}
	return n;
}

static struct ib *add(struct seq *q, int unit)
{
	struct ib *b = &q->in[q->n];
	memset(b, 0, sizeof(*b));
	q->unit_of[q->n++] = unit;
	return b;
}
/* a forward target: the unit after this one, or one or two further, or the end */
static int fwd(struct seq *q, int unit)
{
	int to = unit + 1 + (int)rnd(3);
	return to < q->nunits ? to : q->nunits;
}

/* LEA r64, [RIP + a forward unit's address], r not reserved: the indirect transfers' target */
static int lea_target(struct seq *q, int u, struct ib *b)
{
	int r;
	do
		r = (int)rnd(16);
	while (reserved(r));
	op1(b, 0x8d);
	b->rex = 0x48;
	set_reg_field(b, r);
	b->has_modrm = true;
	b->modrm = (uint8_t)((b->modrm & 0x38) | 5);
	b->disp_size = 4;
	b->rip_kind = 2;
	b->rip_unit = fwd(q, u);
	return r;
}

/* LEA RDI, [RBX + disp] (RBX: DATA_MID, the sandbox's page boundary at + 0x800) */
static void lea_rbx(struct ib *b, unsigned reg, int32_t disp)
{
	op1(b, 0x8d);
	b->rex = 0x48;
	set_reg_field(b, reg);
	b->has_modrm = true;
	b->modrm = (uint8_t)((b->modrm & 0x38) | 0x80 | 3);
	b->disp_size = 4;
	b->disp = disp;
}
static void lea_rdi_rbx(struct ib *b, int32_t disp)
{
	lea_rbx(b, RDI, disp);
}

/* A string instruction (its byte form `op`, or the next opcode's word form) with or without REP,
 * after MOV ECX, 0..63 and, always with REP, CLD (a REP string with DF set is left); the
 * string instruction returned */
static struct ib *rep_string(struct seq *q, int u, uint8_t op)
{
	struct ib *b = add(q, u);		/* MOV ECX, 0..63 */
	op1(b, 0xb9);
	b->nimm = 4;
	uint32_t cnt = (uint32_t)rnd(64);
	memcpy(b->imm, &cnt, 4);
	bool rep = rnd(4) != 0;
	if (rep || rnd(2)) {			/* CLD */
		b = add(q, u);
		op1(b, 0xfc);
	}
	b = add(q, u);
	if (rnd(2)) {
		op1(b, op);
		maybe_rex(b);
	} else {
		op1(b, op + 1);
		set_vsize(b, true);
	}
	b->pf3 = rep;
	return b;
}

/* One unit: an instruction or a short idiom (the indirect transfers need an address) */
static void gen_unit(struct seq *q, int u)
{
	struct ib *b = add(q, u);
	int w, k = (int)rnd(49);
	uint8_t o;

	switch (k) {
	case 0: case 1: case 2: case 3: case 4: case 5:	/* ALU rows 00-3D */
		o = (uint8_t)(rnd(8) << 3 | rnd(6));
		op1(b, o);
		if ((o & 7) >= 4) {
			w = (o & 7) == 4 ? 1 : set_vsize(b, true);
			set_imm(b, w == 1 ? 1 : w == 2 ? 2 : 4);
			break;
		}
		w = (o & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
		if (o & 2) {	/* Gv, Ev: the register is the destination (not for CMP) */
			set_reg_field(b, pick_reg(b, w, (o >> 3) != 7));
			set_rm(b, w, false, 1);
		} else {
			set_rm(b, w, (o >> 3) != 7, 1);
			set_reg_field(b, pick_reg(b, w, false));
		}
		break;
	case 6: case 7: case 8:				/* group 1: 80 81 83 */
		o = (uint8_t[]){ 0x80, 0x81, 0x83 }[rnd(3)];
		op1(b, o);
		w = o == 0x80 ? (maybe_rex(b), 1) : set_vsize(b, true);
		b->modrm = (uint8_t)(rnd(8) << 3);
		set_rm(b, w, (b->modrm >> 3) != 7, 1);
		set_imm(b, o == 0x81 ? (w == 2 ? 2 : 4) : 1);
		break;
	case 9:						/* TEST: 84 85 A8 A9 F6/F7 /0 */
		o = (uint8_t[]){ 0x84, 0x85, 0xa8, 0xa9, 0xf6, 0xf7 }[rnd(6)];
		op1(b, o);
		w = (o & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
		if (o == 0xa8 || o == 0xa9) {
			set_imm(b, w == 1 ? 1 : w == 2 ? 2 : 4);
		} else if (o >= 0xf6) {
			set_rm(b, w, false, 1);
			set_imm(b, w == 1 ? 1 : w == 2 ? 2 : 4);
		} else {
			set_rm(b, w, false, 1);
			set_reg_field(b, pick_reg(b, w, false));
		}
		break;
	case 10: case 11:				/* MOV 88 89 8A 8B C6 C7 B0-BF */
		o = (uint8_t[]){ 0x88, 0x89, 0x8a, 0x8b, 0xc6, 0xc7, 0xb0, 0xb8 }[rnd(8)];
		w = (o == 0x88 || o == 0x8a || o == 0xc6 || o == 0xb0) ? (maybe_rex(b), 1) : set_vsize(b, true);
		if (o >= 0xb0 && o <= 0xbf) {
			int r = pick_reg(b, w, true);
			op1(b, (uint8_t)(o + (r & 7)));
			if (r & 8)
				b->rex |= 0x41;
			set_imm(b, w == 8 ? 8 : w);
		} else if (o >= 0xc6) {
			op1(b, o);
			set_rm(b, w, true, 1);
			set_imm(b, w == 1 ? 1 : w == 2 ? 2 : 4);
		} else {
			op1(b, o);
			if (o & 2) {
				set_reg_field(b, pick_reg(b, w, true));
				set_rm(b, w, false, 1);
			} else {
				set_rm(b, w, true, 1);
				set_reg_field(b, pick_reg(b, w, false));
			}
		}
		break;
	case 12:					/* LEA, MOVSXD, MOVZX, MOVSX */
		o = (uint8_t)rnd(6);
		if (o == 0) {
			op1(b, 0x8d);
			w = set_vsize(b, true);
			if (rnd(4))
				set_rm_mem(b);
			else
				set_rm_any(b);	/* LEA does not access memory */
		} else if (o == 1) {
			op1(b, 0x63);
			w = set_vsize(b, false);
			set_rm(b, 4, false, 1);
		} else {
			static const uint8_t xo[4] = { 0xb6, 0xb7, 0xbe, 0xbf };
			op2(b, xo[o - 2]);
			w = set_vsize(b, (xo[o - 2] & 1) == 0);
			if (xo[o - 2] & 1) {
				set_rm(b, 2, false, 1);
			} else {
				if (!b->rex && rnd(2))
					b->rex = 0x40;
				set_rm(b, 1, false, 1);
			}
		}
		set_reg_field(b, pick_reg(b, w, true));
		break;
	case 13: case 14:				/* group 2: C0 C1 D0 D1 D2 D3 */
		o = (uint8_t[]){ 0xc0, 0xc1, 0xd0, 0xd1, 0xd2, 0xd3 }[rnd(6)];
		op1(b, o);
		w = (o & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
		do
			b->modrm = (uint8_t)(rnd(8) << 3);
		while (b->modrm == 6 << 3);
		/* a memory destination with CL: the count could be 0, which the core leaves */
		set_rm(b, w, true, o >= 0xd2 ? 0 : 1);
		if (o <= 0xc1) {
			set_imm(b, 1);
			if (b->modrm >> 6 != 3 && (b->imm[0] & (w == 8 ? 0x3f : 0x1f)) == 0)
				b->imm[0] |= 1;
		}
		break;
	case 15: case 16:				/* group 3: NOT NEG MUL IMUL */
		op1(b, rnd(2) ? 0xf6 : 0xf7);
		w = (b->op[0] & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
		b->modrm = (uint8_t)((2 + rnd(4)) << 3);
		set_rm(b, w, true, 1);
		break;
	case 17:					/* INC/DEC: FE FF /0 /1 */
		op1(b, rnd(2) ? 0xfe : 0xff);
		w = (b->op[0] & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
		b->modrm = (uint8_t)(rnd(2) << 3);
		set_rm(b, w, true, 1);
		break;
	case 18:					/* IMUL 0F AF, 69, 6B */
		o = (uint8_t)rnd(3);
		if (o == 0)
			op2(b, 0xaf);
		else
			op1(b, o == 1 ? 0x69 : 0x6b);
		w = set_vsize(b, true);
		set_reg_field(b, pick_reg(b, w, true));
		set_rm(b, w, false, 1);
		if (o)
			set_imm(b, o == 2 ? 1 : w == 2 ? 2 : 4);
		break;
	case 19:					/* CMOVcc, SETcc */
		if (rnd(2)) {
			op2(b, (uint8_t)(0x40 + rnd(16)));
			w = set_vsize(b, true);
			set_reg_field(b, pick_reg(b, w, true));
			set_rm(b, w, false, 1);
		} else {
			op2(b, (uint8_t)(0x90 + rnd(16)));
			maybe_rex(b);
			b->modrm = (uint8_t)(rnd(8) << 3);	/* ModRM.reg is ignored */
			set_rm(b, 1, true, 1);
		}
		break;
	case 20:					/* BT* r,r and r,imm; BSF/BSR; BSWAP */
		o = (uint8_t)rnd(4);
		w = set_vsize(b, o != 3);
		if (o == 0) {
			op2(b, (uint8_t[]){ 0xa3, 0xab, 0xb3, 0xbb }[rnd(4)]);
			set_rm(b, w, true, 0);
			set_reg_field(b, pick_reg(b, w, false));
		} else if (o == 1) {
			op2(b, 0xba);
			b->modrm = (uint8_t)((4 + rnd(4)) << 3);
			set_rm(b, w, true, 0);
			set_imm(b, 1);
		} else if (o == 2) {
			op2(b, rnd(2) ? 0xbc : 0xbd);
			b->pf3 = rnd(2);	/* TZCNT/LZCNT */
			set_reg_field(b, pick_reg(b, w, true));
			set_rm(b, w, false, 1);
		} else {
			int r = pick_reg(b, w, true);
			op2(b, (uint8_t)(0xc8 + (r & 7)));
			if (r & 8)
				b->rex |= 0x41;
		}
		break;
	case 21:					/* XCHG r,r (86 87 91-97, 90 with REX.B) */
		if (rnd(2)) {
			op1(b, rnd(2) ? 0x86 : 0x87);
			w = (b->op[0] & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
			set_rm(b, w, true, 0);
			set_reg_field(b, pick_reg(b, w, true));
		} else {
			int r;
			w = set_vsize(b, true);
			do
				r = (int)rnd(16);
			while (reserved(r) || r == 0);
			op1(b, (uint8_t)(0x90 + (r & 7)));
			if (r & 8)
				b->rex |= 0x41;
		}
		break;
	case 22:					/* CBW..CQO, flag ops, NOPs, hints */
		o = (uint8_t)rnd(12);
		if (o < 2) {
			op1(b, o ? 0x99 : 0x98);
			set_vsize(b, true);
		} else if (o < 7) {
			op1(b, (uint8_t[]){ 0xf5, 0xf8, 0xf9, 0xfc, 0xfd }[o - 2]);
		} else if (o == 7) {
			op1(b, 0x90);
		} else if (o == 8) {			/* 0F 1F /0: any address, never accessed */
			op2(b, 0x1f);
			if (rnd(2))
				b->p66 = true;
			set_rm_any(b);
		} else if (o == 9) {			/* ENDBR64 */
			b->pf3 = true;
			op2(b, 0x1e);
			b->has_modrm = true;
			b->modrm = 0xfa;
		} else if (o == 10) {			/* PAUSE */
			b->pf3 = true;
			op1(b, 0x90);
		} else {				/* PREFETCHW: any address, never accessed */
			op2(b, 0x0d);
			b->modrm = 1 << 3;
			set_rm_any(b);
		}
		break;
	case 23: case 24:				/* PUSH/POP r, PUSH imm, PUSH r/m */
		o = (uint8_t)rnd(5);
		if (o == 0) {
			int r = (int)rnd(16);
			op1(b, (uint8_t)(0x50 + (r & 7)));
			if (r & 8)
				b->rex = 0x41;
		} else if (o == 1) {
			int r;
			do
				r = (int)rnd(16);
			while (reserved(r));
			op1(b, (uint8_t)(0x58 + (r & 7)));
			if (r & 8)
				b->rex = 0x41;
		} else if (o == 2) {
			op1(b, 0x68);
			set_imm(b, 4);
		} else if (o == 3) {
			op1(b, 0x6a);
			set_imm(b, 1);
		} else {
			op1(b, 0xff);
			b->modrm = 6 << 3;
			set_rm(b, 8, false, 1);
		}
		break;
	case 25: case 26: case 27:			/* Jcc rel8 / rel32 */
		if (rnd(2)) {
			op1(b, (uint8_t)(0x70 + rnd(16)));
			b->rel_size = 1;
		} else {
			op2(b, (uint8_t)(0x80 + rnd(16)));
			b->rel_size = 4;
		}
		if (!rnd(8))
			b->seg = rnd(2) ? 0x2e : 0x3e;	/* branch hints */
		b->rel_unit = fwd(q, u);
		break;
	case 28:					/* JMP rel8 / rel32, CALL rel32 */
		o = (uint8_t)rnd(3);
		op1(b, (uint8_t[]){ 0xeb, 0xe9, 0xe8 }[o]);
		b->rel_size = o ? 4 : 1;
		b->rel_unit = fwd(q, u);
		break;
	case 29:					/* LOOP, LOOPE, LOOPNE, JRCXZ (67: JECXZ) */
		o = (uint8_t)rnd(4);
		op1(b, (uint8_t)(0xe0 + o));
		if (o == 3 && rnd(2))
			b->p67 = true;
		b->rel_size = 1;
		b->rel_unit = fwd(q, u);
		break;
	case 30: case 31: {				/* LEA r,[rip+T]; JMP r / CALL r / PUSH r; RET */
		int r = lea_target(q, u, b);
		o = (uint8_t)rnd(4);
		b = add(q, u);
		if (o < 2) {
			op1(b, 0xff);
			b->modrm = (uint8_t)((o ? 2 : 4) << 3);
			set_rm_reg(b, r);
		} else {
			op1(b, (uint8_t)(0x50 + (r & 7)));
			if (r & 8)
				b->rex = 0x41;
			b = add(q, u);
			if (o == 2) {
				op1(b, 0xc3);
			} else {
				op1(b, 0xc2);
				b->nimm = 2;
				b->imm[0] = (uint8_t)(rnd(4) * 8);
			}
		}
		break;
	}
	case 32: {					/* LEA r,[rip+T]; MOV [m], r; JMP/CALL [m] */
		int r = lea_target(q, u, b);
		struct ib *m = add(q, u);
		op1(m, 0x89);
		m->rex = 0x48;
		set_rm_mem(m);
		m->p67 = false;
		set_reg_field(m, r);
		b = add(q, u);
		*b = *m;
		b->rex &= ~0x0c;	/* no W, no R needed */
		if (b->rex == 0x40)
			b->rex = 0;
		op1(b, 0xff);
		b->modrm = (uint8_t)((b->modrm & 0xc7) | (rnd(2) ? 2 : 4) << 3);
		break;
	}
	case 34: {					/* MOV r, imm; XOR rDX / CBW..CQO; DIV/IDIV r or [m] */
		int r;
		bool sign = rnd(2), mem = rnd(2);
		w = 1 << rnd(4);
		do
			r = (int)rnd(16);
		while (reserved(r) || r == RAX || r == RDX || (w == 1 && r >= 4));
		/* the divisor: positive (so no most-negative / -1), not zero */
		op1(b, (uint8_t)((w == 1 ? 0xb0 : 0xb8) + (r & 7)));
		if (r & 8)
			b->rex |= 0x41;
		if (w == 2)
			b->p66 = true;
		if (w == 8)
			b->rex |= 0x48;
		set_imm(b, w == 8 ? 8 : w);
		b->imm[w - 1] &= 0x7f;
		b->imm[0] |= 1;
		if (w == 8)
			memset(b->imm + 4, 0, 4);
		struct ib *m = NULL;
		if (mem) {
			m = add(q, u);
			op1(m, w == 1 ? 0x88 : 0x89);
			m->p66 = w == 2;
			m->rex = w == 8 ? 0x48 : 0;
			set_rm_mem(m);
			set_reg_field(m, r);
		}
		b = add(q, u);
		if (sign) {			/* CBW (66 98) for bytes, else CWD/CDQ/CQO */
			op1(b, w == 1 ? 0x98 : 0x99);
			b->p66 = w <= 2;
			b->rex = w == 8 ? 0x48 : 0;
		} else {			/* XOR AH, AH or XOR rDX, rDX */
			op1(b, w == 1 ? 0x30 : 0x31);
			b->p66 = w == 2;
			b->rex = w == 8 ? 0x48 : 0;
			b->has_modrm = true;
			b->modrm = w == 1 ? 0xe4 : 0xd2;
		}
		b = add(q, u);
		op1(b, w == 1 ? 0xf6 : 0xf7);
		b->p66 = w == 2;
		b->rex = w == 8 ? 0x48 : 0;
		b->modrm = (uint8_t)((sign ? 7 : 6) << 3);
		if (mem) {
			uint8_t rex = b->rex;
			bool p66 = b->p66;
			*b = *m;
			op1(b, w == 1 ? 0xf6 : 0xf7);
			b->rex = (uint8_t)((m->rex & 0x43) | rex);
			b->p66 = p66;
			b->modrm = (uint8_t)((b->modrm & 0xc7) | (sign ? 7 : 6) << 3);
		} else {
			set_rm_reg(b, r);
		}
		break;
	}
	case 35: case 36: {	/* PUSHF; POP r / PUSH imm; POPF / MOV r/m, Sreg / PREFETCHh / BT* m */
		int r;
		switch (rnd(6)) {
		case 0:				/* PUSHFQ, POP r: the image in a register and memory */
			op1(b, 0x9c);
			b = add(q, u);
			r = pick_reg(b, 8, true);
			op1(b, (uint8_t)(0x58 + (r & 7)));
			if (r & 8)
				b->rex = 0x41;
			break;
		case 1: {			/* PUSH imm32; POPFQ: arithmetic flags, DF, and IF and
						 * IOPL, which CPL 3 keeps (never TF, AC, NT or ID) */
			uint32_t img = 0x2 | ((uint32_t)unit_rand() & (INTERP_ARITH_FLAGS | RFLAGS_IF | RFLAGS_IOPL)) |
				       (rnd(4) ? 0 : RFLAGS_DF);
			op1(b, 0x68);
			b->nimm = 4;
			memcpy(b->imm, &img, 4);
			b = add(q, u);
			op1(b, 0x9d);
			break;
		}
		case 2:				/* MOV r/m, Sreg: ES ... GS, any size */
			op1(b, 0x8c);
			w = set_vsize(b, true);
			b->modrm = (uint8_t)(rnd(6) << 3);
			set_rm(b, w, true, 1);
			break;
		case 3:				/* PREFETCHh /0-/3: any address, never accessed */
			op2(b, 0x18);
			b->modrm = (uint8_t)(rnd(4) << 3);
			set_rm_any(b);
			break;
		case 4:				/* BT/BTS/BTR/BTC m, imm8 */
			op2(b, 0xba);
			w = set_vsize(b, true);
			b->modrm = (uint8_t)((4 + rnd(4)) << 3);
			set_rm_mem(b);
			set_imm(b, 1);
			break;
		default: {			/* MOV r, offset; BT/BTS/BTR/BTC m, r: bit-string
						 * addressing within 128 bytes either way */
			int64_t off = (int64_t)rnd(2048) - 1024;
			do
				r = (int)rnd(16);
			while (reserved(r));
			op1(b, (uint8_t)(0xb8 + (r & 7)));
			b->rex = (uint8_t)(0x48 | (r & 8 ? 1 : 0));
			b->nimm = 8;
			memcpy(b->imm, &off, 8);
			b = add(q, u);
			op2(b, (uint8_t[]){ 0xa3, 0xab, 0xb3, 0xbb }[rnd(4)]);
			w = set_vsize(b, true);
			set_rm_mem(b);
			b->p67 = false;	/* the 67 form is left */
			set_reg_field(b, r);
			break;
		}
		}
		break;
	}
	case 37: case 38: {	/* locked read-modify-writes on memory: LOCK ALU, INC/DEC/NOT/NEG,
				 * XADD, CMPXCHG (equal or not), BTS/BTR/BTC; XCHG (locked without F0) */
		int r;
		b->lock = true;
		switch (rnd(6)) {
		case 0:				/* LOCK ADD ... XOR m, r (not CMP) */
			o = (uint8_t)(rnd(7) << 3 | rnd(2));
			op1(b, o);
			w = (o & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
			set_rm_mem(b);
			set_reg_field(b, pick_reg(b, w, false));
			break;
		case 1:				/* LOCK group 1 m, imm (not CMP) */
			o = (uint8_t[]){ 0x80, 0x81, 0x83 }[rnd(3)];
			op1(b, o);
			w = o == 0x80 ? (maybe_rex(b), 1) : set_vsize(b, true);
			b->modrm = (uint8_t)(rnd(7) << 3);
			set_rm_mem(b);
			set_imm(b, o == 0x81 ? (w == 2 ? 2 : 4) : 1);
			break;
		case 2:				/* LOCK INC/DEC, NOT/NEG m */
			if (rnd(2)) {
				op1(b, rnd(2) ? 0xff : 0xfe);
				b->modrm = (uint8_t)(rnd(2) << 3);
			} else {
				op1(b, rnd(2) ? 0xf7 : 0xf6);
				b->modrm = (uint8_t)((2 + rnd(2)) << 3);
			}
			if (b->op[0] & 1)
				set_vsize(b, true);
			else
				maybe_rex(b);
			set_rm_mem(b);
			break;
		case 3:				/* LOCK XADD m, r; XCHG m, r (F0 or not) */
			if (rnd(2)) {
				op2(b, rnd(2) ? 0xc1 : 0xc0);
				w = (b->op[1] & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
			} else {
				op1(b, rnd(2) ? 0x87 : 0x86);
				w = (b->op[0] & 1) ? set_vsize(b, true) : (maybe_rex(b), 1);
				b->lock = rnd(2);
			}
			set_rm_mem(b);
			set_reg_field(b, pick_reg(b, w, true));
			break;
		case 4: {			/* [MOV rAX, m;] LOCK CMPXCHG m, r */
			bool eq = rnd(2);
			op2(b, rnd(2) ? 0xb1 : 0xb0);
			w = (b->op[1] & 1) ? set_vsize(b, true) : 1;
			set_rm_mem(b);
			set_reg_field(b, pick_reg(b, w, false));
			if (eq) {		/* the accumulator loaded from the same operand first */
				struct ib cx = *b;
				op1(b, w == 1 ? 0x8a : 0x8b);
				b->lock = false;
				b->modrm &= 0xc7;	/* reg = AL / rAX */
				b->rex &= (uint8_t)~0x04;
				if (b->rex == 0x40 && w != 1)
					b->rex = 0;
				b = add(q, u);
				*b = cx;
			}
			break;
		}
		default:			/* LOCK BTS/BTR/BTC m, imm8 */
			op2(b, 0xba);
			set_vsize(b, true);
			b->modrm = (uint8_t)((5 + rnd(3)) << 3);
			set_rm_mem(b);
			set_imm(b, 1);
			(void)r;
			break;
		}
		break;
	}
	case 47: {					/* STOS, REP STOS into the sandbox */
		/* LEA RDI, [RBX + 0x700..0x8ff]: across the sandbox's page boundary at RBX + 0x800 */
		lea_rdi_rbx(b, 0x700 + (int32_t)rnd(0x200));
		rep_string(q, u, 0xaa);
		break;
	}
	case 48: {					/* MOVS, REP MOVS within the sandbox */
		/* LEA RSI and RDI, [RBX + 0x600..0x9ff]: across the sandbox's page boundary at
		 * RBX + 0x800, overlapping either way at times; RSI less GS's base under a GS
		 * override (the source's segment; the destination's, ES, has none) */
		bool gs = !rnd(4);
		lea_rbx(b, RSI, 0x600 + (int32_t)rnd(0x400) - (gs ? (int32_t)GS_BASE : 0));
		b = add(q, u);
		int32_t d = rnd(4) ? (int32_t)rnd(0x400) : 0;
		lea_rbx(b, RDI, 0x600 + d);
		if (!rnd(4)) {				/* RDI near RSI: overlaps by less than an element */
			b->op[0] = 0x8d;
			b->modrm = (uint8_t)((7 << 3) | 0x80 | 6);	/* LEA RDI, [RSI + -8..8] */
			b->disp = (int32_t)rnd(17) - 8 + (gs ? (int32_t)GS_BASE : 0);
		}
		b = rep_string(q, u, 0xa4);
		if (gs)
			b->seg = 0x65;
		break;
	}
	case 40: {					/* [LOCK] CMPXCHG8B/16B [RDI] */
		/* LEA RDI, [RBX + 0x700..0x8f0]: 16-aligned (CMPXCHG16B's #GP otherwise), near
		 * the sandbox's page boundary at RBX + 0x800 */
		bool x16 = rnd(2), eq = rnd(2);
		lea_rdi_rbx(b, 0x700 + 16 * (int32_t)rnd(0x20));
		if (eq) {				/* rAX, rDX loaded from the operand: equal */
			b = add(q, u);			/* MOV rAX, [RDI] */
			op1(b, 0x8b);
			b->rex = x16 ? 0x48 : 0;
			b->has_modrm = true;
			b->modrm = 0x07;
			b = add(q, u);			/* MOV rDX, [RDI + 8 or 4] */
			op1(b, 0x8b);
			b->rex = x16 ? 0x48 : 0;
			b->has_modrm = true;
			b->modrm = 0x57;
			b->disp_size = 1;
			b->disp = x16 ? 8 : 4;
		}
		b = add(q, u);
		op2(b, 0xc7);
		b->lock = rnd(2);
		b->rex = x16 ? 0x48 : 0;
		b->has_modrm = true;
		b->modrm = 0x0f;			/* /1, [RDI] */
		break;
	}
	case 41: {		/* IRETQ to itself (Linux's sync_core()): the frame pushed, its RFLAGS
				 * image's arithmetic flags, DF and IF changed at random (IF is kept at
				 * CPL 3 with IOPL 0) */
		int r = lea_target(q, u, b), t = r == RCX ? RDX : RCX;
		b = add(q, u);				/* MOV e(t), SS */
		op1(b, 0x8c);
		b->has_modrm = true;
		b->modrm = (uint8_t)(0xc0 | 2 << 3 | t);
		b = add(q, u);				/* PUSH t */
		op1(b, (uint8_t)(0x50 + t));
		b = add(q, u);				/* LEA t, [RSP + 8] */
		op1(b, 0x8d);
		b->rex = 0x48;
		b->has_modrm = true;
		b->modrm = (uint8_t)(0x40 | t << 3 | 4);
		b->has_sib = true;
		b->sib = 0x24;
		b->disp_size = 1;
		b->disp = 8;
		b = add(q, u);				/* PUSH t */
		op1(b, (uint8_t)(0x50 + t));
		b = add(q, u);				/* PUSHFQ */
		op1(b, 0x9c);
		if (rnd(2)) {				/* XOR QWORD [RSP], flags */
			b = add(q, u);
			op1(b, 0x81);
			b->rex = 0x48;
			b->has_modrm = true;
			b->modrm = 6 << 3 | 4;
			b->has_sib = true;
			b->sib = 0x24;
			uint32_t x = (uint32_t)(unit_rand() & (INTERP_ARITH_FLAGS | RFLAGS_DF | RFLAGS_IF));
			b->nimm = 4;
			memcpy(b->imm, &x, 4);
		}
		b = add(q, u);				/* MOV e(t), CS */
		op1(b, 0x8c);
		b->has_modrm = true;
		b->modrm = (uint8_t)(0xc0 | 1 << 3 | t);
		b = add(q, u);				/* PUSH t */
		op1(b, (uint8_t)(0x50 + t));
		b = add(q, u);				/* PUSH r: the return address */
		op1(b, (uint8_t)(0x50 + (r & 7)));
		if (r & 8)
			b->rex = 0x41;
		b = add(q, u);				/* IRETQ */
		op1(b, 0xcf);
		b->rex = 0x48;
		break;
	}
	case 39:					/* SHLD/SHRD Ev, Gv, Ib / CL */
		o = (uint8_t[]){ 0xa4, 0xa5, 0xac, 0xad }[rnd(4)];
		op2(b, o);
		w = set_vsize(b, true);
		set_reg_field(b, pick_reg(b, w, false));
		/* a memory destination with CL: the count could be 0, which the core leaves */
		set_rm(b, w, true, (o & 1) ? 0 : 1);
		if (!(o & 1)) {
			set_imm(b, 1);
			if (b->modrm >> 6 != 3 && (b->imm[0] & (w == 8 ? 0x3f : 0x1f)) == 0)
				b->imm[0] |= 1;
		}
		break;
	case 33:					/* LEAVE, once a sequence (RBP is then garbage) */
		if (q->leave_used) {
			op1(b, 0x90);
			break;
		}
		q->leave_used = true;
		op1(b, 0xc9);
		break;
	default:					/* more ALU, the most common */
		o = (uint8_t)(rnd(8) << 3 | (1 + 2 * rnd(2)));
		op1(b, o);
		w = set_vsize(b, true);
		set_reg_field(b, pick_reg(b, w, true));
		set_rm_reg(b, pick_reg(b, w, (o & 2) == 0));
		break;
	}
}

static void gen_seq(struct seq *q)
{
	memset(q, 0, sizeof(*q));
	q->nunits = 1 + (int)rnd(12);
	for (int u = 0; u < q->nunits; u++) {
		q->first[u] = q->n;
		gen_unit(q, u);
	}
	q->first[q->nunits] = q->n;
	/* addresses: encodings have their final lengths already (displacement sizes are fixed) */
	uint8_t tmp[32];
	uint64_t at = CODE;
	for (int i = 0; i < q->n; i++) {
		q->addr[i] = at;
		at += (uint64_t)ib_encode(&q->in[i], tmp, at, q);
	}
	q->addr[q->n] = at;
	q->end = at;
}

/* writes the code page: the instructions, then JMP [RIP+0] to native_exit */
static uint64_t write_code(const uint8_t *bytes, size_t len)
{
	uint8_t *p = (uint8_t *)CODE;
	memmove(p, bytes, len);
	static const uint8_t jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
	uint64_t to = (uint64_t)(uintptr_t)native_exit;
	memcpy(p + len, jmp, 6);
	memcpy(p + len + 6, &to, 8);
	return CODE + len;
}

/* --- one case: interpreter, then the processor, then compare ----------------------------------- */

static uint8_t mem_init[SANDBOX_SIZE], mem_interp[SANDBOX_SIZE];
static unsigned long long n_cases, n_insns, n_branches, n_taken, n_fail, n_skipped;
static unsigned long long leave_count[INTERP_LEAVE_NREASONS];
static bool verbose;

#define NKEYS 4096
static struct { uint32_t key; unsigned long long n; } left_ops[NKEYS];
static void count_left(const struct interp_result *r)
{
	uint32_t k = interp_opkey(r);
	for (unsigned i = 0; i < NKEYS; i++) {
		unsigned j = (k * 2654435761u + i) % NKEYS;
		if (!left_ops[j].n || left_ops[j].key == k) {
			left_ops[j].key = k;
			left_ops[j].n++;
			return;
		}
	}
}

static void dump_state(const char *what, const uint64_t *g, uint64_t flags, uint64_t rip)
{
	static const char *const names[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
					       "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
	fprintf(stderr, "  %s: rip %#llx rflags %#llx\n   ", what, (unsigned long long)rip, (unsigned long long)flags);
	for (int i = 0; i < 16; i++)
		fprintf(stderr, " %s=%#llx%s", names[i], (unsigned long long)g[i], i % 4 == 3 ? "\n   " : "");
	fputc('\n', stderr);
}

static void dump_code(uint64_t end)
{
	uint64_t at = CODE;
	fprintf(stderr, "  code (at %#llx):\n", (unsigned long long)CODE);
	while (at < end) {
		struct dec_insn in;
		const uint8_t *p = (const uint8_t *)at;
		if (dec_decode(p, (size_t)(end - at), DEC_MODE_64, at, &in) != DEC_OK)
			in.len = 1;
		fprintf(stderr, "    %#llx:", (unsigned long long)at);
		for (int i = 0; i < in.len; i++)
			fprintf(stderr, " %02x", p[i]);
		fputc('\n', stderr);
		at += in.len;
	}
}

/* Runs the code now on the code page from `init` through the interpreter and natively.
 * stop_ok: a leave is not a failure but cuts the case short (kernel windows: the prefix the
 * interpreter executed is compared). Returns false on a mismatch. */
static bool run_case(uint64_t end, const struct interp_cpu *init, bool stop_ok)
{
	struct interp_cpu c = *init;
	struct interp_result r;
	int steps = 0;
	uint64_t part_at = 0;	/* a REP STOS done in part here: RIP stayed at it */

	memcpy(mem_init, (void *)SANDBOX, SANDBOX_SIZE);
	while (c.rip != end) {
		uint64_t at = c.rip;
		if (c.rip < CODE || c.rip > end || ++steps > 4 * MAX_INSNS) {
			fprintf(stderr, "FAIL interp: RIP %#llx outside the sequence\n", (unsigned long long)c.rip);
			dump_code(end);
			return false;
		}
		if (interp_step(&c, use_cache ? &ops_cached : &ops, NULL, &r)) {
			leave_count[r.leave]++;
			/* the opcodes the core does not do (not the sandbox's bounds) */
			if (r.leave == INTERP_LEAVE_INVALID || r.leave == INTERP_LEAVE_OPCODE ||
			    r.leave == INTERP_LEAVE_PREFIX)
				count_left(&r);
			if (!stop_ok) {
				fprintf(stderr, "FAIL interp left (%s) at %#llx, opcode map %u %02x /%u\n",
					interp_leave_name(r.leave), (unsigned long long)c.rip, r.map, r.opcode,
					r.modrm_reg);
				dump_code(end);
				dump_state("at", c.gpr, c.rflags, c.rip);
				return false;
			}
			/* nothing to compare: the first instruction, or one the interpreter did part
			 * of (a REP STOS whose next part it leaves: the processor's run cannot be cut
			 * there) */
			if (c.rip == CODE || c.rip == part_at) {
				n_skipped++;
				memcpy((void *)SANDBOX, mem_init, SANDBOX_SIZE);
				return true;
			}
			/* compare the prefix executed: end the code where the interpreter stopped */
			end = write_code((const uint8_t *)CODE, (size_t)(c.rip - CODE));
			break;
		}
		n_insns++;
		if (c.rip == at)
			part_at = at;
		if (r.branch != DEC_BR_NONE) {
			n_branches++;
			n_taken += r.taken;
			if (r.to != c.rip) {
				fprintf(stderr, "FAIL interp: branch result to %#llx, RIP %#llx\n",
					(unsigned long long)r.to, (unsigned long long)c.rip);
				return false;
			}
		}
	}
	memcpy(mem_interp, (void *)SANDBOX, SANDBOX_SIZE);
	memcpy((void *)SANDBOX, mem_init, SANDBOX_SIZE);

	struct nstate ns;
	memcpy(ns.gpr, init->gpr, sizeof(ns.gpr));
	ns.rflags = init->rflags;
	in_native = 1;
	native_run(&ns, init->rip);
	in_native = 0;
	n_cases++;

	bool ok = !memcmp(ns.gpr, c.gpr, sizeof(ns.gpr)) && !((ns.rflags ^ c.rflags) & FLAGS_CMP) &&
		  !memcmp(mem_interp, (void *)SANDBOX, SANDBOX_SIZE);
	if (!ok) {
		n_fail++;
		if (n_fail <= 5) {
			fprintf(stderr, "FAIL mismatch (case %llu):\n", n_cases);
			dump_code(end);
			dump_state("before", init->gpr, init->rflags, init->rip);
			dump_state("processor", ns.gpr, ns.rflags, end);
			dump_state("interpreter", c.gpr, c.rflags, c.rip);
			for (unsigned i = 0, shown = 0; i < SANDBOX_SIZE && shown < 8; i++) {
				uint8_t nat = ((uint8_t *)SANDBOX)[i];
				if (nat != mem_interp[i]) {
					fprintf(stderr, "  memory %#llx: processor %02x interpreter %02x (was %02x)\n",
						(unsigned long long)(SANDBOX + i), nat, mem_interp[i], mem_init[i]);
					shown++;
				}
			}
		}
	}
	return ok;
}

static uint64_t rand_value(void)
{
	switch (rnd(8)) {
	case 0: return 0;
	case 1: return ~0ull;
	case 2: return rnd(64);
	case 3: return 1ull << rnd(64);
	case 4: return (uint64_t)(int64_t)(int32_t)unit_rand();
	case 5: return 0x80ull << (8 * rnd(8));
	default: return unit_rand();
	}
}

/* the host processor's CPUID.80000001H:ECX.PREFETCHW (main) */
static bool host_prefetchw;

static void init_cpu(struct interp_cpu *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < 16; i++)
		c->gpr[i] = rand_value();
	c->gpr[RBX] = DATA_MID;
	c->gpr[RSP] = STACK_TOP - (rnd(8) ? 0 : rnd(8));
	c->gpr[RBP] = FRAME;
	c->gpr[R12] = rnd(32);
	c->rflags = 0x202 | (unit_rand() & INTERP_ARITH_FLAGS) | (rnd(8) ? 0 : RFLAGS_DF);
	c->gs_base = GS_BASE;
	c->mode = DEC_MODE_64;
	c->rip = CODE;
	c->prefetchw = host_prefetchw;
	c->rep_parts = true;	/* clear: a REP STOS across a page is left (directed) */
	c->iret_ok = true;	/* no NMI blocking in a host process */
	/* the host runs the native side at CPL 3 with IOPL 0 (CLI, STI are then left; POPF keeps
	 * IF), with its own segment selectors (MOV r/m, Sreg) */
	c->cpl = 3;
	__asm__("mov %%es, %0; mov %%cs, %1; mov %%ss, %2; mov %%ds, %3; mov %%fs, %4; mov %%gs, %5"
		: "=m"(c->sel[0]), "=m"(c->sel[1]), "=m"(c->sel[2]), "=m"(c->sel[3]), "=m"(c->sel[4]),
		  "=m"(c->sel[5]));
}

static void fill_sandbox(bool pointers)
{
	uint64_t *m = (uint64_t *)SANDBOX;
	for (unsigned i = 0; i < SANDBOX_SIZE / 8; i++)
		m[i] = pointers && rnd(8) ? DATA_MID - 0x400 + (rnd(0x800) & ~7ull) : unit_rand();
}

static void random_cases(unsigned long long count)
{
	static struct seq q;
	uint8_t code[MAX_INSNS * 16];
	for (unsigned long long i = 0; i < count; i++) {
		struct interp_cpu c;
		size_t len = 0;
		gen_seq(&q);
		for (int k = 0; k < q.n; k++)
			len += (size_t)ib_encode(&q.in[k], code + len, q.addr[k], &q);
		uint64_t end = write_code(code, len);
		if (end != q.end) {
			fprintf(stderr, "FAIL generator: lengths changed\n");
			n_fail++;
			return;
		}
		init_cpu(&c);
		if (!rnd(64))
			fill_sandbox(false);
		/* one case in four through the decode cache, twice: the second run takes every
		 * instruction from its entry, derived fields included */
		use_cache = (i & 3) == 1;
		if (!run_case(end, &c, false) && n_fail > 5)
			return;
		if (use_cache && !run_case(end, &c, false) && n_fail > 5)
			return;
		use_cache = false;
	}
}

/* --- Debian's kernel: prologues (from each ENDBR64) and epilogues (before each RET) ------------ */

static void kernel_cases(const char *path, unsigned long long max_windows)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("interp: no kernel at %s: kernel windows skipped\n", path);
		return;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *img = malloc((size_t)size);
	if (!img || fread(img, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(img);
		CHECK(0, "reading %s", path);
		return;
	}
	fclose(f);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	const char *shstr = (const char *)img + sh[eh->e_shstrndx].sh_offset;
	const uint8_t *text = NULL;
	size_t tlen = 0;
	for (int i = 0; i < eh->e_shnum; i++)
		if (!strcmp(shstr + sh[i].sh_name, ".text")) {
			text = img + sh[i].sh_offset;
			tlen = sh[i].sh_size;
		}
	if (!text) {
		CHECK(0, "no .text in %s", path);
		free(img);
		return;
	}
	/* a linear sweep (the decoder's own test does the same): window starts */
	enum { WIN = 10 };
	size_t *starts = malloc(sizeof(size_t) * (tlen / 64 + 16));
	size_t nstarts = 0;
	size_t ring[WIN] = { 0 };
	unsigned long long nins = 0;
	unsigned pad = 0;
	for (size_t at = 0; at < tlen;) {
		struct dec_insn in;
		if (dec_decode(text + at, tlen - at, DEC_MODE_64, at, &in) != DEC_OK) {
			at++;
			continue;
		}
		ring[nins % WIN] = at;
		nins++;
		/* a function's first instruction: after its padding (NOPs or INT3s: Debian's
		 * kernel has no ENDBR64 but 16 bytes of call-depth padding) or an ENDBR64 */
		bool padding = in.len == 1 && (text[at] == 0x90 || text[at] == 0xcc);
		bool endbr = in.len == 4 && !memcmp(text + at, "\xf3\x0f\x1e\xfa", 4);
		bool prologue = (pad >= 4 && !padding) || endbr;
		/* the end of a block: a RET, or the JMP rel32 to the return thunk (retpolines)
		 * or any other */
		bool epilogue = (in.branch == DEC_BR_RET || text[at] == 0xe9) && nins > WIN;
		pad = padding ? pad + 1 : 0;
		if ((prologue || epilogue) && nstarts < tlen / 64 + 16)
			starts[nstarts++] = prologue ? at : ring[nins % WIN];
		at += in.len;
	}
	unsigned long long done = 0, step = MAX(1ull, nstarts / MAX(1ull, max_windows));
	unsigned long long before = n_cases, skipped_before = n_skipped, insns_before = n_insns;
	for (size_t s = 0; s < nstarts && done < max_windows; s += step, done++) {
		/* the window: instructions up to the first transfer or RIP-relative / FS / GS one */
		size_t at = starts[s], len = 0;
		for (int k = 0; k < 12 && at + len < tlen; k++) {
			struct dec_insn in;
			if (dec_decode(text + at + len, tlen - at - len, DEC_MODE_64, 0, &in) != DEC_OK ||
			    in.branch != DEC_BR_NONE || in.rip_relative || in.seg == 0x64 || in.seg == 0x65)
				break;
			len += in.len;
		}
		if (!len)
			continue;
		struct interp_cpu c;
		uint64_t end = write_code(text + at, len);
		init_cpu(&c);
		for (int i = 0; i < 16; i++)
			if (i != RSP && (i == RBP || rnd(8)))
				c.gpr[i] = DATA_MID - 0x400 + (rnd(0x800) & ~7ull);
		fill_sandbox(true);
		if (!run_case(end, &c, true) && n_fail > 5)
			break;
	}
	printf("interp: kernel %s: %zu windows found (function starts after padding or ENDBR64; blocks before a RET or JMP rel32), %llu run: "
	       "%llu compared (%llu instructions), %llu left at their first instruction\n",
	       path, nstarts, done, n_cases - before, n_insns - insns_before, n_skipped - skipped_before);
	free(starts);
	free(img);
}

/* --- directed checks the random sequences cannot make natively --------------------------------- */

static uint8_t dmem[64];
static int d_read(void *ctx, uint64_t lin, void *buf, unsigned len)
{
	(void)ctx;
	if (lin < 0x1000 || lin > 0x1000 + sizeof(dmem) - len)
		return INTERP_MEM_LEAVE;
	memcpy(buf, dmem + (lin - 0x1000), len);
	return INTERP_MEM_OK;
}
static int d_write_fail(void *ctx, uint64_t lin, const void *buf, unsigned len)
{
	(void)ctx, (void)lin, (void)buf, (void)len;
	return INTERP_MEM_LEAVE;
}
static const uint8_t *d_code;
static unsigned d_len;
static unsigned d_fetch(void *ctx, uint64_t lin, uint8_t *buf, unsigned max)
{
	(void)ctx;
	if (lin != 0x400000)
		return 0;
	unsigned n = MIN(max, d_len);
	memcpy(buf, d_code, n);
	return n;
}
static const struct interp_mem_ops dops = { .read = d_read, .write = d_write_fail, .fetch = d_fetch };
/* a locked write that loses its race `d_races` times: "another processor" stores d_race_value
 * (then d_race_value + 1, ...) first, as if it had written between the instruction's read and
 * its write */
static unsigned d_races;
static uint64_t d_race_value;
static int d_cmpxchg(void *ctx, uint64_t lin, uint64_t *old, uint64_t new, unsigned len, bool *done)
{
	uint64_t now = 0;
	(void)ctx;
	if (lin < 0x1000 || lin > 0x1000 + sizeof(dmem) - len)
		return INTERP_MEM_LEAVE;
	if (d_races) {
		d_races--;
		memcpy(dmem + (lin - 0x1000), &d_race_value, len);
		d_race_value++;	/* each race a new value */
	}
	memcpy(&now, dmem + (lin - 0x1000), len);
	*done = now == *old;
	if (*done)
		memcpy(dmem + (lin - 0x1000), &new, len);
	else
		*old = now;
	return INTERP_MEM_OK;
}
static const struct interp_mem_ops dops_locked = { .read = d_read, .write = d_write_fail, .fetch = d_fetch,
						   .cmpxchg = d_cmpxchg };

static int dstep(struct interp_cpu *c, const uint8_t *code, unsigned len, struct interp_result *r)
{
	d_code = code;
	d_len = len;
	c->rip = 0x400000;
	c->mode = DEC_MODE_64;
	return interp_step(c, &dops, NULL, r);
}
#define DSTEP(c, r, ...) ({ static const uint8_t _b[] = { __VA_ARGS__ }; dstep(c, _b, sizeof(_b), r); })

static void directed(void)
{
	struct interp_cpu c, before;
	struct interp_result r;

	/* a failing write changes nothing: add [rax], rcx; push; call */
	memset(&c, 0, sizeof(c));
	c.gpr[RAX] = 0x1000;
	c.gpr[RSP] = 0x1020;
	c.rflags = 0x2;
	c.mode = DEC_MODE_64;
	c.rip = 0x400000;
	before = c;
	CHECK(DSTEP(&c, &r, 0x48, 0x01, 0x08) == INTERP_LEAVE_MEMORY && !memcmp(&c, &before, sizeof(c)),
	      "ADD [RAX], RCX with a failing write: nothing changes");
	CHECK(DSTEP(&c, &r, 0xe8, 0, 0, 0, 0) == INTERP_LEAVE_MEMORY && !memcmp(&c, &before, sizeof(c)),
	      "CALL with a failing push: RSP unchanged");
	CHECK(DSTEP(&c, &r, 0x5b) == 0 && c.gpr[RSP] == 0x1028 && c.rip == 0x400001, "POP RBX: a read only");
	/* FS and GS bases; other segments ignored */
	memset(&c, 0, sizeof(c));
	memset(dmem, 0, sizeof(dmem));
	dmem[0x10] = 0x5a;
	c.fs_base = 0x1000;
	c.gs_base = 0x800;
	c.gpr[RAX] = 0x10;
	CHECK(DSTEP(&c, &r, 0x64, 0x8a, 0x08) == 0 && (c.gpr[RCX] & 0xff) == 0x5a, "MOV CL, FS:[RAX]");
	c.gpr[RAX] = 0x810;
	CHECK(DSTEP(&c, &r, 0x65, 0x8a, 0x10) == 0 && (c.gpr[RDX] & 0xff) == 0x5a, "MOV DL, GS:[RAX]");
	c.gpr[RAX] = 0x1010;
	CHECK(DSTEP(&c, &r, 0x26, 0x8a, 0x18) == 0 && (c.gpr[RBX] & 0xff) == 0x5a, "MOV BL, ES:[RAX]: no base");
	/* canonical addresses, branch targets; alignment checking; TF; LOCK; CET */
	c.gpr[RAX] = 0x0000800000000000ull;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == INTERP_LEAVE_CANONICAL, "MOV from a non-canonical address");
	CHECK(DSTEP(&c, &r, 0xff, 0xe0) == INTERP_LEAVE_TARGET, "JMP RAX to a non-canonical address");
	/* with 5-level paging (CR4.LA57) canonical is 57 bits: Linux's direct map at
	 * 0xff11000000000000 passes the check (the harness's memory then refuses it) */
	c.la57 = true;
	c.gpr[RAX] = 0xff11000000001000ull;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == INTERP_LEAVE_MEMORY, "LA57: MOV from a 57-bit canonical address");
	c.gpr[RAX] = 0x0100000000000000ull;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == INTERP_LEAVE_CANONICAL, "LA57: MOV from a non-canonical address");
	c.la57 = false;
	c.gpr[RAX] = 0xff11000000001000ull;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == INTERP_LEAVE_CANONICAL, "4 levels: the same address is not canonical");
	c.gpr[RAX] = 0x1001;
	c.cpl = 3;
	c.cr0_am = true;
	c.rflags = 0x2 | RFLAGS_AC;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == INTERP_LEAVE_ALIGN, "misaligned with CR0.AM, AC, CPL 3: #AC");
	c.cpl = 0;
	CHECK(DSTEP(&c, &r, 0x8b, 0x08) == 0, "misaligned at CPL 0: no #AC");
	c.rflags = 0x2 | RFLAGS_TF;
	CHECK(DSTEP(&c, &r, 0x90) == INTERP_LEAVE_TRAP, "TF: left");
	c.rflags = 0x2 | RFLAGS_RF;
	CHECK(DSTEP(&c, &r, 0x90) == 0 && !(c.rflags & RFLAGS_RF), "RF cleared by a completed instruction");
	c.gpr[RAX] = 0x1000;
	CHECK(DSTEP(&c, &r, 0xf0, 0x01, 0x08) == INTERP_LEAVE_PREFIX, "LOCK ADD without a cmpxchg callback: left");
	CHECK(DSTEP(&c, &r, 0x87, 0x08) == INTERP_LEAVE_OPCODE, "XCHG with memory without a cmpxchg callback: left");
	{	/* LOCK XADD [RAX], ECX whose write loses its race twice (9, then 10 stored by
		 * "another processor"): run again on the value found each time */
		static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x08 };
		uint32_t v = 5;
		memcpy(dmem, &v, 4);
		c.gpr[RAX] = 0x1000;
		c.gpr[RCX] = 3;
		d_races = 2;
		d_race_value = 9;
		d_code = xadd;
		d_len = sizeof(xadd);
		c.rip = 0x400000;
		int st = interp_step(&c, &dops_locked, NULL, &r);
		memcpy(&v, dmem, 4);
		CHECK(st == 0 && v == 13 && c.gpr[RCX] == 10 && c.rip == 0x400004 && !d_races,
		      "LOCK XADD racing: %d, memory %u (want 10 + 3), ECX %llu (want 10)", st, v,
		      (unsigned long long)c.gpr[RCX]);
		/* one that loses every time: left after its tries, nothing changed */
		d_races = 100;
		d_race_value = 1;
		c.gpr[RCX] = 3;
		c.rip = 0x400000;
		st = interp_step(&c, &dops_locked, NULL, &r);
		CHECK(st == INTERP_LEAVE_MEMORY && c.gpr[RCX] == 3 && c.rip == 0x400000,
		      "LOCK XADD losing every race: left (%d), ECX %llu", st, (unsigned long long)c.gpr[RCX]);
		d_races = 0;
	}
	{	/* IRETQ: the same CS and SS, NMIs not blocked; the frame at RSP = 0x1000 */
		struct interp_cpu k;
		const uint64_t cf = RFLAGS_CF, df = RFLAGS_DF, fif = RFLAGS_IF;
		uint64_t fr[5] = { 0x400100, 0x10, 0x2 | cf | df, 0x2000, 0x18 };
#define IRET_CASE(flags_now, img, cpl_, ok_)						\
		(memset(&k, 0, sizeof(k)), k.rflags = (flags_now), k.cpl = (cpl_), k.sel[1] = 0x10,	\
		 k.sel[2] = 0x18, k.iret_ok = (ok_), k.gpr[RSP] = 0x1000, fr[2] = (img),	\
		 memcpy(dmem, fr, sizeof(fr)), DSTEP(&k, &r, 0x48, 0xcf))
		CHECK(IRET_CASE(0x2 | fif, 0x2 | cf | df, 0, true) == 0 && k.rip == 0x400100 && k.gpr[RSP] == 0x2000 &&
		      k.rflags == (0x2 | cf | df) && r.branch == DEC_BR_IRET && r.taken && r.from == 0x400000 &&
		      r.to == 0x400100, "IRETQ at CPL 0: RIP %llx RSP %llx RFLAGS %llx (IF cleared)",
		      (unsigned long long)k.rip, (unsigned long long)k.gpr[RSP], (unsigned long long)k.rflags);
		CHECK(IRET_CASE(0x2, 0x2 | fif, 0, true) == 0 && k.rflags == (0x2 | fif), "IRETQ at CPL 0 sets IF");
		CHECK(IRET_CASE(0x2 | fif, 0x2, 3, true) == 0 && k.rflags == (0x2 | fif),
		      "IRETQ at CPL 3, IOPL 0: IF kept (%llx)", (unsigned long long)k.rflags);
		CHECK(IRET_CASE(0x2, 0x2 | fif, 3, true) == 0 && k.rflags == 0x2,
		      "IRETQ at CPL 3, IOPL 0: IF kept clear (%llx)", (unsigned long long)k.rflags);
		static const struct { uint64_t now, img; const char *what; } left[] = {
			{ 0x2, 0x2 | (3ull << 12), "an IOPL change" }, { 0x2, 0x2 | RFLAGS_TF, "TF" },
			{ 0x2, 0x2 | RFLAGS_RF, "RF popped" }, { 0x2, 0x2 | RFLAGS_AC, "an AC change" },
			{ 0x2, 0x2 | RFLAGS_NT, "NT popped" }, { 0x2 | RFLAGS_NT, 0x2 | RFLAGS_NT, "NT now (#GP)" },
			{ 0x2, 0x2 | RFLAGS_VIF, "a VIF change" },
		};
		for (unsigned i = 0; i < sizeof(left) / sizeof(left[0]); i++)
			CHECK(IRET_CASE(left[i].now, left[i].img, 0, true) == INTERP_LEAVE_OPCODE && k.rip == 0x400000 &&
			      k.gpr[RSP] == 0x1000 && k.rflags == left[i].now, "IRETQ with %s: left, nothing changed",
			      left[i].what);
		CHECK(IRET_CASE(0x2, 0x2, 0, false) == INTERP_LEAVE_OPCODE, "IRETQ while NMIs are blocked: left");
		fr[1] = 0x33;
		CHECK(IRET_CASE(0x2, 0x2, 0, true) == INTERP_LEAVE_OPCODE, "IRETQ to another CS: left");
		fr[1] = 0x10;
		fr[4] = 0x2b;
		CHECK(IRET_CASE(0x2, 0x2, 0, true) == INTERP_LEAVE_OPCODE, "IRETQ to another SS: left");
		fr[4] = 0x18;
		fr[0] = 0x8000000000000000ull;
		CHECK(IRET_CASE(0x2, 0x2, 0, true) == INTERP_LEAVE_TARGET && k.gpr[RSP] == 0x1000,
		      "IRETQ to a non-canonical RIP: left (#GP)");
		fr[0] = 0x400100;
		k.iret_ok = true;
		k.gpr[RSP] = 0x1000;
		CHECK(DSTEP(&k, &r, 0xcf) == INTERP_LEAVE_OPCODE, "IRETD (no REX.W): left");
#undef IRET_CASE
	}
	CHECK(DSTEP(&c, &r, 0x0f, 0x31) == INTERP_LEAVE_OPCODE && r.map == 1 && r.opcode == 0x31, "RDTSC: left");
	/* 0F 01: RDTSCP and INVLPG left, counted as two instructions (the register form's key is
	 * its whole ModRM byte) */
	CHECK(DSTEP(&c, &r, 0x0f, 0x01, 0xf9) == INTERP_LEAVE_OPCODE && r.map == 1 && r.opcode == 0x01 &&
	      r.modrm_reg == 0xf9, "RDTSCP: left, counted as 0F 01 F9 (%x)", r.modrm_reg);
	/* INVLPG m: executed at CPL 0 (no access; the address for the caller's drop of its
	 * translations), a #GP at CPL 3 and a NOP at a non-canonical address are the processor's */
	unsigned cpl0 = c.cpl;
	c.gpr[RAX] = 0x1000;
	c.cpl = 3;
	CHECK(DSTEP(&c, &r, 0x0f, 0x01, 0x38) == INTERP_LEAVE_OPCODE && r.map == 1 && r.opcode == 0x01 &&
	      r.modrm_reg == 7 && c.rip == 0x400000, "INVLPG [rax] at CPL 3: left, counted as 0F 01 /7 (%x)",
	      r.modrm_reg);
	c.cpl = 0;
	c.fs_base = 0x7000;
	CHECK(DSTEP(&c, &r, 0x64, 0x0f, 0x01, 0x78, 0x10) == 0 && r.invlpg && r.inval == 0x8010 &&
	      c.rip == 0x400005 && r.branch == DEC_BR_NONE, "INVLPG fs:[rax+0x10] at CPL 0: executed, page %lx",
	      (unsigned long)r.inval);
	CHECK(DSTEP(&c, &r, 0x0f, 0x31) == INTERP_LEAVE_OPCODE && !r.invlpg, "the next result says no INVLPG");
	c.gpr[RAX] = 0x8000000000000000ull;
	CHECK(DSTEP(&c, &r, 0x0f, 0x01, 0x38) == INTERP_LEAVE_CANONICAL && !r.invlpg && c.rip == 0x400000,
	      "INVLPG at a non-canonical address: left (a NOP of the processor's)");
	c.gpr[RAX] = 0x1000;
	CHECK(DSTEP(&c, &r, 0x66, 0x0f, 0x01, 0x38) == INTERP_LEAVE_OPCODE && !r.invlpg, "66 INVLPG: left");
	CHECK(DSTEP(&c, &r, 0x0f, 0x01, 0x30) == INTERP_LEAVE_OPCODE && !r.invlpg, "LMSW (0F 01 /6): left");
	c.cpl = cpl0;
	c.fs_base = 0;
	/* DIV/IDIV only where they cannot raise #DE */
	c.gpr[RAX] = 100;
	c.gpr[RDX] = 0;
	c.gpr[RCX] = 0;
	CHECK(DSTEP(&c, &r, 0xf7, 0xf1) == INTERP_LEAVE_OPCODE && r.modrm_reg == 6, "DIV by 0: left, /6 counted");
	c.gpr[RCX] = 7;
	c.gpr[RDX] = 7;
	CHECK(DSTEP(&c, &r, 0xf7, 0xf1) == INTERP_LEAVE_OPCODE, "DIV whose quotient overflows: left");
	c.gpr[RDX] = 6;
	unsigned __int128 dividend = (unsigned __int128)6 << 64 | 100;
	CHECK(DSTEP(&c, &r, 0x48, 0xf7, 0xf1) == 0 && c.gpr[RAX] == (uint64_t)(dividend / 7) &&
	      c.gpr[RDX] == (uint64_t)(dividend % 7), "DIV RCX: RDX:RAX / 7");
	c.gpr[RAX] = 1ull << 63;
	c.gpr[RDX] = ~0ull;
	c.gpr[RCX] = ~0ull;
	CHECK(DSTEP(&c, &r, 0x48, 0xf7, 0xf9) == INTERP_LEAVE_OPCODE, "IDIV of the most negative by -1: left");
	c.gpr[RAX] = 5;
	c.gpr[RDX] = 1;
	c.gpr[RCX] = 2;
	CHECK(DSTEP(&c, &r, 0x48, 0xf7, 0xf9) == INTERP_LEAVE_OPCODE, "IDIV whose dividend is not a sign-extended RAX: left");
	CHECK(DSTEP(&c, &r, 0x66, 0xc3) == INTERP_LEAVE_PREFIX, "66 RET: left (Intel and AMD differ)");
	c.cet = true;
	CHECK(DSTEP(&c, &r, 0xc3) == INTERP_LEAVE_CET, "RET with CET: left");
	CHECK(DSTEP(&c, &r, 0xf3, 0x0f, 0x1e, 0xfa) == INTERP_LEAVE_OPCODE, "ENDBR64 with CET: left");
	c.cet = false;
	c.prefetchw = false;
	CHECK(DSTEP(&c, &r, 0x0f, 0x0d, 0x08) == INTERP_LEAVE_OPCODE, "PREFETCHW where the processor lacks it: left");
	c.prefetchw = true;
	CHECK(DSTEP(&c, &r, 0x0f, 0x0d, 0x08) == 0, "PREFETCHW [RAX]: a hint");
	CHECK(DSTEP(&c, &r, 0x0f, 0x0d, 0x00) == INTERP_LEAVE_OPCODE, "0F 0D /0: left");
	CHECK(DSTEP(&c, &r, 0x0f, 0x0d, 0xc8) == INTERP_LEAVE_OPCODE, "0F 0D /1 with a register: left");
	uint64_t r8 = c.gpr[8], rax = c.gpr[RAX];
	CHECK(DSTEP(&c, &r, 0xf3, 0x90) == 0 && c.gpr[RAX] == rax, "PAUSE: a hint");
	CHECK(DSTEP(&c, &r, 0xf3, 0x41, 0x90) == INTERP_LEAVE_OPCODE && c.gpr[8] == r8, "F3 REX.B 90: left");
	CHECK(DSTEP(&c, &r, 0xf3, 0x48, 0xab) == INTERP_LEAVE_PREFIX, "REP STOSQ without a fill callback: left");
	CHECK(DSTEP(&c, &r, 0xf2, 0xaa) == INTERP_LEAVE_PREFIX, "REPNE STOSB: left");
	CHECK(DSTEP(&c, &r, 0x67, 0xaa) == INTERP_LEAVE_PREFIX, "STOSB with a 32-bit address: left");
	CHECK(DSTEP(&c, &r, 0xf3, 0x48, 0xa5) == INTERP_LEAVE_PREFIX, "REP MOVSQ without a copy callback: left");
	CHECK(DSTEP(&c, &r, 0xf2, 0xa4) == INTERP_LEAVE_PREFIX, "REPNE MOVSB: left");
	CHECK(DSTEP(&c, &r, 0x67, 0xa4) == INTERP_LEAVE_PREFIX, "MOVSB with a 32-bit address: left");
	CHECK(DSTEP(&c, &r, 0x0f) == INTERP_LEAVE_FETCH, "truncated: left");
	c.mode = DEC_MODE_32;
	d_code = (const uint8_t *)"\x90";
	d_len = 1;
	CHECK(interp_step(&c, &dops, NULL, &r) == INTERP_LEAVE_MODE, "32-bit code: left");
	/* the branch record */
	memset(&c, 0, sizeof(c));
	c.rflags = 0x2 | RFLAGS_ZF;
	CHECK(DSTEP(&c, &r, 0x74, 0x10) == 0 && r.branch == DEC_BR_JCC && r.taken && r.from == 0x400000 &&
	      r.to == 0x400012 && c.rip == 0x400012, "JZ taken: from, to");
	c.rflags = 0x2;
	CHECK(DSTEP(&c, &r, 0x74, 0x10) == 0 && !r.taken && r.to == 0x400002, "JZ not taken");
}

int main(int argc, char **argv)
{
	unsigned long long cases = 1000000, kwin = 1000000;
	const char *kernel = "build/cache/linux/vmlinux";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cases") && i + 1 < argc)
			cases = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			unit_rng = strtoull(argv[++i], NULL, 0) | 1;
		else if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
			kernel = argv[++i];
		else if (!strcmp(argv[i], "--kernel-windows") && i + 1 < argc)
			kwin = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--verbose"))
			verbose = true;
	}
	uint32_t a = 0x80000001u, b, c = 0, d;
	__asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	host_prefetchw = c & CPUID_80000001_ECX_PREFETCHW;
	const char *env = getenv("INTERP_CASES");
	if (env)
		cases = strtoull(env, NULL, 0);

	region = mmap((void *)REGION_ADDR, REGION_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (region != (uint8_t *)REGION_ADDR) {
		CHECK(0, "mmap at %#llx", REGION_ADDR);
		return unit_done("interp");
	}
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, GS_BASE)) {
		CHECK(0, "arch_prctl(ARCH_SET_GS)");
		return unit_done("interp");
	}
	static uint8_t altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	sigaltstack(&ss, NULL);
	struct sigaction sa = { .sa_handler = crash, .sa_flags = SA_ONSTACK };
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(interp_native_selftest(), "the stub table's layout");
	directed();
	fill_sandbox(false);
	random_cases(cases);
	unsigned long long rc = n_cases, ri = n_insns;
	CHECK(n_fail == 0, "%llu random sequences differ from the processor", n_fail);
	/* a quarter of the cases ran twice through the decode cache */
	CHECK(cases < 1000 || dcache_hits > cases, "the decode cache's derived fields were reused (%llu hits)",
	      dcache_hits);
	kernel_cases(kernel, kwin);
	CHECK(n_fail == 0, "%llu sequences differ from the processor", n_fail);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("interp: %llu random sequences (%llu instructions, %llu branches, %llu taken) and %llu kernel "
	       "windows (%llu instructions) against the processor in %.1f s, %llu differ; %llu decode cache hits\n",
	       rc, ri, n_branches, n_taken, n_cases - rc, n_insns - ri, secs, n_fail, dcache_hits);
	if (verbose) {
		for (int i = 1; i < INTERP_LEAVE_NREASONS; i++)
			if (leave_count[i])
				printf("interp: left (%s): %llu\n", interp_leave_name((enum interp_leave)i), leave_count[i]);
		/* the opcodes most often left, kernel windows (a small selection sort) */
		for (int top = 0; top < 25; top++) {
			unsigned best = NKEYS;
			for (unsigned i = 0; i < NKEYS; i++)
				if (left_ops[i].n && (best == NKEYS || left_ops[i].n > left_ops[best].n))
					best = i;
			if (best == NKEYS)
				break;
			uint32_t k = left_ops[best].key;
			printf("interp: left %6llu x  enc %u map %u opcode %02x /%u\n", left_ops[best].n, k >> 20,
			       (k >> 16) & 0xf, (k >> 8) & 0xff, k & 0xff);
			left_ops[best].n = 0;
		}
	}
	return unit_done("interp");
}
