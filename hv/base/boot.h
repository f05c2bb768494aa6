/* The hand-over from efi-loader/ to the hypervisor: the layout of the
 * reserved range, the boot parameters and the image header. Internal to
 * hvtrace (not guest ABI): the loader and the hypervisor are built together. */
#ifndef HV_BASE_BOOT_H
#define HV_BASE_BOOT_H

/* Offsets in struct hv_boot_guest, used by efi-loader/enter.S. */
#define HV_BOOT_GUEST_RIP	0x00
#define HV_BOOT_GUEST_RSP	0x08
#define HV_BOOT_GUEST_CR3	0x10
#define HV_BOOT_GUEST_ABORT	0x18

/* What the loader asks of hv_entry (its second argument: op | cpu << 16). */
#define HV_OP_INIT		1	/* global set-up on the boot processor; nothing enters */
#define HV_OP_PROBE		2	/* can this processor run the hypervisor? changes nothing */
#define HV_OP_ENTER		3	/* this processor becomes vCPU `cpu` and resumes as the guest */
#define HV_OP_CPU_SHIFT		16

/* Processors the hypervisor can take (vCPUs): one per enabled processor. */
#define HV_MAX_CPUS		64

#ifndef __ASSEMBLER__
#include "arch/x86/types.h"
#include "base/memmap.h"

/* The hypervisor runs at this address in its own page tables (-mcmodel=kernel:
 * the top 2 GiB), whatever physical address the loader put it at. */
#define HV_VA_BASE		0xffffffff80000000ull
#define HV_MAX_RESERVE		(1ull << 30)
/* The local APIC's page, mapped uncached by the loader just above the
 * largest reserve (base/lapic.c). */
#define HV_APIC_VA		(HV_VA_BASE + HV_MAX_RESERVE)
#define HV_MIN_RESERVE		(4ull << 20)

#define HV_IMAGE_HDR_MAGIC	0x4856494d41474531ull	/* "HVIMAGE1" */
#define HV_BOOT_MAGIC		0x48564254424f4f54ull	/* "HVBTBOOT" */
#define HV_BOOT_VERSION		6

/* First bytes of the flat hypervisor image (hv/hv.ld puts it at HV_VA_BASE). */
struct hv_image_hdr {
	u64 magic;		/* HV_IMAGE_HDR_MAGIC */
	u64 entry;		/* int hv_entry(const struct hv_boot *) */
	u64 file_end;		/* end of the flat image (virtual address) */
	u64 mem_end;		/* end including .bss, page-aligned */
	char sig[32];		/* HVTRACE_IMAGE_MAGIC */
};


struct hv_boot_guest {
	u64 rip, rsp, cr3;	/* filled by the loader's entry trampoline */
	u64 abort_rip;		/* loader stub: RAX = status, RDX = CR3, RSI = RSP */
};
_Static_assert(__builtin_offsetof(struct hv_boot_guest, abort_rip) == HV_BOOT_GUEST_ABORT, "enter.S");

/* One processor, as the firmware's MP services describe it; vCPU n is
 * cpus[n] (the boot processor is vCPU 0). */
struct hv_boot_cpu {
	struct hv_boot_guest guest;	/* where it resumes as the guest (enter.S) */
	u32 apic_id;		/* its local APIC ID (the x2APIC ID where it has one) */
	u32 mp_index;		/* the firmware's processor number */
	u64 stack_top;		/* its root-mode stack (hypervisor virtual address) */
};

/* The recorder's configuration (hvtrace.cfg keys flight.*, stream.*,
 * trace.*, channel; docs/config.md), parsed by the loader. */
#define HV_REC_MAX_RANGES 4
struct hv_rec_filter {
	u32 cpl;		/* enum hvtrace_cpl_filter */
	u32 nr_ranges;		/* 0: any address */
	u64 cr3;		/* 0: any address space; else CR3 bits 12-51 */
	struct { u64 lo, hi; } ranges[HV_REC_MAX_RANGES];	/* [lo, hi] inclusive */
};

enum hv_rec_start {
	REC_START_BOOT = 1,		/* as soon as the hypervisor runs */
	REC_START_HYPERCALL = 2,	/* HVTRACE_TRACE_START */
	REC_START_ADDR = 3,		/* the first time the guest executes start_arg */
	REC_START_BRANCHES = 4,		/* at boot, keeping records after the first start_arg */
};
enum hv_rec_stop {
	REC_STOP_NONE = 0,		/* only HVTRACE_TRACE_STOP or a crash */
	REC_STOP_RECORDS = 1,		/* after stop_arg records */
	REC_STOP_TIME = 2,		/* at the first record stop_arg microseconds after the start */
};
enum hv_rec_channel { REC_CHAN_AUTO = 0, REC_CHAN_IVSHMEM = 1, REC_CHAN_RAM = 2 };

/* What a guest's triple fault does once the flight recorder is frozen
 * (hvtrace.cfg triple_fault): the platform's shutdown, or that processor
 * stopped until an INIT with the machine left as it is for extraction. */
enum hv_triple_fault { HV_TRIPLE_FAULT_RESET = 0, HV_TRIPLE_FAULT_HALT = 1 };

/* One consumer of the engine's records with its ring per vCPU. */
struct hv_rec_consumer {
	u64 size;		/* bytes per vCPU; 0: none */
	u32 mode;		/* enum hvtrace_ring_mode */
	u32 wait_us;		/* LOSSLESS: how long a full ring pauses the vCPU */
	struct hv_rec_filter filter;
};

#define HV_REC_MAX_FREEZE 4

struct hv_rec_cfg {
	struct hv_rec_consumer flight, stream;
	u32 start;		/* enum hv_rec_start */
	u32 stop;		/* enum hv_rec_stop */
	u64 start_arg;
	u64 stop_arg;
	u32 channel;		/* enum hv_rec_channel */
	u32 nr_freeze_at;	/* trace.freeze addresses in freeze_at[] */
	u64 freeze_at[HV_REC_MAX_FREEZE];	/* freeze when a record goes there... */
	u64 freeze_after[HV_REC_MAX_FREEZE];	/* ... after this many more records */
	u32 freeze_nmi;		/* freeze when an NMI reaches the guest */
	u32 control;		/* enum hvtrace_ctl_mode: host requests (an ivshmem channel) */
	u64 freeze_hang_us;	/* freeze when a vCPU spins this long in one place; 0: no */
};

/* An ivshmem-plain device (PCI 1af4:1110) the loader found before the
 * hypervisor started: BAR2 is the host channel, hidden from the guest
 * (hv/dispatch/pcihide.c, docs/channel.md). Config-space values as the firmware
 * programmed them. */
struct hv_boot_ivshmem {
	u8 found;		/* 0: none (everything below is 0) */
	u8 bus, dev, fn;
	u16 segment;
	u8 ecam_bus_start;	/* the MCFG entry covering the device */
	u8 ecam_bus_end;
	u64 bar0_pa, bar0_size;	/* registers (32-bit memory BAR) */
	u64 bar2_pa, bar2_size;	/* the shared memory (64-bit prefetchable) */
	u64 ecam_pa;		/* ECAM base of the segment; 0: no MCFG entry */
};

struct hv_boot {
	u64 magic;		/* HV_BOOT_MAGIC */
	u32 version;		/* HV_BOOT_VERSION */
	u32 log_level;
	u16 serial_port;	/* 0: no log */
	u16 triple_fault;	/* enum hv_triple_fault: after a guest's triple fault */
	u16 interp_verify;	/* interp.verify = yes: engine = interp checks every instruction (trace/interp_engine.c) */
	u16 serial_hide;	/* serial.hide: the guest's I/O to serial_port's 8 ports finds no device (dispatch/uarthide.c) */
	u64 reserve_pa;		/* the whole reserved range */
	u64 reserve_size;
	u64 heap_pa;		/* first byte the hypervisor may allocate */
	u64 host_cr3;		/* built by the loader */
	u64 phys_limit;		/* 1 << MAXPHYADDR */
	u64 tsc_hz;		/* 0 when unknown */
	u32 trace_engine;	/* enum hvtrace_engine the guest's BTS gets */
	u32 trace_pace;		/* branches between external interrupts while tracing; 0: no pacing */
	struct hv_rec_cfg rec;	/* the recorder */
	struct hv_memmap ram;	/* guest RAM from the firmware's map, sorted */
	struct hv_memmap code;	/* ram and the firmware's reserved memory: code the guest may run */
	struct hv_boot_ivshmem ivshmem;
	u64 apic_pa;		/* the local APIC's page, where the firmware left it */
	u32 nr_cpus;		/* enabled processors, all taken (cpus[0] boots) */
	u32 nr_disabled;	/* processors the firmware reports disabled: never started */
	struct hv_boot_cpu cpus[HV_MAX_CPUS];
};
/* op: HV_OP_* | cpu << HV_OP_CPU_SHIFT. HV_OP_INIT and HV_OP_PROBE return
 * their status; HV_OP_ENTER returns only on failure. */
int hv_entry(const struct hv_boot *bp, u64 op);

#define HV_BOOT_PAGES 3
_Static_assert(sizeof(struct hv_boot) <= HV_BOOT_PAGES * 4096, "hv_boot fits its pages");

#endif /* __ASSEMBLER__ */

#endif
