/*
 * t_gdb: a busy guest for the host's debugger (`hvtrace gdb --shm`,
 * tests/integration-rec.sh svm-gdb-live). Prints where its loop and data
 * are (GDB-TARGET), then runs gdb_loop (gdb_seq.S) with interrupts on
 * until the debugger writes the magic value into gdb_poke or 120 s pass.
 * The checks: the debugger's memory write arrived, the R15 it set came
 * through, the loop's own invariant never broke (a stop, a step and
 * register writes of R15 only leave it intact), the loop went on after
 * the debugger let it go, and the debugger's hardware breakpoint never
 * showed in the DR3 and DR7 the loop read (they stay the guest's). And,
 * while the debugger holds breakpoints and watchpoints in the loop, the
 * guest's own: its DR0 and DR7 written every turn (DR7 cleared first, so
 * that a debugger with four takes DR0, then DR0 and DR7 set) read back
 * as written, and so do DR1 and DR2, which hold the debugger's (written
 * every turn, never enabled by the guest's DR7),
 * its DR0 breakpoint fired once every turn (its #DB handler counted as
 * many as the turns), and the code under the debugger's breakpoints read
 * as data is always the original bytes. Then gdb_chain (gdb_seq.S): a
 * traced call chain ending at gdb_chain_bp, where the debugger stops it
 * and reads the branch history that led there (record btrace). Last, the
 * fault phase, once before the debugger comes (the reference) and once
 * after gdb_chain, where the debugger holds a breakpoint at a page that
 * is not present and a watchpoint on a word of it, and a breakpoint on a
 * page present but not executable, and ones before an INT3 and on a
 * PUSHF, which it steps: a jump to each page and a store fault, and the
 * guest's own #PF and #BP handlers must see each fault and the INT3 as
 * they did without the debugger (vector, error code, CR2, and the RIP,
 * CS and RFLAGS pushed), and the PUSHF store the RFLAGS of before. And
 * two SYSCALLs the debugger steps, one with SFMASK clearing TF (as
 * Linux) and one leaving it: R11, the RFLAGS each saved, as without the
 * debugger (the hidden TF not in it). Last, gdb_six, run three times:
 * the debugger stops the first run at six breakpoints in a batch of ten
 * (four on code never run take its debug registers: the six are page
 * breakpoints, on two pages, one of which reads its own code): each
 * instruction ran three times, the code read as data the original bytes.
 * Then gdb_wsix, run three times: six words stored in order, the
 * debugger's six watchpoints on them (four debug registers, two page
 * watchpoints), each word stored three times.
 * Last, when the debugger asks for it, the pair phase (pair_phase): two
 * vCPUs at two watchpoints at once.
 */
#include "guest.h"
#include "hvtrace/abi.h"
#include "mpsvc.h"

#define GDB_MAGIC 0x6764626d61676963ull	/* "cigamBDg" */
#define GDB_R15 0x1234567887654321ull

uint64_t gdb_loop(uint64_t deadline_tsc);
extern const char gdb_loop_top[], gdb_loop_end[];
extern const char gdb_loop_mid[], gdb_own_bp[], gdb_db_handler[];
extern volatile uint64_t gdb_counter, gdb_r15, gdb_poke, gdb_bad, gdb_dr3, gdb_dr7;
void gdb_chain(void);
extern const char gdb_chain_a[], gdb_chain_b[], gdb_chain_c[], gdb_chain_bp[];
extern volatile int64_t gdb_chain_start_rc, gdb_chain_stop_rc;
extern volatile uint64_t gdb_chain_done;
void gdb_twatch(void);
extern volatile int64_t gdb_tw_start_rc, gdb_tw_stop_rc;
extern volatile uint64_t gdb_tw_r, gdb_tw_a, gdb_tw_w, gdb_tw_p;
void gdb_fault_fetch(uint64_t addr);
void gdb_fault_store(uint64_t addr, uint64_t val);
void gdb_fault_done(void);
void gdb_fault_int3(void);
uint64_t gdb_pushf(void);
uint64_t gdb_syscall(void);
extern const char gdb_fault_store_insn[], gdb_pf_handler[], gdb_int3_insn[], gdb_bp_handler[];
extern const char gdb_syscall_insn[], gdb_sys_handler[];
void gdb_six(void);
extern const char gdb_six_1[], gdb_six_2[], gdb_six_3[], gdb_six_4[], gdb_six_5[], gdb_six_6[], gdb_six_decoy[];
extern volatile uint64_t gdb_six_n[6], gdb_six_orig, gdb_six_bad;
void gdb_wsix(void);
extern volatile uint64_t gdb_wsix_w[6], gdb_wsix_other;
/* what gdb_pf_handler saw: count, error code, CR2, RIP, CS, RFLAGS */
struct gdb_pf { uint64_t count, err, cr2, rip, cs, rflags; };
extern volatile struct gdb_pf gdb_pf;
extern volatile uint64_t gdb_fault_done_n;
extern volatile uint64_t gdb_dr12_bad;
extern volatile uint64_t gdb_own_dr7, gdb_dr_bad, gdb_own_turns, gdb_own_hits, gdb_top_orig, gdb_mid_orig,
	gdb_code_bad;

/* trace_ctl (docs/hypercalls.md): HVTRACE_TRACE_START or _STOP; gdb_chain's calls */
int64_t gdb_trace(uint64_t op);
int64_t gdb_trace(uint64_t op)
{
	uint64_t val = 0;
	return hypercall(HVTRACE_HC_TRACE_CTL, &op, &val);
}

/* Linear addresses the firmware's page tables leave not present: PML4
 * slot 256 (the upper half's first 512 GiB) is empty in 4-level paging */
#define GDB_NP 0xffff800000001000ull
#define GDB_NP_WORD (GDB_NP + 8)

static bool np_usable(void)
{
	uint64_t cr3;
	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	return !(read_cr4() & CR4_LA57) && !(((const uint64_t *)(uintptr_t)(cr3 & PTE_ADDR_MASK))[256] & PTE_P);
}

/* A page present but not executable (XD, with EFER.NXE): PML4 slot 257
 * of a copy of the firmware's tables, loaded for the fault phase alone */
#define GDB_NX 0xffff808000000000ull
static uint64_t nx_tables[4][512] __attribute__((aligned(4096)));
static uint8_t nx_page[4096] __attribute__((aligned(4096)));
static uint64_t nx_cr3;

static bool nx_setup(void)
{
	uint64_t cr3;
	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	const uint64_t *fw = (const uint64_t *)(uintptr_t)(cr3 & PTE_ADDR_MASK);
	if (!(rdmsr(MSR_EFER) & EFER_NXE) || (fw[257] & PTE_P))
		return false;
	CopyMem(nx_tables[0], (void *)fw, sizeof(nx_tables[0]));
	nx_tables[0][257] = A(nx_tables[1]) | PTE_P | PTE_RW;
	nx_tables[1][0] = A(nx_tables[2]) | PTE_P | PTE_RW;
	nx_tables[2][0] = A(nx_tables[3]) | PTE_P | PTE_RW;
	nx_tables[3][0] = A(nx_page) | PTE_P | PTE_RW | PTE_NX;
	nx_page[0] = 0xc3;	/* ret, were it run */
	nx_cr3 = A(nx_tables[0]) | (cr3 & 0xfff);
	return true;
}

/* A jump into GDB_NP, a store to GDB_NP_WORD, when nx_setup could a
 * jump into GDB_NX on its tables, and an INT3, interrupts off, each
 * fault (and the INT3's #BP) as gdb_pf_handler saw it */
static uint64_t pushf_seen;
/* R11 after a SYSCALL, SFMASK 0x700 (TF, IF, DF: as Linux) and 0x600
 * (IF, DF: TF left set, were it set) */
#define GDB_FMASK_TF 0x700
#define GDB_FMASK_NO_TF 0x600
static uint64_t sys_r11[2];

static void syscall_phase(void)
{
	struct syscall_msrs old = syscall_setup(gdb_sys_handler, GDB_FMASK_TF);
	sys_r11[0] = gdb_syscall();
	wrmsr(MSR_SFMASK, GDB_FMASK_NO_TF);
	sys_r11[1] = gdb_syscall();
	syscall_restore(old);
}

static void fault_phase(struct gdb_pf out[4], bool nx)
{
	uint64_t f = irq_save(), cr3;
	struct gate old = handle_exception(X86_PF, (void *)gdb_pf_handler);
	struct gate old_bp = handle_exception(X86_BP, (void *)gdb_bp_handler);
	gdb_pf = (struct gdb_pf){ 0 };
	gdb_fault_fetch(GDB_NP);
	out[0] = gdb_pf;
	gdb_pf = (struct gdb_pf){ 0 };
	gdb_fault_store(GDB_NP_WORD, 0x1234);
	out[1] = gdb_pf;
	gdb_pf = (struct gdb_pf){ 0 };
	if (nx) {
		asm volatile("mov %%cr3, %0; mov %1, %%cr3" : "=&r"(cr3) : "r"(nx_cr3) : "memory");
		gdb_fault_fetch(GDB_NX);
		asm volatile("mov %0, %%cr3" ::"r"(cr3) : "memory");
	}
	out[2] = gdb_pf;
	gdb_pf = (struct gdb_pf){ 0 };
	gdb_fault_int3();
	out[3] = gdb_pf;
	pushf_seen = gdb_pushf();
	syscall_phase();
	gate_restore(X86_BP, old_bp);
	gate_restore(X86_PF, old);
	irq_restore(f);
	gdb_fault_done();
}

static void fault_report(const char *name, const struct gdb_pf *ref, const struct gdb_pf *dbg, bool ref_ok)
{
	report(ref_ok && ref->count == 1 && dbg->count == 1 && ref->err == dbg->err && ref->cr2 == dbg->cr2 &&
		       ref->rip == dbg->rip && ref->cs == dbg->cs && ref->rflags == dbg->rflags,
	       name, "%lu #PF err %lx cr2 %lx rip %lx cs %lx fl %lx; before: %lu err %lx cr2 %lx rip %lx cs %lx fl %lx",
	       dbg->count, dbg->err, dbg->cr2, dbg->rip, dbg->cs, dbg->rflags, ref->count, ref->err, ref->cr2, ref->rip,
	       ref->cs, ref->rflags);
}

/*
 * The pair phase, run only when the debugger asked for it (gdb_pair_want,
 * written while the loop waits: svm-gdb-live-pair): the boot processor and
 * an application processor each store into a word of their own once a
 * round, both at once (gdb_seq.S gdb_pair_a, gdb_pair_b: gdb_pair_bsp,
 * gdb_pair_ap), until the debugger writes gdb_pair_done or 60 s pass; with
 * a watchpoint on each word, both vCPUs reach theirs at once, round after
 * round. With gdb_pair_want = 2 both run gdb_pair_spin instead (traced:
 * a breakpoint both reach at once). The check: both ran and the debugger
 * ended them.
 */
volatile uint64_t gdb_pair_want, gdb_pair_bsp, gdb_pair_ap, gdb_pair_done;
static volatile uint64_t pair_go, pair_ap_turns;
static volatile uint64_t pair_deadline;
static HV_MP_SERVICES *pair_mp;

uint64_t gdb_pair_a(volatile uint64_t *word, uint64_t deadline_tsc);
uint64_t gdb_pair_b(volatile uint64_t *word);
uint64_t gdb_pair_spin(void);
extern const char gdb_pair_store[];

static void __attribute__((ms_abi)) pair_ap_proc(void *arg)
{
	(void)arg;
	while (!pair_go)
		asm volatile("pause");
	pair_ap_turns = gdb_pair_want == 2 ? gdb_pair_spin() : gdb_pair_b(&gdb_pair_ap);
}

static void pair_phase(uint64_t hz)
{
	static EFI_GUID mp_guid = HV_MP_SERVICES_GUID;
	UINTN n = 0, en = 0, bsp = 0, ap = 0;
	EFI_EVENT ev;
	if (EFI_ERROR(uefi_call_wrapper(BS->LocateProtocol, 3, &mp_guid, NULL, (void **)&pair_mp)) ||
	    EFI_ERROR(uefi_call_wrapper(pair_mp->GetNumberOfProcessors, 3, pair_mp, &n, &en)) || en < 2 ||
	    EFI_ERROR(uefi_call_wrapper(BS->CreateEvent, 5, 0, 0, NULL, NULL, &ev))) {
		report_skip("pair_watchpoints_ran", "no MP services, one processor or no event");
		return;
	}
	uefi_call_wrapper(pair_mp->WhoAmI, 2, pair_mp, &bsp);
	ap = bsp ? 0 : 1;
	pair_deadline = rdtsc() + 60 * hz;
	EFI_STATUS st = uefi_call_wrapper(pair_mp->StartupThisAP, 7, pair_mp, (HV_AP_PROCEDURE)pair_ap_proc, ap, ev,
					  (UINTN)90000000, NULL, NULL);
	if (EFI_ERROR(st)) {
		report(false, "pair_watchpoints_ran", "StartupThisAP: status %lx", (uint64_t)st);
		return;
	}
	report_info("GDB-PAIR: running");
	/* interrupts off: at each resume both go straight on storing (the firmware's timer
	 * handler, pending after a stop, would keep this one away from its word) */
	uint64_t f = irq_save();
	pair_go = 1;
	uint64_t bsp_turns = gdb_pair_want == 2 ? gdb_pair_spin() : gdb_pair_a(&gdb_pair_bsp, pair_deadline);
	irq_restore(f);
	UINTN idx;
	uefi_call_wrapper(BS->WaitForEvent, 3, 1, &ev, &idx);
	uefi_call_wrapper(BS->CloseEvent, 1, ev);
	report(bsp_turns && pair_ap_turns && gdb_pair_done == 1, "pair_watchpoints_ran",
	       "%lu and %lu rounds, ended by the debugger: %lu", bsp_turns, pair_ap_turns, gdb_pair_done);
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_gdb");
	/* a rough TSC rate: 0.1 s of the firmware's Stall */
	uint64_t t0 = rdtsc();
	uefi_call_wrapper(systab->BootServices->Stall, 1, 100000);
	uint64_t hz = (rdtsc() - t0) * 10;
	uint64_t dr3, dr7;
	asm volatile("mov %%dr3, %0; mov %%dr7, %1" : "=r"(dr3), "=r"(dr7));
	report_info("GDB-TARGET: loop=%lx top=%lx end=%lx counter=%lx r15=%lx poke=%lx bad=%lx",
		    (uint64_t)(uintptr_t)gdb_loop, (uint64_t)(uintptr_t)gdb_loop_top, (uint64_t)(uintptr_t)gdb_loop_end,
		    (uint64_t)(uintptr_t)&gdb_counter, (uint64_t)(uintptr_t)&gdb_r15,
		    (uint64_t)(uintptr_t)&gdb_poke, (uint64_t)(uintptr_t)&gdb_bad);
	report_info("GDB-TARGET2: mid=%lx own_bp=%lx", A(gdb_loop_mid), A(gdb_own_bp));
	report_info("GDB-TARGET3: chain_a=%lx chain_b=%lx chain_c=%lx chain_bp=%lx", A(gdb_chain_a),
		    A(gdb_chain_b), A(gdb_chain_c), A(gdb_chain_bp));
	/* the faults as they are without the debugger */
	bool np = np_usable(), nx = np && nx_setup();
	struct gdb_pf ref[4], seen[4];
	if (np)
		fault_phase(ref, nx);
	report_info("GDB-TARGET4: np=%lx np_word=%lx store=%lx fault_done=%lx pf_handler=%lx nx=%lx int3=%lx "
		    "bp_handler=%lx int3_fn=%lx pushf=%lx", GDB_NP, GDB_NP_WORD, A(gdb_fault_store_insn),
		    A(gdb_fault_done), A(gdb_pf_handler), nx ? GDB_NX : 0, A(gdb_int3_insn), A(gdb_bp_handler),
		    A(gdb_fault_int3), A(gdb_pushf));
	report_info("GDB-TARGET5: syscall=%lx syscall_insn=%lx sys_handler=%lx", A(gdb_syscall),
		    A(gdb_syscall_insn), A(gdb_sys_handler));
	report_info("GDB-TARGET6: six=%lx %lx %lx %lx %lx %lx decoy=%lx", A(gdb_six_1), A(gdb_six_2), A(gdb_six_3),
		    A(gdb_six_4), A(gdb_six_5), A(gdb_six_6), A(gdb_six_decoy));
	report_info("GDB-TARGET8: wsix=%lx other=%lx", A(gdb_wsix_w), A(&gdb_wsix_other));
	report_info("GDB-TARGET9: twatch=%lx r=%lx a=%lx w=%lx p=%lx", A(gdb_twatch), A(&gdb_tw_r), A(&gdb_tw_a),
		    A(&gdb_tw_w), A(&gdb_tw_p));
	report_info("GDB-TARGET7: pair_want=%lx pair_bsp=%lx pair_ap=%lx pair_done=%lx pair_spin=%lx pair_store=%lx",
		    A(&gdb_pair_want), A(&gdb_pair_bsp), A(&gdb_pair_ap), A(&gdb_pair_done), A(gdb_pair_spin),
		    A(gdb_pair_store));
	gdb_six_orig = *(const volatile uint64_t *)gdb_six_5;
	/* the code as it is before the debugger, and the guest's own breakpoint */
	gdb_top_orig = *(const volatile uint64_t *)gdb_loop_top;
	gdb_mid_orig = *(const volatile uint64_t *)gdb_loop_mid;
	struct gate old_db = handle_exception(X86_DB, (void *)gdb_db_handler);
	gdb_own_dr7 = 0x401;	/* L0, RW0 = LEN0 = 0: an instruction breakpoint (SDM Vol. 3 18.2.4) */
	report_info("GDB-LOOP: running");
	uint64_t turns = gdb_loop(rdtsc() + 120 * hz);
	asm volatile("mov %0, %%dr7" ::"r"(0x400ull));
	gate_restore(X86_DB, old_db);
	report(gdb_poke == GDB_MAGIC, "debugger_wrote_memory", "gdb_poke %lx", gdb_poke);
	report(gdb_r15 == GDB_R15, "debugger_set_r15", "gdb_r15 %lx", gdb_r15);
	report(gdb_bad == 0, "loop_invariant_kept", "%lu breaks", gdb_bad);
	report(turns == gdb_counter && turns > 1000, "loop_ran", "%lu turns, counter %lu", turns, gdb_counter);
	/* DR7 bits 6-7 (L3, G3) and 28-31 (RW3, LEN3): the breakpoint's */
	report(gdb_dr3 == dr3 && !((gdb_dr7 & ~dr7) & (0xc0ull | 0xf0000000ull)), "debugger_dr3_invisible",
	       "DR3 seen %lx (was %lx), DR7 seen %lx (was %lx)", gdb_dr3, dr3, gdb_dr7, dr7);
	report(gdb_dr_bad == 0, "own_dr0_dr7_as_written", "%lu turns read another DR0 or DR7", gdb_dr_bad);
	report(gdb_dr12_bad == 0, "own_dr1_dr2_as_written", "%lu turns read another DR1 or DR2", gdb_dr12_bad);
	report(gdb_own_hits == turns && gdb_own_turns == turns, "own_breakpoint_fired_every_turn",
	       "%lu #DBs, %lu turns reached it, %lu turns", gdb_own_hits, gdb_own_turns, turns);
	report(gdb_code_bad == 0, "code_reads_original", "%lu turns read other bytes at the breakpoints",
	       gdb_code_bad);
	gdb_chain();
	report(gdb_chain_start_rc == 0 && gdb_chain_stop_rc == 0 && gdb_chain_done == 1, "traced_chain",
	       "trace_ctl start %ld, stop %ld, reached its end %lu times", gdb_chain_start_rc, gdb_chain_stop_rc,
	       gdb_chain_done);
	gdb_twatch();
	report(gdb_tw_start_rc == 0 && gdb_tw_stop_rc == 0 && gdb_tw_w == 0x11 && gdb_tw_r == 0x22 && gdb_tw_a == 0x33 &&
		       gdb_tw_p == 1,
	       "traced_watch", "trace_ctl start %ld, stop %ld; words %lx %lx %lx %lx (want 11 22 33 1)", gdb_tw_start_rc,
	       gdb_tw_stop_rc, gdb_tw_w, gdb_tw_r, gdb_tw_a, gdb_tw_p);
	if (!np) {
		report_skip("fault_fetch_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("fault_store_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("fault_nx_fetch_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("int3_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("pushf_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("syscall_r11_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("syscall_r11_tf_unmasked_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("six_breakpoints_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_skip("six_watchpoints_as_without_debugger", "PML4 slot 256 is mapped, or 5-level paging");
		report_done();
	}
	uint64_t pushf_ref = pushf_seen, r11_ref[2] = { sys_r11[0], sys_r11[1] };
	fault_phase(seen, nx);
	for (int i = 0; i < 3; i++)
		gdb_six();
	for (int i = 0; i < 3; i++)
		gdb_wsix();
	/* a fetch from a page not present: P clear, W clear (SDM Vol. 3 4.7) */
	fault_report("fault_fetch_as_without_debugger", &ref[0], &seen[0],
		     !(ref[0].err & 3) && ref[0].cr2 == GDB_NP && ref[0].rip == GDB_NP);
	fault_report("fault_store_as_without_debugger", &ref[1], &seen[1],
		     (ref[1].err & 3) == 2 && ref[1].cr2 == GDB_NP_WORD && ref[1].rip == A(gdb_fault_store_insn));
	/* a fetch from a page present but not executable: P set, I/D set
	 * (SDM Vol. 3 4.7) */
	if (nx)
		fault_report("fault_nx_fetch_as_without_debugger", &ref[2], &seen[2],
			     (ref[2].err & 0x13) == 0x11 && ref[2].cr2 == GDB_NX && ref[2].rip == GDB_NX);
	else
		report_skip("fault_nx_fetch_as_without_debugger", "EFER.NXE clear, or PML4 slot 257 mapped");
	/* INT3: a trap, the frame's RIP after it (SDM Vol. 3 6.5) */
	fault_report("int3_as_without_debugger", &ref[3], &seen[3], ref[3].rip == A(gdb_int3_insn) + 1);
	report(pushf_seen == pushf_ref, "pushf_as_without_debugger", "PUSHF stored %lx, without the debugger %lx",
	       pushf_seen, pushf_ref);
	/* SYSCALL's R11: RFLAGS as they were (SDM Vol. 2B SYSCALL), TF clear */
	report(sys_r11[0] == r11_ref[0] && !(r11_ref[0] & 0x100), "syscall_r11_as_without_debugger",
	       "SFMASK %x: R11 %lx, without the debugger %lx", GDB_FMASK_TF, sys_r11[0], r11_ref[0]);
	report(sys_r11[1] == r11_ref[1] && !(r11_ref[1] & 0x100), "syscall_r11_tf_unmasked_as_without_debugger",
	       "SFMASK %x: R11 %lx, without the debugger %lx", GDB_FMASK_NO_TF, sys_r11[1], r11_ref[1]);
	report(gdb_six_n[0] == 3 && gdb_six_n[1] == 3 && gdb_six_n[2] == 3 && gdb_six_n[3] == 3 && gdb_six_n[4] == 3 &&
		       gdb_six_n[5] == 3 && gdb_six_bad == 0,
	       "six_breakpoints_as_without_debugger", "runs %lu %lu %lu %lu %lu %lu of 3, %lu code reads not the original",
	       gdb_six_n[0], gdb_six_n[1], gdb_six_n[2], gdb_six_n[3], gdb_six_n[4], gdb_six_n[5], gdb_six_bad);
	report(gdb_wsix_w[0] == 3 && gdb_wsix_w[1] == 3 && gdb_wsix_w[2] == 3 && gdb_wsix_w[3] == 3 && gdb_wsix_w[4] == 3 &&
		       gdb_wsix_w[5] == 3 && gdb_wsix_other == 3,
	       "six_watchpoints_as_without_debugger", "words %lu %lu %lu %lu %lu %lu, the other %lu, of 3", gdb_wsix_w[0],
	       gdb_wsix_w[1], gdb_wsix_w[2], gdb_wsix_w[3], gdb_wsix_w[4], gdb_wsix_w[5], gdb_wsix_other);
	report(gdb_fault_done_n == 2, "fault_phase_ended", "gdb_fault_done reached %lu times", gdb_fault_done_n);
	if (gdb_pair_want)
		pair_phase(hz);
	report_done();
}
