/*
 * t_gdb: a busy guest for the host's debugger (`hvtrace gdb --shm`,
 * tests/integration-rec.sh svm-gdb-live). Prints where its loop and data
 * are (GDB-TARGET), then runs gdb_loop (gdb_seq.S) with interrupts on
 * until the debugger writes the magic value into gdb_poke or 120 s pass.
 * The checks: the debugger's memory write arrived, the R15 it set came
 * through, the loop's own invariant never broke (a stop, a step and
 * register writes of R15 only leave it intact), and the loop went on
 * after the debugger let it go.
 */
#include "guest.h"

#define GDB_MAGIC 0x6764626d61676963ull	/* "cigamBDg" */
#define GDB_R15 0x1234567887654321ull

uint64_t gdb_loop(uint64_t deadline_tsc);
extern const char gdb_loop_top[];
extern volatile uint64_t gdb_counter, gdb_r15, gdb_poke, gdb_bad;

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_gdb");
	/* a rough TSC rate: 0.1 s of the firmware's Stall */
	uint64_t t0 = rdtsc();
	uefi_call_wrapper(systab->BootServices->Stall, 1, 100000);
	uint64_t hz = (rdtsc() - t0) * 10;
	report_info("GDB-TARGET: loop=%lx top=%lx counter=%lx r15=%lx poke=%lx bad=%lx",
		    (uint64_t)(uintptr_t)gdb_loop, (uint64_t)(uintptr_t)gdb_loop_top,
		    (uint64_t)(uintptr_t)&gdb_counter, (uint64_t)(uintptr_t)&gdb_r15,
		    (uint64_t)(uintptr_t)&gdb_poke, (uint64_t)(uintptr_t)&gdb_bad);
	report_info("GDB-LOOP: running");
	uint64_t turns = gdb_loop(rdtsc() + 120 * hz);
	report(gdb_poke == GDB_MAGIC, "debugger_wrote_memory", "gdb_poke %lx", gdb_poke);
	report(gdb_r15 == GDB_R15, "debugger_set_r15", "gdb_r15 %lx", gdb_r15);
	report(gdb_bad == 0, "loop_invariant_kept", "%lu breaks", gdb_bad);
	report(turns == gdb_counter && turns > 1000, "loop_ran", "%lu turns, counter %lu", turns, gdb_counter);
	report_done();
}
