/* hv/trace: the software branch engine and the guest's virtual Debug Store
 * (BTS). Arch-neutral: reaches the guest through struct hv_arch_ops only.
 * See docs/branch-engine.md. */
#ifndef HV_TRACE_TRACE_H
#define HV_TRACE_TRACE_H

#include "arch/x86/types.h"
#include "arch/x86/decode/decode.h"
#include "arch/x86/interp/interp.h"
#include "arch/x86/pgwalk.h"
#include "base/gmem.h"
#include "hvtrace/record.h"
#include "trace/rec.h"
#include "trace/pace.h"
#include "trace/pmu.h"
#include "trace/lbr.h"
#include "trace/pagebp.h"

struct vcpu;
struct hv_event;

/* The guest's view of the Debug Store MSRs and what became of its records. */
struct ds_state {
	u64 debugctl;		/* IA32_DEBUGCTL as the guest wrote it */
	u64 ds_area;		/* IA32_DS_AREA */
	u64 misc_enable;	/* IA32_MISC_ENABLE shadow (ds.c misc_enable()) */
	bool misc_enable_known;	/* ... read from the processor yet */
	bool bad_area_logged;	/* log a bad DS area once per DS_AREA value */
	u64 records, dropped, pmis;
	/* the save area's and buffer's translations (ds_bts_store), emptied
	 * when DS_AREA or DEBUGCTL is not what they were kept under */
	struct gmem_xlat_cache xlat;
	u64 xlat_area, xlat_debugctl;
	/* an interpreted burst's pins of the area and the buffer (ds_burst_begin) */
	struct gmem_pin pin;
};

/* A single step the guest does not see, with the engine off: TF forced for
 * one instruction, #DB intercepted (trace/hstep.c). */
struct hidden_step {
	bool on;
	bool tf;		/* the guest's own TF at its start */
	bool loads_rflags;	/* the instruction is an IRET */
	u64 dr6;		/* the guest's DR6 at its start */
	u64 rip;		/* where it began */
};

/* The host debugger's breakpoints and watchpoints in this vCPU's debug
 * registers (trace/dbg.c), only while the engine is off and its own
 * breakpoint (struct handler_bp) is not armed: the registers it holds,
 * and the guest's values of them and of DR7, read and written in their
 * place (trace/dr.c guest_dr_read, guest_dr_write). */
struct dbg_dr {
	bool on;		/* the guest's DR7 is saved_dr7; the VMCB's is composed */
	u8 held;		/* bit n: the debugger holds DRn */
	u8 slot[4];		/* a held DRn's debugger slot */
	u32 gen;		/* the debugger's slots as composed (dbg.c hw_gen) */
	u32 hits;		/* slots that fired since the vCPU last went on */
	u64 saved[4];		/* the guest's DRn while held */
	u64 saved_dr7;
	/* A step whose instruction faulted runs on to the handler the fault
	 * is delivered to (dbg.c step_fault): `to`, in a register of its own
	 * (DBG_SLOT_TO) while to_on; to_armed: as composed; to_entered: the
	 * vCPU entered the guest on that way. */
	bool to_on, to_armed, to_entered;
	bool wide;		/* the step's exceptions are intercepted (DBG_STEP_EXCEPTIONS) */
	u8 pushf_w;		/* the step is a PUSHF of this operand size (bytes); 0: not one */
	bool syscall;		/* the step is a SYSCALL (R11 mended when it completes) */
	u64 to;
	/* The pages of the debugger's page breakpoints this vCPU opened to
	 * run one instruction there (dbg.c dbg_npf: pagebp entries), closed
	 * when its step ends, or, while it traces (`at_exit`: 1 when opened,
	 * 2 once it entered with them open), at its next exit */
	u8 np_n;
	u8 np_at_exit;
	u8 np_page[4];
	/* The debugger's step of a vCPU that traces (dbg.c: the engine's own step, one
	 * instruction, or an event's delivery to its handler's first instruction): wanted
	 * (granted while held), then running from tstep_rip until an exit ends it */
	u8 tstep;
	u64 tstep_rip;
	/* RF's part for the engines' breakpoint check (dbg_trace_bp): the address the vCPU was
	 * held at by a breakpoint there, passed when it goes on from it, until it is elsewhere */
	bool pass_on;
	u64 pass;
	/* The debugger's page watchpoints on the pages this vCPU opened for a write (dbg.c
	 * dbg_npf): the page slots (bit s) whose watched bytes were summed (wsum[s]) before the
	 * instruction ran, compared when its step ends */
	u32 wslots;
	u64 wsum[HVTRACE_DBG_SLOTS_MAX - HVTRACE_DBG_SLOTS];
	/* The debugger's watchpoints in DR0/DR1 while the vCPU traces (the engines hold DR2/DR3;
	 * dbg.c dbg_trace_dr_arm): armed for one entry, taken down first at the exit that ends
	 * it. tw_held: bit n, the debugger holds DRn (the guest's value in tw_saved[n]);
	 * tw_dr7: the enable, RW and LEN bits it added to the VMCB's DR7, tw_dr7_was: those
	 * fields as they were */
	u8 tw_held;
	u8 tw_slot[2];
	u64 tw_saved[2];
	u64 tw_dr7, tw_dr7_was;
	/* a #DB of this exit was the debugger's watchpoint in DR0/DR1 alone (the engine drops it) */
	bool tw_fired;
	/* slots whose watchpoint engine = interp's burst hit (its own accesses): held after it */
	u32 whits;
};
enum { DBG_TSTEP_NONE, DBG_TSTEP_WANT, DBG_TSTEP_RUN };

/* The host debugger's instruction breakpoints (its debug-register slots that are one, and
 * its page slots) as the engines look for them while the vCPU traces (trace/dbg.c
 * dbg_trace_bp: the debug registers and the nested tables serve only while it does not):
 * their linear addresses and slots, copied whenever the debugger's change (gen), and
 * `filter`, a bit per address's hash (dbg_bp_hash), 0 while there is none: so an
 * instruction's check costs a load and a test then. A page slot's address is a hit only on
 * the guest-physical page it was set on (dbg.c). */
struct dbg_bps {
	u64 filter;
	u32 gen;
	u8 n;
	u8 slot[HVTRACE_DBG_SLOTS_MAX];
	u64 addr[HVTRACE_DBG_SLOTS_MAX];
	u64 gpa[HVTRACE_DBG_SLOTS_MAX];	/* a page slot's guest-physical address */
	/* the watchpoints (debug registers' and page slots'), for engine = interp's accesses */
	u8 wn;
	struct pagebp_watch w[HVTRACE_DBG_SLOTS_MAX];
};

static inline u64 dbg_bp_hash(u64 lin)
{
	return 1ull << ((lin ^ (lin >> 6) ^ (lin >> 12)) & 63);
}

/* Whether one of the debugger's breakpoints is at linear `lin` */
static inline bool dbg_bp_listed(const struct dbg_bps *b, u64 lin)
{
	if (!(b->filter & dbg_bp_hash(lin)))
		return false;
	for (u32 i = 0; i < b->n; i++)
		if (b->addr[i] == lin)
			return true;
	return false;
}

/* Where the vCPU was before the instruction now being stepped. */
struct step_state {
	bool valid;
	u64 rip;		/* RIP (not linear) */
	u64 lin;		/* CS.base + RIP */
	u64 rflags, rcx;
	int cpl;
	enum dec_mode mode;
	int dec;		/* dec_decode() status */
	struct dec_insn insn;
};

/* The engine's own breakpoint (DR3, execute): on the first instruction of
 * a handler an event is being delivered to (the record is made when it is
 * reached), or, for the fast engine, on the next control transfer. */
enum engine_bp_kind { BP_HANDLER, BP_STOP, BP_TRIGGER /* the recorder's start address */ };
struct handler_bp {
	bool armed;
	enum engine_bp_kind kind;
	u64 addr;		/* linear address (DR3) */
	u64 addr2;		/* a second stop (DR2), 0 when unused */
	u64 from;		/* BP_HANDLER: the record's source */
	int from_cpl;
	u8 rec_kind;		/* BP_HANDLER: enum hvtrace_rec_kind of the record */
	u32 rec_aux;
	u64 saved_dr2, saved_dr3, saved_dr7;	/* the guest's, while the engine holds them */
};

/* Fast engine: a conditional branch it did not stop at; which of its two
 * successors' stops is reached says whether it was taken. A forward
 * branch whose successors end at one stop has the not-taken successor's
 * first instruction as stop_fall (engine.c plan_block), or, `by_flags`,
 * the flags anywhere from there to the stop say (nothing there changes
 * them). */
struct cond_branch {
	bool valid;
	u64 from;		/* linear address of the branch */
	u64 target, fall;	/* the two successors */
	u64 stop_taken, stop_fall;
	int cpl;
	u8 type;		/* enum hvtrace_branch_type */
	bool by_flags;
	struct dec_insn insn;	/* the branch (by_flags) */
};

/* Fast engine: a branch resolved before it ran, recorded once the next
 * exit shows it completed. */
struct pending_branch {
	bool valid;
	u64 from_rip, from_lin, to;
	int cpl;
	u8 type;		/* enum hvtrace_branch_type */
};

/* Fast engine: direct JMP rel and CALL rel a plan went through without
 * stopping (engine.c plan_block), committed at the next exit up to the
 * segment the guest is then in. Segment i holds the RIPs start[i] ..
 * end[i]; for i < n, end[i] is link i's branch and start[i + 1] its
 * target. No two segments share an address. */
#define CHAIN_LINKS_MAX		8
struct chain {
	u8 n;			/* links (branches) followed; 0: no chain */
	int cpl;
	u64 start[CHAIN_LINKS_MAX + 1], end[CHAIN_LINKS_MAX + 1];
	u8 type[CHAIN_LINKS_MAX];	/* enum hvtrace_branch_type */
};

/* Fast engine: blocks decoded once and reused (engine.c find_stop). An
 * entry holds the block's bytes as decoded and is used only while the
 * guest's memory at its linear address still holds exactly those bytes. */
#define BLOCK_CACHE_SIZE	64	/* entries, direct-mapped by address */
#define BLOCK_BYTES_MAX		96	/* longer blocks are decoded each time */
struct block_entry {
	u64 lin, rip;		/* where the block starts */
	u64 stop;		/* the linear address of its last instruction */
	struct dec_insn at;	/* that instruction, decoded */
	u8 mode;		/* enum dec_mode it was decoded in */
	u8 len;			/* bytes from lin to the end of `at`; 0: empty */
	bool flags_kept;	/* no instruction before `at` changes the flags */
	u8 bytes[BLOCK_BYTES_MAX];
};
struct block_cache {
	struct block_entry e[BLOCK_CACHE_SIZE];
	struct gmem_xlat_cache xlat;	/* the code pages' translations */
	u64 hits, misses;
};

/* LBR batching's running state (trace/lbr_engine.c) */
struct lbr_engine {
	struct lbr_vcpu l;	/* the stack's drain and the counters (trace/lbr.c) */
	struct lbr_state start;	/* the guest's CPL and code at the batch's start */
	bool armed;		/* the stack, counters, LVT entry and VMCS are ours */
	bool lin_ips;		/* CPUID.1CH:EAX[31]: the entries hold linear addresses */
	u32 saved_lvtpc;	/* the LVT performance-counter entry as the guest had it */
	u64 last_tsc;		/* the last drain's (a LOST record's "first at") */
	u64 batches, guessed, undecoded, skipped;	/* lbr_batch_records's counts */
};

/* engine = interp's counts (trace/interp_engine.c), for vcpu_status and the bench: bursts run
 * and declined (interp_allowed said no), instructions and taken branches interpreted,
 * instructions left per reason and, for memory, per page-walk refusal (enum pgwalk_status), and
 * bursts ended by the budget; the most often left opcodes (key: reason << 24 | interp_opkey)
 * in a small table where the rarest of four probes gives way. */
#define INTERP_TOP_BITS		5
#define INTERP_TOP		(1u << INTERP_TOP_BITS)
/* why interp_allowed said no: not 64-bit code with IA-32e paging, or CET or supervisor
 * protection keys (CR4.PKS) on; the guest's own debugging armed (TF, BTF, BTINT, DR7); another
 * engine wanted (PMU counting the engine does not do, the recorder's start address); an event
 * going in at this entry; an STI/MOV SS shadow */
enum interp_decline {
	INTERP_DECLINE_NONE, INTERP_DECLINE_MODE, INTERP_DECLINE_DEBUG, INTERP_DECLINE_ENGINE,
	INTERP_DECLINE_EVENT, INTERP_DECLINE_SHADOW, INTERP_DECLINE_N
};
struct interp_stats {
	u64 runs, declined, insns, branches, left, budget;
	u64 irq_ends;		/* bursts ended for an interrupt the local APIC had (interp_run) */
	u64 counted;		/* instructions counted for the virtual PMU (interp_counting) */
	u64 decodes, walks;	/* decode cache misses (hits: struct interp_dcache), TLB misses */
	u64 invlpgs;		/* INVLPGs executed (interp_invlpg) */
	u64 logged_runs;	/* runs at the last interp_log */
	u64 logged_insns;	/* ... and instructions */
	u64 reasons[INTERP_LEAVE_NREASONS];
	u64 refused[PGWALK_NSTATUS];
	u64 declines[INTERP_DECLINE_N];
	struct { u32 key; u32 pad; u64 count; } top[INTERP_TOP];
};

/* engine = interp's decoded instructions, kept while their bytes stay (interp_engine.c
 * imem_decode), direct-mapped by linear address */
#define INTERP_DCACHE	2048
struct interp_dcache_entry {
	u64 lin;
	u64 epoch;		/* interp_dcache.epoch when its bytes were last checked, 0: never */
	u8 len;			/* 0: empty */
	union {
		u8 bytes[16];	/* the instruction's, zero past its length */
		u64 w[2];
	};
	u64 mask[2];		/* w's bytes that are the instruction's (code_same) */
	struct dec_insn in;
	struct interp_pre pre;	/* the core's derived fields, cleared at each decode */
};
/* Within a burst an entry checked once is not checked again (dcache_hit) until a write the
 * burst makes (the interpreter's, or the hypervisor's BTS or PEBS record) lands in a page of
 * code checked in it: `code` holds those pages, one bit per host page frame number modulo 64,
 * and such a write starts a new epoch (interp_code_written). */
struct interp_dcache {
	struct interp_dcache_entry e[INTERP_DCACHE];
	u64 hits;
	u64 epoch;		/* this burst's, or since its last write to its code */
	u64 code;		/* the pages checked this epoch (bits: host frame % 64) */
};

/* A new epoch of the decode cache's checks: every entry is compared with memory again at its
 * next hit. At each use after the processor ran guest code (a burst, a verify step: the
 * guest's own writes meanwhile were the processor's, which interp_code_written does not see),
 * and after a write of the burst's into code it checked. */
static inline void interp_dcache_epoch(struct interp_dcache *dc)
{
	dc->epoch++;
	dc->code = 0;
}

static inline u64 interp_code_bit(const void *p)
{
	return 1ull << (((uintptr_t)p >> 12) & 63);
}

/* A write during a burst whose first and last bytes are at host addresses first and last (at
 * most two pages): a new epoch of the decode cache's checks where it may land in code checked
 * in this one; last NULL: anywhere (a write through translations whose host pages are not
 * known here) */
static inline void interp_code_written(struct interp_dcache *dc, const void *first, const void *last)
{
	if (!last || (dc->code & (interp_code_bit(first) | interp_code_bit(last))))
		interp_dcache_epoch(dc);
}

/* interp.verify = yes: the instruction interp_verify_prepare interpreted into a shadow (its
 * one write buffered), which the reference engine's step then runs on the processor; the
 * step's end compares (trace/interp_engine.c). */
struct interp_verify {
	bool valid;
	bool wrote;
	/* the write is a PUSHF image: the processor's carries the reference engine's TF, which
	 * step_complete_one then replaces with the guest's own; TF is not compared */
	bool flags_image;
	u8 len, wlen;
	u8 bytes[15];
	u64 wlin, wval;
	struct interp_cpu before, want;
	u64 checked, mismatches;
	u64 logged;	/* checked at the last log line */
};

/* The two most often left, as vcpu_status reports them (HVTRACE_INTERP_TOP_KEY) */
void interp_top(const struct interp_stats *st, u64 out[2]);

struct trace_vcpu {
	struct ds_state ds;
	struct pmu_state pmu;	/* the virtual PMU (trace/pmu.c); GLOBAL_STATUS's bit 62 is the DS's */
	u32 engine;		/* enum hvtrace_engine now running */
	bool guest_tf;		/* the guest's own RFLAGS.TF while we step */
	bool tf_forced;		/* TF is set by us for the next entry */
	bool was_stepping;	/* ... and was for the entry this exit ended */
	u64 raw_rflags;		/* RFLAGS at the last exit, before TF is fixed up */
	u64 guest_dr6;		/* the guest's DR6: virtual while tracing */
	u64 host_guest_data;	/* DR6_B2/DR6_B3: the guest's data breakpoint the host DR7 armed there at entry */
	u32 engine_wanted;	/* enum hvtrace_engine used when tracing starts */
	/* engine = interp while a virtual PMU counter counts instructions or branches: the bursts
	 * count what they run, and what they leave is stepped by the reference engine (not
	 * planned by the fast one, which sees only the branches) */
	bool interp_counting;
	bool interp_counting_said;	/* logged once */
	bool update_due;	/* trace_update() before the next entry (a PMI froze the counters) */
	u64 exit_rip;		/* RIP at this exit's start */
	u8 step_pair;		/* STEP_PAIR_*: the stepped instruction's successor followed too (engine.c) */
	/* NMI blocking (trace/nmi.c) */
	bool nmi_blocked;	/* an NMI we delivered has not reached its IRET yet */
	bool nmi_pending;	/* an NMI that came while nmi_blocked */
	bool nmi_iret_on;	/* the backend's IRET intercept is on (idle) */
	bool nmi_awaiting;	/* that IRET, at nmi_iret_rip, has exited and runs next */
	struct hidden_step nmi_step;	/* ... single-stepped */
	u64 nmi_iret_rip;
	struct step_state step;
	struct handler_bp bp;
	struct pending_branch pending;
	struct cond_branch cond;
	struct chain chain;
	u64 trace_exits, branches;
	struct irq_pace pace;	/* external interrupts' pacing (trace/pace.c) */
	struct rec_vcpu rec;	/* the recorder's rings (trace/rec.c) */
	struct block_cache blocks;
	struct lbr_engine lbr;
	struct interp_stats interp;
	struct interp_verify verify;
	struct interp_dcache dcache;
	/* this exit was a #DB (the engines' stop or step): the only exits after which engine =
	 * interp runs. Any other may have raised an event the processor takes right after the
	 * instruction that exited (a self-IPI through the ICR, an NMI) before the next one. */
	bool interp_db_exit;
	/* the host debugger's step and debug registers (trace/dbg.c) */
	struct hidden_step dbg_step;
	struct dbg_dr dbg_dr;
	struct dbg_bps dbg_bps;
};

/* The vCPU's tracing state (v->trace), allocated from the reserve: the
 * engine `engine_wanted` runs when tracing starts, pacing external
 * interrupts to one per `pace` branches (0: none). enum hv_status. */
int trace_vcpu_init(struct vcpu *v, u32 engine_wanted, u32 pace);

/* MSRs the tracing code owns (the Debug Store's and the PMU's): 1
 * handled, 0 not ours, -1 #GP. */
int ds_msr_read(struct vcpu *v, u32 msr, u64 *val);
int ds_msr_write(struct vcpu *v, u32 msr, u64 val);

/* A record from the engine to every consumer: the guest's BTS (transfers
 * only) and the recorder (kind: enum hvtrace_rec_kind, aux per record.h). */
void trace_emit(struct vcpu *v, u64 from, u64 to, int cpl, u8 kind, u32 aux);
void ds_bts_store(struct vcpu *v, u64 from, u64 to, int cpl);
/* Around an interpreted burst (trace/interp_engine.c): the save area's and the buffer's
 * translations pinned for it (base/gmem.h, struct gmem_pin) */
void ds_burst_begin(struct vcpu *v);
void ds_burst_end(struct vcpu *v);
/* The PMU (trace/ds.c): an instruction at linear address `ip` retired at
 * `cpl` that was `occ` (PMU_OCC_*), counted by the engine (a PEBS record
 * for the PEBS counters it wrapped); the TSC-counted events brought up to
 * date (each exit). Either may raise the PMI of a counter that wrapped. */
u64 pmu_retired(struct vcpu *v, u32 occ, int cpl, u64 ip);
void pmu_sync(struct vcpu *v);
/* RDPMC of counter `ecx` (bit 30: fixed): its value, or false (#GP) */
bool pmu_rdpmc(struct vcpu *v, u32 ecx, u64 *val);
/* An instruction the hypervisor emulated (CPUID, RDMSR...) completed */
void trace_insn_emulated(struct vcpu *v);

/* Engine hooks, called by dispatch/event.c. */
void trace_update(struct vcpu *v);		/* after DEBUGCTL changes */
void trace_exit_begin(struct vcpu *v, const struct hv_event *ev); /* first on every exit */
bool trace_on_exception(struct vcpu *v, const struct hv_event *ev);	/* true: handled */
/* External interrupts (dispatch/irq.c holds them): may one be injected
 * now; the guest halted with one held; one was injected; an exit taken
 * only for tracing. */
/* Tracing with pacing on: an external interrupt may be held for it. */
bool trace_irq_paced(const struct vcpu *v);
int trace_irq_pick(struct vcpu *v);
void trace_irq_arrived(struct vcpu *v, u8 vector);
void trace_irq_halted(struct vcpu *v);
void trace_irq_injected(struct vcpu *v, u8 vector);
void trace_count_exit(struct vcpu *v);
bool trace_on_nmi(struct vcpu *v);					/* true: handled */
void trace_on_iret(struct vcpu *v);	/* the backend's IRET intercept exited */
void trace_nmi_reset(struct vcpu *v);	/* INIT: no NMI blocked or pending */
void trace_on_dr_access(struct vcpu *v, const struct hv_event *ev);
void trace_entry_sync(struct vcpu *v);	/* first thing before the guest runs */
void trace_before_entry(struct vcpu *v);	/* last thing before the guest runs */
u64 trace_host_dr7(struct vcpu *v);	/* the host's DR7 to enter with */
bool trace_guest_tf(const struct vcpu *v);	/* the guest's own RFLAGS.TF */
/* The hypervisor injected a fault for an instruction it emulates
 * (hv_inject_fault): the engine follows it into the handler. */
void trace_on_injected(struct vcpu *v, u8 vector);
/* An emulated instruction completed with the guest's TF set: true when the
 * engine owns TF and delivered (and followed) the trap itself. */
bool trace_single_step_trap(struct vcpu *v);

#endif
