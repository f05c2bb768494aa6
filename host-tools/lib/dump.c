/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: finds the channel in a guest memory dump and copies it out.
 * Two formats: a raw image (QEMU `pmemsave 0 SIZE FILE`: file offset ==
 * guest-physical address) and an ELF core (QEMU `dump-guest-memory`:
 * PT_LOAD segments, p_paddr -> p_offset, walked with libelf). The header
 * sits at a 4 KiB-aligned guest-physical address (record.h), so only
 * those are scanned for HVTRACE_CHAN_MAGIC.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "libhvtrace.h"

#define MAX_REGIONS 4096

struct region {
	uint64_t paddr, len;
	const uint8_t *data;
};

struct phys {
	struct region *r;
	size_t n;
};

/* Copies [pa, pa + len) out of the regions; -1 unless all of it is there. */
static int read_phys(const struct phys *p, uint64_t pa, void *out, uint64_t len, int copy)
{
	while (len) {
		size_t i;
		int found = 0;

		for (i = 0; i < p->n; i++) {
			const struct region *r = &p->r[i];

			if (pa >= r->paddr && pa - r->paddr < r->len) {
				uint64_t k = r->len - (pa - r->paddr);

				if (k > len)
					k = len;
				if (copy) {
					memcpy(out, r->data + (pa - r->paddr), k);
					out = (uint8_t *)out + k;
				}
				pa += k;
				len -= k;
				found = 1;
				break;
			}
		}
		if (!found)
			return -1;
	}
	return 0;
}

static int elf_regions(struct phys *p, const void *buf, size_t len, struct hvt_err *err)
{
	Elf *e;
	size_t nph, i;
	int rc = -1;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)buf, len);
	if (!e) {
		hvt_seterr(err, "dump: not a readable ELF file: %s", elf_errmsg(-1));
		return -1;
	}
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph)) {
		hvt_seterr(err, "dump: ELF without program headers: %s", elf_errmsg(-1));
		goto out;
	}
	if (nph > MAX_REGIONS) {
		hvt_seterr(err, "dump: ELF has %zu program headers (at most %d)", nph, MAX_REGIONS);
		goto out;
	}
	p->r = calloc(nph ? nph : 1, sizeof(*p->r));
	if (!p->r) {
		hvt_seterr(err, "dump: out of memory");
		goto out;
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph)) {
			hvt_seterr(err, "dump: ELF program header %zu unreadable: %s", i, elf_errmsg(-1));
			goto out;
		}
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > len || ph.p_filesz > len - ph.p_offset) {
			hvt_seterr(err, "dump: PT_LOAD %zu (offset 0x%llx, %llu bytes) runs past the file (%zu bytes)",
				   i, (unsigned long long)ph.p_offset, (unsigned long long)ph.p_filesz, len);
			goto out;
		}
		if (ph.p_paddr + ph.p_filesz < ph.p_paddr) {
			hvt_seterr(err, "dump: PT_LOAD %zu: p_paddr 0x%llx + %llu wraps", i,
				   (unsigned long long)ph.p_paddr, (unsigned long long)ph.p_filesz);
			goto out;
		}
		p->r[p->n++] = (struct region){ ph.p_paddr, ph.p_filesz, (const uint8_t *)buf + ph.p_offset };
	}
	if (!p->n) {
		hvt_seterr(err, "dump: ELF core without PT_LOAD segments");
		goto out;
	}
	rc = 0;
out:
	elf_end(e);
	return rc;
}

static int scan(struct hvt_chan *ch, const struct phys *p, struct hvt_err *err)
{
	struct hvtrace_chan *hdr = malloc(sizeof(*hdr));
	unsigned candidates = 0;
	size_t i;
	struct hvt_err last = { "" };

	if (!hdr) {
		hvt_seterr(err, "dump: out of memory");
		return -1;
	}
	for (i = 0; i < p->n; i++) {
		const struct region *r = &p->r[i];
		uint64_t pa = (r->paddr + 4095) & ~4095ull;

		for (; pa >= r->paddr && pa - r->paddr + 8 <= r->len; pa += 4096) {
			struct hvt_chan tmp;
			uint64_t magic;
			void *copy;

			memcpy(&magic, r->data + (pa - r->paddr), 8);
			if (magic != HVTRACE_CHAN_MAGIC)
				continue;
			candidates++;
			if (read_phys(p, pa, hdr, sizeof(*hdr), 1)) {
				hvt_seterr(&last, "channel header at 0x%llx runs past the dump",
					   (unsigned long long)pa);
				continue;
			}
			if (hdr->size < sizeof(*hdr) || read_phys(p, pa, NULL, hdr->size, 0)) {
				hvt_seterr(&last, "channel at 0x%llx: size %llu runs past the dump",
					   (unsigned long long)pa, (unsigned long long)hdr->size);
				continue;
			}
			/* the header alone first (it only reads the header), then the copy */
			if (hvt_chan_validate(&tmp, hdr, hdr->size, &last))
				continue;
			copy = malloc(hdr->size);
			if (!copy) {
				hvt_seterr(&last, "channel at 0x%llx: out of memory for %llu bytes",
					   (unsigned long long)pa, (unsigned long long)hdr->size);
				continue;
			}
			read_phys(p, pa, copy, hdr->size, 1);
			if (hvt_chan_validate(ch, copy, hdr->size, &last)) {
				free(copy);
				continue;
			}
			ch->source = HVT_SRC_DUMP;
			ch->owns_copy = 1;
			ch->found_at = pa;
			free(hdr);
			return 0;
		}
	}
	free(hdr);
	if (!candidates)
		hvt_seterr(err, "dump: no channel (no 4 KiB-aligned page starts with HVTRCHN1)");
	else
		hvt_seterr(err, "dump: %u candidate page%s rejected, the last: %s", candidates,
			   candidates == 1 ? "" : "s", last.msg);
	return -1;
}

int hvt_chan_open_dump_mem(struct hvt_chan *ch, const void *buf, size_t len, struct hvt_err *err)
{
	struct region raw = { 0, len, buf };
	struct phys p = { &raw, 1 };
	int rc;

	if (len >= 8 && !memcmp(buf, "KDUMP   ", 8)) {
		hvt_seterr(err, "dump: kdump-compressed format is not supported "
				"(use dump-guest-memory without -z/-l/-s, or pmemsave)");
		return -1;
	}
	if (len >= 4 && !memcmp(buf, ELFMAG, SELFMAG)) {
		p.r = NULL;
		p.n = 0;
		if (elf_regions(&p, buf, len, err)) {
			free(p.r);
			return -1;
		}
		rc = scan(ch, &p, err);
		free(p.r);
		if (!rc)
			ch->dump_format = "elf";
		return rc;
	}
	rc = scan(ch, &p, err);
	if (!rc)
		ch->dump_format = "raw";
	return rc;
}

int hvt_chan_open_dump(struct hvt_chan *ch, const char *path, struct hvt_err *err)
{
	size_t len;
	void *map = hvt_map_file(path, 0, 1, &len, err);
	int rc;

	if (!map)
		return -1;
	rc = hvt_chan_open_dump_mem(ch, map, len, err);
	munmap(map, len);
	return rc;
}
