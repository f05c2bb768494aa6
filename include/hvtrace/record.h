/* SPDX-License-Identifier: MIT */
/*
 * hvtrace export ABI: the trace record, the shared-memory channel the
 * hypervisor writes its per-vCPU rings into, and the trace file the host
 * tools write. One definition for the hypervisor, the host tools
 * (libhvtrace) and the guest agent. Freestanding C11 (<stdint.h> only).
 * Versioned with HVTRACE_ABI_MAJOR/MINOR (abi.h). Little-endian, as x86.
 *
 * Everything a reader finds in a channel or a file may have been written
 * by a broken or hostile party: readers check every field against the
 * rules written here before they use it (libhvtrace does).
 */
#ifndef HVTRACE_RECORD_H
#define HVTRACE_RECORD_H

#include <stdint.h>
#include "hvtrace/abi.h"	/* struct hvtrace_filter (abi.h includes this file at its end) */

/* ------------------------------------------------------------------ */
/* The record: 32 bytes, fixed size so readers can seek.               */

enum hvtrace_rec_kind {
	HVTRACE_REC_BRANCH = 1,	/* near JMP/CALL/RET, taken Jcc/LOOP/JrCXZ: from -> to;
				 * aux = enum hvtrace_branch_type */
	HVTRACE_REC_INTERRUPT = 2, /* external interrupt or NMI: from = the interrupted
				    * instruction, to = the handler; aux = vector (| NMI) */
	HVTRACE_REC_EXCEPTION = 3, /* fault/trap, INT n/INT3/INTO/INT1: from = the
				    * faulting (or INT) instruction, to = the handler;
				    * aux = vector (| SOFT for INT n/INT3/INTO/INT1) */
	HVTRACE_REC_FAR = 4,	/* far JMP/CALL/RET, IRET, SYSCALL/SYSRET, SYSENTER/SYSEXIT;
				 * aux = enum hvtrace_branch_type */
	HVTRACE_REC_CR3 = 5,	/* address-space switch: from = old CR3, to = new CR3;
				 * written before the first branch made under the new CR3 */
	HVTRACE_REC_MARKER = 6,	/* from = value, aux = enum hvtrace_marker */
	HVTRACE_REC_LOST = 7,	/* from = number of records dropped just before this one
				 * (exact), to = TSC of the first of them */
	HVTRACE_REC_KIND_MAX = 7
};

/* aux of INTERRUPT and EXCEPTION records */
#define HVTRACE_AUX_VECTOR(aux)	((aux) & 0xffu)
#define HVTRACE_AUX_SOFT	(1u << 8)	/* INT n, INT3, INTO, INT1 */
#define HVTRACE_AUX_NMI		(1u << 9)

/* aux of BRANCH and FAR records: the instruction that branched */
enum hvtrace_branch_type {
	HVTRACE_BR_JCC = 1,
	HVTRACE_BR_LOOP = 2,		/* LOOP/LOOPcc/JrCXZ */
	HVTRACE_BR_JMP = 3,
	HVTRACE_BR_JMP_IND = 4,
	HVTRACE_BR_CALL = 5,
	HVTRACE_BR_CALL_IND = 6,
	HVTRACE_BR_RET = 7,
	HVTRACE_BR_FAR_JMP = 8,
	HVTRACE_BR_FAR_CALL = 9,
	HVTRACE_BR_FAR_RET = 10,
	HVTRACE_BR_IRET = 11,
	HVTRACE_BR_SYSCALL = 12,
	HVTRACE_BR_SYSRET = 13,
	HVTRACE_BR_SYSENTER = 14,
	HVTRACE_BR_SYSEXIT = 15,
	HVTRACE_BR_OTHER = 16,		/* XABORT, RSM, UIRET */
};

/* MARKER codes (aux) */
enum hvtrace_marker {
	HVTRACE_MARK_START = 1,		/* tracing started; from = where, to = CR3 */
	HVTRACE_MARK_STOP = 2,		/* tracing stopped; from = RIP, to = records made */
	HVTRACE_MARK_GUEST = 3,		/* trace_ctl MARK; from = the guest's value, to = RIP */
	HVTRACE_MARK_CRASH = 4,		/* the guest crashed; from = RIP, to = enum hvtrace_freeze */
	HVTRACE_MARK_TRIGGER = 5,	/* a trace.freeze address was reached; from = it, to = the
					 * records still kept before the freeze (ABI 1.4) */
	HVTRACE_MARK_HOST = 6,		/* a host control request MARK; from = the host's value,
					 * to = RIP (ABI 1.5) */
	HVTRACE_MARK_GAP = 7,		/* records may be missing just before this one, how many is
					 * not known (LBR batching, docs/branch-engine.md); from = 0,
					 * to = RIP (ABI 1.7). A known number is a LOST record. */
};

/* info: the privilege levels on both ends of a record */
#define HVTRACE_INFO_FROM_CPL(info)	((info) & 3u)
#define HVTRACE_INFO_TO_CPL(info)	(((info) >> 2) & 3u)
#define HVTRACE_INFO_MAKE(from_cpl, to_cpl) ((uint8_t)(((from_cpl) & 3) | (((to_cpl) & 3) << 2)))

/* What a user-only consumer gets in place of a kernel (CPL 0) address: a
 * non-canonical value, so never a real linear address. */
#define HVTRACE_ADDR_KERNEL	0x8000000000000000ull

struct hvtrace_rec {
	uint64_t tsc;		/* the vCPU's TSC when the record was made */
	uint64_t from;		/* linear addresses (see the kinds above) */
	uint64_t to;
	uint16_t vcpu;
	uint8_t kind;		/* enum hvtrace_rec_kind */
	uint8_t info;		/* HVTRACE_INFO_* */
	uint32_t aux;
};
_Static_assert(sizeof(struct hvtrace_rec) == 32, "hvtrace_rec is 32 bytes");

/* ------------------------------------------------------------------ */
/* The channel: a header page, then the rings' record areas.           */
/*
 * Where it lives: BAR2 of a QEMU ivshmem-plain device (PCI 1af4:1110) when
 * the loader finds one, else a range of the hypervisor's reserved RAM. In
 * both cases the header is at a 4 KiB-aligned address, so a tool can find
 * it by scanning a guest memory dump for HVTRACE_CHAN_MAGIC.
 *
 * Rings: record i (counting from 0 since the ring began) lives at
 * offset + (i % capacity) * 32. `head` is the number of records the
 * hypervisor has written; it writes the record, then head (x86 stores are
 * ordered). A reader of an OVERWRITE ring copies the records it wants,
 * then re-reads head: records it copied that head has since lapped are
 * torn and thrown away. While the ring is live, the slot of record
 * head - capacity is the one the next record goes into: a live reader
 * keeps at most the newest capacity - 1 records (a stopped or frozen ring,
 * or a dump, all capacity). A LOSSLESS ring is drained by one reader, which
 * writes `tail` (records consumed); the hypervisor never overwrites a
 * record at or after tail: when the ring is full it waits (pausing the
 * vCPU) up to `wait_us` for the reader, then drops records, counts them in
 * `lost` and writes one HVTRACE_REC_LOST record when space returns (room
 * for it and the record after it: two slots). It waits once per overflow
 * (`waits` counts those spells), not again while it drops, and only while
 * `reader` is non-zero (a reader is attached); a marker waits at least
 * 10 ms.
 */
#define HVTRACE_CHAN_MAGIC	0x314e484352545648ull	/* "HVTRCHN1" */
#define HVTRACE_CHAN_HDR_SIZE	4096u
#define HVTRACE_CHAN_MAX_RINGS	30

enum hvtrace_consumer {
	HVTRACE_CONSUMER_FLIGHT = 1,	/* the flight recorder: last N branches */
	HVTRACE_CONSUMER_STREAM = 2,	/* the host export stream */
};

enum hvtrace_ring_mode {
	HVTRACE_RING_OVERWRITE = 1,	/* history ring: keeps the newest records */
	HVTRACE_RING_LOSSLESS = 2,	/* the host drains it; the producer waits */
};

enum hvtrace_cpl_filter {
	HVTRACE_CPL_ALL = 0,
	HVTRACE_CPL_KERNEL = 1,		/* records with a CPL 0 end */
	HVTRACE_CPL_USER = 2,		/* records with a CPL > 0 end; kernel addresses
					 * replaced by HVTRACE_ADDR_KERNEL */
};

struct hvtrace_ring {
	/* set once by the hypervisor */
	uint32_t vcpu;
	uint16_t consumer;	/* enum hvtrace_consumer */
	uint16_t mode;		/* enum hvtrace_ring_mode */
	uint64_t offset;	/* from the channel's start; 4 KiB-aligned, past the header */
	uint64_t capacity;	/* records; a power of two, >= 2 */
	uint32_t cpl_filter;	/* enum hvtrace_cpl_filter */
	uint32_t wait_us;	/* LOSSLESS: how long the producer waits for the reader */
	/* written by the hypervisor */
	uint64_t head;		/* records written since the ring began */
	uint64_t lost;		/* records dropped (exact) */
	uint64_t filtered;	/* records this consumer's filter left out */
	uint64_t waits;		/* LOSSLESS: times the producer waited for the reader */
	/* written by the host's reader (LOSSLESS), own cache line */
	uint64_t tail;		/* records consumed */
	uint64_t reader;	/* non-zero while a reader drains (its pid) */
	uint8_t pad1[48];
};
_Static_assert(sizeof(struct hvtrace_ring) == 128, "hvtrace_ring is 128 bytes");
_Static_assert(__builtin_offsetof(struct hvtrace_ring, tail) == 64, "tail on its own line");

enum hvtrace_chan_state {
	HVTRACE_STATE_IDLE = 1,		/* waiting for the start trigger */
	HVTRACE_STATE_TRACING = 2,
	HVTRACE_STATE_STOPPED = 3,	/* stop trigger reached */
	HVTRACE_STATE_FROZEN = 4,	/* the guest crashed: rings kept as they were */
};

enum hvtrace_freeze {
	HVTRACE_FREEZE_NONE = 0,
	HVTRACE_FREEZE_TRIPLE_FAULT = 1,
	HVTRACE_FREEZE_RESET = 2,	/* the guest asked for a reset (port 0xCF9) */
	HVTRACE_FREEZE_HYPERCALL = 3,	/* HVTRACE_TRACE_FREEZE */
	HVTRACE_FREEZE_ADDRESS = 4,	/* a trace.freeze address, and its records after (ABI 1.4) */
	HVTRACE_FREEZE_NMI = 5,		/* an NMI reached the guest, trace.freeze = nmi (ABI 1.4) */
	HVTRACE_FREEZE_HANG = 6,	/* a vCPU spun in one place, trace.freeze = hang:T (ABI 1.4) */
	HVTRACE_FREEZE_WATCHDOG = 7,	/* the watchdog a host or guest armed ran out (ABI 1.5) */
	HVTRACE_FREEZE_HOST = 8,	/* a host control request FREEZE (ABI 1.5) */
	HVTRACE_FREEZE_INVALID_STATE = 9, /* the processor refused the guest's state at entry
					   * (state an emulator let through; ABI 1.5) */
};

enum hvtrace_chan_where {
	HVTRACE_CHAN_IVSHMEM = 1,	/* BAR2 of an ivshmem-plain device */
	HVTRACE_CHAN_RESERVED_RAM = 2,	/* the hypervisor's reserved RAM */
};

/*
 * Host -> hypervisor control (ABI 1.5; docs/channel.md "Control"). One
 * request at a time: the host (one writer: `hvtrace ctl` takes a lock on
 * the backing file) waits until no request is pending (seq != ctl_done +
 * 1), fills op, the arguments and reserved = 0, then writes seq = ctl_done
 * + 1, last. The hypervisor takes a request only when seq is exactly one
 * past the last it handled: it copies it, checks that seq did not move
 * meanwhile (else it reads it again later), validates it as it does a
 * hypercall's arguments, applies it or refuses it, then writes ctl_result
 * and, last, ctl_done = seq. Everything here may be garbage
 * written by a broken or hostile host: a refused request is counted in
 * ctl_rejected and changes nothing else. When requests are read:
 * ctl_mode (channel.control in hvtrace.cfg).
 */
enum hvtrace_ctl_mode {
	HVTRACE_CTL_OFF = 0,	/* requests are never read (a channel in reserved RAM) */
	HVTRACE_CTL_EXITS = 1,	/* at the next VM exit of any vCPU */
	HVTRACE_CTL_POLL = 2,	/* ... and within ctl_poll_us while every vCPU halts */
};

struct hvtrace_ctl_req {
	uint64_t seq;		/* != ctl_done: a request waits; written last */
	uint32_t op;		/* enum hvtrace_trace_op */
	uint32_t reserved;	/* 0 */
	uint64_t arg0, arg1;	/* as the hypercall's RCX and RDX (MARK: the value; FREEZE_AT:
				 * address, records after; WATCHDOG: microseconds) */
	struct hvtrace_filter filter;	/* HVTRACE_TRACE_FILTER: the filter itself */
};
_Static_assert(sizeof(struct hvtrace_ctl_req) == 120, "hvtrace_ctl_req is 120 bytes");

/*
 * The debugger (ABI 1.9; docs/channel.md "The debugger"): host requests
 * in hvtrace_ctl_req.op beside enum hvtrace_trace_op, never a hypercall's.
 * STOP holds every vCPU in root mode at its next exit (the others kicked);
 * each publishes its registers in its struct hvtrace_dbg_vcpu, then state
 * = STOPPED, last. The other requests need the guest held (else EPERM)
 * and name a vCPU in arg0 bits 31:0 (EINVAL past the last, EAGAIN when
 * that one is not stopped yet):
 *   RESUME: every vCPU goes on (arg0 = 0).
 *   STEP: that vCPU runs one instruction (a hidden TF), the others held;
 *     its state goes RUNNING, then STOPPED again with its new registers
 *     (at the guest's handler, not yet run, when the instruction faulted
 *     or was an INT n, INT3, INTO or INT1). A vCPU that traces is stepped
 *     by its branch engine (the engine's own step; an event's delivery
 *     runs on to its handler's first instruction).
 *   READ: arg0 bits 47:32 = length (1..HVTRACE_DBG_BUF_SIZE), arg1 = a
 *     linear address of that vCPU's: the bytes into buf, all or none
 *     (EFAULT: a page not present, or not guest RAM).
 *   WRITE: the same, the bytes from buf; the guest's pages must be
 *     present and writable for it (its own page tables, its RAM only).
 *   SET_REGS: buf holds a struct hvtrace_dbg_regs; its gpr, rip and
 *     rflags become the vCPU's (RIP canonical, RFLAGS' reserved bits as
 *     the processor has them, TF and VM unchanged: else EINVAL); the
 *     other fields are not read.
 *   READ with arg0 bit 48 set (ABI 1.10): arg1 is a guest-physical
 *     address (guest RAM only; the vCPU must still be a stopped one).
 *   SET_HW (ABI 1.10; no vCPU: arg0 bits 1:0 = the debugger's slot 0-3,
 *     bit 8: 1 set, 0 clear, bits 17:16 = RW as DR7 has it (0 execute, 1
 *     write, 3 read or write; 2, I/O, refused), bits 25:24 = LEN as DR7
 *     has it (0: 1 byte, 1: 2, 3: 4, 2: 8; 0 for execute), every other
 *     bit 0; arg1 = a canonical linear address aligned to the length, 0
 *     to clear): a breakpoint or watchpoint of the debugger's, on every
 *     vCPU (a watchpoint: every untraced vCPU; a vCPU that traces looks
 *     for the breakpoints itself), in a debug register the guest's DR7 does not enable
 *     (docs/channel.md "The debugger": the guest's DR0-DR3 and DR7 read
 *     and write as they would without it). EPERM while trace.start waits
 *     for an address. A vCPU that reaches one holds the guest as STOP
 *     does, stop_vcpu = its number + 1, and publishes the slots that
 *     fired in its `hits`.
 *     Page slots (ABI 1.11): arg0 bits 4:0 = a slot 4-31 (under 1.10 bits
 *     4:2 must be 0), an instruction breakpoint only (RW and LEN 0), and
 *     arg0 bits 47:32 = a stopped vCPU through whose page tables arg1 is
 *     translated when set (EFAULT: not mapped, or not the guest's RAM or
 *     code; EAGAIN, EINVAL as for the other requests); clear: bits 47:32
 *     0 too. Kept by removing execute from that page in the nested page
 *     tables (reads and writes stay allowed): it fires on a vCPU whose
 *     RIP is arg1 when that vCPU fetches from the guest-physical page arg1
 *     mapped to when set. ENOSYS where the backend has no such control,
 *     ENOMEM when it could not (the tables not split for want of memory;
 *     VMX without INVEPT).
 *     Page watchpoints (ABI 1.13): a page slot with RW 1 (write) and arg0
 *     bits 59:48 = its length less one (1-4096 bytes, arg1 to arg1 + length
 *     within one page: else EINVAL), the page guest RAM: kept by removing
 *     write from that page in the nested tables (reads and fetches stay
 *     allowed); a vCPU's write to the page is stepped with the page open,
 *     and fires when it changed the watched bytes (a trap: held after the
 *     instruction). RW 3 (read or write) is ENOSYS: the nested tables do
 *     not refuse reads alone.
 *   TRANSLATE (ABI 1.10; arg0 = the vCPU, arg1 = a linear address): its
 *     guest-physical address through that vCPU's page tables, 8 bytes
 *     into buf (EFAULT: not mapped).
 *   SET_BP: SET_HW's slot 0 as an instruction breakpoint (ABI 1.9: arg0
 *     bit 32: 1 set, 0 clear; arg1 = a canonical linear address).
 * The host writes buf only while the guest is held and no request is
 * pending; the hypervisor copies what it reads from the channel once.
 */
enum hvtrace_dbg_op {
	HVTRACE_DBG_STOP = 16,
	HVTRACE_DBG_RESUME = 17,
	HVTRACE_DBG_STEP = 18,
	HVTRACE_DBG_READ = 19,
	HVTRACE_DBG_WRITE = 20,
	HVTRACE_DBG_SET_REGS = 21,
	HVTRACE_DBG_SET_BP = 22,
	HVTRACE_DBG_SET_HW = 23,
	HVTRACE_DBG_TRANSLATE = 24,
};
#define HVTRACE_DBG_SLOTS	4u	/* SET_HW's slots in debug registers: as many as there are */
#define HVTRACE_DBG_SLOTS_MAX	32u	/* and page slots up to this (ABI 1.11; watchpoints 1.13): `hits` has a bit for each */
#define HVTRACE_DBG_READ_PHYS	(1ull << 48)	/* READ: arg1 is guest-physical */
#define HVTRACE_EAGAIN		11	/* the vCPU is not stopped yet: ask again */
#define HVTRACE_DBG_MAGIC	0x3147424454565648ull	/* "HVTVDBG1" */
#define HVTRACE_DBG_BUF_SIZE	2048u
#define HVTRACE_DBG_VCPU_OFFSET	4096u

enum hvtrace_dbg_state {
	HVTRACE_DBG_RUNNING = 0,
	HVTRACE_DBG_STOPPED = 1,	/* held in root mode; regs are its guest's */
};

/* A stopped vCPU's registers, as its guest has them (the hypervisor's
 * hidden TF left out). */
struct hvtrace_dbg_regs {
	uint64_t gpr[16];	/* RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15 (encoding order) */
	uint64_t rip, rflags;
	uint64_t cr0, cr2, cr3, cr4, efer;
	uint64_t seg_base[6];	/* ES, CS, SS, DS, FS, GS */
	uint16_t seg_sel[6];
	uint16_t seg_attr[6];	/* AMD VMCB layout: type/S/DPL/P in 7:0, AVL/L/D/G in 11:8 */
	uint64_t kernel_gs_base;
	uint64_t reserved[7];
};
_Static_assert(sizeof(struct hvtrace_dbg_regs) == 320, "hvtrace_dbg_regs is 320 bytes");

struct hvtrace_dbg_vcpu {
	uint32_t state;		/* enum hvtrace_dbg_state, written last */
	uint32_t apic_id;
	uint64_t stops;		/* times it stopped (each publication) */
	struct hvtrace_dbg_regs regs;
	uint32_t hits;		/* SET_HW slots (bit n: slot n) that fired at this stop (ABI 1.10; 4-31: 1.11) */
	uint32_t reserved;
	uint8_t pad[512 - 16 - 320 - 8];
};
_Static_assert(sizeof(struct hvtrace_dbg_vcpu) == 512, "hvtrace_dbg_vcpu is 512 bytes");

struct hvtrace_dbg {
	uint64_t magic;		/* HVTRACE_DBG_MAGIC */
	uint32_t nr_vcpus;	/* vcpu[] entries at HVTRACE_DBG_VCPU_OFFSET */
	uint32_t held;		/* 1 from STOP to RESUME */
	uint64_t stop_tsc;	/* the TSC when STOP was applied */
	uint32_t stop_vcpu;	/* 0: the host's STOP held the guest; else the vCPU + 1 that
				 * reached the breakpoint (SET_BP) */
	uint32_t reserved0;
	uint64_t bp_addr;	/* slot 0's address (SET_BP or SET_HW); 0: none */
	uint8_t reserved[24];
	uint8_t buf[HVTRACE_DBG_BUF_SIZE];	/* READ, WRITE, SET_REGS data */
	uint8_t pad[HVTRACE_DBG_VCPU_OFFSET - 64 - HVTRACE_DBG_BUF_SIZE];
	struct hvtrace_dbg_vcpu vcpu[];
};
_Static_assert(__builtin_offsetof(struct hvtrace_dbg, buf) == 64, "buf after 64 bytes");
_Static_assert(__builtin_offsetof(struct hvtrace_dbg, vcpu) == HVTRACE_DBG_VCPU_OFFSET, "vcpu[] at 4 KiB");

struct hvtrace_chan {
	uint64_t magic;		/* HVTRACE_CHAN_MAGIC */
	uint32_t abi_version;	/* HVTRACE_ABI_VERSION */
	uint32_t rec_size;	/* sizeof(struct hvtrace_rec) */
	uint32_t hdr_size;	/* HVTRACE_CHAN_HDR_SIZE */
	uint32_t nr_rings;	/* <= HVTRACE_CHAN_MAX_RINGS */
	uint64_t size;		/* bytes of the whole channel */
	uint64_t phys_base;	/* its guest-physical address */
	uint64_t tsc_hz;	/* 0 when unknown */
	uint32_t where;		/* enum hvtrace_chan_where */
	uint32_t nr_vcpus;
	uint32_t state;		/* enum hvtrace_chan_state */
	uint32_t freeze;	/* enum hvtrace_freeze */
	uint64_t freeze_tsc;
	uint64_t seq;		/* bumped on every state change */
	/* host control, the hypervisor's side (ABI 1.5; was reserved) */
	uint32_t ctl_mode;	/* enum hvtrace_ctl_mode */
	uint32_t ctl_poll_us;	/* CTL_POLL: the period of the look while the guest halts */
	uint64_t ctl_done;	/* seq of the last request handled */
	int64_t ctl_result;	/* its result: 0 or -HVTRACE_E* */
	uint64_t ctl_applied;	/* requests applied */
	uint64_t ctl_rejected;	/* requests refused: bad op, argument or state */
	uint64_t watchdog_us;	/* the armed watchdog's period; 0: none */
	struct hvtrace_ring rings[HVTRACE_CHAN_MAX_RINGS];
	struct hvtrace_ctl_req ctl;	/* host control, the host's side (ABI 1.5) */
	uint64_t dbg_offset;	/* struct hvtrace_dbg from the channel's start; 0: none (ABI 1.9) */
};
_Static_assert(sizeof(struct hvtrace_chan) == HVTRACE_CHAN_HDR_SIZE, "the channel header is one page");
_Static_assert(__builtin_offsetof(struct hvtrace_chan, rings) == 128, "rings after 128 bytes");
_Static_assert(__builtin_offsetof(struct hvtrace_chan, ctl) % 64 == 0, "the request on its own lines");

/* ------------------------------------------------------------------ */
/* The trace file the host tools write (`hvtrace record`, `snapshot`).  */
/*
 * A 128-byte header, then records back to back. A file being written has
 * `records` = 0 and HVTRACE_FILE_COMPLETE clear: its length says how many
 * records it holds (a trailing partial record, left by a killed writer, is
 * ignored). A finished file has COMPLETE set and `records` exact.
 */
#define HVTRACE_FILE_MAGIC	0x314c494652545648ull	/* "HVTRFIL1" */
#define HVTRACE_FILE_COMPLETE	(1u << 0)
#define HVTRACE_FILE_SNAPSHOT	(1u << 1)	/* from overwrite rings (per vCPU, in order) */
#define HVTRACE_FILE_FROZEN	(1u << 2)	/* the channel was frozen by a guest crash */

struct hvtrace_file_hdr {
	uint64_t magic;		/* HVTRACE_FILE_MAGIC */
	uint32_t abi_version;	/* HVTRACE_ABI_VERSION of the writer */
	uint32_t rec_size;	/* sizeof(struct hvtrace_rec) */
	uint32_t hdr_size;	/* sizeof(struct hvtrace_file_hdr) */
	uint32_t flags;		/* HVTRACE_FILE_* */
	uint64_t tsc_hz;
	uint64_t records;	/* COMPLETE: the number of records */
	uint64_t lost;		/* records the source reported lost */
	uint32_t nr_vcpus;
	uint32_t freeze;	/* enum hvtrace_freeze of the channel */
	uint8_t reserved[72];
};
_Static_assert(sizeof(struct hvtrace_file_hdr) == 128, "hvtrace_file_hdr is 128 bytes");

#endif
