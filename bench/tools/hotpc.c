/*
 * hotpc: a QEMU TCG plugin that says where a vCPU's instructions go, by
 * instruction address: every executed translation block adds its
 * instructions to each of its instructions' counters, and at exit the
 * counters of the addresses in [lo, hi) are written to a file, one line
 * per address: "ADDR COUNT". Under TCG the hypervisor's time is about
 * proportional to the instructions it executes (plus the helpers some
 * instructions call: PUSHF/POPF, RDTSC, string ops), so this is the
 * profile of hvtrace's own code that docs/benchmarks.md's per-bucket
 * times cannot give: which function, which line. bench/hotpc.sh builds
 * it, runs a workload with it and symbolizes the result against
 * build/hvtrace.so.
 * Usage: -plugin hotpc.so,lo=0xADDR,hi=0xADDR,out=FILE[,every=SECONDS]
 * every=N also writes the file every N seconds (from a thread: for runs
 * that end with QEMU killed, where no exit callback runs).
 * Needs QEMU's plugin API version 1 (7.2); the declarations below are the
 * API's, as in branchcount.c (Debian ships no header for it).
 */
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
					      uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* one block as translated: its executions (counted inline) and its
 * instructions' addresses; a block translated again gets a new entry */
struct block {
	uint64_t execs;
	unsigned n;
	uint64_t *pc;
	struct block *next;
};

static uint64_t lo, hi = ~0ull;
static const char *out = "hotpc.txt";
static struct block *volatile blocks;
static unsigned every;

static void translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (!n)
		return;
	uint64_t first = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
	if (first < lo || first >= hi)
		return;
	struct block *b = calloc(1, sizeof(*b));
	b->pc = calloc(n, sizeof(*b->pc));
	if (!b->pc)
		return;
	b->n = (unsigned)n;
	for (size_t i = 0; i < n; i++)
		b->pc[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	b->next = blocks;	/* translation runs under QEMU's lock; the block is whole before */
	__atomic_store_n(&blocks, b, __ATOMIC_RELEASE);	/* the writer thread can see it */
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
}

static int by_pc(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void dump(void)
{
	size_t n = 0, k = 0;
	for (struct block *b = blocks; b; b = b->next)
		n += b->n;
	uint64_t *v = calloc(n ? 2 * n : 2, sizeof(*v));
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	FILE *f = fopen(tmp, "w");
	if (!v || !f) {
		fprintf(stderr, "hotpc: cannot write %s\n", tmp);
		free(v);
		return;
	}
	for (struct block *b = blocks; b && k < n; b = b->next)
		for (unsigned i = 0; i < b->n && k < n; i++, k++) {
			v[2 * k] = b->pc[i];
			v[2 * k + 1] = b->execs;
		}
	qsort(v, n, 2 * sizeof(*v), by_pc);
	for (size_t i = 0; i < n;) {
		uint64_t pc = v[2 * i], sum = 0;
		for (; i < n && v[2 * i] == pc; i++)
			sum += v[2 * i + 1];
		if (sum)
			fprintf(f, "%" PRIx64 " %" PRIu64 "\n", pc, sum);
	}
	fclose(f);
	free(v);
	rename(tmp, out);	/* whole files only */
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	dump();
}

static void *writer(void *arg)
{
	for (;;) {
		sleep(every);
		dump();
	}
	return NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
							       int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "lo=", 3))
			lo = strtoull(argv[i] + 3, NULL, 0);
		else if (!strncmp(argv[i], "hi=", 3))
			hi = strtoull(argv[i] + 3, NULL, 0);
		else if (!strncmp(argv[i], "out=", 4))
			out = argv[i] + 4;
		else if (!strncmp(argv[i], "every=", 6))
			every = (unsigned)strtoul(argv[i] + 6, NULL, 0);
		else {
			fprintf(stderr, "hotpc: unknown argument '%s' (lo=ADDR, hi=ADDR, out=FILE, every=SECONDS)\n", argv[i]);
			return 1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	pthread_t t;
	if (every && pthread_create(&t, NULL, writer, NULL)) {
		fprintf(stderr, "hotpc: no writer thread\n");
		return 1;
	}
	return 0;
}
