/*
 * The host's debugger (docs/channel.md "The debugger", record.h
 * HVTRACE_DBG_*): `hvtrace gdb --shm` asks, through the host control
 * requests, to hold every vCPU; each one, kicked out of the guest, waits
 * in root mode before its next entry, publishes its guest's registers in
 * the channel and keeps looking at the requests (any held vCPU may apply
 * one: rec_ctl_poll takes them one at a time). The host reads and writes
 * memory through a stopped vCPU's page tables (guest RAM only, like a
 * hypercall's buffer), sets its general registers, RIP and status flags,
 * steps one instruction with a hidden TF (the engine off only:
 * trace/hstep.c, as nmi.c steps an IRET; one that faults runs on to the
 * guest's handler: step_fault), sets up to four breakpoints and
 * watchpoints in the debug registers the guest's DR7 leaves free (the
 * guest's values of those and its DR7 kept here: dr_acquire), more
 * instruction breakpoints on pages the nested tables make not executable
 * (page breakpoints: dbg_npf), and lets them all go. The guest's TSC runs on while it is held:
 * nothing is offset (a held guest sees the time it lost, as after an SMI).
 * Nothing here is read back from the channel but the request (copied once
 * by rec_ctl_poll) and, for WRITE and SET_REGS, the buffer, copied once
 * before it is checked. Root mode.
 */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/vectors.h"
#include "base/gmem.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/vcpu.h"
#include "trace/branch.h"
#include "trace/dbg.h"
#include "trace/engine.h"
#include "trace/hstep.h"
#include "trace/pagebp.h"

/* RFLAGS bits the host may change: the status flags and DF. IF, TF, IOPL,
 * NT, RF, VM, AC and the rest stay the guest's (the hidden TF and the
 * interrupt state are the hypervisor's business while it holds them). */
#define DBG_RFLAGS_WRITABLE \
	(RFLAGS_CF | RFLAGS_PF | RFLAGS_AF | RFLAGS_ZF | RFLAGS_SF | RFLAGS_DF | RFLAGS_OF)

/*
 * The exceptions intercepted while the debugger steps, besides #DB: the
 * faults an instruction can raise. The processor would deliver one with
 * the hidden TF in the RFLAGS it pushes (SDM Vol. 3 6.12.1.3: it saves
 * RFLAGS, TF included, then clears TF, so the handler runs unstepped; a
 * fault restores the state of before the instruction, 6.5): the guest's
 * handler would see a TF it never set (test svm-gdb-live: 0x146 pushed
 * where 0x46 was without the debugger). Caught here instead: TF is the guest's again, the
 * fault is delivered as it came (dispatch/event.c), and the step runs on
 * to the handler's first instruction (step_fault). #BP and #OF are traps
 * an intercept reports at their instruction (trace/follow.c moves RIP on
 * past them): not taken here. NMI and #MC are not the instruction's.
 */
#define DBG_STEP_EXCEPTIONS (TRACE_EXCEPTIONS & ~(1u << X86_DB) & ~(1u << X86_BP) & ~(1u << X86_OF))

/* The register the step's run to a handler holds (dbg_dr.slot[n]) */
#define DBG_SLOT_TO 0xff

/* A breakpoint or watchpoint of the debugger's (SET_HW). */
struct dbg_hw {
	bool on;
	u8 rwlen;		/* DR7's RW (bits 1:0) and LEN (bits 3:2) for it */
	u64 addr;
};

/*
 * Under `lock`: a vCPU's stopped bit is set by that vCPU when it starts
 * waiting and cleared by RESUME (every bit) or by the vCPU itself when it
 * takes its STEP; requests (dbg_control) run under it whole. So a request
 * touches a vCPU (its registers, its page tables) only while that vCPU
 * waits in the loop below, and a vCPU's state in the channel is STOPPED
 * exactly while its bit is set.
 */
static struct {
	struct hvtrace_dbg *area;	/* NULL: no debugger (no host control) */
	struct spinlock lock;
	volatile u32 held;		/* the hypervisor's own: never read back */
	volatile u32 gen;		/* bumped by every RESUME */
	volatile u32 step;		/* vCPU id + 1 allowed to run one instruction; 0: none */
	volatile u64 stopped;		/* bit per vCPU held now */
	struct dbg_hw hw[HVTRACE_DBG_SLOTS];	/* SET_HW's slots */
	volatile u32 hw_gen;		/* bumped by every SET_HW: each vCPU composes anew */
	volatile u32 bp_gen;		/* bumped by every SET_HW of an instruction breakpoint (bps_sync) */
	u64 stops[HV_MAX_CPUS];		/* each vCPU's publications (the channel's copy is not read) */
	struct pagebp pbp;		/* SET_HW's page slots (4-31) */
	bool pbp_used;			/* the nested tables were ever changed for them: execute */
	bool pbw_used;			/* ... write (page watchpoints) */
	u8 buf[HVTRACE_DBG_BUF_SIZE];	/* READ and WRITE (one request at a time: rec_ctl_poll) */
} dbg;

_Static_assert(HV_MAX_CPUS <= 64, "dbg.stopped is a 64-bit mask");

u64 dbg_area_size(u32 n)
{
	return (HVTRACE_DBG_VCPU_OFFSET + (u64)n * sizeof(struct hvtrace_dbg_vcpu) + PAGE_SIZE - 1) &
	       ~(u64)(PAGE_SIZE - 1);
}

void dbg_init(struct hvtrace_dbg *area)
{
	memset(area, 0, dbg_area_size(hv.nr_vcpus));
	area->nr_vcpus = hv.nr_vcpus;
	for (u32 i = 0; i < hv.nr_vcpus; i++)
		area->vcpu[i].apic_id = hv.vcpus[i]->apic_id;
	asm volatile("" ::: "memory");
	area->magic = HVTRACE_DBG_MAGIC;
	dbg.area = area;
}

bool dbg_held(void)
{
	return dbg.area && dbg.held;
}

/* RFLAGS as the guest has it: a TF of the engine's or of a step left out */
static u64 guest_rflags(struct vcpu *v)
{
	return (v->rflags & ~RFLAGS_TF) | (trace_guest_tf(v) ? RFLAGS_TF : 0);
}

static void publish(struct vcpu *v)
{
	struct hvtrace_dbg_regs r = { 0 };
	for (int i = 0; i < GPR_COUNT; i++)
		r.gpr[i] = v->gpr[i];
	r.rip = v->rip;
	r.rflags = guest_rflags(v);
	r.cr0 = hv.ops->get_cr(v, 0);
	r.cr2 = hv.ops->get_cr(v, 2);
	r.cr3 = hv.ops->get_cr(v, 3);
	r.cr4 = hv.ops->get_cr(v, 4);
	r.efer = hv.ops->get_efer(v);
	for (int s = SEG_ES; s <= SEG_GS; s++) {
		struct hv_segment seg;
		hv.ops->get_seg(v, (enum hv_seg)s, &seg);
		r.seg_base[s] = seg.base;
		r.seg_sel[s] = seg.sel;
		r.seg_attr[s] = seg.attr;
	}
	r.kernel_gs_base = hv.ops->get_msr(v, MSR_KERNEL_GS_BASE);
	struct hvtrace_dbg_vcpu *d = &dbg.area->vcpu[v->id];
	d->regs = r;
	d->hits = v->trace->dbg_dr.hits;
	d->stops = ++dbg.stops[v->id];
	asm volatile("" ::: "memory");	/* the registers before the state (x86 orders stores) */
	*(volatile u32 *)&d->state = HVTRACE_DBG_STOPPED;
}

static void unpublish(u32 id)
{
	*(volatile u32 *)&dbg.area->vcpu[id].state = HVTRACE_DBG_RUNNING;
}

/* The step (engine off) is trace/hstep.c's hidden one; interrupts are not
 * injected meanwhile (trace_irq_pick). Cancelled, its instruction has not
 * run. */
void dbg_step_cancel(struct vcpu *v)
{
	if (v->trace->dbg_step.on) {
		hstep_end(v, &v->trace->dbg_step, false);
		/* the engine steps that instruction instead (trace_before_entry) */
		v->trace->dbg_dr.tstep = DBG_TSTEP_WANT;
		v->trace->dbg_dr.tstep_rip = v->rip;
	}
	v->trace->dbg_dr.to_on = false;
	v->trace->dbg_dr.pushf_w = 0;
	v->trace->dbg_dr.syscall = false;
}

/* Every vCPU held (STOP, or v reached the breakpoint: stop_vcpu = v + 1).
 * Under dbg.lock. */
static void hold_all(struct vcpu *v, u32 stop_vcpu)
{
	if (dbg.held) {
		/* another vCPU's stop came first: this one's slots wait in its `hits` for the
		 * host, which reports them at gdb's next resume (its pending stop) */
		if (stop_vcpu)
			LOG_INFO("debugger: vcpu %u reached a breakpoint or watchpoint too (slots %x, rip %lx), "
				 "every vCPU held already", v->id, v->trace->dbg_dr.hits, v->rip);
		return;
	}
	dbg.area->stop_tsc = rdtsc();
	dbg.area->stop_vcpu = stop_vcpu;
	dbg.held = 1;
	dbg.area->held = 1;
	hv_kick_others(v);
	if (stop_vcpu)
		LOG_INFO("debugger: vcpu %u reached a breakpoint or watchpoint (slots %x, rip %lx): every vCPU "
			 "held", v->id, v->trace->dbg_dr.hits, v->rip);
	else
		LOG_INFO("debugger: every vCPU held (host request)");
}

void dbg_dr_release(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	if (!d->on)
		return;
	for (int n = 0; n < 4; n++)
		if (d->held & (1u << n))
			dr_hw_write(n, d->saved[n]);
	hv.ops->set_dr(v, 7, d->saved_dr7);
	d->on = false;
	d->held = 0;
	hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}

/*
 * The debugger's slots into the registers the guest's DR7 (`guest7`)
 * does not enable, DR3 first and down; a slot that finds none stays
 * unarmed on this vCPU until the guest frees one. The guest's values of
 * the registers taken and its DR7 are kept (guest_dr_read and
 * guest_dr_write use them); the VMCB's DR7 is the guest's with the
 * debugger's enable, RW and LEN bits in the registers it took. The slots
 * are copied under dbg.lock (another vCPU may apply SET_HW meanwhile: this
 * one then composes again at its next entry, hw_gen).
 */
static void dr_acquire(struct vcpu *v, u64 guest7)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	struct dbg_hw hw[HVTRACE_DBG_SLOTS];
	u64 dr7 = guest7;
	int n = 3;
	spin_lock(&dbg.lock);	/* the slots whole, as SET_HW left them */
	d->gen = dbg.hw_gen;
	memcpy(hw, dbg.hw, sizeof(hw));
	spin_unlock(&dbg.lock);
	d->held = 0;
	d->to_armed = false;
	if (d->to_on) {
		while (n >= 0 && (guest7 & (DR7_L(n) | DR7_G(n))))
			n--;
		if (n >= 0) {	/* free: step_fault looked */
			d->saved[n] = dr_hw_read(n);
			dr_hw_write(n, d->to);
			d->slot[n] = DBG_SLOT_TO;
			d->held |= 1u << n;
			dr7 = (dr7 & ~(DR7_L(n) | DR7_G(n) | DR7_RWLEN(n))) | DR7_L(n);
			d->to_armed = true;
			n--;
		}
	}
	for (u32 s = 0; s < HVTRACE_DBG_SLOTS; s++) {
		struct dbg_hw h = hw[s];
		if (!h.on)
			continue;
		while (n >= 0 && (guest7 & (DR7_L(n) | DR7_G(n))))
			n--;
		if (n < 0)
			break;
		d->saved[n] = dr_hw_read(n);
		dr_hw_write(n, h.addr);
		d->slot[n] = (u8)s;
		d->held |= 1u << n;
		dr7 = (dr7 & ~(DR7_L(n) | DR7_G(n) | DR7_RWLEN(n))) | DR7_L(n) |
		      ((u64)h.rwlen << DR7_RW_SHIFT(n));
		n--;
	}
	d->saved_dr7 = guest7;
	d->on = true;
	hv.ops->set_dr(v, 7, dr7);
	hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v));
}

/* The guest writes its DR7 while the debugger's registers are composed:
 * composed again around the new value (a register it now enables goes
 * back to it, a slot moves to one it freed). */
void dbg_dr_guest_dr7(struct vcpu *v, u64 val)
{
	dbg_dr_release(v);
	dr_acquire(v, val);
}

/* The debugger's slots on v while the engine is off and its breakpoint
 * (the recorder's start address) is not armed, else none. */
static void dr_sync(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct dbg_dr *d = &t->dbg_dr;
	bool any = d->to_on;
	for (u32 s = 0; s < HVTRACE_DBG_SLOTS; s++)
		any |= dbg.hw[s].on;
	bool want = any && t->engine == HVTRACE_ENGINE_OFF && !t->bp.armed;
	if (!want) {
		dbg_dr_release(v);
		return;
	}
	if (d->on && d->gen == dbg.hw_gen && d->to_armed == d->to_on)
		return;
	dbg_dr_release(v);
	dr_acquire(v, hv.ops->get_dr(v, 7));
}

/*
 * A #DB with the engine off while the debugger holds registers. Their
 * B0-B3 are the debugger's: cleared from DR6 whatever else came (the
 * guest never sees a cause in a register it does not have). An
 * instruction breakpoint counts at its address only (RF, or a step's
 * report of a match, SDM Vol. 3 18.3.1.1), a data breakpoint always.
 * A hit holds every vCPU. An instruction breakpoint at the instruction
 * the debugger steps is no hit: RF lets that instruction run (GDB steps
 * over a breakpoint it keeps inserted; without RF the step would fault
 * there again and again). The #DB is the guest's when it had a cause of
 * its own too (its breakpoints, BS of its TF, BD), else it is dropped.
 */
bool dbg_bp_hit(struct vcpu *v, const struct hv_event *ev)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	if (!dbg.area || ev->vector != X86_DB || !d->on || !d->held)
		return false;
	u64 dr6 = hv.ops->get_dr(v, 6);
	u64 mine = dr6 & d->held;
	if (!mine)
		return false;
	hv.ops->set_dr(v, 6, dr6 & ~(u64)d->held);
	u32 hits = 0;
	u64 rip = gmem_linear_rip(v);
	for (int n = 0; n < 4; n++) {
		if (!(mine & (1u << n)))
			continue;
		if (d->slot[n] == DBG_SLOT_TO) {
			if (rip == d->to)
				d->to_on = false;	/* the handler reached: held at the entry (dbg_before_entry) */
			continue;
		}
		u64 dr7 = hv.ops->get_dr(v, 7);
		bool exec = !((dr7 >> DR7_RW_SHIFT(n)) & 3);
		if (exec && rip == dr_hw_read(n) && v->trace->dbg_step.on && v->rip == v->trace->dbg_step.rip)
			v->rflags |= RFLAGS_RF;
		else if (!exec || rip == dr_hw_read(n))
			hits |= 1u << d->slot[n];
	}
	if (hits) {
		d->hits |= hits;
		spin_lock(&dbg.lock);
		hold_all(v, v->id + 1);
		spin_unlock(&dbg.lock);
	}
	return !(dr6 & DR6_CAUSES & ~(u64)d->held);
}

/* The step runs on to `to` (`known`: there is one; dr_acquire arms it),
 * when a register is free for it: true. */
static bool step_to(struct vcpu *v, bool known, u64 to)
{
	struct trace_vcpu *t = v->trace;
	struct dbg_dr *d = &t->dbg_dr;
	u64 guest7 = d->on ? d->saved_dr7 : hv.ops->get_dr(v, 7);
	bool free = false;
	for (int n = 0; n < 4; n++)
		free |= !(guest7 & (DR7_L(n) | DR7_G(n)));
	d->to_on = free && t->engine == HVTRACE_ENGINE_OFF && !t->bp.armed && known;
	if (d->to_on)
		d->to = to;
	d->to_entered = false;
	return d->to_on;
}

/* The step runs on to the handler of `vector` */
static bool step_to_handler(struct vcpu *v, u8 vector)
{
	u64 handler = 0;
	bool known = idt_handler(v, vector, &handler);
	return step_to(v, known, handler);
}

/*
 * A STEP of an INT n, INT3, INTO or INT1: these deliver through the IDT
 * and clear TF on the way (SDM Vol. 3 6.12.1.3), so a hidden TF would be
 * saved in the frame and the handler would run unstepped. No TF then:
 * the instruction runs as the guest's, and the step runs on to the
 * handler (step_to_handler); a fault on the way (a gate's DPL, say) is
 * taken as a faulting step's. False: not one of them, or no register
 * free: the hidden TF as for any instruction. A PUSHF and a SYSCALL are
 * noted (step_saved_tf).
 *
 * A SYSCALL saves RFLAGS in R11 and then masks them by SFMASK (SDM Vol.
 * 2B SYSCALL); the single-step trap follows TF as it is after that mask
 * (QEMU: "TF is checked after the syscall insn completes"). With TF in
 * SFMASK (Linux's) no trap would come and the handler would run
 * unstepped: it runs without the hidden TF, as INT n does, on to LSTAR
 * (CSTAR), and R11 holds the guest's own TF. (With the hidden TF as well,
 * QEMU's TCG did not stop at the breakpoint there.) Without, or with no
 * register free, the hidden TF: the trap comes at the handler's first
 * instruction, not yet run (with TF in SFMASK and no register free: at
 * the next exit), and R11's TF is mended to the guest's once it ran
 * (step_saved_tf).
 */
static bool step_soft_int(struct vcpu *v)
{
	u8 b[15];
	struct dec_insn in;
	u64 base, to = 0;
	enum dec_mode mode = gmem_code_mode(v, &base);
	v->trace->dbg_dr.pushf_w = 0;
	v->trace->dbg_dr.syscall = false;
	if (gmem_decode(v, base + v->rip, v->rip, mode, b, &in) != DEC_OK)
		return false;
	if (is_legacy_op(&in, 0, 0x9c))
		v->trace->dbg_dr.pushf_w = in.opsize;
	if (is_legacy_op(&in, 1, 0x05)) {
		if (syscall_target(v, &in, mode, &to) && (hv.ops->get_msr(v, MSR_SFMASK) & RFLAGS_TF) &&
		    step_to(v, true, to))
			return true;
		v->trace->dbg_dr.syscall = true;
		return false;
	}
	int vec = soft_int_vector(v, &in, b);
	return vec >= 0 && step_to_handler(v, (u8)vec);
}

/* The step of a PUSHF or a SYSCALL completed: the RFLAGS it saved (the
 * image PUSHF pushed, SDM Vol. 2B PUSHF: the flags as they are; R11)
 * hold the hidden TF: the guest's goes in its place. */
static void step_saved_tf(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	u64 base;
	bool tf = v->trace->dbg_step.tf;
	if (d->syscall)
		mend_saved_tf_r11(v, tf);
	if (d->pushf_w)
		mend_saved_tf(v, stack_top(v, gmem_code_mode(v, &base)), d->pushf_w, tf);
	d->pushf_w = 0;
	d->syscall = false;
}

/*
 * An exception (DBG_STEP_EXCEPTIONS) while the debugger steps: the
 * instruction did not complete (a fault: RFLAGS and RIP as before it),
 * or the delivery of an earlier one faulted in turn. TF is the guest's
 * again before the processor pushes RFLAGS, and the step runs on to the
 * first instruction of the handler the exception goes to, as a step of
 * the delivery: an instruction breakpoint there in a register of the
 * debugger's (dr_acquire: before its slots), the vCPU held when it
 * fires (dbg_bp_hit), before that instruction runs. Where no register is
 * free (the guest's DR7 enables all four, or the recorder's start address
 * holds DR3) or the IDT gives no handler, the step ends here instead:
 * the vCPU is held at the faulting instruction with the exception
 * pending, delivered when it goes on.
 */
static void step_fault(struct vcpu *v, const struct hv_event *ev)
{
	v->trace->dbg_dr.pushf_w = 0;	/* it did not push nor save R11 */
	v->trace->dbg_dr.syscall = false;
	if (v->trace->dbg_step.on)
		hstep_end(v, &v->trace->dbg_step, false);
	step_to_handler(v, ev->vector);
}

/* The step's #DB: the debugger's alone, or the guest's too: its own TF,
 * or breakpoints of its own the instruction hit (which this step once
 * dropped, restoring DR6 over them; nmi.c's step did not) */
bool dbg_step_db(struct vcpu *v, const struct hv_event *ev)
{
	if ((v->trace->dbg_step.on || v->trace->dbg_dr.to_on) && ev->vector != X86_DB) {
		step_fault(v, ev);
		return false;	/* delivered as it came: dispatch/event.c */
	}
	enum hstep_db r = hstep_db(v, &v->trace->dbg_step, ev);
	if (r != HSTEP_NOT_STEP)
		step_saved_tf(v);
	return r == HSTEP_HIDDEN;
}

static void hold(struct vcpu *v);

/*
 * Page breakpoints (SET_HW slots 4-31; pagebp.h): page i's execute
 * permission in the nested tables as its breakpoints and openers want it
 * now: removed while it has breakpoints and no vCPU runs an instruction
 * there, else as it was before its first breakpoint (exactly: the
 * permission the backend reported then). An entry with neither is freed.
 * Under dbg.lock. 0, or -HVTRACE_ENOMEM when the backend could not (a
 * large page to split and no memory: SET_HW's, while every vCPU is held;
 * opening and closing find the page split).
 */
/* One permission of a page (execute or write: `set`, the backend's) as its slots want it:
 * taken (`take`), or given back exactly as it was before the first took it (*orig, noted
 * then: *known). False: the backend could not. */
static bool perm_sync(bool (*set)(u64 gpa, bool allow, bool *was), u64 gpa, bool take, bool *taken, bool *known,
		      bool *orig, bool *used)
{
	bool was = true;
	if (take == *taken)
		return true;
	if (!set(gpa, take ? false : *orig, &was))
		return false;
	if (take && !*known) {
		*known = true;
		*orig = was;
	}
	*taken = take;
	*used = true;
	return true;
}

static s64 page_sync(int i)
{
	struct pagebp_page *pg = &dbg.pbp.page[i];
	if (!perm_sync(hv.ops->npt_set_exec, pg->gpa, pagebp_want_nx(pg), &pg->nx, &pg->orig_known, &pg->orig_exec,
		       &dbg.pbp_used) ||
	    !perm_sync(hv.ops->npt_set_write, pg->gpa, pagebp_want_ro(pg), &pg->ro, &pg->worig_known, &pg->orig_write,
		       &dbg.pbw_used))
		return -HVTRACE_ENOMEM;
	pagebp_release(&dbg.pbp, i);
	return 0;
}

/* A page watchpoint's bytes (slot s, guest RAM: set_page), summed (FNV-1a): compared
 * before and after an instruction that may write them */
static u64 watch_sum(u32 s)
{
	u64 h = 0xcbf29ce484222325ull, gpa = dbg.pbp.slot[s].gpa;
	u8 buf[64];
	for (u32 done = 0, len = dbg.pbp.slot[s].len; done < len;) {
		u32 n = MIN(len - done, (u32)sizeof(buf));
		if (!gmem_read_phys(gpa + done, buf, n))
			return 0;
		for (u32 k = 0; k < n; k++)
			h = (h ^ buf[k]) * 0x100000001b3ull;
		done += n;
	}
	return h;
}

/* The page watchpoints v summed before its write (dbg_npf) that its instruction changed: a
 * hit, the guest held as at a debug register's watchpoint (after the access). A write that
 * leaves the bytes as they were is none (gdb's `watch` stops on a change only). Under
 * dbg.lock. */
static void watch_check(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	u32 hits = 0;
	for (u32 s = 0; s < (u32)PAGEBP_SLOTS; s++)
		if ((d->wslots & (1u << s)) && dbg.pbp.slot[s].on && dbg.pbp.slot[s].len &&
		    watch_sum(s) != d->wsum[s])
			hits |= 1u << s;
	d->wslots = 0;
	if (hits) {
		d->hits |= hits << HVTRACE_DBG_SLOTS;
		hold_all(v, v->id + 1);
	}
}

/* The pages v opened (dbg_npf) closed again: its instruction ran (or its
 * step was cancelled), or, tracing, it exited once. */
static void np_close(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	spin_lock(&dbg.lock);
	if (d->wslots)
		watch_check(v);	/* before the pages close: nobody writes them meanwhile but v */
	for (u32 k = 0; k < d->np_n; k++) {
		struct pagebp_page *pg = &dbg.pbp.page[d->np_page[k]];
		if (pg->open)
			pg->open--;
		page_sync(d->np_page[k]);
	}
	d->np_n = 0;
	d->np_at_exit = 0;
	spin_unlock(&dbg.lock);
}

/*
 * A nested page fault. The debugger's if it is a fetch from a page whose
 * execute permission a page breakpoint took. Its slot's breakpoint is
 * there when the vCPU's linear RIP is the breakpoint's address and the
 * fetch is from the guest-physical page that address mapped to when it
 * was set: a hit, the guest held as at a debug register's (the
 * instruction has not run; the page stays as it is). Not a hit (another
 * instruction on the page, a vCPU that traces, or the instruction the
 * debugger steps, as RF lets a debug register's pass): the page is
 * opened, executable for every vCPU, for this vCPU's one instruction,
 * run as the debugger's STEP runs one (the hidden TF, a fault or an
 * INT n on to its handler: step_soft_int) but without holding after it,
 * and closed when that step ends (dbg_before_entry). A vCPU that traces
 * (the engine owns TF, and looks for the breakpoints itself before each
 * instruction: dbg_trace_bp) has it open until its next exit. The rule for the
 * other vCPUs: while the page is open they run there unchecked, and one
 * that ran there keeps what its TLB cached until its own next entry; so
 * another vCPU may pass a breakpoint on that page in that window.
 * A fetch refused on a page no longer protected (another vCPU opened or
 * freed it since; this vCPU flushes what it cached at its entry) is
 * taken again.
 */
bool dbg_npf(struct vcpu *v, const struct hv_event *ev)
{
	struct trace_vcpu *t = v->trace;
	struct dbg_dr *d = &t->dbg_dr;
	/* a fetch or a write the tables' permission refused (not a page they lack) */
	bool fetch = (ev->error_code & (HV_NPF_FETCH | HV_NPF_PRESENT)) == (HV_NPF_FETCH | HV_NPF_PRESENT);
	bool write = !fetch && (ev->error_code & (HV_NPF_WRITE | HV_NPF_PRESENT)) == (HV_NPF_WRITE | HV_NPF_PRESENT);
	if (!dbg.area || (!fetch && !write))
		return false;
	spin_lock(&dbg.lock);
	int i = pagebp_find(&dbg.pbp, ev->gpa);
	if (i < 0 || !(fetch ? dbg.pbp.page[i].nx : dbg.pbp.page[i].ro)) {
		bool ours = fetch ? dbg.pbp_used : dbg.pbw_used;
		spin_unlock(&dbg.lock);
		return ours;
	}
	bool traced = t->engine != HVTRACE_ENGINE_OFF || t->bp.armed;
	bool stepped = t->dbg_step.on && v->rip == t->dbg_step.rip;
	u32 hits = traced || stepped || write ? 0 : pagebp_hits(&dbg.pbp, gmem_linear_rip(v), ev->gpa);
	/* a write on a page watchpoints keep (not while v traces: none is armed on it then): the
	 * watched bytes summed before it, compared when its step ends (watch_check) */
	u32 ws = write ? pagebp_watches(&dbg.pbp, ev->gpa) & ~d->wslots : 0;
	for (u32 s = 0; s < (u32)PAGEBP_SLOTS; s++)
		if (ws & (1u << s))
			d->wsum[s] = watch_sum(s);
	d->wslots |= ws;
	if (hits) {
		d->hits |= hits << HVTRACE_DBG_SLOTS;
		hold_all(v, v->id + 1);
		spin_unlock(&dbg.lock);
		return true;
	}
	u32 k = 0;
	while (k < d->np_n && d->np_page[k] != i)
		k++;
	if (k == d->np_n && k < sizeof(d->np_page)) {
		d->np_page[d->np_n++] = (u8)i;
		dbg.pbp.page[i].open++;
		page_sync(i);
	}
	/* a write of an event's delivery (its frame on a watched stack): the event goes in again
	 * at the entry, and a hidden TF would be in the RFLAGS it pushes: the delivery runs on to
	 * its handler instead, as a faulting step's does (step_to), or, with no register for
	 * that, the page stays open until the vCPU's next exit */
	bool delivery = write && ev->vectoring &&
			(ev->vec_type == HV_VEC_EXT_INT || ev->vec_type == HV_VEC_NMI || ev->vec_type == HV_VEC_EXCEPTION);
	if (traced || (delivery && !d->to_on && !step_to_handler(v, ev->vec_vector)))
		d->np_at_exit = 1;
	else if (!delivery && !t->dbg_step.on && !d->to_on && !step_soft_int(v))
		hstep_arm(v, &t->dbg_step, false);
	spin_unlock(&dbg.lock);
	return true;
}

/* The watchpoints of the debugger's slots into an engine's list (struct dbg_bps: w, wn),
 * under dbg.lock: a debug register's RW 01 (writes) or 11 (reads too) and LEN (SDM Vol. 3
 * 18.2.4: 00, 01, 11, 10 for 1, 2, 4, 8 bytes), a page slot's bytes */
static void watch_list(struct dbg_bps *b)
{
	b->wn = 0;
	for (u32 s = 0; s < HVTRACE_DBG_SLOTS; s++) {
		u8 rw = dbg.hw[s].rwlen & 3, len = dbg.hw[s].rwlen >> 2;
		if (dbg.hw[s].on && rw)
			b->w[b->wn++] = (struct pagebp_watch){ .slot = (u8)s, .reads = rw == 3,
							       .len = len == 2 ? 8u : len == 3 ? 4u : len + 1u,
							       .addr = dbg.hw[s].addr };
	}
	for (u32 s = 0; s < (u32)PAGEBP_SLOTS; s++)
		if (dbg.pbp.slot[s].on && dbg.pbp.slot[s].len)
			b->w[b->wn++] = (struct pagebp_watch){ .slot = (u8)(HVTRACE_DBG_SLOTS + s),
							       .len = dbg.pbp.slot[s].len,
							       .addr = dbg.pbp.slot[s].addr,
							       .gpa = dbg.pbp.slot[s].gpa };
}

/* The instruction breakpoints of the debugger's slots into v's list for the engines
 * (struct dbg_bps), when they changed since v last looked */
static void bps_sync(struct vcpu *v)
{
	struct dbg_bps *b = &v->trace->dbg_bps;
	if (b->gen == dbg.bp_gen)
		return;
	spin_lock(&dbg.lock);
	b->gen = dbg.bp_gen;
	b->n = 0;
	b->filter = 0;
	for (u32 s = 0; s < HVTRACE_DBG_SLOTS_MAX; s++) {
		bool on = s < HVTRACE_DBG_SLOTS ? dbg.hw[s].on && !dbg.hw[s].rwlen
						: dbg.pbp.slot[s - HVTRACE_DBG_SLOTS].on && !dbg.pbp.slot[s - HVTRACE_DBG_SLOTS].len;
		if (!on)
			continue;
		b->slot[b->n] = (u8)s;
		b->addr[b->n] = s < HVTRACE_DBG_SLOTS ? dbg.hw[s].addr : dbg.pbp.slot[s - HVTRACE_DBG_SLOTS].addr;
		b->gpa[b->n] = s < HVTRACE_DBG_SLOTS ? 0 : dbg.pbp.slot[s - HVTRACE_DBG_SLOTS].gpa;
		b->filter |= dbg_bp_hash(b->addr[b->n]);
		b->n++;
	}
	watch_list(b);
	spin_unlock(&dbg.lock);
}

/* The slots (bits as in `hits`) whose breakpoint v reaches at linear `lin`: a debug
 * register's at its address, a page breakpoint's there on the guest-physical page it was
 * set on (as dbg_npf decides) */
static u32 trace_hits(struct vcpu *v, u64 lin)
{
	const struct dbg_bps *b = &v->trace->dbg_bps;
	u32 hits = 0;
	u64 gpa = 0;
	int walked = 0;	/* 1: lin translated to gpa, -1: not mapped */
	if (!dbg_bp_listed(b, lin))
		return 0;
	for (u32 i = 0; i < b->n; i++) {
		if (b->addr[i] != lin)
			continue;
		if (b->slot[i] < HVTRACE_DBG_SLOTS) {
			hits |= 1u << b->slot[i];
			continue;
		}
		if (!walked)
			walked = gmem_translate(v, lin, &gpa) ? 1 : -1;
		if (walked > 0 && (gpa >> PAGE_SHIFT) == (b->gpa[i] >> PAGE_SHIFT))
			hits |= 1u << b->slot[i];
	}
	return hits;
}

/*
 * Before an instruction of a vCPU that traces, where the engine is about to run it or plan
 * from it (trace_before_entry, after an interpreted burst, which leaves every address
 * listed): a breakpoint of the debugger's there is a hit, as a debug register's or a page
 * breakpoint's is with the engine off (the instruction has not run), and the vCPU is held
 * here until the host resumes or steps it; its records run up to that instruction. Not at
 * the address it was held at last until it has been elsewhere (RF's part: gdb's continue
 * from a breakpoint without a step over it), nor while an event goes in at this entry (the
 * handler runs first). Where the host moved RIP while it was held, the new one is looked at.
 */
void dbg_trace_bp(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	for (;;) {
		u64 lin = gmem_linear_rip(v);
		if (d->pass_on && lin == d->pass)
			return;
		d->pass_on = false;
		if (!v->trace->dbg_bps.filter || (hv.ops->event_pending && hv.ops->event_pending(v)))
			return;
		u32 hits = trace_hits(v, lin);
		if (!hits)
			return;
		d->hits |= hits;
		spin_lock(&dbg.lock);
		hold_all(v, v->id + 1);
		spin_unlock(&dbg.lock);
		hold(v);
		d->pass = lin;
		d->pass_on = true;
		bps_sync(v);
		if (d->tstep)
			return;	/* stepped from here: trace_before_entry arms the step */
	}
}

void dbg_trace_watch(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	d->hits |= d->whits;
	d->whits = 0;
	spin_lock(&dbg.lock);
	hold_all(v, v->id + 1);
	spin_unlock(&dbg.lock);
	hold(v);
	bps_sync(v);
}

bool dbg_trace_wstep(const struct vcpu *v)
{
	const struct dbg_dr *d = &v->trace->dbg_dr;
	return d->np_n && d->np_at_exit && d->wslots;
}

/* The debugger's DR0/DR1 back to the guest's values, the VMCB's DR7 fields as they were */
static void tw_release(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	u64 fields = 0;
	for (int n = 0; n < 2; n++)
		if (d->tw_held & (1u << n)) {
			dr_hw_write(n, d->tw_saved[n]);
			fields |= DR7_L(n) | DR7_G(n) | DR7_RWLEN(n);
		}
	hv.ops->set_dr(v, 7, (hv.ops->get_dr(v, 7) & ~fields) | d->tw_dr7_was);
	d->tw_held = 0;
	d->tw_dr7 = d->tw_dr7_was = 0;
}

/*
 * The debugger's watchpoints on a vCPU that traces, for the instructions the processor runs
 * (the fast and reference engines'; engine = interp's bursts check their own accesses:
 * interp_engine.c imem_watch): in DR1 and DR0, the registers the engines never take, where
 * the guest's own DR7 does not enable them, one debug-register watchpoint each, in slot
 * order (more than two, or a guest that uses DR0/DR1: the rest wait unarmed while the
 * processor runs). For this entry only: dbg_trace_dr_exit takes them down first at the exit,
 * so that everything between (the engine's breakpoint, the guest's MOV DR) sees the guest's
 * registers alone.
 */
void dbg_trace_dr_arm(struct vcpu *v)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	const struct dbg_bps *b = &v->trace->dbg_bps;
	if (d->tw_held)
		tw_release(v);	/* an exit that did not pass trace_exit_begin */
	if (!b->wn || v->trace->engine == HVTRACE_ENGINE_OFF)
		return;
	u64 guest7 = guest_dr_read(v, 7), fields = 0, bits = 0;
	int n = 1;
	for (u32 i = 0; i < b->wn && n >= 0; i++) {
		const struct pagebp_watch *w = &b->w[i];
		if (w->slot >= HVTRACE_DBG_SLOTS)
			continue;
		while (n >= 0 && (guest7 & (DR7_L(n) | DR7_G(n))))
			n--;
		if (n < 0)
			break;
		u64 len = w->len == 8 ? 2 : w->len == 4 ? 3 : w->len - 1;
		d->tw_saved[n] = dr_hw_read(n);
		dr_hw_write(n, w->addr);
		d->tw_slot[n] = w->slot;
		d->tw_held |= 1u << n;
		fields |= DR7_L(n) | DR7_G(n) | DR7_RWLEN(n);
		bits |= DR7_L(n) | ((w->reads ? 3ull : 1ull) | len << 2) << DR7_RW_SHIFT(n);
		n--;
	}
	if (!d->tw_held)
		return;
	u64 dr7 = hv.ops->get_dr(v, 7);
	d->tw_dr7_was = dr7 & fields;
	d->tw_dr7 = bits;
	hv.ops->set_dr(v, 7, (dr7 & ~fields) | bits);
}

void dbg_trace_dr_exit(struct vcpu *v, const struct hv_event *ev)
{
	struct dbg_dr *d = &v->trace->dbg_dr;
	d->tw_fired = false;
	if (!d->tw_held)
		return;
	u32 hits = 0;
	if (ev->kind == HV_EV_EXCEPTION && ev->vector == X86_DB) {
		/* a data breakpoint is a trap after the access (SDM Vol. 3 18.3.1.2): B0/B1 of the
		 * registers held are the debugger's, never shown to the guest */
		u64 dr6 = hv.ops->get_dr(v, 6), mine = dr6 & d->tw_held;
		for (int n = 0; n < 2; n++)
			if (mine & (1u << n))
				hits |= 1u << d->tw_slot[n];
		if (mine)
			hv.ops->set_dr(v, 6, dr6 & ~mine);
	}
	tw_release(v);
	if (!hits)
		return;
	d->tw_fired = true;
	d->hits |= hits;
	spin_lock(&dbg.lock);
	hold_all(v, v->id + 1);
	spin_unlock(&dbg.lock);
}

u64 dbg_trace_dr7(const struct vcpu *v, u64 guest7)
{
	const struct dbg_dr *d = &v->trace->dbg_dr;
	u64 fields = 0;
	for (int n = 0; n < 2; n++)
		if (d->tw_held & (1u << n))
			fields |= DR7_L(n) | DR7_G(n) | DR7_RWLEN(n);
	return (guest7 & ~fields) | d->tw_dr7;
}

/* The debugger's step of a vCPU that traces (tstep) has ended at this exit: its instruction
 * completed (the engine's step trap, or an emulated instruction moved RIP), or the event it
 * went into reached its handler (the engine's breakpoint there); not while that event is
 * still on its way, nor at an exit that came before the instruction (an interrupt, a page
 * opened for it). */
static bool tstep_done(struct vcpu *v)
{
	const struct trace_vcpu *t = v->trace;
	if (t->engine == HVTRACE_ENGINE_OFF)
		return true;
	if (t->bp.armed && t->bp.kind == BP_HANDLER)
		return false;
	return t->interp_db_exit || v->rip != t->dbg_dr.tstep_rip;
}

void dbg_before_entry(struct vcpu *v)
{
	if (!dbg.area)
		return;
	struct trace_vcpu *t = v->trace;
	bool tstepping = false;
	if (t->dbg_dr.tstep == DBG_TSTEP_RUN) {
		tstepping = !tstep_done(v);
		if (!tstepping) {
			t->dbg_dr.tstep = DBG_TSTEP_NONE;
			t->dbg_dr.pass_on = false;
		}
	}
	if (t->dbg_step.on) {
		/* the step completed by another exit (an instruction the
		 * hypervisor emulated, a fault it injected): done */
		if (v->rip == t->dbg_step.rip)
			return;
		hstep_end(v, &t->dbg_step, true);
		step_saved_tf(v);
	}
	/* on its way to a faulting step's handler (step_fault): that way is
	 * one entry, the delivery's; any exit after it but the breakpoint's
	 * (an interrupt's at the handler's first instruction, a fault of the
	 * delivery's that step_fault did not take) ends it where it is */
	if (t->dbg_dr.to_on && t->dbg_dr.to_entered)
		t->dbg_dr.to_on = false;
	/* tracing, open for the entry after the fault (closed here it would fault again at once,
	 * and again), closed at the exit after it */
	if (t->dbg_dr.np_at_exit == 1)
		t->dbg_dr.np_at_exit = 2;
	else if (t->dbg_dr.np_n && (t->dbg_dr.np_at_exit || (!t->dbg_step.on && !t->dbg_dr.to_on)))
		np_close(v);
	if (dbg.held && !t->dbg_dr.to_on && !tstepping)
		hold(v);
	bps_sync(v);	/* the engines' breakpoints as the host left them */
	dr_sync(v);	/* also before a step: GDB steps over a breakpoint it removed */
}

/* Again after the recorder's updates of this exit (trace_entry_sync,
 * trace_before_entry): tracing may have stopped here (a trace_ctl stop
 * hypercall, `trace.stop`), and the debugger's registers are armed for
 * this entry, not at the vCPU's next exit, which with the engine off may
 * come long after the breakpoint (t_gdb's gdb_chain_bp, a few
 * instructions after its stop hypercall). */
void dbg_after_trace_sync(struct vcpu *v)
{
	if (!dbg.area)
		return;
	struct trace_vcpu *t = v->trace;
	if (t->dbg_dr.tw_held)
		tw_release(v);	/* composed anew below (dbg_trace_dr_arm) when the engine still runs */
	if (t->dbg_dr.tstep == DBG_TSTEP_WANT) {
		if (t->engine != HVTRACE_ENGINE_OFF) {
			t->dbg_dr.tstep = DBG_TSTEP_RUN;	/* trace_before_entry armed the engine's step */
		} else {
			/* tracing stopped at this entry: the hidden step instead */
			t->dbg_dr.tstep = DBG_TSTEP_NONE;
			if (!step_soft_int(v))
				hstep_arm(v, &t->dbg_step, false);
		}
	}
	dr_sync(v);
	/* last: dr_sync and hstep set the intercepts the engine wants idle */
	if (t->engine != HVTRACE_ENGINE_OFF) {
		t->dbg_dr.wide = false;	/* the engine's own intercepts */
		dbg_trace_dr_arm(v);
		return;
	}
	bool wide = t->dbg_step.on || t->dbg_dr.to_on;
	t->dbg_dr.to_entered = t->dbg_dr.to_on;
	if (wide || t->dbg_dr.wide)
		hv.ops->set_exception_intercepts(v, trace_idle_exceptions(v) | (wide ? DBG_STEP_EXCEPTIONS : 0));
	t->dbg_dr.wide = wide;
}

/* v waits in root mode until RESUME or its STEP. */
static void hold(struct vcpu *v)
{
	spin_lock(&dbg.lock);
	if (!dbg.held) {
		spin_unlock(&dbg.lock);
		return;
	}
	u32 gen = dbg.gen;
	publish(v);
	dbg.stopped |= 1ull << v->id;
	spin_unlock(&dbg.lock);
	for (bool go = false; !go;) {
		rec_ctl_poll(v);	/* any waiting vCPU may apply the host's request */
		spin_lock(&dbg.lock);
		if (dbg.gen != gen) {
			go = true;	/* RESUME cleared our bit and state */
			v->trace->dbg_dr.hits = 0;
		} else if (dbg.step == v->id + 1) {
			v->trace->dbg_dr.hits = 0;
			dbg.step = 0;
			dbg.stopped &= ~(1ull << v->id);
			unpublish(v->id);
			if (v->trace->engine != HVTRACE_ENGINE_OFF) {
				/* the engine owns TF: its own step (trace_before_entry) */
				v->trace->dbg_dr.tstep = DBG_TSTEP_WANT;
				v->trace->dbg_dr.tstep_rip = v->rip;
			} else if (!step_soft_int(v)) {
				hstep_arm(v, &v->trace->dbg_step, false);
			}
			go = true;
		}
		spin_unlock(&dbg.lock);
		cpu_relax();
	}
}

/* A stopped vCPU named by the host (arg0 bits 31:0). Under dbg.lock. */
static s64 pick(u64 arg0, struct vcpu **out)
{
	u32 id = (u32)arg0;
	if (!dbg.held)
		return -HVTRACE_EPERM;
	if (id >= hv.nr_vcpus)
		return -HVTRACE_EINVAL;
	if (!(dbg.stopped & (1ull << id)))
		return -HVTRACE_EAGAIN;
	*out = hv.vcpus[id];
	return 0;
}

/* Under dbg.lock */
static s64 set_regs(struct vcpu *w)
{
	struct hvtrace_dbg_regs r;
	memcpy(&r, (const void *)dbg.area->buf, sizeof(r));	/* once: the host may write on */
	if ((r.rflags ^ guest_rflags(w)) & ~DBG_RFLAGS_WRITABLE)
		return -HVTRACE_EINVAL;
	bool lma = hv.ops->get_efer(w) & EFER_LMA;
	u32 width = hv.ops->get_cr(w, 4) & CR4_LA57 ? 57 : 48;
	if (lma ? !ADDR_CANONICAL(r.rip, width) : r.rip >> 32)
		return -HVTRACE_EINVAL;
	for (int i = 0; i < GPR_COUNT; i++)
		w->gpr[i] = r.gpr[i];
	w->rip = r.rip;
	w->rflags = (w->rflags & ~DBG_RFLAGS_WRITABLE) | (r.rflags & DBG_RFLAGS_WRITABLE);
	publish(w);
	return 0;
}

/* SET_HW of a page slot (4-31; record.h), under dbg.lock: the
 * breakpoint's page made not executable for every vCPU, or a write
 * watchpoint's page not writable (ABI 1.13: RW 1, the length in arg0
 * bits 59:48 less one, within one page), or given back its permission
 * with its last one. The address is translated through the named
 * stopped vCPU's page tables, and its page must be the guest's RAM (or,
 * for a breakpoint, code), never the hypervisor's. A read watchpoint
 * cannot be kept this way (the nested tables cannot refuse reads and
 * allow fetches): ENOSYS. */
static s64 set_page(u64 arg0, u64 arg1)
{
	u32 s = (u32)(arg0 & 0x1f) - HVTRACE_DBG_SLOTS;
	bool on = arg0 & (1u << 8);
	u32 rw = (arg0 >> 16) & 3, len = rw ? (u32)((arg0 >> 48) & 0xfff) + 1 : 0;
	struct vcpu *w;
	u64 gpa;
	s64 e;
	if (arg0 & ~(u64)(0x1f | 1u << 8 | 3u << 16 | 0xffffull << 32 | 0xfffull << 48) || rw == 2 ||
	    (!rw && arg0 >> 48))
		return -HVTRACE_EINVAL;	/* LEN 0; RW 0 an instruction breakpoint, 1 a write watchpoint */
	if (on ? !arg1 || !ADDR_CANONICAL(arg1, 57) || (arg1 & (PAGE_SIZE - 1)) + len > PAGE_SIZE
	       : arg1 || arg0 >> 16)
		return -HVTRACE_EINVAL;
	if (rw == 3)
		return -HVTRACE_ENOSYS;
	if (rw ? !hv.ops->npt_set_write : !hv.ops->npt_set_exec)
		return -HVTRACE_ENOSYS;
	if (!dbg.held)
		return -HVTRACE_EPERM;
	dbg.bp_gen++;
	if (dbg.pbp.slot[s].on) {
		int i = pagebp_clear(&dbg.pbp, s);
		if (i >= 0 && (e = page_sync(i)))
			return e;
	}
	if (!on)
		return 0;
	if (rec_trigger_addr())
		return -HVTRACE_EPERM;	/* as for the other slots */
	if ((e = pick((arg0 >> 32) & 0xffff, &w)))
		return e;
	if (!gmem_translate(w, arg1, &gpa) || memmap_contains(&hv.hidden, gpa, len ? len : 1) ||
	    !memmap_contains(rw ? &hv.guest_ram : &hv.guest_code, gpa, len ? len : 1))
		return -HVTRACE_EFAULT;
	int i = rw ? pagebp_set_watch(&dbg.pbp, s, arg1, gpa, len) : pagebp_set(&dbg.pbp, s, arg1, gpa);
	if (i < 0)
		return -HVTRACE_EINVAL;
	if ((e = page_sync(i))) {
		pagebp_clear(&dbg.pbp, s);
		page_sync(i);
	}
	return e;
}

/* SET_HW (record.h), under dbg.lock: each vCPU composes its registers
 * anew before its next entry (dr_sync). */
static s64 set_hw(u64 arg0, u64 arg1)
{
	if ((arg0 & 0x1f) >= HVTRACE_DBG_SLOTS)
		return set_page(arg0, arg1);
	u32 slot = arg0 & 3, rw = (arg0 >> 16) & 3, len = (arg0 >> 24) & 3;
	bool on = arg0 & (1u << 8);
	u64 size = len == 2 ? 8 : len == 3 ? 4 : len + 1;
	if (arg0 & ~(u64)(3 | 1u << 8 | 3u << 16 | 3u << 24))
		return -HVTRACE_EINVAL;
	if (on ? !arg1 || !ADDR_CANONICAL(arg1, 57) || rw == 2 || (rw == 0 && len) || (arg1 & (size - 1))
	       : arg1 || rw || len)
		return -HVTRACE_EINVAL;
	if (!dbg.held)
		return -HVTRACE_EPERM;
	if (on && rec_trigger_addr())
		return -HVTRACE_EPERM;	/* trace.start's address holds DR3 */
	dbg.hw[slot] = (struct dbg_hw){ .on = on, .rwlen = (u8)(rw | len << 2), .addr = arg1 };
	dbg.hw_gen++;
	dbg.bp_gen++;
	if (slot == 0)
		dbg.area->bp_addr = arg1;
	return 0;
}

/* One request, under dbg.lock. */
static s64 request(struct vcpu *v, u32 op, u64 arg0, u64 arg1)
{
	struct vcpu *w = NULL;
	s64 e;
	switch (op) {
	case HVTRACE_DBG_STOP:
		if (arg0 || arg1)
			return -HVTRACE_EINVAL;
		hold_all(v, 0);
		return 0;
	case HVTRACE_DBG_RESUME:
		if (arg0 || arg1)
			return -HVTRACE_EINVAL;
		if (!dbg.held)
			return -HVTRACE_EPERM;
		/* said while every vCPU is still held: once they go, the guest
		 * may end the machine before a serial line is out, and this
		 * request's answer comes after it (rec_ctl_poll) */
		LOG_INFO("debugger: every vCPU resumed (host request)");
		dbg.step = 0;
		dbg.held = 0;
		dbg.gen++;
		dbg.stopped = 0;
		for (u32 i = 0; i < hv.nr_vcpus; i++)
			unpublish(i);
		dbg.area->held = 0;
		return 0;
	case HVTRACE_DBG_STEP:
		if (arg0 >> 32 || arg1)
			return -HVTRACE_EINVAL;
		if ((e = pick(arg0, &w)))
			return e;
		/* tracing, the engine steps (its TF; also when it starts or stops at w's entry:
		 * dbg_step_cancel, dbg_after_trace_sync) */
		dbg.step = w->id + 1;
		return 0;
	case HVTRACE_DBG_READ:
	case HVTRACE_DBG_WRITE: {
		u64 len = (arg0 >> 32) & 0xffff;
		bool phys = op == HVTRACE_DBG_READ && (arg0 & HVTRACE_DBG_READ_PHYS);
		if ((arg0 & ~HVTRACE_DBG_READ_PHYS) >> 48 || (op == HVTRACE_DBG_WRITE && arg0 >> 48) || !len ||
		    len > HVTRACE_DBG_BUF_SIZE)
			return -HVTRACE_EINVAL;
		if ((e = pick(arg0 & 0xffffffffu, &w)))
			return e;
		if (op == HVTRACE_DBG_READ) {
			if (phys ? !gmem_read_phys(arg1, dbg.buf, len) : gmem_read_linear(w, arg1, dbg.buf, len) != len)
				return -HVTRACE_EFAULT;
			memcpy(dbg.area->buf, dbg.buf, len);
			return 0;
		}
		memcpy(dbg.buf, (const void *)dbg.area->buf, len);	/* once */
		return gmem_write_linear(w, arg1, dbg.buf, len) ? 0 : -HVTRACE_EFAULT;
	}
	case HVTRACE_DBG_SET_REGS:
		if (arg0 >> 32 || arg1)
			return -HVTRACE_EINVAL;
		if ((e = pick(arg0, &w)))
			return e;
		return set_regs(w);
	case HVTRACE_DBG_SET_BP:
		if (arg0 >> 33 || (arg0 >> 32 && (!arg1 || !ADDR_CANONICAL(arg1, 57))))
			return -HVTRACE_EINVAL;
		return set_hw(arg0 >> 32 ? 1u << 8 : 0, arg0 >> 32 ? arg1 : 0);
	case HVTRACE_DBG_SET_HW:
		return set_hw(arg0, arg1);
	case HVTRACE_DBG_TRANSLATE: {
		u64 gpa;
		if (arg0 >> 32)
			return -HVTRACE_EINVAL;
		if ((e = pick(arg0, &w)))
			return e;
		if (!gmem_translate(w, arg1, &gpa))
			return -HVTRACE_EFAULT;
		memcpy(dbg.area->buf, &gpa, sizeof(gpa));
		return 0;
	}
	}
	return -HVTRACE_EINVAL;
}

s64 dbg_control(struct vcpu *v, u32 op, u64 arg0, u64 arg1)
{
	if (!dbg.area)
		return -HVTRACE_ENOSYS;
	spin_lock(&dbg.lock);
	s64 res = request(v, op, arg0, arg1);
	spin_unlock(&dbg.lock);
	return res;
}
