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
 * as written,
 * its DR0 breakpoint fired once every turn (its #DB handler counted as
 * many as the turns), and the code under the debugger's breakpoints read
 * as data is always the original bytes. Then gdb_chain (gdb_seq.S): a
 * traced call chain ending at gdb_chain_bp, where the debugger stops it
 * and reads the branch history that led there (record btrace).
 */
#include "guest.h"
#include "hvtrace/abi.h"

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
extern volatile uint64_t gdb_own_dr7, gdb_dr_bad, gdb_own_turns, gdb_own_hits, gdb_top_orig, gdb_mid_orig,
	gdb_code_bad;

/* trace_ctl (docs/hypercalls.md): HVTRACE_TRACE_START or _STOP; gdb_chain's calls */
int64_t gdb_trace(uint64_t op);
int64_t gdb_trace(uint64_t op)
{
	uint64_t val = 0;
	return hypercall(HVTRACE_HC_TRACE_CTL, &op, &val);
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
	report(gdb_own_hits == turns && gdb_own_turns == turns, "own_breakpoint_fired_every_turn",
	       "%lu #DBs, %lu turns reached it, %lu turns", gdb_own_hits, gdb_own_turns, turns);
	report(gdb_code_bad == 0, "code_reads_original", "%lu turns read other bytes at the breakpoints",
	       gdb_code_bad);
	gdb_chain();
	report(gdb_chain_start_rc == 0 && gdb_chain_stop_rc == 0 && gdb_chain_done == 1, "traced_chain",
	       "trace_ctl start %ld, stop %ld, reached its end %lu times", gdb_chain_start_rc, gdb_chain_stop_rc,
	       gdb_chain_done);
	report_done();
}
