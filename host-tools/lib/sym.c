/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: symbols for addresses. Sources: an ELF's symbol table
 * (.symtab, else .dynsym; read with libelf: STT_FUNC/STT_GNU_IFUNC
 * symbols), or a text map as System.map and /proc/kallsyms write it
 * (`ADDR TYPE NAME [[module]]`; text symbols t, T, w, W). The function
 * holding an address is the nearest symbol at or below it, and within its
 * size when the ELF gives one.
 */
#include <ctype.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libhvtrace.h"

struct build {
	struct hvt_sym *v;
	size_t *name_off;	/* names live in strings until they stop moving */
	size_t n, cap;
	char *strings;
	size_t len, scap;
};

static int add(struct build *b, uint64_t addr, uint64_t size, const char *name, size_t nlen)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		void *v = realloc(b->v, cap * sizeof(*b->v)), *o;

		if (!v)
			return -1;
		b->v = v;
		o = realloc(b->name_off, cap * sizeof(*b->name_off));
		if (!o)
			return -1;
		b->name_off = o;
		b->cap = cap;
	}
	if (b->len + nlen + 1 > b->scap) {
		size_t cap = (b->scap ? b->scap * 2 : 16384) + nlen + 1;
		char *s = realloc(b->strings, cap);

		if (!s)
			return -1;
		b->strings = s;
		b->scap = cap;
	}
	memcpy(b->strings + b->len, name, nlen);
	b->strings[b->len + nlen] = 0;
	b->v[b->n] = (struct hvt_sym){ addr, size, NULL };
	b->name_off[b->n++] = b->len;
	b->len += nlen + 1;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct hvt_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* same address: the first one read wins (its name pointer is smaller) */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Names to pointers, sort, one symbol per address. */
static int finish(struct hvt_syms *s, struct build *b, const char *what, struct hvt_err *err)
{
	size_t i, k = 0;

	if (!b->n) {
		hvt_seterr(err, "%s: no function symbols", what);
		free(b->v);
		free(b->name_off);
		free(b->strings);
		return -1;
	}
	for (i = 0; i < b->n; i++)
		b->v[i].name = b->strings + b->name_off[i];
	free(b->name_off);
	qsort(b->v, b->n, sizeof(*b->v), cmp_sym);
	for (i = 0; i < b->n; i++)
		if (!k || b->v[k - 1].addr != b->v[i].addr)
			b->v[k++] = b->v[i];
	s->v = b->v;
	s->n = k;
	s->strings = b->strings;
	s->strings_len = b->len;
	return 0;
}

static void build_free(struct build *b)
{
	free(b->v);
	free(b->name_off);
	free(b->strings);
}

int hvt_syms_parse_map(struct hvt_syms *s, const char *text, size_t len, struct hvt_err *err)
{
	struct build b = { 0 };
	const char *p = text, *end = text + len;
	unsigned long line = 0;

	memset(s, 0, sizeof(*s));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p, *name;
		uint64_t addr = 0;
		unsigned digits = 0;
		char type;

		if (!eol)
			eol = end;
		line++;
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == eol) {
			p = eol + 1;
			continue;
		}
		while (q < eol && isxdigit((unsigned char)*q)) {
			if (++digits > 16)
				break;
			addr = addr << 4 | (uint64_t)(isdigit((unsigned char)*q) ? *q - '0'
									 : (tolower((unsigned char)*q) - 'a' + 10));
			q++;
		}
		if (!digits || digits > 16 || q == eol || (*q != ' ' && *q != '\t'))
			goto bad;
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if (q == eol)
			goto bad;
		type = *q++;
		if (q == eol || (*q != ' ' && *q != '\t'))
			goto bad;
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		name = q;
		while (q < eol && !isspace((unsigned char)*q))
			q++;
		if (q == name)
			goto bad;
		if ((type == 't' || type == 'T' || type == 'w' || type == 'W') && addr &&
		    add(&b, addr, 0, name, (size_t)(q - name))) {
			hvt_seterr(err, "symbol map: out of memory");
			build_free(&b);
			return -1;
		}
		p = eol + 1;
	}
	return finish(s, &b, "symbol map", err);
bad:
	hvt_seterr(err, "symbol map: line %lu is not `ADDR TYPE NAME`", line);
	build_free(&b);
	return -1;
}

int hvt_syms_parse_elf(struct hvt_syms *s, const void *buf, size_t len, struct hvt_err *err)
{
	struct build b = { 0 };
	Elf *e;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh;
	Elf_Data *data;
	size_t i, n;

	memset(s, 0, sizeof(*s));
	elf_version(EV_CURRENT);
	e = elf_memory((char *)buf, len);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		hvt_seterr(err, "ELF: unreadable: %s", elf_errmsg(-1));
		if (e)
			elf_end(e);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	scn = symtab ? symtab : dynsym;
	if (!scn || !gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL)) || !sh.sh_entsize) {
		hvt_seterr(err, "ELF: no symbol table (.symtab or .dynsym)%s%s", elf_errmsg(0) ? ": " : "",
			   elf_errmsg(0) ? elf_errmsg(0) : "");
		elf_end(e);
		return -1;
	}
	n = data->d_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_value ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(e, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (add(&b, sym.st_value, sym.st_size, name, strlen(name))) {
			hvt_seterr(err, "ELF: out of memory");
			build_free(&b);
			elf_end(e);
			return -1;
		}
	}
	elf_end(e);
	return finish(s, &b, "ELF symbol table", err);
}

int hvt_syms_load_mem(struct hvt_syms *s, const void *buf, size_t len, struct hvt_err *err)
{
	if (len >= SELFMAG && !memcmp(buf, ELFMAG, SELFMAG))
		return hvt_syms_parse_elf(s, buf, len, err);
	return hvt_syms_parse_map(s, buf, len, err);
}

int hvt_syms_load(struct hvt_syms *s, const char *path, struct hvt_err *err)
{
	size_t len;
	char *buf = hvt_read_file(path, &len, err);
	int rc;

	if (!buf)
		return -1;
	rc = hvt_syms_load_mem(s, buf, len, err);
	free(buf);
	if (rc) {
		struct hvt_err inner = *err;

		hvt_seterr(err, "%s: %s", path, inner.msg);
	}
	return rc;
}

const struct hvt_sym *hvt_syms_lookup(const struct hvt_syms *s, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = s->n;

	/* the recorder's stand-in for a kernel end it hides (stream.cpl = user,
	 * docs/recorder.md) is no address: no symbol holds it, whatever the
	 * last one of a map without sizes is */
	if (addr == HVTRACE_ADDR_KERNEL)
		return NULL;
	/* the last symbol with sym.addr <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (s->v[lo - 1].size && addr - s->v[lo - 1].addr >= s->v[lo - 1].size)
		return NULL;
	/* a map without sizes: each symbol ends where the next begins, and the
	 * last at the page after the one it starts in, as perf bounds the last
	 * kallsyms symbol (symbols__fixup_end), so that no address far past
	 * the map (a user address in a kernel map) takes its last name */
	if (!s->v[lo - 1].size && lo == s->n && addr >= ((s->v[lo - 1].addr + 4095) & ~4095ull) + 4096)
		return NULL;
	*off = addr - s->v[lo - 1].addr;
	return &s->v[lo - 1];
}

const struct hvt_sym *hvt_syms_find(const struct hvt_syms *s, const char *name)
{
	size_t i;
	for (i = 0; s && i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

const char *hvt_syms_format(const struct hvt_syms *s, uint64_t addr, char *buf, size_t len)
{
	uint64_t off = 0;
	const struct hvt_sym *sym = s ? hvt_syms_lookup(s, addr, &off) : NULL;

	if (!sym)
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	else if (off)
		snprintf(buf, len, "%s+0x%llx", sym->name, (unsigned long long)off);
	else
		snprintf(buf, len, "%s", sym->name);
	return buf;
}

/* An ELF holding the symbols alone, for a debugger that reads no text
 * map: a .text without contents (SHT_NOBITS) over their range, a .symtab
 * of STT_FUNC symbols in it, each as long as the gap to the next when its
 * size is unknown. Written by hand: the layout is five fixed parts
 * (header, strings, symbols, section names, section headers). */
int hvt_syms_write_elf(const struct hvt_syms *s, const char *path, struct hvt_err *err)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	uint64_t lo, hi, nxt, strsz = 1, off;
	Elf64_Sym *sym = NULL;
	char *str = NULL;
	Elf64_Ehdr eh;
	Elf64_Shdr sh[5];
	FILE *f = NULL;
	size_t i;
	int rc = -1;

	if (!s->n) {
		hvt_seterr(err, "%s: no symbols to write", path);
		return -1;
	}
	for (i = 0; i < s->n; i++)
		strsz += strlen(s->v[i].name) + 1;
	if (strsz > UINT32_MAX) {
		hvt_seterr(err, "%s: names too long for an ELF string table", path);
		return -1;
	}
	sym = calloc(s->n + 1, sizeof(*sym));
	str = calloc(1, strsz);
	if (!sym || !str) {
		hvt_seterr(err, "%s: out of memory", path);
		goto out;
	}
	lo = s->v[0].addr & ~0xfffull;
	hi = s->v[s->n - 1].addr + (s->v[s->n - 1].size ? s->v[s->n - 1].size : 1);
	for (i = s->n, nxt = 0; i--;) {	/* backwards: the next higher address (aliases share one) */
		const struct hvt_sym *v = &s->v[i];

		if (i + 1 < s->n && s->v[i + 1].addr > v->addr)
			nxt = s->v[i + 1].addr;
		sym[i + 1] = (Elf64_Sym){ .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1,
					  .st_value = v->addr,
					  .st_size = v->size ? v->size : nxt > v->addr ? nxt - v->addr : 0 };
		if (v->addr + sym[i + 1].st_size > hi)
			hi = v->addr + sym[i + 1].st_size;
	}
	for (i = 0, off = 1; i < s->n; i++) {
		sym[i + 1].st_name = (uint32_t)off;
		memcpy(str + off, s->v[i].name, strlen(s->v[i].name) + 1);
		off += strlen(s->v[i].name) + 1;
	}
	eh = (Elf64_Ehdr){ .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			   .e_ehsize = sizeof(eh), .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 5,
			   .e_shstrndx = 4 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	off = sizeof(eh);
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = lo, .sh_offset = off, .sh_size = hi - lo, .sh_addralign = 16 };
	sh[3] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = strsz,
			      .sh_addralign = 1 };
	off += (strsz + 7) & ~7ull;
	sh[2] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = off,
			      .sh_size = (s->n + 1) * sizeof(*sym), .sh_link = 3, .sh_info = 1,
			      .sh_addralign = 8, .sh_entsize = sizeof(*sym) };
	off += sh[2].sh_size;
	sh[4] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	off += (sizeof(shstr) + 7) & ~7ull;
	eh.e_shoff = off;
	f = fopen(path, "wb");
	if (!f || fwrite(&eh, sizeof(eh), 1, f) != 1 || fwrite(str, 1, strsz, f) != strsz ||
	    fwrite("\0\0\0\0\0\0\0", 1, ((strsz + 7) & ~7ull) - strsz, f) != ((strsz + 7) & ~7ull) - strsz ||
	    fwrite(sym, sizeof(*sym), s->n + 1, f) != s->n + 1 ||
	    fwrite(shstr, 1, sizeof(shstr), f) != sizeof(shstr) ||
	    fwrite("\0\0\0\0\0\0\0", 1, ((sizeof(shstr) + 7) & ~7ull) - sizeof(shstr), f) !=
		    ((sizeof(shstr) + 7) & ~7ull) - sizeof(shstr) ||
	    fwrite(sh, sizeof(sh), 1, f) != 1) {
		hvt_seterr(err, "%s: cannot write", path);
		goto out;
	}
	rc = 0;
out:
	if (f && fclose(f) && !rc) {
		hvt_seterr(err, "%s: cannot write", path);
		rc = -1;
	}
	free(sym);
	free(str);
	return rc;
}

void hvt_syms_free(struct hvt_syms *s)
{
	free(s->v);
	free(s->strings);
	memset(s, 0, sizeof(*s));
}

/* ---------------------------------------------------------------- */
/* kernel symbols from a console log (hvtrace-agent symbols)           */

#define KSYMS_BEGIN "HVTRACE-KSYMS-BEGIN"
#define KSYMS_END "HVTRACE-KSYMS-END"

/* [p, e) is one line without its newline; trailing CR and blanks dropped */
static size_t line_len(const char *p, const char *e)
{
	while (e > p && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return (size_t)(e - p);
}

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int hvt_ksyms_from_log(const char *log, size_t len, char **map, size_t *map_len, struct hvt_err *err)
{
	const char *p = log, *e = log + len, *begin = NULL, *end = NULL, *cand = NULL;
	size_t begin_line = 0, line = 0;
	unsigned char *bin = NULL;
	size_t nbin = 0, cap;
	char *out = NULL;
	z_stream z;
	int rc;

	*map = NULL;
	*map_len = 0;
	/* the last BEGIN that an END follows */
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		const char *le = nl ? nl : e;
		size_t l = line_len(p, le);

		line++;
		if (l == sizeof(KSYMS_BEGIN) - 1 && !memcmp(p, KSYMS_BEGIN, l)) {
			cand = nl ? nl + 1 : e;
			begin_line = line;
		} else if (l == sizeof(KSYMS_END) - 1 && !memcmp(p, KSYMS_END, l) && cand) {
			begin = cand;
			end = p;
			cand = NULL;
		}
		p = nl ? nl + 1 : e;
	}
	if (!begin) {
		hvt_seterr(err, cand ? "the symbols block that starts at line %zu has no " KSYMS_END
				       " line (cut short?)"
				     : "no " KSYMS_BEGIN " ... " KSYMS_END " block (run `hvtrace-agent "
				       "symbols` in the guest, its output on this console)",
			   begin_line);
		return -1;
	}
	cap = (size_t)(end - begin) / 4 * 3 + 3;
	bin = malloc(cap ? cap : 1);
	if (!bin) {
		hvt_seterr(err, "out of memory");
		return -1;
	}
	{
		unsigned acc = 0;
		int bits = 0, pad = 0;
		size_t ln = 0;
		for (p = begin; p < end; p++) {
			unsigned char c = (unsigned char)*p;
			int v;
			if (c == '\n') {
				ln++;
				continue;
			}
			if (c == '\r' || c == ' ' || c == '\t')
				continue;
			if (c == '=') {
				pad++;
				continue;
			}
			v = b64_val(c);
			if (v < 0 || pad) {
				hvt_seterr(err, "symbols block, line %zu of it: '%c' is not base64", ln + 1,
					   isprint(c) ? c : '?');
				free(bin);
				return -1;
			}
			acc = acc << 6 | (unsigned)v;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				bin[nbin++] = (unsigned char)(acc >> bits);
			}
		}
	}
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		free(bin);
		hvt_seterr(err, "zlib failed");
		return -1;
	}
	cap = nbin * 4 + 4096;
	out = malloc(cap);
	z.next_in = bin;
	z.avail_in = (uInt)nbin;
	rc = Z_OK;
	while (out && rc == Z_OK) {
		if (z.total_out == cap) {
			char *t;
			if (cap >= HVT_KSYMS_MAX) {
				rc = Z_MEM_ERROR;
				break;
			}
			cap = cap * 2 > HVT_KSYMS_MAX ? HVT_KSYMS_MAX : cap * 2;
			t = realloc(out, cap);
			if (!t) {
				free(out);
				out = NULL;
				break;
			}
			out = t;
		}
		z.next_out = (unsigned char *)out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_BUF_ERROR && z.avail_in)
			rc = Z_OK;	/* more room needed */
	}
	*map_len = z.total_out;
	inflateEnd(&z);
	free(bin);
	if (!out || rc != Z_STREAM_END) {
		hvt_seterr(err, !out ? "out of memory"
			   : rc == Z_MEM_ERROR ? "the symbols block inflates past %u MiB"
					       : "the symbols block is not a whole gzip stream (corrupt or cut short)",
			   HVT_KSYMS_MAX >> 20);
		free(out);
		*map_len = 0;
		return -1;
	}
	{
		struct hvt_syms s;
		if (hvt_syms_parse_map(&s, out, *map_len, err)) {
			struct hvt_err inner = *err;
			hvt_seterr(err, "the symbols block: %s", inner.msg);
			free(out);
			*map_len = 0;
			return -1;
		}
		hvt_syms_free(&s);
	}
	*map = out;
	return 0;
}
