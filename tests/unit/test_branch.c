/* Branch semantics (hv/trace/branch.c) on the host: real encodings through
 * the decoder, then taken or not and the target, against the SDM's rules
 * (Vol. 2A Jcc, LOOPcc, JrCXZ, JMP, CALL, RET; 2.1.5 addressing; 3.4.5 the
 * stack segment). The guest's memory and segments are faked. */
#include <string.h>
#include "unit.h"
#include "base/gmem.h"
#include "base/vcpu.h"
#include "hvtrace/record.h"
#include "trace/branch.h"

struct hv hv;
static struct vcpu vcpu;
static struct hv_segment segs[8];

/* guest memory: one window of linear addresses */
#define MEM_BASE 0x10000ull
static u8 mem[0x10000];
size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	(void)v;
	if (gva < MEM_BASE || gva - MEM_BASE > sizeof(mem) - len)
		return 0;
	memcpy(buf, mem + (gva - MEM_BASE), len);
	return len;
}
static void poke(u64 lin, u64 val, unsigned bytes)
{
	memcpy(mem + (lin - MEM_BASE), &val, bytes);
}
static void get_seg(struct vcpu *v, enum hv_seg s, struct hv_segment *out)
{
	(void)v;
	*out = segs[s];
}
static const struct hv_arch_ops ops = { .get_seg = get_seg };

static struct dec_insn dec(enum dec_mode mode, const u8 *b, size_t n)
{
	struct dec_insn in;
	int st = dec_decode(b, n, mode, vcpu.rip, &in);
	CHECK(st == DEC_OK, "decode %02x %02x: %d", b[0], n > 1 ? b[1] : 0, st);
	return in;
}
#define DEC(mode, ...) ({ const u8 _b[] = { __VA_ARGS__ }; dec(mode, _b, sizeof(_b)); })

/* SDM Vol. 2A Jcc, one mnemonic per condition code (flags: CF 0x1, PF 0x4,
 * ZF 0x40, SF 0x80, OF 0x800) */
static bool cc_holds(int cc, u64 f)
{
	bool cf = f & 1, pf = f & 4, zf = f & 0x40, sf = f & 0x80, of = f & 0x800;
	switch (cc) {
	case 0x0: return of;			/* JO */
	case 0x1: return !of;			/* JNO */
	case 0x2: return cf;			/* JB */
	case 0x3: return !cf;			/* JAE */
	case 0x4: return zf;			/* JE */
	case 0x5: return !zf;			/* JNE */
	case 0x6: return cf || zf;		/* JBE */
	case 0x7: return !cf && !zf;		/* JA */
	case 0x8: return sf;			/* JS */
	case 0x9: return !sf;			/* JNS */
	case 0xa: return pf;			/* JP */
	case 0xb: return !pf;			/* JNP */
	case 0xc: return sf != of;		/* JL */
	case 0xd: return sf == of;		/* JGE */
	case 0xe: return zf || sf != of;	/* JLE */
	default: return !zf && sf == of;	/* JG */
	}
}

static void test_jcc(void)
{
	/* every condition, every combination of the five flags, short and near */
	for (int cc = 0; cc < 16; cc++) {
		struct dec_insn s = DEC(DEC_MODE_64, (u8)(0x70 + cc), 0x10);
		struct dec_insn n = DEC(DEC_MODE_64, 0x0f, (u8)(0x80 + cc), 0x10, 0, 0, 0);
		CHECK(s.branch == DEC_BR_JCC && n.branch == DEC_BR_JCC, "Jcc %x kinds", cc);
		unsigned bad = 0;
		for (unsigned m = 0; m < 32; m++) {
			u64 f = (m & 1 ? 1 : 0) | (m & 2 ? 4 : 0) | (m & 4 ? 0x40 : 0) | (m & 8 ? 0x80 : 0) |
				(m & 16 ? 0x800 : 0) | 0x2;
			bad += branch_taken(&s, f, 0) != cc_holds(cc, f);
			bad += branch_taken(&n, f, 0) != cc_holds(cc, f);
		}
		CHECK(!bad, "Jcc %x: %u flag combinations wrong", cc, bad);
	}
}

static void test_loop(void)
{
	struct dec_insn loop = DEC(DEC_MODE_64, 0xe2, 0xfe), loope = DEC(DEC_MODE_64, 0xe1, 0xfe),
			loopne = DEC(DEC_MODE_64, 0xe0, 0xfe), jrcxz = DEC(DEC_MODE_64, 0xe3, 0x10),
			jecxz = DEC(DEC_MODE_64, 0x67, 0xe3, 0x10), loop16 = DEC(DEC_MODE_16, 0xe2, 0xfe);
	/* the test happens before the decrement: taken unless RCX was 1 */
	CHECK(branch_taken(&loop, 0, 5) && !branch_taken(&loop, 0, 1) && branch_taken(&loop, 0, 0),
	      "LOOP");
	CHECK(branch_taken(&loope, 0x40, 5) && !branch_taken(&loope, 0, 5) && !branch_taken(&loope, 0x40, 1),
	      "LOOPE");
	CHECK(branch_taken(&loopne, 0, 5) && !branch_taken(&loopne, 0x40, 5), "LOOPNE");
	CHECK(branch_taken(&jrcxz, 0, 0) && !branch_taken(&jrcxz, 0, 1ull << 32), "JRCXZ: all 64 bits");
	CHECK(branch_taken(&jecxz, 0, 1ull << 32) && !branch_taken(&jecxz, 0, 1), "JECXZ (67): ECX only");
	CHECK(!branch_taken(&loop16, 0, 0x10001) && branch_taken(&loop16, 0, 0x10002), "LOOP with CX");
}

static void test_direct_and_ret(void)
{
	bool taken;
	u64 to;
	vcpu.rip = 0x1000;
	struct dec_insn jmp = DEC(DEC_MODE_64, 0xe9, 0x00, 0x01, 0, 0);	/* jmp .+0x105 */
	CHECK(resolve_near(&vcpu, &jmp, DEC_MODE_64, 0, &taken, &to) && taken && to == 0x1105, "JMP rel32 %llx",
	      (unsigned long long)to);
	struct dec_insn call = DEC(DEC_MODE_64, 0xe8, 0xfb, 0xff, 0xff, 0xff);	/* call self */
	CHECK(resolve_near(&vcpu, &call, DEC_MODE_64, 0, &taken, &to) && to == 0x1000, "CALL rel32 backwards");

	/* a not-taken Jcc goes to the next instruction */
	struct dec_insn jz = DEC(DEC_MODE_64, 0x74, 0x20);
	vcpu.rflags = 0x2;
	CHECK(resolve_near(&vcpu, &jz, DEC_MODE_64, 0, &taken, &to) && !taken && to == 0x1002, "JZ not taken");
	vcpu.rflags = 0x42;
	CHECK(resolve_near(&vcpu, &jz, DEC_MODE_64, 0, &taken, &to) && taken && to == 0x1022, "JZ taken");

	/* RET: 64-bit, the stack at RSP */
	vcpu.gpr[GPR_RSP] = MEM_BASE + 0x100;
	poke(MEM_BASE + 0x100, 0x4000123456ull, 8);
	struct dec_insn ret = DEC(DEC_MODE_64, 0xc3);
	CHECK(resolve_near(&vcpu, &ret, DEC_MODE_64, 0, &taken, &to) && to == 0x4000123456ull, "RET 64");
	/* RET in 16-bit code: SS.base + SP (SS.B clear), 2 bytes, plus CS.base */
	segs[SEG_SS] = (struct hv_segment){ .base = MEM_BASE + 0x2000, .attr = 0 };
	vcpu.gpr[GPR_RSP] = 0xdead0010;	/* only SP counts */
	poke(MEM_BASE + 0x2010, 0xbeef1234, 4);
	vcpu.rip = 0x100;
	struct dec_insn ret16 = DEC(DEC_MODE_16, 0xc3);
	CHECK(resolve_near(&vcpu, &ret16, DEC_MODE_16, 0x50000, &taken, &to) && to == 0x51234,
	      "RET 16 with SS base: %llx", (unsigned long long)to);
	/* 32-bit code with a big stack segment (SS.B): ESP */
	segs[SEG_SS] = (struct hv_segment){ .base = MEM_BASE + 0x3000, .attr = SEG_ATTR_DB };
	vcpu.gpr[GPR_RSP] = 0xffffffff00000020ull;
	poke(MEM_BASE + 0x3020, 0x00401000, 4);
	struct dec_insn ret32 = DEC(DEC_MODE_32, 0xc3);
	CHECK(resolve_near(&vcpu, &ret32, DEC_MODE_32, 0, &taken, &to) && to == 0x401000, "RET 32 with SS.B");
	CHECK(stack_top(&vcpu, DEC_MODE_32) == MEM_BASE + 0x3020, "stack_top 32");
	CHECK(stack_top(&vcpu, DEC_MODE_64) == 0xffffffff00000020ull, "stack_top 64: RSP, no base");
	/* a stack that is not readable: left to the single step */
	vcpu.gpr[GPR_RSP] = 0x10;
	CHECK(!resolve_near(&vcpu, &ret, DEC_MODE_64, 0, &taken, &to), "RET from unreadable stack");
	memset(segs, 0, sizeof(segs));
}

static void test_indirect(void)
{
	bool taken;
	u64 to;
	vcpu.rip = 0x2000;
	/* jmp rax; call r9 (REX.B) */
	vcpu.gpr[GPR_RAX] = 0x7777;
	struct dec_insn jr = DEC(DEC_MODE_64, 0xff, 0xe0);
	CHECK(resolve_near(&vcpu, &jr, DEC_MODE_64, 0, &taken, &to) && to == 0x7777, "JMP RAX");
	vcpu.gpr[GPR_R9] = 0x9999;
	struct dec_insn cr = DEC(DEC_MODE_64, 0x41, 0xff, 0xd1);
	CHECK(resolve_near(&vcpu, &cr, DEC_MODE_64, 0, &taken, &to) && to == 0x9999, "CALL R9");
	/* jmp [rip+0x100]: RIP-relative from the next instruction */
	struct dec_insn rel = DEC(DEC_MODE_64, 0xff, 0x25, 0x00, 0x01, 0, 0);
	vcpu.rip = MEM_BASE;
	poke(MEM_BASE + 6 + 0x100, 0xabcdef, 8);
	CHECK(resolve_near(&vcpu, &rel, DEC_MODE_64, 0, &taken, &to) && to == 0xabcdef, "JMP [RIP+disp]");
	/* call [rbx + rcx*8 + 0x10] (SIB) */
	vcpu.gpr[GPR_RBX] = MEM_BASE + 0x400;
	vcpu.gpr[GPR_RCX] = 3;
	poke(MEM_BASE + 0x400 + 24 + 0x10, 0x5151, 8);
	struct dec_insn sib = DEC(DEC_MODE_64, 0xff, 0x54, 0xcb, 0x10);
	CHECK(resolve_near(&vcpu, &sib, DEC_MODE_64, 0, &taken, &to) && to == 0x5151, "CALL [RBX+RCX*8+10]");
	/* jmp fs:[rax]: FS's base counts in 64-bit mode, DS's would not */
	segs[SEG_FS].base = MEM_BASE + 0x800;
	segs[SEG_DS].base = 0x1000000;
	vcpu.gpr[GPR_RAX] = 0x8;
	poke(MEM_BASE + 0x808, 0x6262, 8);
	struct dec_insn fs = DEC(DEC_MODE_64, 0x64, 0xff, 0x20);
	CHECK(resolve_near(&vcpu, &fs, DEC_MODE_64, 0, &taken, &to) && to == 0x6262, "JMP FS:[RAX]");
	vcpu.gpr[GPR_RAX] = MEM_BASE + 0x808;
	struct dec_insn ds = DEC(DEC_MODE_64, 0xff, 0x20);
	CHECK(resolve_near(&vcpu, &ds, DEC_MODE_64, 0, &taken, &to) && to == 0x6262, "JMP [RAX]: no DS base");
	/* 32-bit code: DS's base counts, the operand is 4 bytes */
	segs[SEG_DS].base = MEM_BASE;
	vcpu.gpr[GPR_RAX] = 0x808;
	vcpu.rip = 0x100;
	struct dec_insn ds32 = DEC(DEC_MODE_32, 0xff, 0x20);
	CHECK(resolve_near(&vcpu, &ds32, DEC_MODE_32, 0, &taken, &to) && to == 0x6262, "JMP [EAX] with DS base");
	/* 16-bit addressing is left to the single step */
	struct dec_insn a16 = DEC(DEC_MODE_16, 0xff, 0x27);	/* jmp [bx] */
	CHECK(!resolve_near(&vcpu, &a16, DEC_MODE_16, 0, &taken, &to), "16-bit addressing: single step");
	memset(segs, 0, sizeof(segs));
}

static void test_kinds(void)
{
	u32 type;
	struct dec_insn jcc = DEC(DEC_MODE_64, 0x74, 0), iret = DEC(DEC_MODE_64, 0x48, 0xcf),
			nop = DEC(DEC_MODE_64, 0x90), ud2 = DEC(DEC_MODE_64, 0x0f, 0x0b),
			pushf = DEC(DEC_MODE_64, 0x9c);
	CHECK(rec_kind_of(&jcc, &type) == HVTRACE_REC_BRANCH && type == HVTRACE_BR_JCC, "Jcc record");
	CHECK(rec_kind_of(&iret, &type) == HVTRACE_REC_FAR && type == HVTRACE_BR_IRET, "IRETQ record");
	CHECK(ends_block(&jcc) && ends_block(&iret) && !ends_block(&nop) && !ends_block(&ud2),
	      "block ends");
	CHECK(is_legacy_op(&pushf, 0, 0x9c) && !is_legacy_op(&nop, 0, 0x9c), "PUSHF is PUSHF");
}

/* The fast engine's block cache (engine.c find_stop) compares a block's
 * bytes up to the end of its last instruction and nothing after: that is
 * exact only if the decoder's result for an instruction depends on its own
 * bytes alone. Checked on random strings (a fixed seed, biased to
 * prefixes, escapes and branch opcodes) in every mode: the same result
 * with other bytes after the instruction, and with no bytes after it. */
static void test_decode_own_bytes_only(void)
{
	static const uint8_t lead[] = { 0x0f, 0x66, 0x48, 0xc4, 0xc5, 0x8f, 0x62, 0xe8, 0xff, 0x70, 0xf3, 0x26 };
	static const enum dec_mode modes[] = { DEC_MODE_64, DEC_MODE_32, DEC_MODE_16 };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned decoded = 0, differ = 0;
	for (unsigned it = 0; it < 100000; it++) {
		uint8_t b[15], c[15];
		for (unsigned i = 0; i < 15; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b[i] = (uint8_t)(seed >> 56);
		}
		if (it % 3 == 0)
			b[0] = lead[b[14] % sizeof(lead)];
		for (unsigned m = 0; m < 3; m++) {
			struct dec_insn x, y, z;
			memset(&x, 0, sizeof(x));
			if (dec_decode(b, 15, modes[m], 0x1000, &x) != DEC_OK)
				continue;
			decoded++;
			memcpy(c, b, 15);
			for (unsigned i = x.len; i < 15; i++)
				c[i] = (uint8_t)~b[i];
			memset(&y, 0, sizeof(y));
			memset(&z, 0, sizeof(z));
			if (dec_decode(c, 15, modes[m], 0x1000, &y) != DEC_OK ||
			    dec_decode(b, x.len, modes[m], 0x1000, &z) != DEC_OK || memcmp(&x, &y, sizeof(x)) ||
			    memcmp(&x, &z, sizeof(x)))
				differ++;
		}
	}
	CHECK(decoded > 100000 && differ == 0, "%u of %u decodes depend on bytes after the instruction", differ,
	      decoded);
}

/* keeps_flags: instructions that leave the arithmetic flags alone (SDM
 * Vol. 2 "Flags Affected: None"), and some that do not */
static void test_keeps_flags(void)
{
	const struct { u8 b[7]; u8 n; bool keeps; const char *what; } cases[] = {
		{ { 0x48, 0x89, 0xc7 }, 3, true, "mov rdi, rax" },
		{ { 0x8b, 0x05, 1, 2, 3, 4 }, 6, true, "mov eax, [rip+x]" },
		{ { 0x8d, 0x44, 0x7f, 0x01 }, 4, true, "lea eax, [rdi+rdi*2+1]" },
		{ { 0xb0, 0x01 }, 2, true, "mov al, 1" },
		{ { 0x41, 0xbf, 1, 0, 0, 0 }, 6, true, "mov r15d, 1" },
		{ { 0xc7, 0xc0, 1, 0, 0, 0 }, 6, true, "mov eax, 1 (C7 /0)" },
		{ { 0x90 }, 1, true, "nop" },
		{ { 0xf3, 0x90 }, 2, true, "pause" },
		{ { 0x0f, 0x1f, 0x00 }, 3, true, "nopl [rax]" },
		{ { 0x53 }, 1, true, "push rbx" },
		{ { 0x41, 0x5c }, 2, true, "pop r12" },
		{ { 0x0f, 0xb6, 0xc0 }, 3, true, "movzx eax, al" },
		{ { 0x48, 0x0f, 0xbf, 0xc1 }, 4, true, "movsx rax, cx" },
		{ { 0x0f, 0x44, 0xc1 }, 3, true, "cmovz eax, ecx" },
		{ { 0x01, 0xc0 }, 2, false, "add eax, eax" },
		{ { 0x85, 0xc0 }, 2, false, "test eax, eax" },
		{ { 0x31, 0xc0 }, 2, false, "xor eax, eax" },
		{ { 0xff, 0xc0 }, 2, false, "inc eax" },
		{ { 0x48, 0xd1, 0xe8 }, 3, false, "shr rax, 1" },
		{ { 0x9d }, 1, false, "popf" },
		{ { 0x9e }, 1, false, "sahf" },
		{ { 0xf8 }, 1, false, "clc" },
		{ { 0x63, 0xc0 }, 2, false, "movsxd (ARPL outside 64-bit mode)" },
		{ { 0x8e, 0xd8 }, 2, false, "mov ds, ax" },
		{ { 0xc6, 0xf8, 0x00 }, 3, false, "xabort" },
		{ { 0xc7, 0xf8, 0, 0, 0, 0 }, 6, false, "xbegin" },
		{ { 0x0f, 0x0b }, 2, false, "ud2" },
		{ { 0x74, 0x00 }, 2, false, "jz" },
		{ { 0xc5, 0xf8, 0x77 }, 3, false, "vzeroupper (VEX)" },
		{ { 0x0f, 0xbc, 0xc0 }, 3, false, "bsf eax, eax" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dec_insn in = dec(DEC_MODE_64, cases[i].b, cases[i].n);
		CHECK(keeps_flags(&in) == cases[i].keeps, "keeps_flags(%s) = %d", cases[i].what, !cases[i].keeps);
	}
}

int main(void)
{
	hv.ops = &ops;
	test_jcc();
	test_loop();
	test_direct_and_ret();
	test_indirect();
	test_kinds();
	test_decode_own_bytes_only();
	test_keeps_flags();
	return unit_done("test_branch");
}
