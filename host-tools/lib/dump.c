/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: finds the channel in a guest memory dump and copies it out.
 * Two formats: a raw image (QEMU `pmemsave 0 SIZE FILE`: file offset ==
 * guest-physical address; or, opened with a base address, one range of
 * memory from that address, as `pmemsave ADDR SIZE` or Bochs's debugger's
 * `writemem` save it) and an ELF core (QEMU `dump-guest-memory`:
 * PT_LOAD segments, p_paddr -> p_offset, walked with libelf). The header
 * sits at a 4 KiB-aligned guest-physical address (record.h), so only
 * those are scanned for HVTRACE_CHAN_MAGIC.
 *
 * The guest owns most of the memory scanned and may have written headers
 * of its own there, so the scan keeps every page that holds a valid
 * header and leaves the choice to the caller (hvt_dump_chan). Neither
 * format says where the hypervisor's reserve is (the UEFI memory map is
 * not in a dump), and even the reserve is no proof: the guest's writes to
 * hidden pages land in the sink page, which lies in it (docs/channel.md).
 *
 * Cost: one look at each page; a page with the magic is checked against
 * its own header first (nothing else read), then the range it claims is
 * looked up in O(log n) over the segments, sorted once, so a dump crafted
 * with many segments or many forged headers is scanned in linear time.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "libhvtrace.h"

#define MAX_REGIONS 4096

/* A run of guest-physical memory in the dump. run_end: where the run of
 * regions adjacent to this one (it and those after it) stops, so that a
 * range starting in it is covered iff it ends by run_end. */
struct hvt_dump_region {
	uint64_t paddr, len, run_end;
	const uint8_t *data;
	size_t phdr;		/* ELF: its program header's index */
};

/* The region holding pa (regions sorted by paddr, none overlapping). */
static const struct hvt_dump_region *find_region(const struct hvt_dump *d, uint64_t pa)
{
	size_t lo = 0, hi = d->nr_region;

	while (lo < hi) {	/* the first region starting above pa */
		size_t mid = lo + (hi - lo) / 2;

		if (d->region[mid].paddr <= pa)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pa - d->region[lo - 1].paddr >= d->region[lo - 1].len)
		return NULL;
	return &d->region[lo - 1];
}

static int covered(const struct hvt_dump *d, uint64_t pa, uint64_t len)
{
	const struct hvt_dump_region *r = find_region(d, pa);

	return r && len <= r->run_end - pa;
}

/* Copies [pa, pa + len), which covered() accepted, out of the regions. */
static void read_phys(const struct hvt_dump *d, uint64_t pa, void *out, uint64_t len)
{
	const struct hvt_dump_region *r = find_region(d, pa);
	uint8_t *o = out;

	while (len) {
		uint64_t k = r->len - (pa - r->paddr);

		if (k > len)
			k = len;
		memcpy(o, r->data + (pa - r->paddr), k);
		o += k;
		pa += k;
		len -= k;
		r++;
	}
}

static int cmp_region(const void *a, const void *b)
{
	const struct hvt_dump_region *x = a, *y = b;

	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

/* Sorts the regions, refuses overlapping ones (two contents for one
 * address: the scan and the copy could read different ones), and links
 * adjacent ones into runs. */
static int sort_regions(struct hvt_dump *d, struct hvt_err *err)
{
	size_t i;

	qsort(d->region, d->nr_region, sizeof(*d->region), cmp_region);
	for (i = 1; i < d->nr_region; i++) {
		const struct hvt_dump_region *a = &d->region[i - 1], *b = &d->region[i];

		if (b->paddr - a->paddr < a->len) {
			hvt_seterr(err, "dump: PT_LOAD %zu (0x%llx..0x%llx) overlaps PT_LOAD %zu (0x%llx..0x%llx)",
				   b->phdr, (unsigned long long)b->paddr,
				   (unsigned long long)(b->paddr + b->len), a->phdr,
				   (unsigned long long)a->paddr, (unsigned long long)(a->paddr + a->len));
			return -1;
		}
	}
	for (i = d->nr_region; i--;) {
		struct hvt_dump_region *r = &d->region[i];

		r->run_end = r->paddr + r->len;
		if (i + 1 < d->nr_region && r->run_end == r[1].paddr)
			r->run_end = r[1].run_end;
	}
	return 0;
}

static int elf_regions(struct hvt_dump *d, const void *buf, size_t len, struct hvt_err *err)
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
	d->region = calloc(nph ? nph : 1, sizeof(*d->region));
	if (!d->region) {
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
		d->region[d->nr_region++] = (struct hvt_dump_region){
			.paddr = ph.p_paddr, .len = ph.p_filesz,
			.data = (const uint8_t *)buf + ph.p_offset, .phdr = i,
		};
	}
	if (!d->nr_region) {
		hvt_seterr(err, "dump: ELF core without PT_LOAD segments");
		goto out;
	}
	rc = 0;
out:
	elf_end(e);
	return rc;
}

/* Whether the page at pa holds a valid channel header, whose whole size
 * the dump holds; fills c. The header's own checks come first: they read
 * nothing past it. */
static int check_header(const struct hvt_dump *d, uint64_t pa, struct hvtrace_chan *hdr,
			struct hvt_dump_cand *c, struct hvt_err *why)
{
	struct hvt_chan tmp;

	if (!covered(d, pa, sizeof(*hdr))) {
		hvt_seterr(why, "channel header at 0x%llx runs past the dump", (unsigned long long)pa);
		return -1;
	}
	read_phys(d, pa, hdr, sizeof(*hdr));
	if (hvt_chan_validate(&tmp, hdr, hdr->size > sizeof(*hdr) ? hdr->size : sizeof(*hdr), why))
		return -1;
	if (!covered(d, pa, hdr->size)) {
		hvt_seterr(why, "channel at 0x%llx: size %llu runs past the dump, whose memory there ends at 0x%llx",
			   (unsigned long long)pa, (unsigned long long)hdr->size,
			   (unsigned long long)find_region(d, pa)->run_end);
		return -1;
	}
	*c = (struct hvt_dump_cand){
		.pa = pa, .size = hdr->size, .phys_base = hdr->phys_base,
		.abi_version = hdr->abi_version, .nr_rings = hdr->nr_rings,
		.nr_vcpus = hdr->nr_vcpus, .state = hdr->state, .where = hdr->where,
	};
	return 0;
}

/* Finds the candidates; 0 even when there is none (d->nr_cand 0, the
 * reason in *none), -1 only when memory runs out. */
static int scan(struct hvt_dump *d, struct hvt_err *none, struct hvt_err *err)
{
	struct hvtrace_chan *hdr = malloc(sizeof(*hdr));
	size_t i, cap = 0, rejected = 0;
	struct hvt_err last = { "" };

	if (!hdr) {
		hvt_seterr(err, "dump: out of memory");
		return -1;
	}
	for (i = 0; i < d->nr_region; i++) {
		const struct hvt_dump_region *r = &d->region[i];
		uint64_t pa = (r->paddr + 4095) & ~4095ull;

		for (; pa >= r->paddr && pa - r->paddr < r->len; pa += 4096) {
			struct hvt_dump_cand c;
			uint64_t magic;

			if (!covered(d, pa, 8))
				continue;
			read_phys(d, pa, &magic, 8);
			if (magic != HVTRACE_CHAN_MAGIC)
				continue;
			if (check_header(d, pa, hdr, &c, &last)) {
				rejected++;
				continue;
			}
			if (d->nr_cand == cap) {
				struct hvt_dump_cand *n = realloc(d->cand, (cap ? 2 * cap : 4) * sizeof(*n));

				if (!n) {
					free(hdr);
					hvt_seterr(err, "dump: out of memory");
					return -1;
				}
				d->cand = n;
				cap = cap ? 2 * cap : 4;
			}
			d->cand[d->nr_cand++] = c;
		}
	}
	free(hdr);
	if (d->nr_cand)
		return 0;
	if (!rejected && d->nr_region == 1)
		hvt_seterr(none, "dump: no channel (no 4 KiB-aligned page in 0x%llx..0x%llx starts with HVTRCHN1)",
			   (unsigned long long)d->region[0].paddr,
			   (unsigned long long)(d->region[0].paddr + d->region[0].len));
	else if (!rejected)
		hvt_seterr(none, "dump: no channel (no 4 KiB-aligned page starts with HVTRCHN1)");
	else
		hvt_seterr(none, "dump: %zu candidate page%s rejected, the last: %s", rejected,
			   rejected == 1 ? "" : "s", last.msg);
	return 0;
}

/* raw_base: NULL, the format found by content (a raw image from address
 * 0 unless it is an ELF core); else a raw image of memory from *raw_base. */
static int dump_open(struct hvt_dump *d, const void *buf, size_t len, int need_chan,
		     const uint64_t *raw_base, struct hvt_err *err)
{
	memset(d, 0, sizeof(*d));
	d->buf = buf;
	d->len = len;
	if (len >= 8 && !memcmp(buf, "KDUMP   ", 8)) {
		hvt_seterr(err, "dump: kdump-compressed format is not supported "
				"(use dump-guest-memory without -z/-l/-s, or pmemsave)");
		return -1;
	}
	if (len >= 4 && !memcmp(buf, ELFMAG, SELFMAG)) {
		if (raw_base) {
			hvt_seterr(err, "dump: an ELF core, not a raw image: its PT_LOAD segments say "
					"where its memory is (no base address goes with it)");
			return -1;
		}
		d->format = "elf";
		if (elf_regions(d, buf, len, err) || sort_regions(d, err))
			goto bad;
	} else {
		uint64_t base = raw_base ? *raw_base : 0;

		if (len && base + len - 1 < base) {
			hvt_seterr(err, "dump: a raw image of %zu bytes from 0x%llx runs past the "
					"64-bit address space", len, (unsigned long long)base);
			return -1;
		}
		d->format = "raw";
		d->region = malloc(sizeof(*d->region));
		if (!d->region) {
			hvt_seterr(err, "dump: out of memory");
			return -1;
		}
		d->region[0] = (struct hvt_dump_region){ .paddr = base, .len = len, .run_end = base + len,
							 .data = buf };
		d->nr_region = 1;
	}
	if (!scan(d, &d->no_chan, err) && (d->nr_cand || !need_chan))
		return 0;
	if (!d->nr_cand)
		*err = d->no_chan;
bad:
	hvt_dump_close(d);
	return -1;
}

int hvt_dump_open_mem(struct hvt_dump *d, const void *buf, size_t len, struct hvt_err *err)
{
	return dump_open(d, buf, len, 1, NULL, err);
}

int hvt_dump_open_any_mem(struct hvt_dump *d, const void *buf, size_t len, struct hvt_err *err)
{
	return dump_open(d, buf, len, 0, NULL, err);
}

int hvt_dump_open_raw_mem(struct hvt_dump *d, const void *buf, size_t len, uint64_t base, struct hvt_err *err)
{
	return dump_open(d, buf, len, 1, &base, err);
}

static int open_file(struct hvt_dump *d, const char *path, int need_chan, const uint64_t *raw_base,
		     struct hvt_err *err)
{
	size_t len;
	void *map = hvt_map_file(path, 0, 1, &len, err);

	if (!map)
		return -1;
	if (dump_open(d, map, len, need_chan, raw_base, err)) {
		munmap(map, len);
		return -1;
	}
	d->map = map;
	d->map_len = len;
	return 0;
}

int hvt_dump_open(struct hvt_dump *d, const char *path, struct hvt_err *err)
{
	return open_file(d, path, 1, NULL, err);
}

int hvt_dump_open_any(struct hvt_dump *d, const char *path, struct hvt_err *err)
{
	return open_file(d, path, 0, NULL, err);
}

int hvt_dump_open_raw(struct hvt_dump *d, const char *path, uint64_t base, struct hvt_err *err)
{
	return open_file(d, path, 1, &base, err);
}

int hvt_dump_read_phys(const struct hvt_dump *d, uint64_t pa, void *out, uint64_t len)
{
	if (!covered(d, pa, len))
		return -1;
	read_phys(d, pa, out, len);
	return 0;
}

int hvt_dump_chan(const struct hvt_dump *d, uint64_t pa, struct hvt_chan *ch, struct hvt_err *err)
{
	const struct hvt_dump_cand *c;
	size_t lo = 0, hi = d->nr_cand;
	void *copy;

	while (lo < hi) {	/* the first at or above pa: the scan went up */
		size_t mid = lo + (hi - lo) / 2;

		if (d->cand[mid].pa < pa)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->nr_cand || d->cand[lo].pa != pa) {
		hvt_seterr(err, "dump: no valid channel header at guest-physical 0x%llx",
			   (unsigned long long)pa);
		return -1;
	}
	c = &d->cand[lo];
	copy = malloc(c->size);
	if (!copy) {
		hvt_seterr(err, "channel at 0x%llx: out of memory for %llu bytes",
			   (unsigned long long)pa, (unsigned long long)c->size);
		return -1;
	}
	/* validated again as copied: the scan read a file that may change */
	read_phys(d, pa, copy, c->size);
	if (hvt_chan_validate(ch, copy, c->size, err)) {
		free(copy);
		return -1;
	}
	ch->source = HVT_SRC_DUMP;
	ch->owns_copy = 1;
	ch->found_at = pa;
	ch->dump_format = d->format;
	ch->dump_headers = d->nr_cand;
	return 0;
}

void hvt_dump_close(struct hvt_dump *d)
{
	free(d->region);
	free(d->cand);
	if (d->map)
		munmap(d->map, d->map_len);
	memset(d, 0, sizeof(*d));
}
