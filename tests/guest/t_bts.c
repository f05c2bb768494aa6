/*
 * t_bts: the guest's virtual Branch Trace Store. Enables BTS over the
 * hand-written sequences of bts_seq.S and compares the BTS buffer record by
 * record with the list their labels give; then the DS MSRs' checks, the
 * circular buffer, the BTINT threshold interrupt, the CPL filter, PUSHF
 * hiding the engine's TF, and DS areas that point nowhere.
 */
#include "guest.h"
#include "hvtrace/abi.h"

#define MSR_IA32_APICBASE	0x1b
#define MSR_MISC_ENABLE		0x1a0
#define MSR_DEBUGCTL		0x1d9
#define MSR_PERF_GLOBAL_STATUS	0x38e
#define MSR_PERF_GLOBAL_OVF_CTRL 0x390
#define MSR_DS_AREA		0x600
#define DEBUGCTL_TR		(1ull << 6)
#define DEBUGCTL_BTS		(1ull << 7)
#define DEBUGCTL_BTINT		(1ull << 8)
#define DEBUGCTL_BTS_OFF_OS	(1ull << 9)
#define TRACE			(DEBUGCTL_TR | DEBUGCTL_BTS)
#define OVF_BUFFER		(1ull << 62)
#define PMI_VECTOR		0xe0

struct ds_area64 {
	uint64_t bts_base, bts_index, bts_abs_max, bts_threshold;
	uint64_t pebs[8];
};
struct bts_rec {
	uint64_t from, to, flags;
};

#define SYM(x) extern char x[] __attribute__((visibility("hidden")))
SYM(n_jz_taken); SYM(n_jnz_near); SYM(n_t2); SYM(n_jmp_short); SYM(n_t3); SYM(n_call);
SYM(n_after_call); SYM(n_call_ind); SYM(n_after_ind); SYM(n_jmp_mem); SYM(n_t4); SYM(n_loop);
SYM(n_jrcxz); SYM(n_t5); SYM(n_jz_zero); SYM(n_jz_zero_t); SYM(n_func); SYM(n_ret);
SYM(n_ind); SYM(n_ret2);
SYM(e_int3); SYM(e_after_int3); SYM(e_ud); SYM(e_after_ud); SYM(e_intn); SYM(e_after_intn);
SYM(bp_handler); SYM(e_bp_iret); SYM(ud_handler); SYM(e_ud_iret); SYM(intn_handler);
SYM(e_intn_iret); SYM(pmi_handler);
SYM(c_j1); SYM(c_t1); SYM(c_j2); SYM(c_t2); SYM(c_j3); SYM(c_t3); SYM(c_j4); SYM(c_t4);
SYM(c_j5); SYM(c_t5); SYM(c_j6); SYM(c_t6);
SYM(g_2); SYM(g_3); SYM(g_4); SYM(g_5); SYM(g_6); SYM(g_7); SYM(db_handler); SYM(g_iret);
void seq_guest_tf(uint64_t debugctl);
extern volatile uint64_t db_count __attribute__((visibility("hidden")));
extern volatile uint64_t db_dr6_and __attribute__((visibility("hidden")));
SYM(b_hit); SYM(bp_db_handler); SYM(b_iret);
void seq_guest_bp(uint64_t debugctl);
extern volatile uint64_t bp_dr6 __attribute__((visibility("hidden")));
SYM(u_iret); SYM(u_start); SYM(u_jmp); SYM(u_t1); SYM(u_call); SYM(u_after_call); SYM(u_int);
SYM(u_func); SYM(u_ret); SYM(u_gate);
void seq_user(uint64_t debugctl, uint64_t user_rsp, uint64_t user_cs, uint64_t user_ss);
SYM(s_sys); SYM(s_after); SYM(sys_handler); SYM(s_jmp);
void seq_syscall(uint64_t debugctl);
SYM(i_after); SYM(irq_handler); SYM(i_jnz); SYM(i_jmp); SYM(i_x2); SYM(i_done); SYM(i_iret);
void seq_irq(uint64_t debugctl);
extern volatile uint64_t pmi_count __attribute__((visibility("hidden")));
void seq_near(uint64_t debugctl);
void seq_events(uint64_t debugctl);
void seq_chain(uint64_t debugctl);
void seq_pushf(uint64_t debugctl, uint64_t *out);

static struct ds_area64 ds __attribute__((aligned(64)));
static struct bts_rec buf[64] __attribute__((aligned(64)));

#define A(x) ((uint64_t)(uintptr_t)(x))
#define R(f, t) { (f), (t), 0 }

static uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static int wrmsr_fault(uint32_t msr, uint64_t v)
{
	return TRY(2, "wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

/* a buffer of `n` records, threshold after `thr` records */
static void ds_setup(unsigned n, unsigned thr)
{
	SetMem(buf, sizeof(buf), 0xee);
	ds.bts_base = A(buf);
	ds.bts_index = A(buf);
	ds.bts_abs_max = A(buf) + n * sizeof(struct bts_rec);
	ds.bts_threshold = A(buf) + thr * sizeof(struct bts_rec);
	wrmsr(MSR_DS_AREA, A(&ds));
}

static unsigned used(void)
{
	return (unsigned)((ds.bts_index - ds.bts_base) / sizeof(struct bts_rec));
}

/* Compares buf[0..n) with want[]; reports the first differences. */
static void check_records(const char *name, const struct bts_rec *want, unsigned n, unsigned got)
{
	unsigned bad = 0;
	char first[120] = "";
	for (unsigned i = 0; i < n && i < 64; i++) {
		if (buf[i].from != want[i].from || buf[i].to != want[i].to) {
			if (!bad++)
				hv_snprintf(first, sizeof(first), "#%u %lx->%lx, want %lx->%lx", i,
					    buf[i].from, buf[i].to, want[i].from, want[i].to);
		}
	}
	for (unsigned i = 0; i < got && i < 64; i++)
		report_info("%s record %u: %lx -> %lx%s", name, i, buf[i].from, buf[i].to,
			    i < n && (buf[i].from != want[i].from || buf[i].to != want[i].to) ? "  <-- differs" : "");
	report(got == n && !bad, name, "%u records, want %u; %u differ %s", got, n, bad, first);
}

struct gate { uint16_t off0, sel; uint8_t ist, type; uint16_t off1; uint32_t off2, rsvd; } __attribute__((packed));
static struct gate *idt_base(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) d;
	asm volatile("sidt %0" : "=m"(d));
	return (struct gate *)(uintptr_t)d.base;
}
static void set_gate(struct gate *g, void *h)
{
	uint16_t cs;
	uint64_t a = A(h);
	asm volatile("mov %%cs, %0" : "=r"(cs));
	*g = (struct gate){ (uint16_t)a, cs, 0, 0x8e, (uint16_t)(a >> 16), (uint32_t)(a >> 32), 0 };
}

static uint64_t irq_save(void)
{
	uint64_t f;
	asm volatile("pushfq; popq %0; cli" : "=r"(f)::"memory");
	return f;
}
static void irq_restore(uint64_t f)
{
	if (f & (1 << 9))
		asm volatile("sti" ::: "memory");
}

/* vCPU 0's status (RDX = 0: hypercall() passes it) */
static void vcpu_status(struct hvtrace_vcpu_status *st)
{
	uint64_t b = A(st), c = sizeof(*st);
	if (hypercall(HVTRACE_HC_VCPU_STATUS, &b, &c))
		SetMem(st, sizeof(*st), 0);
}

static void test_msrs(void)
{
	struct cpuid r = cpuid(1, 0);
	report(r.d & (1u << 21), "cpuid_ds", "edx %x", r.d);
	report(r.c & (1u << 2), "cpuid_dtes64", "ecx %x", r.c);
	uint64_t me = rdmsr(MSR_MISC_ENABLE);
	report(!(me & (1ull << 11)) && (me & (1ull << 12)), "misc_enable_bts_available", "%lx", me);
	wrmsr(MSR_MISC_ENABLE, me | (1ull << 11));
	report(!(rdmsr(MSR_MISC_ENABLE) & (1ull << 11)), "misc_enable_bts_bit_read_only", NULL);

	faults_catch();
	report(wrmsr_fault(MSR_DS_AREA, 0x0000800000000000ull) == 13, "ds_area_noncanonical_gp", NULL);
	report(wrmsr_fault(MSR_DS_AREA, 0xffff800000001000ull) < 0, "ds_area_canonical_high_ok", NULL);
	report(rdmsr(MSR_DS_AREA) == 0xffff800000001000ull, "ds_area_readback", NULL);
	report(wrmsr_fault(MSR_DEBUGCTL, 1ull << 2) == 13, "debugctl_reserved_bit_gp", NULL);
	report(wrmsr_fault(MSR_DEBUGCTL, 1ull << 32) == 13, "debugctl_high_bit_gp", NULL);
	report(wrmsr_fault(MSR_DEBUGCTL, DEBUGCTL_BTS_OFF_OS | 1) < 0 &&
		       rdmsr(MSR_DEBUGCTL) == (DEBUGCTL_BTS_OFF_OS | 1),
	       "debugctl_readback", "%lx", rdmsr(MSR_DEBUGCTL));
	wrmsr(MSR_DEBUGCTL, 0);
	report(wrmsr_fault(MSR_PERF_GLOBAL_STATUS, 0) == 13, "perf_global_status_read_only", NULL);
	faults_release();
}

static void test_near(void)
{
	const struct bts_rec want[] = {
		R(A(n_jz_taken), A(n_jz_taken) + 3),	/* over the nop, to n_t1 */
		R(A(n_jnz_near), A(n_t2)),
		R(A(n_jmp_short), A(n_t3)),
		R(A(n_call), A(n_func)),
		R(A(n_ret), A(n_after_call)),
		R(A(n_call_ind), A(n_ind)),
		R(A(n_ret2), A(n_after_ind)),
		R(A(n_jmp_mem), A(n_t4)),
		R(A(n_loop), A(n_loop)),
		R(A(n_loop), A(n_loop)),
		R(A(n_jrcxz), A(n_t5)),
		R(A(n_jz_zero), A(n_jz_zero_t)),
	};
	ds_setup(64, 64);
	uint64_t f = irq_save();
	seq_near(TRACE);
	irq_restore(f);
	check_records("bts_near_branches", want, sizeof(want) / sizeof(want[0]), used());
}

static void test_events(void)
{
	struct gate *idt = idt_base(), saved[3] = { idt[3], idt[6], idt[0x81] };
	const struct bts_rec want[] = {
		R(A(e_int3), A(bp_handler)),
		R(A(e_bp_iret), A(e_after_int3)),
		R(A(e_ud), A(ud_handler)),
		R(A(e_ud_iret), A(e_after_ud)),
		R(A(e_intn), A(intn_handler)),
		R(A(e_intn_iret), A(e_after_intn)),
	};
	ds_setup(64, 64);
	uint64_t f = irq_save();
	set_gate(&idt[3], bp_handler);
	set_gate(&idt[6], ud_handler);
	set_gate(&idt[0x81], intn_handler);
	seq_events(TRACE);
	idt[3] = saved[0];
	idt[6] = saved[1];
	idt[0x81] = saved[2];
	irq_restore(f);
	check_records("bts_int3_fault_intn", want, sizeof(want) / sizeof(want[0]), used());
}

static const struct bts_rec *chain(void)
{
	static struct bts_rec c[6];
	c[0] = (struct bts_rec){ A(c_j1), A(c_t1), 0 };
	c[1] = (struct bts_rec){ A(c_j2), A(c_t2), 0 };
	c[2] = (struct bts_rec){ A(c_j3), A(c_t3), 0 };
	c[3] = (struct bts_rec){ A(c_j4), A(c_t4), 0 };
	c[4] = (struct bts_rec){ A(c_j5), A(c_t5), 0 };
	c[5] = (struct bts_rec){ A(c_j6), A(c_t6), 0 };
	return c;
}

static void test_wrap(void)
{
	const struct bts_rec *c = chain();
	/* BTINT clear: a circular buffer of 4: records 5 and 6 overwrite 1 and 2 */
	struct bts_rec want[4] = { c[4], c[5], c[2], c[3] };
	ds_setup(4, 2);
	uint64_t f = irq_save();
	seq_chain(TRACE);
	irq_restore(f);
	check_records("bts_wrap_around", want, 4, 4);
	report(used() == 2, "bts_wrap_index", "index at record %u, want 2", used());
	report(buf[4].from == 0xeeeeeeeeeeeeeeeeull, "bts_wrap_no_overrun", NULL);
}

static void test_threshold(void)
{
	const struct bts_rec *c = chain();
	struct hvtrace_vcpu_status before, after;
	bool x2 = rdmsr(MSR_IA32_APICBASE) & (1ull << 10);
	uint64_t apic = rdmsr(MSR_IA32_APICBASE) & 0xfffff000ull;
	volatile uint32_t *lvtpc = (volatile uint32_t *)(uintptr_t)(apic + 0x340);
	uint32_t old_lvt = x2 ? (uint32_t)rdmsr(0x834) : *lvtpc;
	struct gate *idt = idt_base(), saved = idt[PMI_VECTOR];

	report_info("local APIC in %s mode, LVTPC %x", x2 ? "x2APIC" : "xAPIC", old_lvt);
	set_gate(&idt[PMI_VECTOR], pmi_handler);
	if (x2)
		wrmsr(0x834, PMI_VECTOR);
	else
		*lvtpc = PMI_VECTOR;
	wrmsr(MSR_PERF_GLOBAL_OVF_CTRL, OVF_BUFFER);
	pmi_count = 0;
	vcpu_status(&before);

	/* BTINT set: 4 records, the threshold after 2: a PMI at the 2nd record,
	 * the buffer stops when full (records 5 and 6 dropped) */
	ds_setup(4, 2);
	uint64_t f = irq_save();
	seq_chain(TRACE | DEBUGCTL_BTINT);
	uint64_t status = rdmsr(MSR_PERF_GLOBAL_STATUS);
	uint64_t pmis_masked = pmi_count;
	asm volatile("sti; nop; nop; nop" ::: "memory");	/* let the PMI in */
	for (int i = 0; i < 100000 && !pmi_count; i++)
		asm volatile("pause");
	asm volatile("cli");
	uint32_t lvt_after = x2 ? (uint32_t)rdmsr(0x834) : *lvtpc;
	irq_restore(f);
	vcpu_status(&after);

	check_records("bts_btint_stops_when_full", c, 4, used());
	report(status & OVF_BUFFER, "perf_global_status_ovf_buffer", "%lx", status);
	report(pmis_masked == 0 && pmi_count == 1, "bts_threshold_pmi", "pmis %lu (with IF=0: %lu)",
	       pmi_count, pmis_masked);
	report(lvt_after & (1u << 16), "lvtpc_masked_after_pmi", "lvtpc %x", lvt_after);
	report(after.bts_dropped - before.bts_dropped == 2 && after.bts_pmis - before.bts_pmis == 1,
	       "status_dropped_and_pmis", "dropped %lu pmis %lu", after.bts_dropped - before.bts_dropped,
	       after.bts_pmis - before.bts_pmis);
	wrmsr(MSR_PERF_GLOBAL_OVF_CTRL, OVF_BUFFER);
	report(!(rdmsr(MSR_PERF_GLOBAL_STATUS) & OVF_BUFFER), "perf_global_ovf_ctrl_clears", NULL);

	if (x2)
		wrmsr(0x834, old_lvt);
	else
		*lvtpc = old_lvt;
	idt[PMI_VECTOR] = saved;
}

/* An external interrupt in the middle of traced code: a self-IPI made
 * pending with IF=0 arrives right after STI's shadow. */
static void test_interrupt(void)
{
	bool x2 = rdmsr(MSR_IA32_APICBASE) & (1ull << 10);
	uint64_t apic = rdmsr(MSR_IA32_APICBASE) & 0xfffff000ull;
	struct gate *idt = idt_base(), saved = idt[0xe1];
	struct bts_rec want[3];
	unsigned n = 0;

	want[n++] = (struct bts_rec)R(A(i_after), A(irq_handler));
	if (x2)
		want[n++] = (struct bts_rec)R(A(i_jnz), A(i_x2));
	else
		want[n++] = (struct bts_rec)R(A(i_jmp), A(i_done));
	want[n++] = (struct bts_rec)R(A(i_iret), A(i_after));

	ds_setup(64, 64);
	uint64_t f = irq_save();
	/* task priority 0xd: only vector classes above 0xd (our 0xe1) get in,
	 * so a firmware timer tick pending meanwhile cannot follow our handler
	 * into the trace */
	uint64_t cr8;
	asm volatile("mov %%cr8, %0; mov %1, %%cr8" : "=&r"(cr8) : "r"(0xdull));
	set_gate(&idt[0xe1], irq_handler);
	if (x2)
		wrmsr(0x830, 0xe1 | (1u << 14) | (1u << 18));
	else
		*(volatile uint32_t *)(uintptr_t)(apic + 0x300) = 0xe1 | (1u << 14) | (1u << 18);
	seq_irq(TRACE);
	asm volatile("mov %0, %%cr8" ::"r"(cr8));
	idt[0xe1] = saved;
	irq_restore(f);
	check_records("bts_interrupt_mid_trace", want, n, used());
}

/* SYSCALL is followed into LSTAR (taken from CPL 0 here: SYSCALL works at
 * any CPL; the handler returns without SYSRET, which would enter ring 3). */
static void test_syscall(void)
{
	uint64_t efer = rdmsr(0xc0000080), star = rdmsr(0xc0000081), lstar = rdmsr(0xc0000082),
		 fmask = rdmsr(0xc0000084);
	uint16_t cs;
	asm volatile("mov %%cs, %0" : "=r"(cs));
	const struct bts_rec want[] = {
		R(A(s_sys), A(sys_handler)),
		R(A(s_jmp), A(s_after)),
	};
	ds_setup(64, 64);
	uint64_t f = irq_save();
	wrmsr(0xc0000080, efer | 1);			/* SCE */
	wrmsr(0xc0000081, (uint64_t)cs << 32);		/* SYSCALL CS = ours */
	wrmsr(0xc0000082, A(sys_handler));
	wrmsr(0xc0000084, 0x700);			/* TF, IF, DF: as Linux */
	seq_syscall(TRACE);
	wrmsr(0xc0000084, fmask);
	wrmsr(0xc0000082, lstar);
	wrmsr(0xc0000081, star);
	wrmsr(0xc0000080, efer);
	irq_restore(f);
	check_records("bts_syscall", want, 2, used());
}

/* The guest's own single-stepping while tracing: it gets every #DB it
 * would on hardware, with DR6.BS, and BTS records each trap and IRET. */
static void test_guest_tf(void)
{
	struct gate *idt = idt_base(), saved = idt[1];
	const struct bts_rec want[] = {
		R(A(g_2), A(db_handler)), R(A(g_iret), A(g_2)),	/* after nop */
		R(A(g_2), A(g_3)),				/* the jmp */
		R(A(g_3), A(db_handler)), R(A(g_iret), A(g_3)),	/* after jmp */
		R(A(g_4), A(db_handler)), R(A(g_iret), A(g_4)),	/* after nop */
		R(A(g_5), A(db_handler)), R(A(g_iret), A(g_5)),	/* after pushf */
		R(A(g_6), A(db_handler)), R(A(g_iret), A(g_6)),	/* after and */
		R(A(g_7), A(db_handler)), R(A(g_iret), A(g_7)),	/* after popf */
	};
	ds_setup(64, 64);
	uint64_t f = irq_save();
	set_gate(&idt[1], db_handler);
	db_count = 0;
	db_dr6_and = ~0ull;
	seq_guest_tf(TRACE);
	idt[1] = saved;
	irq_restore(f);
	report(db_count == 6, "guest_single_step_traps", "%lu #DB, want 6", db_count);
	report(db_dr6_and & (1 << 14), "guest_dr6_bs_on_each_trap", "DR6 AND of all entries %lx",
	       db_dr6_and);
	check_records("bts_guest_single_step", want, sizeof(want) / sizeof(want[0]), used());
}

/* The guest's own instruction breakpoint (DR0) while tracing: it fires,
 * its handler sees DR6.B0, and BTS records the fault and the IRET. */
static void test_guest_breakpoint(void)
{
	struct gate *idt = idt_base(), saved = idt[1];
	const struct bts_rec want[] = {
		R(A(b_hit), A(bp_db_handler)),
		R(A(b_iret), A(b_hit)),
	};
	ds_setup(64, 64);
	uint64_t f = irq_save();
	set_gate(&idt[1], bp_db_handler);
	db_count = 0;
	bp_dr6 = 0;
	asm volatile("mov %0, %%dr0; mov %1, %%dr7" ::"r"(A(b_hit)), "r"(0x401ull));
	seq_guest_bp(TRACE);
	asm volatile("mov %0, %%dr7" ::"r"(0x400ull));
	idt[1] = saved;
	irq_restore(f);
	report(db_count == 1 && (bp_dr6 & 1), "guest_breakpoint_fires", "%lu #DB, DR6 %lx", db_count,
	       bp_dr6);
	check_records("bts_guest_breakpoint", want, 2, used());
}

/* Ring 3 for the CPL filters: our own GDT (the firmware's, then user data
 * and 64-bit code at DPL 3 and a TSS whose RSP0 brings INT 0x82 back to a
 * ring-0 stack), the pages the user code touches made user-accessible. */
static uint64_t gdt[16] __attribute__((aligned(16)));
static uint8_t tss[104] __attribute__((aligned(16)));
static uint8_t kstack[8192] __attribute__((aligned(16)));
static uint8_t ustack[8192] __attribute__((aligned(4096)));

/* Sets U/S on every paging-structure entry mapping `va` (4-level paging). */
static void make_user(uint64_t va)
{
	uint64_t cr3, cr0;
	asm volatile("mov %%cr3, %0; mov %%cr0, %1" : "=r"(cr3), "=r"(cr0));
	asm volatile("mov %0, %%cr0" ::"r"(cr0 & ~(1ull << 16)));	/* WP off: tables may be R/O */
	uint64_t *t = (uint64_t *)(uintptr_t)(cr3 & 0x000ffffffffff000ull);
	for (int l = 3; l >= 0; l--) {
		uint64_t *e = &t[(va >> (12 + 9 * l)) & 511];
		*e |= 4;
		if (l == 0 || (*e & 0x80))
			break;
		t = (uint64_t *)(uintptr_t)(*e & 0x000ffffffffff000ull);
	}
	asm volatile("mov %0, %%cr0; mov %1, %%cr3" ::"r"(cr0), "r"(cr3) : "memory");
}

static bool user_setup(void)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) g;
	asm volatile("sgdt %0" : "=m"(g));
	if (g.limit + 1 > 9 * 8)
		return false;
	CopyMem(gdt, (void *)(uintptr_t)g.base, g.limit + 1);
	gdt[9] = 0x00cff3000000ffffull;		/* 0x48: user data, DPL 3 */
	gdt[10] = 0x00affb000000ffffull;	/* 0x50: user code, 64-bit, DPL 3 */
	uint64_t b = A(tss);
	gdt[11] = (sizeof(tss) - 1) | ((b & 0xffffff) << 16) | (0x89ull << 40) | (((b >> 24) & 0xff) << 56);
	gdt[12] = b >> 32;
	*(uint64_t *)(tss + 4) = A(kstack + sizeof(kstack));	/* RSP0 */
	*(uint16_t *)(tss + 102) = sizeof(tss);
	g.limit = 13 * 8 - 1;
	g.base = A(gdt);
	asm volatile("lgdt %0; mov $0x58, %%ax; ltr %%ax" ::"m"(g) : "rax");
	for (uint64_t p = A(u_start) & ~0xfffull; p <= A(u_ret); p += 4096)
		make_user(p);
	make_user(A(ustack));
	make_user(A(ustack) + 4096);
	return true;
}

static void run_user(uint64_t debugctl)
{
	struct gate *idt = idt_base(), saved = idt[0x82];
	ds_setup(64, 64);
	uint64_t f = irq_save();
	set_gate(&idt[0x82], u_gate);
	idt[0x82].type = 0xee;	/* DPL 3: reachable from ring 3 */
	seq_user(debugctl, A(ustack + sizeof(ustack)), 0x53, 0x4b);
	idt[0x82] = saved;
	irq_restore(f);
}

static void test_user_mode(void)
{
	static bool ready;
	if (!ready && !(ready = user_setup())) {
		report_skip("bts_user_mode", "the firmware's GDT is larger than expected");
		return;
	}
	/* every branch: ring 0's IRETQ into ring 3, ring 3's jmp/call/ret and
	 * its INT 0x82 back into ring 0 (recorded at the source's CPL) */
	const struct bts_rec all[] = {
		R(A(u_iret), A(u_start)),
		R(A(u_jmp), A(u_t1)),
		R(A(u_call), A(u_func)),
		R(A(u_ret), A(u_after_call)),
		R(A(u_int), A(u_gate)),
	};
	run_user(TRACE);
	check_records("bts_user_mode_all", all, 5, used());
	/* BTS_OFF_OS: only what ring 3 did */
	run_user(TRACE | DEBUGCTL_BTS_OFF_OS);
	check_records("bts_off_os_ring3", all + 1, 4, used());
	/* BTS_OFF_USR: only ring 0's IRETQ */
	run_user(TRACE | (1ull << 10));
	check_records("bts_off_usr_ring3", all, 1, used());
}

static void test_filters_and_flags(void)
{
	/* CPL 0 code with BTS_OFF_OS: nothing stored */
	ds_setup(64, 64);
	uint64_t f = irq_save();
	seq_chain(TRACE | DEBUGCTL_BTS_OFF_OS);
	irq_restore(f);
	report(used() == 0, "bts_off_os_filters_cpl0", "%u records", used());

	/* PUSHF inside traced code must not show the engine's TF */
	uint64_t flags = 0;
	ds_setup(64, 64);
	f = irq_save();
	seq_pushf(TRACE, &flags);
	irq_restore(f);
	report(!(flags & (1 << 8)), "pushf_hides_engine_tf", "pushed flags %lx", flags);
	report(rdmsr(MSR_DEBUGCTL) == 0, "debugctl_off_after", NULL);
}

static void test_bad_ds(void)
{
	struct hvtrace_vcpu_status before, after;
	struct hvtrace_status hs;
	uint64_t b = A(&hs), c = sizeof(hs);
	hypercall(HVTRACE_HC_STATUS, &b, &c);
	vcpu_status(&before);

	uint64_t f = irq_save();
	/* a DS area nobody mapped, then one inside the hypervisor's range,
	 * then a good area whose buffer points into the hypervisor */
	wrmsr(MSR_DS_AREA, 0x00007f0000000000ull);
	seq_chain(TRACE);
	wrmsr(MSR_DS_AREA, hs.hv_phys_base + 0x1000);
	seq_chain(TRACE);
	ds_setup(64, 64);
	ds.bts_base = ds.bts_index = hs.hv_phys_base;
	ds.bts_abs_max = hs.hv_phys_base + 0x1000;
	seq_chain(TRACE);
	irq_restore(f);
	vcpu_status(&after);
	report(after.bts_dropped - before.bts_dropped == 18, "bad_ds_area_records_dropped",
	       "dropped %lu, want 18", after.bts_dropped - before.bts_dropped);
	report(after.branches - before.branches == 18, "bad_ds_area_branches_still_seen",
	       "branches %lu", after.branches - before.branches);
	hs.flags = 0;
	b = A(&hs);
	c = sizeof(hs);
	report(hypercall(HVTRACE_HC_STATUS, &b, &c) == 0 && (hs.flags & HVTRACE_STATUS_INTEGRITY_OK),
	       "bad_ds_area_hypervisor_intact", NULL);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_bts");
	if (!under_hvtrace()) {
		report_skip("all", "not running under hvtrace");
		report_done();
	}
	struct hvtrace_vcpu_status st;
	test_msrs();
	test_near();
	test_events();
	test_wrap();
	test_threshold();
	test_interrupt();
	test_syscall();
	test_guest_tf();
	test_guest_breakpoint();
	test_user_mode();
	test_filters_and_flags();
	test_bad_ds();
	vcpu_status(&st);
	report(st.magic == HVTRACE_VCPU_STATUS_MAGIC && st.engine == HVTRACE_ENGINE_OFF &&
		       st.branches > 0 && st.bts_records > 0 && st.trace_exits > 0,
	       "vcpu_status", "engine %u branches %lu records %lu trace exits %lu", st.engine,
	       st.branches, st.bts_records, st.trace_exits);
	report_done();
}
