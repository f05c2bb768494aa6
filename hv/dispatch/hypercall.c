/* Hypercall entry (VMMCALL on SVM, VMCALL on VMX, and the other vendor's
 * instruction where the guest's CPUID names the other vendor): runs in root
 * mode after the exit became HV_EV_HYPERCALL. ABI: include/hvtrace/abi.h. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "base/gmem.h"
#include "dispatch/hypercall.h"
#include "base/integrity.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "trace/trace.h"

static void hc_status(struct vcpu *v, u64 gpa)
{
	struct hvtrace_status st;
	memset(&st, 0, sizeof(st));
	st.magic = HVTRACE_STATUS_MAGIC;
	st.abi_version = HVTRACE_ABI_VERSION;
	st.size = sizeof(st);
	st.backend = hv.ops->backend;
	st.nr_vcpus = hv.nr_vcpus;
	st.flags = integrity_ok() ? HVTRACE_STATUS_INTEGRITY_OK : 0;
	st.hv_phys_base = hv.boot.reserve_pa;
	st.hv_phys_size = hv.boot.reserve_size;
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		st.exits_total += hv.vcpus[i]->exits;
		st.hypercalls += hv.vcpus[i]->hypercalls;
	}
	st.tsc_hz = hv.boot.tsc_hz;
	st.caller_vcpu = v->id;
	st.caller_apic_id = v->apic_id;
	st.nr_running = hv.nr_running;
	st.nr_disabled = hv.nr_disabled;
	memcpy(guest_pa_ptr(gpa), &st, sizeof(st));
}

/* Fills `len` bytes: the whole structure, or the 1.5 layout for a caller
 * whose buffer holds only that (hc_check). */
static void hc_vcpu_status(u64 gpa, u64 len, u32 index)
{
	const struct vcpu *w = hv.vcpus[index];
	struct hvtrace_vcpu_status st;
	memset(&st, 0, sizeof(st));
	st.magic = HVTRACE_VCPU_STATUS_MAGIC;
	st.size = sizeof(st);
	st.vcpu = index;
	st.engine = w->trace->engine;
	/* interp.verify: the reference engine's steps run and record (the interpreter's results
	 * are only compared), so the guest's exit counts are the reference engine's */
	if (st.engine == HVTRACE_ENGINE_INTERP && hv.boot.interp_verify)
		st.engine = HVTRACE_ENGINE_REFERENCE;
	st.exits = w->exits;
	st.trace_exits = w->trace->trace_exits;
	st.branches = w->trace->branches;
	st.bts_records = w->trace->ds.records;
	st.bts_dropped = w->trace->ds.dropped;
	st.bts_pmis = w->trace->ds.pmis;
	st.rec_records = w->trace->rec.records;
	st.rec_lost = w->trace->rec.lost;
	st.apic_id = w->apic_id;
	st.mp_state = !w->boot ? HVTRACE_VCPU_NOT_STARTED
		      : (w->mp_state & (MP_INIT | MP_WAIT_SIPI)) ? HVTRACE_VCPU_WAIT_SIPI
								  : HVTRACE_VCPU_RUNNING;
	st.inits = w->inits;
	st.sipis = w->sipis;
	st.irqs = w->trace->pace.injected;
	st.irqs_paced = w->trace->pace.paced;
	/* another vCPU's counters move while they are read: each is one
	 * aligned load, so each is a value it held */
	st.prof_exits = *(const volatile u64 *)&w->prof.exits;
	for (u32 i = 0; i < HVTRACE_PROF_COUNT; i++)
		st.tsc[i] = *(const volatile u64 *)&w->prof.tsc[i];
	st.blocks_reused = w->trace->blocks.hits;
	st.blocks_decoded = w->trace->blocks.misses;
	st.interp_insns = w->trace->interp.insns;
	st.interp_branches = w->trace->interp.branches;
	st.interp_left = w->trace->interp.left;
	st.interp_irq_ends = w->trace->interp.irq_ends;
	interp_top(&w->trace->interp, st.interp_top);
	if (len < sizeof(st))
		st.size = HVTRACE_VCPU_STATUS_SIZE_1_5;
	memcpy(guest_pa_ptr(gpa), &st, st.size);
}

/*
 * A #UD at the guest's RIP raised by the hypercall instruction this
 * processor does not have (hv.hc_foreign: VMCALL under SVM for a guest
 * whose CPUID says Intel; VMMCALL under VMX for one that says AMD): the
 * three bytes 0F 01 /modrm, nothing before them (the compilers' and the
 * agent's encoding; a prefixed form stays the guest's #UD). Read through
 * the guest's own page tables from guest RAM only (base/gmem.c): bytes
 * that cannot be read, or that another processor changed since, are not
 * a hypercall and the #UD goes to the guest as the CPU raised it.
 */
bool hc_foreign_at_rip(struct vcpu *v)
{
	u8 b[3];
	return hv.hc_foreign && gmem_fetch_linear(v, gmem_linear_rip(v), b, sizeof(b)) == sizeof(b) &&
	       b[0] == 0x0f && b[1] == 0x01 && b[2] == hv.hc_foreign;
}

void hc_dispatch(struct vcpu *v)
{
	struct hc_args a = {
		.nr = v->gpr[GPR_RAX],
		.cpl = hv.ops->get_cpl(v),
		.buf_gpa = v->gpr[GPR_RBX],
		.buf_len = v->gpr[GPR_RCX],
		.index = v->gpr[GPR_RDX],
	};
	s64 ret = hc_check(&a, &hv.guest_ram, hv.nr_vcpus);

	v->hypercalls++;
	if (!ret) {
		switch (a.nr) {
		case HVTRACE_HC_VERSION:
			v->gpr[GPR_RBX] = HVTRACE_ABI_VERSION;
			v->gpr[GPR_RCX] = HVTRACE_FEAT_HYPERCALL;
			v->gpr[GPR_RDX] = v->id | (u64)v->apic_id << 32;
			break;
		case HVTRACE_HC_STATUS:
			hc_status(v, a.buf_gpa);
			break;
		case HVTRACE_HC_VCPU_STATUS:
			hc_vcpu_status(a.buf_gpa, a.buf_len, (u32)a.index);
			break;
		case HVTRACE_HC_TRACE_CTL:
			ret = rec_hypercall(v, v->gpr[GPR_RBX], v->gpr[GPR_RCX]);
			break;
		}
	}
	v->gpr[GPR_RAX] = (u64)ret;
}
