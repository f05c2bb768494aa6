/* tests/unit/test_decode.c — differential test of the decoder (hv/arch/x86/decode/) against Zydis 4.0:
 * random byte strings in 16/32/64-bit mode, a linear sweep of the kernel's text, known answers. */
#define _GNU_SOURCE
#include <Zydis/Zydis.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../hv/arch/x86/decode/decode.h"

/* ---------------------------------------------------------------------------------------------
 * Reference decoder (Zydis) reduced to what dec_decode reports
 * ------------------------------------------------------------------------------------------- */

enum { BR_UNKNOWN = 100 };      /* Zydis says "branch" but we have no mapping for it */

struct ref {
	int status;                 /* DEC_OK / DEC_INVALID / DEC_TRUNCATED */
	unsigned len;
	int branch;
	bool has_target;
	uint64_t target;
	ZydisMnemonic mnemonic;
	ZydisISAExt isa_ext;
	ZydisInstructionEncoding encoding;
	unsigned opsize;            /* Zydis operand_width / 8 */
	ZyanStatus zstatus;
};

static ZydisDecoder zdec[3];

static void ref_init(void)
{
	ZydisDecoderInit(&zdec[DEC_MODE_16], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
	ZydisDecoderInit(&zdec[DEC_MODE_32], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
	ZydisDecoderInit(&zdec[DEC_MODE_64], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

static int map_branch(const ZydisDecodedInstruction *in)
{
	/* a relative immediate, not just RIP-relative memory (which also sets ZYDIS_ATTRIB_IS_RELATIVE) */
	bool rel = in->raw.imm[0].is_relative;
	bool far = in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ:
		return DEC_BR_LOOP;
	case ZYDIS_MNEMONIC_XBEGIN:
		return DEC_BR_XBEGIN;
	case ZYDIS_MNEMONIC_JMP:
		return far ? DEC_BR_JMP_FAR : rel ? DEC_BR_JMP : DEC_BR_JMP_IND;
	case ZYDIS_MNEMONIC_CALL:
		return far ? DEC_BR_CALL_FAR : rel ? DEC_BR_CALL : DEC_BR_CALL_IND;
	case ZYDIS_MNEMONIC_RET:
		return far ? DEC_BR_RET_FAR : DEC_BR_RET;
	case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1: case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INTO:
		return DEC_BR_INT;
	case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
		return DEC_BR_IRET;
	case ZYDIS_MNEMONIC_SYSCALL: return DEC_BR_SYSCALL;
	case ZYDIS_MNEMONIC_SYSRET: return DEC_BR_SYSRET;
	case ZYDIS_MNEMONIC_SYSENTER: return DEC_BR_SYSENTER;
	case ZYDIS_MNEMONIC_SYSEXIT: return DEC_BR_SYSEXIT;
	case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
		return DEC_BR_UD;
	case ZYDIS_MNEMONIC_UIRET:
		return DEC_BR_UIRET;
	case ZYDIS_MNEMONIC_XABORT:
		return DEC_BR_XABORT;
	case ZYDIS_MNEMONIC_RSM:
		return DEC_BR_RSM;
	case ZYDIS_MNEMONIC_XEND:
		/* Zydis files XEND under COND_BR; XEND itself never transfers control (an abort
		 * can happen at any instruction of a transaction), so it maps to "none". */
		return DEC_BR_NONE;
	default:
		break;
	}
	if (in->meta.category == ZYDIS_CATEGORY_COND_BR)
		return DEC_BR_JCC;
	if (in->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE || in->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	    in->meta.category == ZYDIS_CATEGORY_CALL || in->meta.category == ZYDIS_CATEGORY_RET ||
	    in->meta.category == ZYDIS_CATEGORY_SYSCALL || in->meta.category == ZYDIS_CATEGORY_SYSRET)
		return BR_UNKNOWN;
	return DEC_BR_NONE;
}

static void ref_decode(const uint8_t *b, size_t n, enum dec_mode mode, uint64_t rip, struct ref *r)
{
	ZydisDecodedInstruction in;
	ZydisDecoderContext ctx;

	memset(r, 0, sizeof *r);
	r->zstatus = ZydisDecoderDecodeInstruction(&zdec[mode], &ctx, b, n, &in);
	if (r->zstatus == ZYDIS_STATUS_NO_MORE_DATA) {
		r->status = DEC_TRUNCATED;
		return;
	}
	if (!ZYAN_SUCCESS(r->zstatus)) {
		r->status = DEC_INVALID;
		return;
	}
	r->status = DEC_OK;
	r->len = in.length;
	r->mnemonic = in.mnemonic;
	r->isa_ext = in.meta.isa_ext;
	r->encoding = in.encoding;
	r->opsize = in.operand_width / 8;
	r->branch = map_branch(&in);
	if (in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&zdec[mode], &ctx, &in, ops, in.operand_count))) {
			for (unsigned i = 0; i < in.operand_count; i++) {
				if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative) {
					ZyanU64 a;
					if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[i], rip, &a))) {
						/* outside 64-bit mode EIP is 32 bits wide */
						if (mode != DEC_MODE_64)
							a &= 0xffffffffu;
						r->has_target = true;
						r->target = a;
					}
					break;
				}
			}
		}
	}
}

/* ---------------------------------------------------------------------------------------------
 * Known, explained disagreements with Zydis
 * ------------------------------------------------------------------------------------------- */

struct case_ctx {
	const uint8_t *b;
	enum dec_mode mode;
	int ours;
	const struct dec_insn *o;
	const struct ref *r;
};

struct known {
	const char *what;
	const char *sdm;            /* SDM reference for our behaviour */
	bool (*match)(const struct case_ctx *c);
	unsigned long hits;
};

/* Zydis 4.0 decodes Knights Corner (Xeon Phi x100) encodings although ZYDIS_DECODER_MODE_KNC is
 * off (the default): MVEX (62 with P1[2]=0) and KNC's VEX-encoded mask/scalar instructions
 * (JKZD/JKNZD at VEX.0F 84/85, KAND/KOR/KCONCATH..., VEX POPCNT/LZCNT/TZCNT, VPREFETCH*, DELAY).
 * No other x86 CPU defines them: the SDM leaves these VEX opcodes undefined and requires
 * EVEX P1[2]=1, so they are #UD and we report them invalid. */
static bool knc_leak(const struct case_ctx *c)
{
	if (c->ours != DEC_INVALID || c->r->status != DEC_OK)
		return false;
	return c->r->encoding == ZYDIS_INSTRUCTION_ENCODING_MVEX || c->r->isa_ext == ZYDIS_ISA_EXT_KNC ||
		c->r->isa_ext == ZYDIS_ISA_EXT_KNCE || c->r->isa_ext == ZYDIS_ISA_EXT_KNCV;
}

static struct known known[] = {
	{ "Zydis decodes Knights Corner (MVEX / KNC VEX) encodings with KNC mode off; #UD on all other CPUs",
	  "SDM Vol. 2A 2.3.1 (VEX opcode map), 2.7.1 (EVEX P1[2]=1); Vol. 2D Table A-3", knc_leak, 0 },
	{ 0 },
};


/* ---------------------------------------------------------------------------------------------
 * Comparison and reporting
 * ------------------------------------------------------------------------------------------- */

struct stats {
	unsigned long checks, passed, failed, waived, both_invalid, valid, truncation;
};

static unsigned max_report = 40;
static unsigned long reported;
static bool verbose;

static const char *st_name(int s)
{
	return s == DEC_OK ? "ok" : s == DEC_INVALID ? "invalid" : "truncated";
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

static const char *mode_name(enum dec_mode m)
{
	return m == DEC_MODE_16 ? "16" : m == DEC_MODE_32 ? "32" : "64";
}

static bool branch_has_opsize(enum dec_branch br)
{
	switch (br) {
	case DEC_BR_JCC: case DEC_BR_LOOP: case DEC_BR_JMP: case DEC_BR_JMP_IND: case DEC_BR_CALL:
	case DEC_BR_CALL_IND: case DEC_BR_RET: case DEC_BR_RET_FAR: case DEC_BR_IRET: case DEC_BR_XBEGIN:
	case DEC_BR_JMP_FAR: case DEC_BR_CALL_FAR:
		return true;
	default:
		return false;
	}
}

/* Returns true when ours and Zydis agree (or the disagreement is a known one). */
static bool check_one(const uint8_t *b, size_t n, enum dec_mode mode, uint64_t rip, struct stats *st,
	struct dec_insn *o, struct ref *r, const char *where)
{
	int rc = dec_decode(b, n, mode, rip, o);
	ref_decode(b, n, mode, rip, r);
	st->checks++;

	bool same = rc == r->status;
	if (same && rc == DEC_OK) {
		same = o->len == r->len && (int)o->branch == r->branch && o->has_target == r->has_target &&
			(!o->has_target || o->target == r->target);
		/* the operand size of control transfers decides IP truncation and stack width */
		if (same && branch_has_opsize(o->branch))
			same = o->opsize == r->opsize;
	}
	if (same) {
		st->passed++;
		if (rc == DEC_OK)
			st->valid++;
		else
			st->both_invalid++;
		return true;
	}
	struct case_ctx c = { b, mode, rc, o, r };
	for (struct known *k = known; k->match; k++) {
		if (k->match(&c)) {
			k->hits++;
			st->waived++;
			st->passed++;
			return true;
		}
	}
	st->failed++;
	if (getenv("DEC_COMPACT")) {
		char h[64];
		hex(h, b, n < 15 ? n : 15);
		printf("MM %s %d %d %02x %02x %s %s(%x) %u %u %s %s br %d/%d\n", mode_name(mode), o->encoding, o->map,
			o->opcode, o->modrm, st_name(rc), st_name(r->status), r->zstatus & 0xff, rc ? 0 : o->len,
			r->len, h, r->status == DEC_OK ? ZydisMnemonicGetString(r->mnemonic) : "-",
			rc ? -1 : (int)o->branch, r->branch);
		return false;
	}
	if (reported++ < max_report || verbose) {
		char h[64];
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		char text[256] = "-";
		hex(h, b, n < 15 ? n : 15);
		if (ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zdec[mode], b, n, &in, ops))) {
			ZydisFormatter f;
			ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_INTEL);
			ZydisFormatterFormatInstruction(&f, &in, ops, in.operand_count_visible, text, sizeof text, rip, NULL);
		}
		printf("MISMATCH %s mode %s rip %#" PRIx64 " bytes %s\n", where, mode_name(mode), rip, h);
		printf("  ours:  %s len %u branch %s target %s%#" PRIx64 " opsize %u\n", st_name(rc), rc ? 0 : o->len,
			rc ? "-" : dec_branch_name(o->branch), o->has_target ? "" : "(none) ", o->target, o->opsize);
		printf("  zydis: %s (%#x) len %u branch %d target %s%#" PRIx64 " opsize %u : %s\n", st_name(r->status),
			r->zstatus, r->len, r->branch, r->has_target ? "" : "(none) ", r->target, r->opsize, text);
	}
	return false;
}

/* ---------------------------------------------------------------------------------------------
 * Random byte strings
 * ------------------------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rn(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* Fills b[0..16) with a byte string biased towards interesting encodings. */
static void gen(uint8_t *b, enum dec_mode mode)
{
	static const uint8_t pfx[] = { 0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65 };
	static const uint8_t evex_maps[] = { 1, 2, 3, 5, 6 };
	unsigned p = 0;

	for (unsigned i = 0; i < 16; i += 8) {
		uint64_t v = rnd();
		memcpy(b + i, &v, 8);
	}
	if (rn(100) < 10)
		return;
	/* legacy prefixes */
	unsigned np = rn(100);
	np = np < 50 ? 0 : np < 80 ? 1 : np < 95 ? 1 + rn(3) : rn(15);
	for (unsigned i = 0; i < np && p < 15; i++)
		b[p++] = rn(4) ? pfx[rn(sizeof pfx)] : pfx[rn(4)];
	if (mode == DEC_MODE_64 && rn(4) == 0 && p < 15)
		b[p++] = (uint8_t)(0x40 | rn(16));
	if (p >= 14)
		return;
	bool fix = rn(100) < 85;   /* make escape bytes well-formed most of the time */
	switch (rn(16)) {
	case 0: case 1: case 2: case 3: case 4:
		break;                  /* one-byte opcode */
	case 5: case 6:
		b[p++] = 0x0f;
		break;
	case 7:
		b[p++] = 0x0f;
		b[p++] = 0x38;
		break;
	case 8:
		b[p++] = 0x0f;
		b[p++] = 0x3a;
		break;
	case 9:
		b[p++] = 0x0f;
		b[p++] = rn(2) ? 0x0f : 0x01;
		break;
	case 10:
		b[p++] = 0xc5;
		if (fix && mode != DEC_MODE_64)
			b[p] |= 0xc0;
		p++;
		break;
	case 11:
		b[p++] = 0xc4;
		if (fix) {
			b[p] = (uint8_t)((b[p] & 0xe0) | (1 + rn(3)));
			if (mode != DEC_MODE_64)
				b[p] |= 0xc0;
		}
		p += 2;
		break;
	case 12: case 13: case 14:
		b[p++] = 0x62;
		if (fix && p + 3 <= 16) {
			b[p] = (uint8_t)((b[p] & 0xf0) | evex_maps[rn(sizeof evex_maps)]);
			if (mode != DEC_MODE_64)
				b[p] |= 0xc0;
			b[p + 1] |= 0x04;
			if (rn(2))
				b[p + 1] |= 0x78;       /* vvvv = 1111 */
			if (rn(2))
				b[p + 2] |= 0x08;       /* V' = 1 */
			if (rn(2))
				b[p + 2] &= 0x9f;       /* L'L = 0 */
			if (rn(2))
				b[p] |= 0x10;           /* R' = 1 */
		}
		p += 3;
		break;
	case 15:
		b[p++] = 0x8f;
		if (fix) {
			b[p] = (uint8_t)((b[p] & 0xe0) | (8 + rn(3)));
			b[p + 1] &= 0xfc;
		}
		p += 2;
		break;
	}
	/* bias ModRM (two bytes after the opcode position) towards register forms */
	if (p + 1 < 16 && rn(3) == 0)
		b[p + 1] |= 0xc0;
}

/* Truncation property (no reference needed): with fewer bytes than the instruction needs the
 * decoder must say DEC_TRUNCATED (a valid instruction must never be reported invalid because the
 * buffer ended), and with at least that many it must give the same answer as with all 16. */
static bool check_truncation(const uint8_t *b, enum dec_mode mode, uint64_t rip, int full_rc,
	const struct dec_insn *full, struct stats *st)
{
	size_t avail = 1 + rn(15);
	struct dec_insn o;
	int rc = dec_decode(b, avail, mode, rip, &o);
	bool ok;

	st->truncation++;
	if (full_rc == DEC_OK && avail < full->len)
		ok = rc == DEC_TRUNCATED;
	else if (full_rc == DEC_OK)
		ok = rc == DEC_OK && o.len == full->len && o.branch == full->branch && o.target == full->target;
	else
		ok = rc == DEC_INVALID || rc == DEC_TRUNCATED;
	st->checks++;
	if (ok) {
		st->passed++;
		return true;
	}
	st->failed++;
	if (reported++ < max_report || verbose) {
		char h[64];
		hex(h, b, 15);
		printf("TRUNCATION mode %s bytes %s avail %zu: full %s len %u, truncated %s len %u\n", mode_name(mode),
			h, avail, st_name(full_rc), full->len, st_name(rc), o.len);
	}
	return false;
}

static void run_random(enum dec_mode mode, unsigned long count, struct stats *st)
{
	uint8_t b[16];
	struct dec_insn o;
	struct ref r;
	for (unsigned long i = 0; i < count; i++) {
		gen(b, mode);
		uint64_t rip = rnd();
		if (mode != DEC_MODE_64)
			rip &= rn(2) ? 0xffff : 0xffffffffu;
		if (rn(8) == 0)
			rip = (mode == DEC_MODE_64 ? ~0ull : mode == DEC_MODE_32 ? 0xffffffffu : 0xffff) - rn(20);
		check_one(b, sizeof b, mode, rip, st, &o, &r, "random");
		if (rn(4) == 0) {
			struct dec_insn full;
			int rc = dec_decode(b, sizeof b, mode, rip, &full);
			check_truncation(b, mode, rip, rc, &full, st);
		}
	}
}

/* ---------------------------------------------------------------------------------------------
 * Kernel text: linear sweep of every executable section, 64-bit mode
 * ------------------------------------------------------------------------------------------- */

static int run_kernel(const char *path, struct stats *st)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		fprintf(stderr, "libelf: %s\n", elf_errmsg(-1));
		return -1;
	}
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		fprintf(stderr, "%s: not an ELF file (%s)\n", path, elf_errmsg(-1));
		close(fd);
		return -1;
	}
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx)) {
		fprintf(stderr, "%s: %s\n", path, elf_errmsg(-1));
		elf_end(e);
		close(fd);
		return -1;
	}
	Elf_Scn *scn = NULL;
	unsigned long bytes = 0, resyncs = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		const uint8_t *p = d->d_buf;
		size_t n = d->d_size, off = 0;
		unsigned long before = st->checks;
		while (off < n) {
			struct dec_insn o;
			struct ref r;
			size_t avail = n - off;
			bool ok = check_one(p + off, avail, DEC_MODE_64, sh.sh_addr + off, st, &o, &r, name);
			if (ok && r.status == DEC_OK) {
				off += r.len;
			} else if (ok && r.status == DEC_TRUNCATED) {
				break;
			} else {
				/* invalid (both), or a mismatch: resync on Zydis's length, else one byte */
				if (ok && verbose)
					printf("kernel: %s+%#zx (%#" PRIx64 "): both decoders reject %02x %02x %02x %02x\n",
						name ? name : "?", off, (uint64_t)(sh.sh_addr + off), p[off],
						avail > 1 ? p[off + 1] : 0, avail > 2 ? p[off + 2] : 0,
						avail > 3 ? p[off + 3] : 0);
				off += r.status == DEC_OK ? r.len : 1;
				resyncs++;
			}
		}
		bytes += n;
		if (verbose)
			printf("kernel: %-24s %8zu bytes %8lu insns\n", name ? name : "?", n, st->checks - before);
	}
	printf("kernel: %lu bytes of executable sections, %lu invalid-byte resyncs\n", bytes, resyncs);
	elf_end(e);
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Known-answer tests (independent of Zydis)
 * ------------------------------------------------------------------------------------------- */

struct kat {
	enum dec_mode mode;
	const char *hex;
	uint64_t rip;
	int status;
	unsigned len;
	enum dec_branch branch;
	uint64_t target;            /* checked when branch has a static target */
	unsigned opsize;            /* 0: not checked */
};

static const struct kat kats[] = {
	/* near branches */
	{ DEC_MODE_64, "eb fe", 0x1000, DEC_OK, 2, DEC_BR_JMP, 0x1000, 8 },
	{ DEC_MODE_64, "e9 00 00 00 80", 0xffffffff80000000ull, DEC_OK, 5, DEC_BR_JMP, 0xffffffff00000005ull, 8 },
	{ DEC_MODE_64, "66 e8 10 00 00 00", 0x1000, DEC_OK, 6, DEC_BR_CALL, 0x1016, 8 },   /* Intel: 66 ignored */
	{ DEC_MODE_64, "48 0f 85 fa ff ff ff", 0x2000, DEC_OK, 7, DEC_BR_JCC, 0x2001, 8 },
	{ DEC_MODE_32, "66 e9 fd ff", 0x1000fff0u, DEC_OK, 4, DEC_BR_JMP, 0xfff1, 2 },    /* IP truncated to 16 bits */
	{ DEC_MODE_16, "e9 fd ff", 0xfffe, DEC_OK, 3, DEC_BR_JMP, 0xfffe, 2 },
	{ DEC_MODE_16, "eb 10", 0xfff0, DEC_OK, 2, DEC_BR_JMP, 0x0002, 2 },               /* 16-bit IP wraps */
	{ DEC_MODE_16, "66 e8 00 00 01 00", 0xfff0, DEC_OK, 6, DEC_BR_CALL, 0x1fff6, 4 },
	{ DEC_MODE_32, "e8 00 00 00 00", 0xfffffffbu, DEC_OK, 5, DEC_BR_CALL, 0, 4 },      /* EIP wraps at 4G */
	{ DEC_MODE_64, "e2 fe", 0x10, DEC_OK, 2, DEC_BR_LOOP, 0x10, 8 },
	{ DEC_MODE_64, "67 e3 00", 0x10, DEC_OK, 3, DEC_BR_LOOP, 0x13, 8 },                 /* JECXZ */
	{ DEC_MODE_64, "c7 f8 00 01 00 00", 0x1000, DEC_OK, 6, DEC_BR_XBEGIN, 0x1106, 0 },
	{ DEC_MODE_64, "ff d0", 0, DEC_OK, 2, DEC_BR_CALL_IND, 0, 8 },
	{ DEC_MODE_64, "41 ff 24 24", 0, DEC_OK, 4, DEC_BR_JMP_IND, 0, 8 },
	{ DEC_MODE_64, "ff 25 00 00 00 00", 0, DEC_OK, 6, DEC_BR_JMP_IND, 0, 8 },           /* RIP-relative */
	{ DEC_MODE_64, "48 ff 2c 24", 0, DEC_OK, 4, DEC_BR_JMP_FAR, 0, 0 },
	{ DEC_MODE_64, "ff 1c 24", 0, DEC_OK, 3, DEC_BR_CALL_FAR, 0, 0 },
	{ DEC_MODE_64, "ff d8", 0, DEC_INVALID, 0, 0, 0, 0 },                                /* far call needs memory */
	{ DEC_MODE_64, "c3", 0, DEC_OK, 1, DEC_BR_RET, 0, 8 },
	{ DEC_MODE_64, "c2 08 00", 0, DEC_OK, 3, DEC_BR_RET, 0, 8 },
	{ DEC_MODE_64, "48 cb", 0, DEC_OK, 2, DEC_BR_RET_FAR, 0, 8 },
	{ DEC_MODE_64, "48 cf", 0, DEC_OK, 2, DEC_BR_IRET, 0, 8 },
	{ DEC_MODE_64, "cd 80", 0, DEC_OK, 2, DEC_BR_INT, 0, 0 },
	{ DEC_MODE_64, "cc", 0, DEC_OK, 1, DEC_BR_INT, 0, 0 },
	{ DEC_MODE_64, "f1", 0, DEC_OK, 1, DEC_BR_INT, 0, 0 },
	{ DEC_MODE_32, "ce", 0, DEC_OK, 1, DEC_BR_INT, 0, 0 },
	{ DEC_MODE_64, "ce", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "0f 05", 0, DEC_OK, 2, DEC_BR_SYSCALL, 0, 0 },
	{ DEC_MODE_64, "48 0f 07", 0, DEC_OK, 3, DEC_BR_SYSRET, 0, 0 },
	{ DEC_MODE_32, "0f 34", 0, DEC_OK, 2, DEC_BR_SYSENTER, 0, 0 },
	{ DEC_MODE_32, "0f 35", 0, DEC_OK, 2, DEC_BR_SYSEXIT, 0, 0 },
	{ DEC_MODE_64, "0f 0b", 0, DEC_OK, 2, DEC_BR_UD, 0, 0 },
	/* far pointers and moffs */
	{ DEC_MODE_32, "9a 78 56 34 12 00 10", 0, DEC_OK, 7, DEC_BR_CALL_FAR, 0, 4 },
	{ DEC_MODE_16, "ea 34 12 00 f0", 0, DEC_OK, 5, DEC_BR_JMP_FAR, 0, 2 },
	{ DEC_MODE_16, "66 ea 78 56 34 12 00 f0", 0, DEC_OK, 8, DEC_BR_JMP_FAR, 0, 4 },
	{ DEC_MODE_64, "ea 00 00 00 00 00 00", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "a1 88 77 66 55 44 33 22 11", 0, DEC_OK, 9, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_64, "67 a1 44 33 22 11", 0, DEC_OK, 6, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_32, "67 a1 22 11", 0, DEC_OK, 4, DEC_BR_NONE, 0, 4 },
	/* immediates */
	{ DEC_MODE_64, "48 b8 88 77 66 55 44 33 22 11", 0, DEC_OK, 10, DEC_BR_NONE, 0, 8 },
	{ DEC_MODE_64, "66 b8 22 11", 0, DEC_OK, 4, DEC_BR_NONE, 0, 2 },
	{ DEC_MODE_64, "66 48 b8 88 77 66 55 44 33 22 11", 0, DEC_OK, 11, DEC_BR_NONE, 0, 8 },  /* REX.W over 66 */
	{ DEC_MODE_64, "48 66 b8 22 11", 0, DEC_OK, 5, DEC_BR_NONE, 0, 2 },   /* REX not last: ignored */
	{ DEC_MODE_64, "f6 c0 01", 0, DEC_OK, 3, DEC_BR_NONE, 0, 0 },          /* TEST r/m8, imm8 */
	{ DEC_MODE_64, "f6 d0", 0, DEC_OK, 2, DEC_BR_NONE, 0, 0 },             /* NOT: no imm */
	{ DEC_MODE_32, "66 f7 c0 34 12", 0, DEC_OK, 5, DEC_BR_NONE, 0, 2 },
	{ DEC_MODE_64, "48 f7 04 24 00 00 00 80", 0, DEC_OK, 8, DEC_BR_NONE, 0, 8 },
	{ DEC_MODE_64, "c8 10 00 01", 0, DEC_OK, 4, DEC_BR_NONE, 0, 0 },       /* ENTER imm16, imm8 */
	{ DEC_MODE_16, "8b 86 34 12", 0, DEC_OK, 4, DEC_BR_NONE, 0, 2 },       /* [bp+disp16] */
	{ DEC_MODE_16, "67 8b 04 25 00 00 00 00", 0, DEC_OK, 8, DEC_BR_NONE, 0, 2 },
	{ DEC_MODE_32, "67 8b 06 34 12", 0, DEC_OK, 5, DEC_BR_NONE, 0, 4 },    /* 16-bit addressing: disp16 */
	{ DEC_MODE_64, "8b 04 25 00 00 00 00", 0, DEC_OK, 7, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_64, "8b 44 8d 00", 0, DEC_OK, 4, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_64, "0f 20 00", 0, DEC_OK, 3, DEC_BR_NONE, 0, 8 },          /* MOV CR: mod ignored */
	{ DEC_MODE_64, "0f 0f c1 b4", 0, DEC_OK, 4, DEC_BR_NONE, 0, 0 },       /* 3DNow! PFMUL */
	{ DEC_MODE_64, "0f 0f 44 24 08 9e", 0, DEC_OK, 6, DEC_BR_NONE, 0, 0 },
	{ DEC_MODE_64, "66 0f 3a 0f c1 08", 0, DEC_OK, 6, DEC_BR_NONE, 0, 0 },
	{ DEC_MODE_64, "66 0f 78 c0 01 02", 0, DEC_OK, 6, DEC_BR_NONE, 0, 0 }, /* EXTRQ imm8, imm8 */
	/* VEX/EVEX/XOP and their 32-bit aliases */
	{ DEC_MODE_64, "c5 f8 77", 0, DEC_OK, 3, DEC_BR_NONE, 0, 0 },          /* VZEROUPPER */
	{ DEC_MODE_64, "c4 e2 7d 18 00", 0, DEC_OK, 5, DEC_BR_NONE, 0, 0 },    /* VBROADCASTSS ymm */
	{ DEC_MODE_64, "c4 e3 79 0f c1 04", 0, DEC_OK, 6, DEC_BR_NONE, 0, 0 },
	{ DEC_MODE_32, "c4 00", 0, DEC_OK, 2, DEC_BR_NONE, 0, 4 },             /* LES */
	{ DEC_MODE_32, "c5 f8 77", 0, DEC_OK, 3, DEC_BR_NONE, 0, 0 },
	{ DEC_MODE_64, "c4 00 00 00 00", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "62 f1 7c 48 58 c1", 0, DEC_OK, 6, DEC_BR_NONE, 0, 0 },  /* VADDPS zmm */
	{ DEC_MODE_64, "62 f1 7c 48 58 40 01", 0, DEC_OK, 7, DEC_BR_NONE, 0, 0 },
	{ DEC_MODE_32, "62 00", 0, DEC_OK, 2, DEC_BR_NONE, 0, 4 },             /* BOUND */
	{ DEC_MODE_64, "62 00 00 00 00 00", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "8f e9 78 01 c8", 0, DEC_OK, 5, DEC_BR_NONE, 0, 0 },    /* XOP TBM BLCFILL */
	{ DEC_MODE_64, "8f ea 78 10 c0 01 00 00 00", 0, DEC_OK, 9, DEC_BR_NONE, 0, 0 },  /* BEXTR imm32 */
	{ DEC_MODE_64, "66 c5 f8 77", 0, DEC_INVALID, 0, 0, 0, 0 },            /* 66 before VEX */
	/* prefixes, invalid encodings and limits */
	{ DEC_MODE_64, "f3 48 a5", 0, DEC_OK, 3, DEC_BR_NONE, 0, 8 },
	{ DEC_MODE_64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", 0, DEC_OK, 15, DEC_BR_NONE, 0, 2 },
	{ DEC_MODE_64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "f0 01 00", 0, DEC_OK, 3, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_64, "f0 01 c0", 0, DEC_INVALID, 0, 0, 0, 0 },               /* LOCK with register dest */
	{ DEC_MODE_64, "f0 90", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "06", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "27", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_64, "60", 0, DEC_INVALID, 0, 0, 0, 0 },
	{ DEC_MODE_32, "60", 0, DEC_OK, 1, DEC_BR_NONE, 0, 4 },
	{ DEC_MODE_64, "8d c0", 0, DEC_INVALID, 0, 0, 0, 0 },                  /* LEA reg */
	{ DEC_MODE_64, "0f ff", 0, DEC_TRUNCATED, 0, 0, 0, 0 },
	{ DEC_MODE_64, "e8 00 00", 0, DEC_TRUNCATED, 0, 0, 0, 0 },
};

static int hexbytes(const char *s, uint8_t *b)
{
	int n = 0;
	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		unsigned v;
		sscanf(s, "%2x", &v);
		b[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void run_kats(struct stats *st)
{
	for (size_t i = 0; i < sizeof kats / sizeof kats[0]; i++) {
		const struct kat *k = &kats[i];
		uint8_t b[32];
		int n = hexbytes(k->hex, b);
		struct dec_insn o;
		int rc = dec_decode(b, (size_t)n, k->mode, k->rip, &o);
		bool ok = rc == k->status;
		if (ok && rc == DEC_OK) {
			ok = o.len == k->len && o.branch == k->branch;
			if (o.has_target)
				ok = ok && o.target == k->target;
			if (k->opsize)
				ok = ok && o.opsize == k->opsize;
		}
		st->checks++;
		if (ok) {
			st->passed++;
			continue;
		}
		st->failed++;
		printf("KAT FAIL mode %s [%s]: got %s len %u branch %s target %#" PRIx64 " opsize %u; want %s len %u "
			"branch %s target %#" PRIx64 " opsize %u\n", mode_name(k->mode), k->hex, st_name(rc), o.len,
			dec_branch_name(o.branch), o.target, o.opsize, st_name(k->status), k->len,
			dec_branch_name(k->branch), k->target, k->opsize);
	}
}

/* ---------------------------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: test_decode [--seed N] [--count N] [--mode 16|32|64|all] [--kernel VMLINUX]\n"
		"                   [--max-report N] [--verbose]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	unsigned long count = 300000;
	int mode_sel = -1;
	const char *kernel = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			const char *m = argv[++i];
			mode_sel = !strcmp(m, "16") ? DEC_MODE_16 : !strcmp(m, "32") ? DEC_MODE_32 :
				!strcmp(m, "64") ? DEC_MODE_64 : !strcmp(m, "all") ? -1 : (usage(), 0);
		} else if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
			kernel = argv[++i];
		else if (!strcmp(argv[i], "--max-report") && i + 1 < argc)
			max_report = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--verbose"))
			verbose = true;
		else
			usage();
	}
	ref_init();
	printf("test_decode: seed %#" PRIx64 ", %lu random strings per mode\n", seed, count);

	/* each run (the known answers, each random mode, the kernel) is one
	 * test for make test's headline; the strings are counted apart */
	unsigned long passed = 0, failed = 0, strings = 0, disagree = 0;
	struct stats st = { 0 };
#define RUN_DONE(st) do { strings += (st).checks; disagree += (st).failed; \
			  if ((st).failed) failed++; else passed++; } while (0)
	run_kats(&st);
	printf("known answers: %lu checks, %lu failed\n", st.checks, st.failed);
	RUN_DONE(st);

	for (int m = DEC_MODE_16; m <= DEC_MODE_64; m++) {
		if (mode_sel >= 0 && m != mode_sel)
			continue;
		rng_state = seed ^ (0x1234567ull * (unsigned)(m + 1));
		memset(&st, 0, sizeof st);
		clock_t t0 = clock();
		run_random((enum dec_mode)m, count, &st);
		printf("random %s-bit: %lu checks (%lu valid, %lu both invalid, %lu truncation), %lu failed, "
			"%lu known (%.1fs)\n", mode_name((enum dec_mode)m), st.checks, st.valid, st.both_invalid,
			st.truncation, st.failed, st.waived, (double)(clock() - t0) / CLOCKS_PER_SEC);
		RUN_DONE(st);
	}
	if (kernel) {
		memset(&st, 0, sizeof st);
		clock_t t0 = clock();
		if (run_kernel(kernel, &st))
			st.failed++;	/* the kernel could not be read */
		printf("kernel 64-bit: %lu checks (%lu valid, %lu both invalid), %lu failed, %lu known (%.1fs)\n",
			st.checks, st.valid, st.both_invalid, st.failed, st.waived,
			(double)(clock() - t0) / CLOCKS_PER_SEC);
		RUN_DONE(st);
	}
	for (const struct known *k = known; k->match; k++)
		if (k->hits)
			printf("known disagreement x%lu: %s [%s]\n", k->hits, k->what, k->sdm);
	printf("decode: %lu strings compared with Zydis, %lu disagreements\n", strings, disagree);
	printf("decode: %lu passed, %lu failed\n", passed, failed);
	return failed ? 1 : 0;
}
