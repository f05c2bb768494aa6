/* The debug registers while the engines run: the engine's own breakpoint
 * (DR3, and DR2 for a second stop), the guest's DR2/DR3/DR6/DR7 kept
 * virtual against the values the engine saved, MOV to and from them
 * emulated, and the host DR7 each entry arms (docs/security.md: never a
 * breakpoint of the guest's in the hypervisor). Root mode. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/integrity.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "trace/dbg.h"
#include "trace/engine.h"

/* --- the engine's breakpoint ------------------------------------------- */

/* DR0-DR3 of the processor: the guest's own values unless the engine or
 * the host debugger holds the register (they keep the guest's meanwhile) */
u64 dr_hw_read(int n)
{
	switch (n) {
	case 0: return read_dr0();
	case 1: return read_dr1();
	case 2: return read_dr2();
	default: return read_dr3();
	}
}

void dr_hw_write(int n, u64 val)
{
	switch (n) {
	case 0: write_dr0(val); return;
	case 1: write_dr1(val); return;
	case 2: write_dr2(val); return;
	default: write_dr3(val); return;
	}
}

/* DR7's enable and RW/LEN bits of the instruction breakpoints (enabled,
 * RW = 00) among DR`first`..DR`last` (SDM Vol. 3 18.2.4). */
u64 exec_bps(u64 dr7, int first, int last)
{
	u64 out = 0;
	for (int i = first; i <= last; i++)
		if ((dr7 & (DR7_L(i) | DR7_G(i))) && !((dr7 >> DR7_RW_SHIFT(i)) & 3))
			out |= (dr7 & (DR7_L(i) | DR7_G(i) | DR7_RWLEN(i)));
	return out;
}

/* The guest's DR0/DR1 instruction breakpoints (while the engine runs, it
 * checks DR2/DR3 itself: guest_dr23_hits). */
u64 guest_exec_bps(u64 dr7)
{
	return exec_bps(dr7, 0, 1);
}

/* Whether DR7 enables a data breakpoint (RW = 01, writes, or 11, reads
 * and writes; SDM Vol. 3 18.2.4) in DRi. */
static bool data_bp_enabled(u64 dr7, int i)
{
	return (dr7 & (DR7_L(i) | DR7_G(i))) && ((dr7 >> DR7_RW_SHIFT(i)) & 1);
}

/* Whether the guest's DR7 enables a data breakpoint in DR2 or DR3, the
 * registers the fast engine's stops take. */
bool guest_dr23_data(struct vcpu *v)
{
	u64 dr7 = guest_dr_read(v, 7);
	return data_bp_enabled(dr7, 2) || data_bp_enabled(dr7, 3);
}

void bp_disarm(struct vcpu *v)
{
	struct handler_bp *bp = &v->trace->bp;
	if (!bp->armed)
		return;
	write_dr3(bp->saved_dr3);
	if (bp->addr2)
		write_dr2(bp->saved_dr2);
	hv.ops->set_dr(v, 7, bp->saved_dr7);
	bp->armed = false;
}

/* Arms DR3 at `addr` and, when `addr2` is not 0, DR2 at `addr2`: execute
 * breakpoints of length 1 (SDM Vol. 3 18.2.4). */
void bp_arm2(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 addr2, u64 from, int cpl)
{
	struct handler_bp *bp = &v->trace->bp;
	bp_disarm(v);
	dbg_dr_release(v);	/* the host debugger's registers go back to the guest first */
	bp->saved_dr3 = read_dr3();
	bp->saved_dr2 = addr2 ? read_dr2() : 0;
	bp->saved_dr7 = hv.ops->get_dr(v, 7);
	bp->kind = kind;
	bp->addr = addr;
	bp->addr2 = addr2;
	bp->from = from;
	bp->from_cpl = cpl;
	bp->armed = true;
	u64 dr7 = (bp->saved_dr7 & ~(DR7_L(3) | DR7_G(3) | DR7_RWLEN(3))) | DR7_L(3) | DR7_FIXED1;
	write_dr3(addr);
	if (addr2) {
		write_dr2(addr2);
		dr7 = (dr7 & ~(DR7_L(2) | DR7_G(2) | DR7_RWLEN(2))) | DR7_L(2);
	}
	hv.ops->set_dr(v, 7, dr7);
}

void bp_arm(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 from, int cpl)
{
	bp_arm2(v, kind, addr, 0, from, cpl);
}

/* Follows an event into its handler at `addr`: the record (`kind`, `aux`)
 * is made when the handler's first instruction is reached. */
void bp_arm_handler(struct vcpu *v, u64 addr, u64 from, int cpl, u8 kind, u32 aux)
{
	bp_arm(v, BP_HANDLER, addr, from, cpl);
	v->trace->bp.rec_kind = kind;
	v->trace->bp.rec_aux = aux;
}

/* The guest's own DR2/DR3 instruction breakpoints that fire at linear
 * `lin` (DR6 bits B2/B3). The engine holds DR2/DR3, so it checks them
 * itself before each instruction it steps or stops at (the fast engine
 * ends a block at one); RF suppresses them at the address the guest
 * resumes at (SDM Vol. 3 18.3.1.1). */
/* A #DB reaches the guest with these causes: its virtual DR6 reads as the
 * CPU's would, B0-B3 this exception's own (a Bn the guest or an earlier #DB
 * left goes, as the processor, QEMU and KVM clear them), BS and BD added,
 * the rest as the guest left it. */
void guest_dr6_db(struct vcpu *v, u64 causes)
{
	struct trace_vcpu *t = v->trace;
	t->guest_dr6 = (t->guest_dr6 & ~DR6_BN) | causes;
}

u64 guest_dr23_hits(struct vcpu *v, u64 lin)
{
	u64 dr7 = guest_dr_read(v, 7), hits = 0;
	if (!exec_bps(dr7, 2, 3))
		return 0;
	for (int i = 2; i < 4; i++)
		if (exec_bps(dr7, i, i) && guest_dr_read(v, i) == lin)
			hits |= 1ull << i;
	if (hits && (v->rflags & RFLAGS_RF) && lin == gmem_linear_rip(v))
		return 0;
	return hits;
}

/* --- the guest's debug registers while the engine holds some ------------- */

u64 guest_dr_read(struct vcpu *v, int n)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	const struct dbg_dr *d = &t->dbg_dr;
	if (d->on && n < 4 && (d->held & (1u << n)))
		return d->saved[n];
	if (d->on && n == 7)
		return d->saved_dr7;
	switch (n) {
	case 0: return read_dr0();
	case 1: return read_dr1();
	case 2: return bp->armed && bp->addr2 ? bp->saved_dr2 : read_dr2();
	case 3: return bp->armed ? bp->saved_dr3 : read_dr3();
	case 6: return t->engine ? t->guest_dr6 : hv.ops->get_dr(v, 6);
	default: return bp->armed ? bp->saved_dr7 : hv.ops->get_dr(v, 7);
	}
}

static void guest_dr_write(struct vcpu *v, int n, u64 val)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	struct dbg_dr *d = &t->dbg_dr;
	if (d->on && n < 4 && (d->held & (1u << n))) {
		d->saved[n] = val;	/* the debugger's value stays in the register */
		return;
	}
	if (d->on && n == 7) {
		dbg_dr_guest_dr7(v, val | DR7_FIXED1);	/* the engine is off meanwhile */
		return;
	}
	switch (n) {
	case 0: write_dr0(val); return;
	case 1: write_dr1(val); return;
	case 2:
		if (bp->armed && bp->addr2)
			bp->saved_dr2 = val;
		else
			write_dr2(val);
		return;
	case 3:
		if (bp->armed)
			bp->saved_dr3 = val;
		else
			write_dr3(val);
		return;
	case 6:
		/* SDM Vol. 3 18.2.3: bits 4-11 and 16-31 read as 1 */
		if (t->engine)
			t->guest_dr6 = val | DR6_CLEAN;
		else
			hv.ops->set_dr(v, 6, val | DR6_CLEAN);
		return;
	default:
		val |= DR7_FIXED1;
		if (bp->armed) {
			u64 held = DR7_L(3) | DR7_G(3) | DR7_RWLEN(3) |
				   (bp->addr2 ? DR7_L(2) | DR7_G(2) | DR7_RWLEN(2) : 0);
			u64 mine = hv.ops->get_dr(v, 7) & held;
			bp->saved_dr7 = val;
			hv.ops->set_dr(v, 7, (val & ~held) | mine);
		} else {
			hv.ops->set_dr(v, 7, val);
		}
		if (t->engine != HVTRACE_ENGINE_OFF)
			trace_update(v);	/* a data breakpoint in DR2/DR3: the engine */
		return;
	}
}

/* MOV to/from a debug register (0F 21 / 0F 23, SDM Vol. 2B MOV—Move to/from
 * Debug Registers): decoded here, with its checks (#GP at CPL > 0, DR4/DR5
 * #UD when CR4.DE is set and aliases of DR6/DR7 otherwise, DR8-15 #UD). */
void trace_on_dr_access(struct vcpu *v, const struct hv_event *ev)
{
	struct hv_mov_crdr m;

	if (!hv_decode_mov_crdr(v, &m) || (m.opcode != 0x21 && m.opcode != 0x23)) {
		/* the code changed under us (another processor): let the CPU
		 * run whatever is there now */
		LOG_WARN("debug-register exit at %lx is not a MOV DR", v->rip);
		return;
	}
	if (hv.ops->get_cpl(v)) {
		inject_fault(v, X86_GP, true, 0);
		return;
	}
	int dr = m.reg, gpr = m.gpr;
	if (dr == 4 || dr == 5) {
		if (hv.ops->get_cr(v, 4) & CR4_DE)
			dr = 8;
		else
			dr += 2;
	}
	if (dr > 7) {
		inject_fault(v, X86_UD, false, 0);
		return;
	}
	u64 mask = m.mode == DEC_MODE_64 ? ~0ull : 0xffffffffull;
	if (m.opcode == 0x21) {
		v->gpr[gpr] = guest_dr_read(v, dr) & mask;
	} else {
		u64 val = v->gpr[gpr] & mask;
		if (dr >= 6 && (val & DR_RESERVED_HIGH)) {
			inject_fault(v, X86_GP, true, 0);
			return;
		}
		guest_dr_write(v, dr, val);
	}
	hv_skip_insn(v, ev, 3);
}

/* DR7's enable and RW/LEN bits of the guest's data breakpoints (RW = 01,
 * writes, or 11, reads and writes; SDM Vol. 3 18.2.4, LEN 00/01/11/10 for
 * 1/2/4/8 bytes, the address aligned down to it, 18.2.5) among
 * DR0..DR`last` whose bytes all lie outside the hypervisor's own linear
 * addresses. Between the host's DR7 write and VMRUN, and between the exit
 * and host_dr7_disarm(), the hypervisor touches only those (its stack,
 * vCPU, VMCB, the local APIC's page; guest memory, identity-mapped low,
 * never there), so what is armed can fire only in the guest. I/O
 * breakpoints (RW = 10) never: the host's log writes a port there. */
static u64 data_bps(u64 dr7, int last, const u64 addr[4])
{
	u64 out = 0;
	for (int i = 0; i <= last; i++) {
		u64 len = (dr7 >> (DR7_RW_SHIFT(i) + 2)) & 3;
		u64 size = len == 2 ? 8 : len == 3 ? 4 : len + 1;
		if (!data_bp_enabled(dr7, i) || hv_own_linear(addr[i] & ~(size - 1), size))
			continue;
		out |= dr7 & (DR7_L(i) | DR7_G(i) | DR7_RWLEN(i));
	}
	return out;
}

/*
 * The host's own DR7 for the next entry (dispatch/event.c loads it last, and
 * disarms it first on every exit). QEMU's TCG loads DR7 from the VMCB at
 * VMRUN without inserting the breakpoints it enables (helper_vmrun assigns
 * env->dr[7] directly), so a breakpoint the guest or the engine needs must
 * already be armed in root mode: the engine's DR3 (and DR2), and the
 * guest's breakpoints on the registers that hold its values (all four but
 * those the engine's breakpoint holds; instruction breakpoints on DR0/DR1
 * only while the engine runs, which checks DR2/DR3 itself at each stop):
 * instruction breakpoints anywhere but on the hypervisor's own code, data
 * breakpoints anywhere but on what the hypervisor addresses itself
 * (data_bps). While the guest has a data breakpoint in DR2 or DR3 the
 * reference engine runs, whose breakpoint holds DR3 only while an event
 * is followed to its handler (guest_dr23_data, trace_update). Root
 * mode must not take a #DB of the guest's choosing. Such a breakpoint still
 * works on hardware, where VMRUN and VM entry load DR7 from the guest
 * state, and is lost under TCG (docs/security.md). Under KVM that itself
 * runs on QEMU's TCG (the nested tier) the same holds one level down: KVM
 * writes DR7 only with 0 before its own VMRUN (vcpu_enter_guest), so what
 * this write armed exists only on the emulated CPU it ran on, and is gone
 * when the host moves this vCPU's thread (tests/nested/pin-vcpus.sh).
 */
u64 trace_host_dr7(struct vcpu *v)
{
	struct trace_vcpu *t = v->trace;
	struct handler_bp *bp = &t->bp;
	u64 guest = bp->armed ? bp->saved_dr7 : hv.ops->get_dr(v, 7);
	/* the registers that hold the guest's own values now */
	int free = !bp->armed ? 3 : bp->addr2 ? 1 : 2;
	const u64 addr[4] = { read_dr0(), read_dr1(), read_dr2(), read_dr3() };
	u64 data = data_bps(dbg_trace_dr7(v, guest), free, addr);	/* the debugger's DR0/DR1 too */
	u64 dr7 = DR7_FIXED1 | exec_bps(guest, 0, t->engine != HVTRACE_ENGINE_OFF ? 1 : free) | data;
	if (bp->armed)
		dr7 |= DR7_L(3) | (bp->addr2 ? DR7_L(2) : 0);
	for (int i = 0; i < 4; i++)
		if ((dr7 & (DR7_L(i) | DR7_G(i))) && hv_image_code(addr[i]))
			dr7 &= ~(DR7_L(i) | DR7_G(i) | DR7_RWLEN(i));
	t->host_guest_data = 0;
	for (int i = 2; i < 4; i++)
		if (dr7 & data & (DR7_L(i) | DR7_G(i)))
			t->host_guest_data |= 1ull << i;	/* DR6_B2, DR6_B3 */
	return dr7;
}
