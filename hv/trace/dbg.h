/* The host's debugger (trace/dbg.c; docs/channel.md "The debugger"): every
 * vCPU held in root mode on the host's request, its registers published in
 * the channel, memory read and written through its page tables, one
 * instruction stepped. Root mode. */
#ifndef HV_TRACE_DBG_H
#define HV_TRACE_DBG_H
#include "arch/x86/types.h"
#include "hvtrace/record.h"

struct vcpu;
struct hv_event;

/* The bytes the debugger's area takes in a channel of n vCPUs. */
u64 dbg_area_size(u32 n);
/* The area at `area` (inside the channel, laid out by rec_init). */
void dbg_init(struct hvtrace_dbg *area);
/* A host request with op >= HVTRACE_DBG_STOP: 0 or -HVTRACE_E*. */
s64 dbg_control(struct vcpu *v, u32 op, u64 arg0, u64 arg1);
/* The guest is held (the watcher's idle loop returns to the entry path). */
bool dbg_held(void);
/* Before every entry: while the guest is held, v waits here in root mode,
 * looking at the host's requests, until RESUME or a STEP of its own. */
void dbg_before_entry(struct vcpu *v);
/* After the recorder's own updates before an entry: the debugger's
 * registers composed for the engine's state as it now is. */
void dbg_after_trace_sync(struct vcpu *v);
/* Tracing starts on v: the engine owns TF, a step of the debugger's ends
 * (v is held again at its next exit). */
void dbg_step_cancel(struct vcpu *v);
/* A vCPU that traces is about to run the instruction at its RIP (trace_before_entry): held
 * there when it is one of the debugger's breakpoints (its list, v->trace->dbg_bps) */
void dbg_trace_bp(struct vcpu *v);
/* engine = interp's burst hit the debugger's watchpoints (v->trace->dbg_dr.whits) with its
 * own accesses: v held after that instruction, as at a debug register's */
void dbg_trace_watch(struct vcpu *v);
/* Whether the engine steps the instruction at RIP for a page watchpoint (the page open for
 * its write, summed: dbg_npf) */
bool dbg_trace_wstep(const struct vcpu *v);
/* Last before an entry of a vCPU that traces: the debugger's watchpoints in DR0/DR1 where the
 * guest's DR7 leaves them free (the engines hold DR2/DR3) */
void dbg_trace_dr_arm(struct vcpu *v);
/* First at every exit: those taken down again; on a #DB, their causes taken from DR6 (a hit:
 * every vCPU held; tw_fired when it was one) */
void dbg_trace_dr_exit(struct vcpu *v, const struct hv_event *ev);
/* The guest's DR7 (`guest7`) with the debugger's DR0/DR1 watchpoints of this entry: what the
 * host's DR7 arms (trace_host_dr7) */
u64 dbg_trace_dr7(const struct vcpu *v, u64 guest7);
/* A #DB with the engine off: true when it was the debugger's breakpoint
 * or watchpoint alone (no cause of the guest's own came with it); the
 * guest is held when one of them fired. */
bool dbg_bp_hit(struct vcpu *v, const struct hv_event *ev);
/* A #DB with the engine off: true when it was the debugger's step. */
bool dbg_step_db(struct vcpu *v, const struct hv_event *ev);
/* A nested page fault: true when it was the fetch from a page the
 * debugger's page breakpoints took execute from (the vCPU held at one, or
 * the page opened for its one instruction). */
bool dbg_npf(struct vcpu *v, const struct hv_event *ev);
/* The debugger's registers go back to the guest on v (the engine starts,
 * or takes DR3 for the recorder's start address); composed again at an
 * entry with the engine off (dbg_before_entry). */
void dbg_dr_release(struct vcpu *v);
/* The guest writes DR7 (`val`, bit 10 set) while the debugger holds
 * registers (v->trace->dbg_dr.on). */
void dbg_dr_guest_dr7(struct vcpu *v, u64 val);
#endif
