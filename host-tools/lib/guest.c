/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the stopped guest an ELF core of QEMU's `dump-guest-memory`
 * describes: its CPUs (the notes) and its memory by a CPU's linear
 * addresses (the page walk over the dump's guest-physical memory).
 *
 * QEMU writes, for x86-64 (target/i386/arch_dump.c), one NT_PRSTATUS note
 * ("CORE") per CPU with Linux's user_regs_struct, then one "QEMU" note per
 * CPU (type 0) with its QEMUCPUState: the same registers, the segments with
 * their bases and flags, CR0-CR4, and (newer QEMUs, told by its size)
 * KERNEL_GS_BASE. Both are read here; every size is checked, a note's
 * fields are trusted no further than what they are: numbers.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

/* NT_PRSTATUS as QEMU writes it for x86-64: pr_pid at 32, pr_reg (27
 * registers, Linux's user_regs_struct order) at 112, 336 bytes. */
#define PRS_PID 32
#define PRS_REG 112
#define PRS_SIZE 336
enum {
	UR_R15, UR_R14, UR_R13, UR_R12, UR_RBP, UR_RBX, UR_R11, UR_R10, UR_R9, UR_R8, UR_RAX,
	UR_RCX, UR_RDX, UR_RSI, UR_RDI, UR_ORIG_RAX, UR_RIP, UR_CS, UR_EFLAGS, UR_RSP, UR_SS,
	UR_FS_BASE, UR_GS_BASE, UR_DS, UR_ES, UR_FS, UR_GS, UR_NR
};
_Static_assert(PRS_REG + UR_NR * 8 + 8 == PRS_SIZE, "prstatus layout");

/* QEMUCPUState: version, size, 18 registers, 10 segments of 24 bytes,
 * cr[5], then kernel_gs_base when size says so. */
struct qemu_seg {
	uint32_t selector, limit, flags, pad;
	uint64_t base;
};
struct qemu_cpu_state {
	uint32_t version, size;
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rsp, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, rflags;
	struct qemu_seg cs, ds, es, fs, gs, ss;
	struct qemu_seg ldt, tr, gdt, idt;
	uint64_t cr[5];
	uint64_t kernel_gs_base;
};
_Static_assert(sizeof(struct qemu_seg) == 24, "QEMUCPUSegment");
_Static_assert(__builtin_offsetof(struct qemu_cpu_state, cr) == 392, "QEMUCPUState.cr");
_Static_assert(sizeof(struct qemu_cpu_state) == 440, "QEMUCPUState");
#define QEMU_STATE_MIN __builtin_offsetof(struct qemu_cpu_state, kernel_gs_base)

#define MAX_CPUS 4096

static void from_prstatus(struct hvt_vcpu_regs *c, const uint8_t *desc)
{
	uint64_t r[UR_NR];
	uint32_t pid;

	memcpy(&pid, desc + PRS_PID, 4);
	memcpy(r, desc + PRS_REG, sizeof(r));
	c->id = pid;
	c->gpr[0] = r[UR_RAX], c->gpr[1] = r[UR_RBX], c->gpr[2] = r[UR_RCX], c->gpr[3] = r[UR_RDX];
	c->gpr[4] = r[UR_RSI], c->gpr[5] = r[UR_RDI], c->gpr[6] = r[UR_RBP], c->gpr[7] = r[UR_RSP];
	c->gpr[8] = r[UR_R8], c->gpr[9] = r[UR_R9], c->gpr[10] = r[UR_R10], c->gpr[11] = r[UR_R11];
	c->gpr[12] = r[UR_R12], c->gpr[13] = r[UR_R13], c->gpr[14] = r[UR_R14], c->gpr[15] = r[UR_R15];
	c->rip = r[UR_RIP];
	c->rflags = r[UR_EFLAGS];
	c->seg[0] = (uint32_t)r[UR_CS], c->seg[1] = (uint32_t)r[UR_SS], c->seg[2] = (uint32_t)r[UR_DS];
	c->seg[3] = (uint32_t)r[UR_ES], c->seg[4] = (uint32_t)r[UR_FS], c->seg[5] = (uint32_t)r[UR_GS];
	c->fs_base = r[UR_FS_BASE];
	c->gs_base = r[UR_GS_BASE];
}

static void from_qemu(struct hvt_vcpu_regs *c, const uint8_t *desc, size_t len)
{
	struct qemu_cpu_state s = { 0 };

	memcpy(&s, desc, len < sizeof(s) ? len : sizeof(s));
	c->has_sys = 1;
	c->gpr[0] = s.rax, c->gpr[1] = s.rbx, c->gpr[2] = s.rcx, c->gpr[3] = s.rdx;
	c->gpr[4] = s.rsi, c->gpr[5] = s.rdi, c->gpr[6] = s.rbp, c->gpr[7] = s.rsp;
	c->gpr[8] = s.r8, c->gpr[9] = s.r9, c->gpr[10] = s.r10, c->gpr[11] = s.r11;
	c->gpr[12] = s.r12, c->gpr[13] = s.r13, c->gpr[14] = s.r14, c->gpr[15] = s.r15;
	c->rip = s.rip;
	c->rflags = s.rflags;
	c->seg[0] = s.cs.selector, c->seg[1] = s.ss.selector, c->seg[2] = s.ds.selector;
	c->seg[3] = s.es.selector, c->seg[4] = s.fs.selector, c->seg[5] = s.gs.selector;
	c->cs_flags = s.cs.flags;
	c->fs_base = s.fs.base;
	c->gs_base = s.gs.base;
	memcpy(c->cr, s.cr, sizeof(c->cr));
	c->has_kgs = len >= sizeof(s) && s.size >= sizeof(s);
	c->kernel_gs_base = c->has_kgs ? s.kernel_gs_base : 0;
}

int hvt_dump_cpus(const struct hvt_dump *d, struct hvt_vcpu_regs **out, size_t *n, struct hvt_err *err)
{
	struct hvt_vcpu_regs *c = NULL;
	size_t nph, i, nprs = 0, nq = 0;
	Elf *e;
	int rc = -1;

	*out = NULL;
	*n = 0;
	if (strcmp(d->format, "elf")) {
		hvt_seterr(err, "dump: a raw image holds no CPU registers (QEMU's dump-guest-memory writes them)");
		return -1;
	}
	elf_version(EV_CURRENT);
	e = elf_memory((char *)d->buf, d->len);
	if (!e || elf_getphdrnum(e, &nph)) {
		hvt_seterr(err, "dump: ELF unreadable: %s", elf_errmsg(-1));
		goto out;
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *data;
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (ph.p_offset > d->len || ph.p_filesz > d->len - ph.p_offset) {
			hvt_seterr(err, "dump: PT_NOTE %zu runs past the file", i);
			goto out;
		}
		data = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			const char *name = (const char *)data->d_buf + noff;
			const uint8_t *desc = (const uint8_t *)data->d_buf + doff;
			int prs = nh.n_namesz == 5 && !memcmp(name, "CORE", 5) && nh.n_type == NT_PRSTATUS;
			int qemu = nh.n_namesz == 5 && !memcmp(name, "QEMU", 5) && nh.n_type == 0;

			if (!prs && !qemu)
				continue;
			if (prs && nh.n_descsz < PRS_SIZE) {
				hvt_seterr(err, "dump: NT_PRSTATUS note of %u bytes (x86-64: %d)", nh.n_descsz, PRS_SIZE);
				goto out;
			}
			if (qemu && nh.n_descsz < QEMU_STATE_MIN) {
				hvt_seterr(err, "dump: QEMU CPU note of %u bytes (at least %zu)", nh.n_descsz,
					   (size_t)QEMU_STATE_MIN);
				goto out;
			}
			if (prs) {	/* a CPU: the PRSTATUS notes come first, one per CPU */
				if (nprs == MAX_CPUS) {
					hvt_seterr(err, "dump: more than %d CPU notes", MAX_CPUS);
					goto out;
				}
				if (!c && !(c = calloc(MAX_CPUS, sizeof(*c)))) {
					hvt_seterr(err, "dump: out of memory");
					goto out;
				}
				from_prstatus(&c[nprs++], desc);
			} else if (nq < nprs) {	/* the QEMU notes follow, in the same order */
				from_qemu(&c[nq++], desc, nh.n_descsz);
			}
		}
	}
	if (!nprs) {
		hvt_seterr(err, "dump: no CPU notes (NT_PRSTATUS): not a dump-guest-memory core of an x86-64 guest");
		goto out;
	}
	*out = c;
	*n = nprs;
	c = NULL;
	rc = 0;
out:
	free(c);
	if (e)
		elf_end(e);
	return rc;
}

/* The builder, for tests: the notes as QEMU lays them out. */
static uint8_t *put_note(uint8_t *p, const char *name, uint32_t type, const void *desc, uint32_t len)
{
	GElf_Nhdr nh = { .n_namesz = 5, .n_descsz = len, .n_type = type };

	memcpy(p, &nh, sizeof(nh));
	memcpy(p + sizeof(nh), name, 5);
	memcpy(p + sizeof(nh) + 8, desc, len);
	return p + sizeof(nh) + 8 + ((len + 3) & ~3u);
}

void *hvt_cpu_notes(const struct hvt_vcpu_regs *c, unsigned n, size_t *len)
{
	size_t one = sizeof(GElf_Nhdr) + 8;
	uint8_t *buf = calloc(n ? n : 1, 2 * one + PRS_SIZE + sizeof(struct qemu_cpu_state)), *p = buf;
	unsigned i;

	if (!buf)
		return NULL;
	for (i = 0; i < n; i++) {
		uint8_t d[PRS_SIZE] = { 0 };
		uint64_t r[UR_NR] = { 0 };
		const uint64_t *g = c[i].gpr;

		r[UR_RAX] = g[0], r[UR_RBX] = g[1], r[UR_RCX] = g[2], r[UR_RDX] = g[3];
		r[UR_RSI] = g[4], r[UR_RDI] = g[5], r[UR_RBP] = g[6], r[UR_RSP] = g[7];
		r[UR_R8] = g[8], r[UR_R9] = g[9], r[UR_R10] = g[10], r[UR_R11] = g[11];
		r[UR_R12] = g[12], r[UR_R13] = g[13], r[UR_R14] = g[14], r[UR_R15] = g[15];
		r[UR_RIP] = c[i].rip, r[UR_EFLAGS] = c[i].rflags;
		r[UR_CS] = c[i].seg[0], r[UR_SS] = c[i].seg[1], r[UR_DS] = c[i].seg[2];
		r[UR_ES] = c[i].seg[3], r[UR_FS] = c[i].seg[4], r[UR_GS] = c[i].seg[5];
		r[UR_FS_BASE] = c[i].fs_base, r[UR_GS_BASE] = c[i].gs_base;
		memcpy(d + PRS_PID, &c[i].id, 4);
		memcpy(d + PRS_REG, r, sizeof(r));
		p = put_note(p, "CORE", NT_PRSTATUS, d, PRS_SIZE);
	}
	for (i = 0; i < n; i++) {
		struct qemu_cpu_state s = { .version = 1, .size = sizeof(s) };
		const uint64_t *g = c[i].gpr;

		s.rax = g[0], s.rbx = g[1], s.rcx = g[2], s.rdx = g[3];
		s.rsi = g[4], s.rdi = g[5], s.rbp = g[6], s.rsp = g[7];
		s.r8 = g[8], s.r9 = g[9], s.r10 = g[10], s.r11 = g[11];
		s.r12 = g[12], s.r13 = g[13], s.r14 = g[14], s.r15 = g[15];
		s.rip = c[i].rip, s.rflags = c[i].rflags;
		s.cs.selector = c[i].seg[0], s.ss.selector = c[i].seg[1], s.ds.selector = c[i].seg[2];
		s.es.selector = c[i].seg[3], s.fs.selector = c[i].seg[4], s.gs.selector = c[i].seg[5];
		s.cs.flags = c[i].cs_flags;
		s.fs.base = c[i].fs_base, s.gs.base = c[i].gs_base;
		memcpy(s.cr, c[i].cr, sizeof(s.cr));
		s.kernel_gs_base = c[i].kernel_gs_base;
		p = put_note(p, "QEMU", 0, &s, sizeof(s));
	}
	*len = (size_t)(p - buf);
	return buf;
}

/* ---------------------------------------------------------------- */
/* The page walk (SDM Vol. 3 4.3 32-bit paging, 4.4 PAE, 4.5 4- and
 * 5-level paging). Accessed and dirty bits are not set: a dump is read
 * only. Protection is not checked: a debugger reads what the kernel
 * could. */
#define CR0_PG (1ull << 31)
#define CR4_PSE (1ull << 4)
#define CR4_PAE (1ull << 5)
#define CR4_LA57 (1ull << 12)
#define SEG_L (1u << 21)	/* QEMU's segment flags: the descriptor's high dword */
#define PTE_P 1ull
#define PTE_PS (1ull << 7)
#define PTE_ADDR 0x000ffffffffff000ull

static int read_pte(const struct hvt_dump *d, uint64_t pa, unsigned size, uint64_t *e)
{
	*e = 0;
	return hvt_dump_read_phys(d, pa, e, size) || !(*e & PTE_P) ? -1 : 0;
}

static int walk_long(const struct hvt_dump *d, uint64_t cr3, unsigned levels, uint64_t la,
		     uint64_t *pa, uint64_t *page)
{
	unsigned top = levels == 5 ? 56 : 47;
	uint64_t table = cr3 & PTE_ADDR, e;
	unsigned l;

	/* canonical: bits 63..top all equal to bit top */
	if ((int64_t)(la << (63 - top)) >> (63 - top) != (int64_t)la)
		return -1;
	for (l = levels; l >= 1; l--) {
		unsigned shift = 12 + 9 * (l - 1);

		if (read_pte(d, table + ((la >> shift) & 511) * 8, 8, &e))
			return -1;
		if (l == 1 || ((l == 2 || l == 3) && (e & PTE_PS))) {
			*page = 1ull << shift;
			*pa = (e & PTE_ADDR & ~(*page - 1)) | (la & (*page - 1));
			return 0;
		}
		if (e & PTE_PS)	/* reserved above the PDPT */
			return -1;
		table = e & PTE_ADDR;
	}
	return -1;
}

static int walk_pae(const struct hvt_dump *d, uint64_t cr3, uint64_t la, uint64_t *pa, uint64_t *page)
{
	uint64_t e;

	if (read_pte(d, (cr3 & 0xffffffe0u) + ((la >> 30) & 3) * 8, 8, &e) ||
	    read_pte(d, (e & PTE_ADDR) + ((la >> 21) & 511) * 8, 8, &e))
		return -1;
	if (e & PTE_PS) {
		*page = 1ull << 21;
		*pa = (e & PTE_ADDR & ~(*page - 1)) | (la & (*page - 1));
		return 0;
	}
	if (read_pte(d, (e & PTE_ADDR) + ((la >> 12) & 511) * 8, 8, &e))
		return -1;
	*page = 4096;
	*pa = (e & PTE_ADDR) | (la & 4095);
	return 0;
}

static int walk_32(const struct hvt_dump *d, uint64_t cr3, uint64_t cr4, uint64_t la, uint64_t *pa,
		   uint64_t *page)
{
	uint64_t e;

	if (read_pte(d, (cr3 & 0xfffff000u) + ((la >> 22) & 1023) * 4, 4, &e))
		return -1;
	if ((e & PTE_PS) && (cr4 & CR4_PSE)) {	/* 4 MiB, PSE-36: bits 39:32 in 20:13 */
		*page = 1ull << 22;
		*pa = (e & 0xffc00000u) | ((e >> 13) & 0xff) << 32 | (la & (*page - 1));
		return 0;
	}
	if (read_pte(d, (e & 0xfffff000u) + ((la >> 12) & 1023) * 4, 4, &e))
		return -1;
	*page = 4096;
	*pa = (e & 0xfffff000u) | (la & 4095);
	return 0;
}

int hvt_vcpu_translate(const struct hvt_dump *d, const struct hvt_vcpu_regs *c, uint64_t la,
		       uint64_t *pa, uint64_t *left)
{
	uint64_t page = 4096;
	int rc;

	if (!c->has_sys || !(c->cr[0] & CR0_PG)) {	/* no paging (or unknown): physical */
		*pa = la;
		rc = 0;
	} else if ((c->cr[4] & CR4_PAE) && ((c->cs_flags & SEG_L) || la >> 32)) {
		/* long mode: a 64-bit code segment says so (the note has no EFER) */
		rc = walk_long(d, c->cr[3], (c->cr[4] & CR4_LA57) ? 5 : 4, la, pa, &page);
	} else if (la >> 32) {
		rc = -1;
	} else if (c->cr[4] & CR4_PAE) {
		rc = walk_pae(d, c->cr[3], la, pa, &page);
	} else {
		rc = walk_32(d, c->cr[3], c->cr[4], la, pa, &page);
	}
	if (!rc)
		*left = page - (la & (page - 1));
	return rc;
}

int64_t hvt_vcpu_read(const struct hvt_dump *d, const struct hvt_vcpu_regs *c, uint64_t la, void *out,
		      uint64_t len)
{
	uint8_t *o = out;
	uint64_t done = 0;

	while (done < len) {
		uint64_t pa, left, k;

		if (hvt_vcpu_translate(d, c, la + done, &pa, &left))
			break;
		k = len - done < left ? len - done : left;
		/* a physical page the dump lacks (MMIO, a hole): stop there */
		if (hvt_dump_read_phys(d, pa, o + done, k))
			break;
		done += k;
	}
	return done ? (int64_t)done : -1;
}
