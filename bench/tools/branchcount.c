/*
 * branchcount: a QEMU TCG plugin that counts what a BTS would record on an
 * untraced run, for docs/benchmarks.md's "how many branches is a whole
 * boot": control transfers (every executed translation block that does not
 * start where the previous one ended: taken branches, interrupts,
 * exceptions; not a REP string instruction's next iteration) and
 * instructions, on vCPU 0, from the first block at `start` (or from reset
 * with start=0) on. At each `at` address (up to 8) reached the first time,
 * and at exit, it prints one line to stderr:
 *   branchcount: at ADDR: TRANSFERS transfers, INSNS instructions
 * and the 1 MiB regions (shift=N: 2^N bytes) the most transfers went to.
 * With log=FILE it also writes every counted transfer to FILE as a BTS
 * would record it, two little-endian 64-bit words (from: the last
 * instruction of the previous block; to: this block's first): the anchor
 * a QEMU user tracing every branch would pick (bench/boot-interp.sh). The
 * lines carry the host's monotonic time (t=SECONDS) so a bench can time
 * the span between two of them.
 * Usage: -plugin branchcount.so,start=0xADDR,at=0xADDR,at=0xADDR[,shift=N][,log=FILE]
 * Built by bench/boot-branches.sh; needs QEMU's plugin API version 1 (7.2).
 * The declarations below are the API's, written from its documentation
 * (QEMU's include/qemu/qemu-plugin.h; Debian ships no header for it).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct block {
	uint64_t start, end, last;	/* first byte, one past the last, last insn */
	unsigned insns;
	bool last_rep_string;		/* the last insn is a REP/REPNE string op */
};

static uint64_t start_addr, at_addr[8];
static unsigned region_shift = 20;	/* shift=N: regions of 2^N bytes */
static bool at_done[8];
static int n_at;
static bool counting;
static uint64_t transfers, insns, prev_end, prev_last;
static bool prev_rep, have_prev;
static FILE *logf;		/* log=FILE: every transfer's from/to */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* transfers by the 1 MiB region they land in, since the last line */
#define REGIONS 4096
static struct { uint64_t region, n; } by_region[REGIONS];

static void count_region(uint64_t to)
{
	uint64_t r = to >> region_shift;
	unsigned h = (unsigned)((r * 0x9e3779b97f4a7c15ull) >> 52) % REGIONS;
	for (unsigned i = 0; i < REGIONS; i++, h = (h + 1) % REGIONS) {
		if (by_region[h].n && by_region[h].region != r)
			continue;
		by_region[h].region = r;
		by_region[h].n++;
		return;
	}
}

/* the regions with the most transfers since the last line, then forgets them */
static void report_regions(void)
{
	for (int k = 0; k < 6; k++) {
		unsigned best = 0;
		for (unsigned i = 1; i < REGIONS; i++)
			if (by_region[i].n > by_region[best].n)
				best = i;
		if (!by_region[best].n)
			break;
		fprintf(stderr, "branchcount:   %" PRIu64 " to 0x%" PRIx64 "..+%uK\n", by_region[best].n,
			by_region[best].region << region_shift, (1u << region_shift) / 1024);
		by_region[best].n = 0;
	}
	memset(by_region, 0, sizeof(by_region));
}

static bool rep_string(const uint8_t *b, size_t n)
{
	bool rep = false;
	size_t i = 0;
	for (; i < n; i++) {
		uint8_t c = b[i];
		if (c == 0xf2 || c == 0xf3)
			rep = true;
		else if (c == 0x66 || c == 0x67 || c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 ||
			 c == 0x64 || c == 0x65 || (c & 0xf0) == 0x40)
			continue;
		else
			break;
	}
	if (!rep || i >= n)
		return false;
	uint8_t op = b[i];
	return (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) || (op >= 0x6c && op <= 0x6f);
}

static void report(const char *what)
{
	if (logf)
		fflush(logf);	/* the span a bench times includes the writing */
	fprintf(stderr, "branchcount: %s: %" PRIu64 " transfers, %" PRIu64 " instructions, t=%.3f\n", what, transfers,
		insns, now());
	report_regions();
}

static void exec_block(unsigned int vcpu, void *udata)
{
	const struct block *b = udata;
	if (vcpu != 0)
		return;
	if (!counting && (start_addr == 0 || b->start == start_addr)) {
		counting = true;
		have_prev = false;
		fprintf(stderr, "branchcount: counting from 0x%" PRIx64 ", t=%.3f\n", b->start, now());
	}
	if (!counting)
		return;
	/* a REP string op's next iteration starts at that same insn */
	if (have_prev && b->start != prev_end && !(prev_rep && b->start == prev_last)) {
		transfers++;
		count_region(b->start);
		if (logf) {
			uint64_t rec[2] = { prev_last, b->start };
			fwrite(rec, sizeof(rec), 1, logf);
		}
	}
	for (int i = 0; i < n_at; i++) {
		if (!at_done[i] && b->start == at_addr[i]) {
			char what[40];
			at_done[i] = true;
			snprintf(what, sizeof(what), "at 0x%" PRIx64, at_addr[i]);
			report(what);
		}
	}
	insns += b->insns;
	prev_end = b->end;
	prev_last = b->last;
	prev_rep = b->last_rep_string;
	have_prev = true;
}

static void translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (!n)
		return;
	struct block *b = calloc(1, sizeof(*b));	/* lives as long as QEMU may run the TB */
	struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
	b->start = qemu_plugin_tb_vaddr(tb);
	b->last = qemu_plugin_insn_vaddr(last);
	b->end = b->last + qemu_plugin_insn_size(last);
	b->insns = (unsigned)n;
	b->last_rep_string = rep_string(qemu_plugin_insn_data(last), qemu_plugin_insn_size(last));
	qemu_plugin_register_vcpu_tb_exec_cb(tb, exec_block, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	if (logf)
		fflush(logf);
	report("exit");
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
							       int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "start=", 6))
			start_addr = strtoull(argv[i] + 6, NULL, 0);
		else if (!strncmp(argv[i], "shift=", 6))
			region_shift = (unsigned)strtoul(argv[i] + 6, NULL, 0);
		else if (!strncmp(argv[i], "log=", 4)) {
			logf = fopen(argv[i] + 4, "wb");
			if (!logf || setvbuf(logf, NULL, _IOFBF, 1 << 22)) {
				fprintf(stderr, "branchcount: cannot write %s\n", argv[i] + 4);
				return 1;
			}
		} else if (!strncmp(argv[i], "at=", 3) && n_at < 8)
			at_addr[n_at++] = strtoull(argv[i] + 3, NULL, 0);
		else {
			fprintf(stderr, "branchcount: unknown argument '%s' (start=ADDR, at=ADDR, shift=N, log=FILE)\n", argv[i]);
			return 1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
