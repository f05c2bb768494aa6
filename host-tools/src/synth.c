/* SPDX-License-Identifier: MIT */
/*
 * hvtrace synth (hidden, for tests and benchmarks): writes synthetic
 * channels (a shm file, or inside a raw or ELF-core memory dump), trace
 * files and symbol maps, and produces records into a live channel's
 * lossless ring as the hypervisor would. Records come from hvt_synth_rec.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char synth_help[] =
	"usage (tests only):\n"
	"  hvtrace synth chan -o PATH [--vcpus N] [--ring VCPU:MODE:CAP[:RECORDS[:WAIT_US]]]...\n"
	"        [--state S] [--freeze R] [--tsc-hz HZ] [--funcs N]\n"
	"        [--dump raw|elf --at GPA [--decoy] [--forge GPA]]   (MODE: overwrite|lossless)\n"
	"  hvtrace synth produce --shm PATH --ring I --count N [--wait-reader SEC]\n"
	"        [--pace-us U --batch B] [--stop]\n"
	"  hvtrace synth state --shm PATH --state S [--freeze R]\n"
	"  hvtrace synth file -o FILE --records N [--vcpus V] [--funcs F] [--tsc-hz HZ]\n"
	"        [--unfinished] [--partial]\n"
	"  hvtrace synth sysmap -o FILE [--funcs N]\n"
	"  hvtrace synth gdb -o CORE --code PROG [--branch FROM:TO:TYPE]... [--rip ADDR]\n"
	"        (an ELF core with 2 vCPUs, page tables, PROG's code, vCPU 0's records)\n";

enum {
	O_OUT = 'o', O_HELP = 'h', O_VCPUS = 256, O_RING, O_STATE, O_FREEZE, O_TSC_HZ, O_FUNCS,
	O_DUMP, O_AT, O_DECOY, O_SHM, O_COUNT, O_WAIT_READER, O_PACE, O_BATCH, O_STOP, O_RECORDS,
	O_UNFINISHED, O_PARTIAL, O_FORGE, O_CODE, O_BRANCH, O_RIP,
};

static const struct option synth_opts[] = {
	{ "output", required_argument, NULL, O_OUT },	{ "vcpus", required_argument, NULL, O_VCPUS },
	{ "ring", required_argument, NULL, O_RING },	{ "state", required_argument, NULL, O_STATE },
	{ "freeze", required_argument, NULL, O_FREEZE }, { "tsc-hz", required_argument, NULL, O_TSC_HZ },
	{ "funcs", required_argument, NULL, O_FUNCS },	{ "dump", required_argument, NULL, O_DUMP },
	{ "at", required_argument, NULL, O_AT },	{ "decoy", no_argument, NULL, O_DECOY },
	{ "shm", required_argument, NULL, O_SHM },	{ "count", required_argument, NULL, O_COUNT },
	{ "wait-reader", required_argument, NULL, O_WAIT_READER },
	{ "pace-us", required_argument, NULL, O_PACE }, { "batch", required_argument, NULL, O_BATCH },
	{ "stop", no_argument, NULL, O_STOP },		{ "records", required_argument, NULL, O_RECORDS },
	{ "unfinished", no_argument, NULL, O_UNFINISHED },
	{ "partial", no_argument, NULL, O_PARTIAL },	{ "help", no_argument, NULL, O_HELP },
	{ "forge", required_argument, NULL, O_FORGE },	{ "code", required_argument, NULL, O_CODE },
	{ "branch", required_argument, NULL, O_BRANCH }, { "rip", required_argument, NULL, O_RIP },
	{ 0 },
};

struct synth {
	const char *out, *shm, *dump;
	struct hvt_ring_spec ring[HVTRACE_CHAN_MAX_RINGS];
	uint64_t ring_records[HVTRACE_CHAN_MAX_RINGS];
	unsigned nr_rings;
	uint64_t vcpus, tsc_hz, funcs, at, ring_index, count, wait_reader, pace_us, batch, records;
	uint64_t forge;		/* a second, forged channel below the real one (0: none) */
	const char *code;	/* gdb: the program whose code the dump holds */
	struct hvtrace_rec branch[256];	/* gdb: vCPU 0's records */
	unsigned nr_branch;
	uint64_t rip;
	int state, freeze, decoy, stop, unfinished, partial, have_ring_index;
};

static int parse_ring(struct synth *s, char *arg)
{
	char *parts[5] = { 0 }, *save = NULL, *p;
	unsigned n = 0;
	uint64_t v;
	struct hvt_ring_spec *r = &s->ring[s->nr_rings];

	if (s->nr_rings >= HVTRACE_CHAN_MAX_RINGS)
		return -1;
	for (p = strtok_r(arg, ":", &save); p && n < 5; p = strtok_r(NULL, ":", &save))
		parts[n++] = p;
	if (n < 3 || p)
		return -1;
	if (parse_u64(parts[0], &v) || v > 0xffff)
		return -1;
	r->vcpu = (uint32_t)v;
	if (!strcmp(parts[1], "overwrite"))
		r->mode = HVTRACE_RING_OVERWRITE;
	else if (!strcmp(parts[1], "lossless"))
		r->mode = HVTRACE_RING_LOSSLESS;
	else
		return -1;
	if (parse_u64(parts[2], &r->capacity) || r->capacity > (1ull << 30))
		return -1;
	s->ring_records[s->nr_rings] = 0;
	if (parts[3] && parse_u64(parts[3], &s->ring_records[s->nr_rings]))
		return -1;
	if (parts[4] && (parse_u64(parts[4], &v) || v > 0xffffffffu))
		return -1;
	r->wait_us = parts[4] ? (uint32_t)v : 1000;
	s->nr_rings++;
	return 0;
}

/* FROM:TO:TYPE, TYPE a branch type's name (call, ret, jmp, ...) */
static int parse_branch(struct synth *s, char *arg)
{
	char *from = strtok(arg, ":"), *to = strtok(NULL, ":"), *type = strtok(NULL, ":");
	struct hvtrace_rec *r = &s->branch[s->nr_branch];
	int t;

	if (s->nr_branch == sizeof(s->branch) / sizeof(s->branch[0]) || !type || strtok(NULL, ":") ||
	    parse_u64(from, &r->from) || parse_u64(to, &r->to) ||
	    (t = parse_name(type, hvt_branch_type_name, 32)) < 0)
		return -1;
	r->kind = t >= HVTRACE_BR_FAR_JMP && t != HVTRACE_BR_OTHER ? HVTRACE_REC_FAR : HVTRACE_REC_BRANCH;
	r->aux = (uint32_t)t;
	r->tsc = 1000 + 10 * s->nr_branch;
	s->nr_branch++;
	return 0;
}

static int get_opts(struct synth *s, int argc, char **argv)
{
	int opt;
	uint64_t *num = NULL;

	s->vcpus = 1;
	s->state = HVTRACE_STATE_TRACING;
	s->funcs = 5;
	s->batch = 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":ho:", synth_opts, NULL)) != -1) {
		num = NULL;
		switch (opt) {
		case O_OUT: s->out = optarg; break;
		case O_SHM: s->shm = optarg; break;
		case O_DUMP: s->dump = optarg; break;
		case O_DECOY: s->decoy = 1; break;
		case O_STOP: s->stop = 1; break;
		case O_UNFINISHED: s->unfinished = 1; break;
		case O_PARTIAL: s->partial = 1; break;
		case O_VCPUS: num = &s->vcpus; break;
		case O_TSC_HZ: num = &s->tsc_hz; break;
		case O_FUNCS: num = &s->funcs; break;
		case O_AT: num = &s->at; break;
		case O_FORGE: num = &s->forge; break;
		case O_CODE: s->code = optarg; break;
		case O_RIP: num = &s->rip; break;
		case O_BRANCH:
			if (parse_branch(s, optarg))
				return usage_error("synth", "bad --branch '%s' (FROM:TO:TYPE)", optarg);
			break;
		case O_COUNT: num = &s->count; break;
		case O_WAIT_READER: num = &s->wait_reader; break;
		case O_PACE: num = &s->pace_us; break;
		case O_BATCH: num = &s->batch; break;
		case O_RECORDS: num = &s->records; break;
		case O_RING:
			if (!strcmp(argv[0], "produce")) {
				num = &s->ring_index;
				s->have_ring_index = 1;
			} else if (parse_ring(s, optarg)) {
				return usage_error("synth", "bad --ring '%s'", optarg);
			}
			break;
		case O_STATE:
			if ((s->state = parse_name(optarg, hvt_state_name, 8)) < 0)
				return usage_error("synth", "unknown state '%s'", optarg);
			break;
		case O_FREEZE:
			if ((s->freeze = parse_name(optarg, hvt_freeze_name, 8)) < 0)
				return usage_error("synth", "unknown freeze reason '%s'", optarg);
			break;
		case O_HELP: fputs(synth_help, stdout); return -1;
		default: return usage_error("synth", "bad option '%s'", argv[optind - 1]);
		}
		if (num && parse_u64(optarg, num))
			return usage_error("synth", "'%s' is not a number", optarg);
	}
	if (optind < argc)
		return usage_error("synth", "unexpected argument '%s'", argv[optind]);
	if (!s->vcpus || s->vcpus > 0x10000 || !s->batch || s->funcs > 10000000)
		return usage_error("synth", "--vcpus, --batch or --funcs out of range");
	return 0;
}

/* Fills the rings as the producer would, then sets the state. */
static int fill_chan(struct synth *s, void *buf, uint64_t size)
{
	struct hvt_producer *p = malloc(sizeof(*p));
	struct hvt_err err;
	unsigned r;

	if (!p)
		return fail("synth", "out of memory");
	if (hvt_chan_layout(buf, size, s->ring, s->nr_rings, (uint32_t)s->vcpus, s->tsc_hz, &err)) {
		free(p);
		return fail("synth", "%s", err.msg);
	}
	hvt_producer_init(p, buf);
	for (r = 0; r < s->nr_rings; r++) {
		uint64_t i;

		for (i = 0; i < s->ring_records[r]; i++) {
			struct hvtrace_rec rec;

			hvt_synth_rec(s->ring[r].vcpu, i, (unsigned)s->funcs, &rec);
			hvt_producer_put(p, r, &rec);
		}
	}
	hvt_chan_set_state(buf, (uint32_t)s->state, (uint32_t)s->freeze,
			   s->freeze ? 1000 + s->ring_records[0] * 100 : 0);
	free(p);
	return 0;
}

/* A one-page channel without rings, stopped, claiming to be the
 * hypervisor's (reserved RAM, phys_base its own address). */
static void forge_chan(uint8_t *at, uint64_t pa)
{
	struct hvtrace_chan *h = (struct hvtrace_chan *)at;
	struct hvt_err err;

	hvt_chan_layout(h, HVTRACE_CHAN_HDR_SIZE, NULL, 0, 1, 0, &err);
	hvt_chan_set_state(h, HVTRACE_STATE_STOPPED, HVTRACE_FREEZE_NONE, 0);
	h->phys_base = pa;
	h->where = HVTRACE_CHAN_RESERVED_RAM;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t k = fd >= 0 ? write(fd, buf, len) : -1;

	if (fd >= 0)
		close(fd);
	return k == (ssize_t)len ? 0 : fail(path, "cannot write");
}

static int write_elf(const char *path, const uint8_t *mem, uint64_t at, uint64_t end)
{
	size_t len;
	void *elf = hvt_elf_core_image(mem, at, end, &len);
	int rc = elf ? write_file(path, elf, len) : fail("synth", "out of memory");

	free(elf);
	return rc;
}

static int synth_chan(struct synth *s)
{
	uint64_t size = hvt_chan_layout_size(s->ring, s->nr_rings);
	int rc;

	if (!s->out)
		return usage_error("synth", "chan needs -o PATH");
	if (s->dump) {
		uint64_t end = s->at + size + 0x4000;
		uint8_t *mem;

		if (s->at % 4096 || s->at < 0x2000 || s->at > (1ull << 30))
			return usage_error("synth", "--at takes a 4 KiB-aligned address 0x2000..1 GiB");
		if (s->forge % 4096 || (s->forge && s->forge + 4096 > s->at))
			return usage_error("synth", "--forge takes a 4 KiB-aligned address below --at");
		mem = calloc(1, end);
		if (!mem)
			return fail("synth", "out of memory");
		memset(mem, 0xa5, s->at);
		if (s->decoy) {	/* the magic on a page that is no channel */
			uint64_t magic = HVTRACE_CHAN_MAGIC;

			memcpy(mem + s->at - 0x1000, &magic, 8);
		}
		if (s->forge)	/* what a guest can write into its RAM: a valid header */
			forge_chan(mem + s->forge, s->forge);
		rc = fill_chan(s, mem + s->at, size);
		if (!rc) {
			((struct hvtrace_chan *)(mem + s->at))->phys_base = s->at;
			((struct hvtrace_chan *)(mem + s->at))->where = HVTRACE_CHAN_RESERVED_RAM;
			if (!strcmp(s->dump, "raw"))
				rc = write_file(s->out, mem, end);
			else if (!strcmp(s->dump, "elf"))
				rc = write_elf(s->out, mem, s->at, end);
			else
				rc = usage_error("synth", "--dump takes raw or elf");
		}
		free(mem);
		return rc;
	} else {
		/* laid out in place, as the hypervisor does in a shared file: a
		 * reader may have it mapped already (record --wait), and a file
		 * that shrank, even for a moment, is SIGBUS to it */
		int fd = open(s->out, O_RDWR | O_CREAT, 0644);
		struct stat st;
		void *map;

		if (fd < 0 || fstat(fd, &st) ||
		    ((uint64_t)st.st_size < size && ftruncate(fd, (off_t)size))) {
			if (fd >= 0)
				close(fd);
			return fail(s->out, "cannot create");
		}
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			return fail(s->out, "mmap failed");
		memset(map, 0, size);	/* a fresh channel; zeros are "none yet" */
		rc = fill_chan(s, map, size);
		munmap(map, size);
		return rc;
	}
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int synth_produce(struct synth *s)
{
	struct hvt_chan ch;
	struct hvt_producer *p;
	struct hvt_err err;
	uint64_t i, dropped = 0, waits0, waited;
	unsigned r = (unsigned)s->ring_index;
	struct hvtrace_ring *ring;

	if (!s->shm || !s->have_ring_index)
		return usage_error("synth", "produce needs --shm PATH and --ring I");
	if (hvt_chan_open_shm(&ch, s->shm, &err))
		return fail(s->shm, "%s", err.msg);
	if (r >= ch.nr_rings || ch.ring[r].mode != HVTRACE_RING_LOSSLESS) {
		hvt_chan_close(&ch);
		return fail(s->shm, "ring %u is not a lossless ring", r);
	}
	ring = &ch.hdr->rings[r];
	for (i = 0; s->wait_reader && !__atomic_load_n(&ring->reader, __ATOMIC_ACQUIRE); i++) {
		if (i >= s->wait_reader * 1000) {
			hvt_chan_close(&ch);
			return fail(s->shm, "no reader attached to ring %u within %llu s", r,
				    (unsigned long long)s->wait_reader);
		}
		sleep_us(1000);
	}
	p = malloc(sizeof(*p));
	if (!p) {
		hvt_chan_close(&ch);
		return fail("synth", "out of memory");
	}
	hvt_producer_init(p, ch.base);
	waits0 = ring->waits;
	for (i = 0; i < s->count; i++) {
		struct hvtrace_rec rec;

		hvt_synth_rec(ring->vcpu, i, (unsigned)s->funcs, &rec);
		if (hvt_producer_put(p, r, &rec) == HVT_PUT_DROPPED)
			dropped++;
		if (s->pace_us && (i + 1) % s->batch == 0)
			sleep_us(s->pace_us);
	}
	if (hvt_producer_flush_lost(p, r, 30000000))
		warn("synth", "the last LOST record found no space within 30 s");
	waited = ring->waits - waits0;
	if (s->stop)
		hvt_chan_set_state(ch.base, HVTRACE_STATE_STOPPED, HVTRACE_FREEZE_NONE, 0);
	printf("hvtrace synth: produced %llu records into ring %u: %llu lost, %llu waits\n",
	       (unsigned long long)s->count, r, (unsigned long long)dropped, (unsigned long long)waited);
	free(p);
	hvt_chan_close(&ch);
	return 0;
}

static int synth_state(struct synth *s)
{
	struct hvt_chan ch;
	struct hvt_err err;

	if (!s->shm)
		return usage_error("synth", "state needs --shm PATH");
	if (hvt_chan_open_shm(&ch, s->shm, &err))
		return fail(s->shm, "%s", err.msg);
	hvt_chan_set_state(ch.base, (uint32_t)s->state, (uint32_t)s->freeze, s->freeze ? 12345 : 0);
	hvt_chan_close(&ch);
	return 0;
}

static int synth_file(struct synth *s)
{
	struct hvt_fwriter w;
	struct hvt_err err;
	struct hvtrace_rec buf[1024];
	uint64_t i = 0;

	if (!s->out)
		return usage_error("synth", "file needs -o FILE");
	if (hvt_fwriter_open(&w, s->out, 0, s->tsc_hz, (uint32_t)s->vcpus, 0, &err))
		return fail(s->out, "%s", err.msg);
	while (i < s->records) {
		unsigned k;

		/* round-robin over the vCPUs: TSC order, record i/vcpus of each */
		for (k = 0; k < 1024 && i < s->records; k++, i++)
			hvt_synth_rec((uint32_t)(i % s->vcpus), i / s->vcpus, (unsigned)s->funcs, &buf[k]);
		if (hvt_fwriter_put(&w, buf, k, &err)) {
			hvt_fwriter_abort(&w);
			return fail(s->out, "%s", err.msg);
		}
	}
	if (s->partial && write(w.fd, buf, 13) != 13) {
		hvt_fwriter_abort(&w);
		return fail(s->out, "cannot write");
	}
	if (s->unfinished || s->partial) {
		hvt_fwriter_abort(&w);
		return 0;
	}
	if (hvt_fwriter_finish(&w, 0, &err))
		return fail(s->out, "%s", err.msg);
	return 0;
}

static int synth_sysmap(struct synth *s)
{
	FILE *f;
	unsigned k;
	char buf[32];

	if (!s->out)
		return usage_error("synth", "sysmap needs -o FILE");
	f = fopen(s->out, "w");
	if (!f)
		return fail(s->out, "cannot write");
	fprintf(f, "ffffffff80000000 D __data_before_text\n");
	for (k = 0; k < s->funcs || k < 5; k++) {
		fprintf(f, "%016llx %c %s\n", (unsigned long long)hvt_synth_func_addr(k), k % 3 ? 'T' : 't',
			hvt_synth_func_name(k, buf, sizeof(buf)));
		if (k % 1000 == 7)
			fprintf(f, "%016llx b a_bss_symbol_%u\n",
				(unsigned long long)hvt_synth_func_addr(k) + 0x800, k);
	}
	return fclose(f) ? fail(s->out, "cannot write") : 0;
}


/* synth gdb: the memory dump of a stopped two-vCPU guest for the GDB
 * server's tests. Guest-physical layout: page tables at 0x1000-0x6fff,
 * a data page at 0x7000, PROG's code at 0x100000, a 2 MiB data page at
 * 0x200000, the channel at 0x400000. Linear: PROG's code at its link
 * address in HVT_SYNTH_TEXT's 2 MiB (4 KiB pages), the data page at
 * TEXT + 0x10000 (the stack too), the 2 MiB page at TEXT + 0x200000;
 * TEXT + 0x400000 unmapped. vCPU 0 walks 4 levels (CR3 0x1000), vCPU 1
 * five (CR4.LA57, CR3 0x6000) to the same tables. */
#define G_CODE 0x100000ull
#define G_BIG 0x200000ull
#define G_CHAN 0x400000ull
#define G_CODE_MAX 0x10000ull

static int load_code(const char *path, uint8_t *mem)
{
	struct hvt_err err;
	size_t len, nph, i;
	uint8_t *buf = hvt_read_file(path, &len, &err);
	Elf *e;
	int rc = -1;

	if (!buf)
		return fail(path, "%s", err.msg);
	elf_version(EV_CURRENT);
	e = elf_memory((char *)buf, len);
	if (!e || elf_getphdrnum(e, &nph)) {
		free(buf);
		return fail(path, "not an ELF program");
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_vaddr < HVT_SYNTH_TEXT || ph.p_vaddr - HVT_SYNTH_TEXT + ph.p_filesz > G_CODE_MAX ||
		    ph.p_offset > len || ph.p_filesz > len - ph.p_offset) {
			rc = fail(path, "its code must lie in the 64 KiB at 0x%llx",
				  (unsigned long long)HVT_SYNTH_TEXT);
			goto out;
		}
		memcpy(mem + G_CODE + (ph.p_vaddr - HVT_SYNTH_TEXT), buf + ph.p_offset, ph.p_filesz);
		rc = 0;
	}
	if (rc)
		fail(path, "no executable PT_LOAD");
out:
	elf_end(e);
	free(buf);
	return rc ? EXIT_DATA : 0;
}

static void put64(uint8_t *mem, uint64_t pa, uint64_t v)
{
	memcpy(mem + pa, &v, 8);
}

static int synth_gdb(struct synth *s)
{
	struct hvt_ring_spec rs[2] = {
		{ .vcpu = 0, .mode = HVTRACE_RING_OVERWRITE, .capacity = 256 },
		{ .vcpu = 1, .mode = HVTRACE_RING_OVERWRITE, .capacity = 256 },
	};
	uint64_t size = hvt_chan_layout_size(rs, 2), end = G_CHAN + size, i;
	struct hvt_vcpu_regs c[2];
	struct hvt_elf_seg seg[2] = { { 0, G_BIG }, { G_BIG, end - G_BIG } };
	struct hvt_producer *p = malloc(sizeof(*p));
	struct hvt_err err;
	uint8_t *mem = calloc(1, end);
	void *notes = NULL, *core = NULL;
	size_t notes_len, core_len;
	int rc = EXIT_DATA;
	unsigned k;

	if (!s->out || !s->code) {
		rc = usage_error("synth", "gdb needs -o CORE and --code PROG");
		goto out;
	}
	if (!mem || !p) {
		rc = fail("synth", "out of memory");
		goto out;
	}
	if ((rc = load_code(s->code, mem)))
		goto out;
	/* PML4[511] -> PDPT; PDPT[510] -> PD; PD[8] -> PT (the code, the
	 * data page), PD[9]: the 2 MiB page; PML5[511] -> PML4 */
	put64(mem, 0x1000 + 511 * 8, 0x2000 | 3);
	put64(mem, 0x2000 + 510 * 8, 0x3000 | 3);
	put64(mem, 0x3000 + 8 * 8, 0x4000 | 3);
	put64(mem, 0x3000 + 9 * 8, G_BIG | 0x83);
	for (i = 0; i < G_CODE_MAX / 4096; i++)
		put64(mem, 0x4000 + i * 8, (G_CODE + i * 4096) | 1);
	put64(mem, 0x4000 + 16 * 8, 0x7000 | 3);
	put64(mem, 0x6000 + 511 * 8, 0x1000 | 3);
	for (i = 0; i < 4; i++) {
		put64(mem, 0x7000 + i * 8, 0x1111111111111111ull * (i + 1));
		put64(mem, G_BIG + 0x1000 + i * 8, 0xfeedface00000000ull + i);
	}
	memset(c, 0, sizeof(c));
	for (k = 0; k < 2; k++) {
		c[k].id = k + 1;
		c[k].has_sys = c[k].has_kgs = 1;
		for (i = 0; i < 16; i++)
			c[k].gpr[i] = 0x100 * (k + 1) + i;
		c[k].gpr[6] = 0;				/* rbp */
		c[k].gpr[7] = HVT_SYNTH_TEXT + 0x10800;	/* rsp, in the data page */
		c[k].rflags = 0x246;
		c[k].seg[0] = 0x10, c[k].seg[1] = 0x18;
		c[k].cs_flags = 1u << 21;			/* L: 64-bit code */
		c[k].gs_base = 0xffff888000000000ull + 0x1000 * k;
		c[k].kernel_gs_base = 0x7f0000000000ull + k;
		c[k].cr[0] = 0x80050033;			/* PG WP NE ET MP PE */
		c[k].cr[2] = 0xdead0000ull + k;
		c[k].cr[3] = k ? 0x6000 : 0x1000;
		c[k].cr[4] = k ? 0x10a0 : 0xa0;			/* PAE PGE (LA57) */
	}
	c[0].rip = s->rip ? s->rip : s->nr_branch ? s->branch[s->nr_branch - 1].to : HVT_SYNTH_TEXT;
	c[1].rip = HVT_SYNTH_TEXT;
	notes = hvt_cpu_notes(c, 2, &notes_len);
	if (!notes || hvt_chan_layout(mem + G_CHAN, size, rs, 2, 2, 1000000000, &err)) {
		rc = fail("synth", "%s", notes ? err.msg : "out of memory");
		goto out;
	}
	hvt_producer_init(p, mem + G_CHAN);
	for (k = 0; k < s->nr_branch; k++) {
		s->branch[k].info = HVTRACE_INFO_MAKE(0, 0);
		hvt_producer_put(p, 0, &s->branch[k]);
	}
	hvt_chan_set_state(mem + G_CHAN, HVTRACE_STATE_FROZEN, HVTRACE_FREEZE_HYPERCALL, 5000);
	((struct hvtrace_chan *)(mem + G_CHAN))->phys_base = G_CHAN;
	((struct hvtrace_chan *)(mem + G_CHAN))->where = HVTRACE_CHAN_RESERVED_RAM;
	core = hvt_elf_core_notes(mem, seg, 2, notes, notes_len, &core_len);
	rc = core ? write_file(s->out, core, core_len) : fail("synth", "out of memory");
out:
	free(core);
	free(notes);
	free(mem);
	free(p);
	return rc;
}

int cmd_synth(int argc, char **argv)
{
	struct synth s = { 0 };
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		fputs(synth_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	rc = get_opts(&s, argc - 1, argv + 1);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!strcmp(argv[1], "chan"))
		return synth_chan(&s);
	if (!strcmp(argv[1], "produce"))
		return synth_produce(&s);
	if (!strcmp(argv[1], "state"))
		return synth_state(&s);
	if (!strcmp(argv[1], "file"))
		return synth_file(&s);
	if (!strcmp(argv[1], "sysmap"))
		return synth_sysmap(&s);
	if (!strcmp(argv[1], "gdb"))
		return synth_gdb(&s);
	return usage_error("synth", "unknown synth command '%s'", argv[1]);
}
