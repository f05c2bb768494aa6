/* AMD SVM backend: probe, VMCB set-up from the live processor state (the
 * firmware becomes the guest), the run loop, and the ops table. Runs in
 * host mode with interrupts and GIF off. AMD APM Vol. 2 chapter 15. */
#include "hvtrace/abi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/desc.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "arch/x86/resume.h"
#include "arch/x86/vectors.h"
#include "base/lapic.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "base/prof.h"
#include "base/rootexc.h"
#include "dispatch/cpuid.h"
#include "svm/svm.h"

static int svm_probe(u32 *caps)
{
	struct cpuid_regs r;

	cpuid_count(0x80000000, 0, &r);
	if (r.eax < 0x8000000a)
		return HV_ERR_NO_SVM;
	cpuid_count(0x80000001, 0, &r);
	if (!(r.ecx & CPUID_80000001_ECX_SVM))
		return HV_ERR_NO_SVM;
	/* APM 15.4: SVMDIS set means EFER.SVME cannot be set */
	if (rdmsr(MSR_VM_CR) & VM_CR_SVMDIS)
		return HV_ERR_SVM_DISABLED;
	cpuid_count(0x8000000a, 0, &r);
	if (!(r.edx & CPUID_8000000A_EDX_NP))
		return HV_ERR_NO_NPT;
	*caps = (r.edx & CPUID_8000000A_EDX_NRIPS) ? HV_CAP_NRIP : 0;
	/* INIT and SIPI are delivered by the hypervisor (dispatch/mp.c) */
	*caps |= HV_CAP_SMP | HV_CAP_IPI_GATE;
	return HV_OK;
}

/* VMCB segment from a selector in the current GDT (APM 15.5.1: the VMCB
 * holds the hidden part; attributes in the packed 12-bit format). */
static void seg_from_gdt(struct vmcb_seg *s, u16 sel, const struct desc_ptr *gdt)
{
	s->sel = sel;
	if (!(sel & ~3u) || (sel | 7u) > gdt->limit) {
		s->attr = 0;
		s->limit = 0;
		s->base = 0;
		return;
	}
	u64 d = *(const u64 *)(uintptr_t)(gdt->base + (sel & ~7u));
	s->attr = desc_attr(d);
	s->limit = desc_limit(d);
	s->base = desc_base(d);
}

/* The tables every vCPU shares: one nested page table (the same map for
 * every processor) and one MSR and I/O permission map. */
static u64 shared_ncr3, shared_msrpm_pa, shared_iopm_pa;

static bool svm_root_db(struct exc_frame *f);

static int svm_setup(void)
{
	root_db_after_exit = svm_root_db;
	/* said here, before any guest runs: said at the first injection, it
	 * went out while the loader, already a guest, wrote its own line to
	 * the same serial port, and split it (a test's line not found) */
	if (!(hv.caps & HV_CAP_NRIP))
		LOG_INFO("no NRIP save (QEMU's TCG): each external interrupt injected will be followed by an NMI "
			 "exit, which keeps QEMU from delivering it twice (docs/smp.md \"Found\")");
	int st = svm_npt_build(&shared_ncr3);
	return st ? st : svm_msrpm_build(&shared_msrpm_pa, &shared_iopm_pa);
}

static int svm_vcpu_init(struct vcpu *v)
{
	struct svm_vcpu *sv;
	struct desc_ptr gdt, idt;

	sv = mm_alloc_pages(1, NULL);
	if (!sv || !(sv->vmcb = mm_alloc_pages(1, &sv->vmcb_pa)) ||
	    !mm_alloc_pages(1, &sv->host_save_pa) || !mm_alloc_pages(1, &sv->hsave_pa))
		return HV_ERR_NO_MEMORY;
	v->arch = sv;

	/* SVM instructions (CLGI included) #UD until EFER.SVME is set */
	sv->efer_before = rdmsr(MSR_EFER);
	wrmsr(MSR_EFER, sv->efer_before | EFER_SVME);
	svm_clgi();
	wrmsr(MSR_VM_HSAVE_PA, sv->hsave_pa);

	struct vmcb_control *c = &sv->vmcb->control;
	struct vmcb_save *s = &sv->vmcb->save;

	/* The guest is the processor as it is now (the firmware and the
	 * loader); VMSAVE captures FS, GS, TR, LDTR and the syscall MSRs. */
	svm_vmsave(sv->vmcb_pa);
	sgdt(&gdt);
	sidt(&idt);
	seg_from_gdt(&s->es, read_es(), &gdt);
	seg_from_gdt(&s->cs, read_cs(), &gdt);
	seg_from_gdt(&s->ss, read_ss(), &gdt);
	seg_from_gdt(&s->ds, read_ds(), &gdt);
	s->gdtr.base = gdt.base;
	s->gdtr.limit = gdt.limit;
	s->idtr.base = idt.base;
	s->idtr.limit = idt.limit;
	s->cpl = 0;
	s->efer = sv->efer_before | EFER_SVME;	/* VMRUN needs SVME in the guest */
	s->cr0 = read_cr0();
	s->cr2 = read_cr2();
	s->cr3 = v->boot->guest.cr3;
	s->cr4 = read_cr4();
	s->dr6 = read_dr6();
	s->dr7 = read_dr7();
	s->g_pat = rdmsr(MSR_IA32_PAT);

	/* NMIs always: the hypervisor kicks a vCPU with one (dispatch/mp.c);
	 * INIT always: a processor reset by INIT would leave guest mode and,
	 * at the next SIPI, run outside the hypervisor (APM 15.13.1, 15.19) */
	c->intercept_misc3 = INTERCEPT3_CPUID | INTERCEPT3_MSR_PROT | INTERCEPT3_SHUTDOWN |
			     INTERCEPT3_INVLPGA | INTERCEPT3_IOIO_PROT | INTERCEPT3_INVD |
			     INTERCEPT3_NMI | INTERCEPT3_INIT;
	/* RDPMC reads the virtual PMU's counters where the guest has one (an
	 * Intel guest: docs/pmu.md); an AMD guest's reaches the processor */
	if (!hv.vendor_amd)
		c->intercept_misc3 |= INTERCEPT3_RDPMC;
	c->intercept_misc4 = INTERCEPT4_VMRUN | INTERCEPT4_VMMCALL | INTERCEPT4_VMLOAD |
			     INTERCEPT4_VMSAVE | INTERCEPT4_STGI | INTERCEPT4_CLGI |
			     INTERCEPT4_SKINIT | INTERCEPT4_WBINVD;
	/* APM 15.11 Table 15-5: every MOV to or from DR0-DR7 (reads in bits
	 * 0-7, writes in 16-23): the guest's debug registers are the
	 * hypervisor's to load (trace_host_dr7, docs/security.md) */
	c->intercept_dr = 0xff | (0xffu << 16);
	/* MOV to CR0 and CR4: QEMU's TCG takes values the hardware would #GP
	 * (CR0.NW without CD, CR4's reserved bits), and the next VMRUN would
	 * fail (svm_mov_to_cr0, svm_mov_to_cr4) */
	c->intercept_cr = INTERCEPT_CR_WRITE(0) | INTERCEPT_CR_WRITE(4);
	/* #UD where the guest's hypercall is VMCALL (an Intel guest) */
	c->intercept_exceptions = hv_exception_intercepts(0);
	c->iopm_base_pa = shared_iopm_pa;
	c->msrpm_base_pa = shared_msrpm_pa;
	c->asid = 1;
	c->tlb_control = TLB_CONTROL_FLUSH_ALL;
	c->np_ctl = NP_ENABLE;
	c->n_cr3 = shared_ncr3;

	return HV_OK;
}

/* The first VMRUN refused the state: undo SVM and return to the loader
 * natively, as if hv_enter() had failed (which it did). */
static void __noreturn svm_abort_start(struct vcpu *v, struct svm_vcpu *sv)
{
	struct vmcb_save *s = &sv->vmcb->save;
	struct native_state ns = {
		.gdtr_base = s->gdtr.base, .gdtr_limit = (u16)s->gdtr.limit,
		.idtr_base = s->idtr.base, .idtr_limit = (u16)s->idtr.limit,
		.cs = s->cs.sel, .ss = s->ss.sel, .ds = s->ds.sel, .es = s->es.sel,
		.cr3 = v->boot->guest.cr3, .rsp = v->boot->guest.rsp, .rip = v->boot->guest.abort_rip,
		.rax = (u64)(s64)HV_ERR_VMRUN_FAILED,
	};
	LOG_ERR("%s; guest state follows", hv_status_str(HV_ERR_VMRUN_FAILED));
	svm_dump(v);
	asm volatile("vmload %%rax" ::"a"(sv->vmcb_pa) : "memory");
	wrmsr(MSR_EFER, sv->efer_before);
	svm_stgi();
	resume_native(&ns);
}

/* VMRUN refused the guest's state after it had run: say which check
 * (the copy of what VMRUN was given) and end the guest. */
static void __noreturn svm_refused(struct vcpu *v, struct svm_vcpu *sv)
{
	struct svm_limits lim = { .cr4_valid = cr4_valid_bits_here(), .phys_bits = hv.boot.phys_limit ?
		(u32)__builtin_ctzll(hv.boot.phys_limit) : 52 };
	const char *why = svm_vmrun_refusal(&sv->entry, &lim);
	LOG_ERR("vcpu %u: VMRUN refused the guest state (VMEXIT_INVALID): %s (APM Vol. 2 15.5.1); "
		"CR0 %lx CR3 %lx CR4 %lx EFER %lx DR6 %lx DR7 %lx CS attr %x", v->id,
		why ? why : "no consistency check explains it (a model-specific one?)", sv->entry.cr0,
		sv->entry.cr3, sv->entry.cr4, sv->entry.efer, sv->entry.dr6, sv->entry.dr7, sv->entry.cs_attr);
	hv_guest_refused(v, why ? why : "VMEXIT_INVALID");
}

/*
 * QEMU's TCG loads CS with both L and D set at a SYSENTER or SYSEXIT into
 * 64-bit code, where Intel's processors give L alone (SDM Vol. 2B
 * SYSENTER, SYSEXIT); on AMD's both are #UD in long mode, so only a guest
 * whose CPUID says Intel gets there (-cpu max,vendor=GenuineIntel). The
 * next VMRUN refuses that state (APM Vol. 2 15.5.1), and the guest would
 * end. D means nothing in 64-bit code (SDM Vol. 3 3.4.5): cleared, as the
 * hardware leaves it; nothing the guest can read changes (LAR reads the
 * descriptor in memory). A far transfer through a descriptor with both
 * set, which the hardware refuses with #GP and TCG takes, then runs as
 * TCG runs it without the hypervisor. Said once.
 */
static void svm_cs_l_and_d(struct vcpu *v, struct vmcb_save *s)
{
	static bool said;
	if (!(s->efer & EFER_LME) || !(s->cr0 & CR0_PG) || !(s->cr4 & CR4_PAE) ||
	    (s->cs.attr & (VMCB_ATTR_L | VMCB_ATTR_DB)) != (VMCB_ATTR_L | VMCB_ATTR_DB))
		return;
	s->cs.attr &= ~VMCB_ATTR_DB;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		LOG_WARN("vcpu %u: CS with both L and D at %lx (the emulator's SYSENTER/SYSEXIT?): D "
			 "cleared, as the hardware has it in 64-bit code (said once)", v->id, v->rip);
}

/* An external interrupt goes in only when the guest can take it (irq.c
 * irq_deliver): one injected with the guest's IF clear is the
 * hypervisor's bug, and a guest that holds a lock with interrupts off
 * deadlocks on it (docs/smp.md "Found"). Said once, with what the last
 * exit was, to find the path that did it. */
static void svm_check_injection(struct vcpu *v, struct svm_vcpu *sv)
{
	static bool said;
	const struct vmcb_control *c = &sv->vmcb->control;
	if (!(c->event_inj & EVENTINJ_V) || (c->event_inj & EVENTINJ_TYPE_MASK) || (v->rflags & RFLAGS_IF) ||
	    __atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		return;
	LOG_ERR("vcpu %u: external interrupt %02x injected with the guest's IF clear at %lx (a hypervisor "
		"bug): last exit %lx, info1 %lx, EXITINTINFO %lx, interrupt state %lx, int_ctl %lx",
		v->id, (u32)c->event_inj & 0xff, v->rip, c->exit_code, c->exit_info1, c->exit_int_info,
		c->int_state, c->int_ctl);
}

/*
 * QEMU's TCG (7.2; target/i386/tcg/sysemu/svm_helper.c, helper_vmrun)
 * delivers an injected external interrupt (EVENTINJ type 0) during VMRUN
 * but leaves cs->exception_index set to its vector. The next exit request
 * for that CPU's thread (any interrupt another thread raises for it kicks
 * it) makes cpu_handle_exception() (accel/tcg/cpu-exec.c) deliver that
 * vector again, as an exception, whatever the guest's IF: inside the
 * handler of the first, with IF clear. A Linux guest deadlocked on its
 * interrupt descriptor's lock that way (docs/smp.md). An NMI pending at
 * VMRUN undoes it: QEMU takes interrupt requests before exit requests
 * (cpu_handle_interrupt), the NMI intercept exits right after the
 * delivery, before the handler's first instruction, and the exit resets
 * exception_index. The NMI is a kick (mp_take_kick), one more exit per
 * interrupt injected. Only where SVM has no NRIP save, QEMU's TCG (7.2):
 * AMD processors since family 10h and KVM's nested SVM have it and inject
 * as the APM says. Not the brand string: a nested KVM guest started with
 * `-cpu host` inside QEMU's TCG shows TCG's brand. A TCG that reported
 * NRIP save would need this decided otherwise. A guest NMI arriving at the
 * same moment merges with it (base/hv.c hv_kick says the same of every
 * kick).
 */
static void svm_tcg_injection_quirk(struct vcpu *v, const struct vmcb_control *c)
{
	if ((hv.caps & HV_CAP_NRIP) || (c->event_inj & (EVENTINJ_V | EVENTINJ_TYPE_MASK)) != EVENTINJ_V)
		return;
	__atomic_store_n(&v->kick, 1, __ATOMIC_SEQ_CST);
	lapic_self_ipi(LVT_DM_NMI, 0);
}

/*
 * QEMU's TCG (7.2), seen with a guest data breakpoint the host DR7 armed
 * (trace_host_dr7) and a single step on the same instruction whose #DB is
 * intercepted: the step's #DB exits, and the data breakpoint's hit, still
 * pending in QEMU, is raised after the #VMEXIT, in root mode, at the
 * instruction after VMRUN, against the host DR7 #VMEXIT restored (the one
 * that armed it); QEMU also raises a #DB with no cause there. On hardware
 * both are one #DB in the guest (DR6 with BS and Bn; SDM Vol. 3 18.3.1).
 * So a #DB at svm_vmexit_rip is the guest's: its B0-B3 join the guest's
 * DR6 of that exit (svm_root_db_merge) and the host DR7 is disarmed (the
 * exit path would do it next). It runs before run.S restored anything:
 * the guest's GS base and GPRs (the frame keeps them), the host stack with
 * svm_vmrun's `v` on top. t_debug `data_breakpoint_with_single_step`.
 */
extern const char svm_vmexit_rip[];
static bool svm_root_db(struct exc_frame *f)
{
	if (f->rip != (u64)(uintptr_t)svm_vmexit_rip)
		return false;
	struct vcpu *v = *(struct vcpu *const *)(uintptr_t)f->rsp;
	struct svm_vcpu *sv = v->arch;
	sv->root_db_dr6 |= read_dr6() & DR6_BN;
	write_dr6(DR6_CLEAN);
	host_dr7_disarm();
	return true;
}

/* What svm_root_db took joins the #DB exit's DR6 (the guest's trap after
 * the same instruction); with any other exit there is no #DB to carry it
 * and it is dropped, said once (not seen). */
static void svm_root_db_merge(struct vcpu *v, struct svm_vcpu *sv)
{
	static bool said;
	u64 bits = sv->root_db_dr6;
	sv->root_db_dr6 = 0;
	if (sv->vmcb->control.exit_code == SVM_EXIT_EXCP_BASE + X86_DB) {
		sv->vmcb->save.dr6 |= bits;
		return;
	}
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		LOG_WARN("vcpu %u: a data breakpoint's #DB (DR6 bits %lx) QEMU raised in root mode came with exit %lx, "
			 "not a #DB: dropped (said once)", v->id, bits, sv->vmcb->control.exit_code);
}

static void __noreturn svm_vcpu_run(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb_save *s = &sv->vmcb->save;

	/* dispatch/entry.c loaded the host's GDT/TSS: VMLOAD restores the host's
	 * FS/GS/TR from here after each exit. */
	svm_vmsave(sv->host_save_pa);
	prof_start(v);
	for (;;) {
		/* an NMI the host took while acknowledging an interrupt goes to
		 * the guest through core, which records it while tracing */
		if (sv->nmi_pending && !(sv->vmcb->control.event_inj & EVENTINJ_V)) {
			struct hv_event nmi = { .kind = HV_EV_NMI };
			sv->nmi_pending = false;
			hv_handle_event(v, &nmi);
		}
		s->rax = v->gpr[GPR_RAX];
		s->rsp = v->gpr[GPR_RSP];
		s->rip = v->rip;
		s->rflags = v->rflags;
		svm_cs_l_and_d(v, s);
		struct vmcb_control *c = &sv->vmcb->control;
		/* the nested tables changed (svm_npt_set_exec): what this
		 * processor cached of them goes (APM Vol. 2 15.16.1) */
		u32 gen = __atomic_load_n(&svm_npt_gen, __ATOMIC_ACQUIRE);
		if (gen != sv->npt_gen) {
			sv->npt_gen = gen;
			c->tlb_control = TLB_CONTROL_FLUSH_ALL;
		}
		svm_check_injection(v, sv);
		svm_tcg_injection_quirk(v, c);
		sv->entry = (struct svm_entry_state){ s->cr0, s->cr3, s->cr4, s->efer, s->dr6, s->dr7,
						      c->event_inj, c->intercept_misc4, c->asid, s->cs.attr };
		prof_switch(v, HVTRACE_PROF_GUEST);
		svm_vmrun(v, sv->vmcb_pa, sv->host_save_pa);
		prof_switch(v, HVTRACE_PROF_EXIT);
		if (sv->root_db_dr6)
			svm_root_db_merge(v, sv);
		v->prof.exits++;
		if (SVM_EXIT_IS_INVALID(c->exit_code) && !sv->launched)
			svm_abort_start(v, sv);
		if (SVM_EXIT_IS_INVALID(c->exit_code))
			svm_refused(v, sv);
		sv->launched = true;
		sv->vmcb->control.tlb_control = 0;
		v->gpr[GPR_RAX] = s->rax;
		v->gpr[GPR_RSP] = s->rsp;
		v->rip = s->rip;
		v->rflags = s->rflags;
		svm_handle_exit(v, sv);
		prof_switch(v, HVTRACE_PROF_ENTRY);
	}
}

static void svm_inject_exception(struct vcpu *v, u8 vector, bool has_err, u32 err)
{
	struct svm_vcpu *sv = v->arch;
	u64 inj = vector | EVENTINJ_TYPE_EXCEPTION | EVENTINJ_V;
	if (has_err)
		inj |= EVENTINJ_EV | ((u64)err << 32);
	sv->vmcb->control.event_inj = inj;
}

static int svm_get_cpl(struct vcpu *v)
{
	return ((struct svm_vcpu *)v->arch)->vmcb->save.cpl;
}

static u64 svm_get_cr(struct vcpu *v, int n)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	switch (n) {
	case 0: return s->cr0;
	case 2: return s->cr2;
	case 3: return s->cr3;
	case 4: return s->cr4;
	}
	return 0;
}

static void svm_set_cr2(struct vcpu *v, u64 val)
{
	((struct svm_vcpu *)v->arch)->vmcb->save.cr2 = val;
}

/* DR6 and DR7 live in the VMCB (APM 15.5.1); DR0-3 are never switched. */
static u64 svm_get_dr(struct vcpu *v, int n)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	return n == 6 ? s->dr6 : s->dr7;
}

static void svm_set_dr(struct vcpu *v, int n, u64 val)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	if (n == 6)
		s->dr6 = val;
	else
		s->dr7 = val;
}

static void svm_set_exception_intercepts(struct vcpu *v, u32 mask)
{
	((struct svm_vcpu *)v->arch)->vmcb->control.intercept_exceptions = hv_exception_intercepts(mask);
}

static void svm_set_intr_intercept(struct vcpu *v, bool on)
{
	struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	if (on)
		c->intercept_misc3 |= INTERCEPT3_INTR;
	else
		c->intercept_misc3 &= ~INTERCEPT3_INTR;	/* NMIs stay intercepted */
}

/* The segment bases a WRMSR sets, in the VMCB's VMLOAD part: the VMLOAD
 * before the next VMRUN loads them (hv/svm/run.S). */
static void svm_set_base_msr(struct vcpu *v, u32 msr, u64 val)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	if (msr == MSR_FS_BASE)
		s->fs.base = val;
	else if (msr == MSR_GS_BASE)
		s->gs.base = val;
	else
		s->kernel_gs_base = val;
}

/* The syscall MSRs live in the VMCB's VMSAVE part, refreshed by the
 * VMSAVE after every exit (hv/svm/run.S). */
static u64 svm_get_msr(struct vcpu *v, u32 msr)
{
	const struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	switch (msr) {
	case MSR_STAR: return s->star;
	case MSR_LSTAR: return s->lstar;
	case MSR_CSTAR: return s->cstar;
	case MSR_SFMASK: return s->sfmask;
	case MSR_KERNEL_GS_BASE: return s->kernel_gs_base;
	case MSR_IA32_SYSENTER_CS: return s->sysenter_cs;
	case MSR_IA32_SYSENTER_ESP: return s->sysenter_esp;
	case MSR_IA32_SYSENTER_EIP: return s->sysenter_eip;
	}
	return 0;
}

/* APM Vol. 2 15.16.1: TLB_CONTROL 1, the whole TLB flushed at the next VMRUN (the guest's
 * ASID's entries, global ones included, among them); the field goes back to 0 after each
 * exit */
static void svm_flush_guest_tlb(struct vcpu *v)
{
	((struct svm_vcpu *)v->arch)->vmcb->control.tlb_control = TLB_CONTROL_FLUSH_ALL;
}

static void svm_set_sti_shadow(struct vcpu *v)
{
	((struct svm_vcpu *)v->arch)->vmcb->control.int_state |= INT_STATE_SHADOW;	/* APM 15.21.5 */
}

/* APM Vol. 2 13.1.3.4: the trap as a #DB with DR6.BS, through EVENTINJ
 * (SVM keeps no pending debug exceptions to clear) */
static void svm_set_single_step_trap(struct vcpu *v, bool trap)
{
	struct svm_vcpu *sv = v->arch;
	if (trap && sv->vmcb->control.event_inj == 0) {
		sv->vmcb->save.dr6 |= DR6_BS;
		sv->vmcb->control.event_inj = X86_DB | EVENTINJ_TYPE_EXCEPTION | EVENTINJ_V;
	}
}

static void svm_end_interrupt_shadow(struct vcpu *v)
{
	struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	if (c->event_inj == 0)
		c->int_state = 0;	/* APM 15.21.5 */
}

static void svm_inject_interrupt(struct vcpu *v, u8 vector)
{
	/* APM 15.20: EVENTINJ type 0 = external interrupt */
	((struct svm_vcpu *)v->arch)->vmcb->control.event_inj = vector | EVENTINJ_V;
}

/* No physical interrupt exits while the guest's IF is clear (V_INTR_MASKING
 * is 0: its IF masks them, APM 15.21.1), but the one held may have come
 * with a shadow or an event to deliver: EVENTINJ, or EXITINTINFO that
 * svm_handle_exit() injects again after core. */
static bool svm_irq_blocked(struct vcpu *v)
{
	const struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	return !(v->rflags & RFLAGS_IF) || (c->int_state & INT_STATE_SHADOW) ||
	       (c->event_inj & EVENTINJ_V) || (c->exit_int_info & EVENTINJ_V);
}

/* APM 15.21.4: a virtual interrupt pending (V_IRQ) and its VINTR
 * intercept: the exit comes before the guest would take it, as soon as
 * its IF and shadow allow, and V_IRQ goes before the guest ever sees it.
 * MOV to CR8 is intercepted meanwhile (svm_mov_to_cr8): QEMU 7.2's TCG
 * raises its VIRQ request for a guest's CR8 write with V_IRQ pending
 * without the lock its interrupt code asserts (helper_write_crN), and
 * aborts (issue #15: t_debug, traced). */
static void svm_set_irq_window(struct vcpu *v, bool on)
{
	struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	if (on) {
		c->int_ctl |= INT_CTL_V_IRQ | INT_CTL_V_INTR_PRIO | INT_CTL_V_IGN_TPR;
		c->intercept_misc3 |= INTERCEPT3_VINTR;
		c->intercept_cr |= INTERCEPT_CR_WRITE(8);
	} else {
		c->int_ctl &= ~(INT_CTL_V_IRQ | INT_CTL_V_INTR_PRIO | INT_CTL_V_IGN_TPR);
		c->intercept_misc3 &= ~INTERCEPT3_VINTR;
		c->intercept_cr &= ~INTERCEPT_CR_WRITE(8);
	}
}

static void svm_set_hlt_intercept(struct vcpu *v, bool on)
{
	struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	if (on)
		c->intercept_misc3 |= INTERCEPT3_HLT;
	else
		c->intercept_misc3 &= ~INTERCEPT3_HLT;
}

static void svm_inject_nmi(struct vcpu *v)
{
	/* APM 15.20: type 2, NMI (the vector field is ignored; 2 by custom) */
	((struct svm_vcpu *)v->arch)->vmcb->control.event_inj = X86_NMI | EVENTINJ_TYPE_NMI | EVENTINJ_V;
}

/* APM 15.9: the IRET intercept exits before the IRET runs (trace/nmi.c
 * ends the guest's NMI blocking after it) */
static void svm_set_iret_intercept(struct vcpu *v, bool on)
{
	struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	if (on)
		c->intercept_misc3 |= INTERCEPT3_IRET;
	else
		c->intercept_misc3 &= ~INTERCEPT3_IRET;
}

/* The guest's PKRU: VMRUN and #VMEXIT leave PKRU as it is (APM Vol. 2 15.5.1 and 15.6 list
 * what they load and save), so in root mode it is the guest's. RDPKRU needs CR4.PKE, which
 * the hypervisor's own CR4 may lack: set for that one instruction. The guest's CR4.PKE is set
 * (the caller asks only then), so the processor has protection keys. Root mode runs with GIF
 * clear (svm_stgi only in the exit handler's short windows), so no NMI, SMI or interrupt
 * comes between the two CR4 writes: nothing but RDPKRU runs with PKE set. */
static bool svm_guest_pkru(struct vcpu *v, u32 *pkru)
{
	(void)v;
	u64 cr4 = read_cr4();
	if (cr4 & CR4_PKE) {
		*pkru = rdpkru();
		return true;
	}
	write_cr4(cr4 | CR4_PKE);
	*pkru = rdpkru();
	write_cr4(cr4);
	return true;
}

/* EVENTINJ holds an event, or EXITINTINFO one svm_handle_exit() injects
 * again after core (APM 15.7.2) */
static bool svm_event_pending(struct vcpu *v)
{
	const struct vmcb_control *c = &((struct svm_vcpu *)v->arch)->vmcb->control;
	return (c->event_inj & EVENTINJ_V) || (c->exit_int_info & EVENTINJ_V);
}

/* The guest never sees SVME (it runs on a CPU "without SVM") but VMRUN
 * requires it in the guest's EFER (APM 15.5.1). */
static u64 svm_get_efer(struct vcpu *v)
{
	return ((struct svm_vcpu *)v->arch)->vmcb->save.efer & ~EFER_SVME;
}

static void svm_set_efer(struct vcpu *v, u64 efer)
{
	((struct svm_vcpu *)v->arch)->vmcb->save.efer = efer | EFER_SVME;
}

static void svm_get_seg(struct vcpu *v, enum hv_seg seg, struct hv_segment *out)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	const struct vmcb_seg *vs[] = { &s->es, &s->cs, &s->ss, &s->ds, &s->fs, &s->gs,
					&s->gdtr, &s->idtr };
	out->sel = vs[seg]->sel;
	out->attr = vs[seg]->attr;
	out->limit = vs[seg]->limit;
	out->base = vs[seg]->base;
}

/* APM Vol. 2 14.1.3 "Processor Initialization State" (Table 14-1), as an
 * INIT leaves it: real mode at F000:FFF0, caches enabled as they were (INIT
 * keeps CR0.CD/NW), RDX the family/model/stepping. EFER.SVME stays for
 * VMRUN (the guest never sees it). MSRs INIT does not touch stay. */
static void svm_reset_to_init(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb_save *s = &sv->vmcb->save;
	struct vmcb_control *c = &sv->vmcb->control;
	struct cpuid_regs r;
	const struct vmcb_seg data = { .sel = 0, .attr = 0x93, .limit = 0xffff, .base = 0 };

	s->cr0 = CR0_ET | (s->cr0 & (CR0_CD | CR0_NW));
	s->cr2 = 0;
	s->cr3 = 0;
	s->cr4 = 0;
	s->efer = EFER_SVME;
	s->cs = (struct vmcb_seg){ .sel = 0xf000, .attr = 0x9b, .limit = 0xffff, .base = 0xffff0000 };
	s->ds = s->es = s->fs = s->gs = s->ss = data;
	s->gdtr = (struct vmcb_seg){ .limit = 0xffff };
	s->idtr = (struct vmcb_seg){ .limit = 0xffff };
	s->ldtr = (struct vmcb_seg){ .attr = 0x82, .limit = 0xffff };
	s->tr = (struct vmcb_seg){ .attr = 0x8b, .limit = 0xffff };
	s->cpl = 0;
	s->dr6 = DR6_CLEAN;
	s->dr7 = DR7_FIXED1;
	memset(v->gpr, 0, sizeof(v->gpr));
	cpuid_count(1, 0, &r);
	v->gpr[GPR_RDX] = r.eax;
	v->rip = 0xfff0;
	v->rflags = RFLAGS_FIXED1;
	c->event_inj = 0;
	c->int_state = 0;
	c->tlb_control = TLB_CONTROL_FLUSH_ALL;
}

/* SDM Vol. 3 10.4.4.1 / APM 16.5: a SIPI starts the processor at
 * vector * 4096 in real mode, CS = vector << 8, IP = 0. */
static void svm_start_at_sipi(struct vcpu *v, u8 vector)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	s->cs.sel = (u16)(vector << 8);
	s->cs.base = (u64)vector << 12;
	v->rip = 0;
}

const struct hv_arch_ops svm_ops = {
	.name = "svm",
	.backend = HVTRACE_BACKEND_SVM,
	.probe = svm_probe,
	.setup = svm_setup,
	.vcpu_init = svm_vcpu_init,
	.vcpu_run = svm_vcpu_run,
	.inject_exception = svm_inject_exception,
	.get_cpl = svm_get_cpl,
	.get_cr = svm_get_cr,
	.set_cr2 = svm_set_cr2,
	.get_dr = svm_get_dr,
	.set_dr = svm_set_dr,
	.set_exception_intercepts = svm_set_exception_intercepts,
	.set_intr_intercept = svm_set_intr_intercept,
	.inject_interrupt = svm_inject_interrupt,
	.irq_blocked = svm_irq_blocked,
	.set_irq_window = svm_set_irq_window,
	.set_hlt_intercept = svm_set_hlt_intercept,
	.take_pending = svm_take_pending,
	.inject_nmi = svm_inject_nmi,
	.set_iret_intercept = svm_set_iret_intercept,
	.event_pending = svm_event_pending,
	.guest_pkru = svm_guest_pkru,
	.get_msr = svm_get_msr,
	.set_base_msr = svm_set_base_msr,
	.intercept_msr_read = svm_intercept_msr_read,
	.set_sti_shadow = svm_set_sti_shadow,
	.flush_guest_tlb = svm_flush_guest_tlb,
	.set_single_step_trap = svm_set_single_step_trap,
	.end_interrupt_shadow = svm_end_interrupt_shadow,
	.get_efer = svm_get_efer,
	.set_efer = svm_set_efer,
	.get_seg = svm_get_seg,
	.dump = svm_dump,
	.reset_to_init = svm_reset_to_init,
	.start_at_sipi = svm_start_at_sipi,
	.npt_set_exec = svm_npt_set_exec,
	.npt_set_write = svm_npt_set_write,
};
