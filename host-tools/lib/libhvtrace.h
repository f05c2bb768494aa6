/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: the host side of the export ABI (include/hvtrace/record.h).
 * Opens a channel (an ivshmem backing file, or a guest memory dump), reads
 * its rings, writes and reads trace files, symbolizes addresses. Plain C11
 * on a POSIX host; every byte read from a channel, a dump or a file is
 * treated as hostile and checked before use.
 *
 * Errors: functions that can fail take a struct hvt_err * and return a
 * negative value (or NULL); err->msg then names the field and its value.
 */
#ifndef LIBHVTRACE_H
#define LIBHVTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hvtrace/abi.h"

struct hvt_err {
	char msg[256];
};

void hvt_seterr(struct hvt_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A head (or lost count) beyond this is garbage: 2^56 records take more
 * than two years at a billion records a second. */
#define HVT_COUNT_MAX (1ull << 56)

/* ---------------------------------------------------------------- */
/* Names of the ABI's enums ("branch", "call", "start", ...); NULL when
 * the value is not one of them. */
const char *hvt_kind_name(unsigned kind);
const char *hvt_branch_type_name(unsigned type);
const char *hvt_marker_name(unsigned marker);
const char *hvt_state_name(unsigned state);
const char *hvt_freeze_name(unsigned freeze);
const char *hvt_consumer_name(unsigned consumer);
const char *hvt_mode_name(unsigned mode);
const char *hvt_cpl_filter_name(unsigned filter);
const char *hvt_where_name(unsigned where);

/* A record's fields against record.h: kind in range, branch type known for
 * BRANCH/FAR, marker code known. 0 or -1. */
int hvt_rec_check(const struct hvtrace_rec *r, struct hvt_err *err);

/* ---------------------------------------------------------------- */
/* The channel. */

/* What a validated header promised about one ring: copied once, so a
 * later change in shared memory cannot move a ring under the reader. */
struct hvt_ring_desc {
	uint32_t vcpu;
	uint16_t consumer;
	uint16_t mode;
	uint64_t offset;
	uint64_t capacity;
	uint32_t cpl_filter;
	uint32_t wait_us;
};

enum hvt_source {
	HVT_SRC_MEM = 1,	/* a caller's buffer */
	HVT_SRC_SHM = 2,	/* an ivshmem backing file, mapped shared */
	HVT_SRC_DUMP = 3,	/* a copy out of a guest memory dump */
};

struct hvt_chan {
	struct hvtrace_chan *hdr;	/* the live header (shared memory) */
	uint8_t *base;			/* == (uint8_t *)hdr */
	uint64_t avail;			/* bytes readable at base */
	uint64_t size;			/* the header's size, validated */
	uint32_t nr_rings;
	uint64_t tsc_hz;
	uint32_t nr_vcpus;
	struct hvt_ring_desc ring[HVTRACE_CHAN_MAX_RINGS];
	enum hvt_source source;
	uint64_t found_at;		/* dumps: guest-physical address of the header */
	const char *dump_format;	/* dumps: "raw" or "elf" */
	size_t dump_headers;		/* dumps: valid headers the dump holds (>= 1) */
	/* private */
	void *map;
	size_t map_len;
	int owns_copy;
};

/* Checks a header (and every ring descriptor) at base, avail bytes long.
 * Fills ch (pointing into base) on success. */
int hvt_chan_validate(struct hvt_chan *ch, void *base, uint64_t avail, struct hvt_err *err);

/* Attach to an ivshmem backing file, mapped shared read/write. */
int hvt_chan_open_shm(struct hvt_chan *ch, const char *path, struct hvt_err *err);
void hvt_chan_close(struct hvt_chan *ch);

/* A guest memory dump: a raw pmemsave image or an ELF core from
 * dump-guest-memory. The guest can write a header that validates into its
 * own RAM, and a dump does not say where the hypervisor's memory is, so
 * opening one finds every page holding a valid channel header (whose
 * whole size the dump holds): the candidates. Opening fails when there is
 * none; with more than one the caller must choose (a forgery can sit
 * below the real header as well as above it). Linear in the dump's size:
 * at most 4096 ELF segments, not overlapping. */
struct hvt_dump_cand {
	uint64_t pa;		/* guest-physical address of the header */
	uint64_t size;		/* the header's fields, as validated */
	uint64_t phys_base;	/* == pa in a header the hypervisor wrote */
	uint32_t abi_version, nr_rings, nr_vcpus, state, where;
};

struct hvt_dump_region;

struct hvt_dump {
	const char *format;		/* "raw" or "elf" */
	struct hvt_dump_cand *cand;	/* by address */
	size_t nr_cand;
	struct hvt_err no_chan;		/* nr_cand 0 (hvt_dump_open_any): why */
	/* private */
	struct hvt_dump_region *region;	/* by address */
	size_t nr_region;
	const void *buf;		/* the whole dump */
	size_t len;
	void *map;
	size_t map_len;
};

int hvt_dump_open(struct hvt_dump *d, const char *path, struct hvt_err *err);
int hvt_dump_open_mem(struct hvt_dump *d, const void *buf, size_t len, struct hvt_err *err);
/* The same, but a dump without a valid channel header opens too (nr_cand
 * 0, the reason in no_chan): its memory and CPUs are still worth reading. */
int hvt_dump_open_any(struct hvt_dump *d, const char *path, struct hvt_err *err);
int hvt_dump_open_any_mem(struct hvt_dump *d, const void *buf, size_t len, struct hvt_err *err);
/* A raw image of one range of guest-physical memory from base (QEMU's
 * `pmemsave ADDR SIZE FILE`, Bochs's debugger's `writemem FILE ADDR SIZE`
 * where the linear address is the physical one): file offset + base ==
 * guest-physical address. An ELF core is refused (its segments say where
 * its memory is); a range that wraps past 2^64 too. Else as hvt_dump_open. */
int hvt_dump_open_raw(struct hvt_dump *d, const char *path, uint64_t base, struct hvt_err *err);
int hvt_dump_open_raw_mem(struct hvt_dump *d, const void *buf, size_t len, uint64_t base, struct hvt_err *err);
/* Copies [pa, pa + len) of guest-physical memory; -1 when the dump does
 * not hold all of it. */
int hvt_dump_read_phys(const struct hvt_dump *d, uint64_t pa, void *out, uint64_t len);
/* Copies out the channel whose header is at guest-physical pa (one of the
 * candidates) and validates the copy; ch stays valid after hvt_dump_close. */
int hvt_dump_chan(const struct hvt_dump *d, uint64_t pa, struct hvt_chan *ch, struct hvt_err *err);
void hvt_dump_close(struct hvt_dump *d);

/* The CPUs of an ELF core from dump-guest-memory (guest.c): registers
 * from each CPU's NT_PRSTATUS note and, when QEMU wrote it, its "QEMU"
 * note (control registers, segment flags). Their order is QEMU's CPU
 * order. */
struct hvt_vcpu_regs {
	uint32_t id;		/* NT_PRSTATUS pr_pid: QEMU's CPU index + 1 */
	int has_sys;		/* the QEMU note: cr[], cs_flags */
	int has_kgs;		/* ... and kernel_gs_base (newer QEMUs) */
	uint64_t gpr[16];	/* GDB's order: rax rbx rcx rdx rsi rdi rbp rsp r8-r15 */
	uint64_t rip, rflags;
	uint32_t seg[6];	/* selectors: cs ss ds es fs gs */
	uint32_t cs_flags;	/* the CS descriptor's high dword (L: bit 21) */
	uint64_t fs_base, gs_base, kernel_gs_base;
	uint64_t cr[5];		/* CR0-CR4 */
	uint64_t efer;		/* live only (has_efer) */
	int has_efer;
	int has_apic;		/* live: apic_id is the processor's local APIC ID */
	uint32_t apic_id;
};
/* malloc'd array *out of *n CPUs; -1 with err for a raw image or a core
 * without CPU notes. */
int hvt_dump_cpus(const struct hvt_dump *d, struct hvt_vcpu_regs **out, size_t *n, struct hvt_err *err);
/* The notes QEMU would write for these CPUs (tests): malloc'd, *len bytes. */
void *hvt_cpu_notes(const struct hvt_vcpu_regs *c, unsigned n, size_t *len);
/* A linear address of CPU c through its page tables in the dump (32-bit,
 * PAE, 4- and 5-level paging, large pages; physical without paging):
 * *pa, and *left bytes to the end of its page. -1: not mapped, or a table
 * the dump lacks. */
int hvt_vcpu_translate(const struct hvt_dump *d, const struct hvt_vcpu_regs *c, uint64_t la,
		       uint64_t *pa, uint64_t *left);
/* Reads len bytes at linear la: how many could be read from the start
 * (up to the first unmapped page), or -1 when not even the first. */
int64_t hvt_vcpu_read(const struct hvt_dump *d, const struct hvt_vcpu_regs *c, uint64_t la, void *out,
		      uint64_t len);

/* The live state fields (volatile reads). */
uint32_t hvt_chan_state(const struct hvt_chan *ch);
uint32_t hvt_chan_freeze(const struct hvt_chan *ch);

/* One ring's counters, read once and checked: head and lost below
 * HVT_COUNT_MAX; for LOSSLESS rings tail <= head <= tail + capacity. */
struct hvt_ring_counters {
	uint64_t head, lost, filtered, waits, tail, reader;
};
int hvt_ring_counters(const struct hvt_chan *ch, unsigned ring, struct hvt_ring_counters *c,
		      struct hvt_err *err);
/* Records a ring holds now: min(head, capacity) (OVERWRITE), head - tail (LOSSLESS). */
uint64_t hvt_ring_fill(const struct hvt_chan *ch, unsigned ring, const struct hvt_ring_counters *c);

/* Snapshot of an OVERWRITE ring: copies its newest min(head, capacity)
 * records into out (room for capacity records), oldest first, re-reads
 * head and drops the ones the producer has lapped meanwhile. `live`: a
 * producer may be writing (then the oldest slot of a full ring counts as
 * torn, it may be the one being overwritten). Returns the number kept. */
int64_t hvt_ring_snapshot(const struct hvt_chan *ch, unsigned ring, int live,
			  struct hvtrace_rec *out, uint64_t *torn, struct hvt_err *err);

/* LOSSLESS rings. attach sets `reader` to pid (refused while another live
 * process is attached); detach clears it. read copies up to max records
 * from tail towards head without consuming them; consume advances tail by
 * n (release store); drain is both. */
int hvt_ring_attach(struct hvt_chan *ch, unsigned ring, uint64_t pid, struct hvt_err *err);
void hvt_ring_detach(struct hvt_chan *ch, unsigned ring, uint64_t pid);
int64_t hvt_ring_read(const struct hvt_chan *ch, unsigned ring, struct hvtrace_rec *out,
		      uint64_t max, struct hvt_err *err);
void hvt_ring_consume(struct hvt_chan *ch, unsigned ring, uint64_t n);
int64_t hvt_ring_drain(struct hvt_chan *ch, unsigned ring, struct hvtrace_rec *out, uint64_t max,
		       struct hvt_err *err);

/* Drops the records hvt_rec_check refuses, keeping the order; returns
 * how many remain (*bad += how many went). */
uint64_t hvt_recs_filter(struct hvtrace_rec *r, uint64_t n, uint64_t *bad);

/* Stable merge of records by TSC (ties keep their order). */
int hvt_recs_sort_tsc(struct hvtrace_rec *r, uint64_t n);

/* ---------------------------------------------------------------- */
/* A GDB remote-serial-protocol server over a stopped, read-only target
 * (gdbrsp.c): a thread per vCPU with its registers, memory by its linear
 * addresses, its flight recorder as GDB's branch trace (btrace, BTS
 * format). The connection is the caller's: it feeds the bytes it receives
 * and gets the bytes to send through a callback. */
#define HVT_GDB_PKT_MAX 0x4000	/* PacketSize: the longest packet taken or sent */

struct hvt_gdb_thread {
	const struct hvt_vcpu_regs *regs;
	const struct hvtrace_rec *recs;	/* its flight recorder, oldest first (may be 0) */
	uint64_t nr;
	/* private */
	char *btrace;			/* its btrace XML, made on first read (live: since
					 * the last stop) */
	size_t btrace_len;
	int bts;			/* GDB turned branch tracing on (Qbtrace:bts) */
	int sent;			/* since: 1 the trace sent, 2 then asked again */
};

struct hvt_gdb_target {
	const struct hvt_dump *dump;	/* memory */
	struct hvt_gdb_thread *th;
	size_t nth;			/* >= 1 */
	size_t first;			/* the thread selected at first (index) */
	int trace_live;			/* the recorder still traced when the dump was taken
					 * (live: when the guest stopped): the newest block
					 * runs to the vCPU's RIP */
	uint64_t bts_size;		/* bytes of a flight ring (btrace-conf) */
	const char *exec_file;		/* a host path GDB loads symbols from
					 * (qXfer:exec-file:read), or NULL */
	const struct hvt_gdb_live *live;	/* a running guest; NULL: the dump, read-only */
};

/* A running guest (hvtrace gdb --shm): what the server asks of it. Each
 * returns 0 (or bytes, read) or -1; stop and step refresh th[].regs. */
struct hvt_gdb_live {
	void *ctx;
	int (*stop)(void *ctx);				/* every vCPU held */
	int (*resume)(void *ctx);			/* every vCPU goes on */
	int (*step)(void *ctx, size_t th);		/* one instruction, the others held */
	int64_t (*read)(void *ctx, size_t th, uint64_t la, void *buf, uint64_t len);
	int (*write)(void *ctx, size_t th, uint64_t la, const void *buf, uint64_t len);
	int (*set_regs)(void *ctx, size_t th, const struct hvt_vcpu_regs *r);
	/* the hypervisor's slot (0..HVT_GDB_SLOTS-1, a debug register): rw 0 execute,
	 * 1 write, 3 read or write; len as DR7's LEN (0: 1 byte, 1: 2, 3: 4, 2: 8);
	 * or a page slot (HVT_GDB_SLOTS..HVT_GDB_ALL_SLOTS-1): rw 0 and len 0, or
	 * rw 1 and len the bytes written there (within a page) to watch, addr
	 * translated through thread th's page tables; on 0 clears it */
	int (*set_hw)(void *ctx, unsigned slot, int on, unsigned rw, unsigned len, uint64_t addr, size_t th);
	uint32_t (*hits)(void *ctx, size_t th);		/* slots that fired at th's stop */
	/* guest-physical memory through thread th's request (monitor phys) */
	int (*read_phys)(void *ctx, size_t th, uint64_t pa, void *buf, uint64_t len);
	/* thread th's linear la through its page tables: 0, or -1 not mapped (monitor translate) */
	int (*translate)(void *ctx, size_t th, uint64_t la, uint64_t *pa);
	/* thread th's flight-recorder records read anew into th[th].recs/nr
	 * (and trace_live set), while every vCPU is stopped: 0 or -1. NULL:
	 * no branch history offered (record btrace) */
	int (*history)(void *ctx, size_t th);
};
#define HVT_GDB_SLOTS 4	/* breakpoints and watchpoints at once: the debug registers */
#define HVT_GDB_ALL_SLOTS 32	/* and instruction breakpoints beyond them: page slots (ABI 1.11) */

struct hvt_gdb;
/* send(ctx, buf, len): 0, or -1 when the connection is gone. */
typedef int (*hvt_gdb_send_fn)(void *ctx, const void *buf, size_t len);
struct hvt_gdb *hvt_gdb_new(struct hvt_gdb_target *t, hvt_gdb_send_fn send, void *ctx);
/* Takes received bytes: 0, 1 once the client detached or killed (the
 * session is over), -1 when send failed. */
int hvt_gdb_input(struct hvt_gdb *g, const void *buf, size_t len);
/* Live: GDB continued and waits for a stop reply. */
int hvt_gdb_running(const struct hvt_gdb *g);
/* Live: the guest stopped by itself (thread th reached the breakpoint):
 * stops every vCPU, then the stop reply. 0, or -1 when send failed. */
int hvt_gdb_stopped(struct hvt_gdb *g, size_t th);
/* Packets handled, and of them refused as malformed (for the tests). */
void hvt_gdb_stats(const struct hvt_gdb *g, uint64_t *packets, uint64_t *malformed);
void hvt_gdb_free(struct hvt_gdb *g);

/* ---------------------------------------------------------------- */
/* Host -> hypervisor control (record.h, docs/channel.md "Control"). */

const char *hvt_ctl_mode_name(unsigned mode);
/* "ok", "EINVAL (...)": a hypervisor result; NULL for a code the ABI does not name. */
const char *hvt_result_name(int64_t result);

struct hvt_ctl_req {
	uint32_t op;			/* enum hvtrace_trace_op */
	uint64_t arg0, arg1;
	struct hvtrace_filter filter;	/* HVTRACE_TRACE_FILTER */
};
/* Sends one request through a shared-memory channel and waits up to
 * timeout_ms for the answer: 0 with *result (0 or -HVTRACE_E*) and the
 * time the hypervisor took (*latency_ns), or -1 with err: control off, a
 * dump, an earlier request still pending, no answer in time (the request
 * then stays pending). One writer at a time: callers serialize (hvtrace
 * takes a lock on the backing file). */
int hvt_ctl_send(struct hvt_chan *ch, const struct hvt_ctl_req *rq, uint64_t timeout_ms, int64_t *result,
		 uint64_t *latency_ns, struct hvt_err *err);

/* ---------------------------------------------------------------- */
/* The debugger's requests (record.h HVTRACE_DBG_*, docs/channel.md "The
 * debugger"). Each request goes through hvt_ctl_send under an exclusive
 * flock on lock_fd (the channel's file), like `hvtrace ctl`'s. */

struct hvt_dbg {
	struct hvt_chan *ch;
	struct hvtrace_dbg *area;	/* in the shared mapping: written by both sides */
	uint32_t nr_vcpus;
	int lock_fd;			/* -1: no lock taken */
	uint64_t timeout_ms;
};
/* The channel's debugger area, checked: offset, size, magic, vCPUs. */
int hvt_dbg_open(struct hvt_dbg *d, struct hvt_chan *ch, int lock_fd, struct hvt_err *err);
/* STOP, then waits until every vCPU says it is stopped. */
int hvt_dbg_stop(struct hvt_dbg *d, struct hvt_err *err);
int hvt_dbg_resume(struct hvt_dbg *d, struct hvt_err *err);
/* STEP vCPU v, then waits until it stopped again. */
int hvt_dbg_step(struct hvt_dbg *d, uint32_t v, struct hvt_err *err);
/* A stopped vCPU's registers, copied consistently; -1 if it runs. */
int hvt_dbg_regs(const struct hvt_dbg *d, uint32_t v, struct hvt_vcpu_regs *out, struct hvt_err *err);
/* len bytes at v's linear la: 0, or -1 (err; *result the hypervisor's). */
int hvt_dbg_read(struct hvt_dbg *d, uint32_t v, uint64_t la, void *buf, uint64_t len, int64_t *result,
		 struct hvt_err *err);
int hvt_dbg_write(struct hvt_dbg *d, uint32_t v, uint64_t la, const void *buf, uint64_t len, int64_t *result,
		  struct hvt_err *err);
/* gpr, rip and rflags of r become v's (the hypervisor refuses the rest changed). */
int hvt_dbg_set_regs(struct hvt_dbg *d, uint32_t v, const struct hvt_vcpu_regs *r, int64_t *result,
		     struct hvt_err *err);
/* The instruction breakpoint at linear addr on every vCPU (on), or none
 * (!on). */
int hvt_dbg_set_bp(struct hvt_dbg *d, uint64_t addr, int on, int64_t *result, struct hvt_err *err);
/* The debugger's slot (0..HVTRACE_DBG_SLOTS-1) set to a breakpoint (rw 0,
 * len 0; on every vCPU) or watchpoint (rw 1 write, 3 read or write; len
 * as DR7's LEN; on every untraced vCPU) at linear addr (on), or cleared
 * (ABI 1.10); a
 * page slot (HVTRACE_DBG_SLOTS..HVTRACE_DBG_SLOTS_MAX-1, ABI 1.11) an
 * instruction breakpoint (rw 0, len 0), or (ABI 1.13) a write watchpoint
 * of len bytes (rw 1, len 1-4096 within one page), addr translated
 * through stopped vCPU v's page tables. */
int hvt_dbg_set_hw(struct hvt_dbg *d, unsigned slot, int on, unsigned rw, unsigned len, uint64_t addr,
		   uint32_t v, int64_t *result, struct hvt_err *err);
/* The slots (bit n: slot n) that fired at stopped vCPU v's stop; 0 when none or not stopped. */
uint32_t hvt_dbg_hits(const struct hvt_dbg *d, uint32_t v);
/* Stopped vCPU v's linear address la through its page tables (ABI 1.10). */
int hvt_dbg_translate(struct hvt_dbg *d, uint32_t v, uint64_t la, uint64_t *pa, int64_t *result,
		      struct hvt_err *err);
/* Guest-physical memory (guest RAM only), read by stopped vCPU v's request. */
int hvt_dbg_read_phys(struct hvt_dbg *d, uint32_t v, uint64_t pa, void *buf, uint64_t len, int64_t *result,
		      struct hvt_err *err);
/* 1 when the guest is held, *vcpu the one that reached the breakpoint
 * (UINT32_MAX: the host's STOP); 0 when it runs. */
int hvt_dbg_held(const struct hvt_dbg *d, uint32_t *vcpu);

/* ---------------------------------------------------------------- */
/* The channel writer: lays out a channel and produces records as the
 * hypervisor does (record, then head). For tests and benchmarks. */

struct hvt_ring_spec {
	uint32_t vcpu;
	uint16_t mode;		/* HVTRACE_RING_* (consumer follows: FLIGHT/STREAM) */
	uint64_t capacity;
	uint32_t cpl_filter;
	uint32_t wait_us;
};

/* Bytes a channel with these rings needs (header + 4 KiB-rounded rings). */
uint64_t hvt_chan_layout_size(const struct hvt_ring_spec *rs, unsigned n);
/* Lays out the header and rings in buf (size bytes, zeroed here). */
int hvt_chan_layout(void *buf, uint64_t size, const struct hvt_ring_spec *rs, unsigned n,
		    uint32_t nr_vcpus, uint64_t tsc_hz, struct hvt_err *err);
void hvt_chan_set_state(void *buf, uint32_t state, uint32_t freeze, uint64_t freeze_tsc);

struct hvt_producer {
	struct hvtrace_chan *hdr;
	uint8_t *base;
	struct {
		uint64_t pending;	/* dropped, not yet told by a LOST record */
		uint64_t first_tsc;	/* TSC of the first of them */
		uint64_t free;		/* LOSSLESS: slots known free (cached) */
		int waiting;		/* this full spell already counted in waits */
	} st[HVTRACE_CHAN_MAX_RINGS];
};

enum hvt_put { HVT_PUT_OK = 0, HVT_PUT_DROPPED = 1 };

void hvt_producer_init(struct hvt_producer *p, void *chan_buf);
/* One record into ring r. OVERWRITE: always written. LOSSLESS: when full,
 * waits (if a reader is attached) up to wait_us for it, then drops; a
 * LOST record precedes the first record written after drops. */
enum hvt_put hvt_producer_put(struct hvt_producer *p, unsigned r, const struct hvtrace_rec *rec);
/* Batch form for LOSSLESS rings without waiting: writes as many of the n
 * records as fit, publishes head once; returns how many went in. */
uint64_t hvt_producer_put_batch(struct hvt_producer *p, unsigned r, const struct hvtrace_rec *recs,
				uint64_t n);
/* Writes the pending LOST record of ring r once space allows, waiting at
 * most timeout_us; 0 when nothing is pending any more. */
int hvt_producer_flush_lost(struct hvt_producer *p, unsigned r, uint64_t timeout_us);

/* A deterministic synthetic workload: record i of vCPU v (a small call
 * tree: calls, a conditional, an indirect call, returns, interrupts).
 * nfuncs > 5 spreads it over that many functions (hvt_synth_func_addr). */
#define HVT_SYNTH_TEXT 0xffffffff81000000ull
void hvt_synth_rec(uint32_t vcpu, uint64_t i, unsigned nfuncs, struct hvtrace_rec *r);
uint64_t hvt_synth_func_addr(unsigned k);
const char *hvt_synth_func_name(unsigned k, char *buf, size_t len);
/* A guest memory dump as an ELF core (dump-guest-memory's layout: PT_LOAD
 * [0, at) and [at, end) of mem); malloc'd, *len bytes. */
void *hvt_elf_core_image(const uint8_t *mem, uint64_t at, uint64_t end, size_t *len);
/* The same with a PT_LOAD per segment, in the order given (mem indexed by
 * guest-physical address); at most 65534 segments. */
struct hvt_elf_seg {
	uint64_t paddr, len;
};
void *hvt_elf_core_segs(const uint8_t *mem, const struct hvt_elf_seg *seg, unsigned n, size_t *len);
/* ... with a PT_NOTE of notes_len bytes first (hvt_cpu_notes) */
void *hvt_elf_core_notes(const uint8_t *mem, const struct hvt_elf_seg *seg, unsigned n,
			 const void *notes, size_t notes_len, size_t *len);

/* ---------------------------------------------------------------- */
/* Trace files. */

struct hvt_fwriter {
	int fd;
	uint64_t records;
	struct hvtrace_file_hdr hdr;
};

/* Creates path with a header (COMPLETE clear, records 0). */
int hvt_fwriter_open(struct hvt_fwriter *w, const char *path, uint32_t flags, uint64_t tsc_hz,
		     uint32_t nr_vcpus, uint32_t freeze, struct hvt_err *err);
int hvt_fwriter_put(struct hvt_fwriter *w, const struct hvtrace_rec *r, uint64_t n, struct hvt_err *err);
/* Writes the final header: COMPLETE, records, lost. Closes the file. */
int hvt_fwriter_finish(struct hvt_fwriter *w, uint64_t lost, struct hvt_err *err);
void hvt_fwriter_abort(struct hvt_fwriter *w);

struct hvt_file {
	struct hvtrace_file_hdr hdr;	/* validated copy */
	const struct hvtrace_rec *recs;
	uint64_t nr;			/* records */
	int partial;			/* a trailing partial record was ignored */
	void *map;
	size_t map_len;
	struct hvtrace_rec *merged;	/* hvt_file_merge_tsc's copy, or NULL */
};

int hvt_file_open(struct hvt_file *f, const char *path, struct hvt_err *err);
int hvt_file_open_mem(struct hvt_file *f, const void *buf, size_t len, struct hvt_err *err);
/* Checks every record (hvt_rec_check); names the first bad one. */
int hvt_file_check_records(const struct hvt_file *f, struct hvt_err *err);
/* One timeline: when the records are not in TSC order (a stream `hvtrace
 * record` drained ring by ring, one vCPU after another), recs becomes a
 * stable merge of them by TSC (each vCPU's own order kept); a file already
 * in order is left as it is. 0, or -1 when memory runs out. */
int hvt_file_merge_tsc(struct hvt_file *f, struct hvt_err *err);
void hvt_file_close(struct hvt_file *f);

/* ---------------------------------------------------------------- */
/* Symbols: an ELF with a symbol table (libelf), or a System.map /
 * /proc/kallsyms text map (text symbols t, T, w, W). */

struct hvt_sym {
	uint64_t addr;
	uint64_t size;		/* 0: unknown (text maps) */
	const char *name;
};

struct hvt_syms {
	struct hvt_sym *v;
	size_t n;
	char *strings;		/* owns the names */
	size_t strings_len;
};

int hvt_syms_load(struct hvt_syms *s, const char *path, struct hvt_err *err);
int hvt_syms_load_mem(struct hvt_syms *s, const void *buf, size_t len, struct hvt_err *err);
int hvt_syms_parse_map(struct hvt_syms *s, const char *text, size_t len, struct hvt_err *err);
int hvt_syms_parse_elf(struct hvt_syms *s, const void *buf, size_t len, struct hvt_err *err);
/* The function holding addr (nearest symbol <= addr, within its size when
 * known); NULL if none. *off = addr - sym->addr. */
const struct hvt_sym *hvt_syms_lookup(const struct hvt_syms *s, uint64_t addr, uint64_t *off);
/* The symbol named `name` (the first of that name), or NULL. */
const struct hvt_sym *hvt_syms_find(const struct hvt_syms *s, const char *name);
/* "name+0xoff", or "0xaddr" when unknown. */
const char *hvt_syms_format(const struct hvt_syms *s, uint64_t addr, char *buf, size_t len);
/* An ELF of the symbols alone (a .text without contents, a .symtab), for
 * GDB, which reads no text map. 0, or -1 with err. */
int hvt_syms_write_elf(const struct hvt_syms *s, const char *path, struct hvt_err *err);
void hvt_syms_free(struct hvt_syms *s);

/* The kernel symbols `hvtrace-agent symbols` printed into a console log:
 * the last complete block between HVTRACE-KSYMS-BEGIN and
 * HVTRACE-KSYMS-END lines (base64 of gzip; carriage returns and trailing
 * blanks tolerated), decoded into a text map (*map, *map_len; malloc'd),
 * at most HVT_KSYMS_MAX bytes. Checked: it parses as a symbol map with at
 * least one symbol. 0, or -1 with err saying what is wrong and where. */
#define HVT_KSYMS_MAX	(256u << 20)
int hvt_ksyms_from_log(const char *log, size_t len, char **map, size_t *map_len, struct hvt_err *err);

/* Reads a whole file into memory (NUL-terminated); for the parsers. */
void *hvt_read_file(const char *path, size_t *len, struct hvt_err *err);
/* Maps a whole regular file of at least min (> 0) bytes: shared read/write,
 * or private read-only. munmap(map, *len) when done. */
void *hvt_map_file(const char *path, int writable, size_t min, size_t *len, struct hvt_err *err);

#endif
