/*
 * t_debug: the guest's own debugging and event delivery, as the hardware
 * defines them (Intel SDM Vol. 3 ch. 6 and 18, AMD APM Vol. 2 ch. 8 and
 * 13): MOV to and from the debug registers (bits 63:32 of DR6/DR7, their
 * fixed bits, DR4/DR5 against CR4.DE, DR0-DR3, DR7.GD), instruction
 * breakpoints with RF, data breakpoints, single steps over ordinary and
 * intercepted instructions, PUSHF/POPF with TF, BTF, the MOV SS and STI
 * shadows with single steps and with an interrupt pending, and faults
 * while an event is delivered (#NP with the gate's error code, #GP past
 * the IDT's limit, #DF). Independent of hvtrace: the differential tier
 * (tests/integration-diff.sh) runs it with and without the hypervisor,
 * idle and traced, where the branch engine itself uses TF, DR7 and #DB.
 */
#include "guest.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/dr.h"

#define SYM(x) extern char x[] __attribute__((visibility("hidden")))
#define LOG_MAX 32
#define IPI_VECTOR 0xe1
extern volatile uint64_t ev_n __attribute__((visibility("hidden")));
extern volatile uint64_t ev_vec[LOG_MAX] __attribute__((visibility("hidden")));
extern volatile uint64_t ev_rip[LOG_MAX] __attribute__((visibility("hidden")));
extern volatile uint64_t ev_fl[LOG_MAX] __attribute__((visibility("hidden")));
extern volatile uint64_t ev_err[LOG_MAX] __attribute__((visibility("hidden")));
extern volatile uint64_t ev_dr6[LOG_MAX] __attribute__((visibility("hidden")));
extern volatile uint64_t db_set_rf __attribute__((visibility("hidden")));
extern volatile uint64_t ss_pushf_image __attribute__((visibility("hidden")));
extern volatile uint16_t ms_sel __attribute__((visibility("hidden")));
extern volatile uint64_t dv_word __attribute__((visibility("hidden")));
SYM(dbg_db_handler); SYM(dbg_irq_handler); SYM(dbg_np_handler); SYM(dbg_df_handler);
SYM(ss_1); SYM(ss_2); SYM(ss_3); SYM(ss_4); SYM(ss_5); SYM(ss_6); SYM(ss_7); SYM(ss_8);
SYM(ss_9); SYM(ss_10); SYM(ss_11); SYM(ss_12); SYM(ss_13); SYM(ss_14); SYM(ss_15); SYM(ss_16);
SYM(ms_1); SYM(ms_3); SYM(ms_5); SYM(ms_6); SYM(ms_7); SYM(ms_8);
SYM(md_1); SYM(md_3); SYM(dv_1); SYM(dv_2); SYM(rf_1); SYM(rf_2); SYM(gd_1);
SYM(st_2); SYM(pf_1); SYM(sh_1); SYM(ts_1); SYM(ts_2); SYM(ts_3); SYM(ts_4); SYM(ts_5);
SYM(ts_6); SYM(seq_int81); SYM(seq_ud);
SYM(dt_1); SYM(dt_2); SYM(dt_3); SYM(dt_4); SYM(dt_5);
void seq_step(void);
void seq_movss(void);
void seq_movss_data(void);
void seq_data(void);
void seq_data_tf(void);
void seq_rf(void);
uint64_t seq_gd(void);
void seq_sti(void);
void seq_popf_if(void);
void seq_sti_hlt(void);
void seq_tf_sti(void);
void seq_df(void);

/* DR6 of a #DB with these causes and nothing else (the bits that read as 1) */
#define DR6_OF(causes) (DR6_CLEAN | (causes))

/* An expected event: its vector, the RIP its frame returns to and, for a
 * #DB, DR6 (0: not compared) or, for #NP/#GP, the error code */
struct ev { uint64_t vec, rip, aux; };

static void log_reset(void)
{
	ev_n = 0;
	db_set_rf = 0;
}

/* Compares the event log with want[0..n); on a difference, lists it. */
static bool log_check(const char *name, const struct ev *want, unsigned n)
{
	unsigned got = (unsigned)ev_n, bad = got != n ? 1 : 0;
	char first[120] = "";
	for (unsigned i = 0; i < n && i < got && i < LOG_MAX; i++) {
		uint64_t aux = ev_vec[i] == X86_DB ? ev_dr6[i] : ev_err[i];
		bool differs = ev_vec[i] != want[i].vec || ev_rip[i] != want[i].rip ||
			       (want[i].aux && aux != want[i].aux);
		if (differs && !bad++)
			hv_snprintf(first, sizeof(first), "#%u: vector %lu at %lx (%lx), want %lu at %lx (%lx)",
				    i, ev_vec[i], ev_rip[i], aux, want[i].vec, want[i].rip, want[i].aux);
	}
	if (bad)
		for (unsigned i = 0; i < got && i < LOG_MAX; i++)
			report_info("%s: event %u: vector %lu at %lx, rflags %lx, dr6 %lx, error %lx", name, i,
				    ev_vec[i], ev_rip[i], ev_fl[i], ev_dr6[i], ev_err[i]);
	report(!bad, name, "%u events, want %u %s", got, n, first);
	return !bad;
}

static void set_dr7(uint64_t v)
{
	asm volatile("mov %0, %%dr7" ::"r"(v));
}

static uint64_t get_dr(int n)
{
	uint64_t v = 0;
	switch (n) {
	case 0: asm volatile("mov %%dr0, %0" : "=r"(v)); break;
	case 1: asm volatile("mov %%dr1, %0" : "=r"(v)); break;
	case 2: asm volatile("mov %%dr2, %0" : "=r"(v)); break;
	case 3: asm volatile("mov %%dr3, %0" : "=r"(v)); break;
	case 6: asm volatile("mov %%dr6, %0" : "=r"(v)); break;
	default: asm volatile("mov %%dr7, %0" : "=r"(v)); break;
	}
	return v;
}

static void set_dr(int n, uint64_t v)
{
	switch (n) {
	case 0: asm volatile("mov %0, %%dr0" ::"r"(v)); break;
	case 1: asm volatile("mov %0, %%dr1" ::"r"(v)); break;
	case 2: asm volatile("mov %0, %%dr2" ::"r"(v)); break;
	case 3: asm volatile("mov %0, %%dr3" ::"r"(v)); break;
	case 6: asm volatile("mov %0, %%dr6" ::"r"(v)); break;
	default: set_dr7(v); break;
	}
}

/* --- MOV to and from the debug registers ---------------------------------- */

/* SDM Vol. 2B MOV—Move to/from Debug Registers: bits 63:32 of DR6 and DR7
 * set is #GP(0), nothing written. DR6 bits 4-11 and 16-31 read as 1 on a
 * processor without RTM and bus-lock detection (bits 16 and 11 then
 * follow the write's inverse: not compared there), bit 12 as 0; DR7 bit
 * 10 reads as 1 (SDM Vol. 3 18.2.3-4, APM Vol. 2 13.1.1.3-4). */
static void test_dr_rules(void)
{
	uint64_t f = irq_save();
	set_dr(6, 0);
	set_dr7(DR7_FIXED1);
	int v6 = TRY(3, "mov %0, %%dr6" ::"a"(DR6_CLEAN | (1ull << 32)));
	int v7 = TRY(3, "mov %0, %%dr7" ::"a"(DR7_FIXED1 | DR7_L(0) | (1ull << 40)));
	uint64_t d6 = get_dr(6), d7 = get_dr(7);
	report(v6 == 13 && v7 == 13 && d6 == DR6_CLEAN && d7 == DR7_FIXED1, "dr6_dr7_high_bits_gp",
	       "vec %d %d, dr6 %lx dr7 %lx", v6, v7, d6, d7);

	bool rtm = cpuid(7, 0).b & CPUID_7_EBX_RTM, bld = cpuid(7, 0).c & CPUID_7_ECX_BUS_LOCK_DETECT;
	set_dr(6, 0);
	uint64_t zero = get_dr(6);
	set_dr(6, 0xf);
	uint64_t bn = get_dr(6);
	set_dr(6, DR6_CLEAN);
	uint64_t mask = ~((rtm ? 1ull << 16 : 0) | (bld ? 1ull << 11 : 0));
	report((zero & mask) == (DR6_CLEAN & mask) && (bn & mask) == (DR6_OF(0xf) & mask), "dr6_fixed_bits",
	       "0 reads %lx, 0xf reads %lx", zero, bn);

	set_dr7(0);
	uint64_t z7 = get_dr(7);
	set_dr7(DR7_L(1) | DR7_G(2));
	uint64_t e7 = get_dr(7);
	set_dr7(DR7_FIXED1);
	report(z7 == DR7_FIXED1 && e7 == (DR7_FIXED1 | DR7_L(1) | DR7_G(2)), "dr7_fixed_bit10",
	       "0 reads %lx, L1|G2 reads %lx", z7, e7);

	uint64_t was[4], back[4];
	const uint64_t val[4] = { 0x1000, 0x7fffffffeff8ull, 0xffff800000001234ull, A(test_dr_rules) };
	for (int i = 0; i < 4; i++) {
		was[i] = get_dr(i);
		set_dr(i, val[i]);
	}
	for (int i = 0; i < 4; i++) {
		back[i] = get_dr(i);
		set_dr(i, was[i]);
	}
	report(back[0] == val[0] && back[1] == val[1] && back[2] == val[2] && back[3] == val[3],
	       "dr0_dr3_readback", "%lx %lx %lx %lx", back[0], back[1], back[2], back[3]);
	irq_restore(f);
}

/* DR4/DR5 alias DR6/DR7 with CR4.DE clear, are #UD with it set (SDM Vol.
 * 3 18.2.2); interrupts off from the CR4 write to the reads (t_rec). */
static void test_dr4_dr5(void)
{
	uint64_t cr4 = read_cr4(), f = irq_save(), d4, d5, d6, d7, w7;
	asm volatile("mov %0, %%cr4" ::"r"(cr4 & ~CR4_DE));
	set_dr(6, DR6_OF(DR6_B1));
	set_dr7(DR7_FIXED1 | DR7_G(0));
	asm volatile("mov %%dr4, %0; mov %%dr5, %1" : "=r"(d4), "=r"(d5));
	asm volatile("mov %0, %%dr5" ::"r"(DR7_FIXED1 | DR7_L(3)));
	w7 = get_dr(7);
	asm volatile("mov %0, %%dr4" ::"r"(0ull));
	d6 = get_dr(6);
	set_dr7(DR7_FIXED1);
	report(d4 == DR6_OF(DR6_B1) && d5 == (DR7_FIXED1 | DR7_G(0)) && w7 == (DR7_FIXED1 | DR7_L(3)) &&
		       d6 == DR6_CLEAN,
	       "dr4_dr5_alias_with_de_clear", "dr4 %lx dr5 %lx; dr5 write: dr7 %lx, dr4 write: dr6 %lx", d4,
	       d5, w7, d6);
	asm volatile("mov %0, %%cr4" ::"r"(cr4 | CR4_DE));
	int r4 = TRY(3, "mov %%dr4, %0" : "=a"(d4));
	int r5 = TRY(3, "mov %%dr5, %0" : "=a"(d5));
	int w5 = TRY(3, "mov %0, %%dr5" ::"a"(DR7_FIXED1 | DR7_L(0)));
	d7 = get_dr(7);
	asm volatile("mov %0, %%cr4" ::"r"(cr4));
	irq_restore(f);
	report(r4 == 6 && r5 == 6 && w5 == 6 && d7 == DR7_FIXED1, "dr4_dr5_ud_with_de_set",
	       "vec %d %d %d, dr7 %lx", r4, r5, w5, d7);
}

/* DR7.GD: the next MOV to or from a debug register is a #DB fault at it,
 * DR6.BD set, GD cleared for the handler (SDM Vol. 3 18.2.4, 18.3.1.5) */
static void test_gd(void)
{
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	log_reset();
	set_dr(6, DR6_CLEAN);
	uint64_t dr7 = seq_gd();
	set_dr7(DR7_FIXED1);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	const struct ev want[] = { { X86_DB, A(gd_1), DR6_OF(DR6_BD) } };
	bool ok = log_check("dr7_gd_fault", want, 1);
	report(ok && dr7 == DR7_FIXED1, "dr7_gd_cleared_on_db", "dr7 after %lx", dr7);
}

/* --- breakpoints ----------------------------------------------------------- */

/* Instruction breakpoints on two adjacent instructions, the handler
 * setting RF: each fires once, with only its own Bn; RF keeps the first
 * from firing again and is gone by the second (SDM Vol. 3 18.3.1.1). The
 * frame of an instruction-breakpoint fault holds RF as it was: clear
 * (6.8.3 sets it for the other faults). DR0/DR1, then DR2/DR3 (the
 * registers the branch engine takes for itself while tracing). */
static void run_rf(const char *name, int a, int b)
{
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	uint64_t was_a = get_dr(a), was_b = get_dr(b);
	log_reset();
	db_set_rf = 1;
	set_dr(6, DR6_CLEAN);
	set_dr(a, A(rf_1));
	set_dr(b, A(rf_2));
	set_dr7(DR7_FIXED1 | DR7_L(a) | DR7_L(b));
	seq_rf();
	set_dr7(DR7_FIXED1);
	set_dr(a, was_a);
	set_dr(b, was_b);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	const struct ev want[] = {
		{ X86_DB, A(rf_1), DR6_OF(1ull << a) },
		{ X86_DB, A(rf_2), DR6_OF(1ull << b) },
	};
	log_check(name, want, 2);
}

static void test_rf(void)
{
	run_rf("exec_breakpoints_dr0_dr1_rf", 0, 1);
	run_rf("exec_breakpoints_dr2_dr3_rf", 2, 3);
	/* the frames of the two faults above */
	report(ev_n == 2 && !(ev_fl[0] & RFLAGS_RF) && !(ev_fl[1] & RFLAGS_RF), "exec_breakpoint_frame_rf_clear",
	       "rflags %lx %lx", ev_fl[0], ev_fl[1]);
}

/* Data breakpoints are traps: the #DB comes after the access, at the next
 * instruction, with the Bn of the breakpoint (SDM Vol. 3 18.2.4: RW 01
 * writes, 11 reads and writes; LEN 11: 4 bytes). */
static void run_data(const char *name, int dr, uint64_t rw, void (*seq)(void), const struct ev *want, unsigned n)
{
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	uint64_t was = get_dr(dr);
	log_reset();
	set_dr(6, DR6_CLEAN);
	set_dr(dr, A(&dv_word));
	set_dr7(DR7_FIXED1 | DR7_L(dr) | ((rw | (3ull << 2)) << DR7_RW_SHIFT(dr)));
	seq();
	set_dr7(DR7_FIXED1);
	set_dr(dr, was);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	log_check(name, want, n);
}

static void test_data_breakpoints(void)
{
	const struct ev w0[] = { { X86_DB, A(dv_1), DR6_OF(DR6_B0) } };
	run_data("data_breakpoint_write_dr0", 0, 1, seq_data, w0, 1);
	const struct ev rw1[] = { { X86_DB, A(dv_1), DR6_OF(DR6_B1) }, { X86_DB, A(dv_2), DR6_OF(DR6_B1) } };
	run_data("data_breakpoint_read_write_dr1", 1, 3, seq_data, rw1, 2);
	const struct ev w3[] = { { X86_DB, A(dv_1), DR6_OF(DR6_B3) } };
	run_data("data_breakpoint_write_dr3", 3, 1, seq_data, w3, 1);

	/* a single step and a data breakpoint on one instruction: one #DB */
	const struct ev st[] = {
		{ X86_DB, A(dt_1), DR6_OF(DR6_BS | DR6_B0) }, { X86_DB, A(dt_2), DR6_OF(DR6_BS) },
		{ X86_DB, A(dt_3), DR6_OF(DR6_BS) }, { X86_DB, A(dt_4), DR6_OF(DR6_BS) },
		{ X86_DB, A(dt_5), DR6_OF(DR6_BS) },
	};
	run_data("data_breakpoint_with_single_step", 0, 1, seq_data_tf, st, 5);
}

/* --- single steps and shadows ------------------------------------------------ */

static void test_single_step(void)
{
	const char *const at[] = { ss_1, ss_2, ss_3, ss_4, ss_5, ss_6, ss_7, ss_8,
				   ss_9, ss_10, ss_11, ss_12, ss_13, ss_14, ss_15, ss_16 };
	struct ev want[16];
	for (unsigned i = 0; i < 16; i++)
		want[i] = (struct ev){ X86_DB, A(at[i]), DR6_OF(DR6_BS) };
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	log_reset();
	set_dr(6, DR6_CLEAN);
	seq_step();
	uint64_t d6 = get_dr(6);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	log_check("single_step_ordinary_and_intercepted", want, 16);
	report(ss_pushf_image & RFLAGS_TF, "single_step_pushf_shows_tf", "image %lx", ss_pushf_image);
	report(d6 == DR6_CLEAN, "single_step_ends_after_popf", "dr6 %lx", d6);
}

/* MOV SS: the single-step trap after it waits for the next instruction
 * (SDM Vol. 3 6.8.3), and so does a data breakpoint its load hits */
static void test_movss(void)
{
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	log_reset();
	set_dr(6, DR6_CLEAN);
	seq_movss();
	const struct ev want[] = {
		{ X86_DB, A(ms_1), DR6_OF(DR6_BS) }, { X86_DB, A(ms_3), DR6_OF(DR6_BS) },
		{ X86_DB, A(ms_5), DR6_OF(DR6_BS) }, { X86_DB, A(ms_6), DR6_OF(DR6_BS) },
		{ X86_DB, A(ms_7), DR6_OF(DR6_BS) }, { X86_DB, A(ms_8), DR6_OF(DR6_BS) },
	};
	log_check("single_step_mov_ss_shadow", want, 6);

	log_reset();
	uint64_t was = get_dr(0);
	set_dr(0, A(&ms_sel));
	/* DR0: read/write, 2 bytes */
	set_dr7(DR7_FIXED1 | DR7_L(0) | ((3ull | (1ull << 2)) << DR7_RW_SHIFT(0)));
	seq_movss_data();
	set_dr7(DR7_FIXED1);
	set_dr(0, was);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	/* the store before (a write to ms_sel) traps at md_1 */
	const struct ev wd[] = { { X86_DB, A(md_1), DR6_OF(DR6_B0) }, { X86_DB, A(md_3), DR6_OF(DR6_B0) } };
	log_check("data_breakpoint_mov_ss_delayed", wd, 2);
}

/* A fixed self-IPI, left pending while IF is clear */
static void self_ipi(void)
{
	uint32_t icr = IPI_VECTOR | ICR_LEVEL_ASSERT | ICR_DEST_SELF;
	if (x2apic_mode())
		wrmsr(X2APIC_MSR(APIC_ICR_LO), icr);
	else
		*xapic_reg(APIC_ICR_LO) = icr;
}

static void eoi(void)
{
	if (x2apic_mode())
		wrmsr(X2APIC_MSR(APIC_EOI), 0);
	else
		*xapic_reg(APIC_EOI) = 0;
}

/* Runs `seq` with IF clear and the self-IPI pending, task priority 0xd
 * (only vector classes above it, ours, get in: not the firmware's timer) */
static void run_irq(const char *name, void (*seq)(void), const struct ev *want, unsigned n)
{
	uint64_t f = irq_save(), cr8;
	struct gate saved[2] = { handle_exception(IPI_VECTOR, dbg_irq_handler),
				 handle_exception(X86_DB, dbg_db_handler) };
	asm volatile("mov %%cr8, %0; mov %1, %%cr8" : "=&r"(cr8) : "r"(0xdull));
	log_reset();
	set_dr(6, DR6_CLEAN);
	self_ipi();
	seq();
	/* not come (held: traced, the hypervisor paces interrupts,
	 * docs/branch-engine.md): waited for with IF set, so that it reaches
	 * this handler, is EOId and shows in the log where it came */
	bool seen = false;
	for (unsigned i = 0; i < ev_n && i < LOG_MAX; i++)
		seen |= ev_vec[i] == IPI_VECTOR;
	for (unsigned i = 0; !seen && i < 200000; i++) {
		asm volatile("sti; nop; cli" ::: "memory");
		seen = ev_n && ev_vec[(ev_n - 1) % LOG_MAX] == IPI_VECTOR;
	}
	if (seen)
		eoi();
	asm volatile("mov %0, %%cr8" ::"r"(cr8));
	gate_restore(IPI_VECTOR, saved[0]);
	gate_restore(X86_DB, saved[1]);
	irq_restore(f);
	log_check(name, want, n);
}

/* STI: interrupts wait for the end of the next instruction (SDM Vol. 2B
 * STI); POPF has no such shadow; STI; HLT takes the interrupt after HLT.
 * With TF: the single-step trap after STI is not held back, and the
 * interrupt comes when that #DB's IRET sets IF, before the next
 * instruction (then stepped). */
static void test_interrupt_shadows(void)
{
	const struct ev sti[] = { { IPI_VECTOR, A(st_2), 0 } };
	run_irq("sti_shadow_interrupt_after_next", seq_sti, sti, 1);
	const struct ev popf[] = { { IPI_VECTOR, A(pf_1), 0 } };
	run_irq("popf_if_no_shadow", seq_popf_if, popf, 1);
	const struct ev hlt[] = { { IPI_VECTOR, A(sh_1), 0 } };
	run_irq("sti_hlt_interrupt_after_hlt", seq_sti_hlt, hlt, 1);
	const struct ev tf[] = {
		{ X86_DB, A(ts_1), DR6_OF(DR6_BS) },	 { X86_DB, A(ts_2), DR6_OF(DR6_BS) },
		{ IPI_VECTOR, A(ts_2), 0 },		 { X86_DB, A(ts_3), DR6_OF(DR6_BS) },
		{ X86_DB, A(ts_4), DR6_OF(DR6_BS) },	 { X86_DB, A(ts_5), DR6_OF(DR6_BS) },
		{ X86_DB, A(ts_6), DR6_OF(DR6_BS) },
	};
	run_irq("single_step_sti_with_interrupt", seq_tf_sti, tf, 7);
}

/* DEBUGCTL.BTF with TF: the single-step trap only after a taken branch
 * (SDM Vol. 3 18.4.3; AMD APM Vol. 2 13.1.3.5). seq_rf's RET is the only
 * branch: one #DB, at where it returns. */
static void test_btf(void)
{
	uint64_t dbgctl = 0;
	if (rdmsr_fault(MSR_IA32_DEBUGCTL, &dbgctl) >= 0) {
		report_skip("btf_step_on_branches", "no IA32_DEBUGCTL");
		return;
	}
	uint64_t f = irq_save();
	struct gate saved = handle_exception(X86_DB, dbg_db_handler);
	log_reset();
	set_dr(6, DR6_CLEAN);
	uint64_t ret = 0;
	int vec = wrmsr_fault(MSR_IA32_DEBUGCTL, DEBUGCTL_BTF);
	asm volatile("pushfq; orq %2, (%%rsp); popfq\n\t"
		     "call seq_rf\n\t"
		     "1: leaq 1b(%%rip), %0\n\t"
		     "pushfq; andq %3, (%%rsp); popfq"
		     : "=r"(ret), "+m"(ev_n)
		     : "i"(RFLAGS_TF), "i"(~RFLAGS_TF)
		     : "memory");
	wrmsr_fault(MSR_IA32_DEBUGCTL, dbgctl);
	gate_restore(X86_DB, saved);
	irq_restore(f);
	/* the CALL to seq_rf, then its RET: after each, one #DB */
	const struct ev want[] = { { X86_DB, A(seq_rf), DR6_OF(DR6_BS) }, { X86_DB, ret, DR6_OF(DR6_BS) } };
	if (vec >= 0)
		report(false, "btf_step_on_branches", "DEBUGCTL.BTF write: vector %d", vec);
	else
		log_check("btf_step_on_branches", want, 2);
}

/* --- faults while an event is delivered ------------------------------------- */

/* Through a gate that is not present: #NP with the gate's error code
 * (vector * 8, IDT bit 1; EXT bit 0 when the event was an exception:
 * SDM Vol. 3 6.13); past the IDT's limit: #GP with that code; #NP
 * through a gate not present itself: #DF (Table 6-5), error code 0. */
static void test_delivery_faults(void)
{
	struct gate *idt = idt_base(), g81 = idt[0x81], g6 = idt[X86_UD];
	uint64_t f = irq_save();
	struct gate np = handle_exception(X86_NP, dbg_np_handler);
	struct gate df = handle_exception(X86_DF, dbg_df_handler);
	set_gate(&idt[0x81], seq_int81);	/* any address: only P matters */
	idt[0x81].type &= 0x7f;
	log_reset();
	asm volatile("call seq_int81" ::: "memory");
	const struct ev w81[] = { { X86_NP, A(seq_int81), 0x81 * 8 + 2 } };
	log_check("int_n_gate_not_present_np", w81, 1);

	idt[X86_UD].type &= 0x7f;
	log_reset();
	asm volatile("call seq_ud" ::: "memory");
	idt[X86_UD] = g6;
	const struct ev wud[] = { { X86_NP, A(seq_ud), X86_UD * 8 + 2 + 1 } };
	log_check("exception_gate_not_present_np_ext", wud, 1);

	idt[X86_NP].type &= 0x7f;
	log_reset();
	seq_df();
	idt[X86_NP].type |= 0x80;
	report(ev_n == 1 && ev_vec[0] == X86_DF && ev_err[0] == 0, "np_during_np_double_fault",
	       "%lu events, first: vector %lu error %lx", ev_n, ev_vec[0], ev_err[0]);

	/* vector 0x81 past the limit (and present again): #GP(0x81 * 8 + 2) */
	idt[0x81].type |= 0x80;
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) was, shrunk;
	asm volatile("sidt %0" : "=m"(was));
	shrunk = was;
	shrunk.limit = 0x81 * 16 - 1;
	faults_catch();
	asm volatile("lidt %0" ::"m"(shrunk));
	int vec = TRY(2, "int $0x81");
	asm volatile("lidt %0" ::"m"(was));
	faults_release();
	uint64_t err = fault_error;
	idt[0x81] = g81;
	gate_restore(X86_NP, np);
	gate_restore(X86_DF, df);
	irq_restore(f);
	report(vec == 13 && err == 0x81 * 8 + 2, "int_n_past_idt_limit_gp", "vec %d error %lx", vec, err);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_debug");
	report_info("running %s hvtrace", under_hvtrace() ? "under" : "without");
	faults_catch();
	test_dr_rules();
	test_dr4_dr5();
	faults_release();
	test_gd();
	test_rf();
	test_data_breakpoints();
	test_single_step();
	test_movss();
	test_interrupt_shadows();
	faults_catch();
	test_btf();
	faults_release();
	test_delivery_faults();
	report_done();
}
