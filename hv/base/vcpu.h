/* The arch-neutral virtual CPU, the backend ops table and the events that
 * backends translate their exit reasons into. hv/dispatch and hv/trace see
 * the backends only through this header; the backends call dispatch
 * through dispatch/dispatch.h. */
#ifndef HV_BASE_VCPU_H
#define HV_BASE_VCPU_H

#include "arch/x86/types.h"
#include "arch/x86/vectors.h"
#include "arch/x86/desc.h"
#include "base/boot.h"

/* General-purpose registers by their x86 encoding number (SDM Vol. 2A
 * Table 2-2), so decoders can index them by ModRM fields. */
enum hv_gpr {
	GPR_RAX, GPR_RCX, GPR_RDX, GPR_RBX, GPR_RSP, GPR_RBP, GPR_RSI, GPR_RDI,
	GPR_R8, GPR_R9, GPR_R10, GPR_R11, GPR_R12, GPR_R13, GPR_R14, GPR_R15,
	GPR_COUNT
};

enum hv_event_kind {
	/* instructions the hypervisor emulates (kept first: see hv/svm/exit.c) */
	HV_EV_CPUID,
	HV_EV_HYPERCALL,
	HV_EV_MSR_READ,
	HV_EV_MSR_WRITE,
	HV_EV_IO,		/* IN/OUT/INS/OUTS to a port the backend intercepts */
	HV_EV_INVD,		/* INVD: done as WBINVD (dispatch/event.c) */
	HV_EV_DR_ACCESS,	/* MOV to/from a debug register the engine virtualizes */
	HV_EV_CR_WRITE,		/* MOV to CR0/CR4 (VMX: CR3 too) or XSETBV, emulated by the backend */
	HV_EV_RDPMC,		/* RDPMC, for the virtual PMU's counters (trace/ds.c) */
	HV_EV_HLT,		/* HLT, intercepted while an interrupt is held (dispatch/irq.c) */
	HV_EV_VIRT_INSN,	/* the guest ran a virtualization instruction */
	HV_EV_TRIPLE_FAULT,
	HV_EV_NPF,		/* nested/EPT fault the map did not expect */
	HV_EV_EXCEPTION,	/* an intercepted exception, before its delivery */
	HV_EV_INTR,		/* an external interrupt for the guest, acknowledged */
	HV_EV_IRQ_WINDOW,	/* the guest can take an external interrupt now */
	HV_EV_NMI,		/* an NMI: the guest's, or a kick (dispatch/mp.c) */
	HV_EV_INIT,		/* an INIT signal reached this processor (SVM intercept, VMX exit) */
	HV_EV_IRET,		/* IRET, intercepted before it runs while an NMI is blocked (SVM; trace/nmi.c) */
	HV_EV_UNHANDLED,	/* an exit the backend does not know */
	HV_EV_COUNT
};

/* Events for instructions the hypervisor emulates (and skips). */
#define HV_EV_EMULATED_LAST HV_EV_HLT

struct hv_event {
	enum hv_event_kind kind;
	u32 msr;		/* MSR events */
	u64 gpa;		/* NPF */
	u64 raw;		/* the backend's exit code, for logs */
	u8 insn_len;		/* length of the exiting instruction; 0 = unknown */
	u8 vector;		/* HV_EV_EXCEPTION; HV_EV_INTR (0: it vanished) */
	bool has_error;
	u32 error_code;		/* exceptions; NPF: HV_NPF_* */
	u64 fault_addr;		/* #PF: the linear address (CR2 to be) */
	/* the event whose delivery this exit interrupted (SVM EXITINTINFO,
	 * VMX IDT-vectoring information) */
	bool vectoring;
	u8 vec_vector;
	u8 vec_type;		/* enum hv_vec_type */
	u16 io_port;		/* HV_EV_IO: the (first) port */
	u8 io_size;		/* HV_EV_IO: 1, 2 or 4 bytes */
	u8 io_flags;		/* HV_EV_IO: HV_IO_* */
};
/* NPF kinds, as AMD's EXITINFO1 has them (APM 15.25.6); VMX translates
 * its EPT violation's qualification (SDM Vol. 3 Table 28-7) into them */
#define HV_NPF_PRESENT	BIT(0)	/* the entry was present: a permission fault */
#define HV_NPF_WRITE	BIT(1)	/* by a write */
#define HV_NPF_FETCH	BIT(4)	/* by an instruction fetch */
#define HV_IO_IN	BIT(0)	/* IN/INS (else OUT/OUTS) */
#define HV_IO_STRING	BIT(1)	/* INS/OUTS */
#define HV_IO_REP	BIT(2)	/* with a REP prefix */

enum hv_vec_type { HV_VEC_EXT_INT = 0, HV_VEC_NMI = 2, HV_VEC_EXCEPTION = 3, HV_VEC_SOFT = 4 };

/* What an exception raised while delivering exception `first` becomes
 * (SDM Vol. 3 Table 6-5 "Conditions for Generating a Double Fault", APM
 * Vol. 2 8.2.9): base/exc.c, host-tested. */
enum exc_outcome { EXC_DELIVER_SECOND, EXC_DOUBLE_FAULT, EXC_TRIPLE_FAULT };
enum exc_outcome exc_combine(u8 first, u8 second);

struct hv_segment {
	u16 sel;
	u16 attr;		/* AMD VMCB layout: type/S/DPL/P in 0-7, AVL/L/D/G in 8-11 */
	u32 limit;
	u64 base;
};
#define SEG_ATTR_L	(1u << 9)
#define SEG_ATTR_DB	(1u << 10)

/* Segment registers, then the descriptor-table registers (base and limit
 * only) */
enum hv_seg { SEG_ES, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS, SEG_GDTR, SEG_IDTR };

struct trace_vcpu;

/* A vCPU's start-up state (dispatch/mp.c), changed by other processors
 * with atomic operations: INIT pending, waiting for a SIPI, SIPI latched
 * with its vector in bits 8-15. 0: running. */
#define MP_INIT		BIT(0)
#define MP_WAIT_SIPI	BIT(1)
#define MP_SIPI		BIT(2)
#define MP_VECTOR_SHIFT	8

#define GMEM_TLB_SIZE	4

struct vcpu {
	u64 gpr[GPR_COUNT];	/* offset 0: the run loops save/restore by index */
	u64 rip, rflags;	/* synced by the backend around each exit */
	u32 id;			/* its index in hv.vcpus[] */
	u32 apic_id;		/* its processor's local APIC ID */
	void *arch;		/* backend state (struct svm_vcpu, struct vmx_vcpu) */
	const struct hv_boot_cpu *boot;	/* where the loader left it (its guest's resume point) */
	u64 exits;
	u64 events[HV_EV_COUNT];
	u64 hypercalls;
	u64 apic_base;		/* the guest's IA32_APIC_BASE address: virtual (dispatch/msr.c) */
	struct trace_vcpu *trace;	/* hv/trace's own (trace_vcpu_init) */
	volatile u32 mp_state;	/* MP_*: INIT and SIPI from other processors */
	volatile u32 kick;	/* 1: an NMI the hypervisor sent is on its way (base/hv.c) */
	volatile u32 nmi_ipi;	/* 1: an NMI for this one's guest, taken at its next entry: an NMI IPI
				 * (dispatch/mp.c nmi_ipi) or its own PMI (trace/ds.c raise_pmi) */
	u32 icr_hi;		/* the guest's xAPIC ICR high half (mp.c keeps it) */
	u64 inits, sipis;	/* INITs and SIPIs this vCPU took */
	/* external interrupts acknowledged for the guest, not yet injected
	 * (bit = vector; dispatch/irq.c) */
	u64 irq_held[4];
	u64 irq_owed[4];	/* held ones that go without waiting for the pace (trace/pace.c pace_pick) */
	bool irq_window, irq_hlt;	/* the backend's window exit and HLT intercept are on */
	bool irq_watch;			/* it watches the host's requests while the guest halts */
	/* page translations for reads, valid for one exit (base/gmem.c) */
	struct { u64 exit, cr3, lin, gpa; } read_tlb[GMEM_TLB_SIZE];
	u32 read_tlb_next;
	/* where its time goes, in TSC ticks (base/prof.h; enum hvtrace_prof) */
	struct { u64 last, tsc[8], exits; u32 cur; } prof;
	struct host_cpu host;	/* its processor's root-mode GDT/TSS, GS base */
};
_Static_assert(__builtin_offsetof(struct vcpu, gpr) == 0, "run loops index gpr[]");
_Static_assert(sizeof(struct vcpu) <= 4096, "a vCPU fits the page it is allocated in");

#define HV_CAP_NRIP	(1u << 0)	/* the CPU reports the next RIP on exits */
#define HV_CAP_MTF	(1u << 1)	/* monitor trap flag (VMX) */
#define HV_CAP_BTS_HW	(1u << 2)	/* real BTS hardware the hypervisor may use */
#define HV_CAP_SMP	(1u << 3)	/* can take application processors */
#define HV_CAP_IPI_GATE	(1u << 4)	/* the guest's INIT/SIPI pass through the hypervisor */
#define HV_CAP_KICK_POLL (1u << 5)	/* no kick IPI: every vCPU exits often by itself */
#define HV_CAP_ARCH_LBR	(1u << 6)	/* architectural LBRs LBR batching could use (hv.lbr_depth) */

/* take_pending's results */
#define HV_PENDING_IRQ	(1u << 0)
#define HV_PENDING_NMI	(1u << 1)

/*
 * One backend per kind of processor virtualization (SVM, VMX), chosen once
 * at start-up by what the processor has (dispatch/entry.c).
 * Start-up calls return enum hv_status; exit-time calls cannot fail.
 */
struct hv_arch_ops {
	const char *name;
	u32 backend;				/* enum hvtrace_backend */
	int (*probe)(u32 *caps);		/* can this CPU run us? */
	int (*setup)(void);			/* tables every vCPU shares, once */
	int (*vcpu_init)(struct vcpu *v);	/* guest state := this CPU's state */
	void __noreturn (*vcpu_run)(struct vcpu *v);
	void (*inject_exception)(struct vcpu *v, u8 vector, bool has_err, u32 err);
	int (*get_cpl)(struct vcpu *v);
	u64 (*get_cr)(struct vcpu *v, int n);	/* 0, 2, 3, 4 */
	void (*set_cr2)(struct vcpu *v, u64 val);
	u64 (*get_dr)(struct vcpu *v, int n);	/* 6, 7: the guest's, as the CPU runs it */
	void (*set_dr)(struct vcpu *v, int n, u64 val);
	/* exceptions (bit = vector) that exit as HV_EV_EXCEPTION before delivery */
	void (*set_exception_intercepts)(struct vcpu *v, u32 mask);
	/* external interrupts exit as HV_EV_INTR (acknowledged by the backend),
	 * NMIs as HV_EV_NMI */
	void (*set_intr_intercept)(struct vcpu *v, bool on);
	void (*inject_interrupt)(struct vcpu *v, u8 vector);
	/* The guest cannot take an external interrupt at the next entry:
	 * RFLAGS.IF clear, an STI/MOV SS shadow, or an event being injected
	 * (or about to be re-injected by the backend). */
	bool (*irq_blocked)(struct vcpu *v);
	/* An HV_EV_IRQ_WINDOW exit as soon as the guest can take one (SVM
	 * VINTR, VMX interrupt-window exiting), or none. */
	void (*set_irq_window)(struct vcpu *v, bool on);
	/* HLT exits as HV_EV_HLT (true) or halts the processor (false). */
	void (*set_hlt_intercept)(struct vcpu *v, bool on);
	/* Root mode, between entries: an external interrupt (acknowledged as
	 * for an HV_EV_INTR exit, its vector in *vector) or an NMI that came
	 * meanwhile, as HV_PENDING_* bits. NULL where no vCPU waits in root
	 * mode for the guest's halt to end (dispatch/irq.c). */
	u32 (*take_pending)(struct vcpu *v, u8 *vector);
	void (*inject_nmi)(struct vcpu *v);
	/* IRET exits as HV_EV_IRET before it runs (true) or not; NULL where
	 * the processor keeps the guest's NMI blocking itself (VMX) */
	void (*set_iret_intercept)(struct vcpu *v, bool on);
	/* Whether the processor itself blocks the guest's NMIs now (VMX's interruptibility
	 * state, blocking by NMI: an NMI it delivered, or one injected without virtual NMIs).
	 * NULL: never, every NMI the guest sees is the hypervisor's (trace/nmi.c). */
	bool (*guest_nmi_blocked)(struct vcpu *v);
	/* An event goes in at the next entry already: one injected, or one
	 * whose delivery this exit cut short and the backend injects again
	 * after core. NULL: never asked (set_iret_intercept NULL). */
	bool (*event_pending)(struct vcpu *v);
	/* The guest's PKRU (only asked while its CR4.PKE is set): true and *pkru, or NULL or
	 * false where the backend cannot read it safely. No world switch saves PKRU: in root
	 * mode the register is the guest's. */
	bool (*guest_pkru)(struct vcpu *v, u32 *pkru);
	/* the guest's value of an MSR the CPU switches for it (STAR, LSTAR,
	 * CSTAR, SFMASK, SYSENTER_CS/ESP/EIP, KERNEL_GS_BASE) */
	u64 (*get_msr)(struct vcpu *v, u32 msr);
	/* FS_BASE, GS_BASE, KERNEL_GS_BASE := val (already checked); NULL
	 * where the backend does not intercept their writes (VMX) */
	void (*set_base_msr)(struct vcpu *v, u32 msr, u64 val);
	/* from now on, RDMSR of `msr` (one of hv_write_owned_msrs) exits on
	 * every vCPU: the shared MSR map's read bit, seen at each vCPU's
	 * next entry */
	void (*intercept_msr_read)(u32 msr);
	/* interrupts blocked until after the next instruction (STI's shadow) */
	void (*set_sti_shadow)(struct vcpu *v);
	/* Every translation the processor keeps for the guest (its TLBs and paging-structure
	 * caches, global ones too) dropped before the guest runs again: an INVLPG the hypervisor
	 * executed for it (trace/interp_engine.c). NULL where every entry drops them anyway (VMX
	 * without VPIDs, SDM Vol. 3 29.4.3.3). */
	void (*flush_guest_tlb)(struct vcpu *v);
	/* After an instruction the hypervisor emulated (hv_emulation_done):
	 * the guest's single-step trap is owed (true) or not (false: one the
	 * CPU left pending is dropped), and any STI/MOV SS interrupt shadow
	 * ends unless an event is being injected. */
	void (*set_single_step_trap)(struct vcpu *v, bool trap);
	void (*end_interrupt_shadow)(struct vcpu *v);
	u64 (*get_efer)(struct vcpu *v);	/* what the hardware runs with */
	void (*set_efer)(struct vcpu *v, u64 efer);
	void (*get_seg)(struct vcpu *v, enum hv_seg s, struct hv_segment *out);
	void (*dump)(struct vcpu *v);
	/* The guest's state after INIT (APM Vol. 2 14.1.3, SDM Vol. 3 Table
	 * 10-1), and its start at a SIPI vector (dispatch/mp.c). */
	void (*reset_to_init)(struct vcpu *v);
	void (*start_at_sipi)(struct vcpu *v, u8 vector);
	/* LBR batching (trace/lbr.c; docs/branch-engine.md "LBR batching"),
	 * NULL where the backend has none (SVM). The processor's LBR and PMU
	 * MSRs as lbr_arm()/lbr_collect() read and write them (root mode,
	 * this processor's), and the entry/exit side: lbr_ctl not 0, the
	 * guest IA32_LBR_CTL and IA32_PERF_GLOBAL_CTRL (`global_ctrl`) loaded
	 * at every entry and cleared at every exit, the counters' PMI (an NMI)
	 * taken as the hypervisor's, and MOV to CR3 exiting; 0: all off. */
	u64 (*lbr_rdmsr)(u32 msr);
	void (*lbr_wrmsr)(u32 msr, u64 val);
	void (*lbr_switch)(struct vcpu *v, u64 lbr_ctl, u64 global_ctrl);
	/* The 4 KiB guest-physical page at gpa executable or not in the
	 * nested tables every vCPU shares, reads and writes as they were
	 * (the debugger's page breakpoints, trace/dbg.c); *was: it was
	 * executable. Seen by each vCPU at its next entry. False: it could
	 * not (a large page not split for want of memory; VMX without
	 * INVEPT). NULL where a backend has none. */
	bool (*npt_set_exec)(u64 gpa, bool exec, bool *was);
	/* The same for writing (the debugger's page watchpoints): the page
	 * writable or not, reads and execute as they were; *was: it was
	 * writable. */
	bool (*npt_set_write)(u64 gpa, bool write, bool *was);
};

/* Global hypervisor state (one instance). */
struct hv {
	const struct hv_arch_ops *ops;
	u32 caps;
	struct hv_boot boot;		/* copy of the loader's parameters */
	struct hv_memmap guest_ram;	/* RAM the guest may point us at */
	struct hv_memmap guest_code;	/* where its code may be read: guest_ram and firmware-reserved */
	struct hv_memmap hidden;	/* the hypervisor's own ranges */
	u64 ro_checksum;		/* text+rodata at start */
	u32 nr_vcpus;			/* every enabled processor, from HV_OP_INIT */
	u32 nr_disabled;		/* processors the firmware left disabled */
	volatile u32 nr_running;	/* vCPUs that entered the guest */
	/* the ModRM byte of the guest's hypercall instruction (0F 01 /modrm)
	 * where the processor refuses it with #UD, the other vendor's (an
	 * Intel guest under SVM: dispatch/cpuid.c); 0 where it exits */
	u8 hc_foreign;
	/* the vendor the guest sees (CPUID leaf 0) is AMD or Hygon: no
	 * Intel architectural PMU for it (docs/pmu.md) */
	bool vendor_amd;
	/* HV_CAP_ARCH_LBR: the LBR stack's depth (trace/lbr.c lbr_usable) */
	u32 lbr_depth;
	struct vcpu *vcpus[HV_MAX_CPUS];
};
extern struct hv hv;
/* t_hostile aims a data breakpoint at hv.caps, which every SVM entry and
 * exit reads while the host's DR7 holds the guest's breakpoints */
_Static_assert(__builtin_offsetof(struct hv, caps) == 8, "tests/guest/t_hostile.c HV_CAPS_OFFSET");

/* The exceptions a backend intercepts: those asked for (`mask`, the
 * engine's), and #UD while the guest's hypercall instruction raises one. */
static inline u32 hv_exception_intercepts(u32 mask)
{
	return mask | (hv.hc_foreign ? 1u << X86_UD : 0);
}

/* Makes vCPU w leave the guest soon: an NMI to its processor, with w->kick
 * set so that its NMI exit knows it for the hypervisor's (the guest's own
 * NMI, arriving at that moment, merges with it and is lost: a limit,
 * docs/smp.md). Where every vCPU exits often by itself (VMX's preemption
 * timer, HV_CAP_KICK_POLL) nothing is sent. A vCPU not yet entered is not
 * kicked. */
void hv_kick(struct vcpu *w);
/* Every vCPU but v. */
void hv_kick_others(struct vcpu *v);

/* Advances RIP past the exiting instruction (length from the event, or
 * decoded from guest memory when the CPU does not report it). */
void hv_skip_insn(struct vcpu *v, const struct hv_event *ev, u8 base_len);
#endif
