#!/usr/bin/env bash
# The differential tier (issue 15, docs/testing.md): a guest must behave
# the same with and without hvtrace, idle and while traced. Each guest
# program below runs four ways under QEMU + OVMF (SVM):
#   off     enable = no: the firmware starts the program, no hypervisor
#   idle    the hypervisor on, nothing traced
#   traced  the flight recorder tracing from boot (fast engine, interrupts
#           paced), so the program runs traced from its first instruction
#   reference  the same with the reference engine (a step per instruction)
#   interp  the same with the interpreting engine (engine = interp: the
#           hypervisor runs the common instructions itself)
# and the runs are compared: how each ended (exit: the program's SUMMARY
# line, then QEMU's own exit; shutdown: QEMU exited without one; hang: the
# time bound) must be the same, and every check that passes `off` must
# pass `idle`, `traced`, `reference` and `interp` too. Checks that pass only under the hypervisor
# (its own features) are not compared. Logs in build/test-runs/diff-*/.
#
#   tests/integration-diff.sh [--list] [PATTERN...]
#
# Environment: BUILD (default build), HVTRACE_ACCEL, HVTRACE_TIME_SCALE.
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
export HVTRACE_QUIET_ACCEL=1

# outcome NAME: exit, shutdown or hang, from the last run's log and status
outcome() {
	if [ "${RC:-0}" = 124 ]; then
		echo hang
	elif grep -qa 'GUEST-TEST: SUMMARY:' "$LOG"; then
		echo exit
	else
		echo shutdown
	fi
}

# passed LOG: the names of the checks that passed, one a line
passed() { sed -nE 's/^GUEST-TEST: PASS: ([A-Za-z0-9_]+).*/\1/p' "$1" | sort -u; }

# Differences still open, each RUN:MODE:CHECK with its evidence written
# here, reported and not counted as failures (docs/testing.md):
#  - traced (any engine), an interrupt the guest expects at once comes late
#    (the log shows it in the wait loop after the sequence): t_debug's
#    interrupt shadows, t_fidel's self-IPI and the interrupt a lowered TPR
#    lets in. While tracing, every external interrupt is held and paced
#    (docs/branch-engine.md "Forward progress"; trace.pace = off would
#    deliver at once, but then the firmware traced from boot never starts
#    the program, issue #16). Pacing only the vectors that need it (the
#    slowed timers) was tried in issue 25 and taken out while the small
#    Linux's traced boot fails now and then (docs/branch-engine.md); open.
#    STI; HLT included:
#    the interrupt ends the HLT before the hypervisor holds it.
KNOWN=""
for m in traced reference interp; do
	KNOWN="$KNOWN t_debug:$m:sti_shadow_interrupt_after_next t_debug:$m:popf_if_no_shadow"
	KNOWN="$KNOWN t_debug:$m:sti_hlt_interrupt_after_hlt"
	KNOWN="$KNOWN t_fidel:$m:self_ipi_arrives_at_once t_fidel:$m:tpr_lowered_interrupt_arrives_at_once"
done

# diff_program PROGRAM [LOAD OPTIONS [OFF_NOTE]]: the five runs and their
# comparison. OFF_NOTE: the emulator makes the run without the hypervisor
# end otherwise than the hardware would (the note says how); its end is
# then not compared, the idle run's is the reference for the traced one.
diff_program() {
	local prog=$1 opt=${2:-} note=${3:-} mode name d out0 ends=""
	local tag=diff-$prog${opt:+-$opt}
	for mode in off idle traced reference interp; do
		name=$tag-$mode
		d=$(esp "$name")
		add_guest "$d" "$prog"
		{
			printf 'next = \\EFI\\hvtrace\\%s.efi\n' "$prog"
			[ -z "$opt" ] || printf 'cmdline = %s\n' "$opt"
			case $mode in
			off) echo 'enable = no' ;;
			traced) printf '%s\n' 'flight.size = 1M' 'trace.start = boot' 'channel = ram' ;;
			reference) printf '%s\n' 'flight.size = 1M' 'trace.start = boot' 'channel = ram' 'engine = reference' ;;
			interp) printf '%s\n' 'flight.size = 1M' 'trace.start = boot' 'channel = ram' 'engine = interp' ;;
			esac
		} >"$d/EFI/hvtrace/hvtrace.cfg"
		# the reference engine steps the firmware too: about 4 times slower
		# (t_debug ~50 s on a quiet machine; a fresh-clone run beside
		# another long trace took over 150 s and was called a hang)
		boot qemu "$name" $([ $mode = reference ] && echo 300 || echo 40)
		ends="$ends $mode:$(outcome)"
		passed "$LOG" >"$RUNS/$name/passed.txt"
		case $mode in
		off)
			grep -qa 'hvtrace: hypervisor running' "$LOG" && REASONS="$REASONS; the off run ran the hypervisor"
			out0=$(outcome)
			[ -z "$note" ] || out0=""
			;;
		*)
			grep -qa 'hvtrace: hypervisor running' "$LOG" || REASONS="$REASONS; the $mode run has no hypervisor"
			if [ -z "$out0" ]; then
				out0=$(outcome)	# the idle run: the reference for the traced one
			elif [ "$(outcome)" != "$out0" ]; then
				REASONS="$REASONS; ends with $(outcome) $mode but $out0 ${note:+idle}${note:-without the hypervisor}"
			fi
			local lost="" c
			for c in $(comm -23 "$RUNS/$tag-off/passed.txt" "$RUNS/$name/passed.txt"); do
				case " $KNOWN " in
				*" ${tag#diff-}:$mode:$c "*) echo "     known difference (open): ${tag#diff-} $mode $c" ;;
				*) lost="$lost $c" ;;
				esac
			done
			[ -z "$lost" ] || REASONS="$REASONS; pass without the hypervisor, not $mode:$lost"
			;;
		esac
		[ "$mode" = off ] || [ "$mode" = idle ] || grep -qa 'recorder: .*tracing from boot' "$LOG" ||
			REASONS="$REASONS; the $mode run did not trace"
	done
	LOG=$RUNS/$tag-traced/serial.log
	echo "     $tag:$ends; $(wc -l <"$RUNS/$tag-off/passed.txt") checks pass without the hypervisor${note:+ ($note)}"
	finish "$tag"
}

t_diff_basic() {
	diff_program t_basic diff "without the hypervisor QEMU's TCG takes MOV CR4 clearing PAE in long mode, which the hardware and hvtrace refuse with #GP, and the program dies there"
}
t_diff_triple() { diff_program t_triple; }
t_diff_cr0_nw() { diff_program t_triple nw; }
t_diff_debug() { diff_program t_debug; }
t_diff_unusual() { diff_program t_unusual; }
t_diff_fidel() { diff_program t_fidel; }

ALL="t_diff_basic t_diff_triple t_diff_cr0_nw t_diff_debug t_diff_unusual t_diff_fidel"
runner_main integration-diff "$ALL" "$@"
