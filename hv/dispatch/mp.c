/*
 * Processor start-up through the hypervisor: INIT and SIPI.
 *
 * An OS starts a processor with INIT, SIPI, SIPI through its local APIC's
 * interrupt command register (ICR). A processor reset by a real INIT
 * would leave guest mode and, at the SIPI, run outside the hypervisor, so
 * on SVM (which, unlike VMX, has no INIT/SIPI exits) the guest's ICR
 * writes all come here: its xAPIC page is read-only in the nested tables
 * (svm/npt.c), its x2APIC ICR MSR intercepted (dispatch/msr.c). Every IPI
 * but INIT and SIPI goes to the APIC as written. INIT and SIPI never leave
 * the hypervisor: the target vCPU gets them in its mp_state (base/vcpu.h),
 * changed atomically by the sender, and is kicked out of the guest by an
 * NMI the hypervisor sends (the kick flag tells that NMI from the guest's).
 * At its next entry it takes the INIT (the guest's state after INIT,
 * APM Vol. 2 14.1.3), waits in root mode for the SIPI, and enters the
 * guest at the SIPI vector in real mode, under the same nested paging and
 * intercepts as every other vCPU. INIT and SIPI to a processor that is not
 * a vCPU (one the firmware disabled) and in logical destination mode are
 * dropped and logged: the guest can start no processor outside the
 * hypervisor. docs/smp.md.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/gmem.h"
#include "base/lapic.h"
#include "base/lib.h"
#include "base/log.h"
#include "dispatch/dispatch.h"
#include "dispatch/icr.h"
#include "dispatch/mp.h"
#include "dispatch/irq.h"
#include "trace/trace.h"

bool mp_take_kick(struct vcpu *v)
{
	return __atomic_exchange_n(&v->kick, 0, __ATOMIC_SEQ_CST);
}

static void send_init(struct vcpu *from, struct vcpu *w)
{
	/* INIT wins over anything pending, a latched SIPI included */
	__atomic_store_n(&w->mp_state, MP_INIT, __ATOMIC_SEQ_CST);
	if (w != from)
		hv_kick(w);
}

/* SDM Vol. 3 10.4.4.1: a SIPI reaches only a processor waiting for one
 * (here also one whose INIT is still on its way); the first one counts */
static void send_sipi(struct vcpu *w, u8 vector)
{
	u32 old = __atomic_load_n(&w->mp_state, __ATOMIC_SEQ_CST);
	do {
		if (!(old & (MP_INIT | MP_WAIT_SIPI)) || (old & MP_SIPI))
			return;
	} while (!__atomic_compare_exchange_n(&w->mp_state, &old,
					      old | MP_SIPI | ((u32)vector << MP_VECTOR_SHIFT), false,
					      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
}

void mp_init_self(struct vcpu *v)
{
	LOG_WARN("vcpu %u: an INIT signal reached this processor (not from its ICR): taken as INIT",
		 v->id);
	send_init(v, v);
}

/*
 * An NMI IPI (delivery mode NMI, SDM Vol. 3 11.6.1) to vCPUs named by
 * physical destination or shorthand, where the hypervisor's kick is an NMI
 * too (SVM): delivered by the hypervisor, never as a physical NMI. Two
 * NMIs pending at one processor are one (an NMI is a latch), so a guest's
 * NMI arriving with a kick, or with the kick that follows every injected
 * interrupt under QEMU's TCG (svm_tcg_injection_quirk), was taken for
 * the kick and lost: traced, t_fidel's NMI handler waited for ever for
 * the NMI it had sent itself. It is latched in each target's nmi_ipi and
 * goes in at that vCPU's next entry (mp_take_nmi_ipi, with the blocking
 * trace/nmi.c keeps); another vCPU is kicked. To itself that entry is the
 * one after the write that sent it, once RIP is past it (delivered during
 * the write's emulation, its frame and record named the write itself:
 * bts_nmi_mid_trace). Logical destination
 * mode and unknown IDs go to the APIC as written.
 */
static bool nmi_ipi(struct vcpu *v, u32 lo, u32 dest, bool x2apic)
{
	u32 ids[HV_MAX_CPUS];
	u64 mask;
	if (hv.caps & HV_CAP_KICK_POLL)
		return false;	/* no kick NMIs: the guest's reach it as sent */
	for (u32 i = 0; i < hv.nr_vcpus; i++)
		ids[i] = hv.vcpus[i]->apic_id;
	if (icr_targets(lo, dest, x2apic, v->id, ids, hv.nr_vcpus, &mask) != ICR_TARGETS_OK)
		return false;
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		struct vcpu *w = hv.vcpus[i];
		if (!(mask & (1ull << i)))
			continue;
		__atomic_store_n(&w->nmi_ipi, 1, __ATOMIC_SEQ_CST);
		if (w != v)
			hv_kick(w);
	}
	return true;
}

void mp_take_nmi_ipi(struct vcpu *v)
{
	if (__atomic_load_n(&v->nmi_ipi, __ATOMIC_RELAXED) && __atomic_exchange_n(&v->nmi_ipi, 0, __ATOMIC_SEQ_CST))
		hv_guest_nmi(v);
}

bool mp_icr_write(struct vcpu *v, u32 lo, u32 dest, bool x2apic)
{
	u32 dm = lo & ICR_DM_MASK;
	if (dm == ICR_DM_NMI && nmi_ipi(v, lo, dest, x2apic))
		return true;
	if (dm != ICR_DM_INIT && dm != ICR_DM_STARTUP) {
		/* x2APIC: the value is the guest's, the #GP for a bad one too */
		if (x2apic)
			return wrmsr_safe(X2APIC_MSR(APIC_ICR_LO), ((u64)dest << 32) | lo) == 0;
		lapic_send_icr(lo, dest);
		return true;
	}
	/* INIT level de-assert: no effect since the Pentium 4 (SDM 11.6.1) */
	if (dm == ICR_DM_INIT && !(lo & ICR_LEVEL_ASSERT) && (lo & ICR_TRIGGER_LEVEL))
		return true;
	u32 ids[HV_MAX_CPUS];
	for (u32 i = 0; i < hv.nr_vcpus; i++)
		ids[i] = hv.vcpus[i]->apic_id;
	u64 mask;
	switch (icr_targets(lo, dest, x2apic, v->id, ids, hv.nr_vcpus, &mask)) {
	case ICR_TARGETS_LOGICAL:
		LOG_WARN("vcpu %u: %s in logical destination mode (ICR %08x, destination %x): dropped",
			 v->id, dm == ICR_DM_INIT ? "INIT" : "SIPI", lo, dest);
		return true;
	case ICR_TARGETS_UNKNOWN:
		LOG_WARN("vcpu %u: %s to APIC ID %u, a processor outside the hypervisor: dropped",
			 v->id, dm == ICR_DM_INIT ? "INIT" : "SIPI", dest);
		return true;
	case ICR_TARGETS_OK:
		break;
	}
	for (u32 i = 0; i < hv.nr_vcpus; i++) {
		if (!(mask & (1ull << i)))
			continue;
		if (dm == ICR_DM_INIT)
			send_init(v, hv.vcpus[i]);
		else
			send_sipi(hv.vcpus[i], (u8)(lo & ICR_VECTOR_MASK));
	}
	return true;
}

/* An xAPIC register write the guest made (dispatch/mp.h). */
static void apic_write(struct vcpu *v, u32 reg, u32 val)
{
	if (lapic_x2apic_mode())
		return;		/* the page is not decoded in x2APIC mode (SDM 11.12.1) */
	switch (reg & 0xff0) {
	case APIC_ICR_HI:
		v->icr_hi = val;	/* the guest's, until its ICR_LO write sends */
		return;
	case APIC_ICR_LO:
		mp_icr_write(v, val, v->icr_hi >> ICR_XAPIC_DEST_SHIFT, false);
		return;
	}
	lapic_mmio_write(reg, val);
}

/*
 * The guest wrote to its local APIC's page. The instruction is decoded
 * from guest memory; the register stores an OS and a firmware use are
 * emulated: MOV r/m32, r32 (89), MOV r/m32, imm32 (C7 /0), MOV moffs32,
 * EAX (A3: what a compiler emits for a constant address, the guest tests'
 * lvtpc_write) and XCHG r/m32, r32 (87, Linux's X86_BUG_11AP write). APIC registers take 32-bit
 * accesses only (SDM 11.4.1); anything else is dropped, logged once.
 */
bool mp_apic_npf(struct vcpu *v, const struct hv_event *ev)
{
	static bool odd_logged, unreadable_logged;
	if ((ev->gpa >> PAGE_SHIFT) != (hv.boot.apic_pa >> PAGE_SHIFT) || !(ev->error_code & HV_NPF_WRITE))
		return false;
	u64 cs_base;
	u8 b[15];
	struct dec_insn in;
	enum dec_mode mode = gmem_code_mode(v, &cs_base);
	if (gmem_decode(v, cs_base + v->rip, v->rip, mode, b, &in) != DEC_OK) {
		/* the code changed under us (it runs again and exits again), or
		 * lies outside the RAM the firmware's map names, which the
		 * hypervisor does not read (docs/smp.md, limits) */
		if (!__atomic_exchange_n(&unreadable_logged, true, __ATOMIC_RELAXED))
			LOG_WARN("vcpu %u: cannot read the instruction at %lx that writes the local APIC "
				 "page: it runs again (logged once)", v->id, v->rip);
		return true;
	}
	u32 reg = (u32)(ev->gpa & (PAGE_SIZE - 1));
	int r = ((in.modrm >> 3) & 7) | ((in.rex & 4) ? 8 : 0);
	bool plain = in.encoding == DEC_ENC_LEGACY && in.map == 0 && in.has_modrm && in.opsize == 4 &&
		     !in.rep && !in.lock;
	bool moffs = in.encoding == DEC_ENC_LEGACY && in.map == 0 && !in.has_modrm && in.opcode == 0xa3 &&
		     in.opsize == 4 && !in.rep && !in.lock;
	if (plain && in.opcode == 0x89) {
		apic_write(v, reg, (u32)v->gpr[r]);
	} else if (moffs) {
		apic_write(v, reg, (u32)v->gpr[GPR_RAX]);
	} else if (plain && in.opcode == 0xc7 && ((in.modrm >> 3) & 7) == 0 && in.imm_size == 4) {
		u32 imm;
		memcpy(&imm, b + in.imm_offset, 4);
		apic_write(v, reg, imm);
	} else if (plain && in.opcode == 0x87) {
		u32 old = lapic_read(reg & 0xff0);
		apic_write(v, reg, (u32)v->gpr[r]);
		v->gpr[r] = old;	/* a 32-bit destination is zero-extended */
	} else if (!__atomic_exchange_n(&odd_logged, true, __ATOMIC_RELAXED)) {
		LOG_WARN("vcpu %u: a write to the local APIC page at %lx by an instruction other than a "
			 "32-bit MOV or XCHG (opcode %02x, operand size %u): dropped", v->id, v->rip,
			 in.opcode, in.opsize);
	}
	struct hv_event done = *ev;
	done.insn_len = in.len;
	hv_skip_insn(v, &done, in.len);
	hv_emulation_done(v, true);
	return true;
}

/*
 * What an INIT does to the local APIC (SDM Vol. 3 11.4.7.3: as power-up,
 * but the APIC ID and IA32_APIC_BASE stay; APM Vol. 2 16.3.2): the IRR
 * and ISR emptied, the LVT entries masked, the timer stopped, the task
 * priority 0, the logical destination cleared, the APIC software-disabled.
 * The hypervisor takes the INIT itself (the processor never sees one), so
 * it does this on the processor's own APIC: the local sources masked
 * first, then what the IRR holds accepted in root mode (the APIC enabled,
 * priority 0: take_pending) and EOIed, then every in-service bit EOIed (an
 * EOI ends the highest, 11.8.5). Without it Linux found interrupts of the
 * processor's previous life pending at bring-up ("APIC: Stale IRR") and
 * took them as spurious ("No irq handler for 2.32"). An interrupt that
 * arrives meanwhile is dropped, as one sent to a processor waiting for its
 * SIPI is; a level-triggered one in service gets its EOI (the hardware's
 * INIT sends none, and its I/O APIC entry would stay busy).
 */
static void apic_init_reset(struct vcpu *v)
{
	static const u32 lvt[] = { APIC_LVTT, APIC_LVTPC, APIC_LVT_LINT0, APIC_LVT_LINT1, APIC_LVT_ERROR };
	if (!lapic_enabled())
		return;		/* disabled in IA32_APIC_BASE: its registers are not there */
	bool x2 = lapic_x2apic_mode();
	for (u32 i = 0; i < ARRAY_SIZE(lvt); i++)
		lapic_write(lvt[i], LVT_MASKED);
	lapic_write(APIC_TMICT, 0);
	lapic_write(APIC_TPR, 0);
	lapic_write(APIC_SVR, lapic_read(APIC_SVR) | APIC_SVR_ENABLE);
	for (u32 n = 0; hv.ops->take_pending && n < 256; n++) {
		u8 vector = 0;
		if (hv.ops->take_pending(v, &vector) & HV_PENDING_NMI)
			mp_take_kick(v);	/* a kick is spent; a guest's NMI is dropped */
		if (!vector)
			break;
		lapic_write(APIC_EOI, 0);
	}
	for (u32 n = 0; n < 256; n++) {
		u32 any = 0;
		for (u32 r = 0; r < 8; r++)
			any |= lapic_read(APIC_ISR0 + 0x10 * r);
		if (!any)
			break;
		lapic_write(APIC_EOI, 0);
	}
	lapic_write(APIC_ESR, 0);
	lapic_write(APIC_TDCR, 0);
	if (!x2) {
		lapic_write(APIC_DFR, ~0u);
		lapic_write(APIC_LDR, 0);
	}
	lapic_write(APIC_SVR, APIC_SVR_RESET);
}

void mp_wait_init(struct vcpu *v)
{
	while (!(__atomic_load_n(&v->mp_state, __ATOMIC_SEQ_CST) & MP_INIT))
		cpu_relax();
}

void mp_before_entry(struct vcpu *v)
{
	if (__builtin_expect(!v->mp_state, 1))
		return;
	for (;;) {
		u32 s = __atomic_load_n(&v->mp_state, __ATOMIC_SEQ_CST);
		if (s & MP_INIT) {
			hv.ops->reset_to_init(v);
			irq_drop_held(v);
			apic_init_reset(v);
			trace_nmi_reset(v);
			__atomic_store_n(&v->nmi_ipi, 0, __ATOMIC_SEQ_CST);	/* a sent NMI: INIT wins */
			if (__atomic_compare_exchange_n(&v->mp_state, &s, (s & ~MP_INIT) | MP_WAIT_SIPI, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
				v->inits++;
				LOG_DEBUG("vcpu %u: INIT, waiting for a SIPI", v->id);
			}
			continue;
		}
		if (s & MP_SIPI) {
			u8 vector = (u8)(s >> MP_VECTOR_SHIFT);
			if (!__atomic_compare_exchange_n(&v->mp_state, &s, 0, false, __ATOMIC_SEQ_CST,
							 __ATOMIC_SEQ_CST))
				continue;
			hv.ops->start_at_sipi(v, vector);
			v->sipis++;
			trace_update(v);	/* the engine re-plans from the new state */
			LOG_DEBUG("vcpu %u (APIC ID %u): started by SIPI at %05x", v->id, v->apic_id,
				 (u32)vector << 12);
			return;
		}
		if (!(s & MP_WAIT_SIPI))
			return;
		cpu_relax();
	}
}
