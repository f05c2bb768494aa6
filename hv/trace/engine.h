/* The engines' own declarations, shared by the files that make them up
 * (engine.c: the state machine; branch.c: branch semantics; dr.c: the
 * debug registers; follow.c: following events into handlers). Nothing
 * outside hv/trace includes this header: trace/trace.h is the interface. */
#ifndef HV_TRACE_ENGINE_H
#define HV_TRACE_ENGINE_H

#include "base/vcpu.h"
#include "trace/branch.h"
#include "trace/trace.h"

/* Exceptions the engines follow: all but NMI (2) and #MC (18), which stay
 * the platform's. */
#define TRACE_EXCEPTIONS	(0xffffffffu & ~(1u << X86_NMI) & ~(1u << X86_MC))

/* engine.c */
bool trigger_hit(struct vcpu *v, const struct hv_event *ev);
void step_completed(struct vcpu *v);
/* step_follow_shadowed's pairs: where the second saved the step's TF */
enum { STEP_PAIR_NONE, STEP_PAIR_FRAME, STEP_PAIR_R11 };
void step_shadowed_reached(struct vcpu *v);
bool step_branched(const struct step_state *s);

/* dr.c: the engine's breakpoint (DR3, and DR2 for a second stop) and the
 * guest's debug registers while the engine holds some */
u64 dr_hw_read(int n);		/* DR0-DR3 of the processor */
void dr_hw_write(int n, u64 val);
u64 exec_bps(u64 dr7, int first, int last);
u64 guest_exec_bps(u64 dr7);
bool guest_dr23_data(struct vcpu *v);
void bp_disarm(struct vcpu *v);
void bp_arm2(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 addr2, u64 from, int cpl);
void bp_arm(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 from, int cpl);
void bp_arm_handler(struct vcpu *v, u64 addr, u64 from, int cpl, u8 kind, u32 aux);
u64 guest_dr23_hits(struct vcpu *v, u64 lin);
void guest_dr6_db(struct vcpu *v, u64 causes);
u64 guest_dr_read(struct vcpu *v, int n);

/* lbr_engine.c: `engine = lbr` (docs/branch-engine.md "LBR batching") */
bool lbr_engine_ok(struct vcpu *v);
void lbr_engine_start(struct vcpu *v);
void lbr_engine_stop(struct vcpu *v);
void lbr_engine_exit(struct vcpu *v);

/* interp_engine.c: engine = interp's burst before an entry (nothing when it may not run
 * exactly) */
void interp_run(struct vcpu *v);
void interp_log(struct vcpu *v);
/* interp.verify: interpret the instruction at RIP into a shadow before the reference engine
 * steps it; at the step's end, or at another exit, compare */
void interp_verify_prepare(struct vcpu *v);
void interp_verify_check(struct vcpu *v);
void interp_verify_exit(struct vcpu *v, const struct hv_event *ev);

/* follow.c: events followed into the guest's handlers */
void follow_event(struct vcpu *v, u8 vector, u8 kind, u32 aux);
/* The handler of `vector` in the guest's IDT (follow.c); false: none readable. */
bool idt_handler(struct vcpu *v, u8 vector, u64 *addr);
void nmi_deliver(struct vcpu *v);
/* trace/nmi.c: the blocking's hooks at every exit and entry, the IRET's
 * single step while idle and its #DB, an IRET the engine stepped */
void nmi_exit_begin(struct vcpu *v);
/* no event goes in at the next entry (else a kick brings the exit after it) */
bool nmi_can_inject(struct vcpu *v);
void nmi_before_entry(struct vcpu *v);
bool nmi_step_db(struct vcpu *v, const struct hv_event *ev);
void nmi_step_cancel(struct vcpu *v);
void nmi_iret_done(struct vcpu *v);
/* The exceptions intercepted while the engine is off: #DB for the start
 * trigger's breakpoint or an NMI's IRET step, nothing otherwise */
u32 trace_idle_exceptions(struct vcpu *v);
void trace_irq_iret(struct vcpu *v, u64 to);
void inject_fault(struct vcpu *v, u8 vector, bool has_err, u32 err);
/* The vector of an INT n, INT3, INTO (OF set) or INT1, else -1 */
int soft_int_vector(struct vcpu *v, const struct dec_insn *in, const u8 *bytes);
bool follow_soft_int(struct vcpu *v, const struct dec_insn *in, const u8 *bytes, u64 lin,
		     int cpl);
bool follow_syscall(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 lin,
		    int cpl);
/* Where a SYSCALL, SYSENTER or SYSRET goes; false: none, or its #UD first */
bool syscall_target(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 *to);
/* The guest's TF where an instruction run with a TF not its own saved
 * RFLAGS: R11 (a SYSCALL), or the w-byte image at linear `at` (an
 * interrupt's frame, a PUSHF) */
void mend_saved_tf_r11(struct vcpu *v, bool tf);
void mend_saved_tf(struct vcpu *v, u64 at, unsigned w, bool tf);

#endif
