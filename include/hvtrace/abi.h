/* SPDX-License-Identifier: MIT */
/*
 * hvtrace ABI: the one definition shared by the hypervisor, the EFI loader,
 * the guest agent, the host tools and the tests. Freestanding C11: only
 * <stdint.h> is used. Any change to a layout here bumps HVTRACE_ABI_MINOR
 * (compatible addition) or HVTRACE_ABI_MAJOR (incompatible change).
 */
#ifndef HVTRACE_ABI_H
#define HVTRACE_ABI_H

#include <stdint.h>

#define HVTRACE_ABI_MAJOR 1
#define HVTRACE_ABI_MINOR 13
#define HVTRACE_ABI_VERSION ((HVTRACE_ABI_MAJOR << 16) | HVTRACE_ABI_MINOR)

/*
 * CPUID: leaf 1 ECX[31] (hypervisor present) is set, and the hypervisor
 * range starts at 0x40000000 as on KVM/Hyper-V/Xen:
 *   0x40000000: EAX = highest hvtrace leaf, EBX:ECX:EDX = "hvtrace\0\0\0\0\0"
 *   0x40000001: EAX = HVTRACE_ABI_VERSION, EBX = HVTRACE_FEAT_* bits
 */
#define HVTRACE_CPUID_BASE	0x40000000u
#define HVTRACE_CPUID_VERSION	0x40000001u
#define HVTRACE_CPUID_MAX	HVTRACE_CPUID_VERSION
#define HVTRACE_CPUID_SIG_EBX	0x72747668u	/* "hvtr" */
#define HVTRACE_CPUID_SIG_ECX	0x00656361u	/* "ace\0" */
#define HVTRACE_CPUID_SIG_EDX	0x00000000u

#define HVTRACE_FEAT_HYPERCALL	(1u << 0)	/* VMMCALL/VMCALL entry */

/*
 * Hypercalls. Entry: the instruction of the vendor CPUID leaf 0 names,
 * whichever backend runs: VMMCALL for AuthenticAMD and HygonGenuine,
 * VMCALL for any other (docs/hypercalls.md). RAX = number,
 * RBX, RCX, RDX = arguments. Return: RAX = 0 or a negative HVTRACE_E*
 * code; outputs in RBX, RCX, RDX as documented per call. Every call except
 * HC_VERSION needs CPL 0 (else -HVTRACE_EPERM). Buffers are guest-physical
 * addresses that must lie wholly in guest RAM (else -HVTRACE_EFAULT).
 */
enum hvtrace_hypercall {
	HVTRACE_HC_VERSION = 0,	/* out: RBX = ABI version, RCX = features, RDX = the
				 * caller's vCPU (bits 31:0) and its processor's APIC
				 * ID (63:32) (ABI 1.3) */
	HVTRACE_HC_STATUS = 1,	/* in: RBX = gpa of struct hvtrace_status, RCX = its size */
	HVTRACE_HC_VCPU_STATUS = 2, /* in: RBX = gpa of struct hvtrace_vcpu_status, RCX = its
				     * size, RDX = vCPU index (-HVTRACE_EINVAL past the last) */
	HVTRACE_HC_TRACE_CTL = 3, /* in: RBX = enum hvtrace_trace_op, RCX = marker value;
				   * the start/stop triggers `hypercall` (docs/config.md) */
	HVTRACE_HC_MAX
};

enum hvtrace_trace_op {
	HVTRACE_TRACE_START = 1,	/* start the recorder (trace.start = hypercall) */
	HVTRACE_TRACE_STOP = 2,		/* stop it (trace.stop = hypercall) */
	HVTRACE_TRACE_MARK = 3,		/* a MARKER record carrying RCX */
	HVTRACE_TRACE_FREEZE = 4,	/* freeze the flight recorder now, as on a crash */
	HVTRACE_TRACE_FILTER = 5,	/* RCX = gpa of a struct hvtrace_filter, RDX = its size */
	HVTRACE_TRACE_FREEZE_AT = 6,	/* trace.freeze by hypercall: RCX = an address, RDX = the
					 * records kept after it (<= 100000000); RCX = 0 removes
					 * every freeze address (ABI 1.4) */
	HVTRACE_TRACE_WATCHDOG = 7,	/* RCX = microseconds (<= 3600 s): the flight recorder
					 * freezes unless armed again before they pass; 0 disarms
					 * (ABI 1.5) */
};

/* A consumer's filter, replacing the one hvtrace.cfg gave it
 * (HVTRACE_TRACE_FILTER; docs/recorder.md "Filters"). */
#define HVTRACE_FILTER_MAX_RANGES 4
struct hvtrace_filter {
	uint32_t consumer;	/* enum hvtrace_consumer */
	uint32_t cpl;		/* enum hvtrace_cpl_filter */
	uint32_t nr_ranges;	/* 0: any address; else <= HVTRACE_FILTER_MAX_RANGES */
	uint32_t reserved;	/* 0 */
	uint64_t cr3;		/* 0: any address space; else a 4 KiB-aligned root */
	struct { uint64_t lo, hi; } ranges[HVTRACE_FILTER_MAX_RANGES];	/* inclusive */
};
_Static_assert(sizeof(struct hvtrace_filter) == 88, "hvtrace_filter is 88 bytes");

#define HVTRACE_EPERM	1	/* needs CPL 0 */
#define HVTRACE_EFAULT	14	/* buffer not wholly in guest RAM */
#define HVTRACE_ENOMEM	12	/* the hypervisor's memory ran out (the debugger's page breakpoints) */
#define HVTRACE_EINVAL	22	/* bad argument (size too small, ...) */
#define HVTRACE_ENOSYS	38	/* unknown hypercall number */

enum hvtrace_backend {
	HVTRACE_BACKEND_NONE = 0,
	HVTRACE_BACKEND_SVM = 1,
	HVTRACE_BACKEND_VMX = 2,
};

#define HVTRACE_STATUS_MAGIC	0x53545648u	/* "HVTS" */
#define HVTRACE_STATUS_INTEGRITY_OK (1u << 0)	/* image checksum still matches */

struct hvtrace_status {
	uint32_t magic;		/* HVTRACE_STATUS_MAGIC */
	uint32_t abi_version;	/* HVTRACE_ABI_VERSION */
	uint32_t size;		/* bytes written by the hypervisor */
	uint32_t backend;	/* enum hvtrace_backend */
	uint32_t nr_vcpus;
	uint32_t flags;		/* HVTRACE_STATUS_* */
	uint64_t hv_phys_base;	/* the hypervisor's reserved range */
	uint64_t hv_phys_size;
	uint64_t exits_total;	/* VM exits on all vCPUs */
	uint64_t hypercalls;
	uint64_t tsc_hz;	/* 0 when unknown */
	uint32_t caller_vcpu;	/* the vCPU that made this hypercall (ABI 1.3) */
	uint32_t caller_apic_id; /* its processor's local APIC ID (ABI 1.3) */
	uint32_t nr_running;	/* vCPUs that entered the guest (ABI 1.3) */
	uint32_t nr_disabled;	/* processors the firmware disabled: never started (ABI 1.3) */
	uint64_t reserved[6];
};
_Static_assert(sizeof(struct hvtrace_status) == 0x80, "hvtrace_status is 128 bytes");

/* The branch engine a vCPU runs (docs/branch-engine.md). */
enum hvtrace_engine {
	HVTRACE_ENGINE_OFF = 0,		/* not tracing */
	HVTRACE_ENGINE_REFERENCE = 1,	/* single-steps every instruction */
	HVTRACE_ENGINE_FAST = 2,	/* decodes ahead, stops at branches */
	HVTRACE_ENGINE_LBR = 3,		/* the processor's architectural LBRs, one exit per batch
					 * (VMX, where HV_CAP_ARCH_LBR holds; else FAST runs) */
	HVTRACE_ENGINE_INTERP = 4,	/* the hypervisor runs the common instructions itself and
					 * hands the others to FAST (ABI 1.8) */
};

#define HVTRACE_VCPU_STATUS_MAGIC 0x53565648u	/* "HVVS" */

/* A vCPU's start-up state (hvtrace_vcpu_status.mp_state) */
enum hvtrace_vcpu_mp_state {
	HVTRACE_VCPU_RUNNING = 0,	/* in the guest (or the hypervisor on its behalf) */
	HVTRACE_VCPU_WAIT_SIPI = 1,	/* after an INIT, until a SIPI starts it */
	HVTRACE_VCPU_NOT_STARTED = 2,	/* never entered (the loader's entry failed) */
};

struct hvtrace_vcpu_status {
	uint32_t magic;		/* HVTRACE_VCPU_STATUS_MAGIC */
	uint32_t size;		/* bytes written */
	uint32_t vcpu;
	uint32_t engine;	/* enum hvtrace_engine in use now (REFERENCE for interp with interp.verify) */
	uint64_t exits;		/* all VM exits of this vCPU */
	uint64_t trace_exits;	/* exits taken only for tracing */
	uint64_t branches;	/* branch records the engine produced */
	uint64_t bts_records;	/* records stored in the guest's DS buffers: BTS and PEBS */
	uint64_t bts_dropped;	/* ... not stored: buffer full (BTINT, PEBS), bad DS area or buffer */
	uint64_t bts_pmis;	/* BTS and PEBS threshold interrupts raised */
	uint64_t rec_records;	/* records the recorder's rings accepted (ABI 1.2) */
	uint64_t rec_lost;	/* records its lossless rings dropped (ABI 1.2) */
	uint32_t apic_id;	/* its processor's local APIC ID (ABI 1.3) */
	uint32_t mp_state;	/* HVTRACE_VCPU_* (ABI 1.3) */
	uint64_t inits;		/* INITs it took (ABI 1.3) */
	uint64_t sipis;		/* SIPIs that started it (ABI 1.3) */
	uint64_t irqs;		/* external interrupts injected while tracing (ABI 1.4) */
	uint64_t irqs_paced;	/* ... of them held first by trace.pace (ABI 1.4) */
	uint64_t interp_irq_ends; /* engine = interp's bursts ended because the local APIC had an
				   * interrupt for the processor (ABI 1.12; 0 before) */
	/* ABI 1.6: where this vCPU's time went since it started, in TSC ticks
	 * counted by the hypervisor (docs/benchmarks.md "Where an exit's time
	 * goes"); tsc[] is indexed by enum hvtrace_prof, and each tick is in
	 * exactly one bucket. A caller whose buffer holds only the 1.5 layout
	 * (HVTRACE_VCPU_STATUS_SIZE_1_5 bytes) gets that much, size saying so. */
	uint64_t prof_exits;	/* exits whose time is in tsc[] */
	uint64_t tsc[8];
	uint64_t blocks_reused;	/* fast engine: decoded blocks taken from its cache... */
	uint64_t blocks_decoded; /* ... and decoded (a miss: new, or its bytes changed) */
	/* ABI 1.8: engine = interp's coverage (docs/branch-engine.md): instructions and taken
	 * branches the hypervisor interpreted, instructions it left to the processor, and the two
	 * most often left, each HVTRACE_INTERP_TOP_KEY(x) << 32 | count (0: none) */
	uint64_t interp_insns;
	uint64_t interp_branches;
	uint64_t interp_left;
	uint64_t interp_top[2];
};
_Static_assert(sizeof(struct hvtrace_vcpu_status) == 0x100, "hvtrace_vcpu_status is 256 bytes");
_Static_assert(__builtin_offsetof(struct hvtrace_vcpu_status, interp_insns) == 0xd8, "ABI 1.8 fields in 1.7's reserve");
/* interp_top[]'s key, the high 32 bits: the reason (bits 31:24, the hypervisor's enum
 * interp_leave: 4 an opcode not interpreted, 5 a prefix, 6 memory...), the decoder's encoding
 * (23:20), the opcode map (19:16: 0 one-byte, 1 0F, 2 0F38, 3 0F3A), the opcode (15:8) and
 * ModRM.reg (7:0; 0F 01 with a register operand: the whole ModRM byte, C0-FF, so RDTSCP is
 * 0F 01 F9 and INVLPG 0F 01 /7) */
#define HVTRACE_INTERP_TOP_KEY(x)	((uint32_t)((x) >> 32))
#define HVTRACE_INTERP_TOP_COUNT(x)	((uint32_t)(x))

/* The smallest buffer HVTRACE_HC_VCPU_STATUS accepts: the layout of ABI
 * 1.0-1.5, which it fills (and says so in size). */
#define HVTRACE_VCPU_STATUS_SIZE_1_5 0x80u
_Static_assert(__builtin_offsetof(struct hvtrace_vcpu_status, prof_exits) == HVTRACE_VCPU_STATUS_SIZE_1_5,
	       "ABI 1.6 fields follow the 1.5 layout");

/* hvtrace_vcpu_status.tsc[]: the buckets a vCPU's TSC time is split into */
enum hvtrace_prof {
	HVTRACE_PROF_GUEST = 0,	/* VMRUN/VMLAUNCH/VMRESUME to the exit: the hardware world
				 * switch both ways and the guest's own instructions */
	HVTRACE_PROF_EXIT = 1,	/* the backend after the exit, to its exit handler
				 * (state saved and read back, exit information read) */
	HVTRACE_PROF_ENTRY = 2,	/* after the exit's handling, to the next VMRUN/VM entry */
	HVTRACE_PROF_DECODE = 3, /* the engines decoding guest code (its page walks not) */
	HVTRACE_PROF_RECORD = 4, /* storing records: BTS buffer and recorder (walks not) */
	HVTRACE_PROF_WALK = 5,	/* guest page walks (hv/base/gmem.c) */
	HVTRACE_PROF_HANDLER = 6, /* the rest of the exit's handling */
	HVTRACE_PROF_COUNT = 7
};

/*
 * UEFI memory type of the hypervisor's reserved range (the OS-loader range
 * 0x80000000..0xFFFFFFFF of UEFI 2.x 7.2, AllocatePages). Operating systems
 * treat unknown types as reserved and never reuse them; a tool (or test)
 * finds the range by this type in the UEFI memory map.
 */
#define HVTRACE_EFI_MEMTYPE	0x80007468u	/* 'ht' */

/* The string at the start of the hypervisor image (never visible to a guest). */
#define HVTRACE_IMAGE_MAGIC	"hvtrace-hypervisor-image"

#include "hvtrace/record.h"

#endif
