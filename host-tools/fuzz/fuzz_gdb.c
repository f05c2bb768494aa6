/* SPDX-License-Identifier: MIT */
/* libFuzzer: the GDB server's packet framing and every packet handler,
 * over a small dump made once (two vCPUs, 4-level page tables, a few
 * branch records on vCPU 0), and, when the input's first byte is odd,
 * over a live target played here (register and memory writes, step,
 * continue and GDB's interrupt, the branch trace read at each stop). Replies must stay within the framed
 * size; the live target's callbacks must only be asked for what exists. */
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

#define MEM 0x10000
#define TEXT 0xffffffff81000000ull

static struct hvt_dump dump;
static struct hvt_vcpu_regs cpu[2];
static struct hvtrace_rec recs[4];
static struct hvt_gdb_thread th[2];
static struct hvt_gdb_target target;
static uint8_t mem[MEM];

/* the live target: the two vCPUs' registers, mem identity-mapped */
static struct hvt_vcpu_regs live_cpu[2];
static struct hvt_gdb_thread live_th[2];
static struct hvt_gdb_target live_target;
static int live_running;

static int l_stop(void *ctx) { (void)ctx; live_running = 0; return 0; }
static int l_resume(void *ctx) { (void)ctx; live_running = 1; return 0; }

static int l_step(void *ctx, size_t t)
{
	(void)ctx;
	if (t >= 2 || live_running)
		abort();
	live_cpu[t].rip++;
	return 0;
}

static int64_t l_read(void *ctx, size_t t, uint64_t la, void *buf, uint64_t len)
{
	(void)ctx;
	if (t >= 2 || live_running || !len || len > HVT_GDB_PKT_MAX)
		abort();
	if (la >= MEM)
		return -1;
	if (len > MEM - la)
		len = MEM - la;
	memcpy(buf, mem + la, len);
	return (int64_t)len;
}

static int l_write(void *ctx, size_t t, uint64_t la, const void *buf, uint64_t len)
{
	(void)ctx;
	if (t >= 2 || live_running || !len || len > HVT_GDB_PKT_MAX / 2)
		abort();
	if (la >= MEM || len > MEM - la)
		return -1;
	memcpy(mem + la, buf, len);
	return 0;
}

static int l_set_regs(void *ctx, size_t t, const struct hvt_vcpu_regs *r)
{
	(void)ctx;
	if (t >= 2 || live_running)
		abort();
	live_cpu[t].rip = r->rip;	/* the rest as the hypervisor would take it */
	live_cpu[t].rflags = r->rflags;
	memcpy(live_cpu[t].gpr, r->gpr, sizeof(r->gpr));
	return 0;
}

/* the hypervisor's slots as the server uses them: one set per slot at a
 * time, a clear only of a set one, only while stopped */
static unsigned l_slots;

static int l_set_hw(void *ctx, unsigned slot, int on, unsigned rw, unsigned len, uint64_t addr, size_t th)
{
	(void)ctx;
	if (live_running || slot >= HVT_GDB_ALL_SLOTS || rw == 2 || rw > 3 || len > 3 || (!rw && len) ||
	    (slot >= HVT_GDB_SLOTS && rw) || th >= 2)
		abort();
	if (!!on == !!(l_slots & (1u << slot)))
		abort();	/* set twice, or cleared when not set */
	if (on && (addr & ((len == 2 ? 8 : len == 3 ? 4 : len + 1) - 1)))
		abort();
	l_slots ^= 1u << slot;
	return 0;
}

static uint32_t l_hits(void *ctx, size_t t)
{
	(void)ctx;
	if (t >= 2)
		abort();
	return live_cpu[t].rip & 0xf;	/* any slots, set or not */
}

static int l_read_phys(void *ctx, size_t t, uint64_t pa, void *buf, uint64_t len)
{
	(void)ctx;
	if (t >= 2 || live_running || !len || len > 1024)
		abort();
	if (pa >= MEM || len > MEM - pa)
		return -1;
	memcpy(buf, mem + pa, len);
	return 0;
}

static int l_translate(void *ctx, size_t t, uint64_t la, uint64_t *pa)
{
	(void)ctx;
	if (t >= 2 || live_running)
		abort();
	if (la >= MEM)
		return -1;
	*pa = la;
	return 0;
}

/* the flight recorder read while stopped: vCPU 0's records */
static int l_history(void *ctx, size_t t)
{
	(void)ctx;
	if (t >= 2 || live_running)
		abort();
	live_th[t].recs = t ? NULL : recs;
	live_th[t].nr = t ? 0 : 4;
	return 0;
}

static const struct hvt_gdb_live live = { .stop = l_stop, .resume = l_resume, .step = l_step,
					  .read = l_read, .write = l_write, .set_regs = l_set_regs,
					  .set_hw = l_set_hw, .hits = l_hits, .read_phys = l_read_phys,
					  .translate = l_translate, .history = l_history };

static void put64(uint8_t *m, uint64_t pa, uint64_t v)
{
	memcpy(m + pa, &v, 8);
}

static int setup(void)
{
	struct hvt_elf_seg seg = { 0, MEM };
	struct hvt_err err;
	size_t notes_len, len;
	void *notes, *core;
	unsigned i;

	put64(mem, 0x1000 + 511 * 8, 0x2000 | 3);
	put64(mem, 0x2000 + 510 * 8, 0x3000 | 3);
	put64(mem, 0x3000 + 8 * 8, 0x4000 | 3);
	put64(mem, 0x3000 + 9 * 8, 0x200000 | 0x83);	/* a 2 MiB page the dump lacks */
	put64(mem, 0x4000, 0x8000 | 3);
	memset(mem + 0x8000, 0x90, 0x1000);		/* nops */
	for (i = 0; i < 2; i++) {
		cpu[i] = (struct hvt_vcpu_regs){ .id = i + 1, .has_sys = 1, .rip = TEXT + 0x10 * i,
						 .cs_flags = 1u << 21, .cr = { 0x80050033, 0, 0, 0x1000, 0xa0 } };
		th[i].regs = &cpu[i];
	}
	for (i = 0; i < 4; i++)
		recs[i] = (struct hvtrace_rec){ .tsc = i, .from = TEXT + 0x20 * i + 0x1f, .to = TEXT + 0x20 * (i + 1),
						.kind = HVTRACE_REC_BRANCH, .aux = HVTRACE_BR_JMP };
	th[0].recs = recs;
	th[0].nr = 4;
	notes = hvt_cpu_notes(cpu, 2, &notes_len);
	core = notes ? hvt_elf_core_notes(mem, &seg, 1, notes, notes_len, &len) : NULL;
	free(notes);
	if (!core || hvt_dump_open_any_mem(&dump, core, len, &err))
		abort();
	target = (struct hvt_gdb_target){ .dump = &dump, .th = th, .nth = 2, .bts_size = 4096 };
	for (i = 0; i < 2; i++) {
		live_cpu[i] = cpu[i];
		live_cpu[i].has_apic = 1;
		live_cpu[i].apic_id = i;
		live_th[i].regs = &live_cpu[i];
	}
	live_target = (struct hvt_gdb_target){ .th = live_th, .nth = 2, .live = &live, .bts_size = 4096 };
	return 0;
}

static int sink(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	if (len > 2 * (HVT_GDB_PKT_MAX + 64) + 4)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static int ready;
	struct hvt_gdb *g;

	if (!ready)
		ready = !setup();
	th[0].bts = th[1].bts = th[0].sent = th[1].sent = 0;
	live_th[0].bts = live_th[1].bts = live_th[0].sent = live_th[1].sent = 0;
	live_running = 0;
	l_slots = 0;
	g = hvt_gdb_new(len && (data[0] & 1) ? &live_target : &target, sink, NULL);
	if (!g)
		return 0;
	/* in two pieces: a packet may straddle reads */
	if (hvt_gdb_input(g, data, len / 2) == 0 && hvt_gdb_stopped(g, len & 1) == 0)
		hvt_gdb_input(g, data + len / 2, len - len / 2);	/* between: maybe a breakpoint's stop */
	hvt_gdb_free(g);
	return 0;
}
