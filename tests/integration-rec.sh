#!/usr/bin/env bash
# The recorder end to end under QEMU + OVMF (SVM): the trace-control
# hypercall and exact counts seen from the guest, the flight recorder
# taken from a crashed guest's memory, the lossless stream drained by
# `hvtrace record` (exact counts, and an exact lost count behind a slow
# reader), and Debian's kernel traced from start_kernel and reported with
# its symbols. Each test is time-bounded; logs stay in build/test-runs/NAME/.
#
#   tests/integration-rec.sh [--list] [PATTERN...]   (default: all tests)
#
# Environment: BUILD (default build), HVTRACE_ACCEL, HVTRACE_TIME_SCALE.
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
export HVTRACE_QUIET_ACCEL=1
HVTRACE=$BUILD/host-tools/hvtrace

run() { boot qemu "$@"; }

# cfg DIR LINES...: the boot volume's hvtrace.cfg, one argument a line
cfg() {
	local d=$1
	shift
	printf '%s\n' "$@" >"$d/EFI/hvtrace/hvtrace.cfg"
}

# --- the hypercall and exact counts, from inside the guest ---------------

rec_basic() {
	local name=svm-rec-basic-$1
	local d=$(esp $name)
	add_guest "$d" t_rec
	cfg "$d" 'next = \EFI\hvtrace\t_rec.efi' "engine = $1" 'flight.size = 64K' 'trace.start = hypercall'
	run $name 90
	expect 'recorder: channel at [0-9a-f]+ \(reserved RAM, 68 KiB\): flight 64 KiB, stream 0 KiB per vCPU; waiting for the start trigger'
	expect 'GUEST-TEST: PASS: loop_1000_records'
	expect 'SUMMARY: t_rec: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish $name
}
t_svm_rec_basic_fast() { rec_basic fast; }
t_svm_rec_basic_reference() { rec_basic reference; }

# --- Debian's kernel traced from start_kernel ------------------------------

# The kernel's text symbols, as a System.map: Debian's package ships a
# placeholder one (the real one is in the 850 MB -dbg package), so one boot
# without the hypervisor prints /proc/kallsyms (nokaslr: the addresses of
# every later nokaslr boot). Cached per kernel version.
kernel_symbols() {
	local map=$BUILD/cache/linux/System.map-$(cat "$BUILD/cache/linux/version")
	if [ ! -s "$map" ]; then
		local d=$(esp kernel-symbols)
		add_linux "$d"
		cfg "$d" 'next = \EFI\linux\vmlinuz' "cmdline = $LINUX_CMDLINE nokaslr hvtrace.kallsyms" 'enable = no'
		run kernel-symbols 180 --cpu-flags -hypervisor
		sed -n '/^HVTRACE-KSYMS-BEGIN$/,/^HVTRACE-KSYMS-END$/p' "$LOG" | sed '1d;$d' |
			base64 -d 2>/dev/null | gunzip >"$map.tmp" 2>/dev/null
		if [ "$(grep -c ' start_kernel$' "$map.tmp" 2>/dev/null)" = 1 ]; then
			mv "$map.tmp" "$map"
		else
			rm -f "$map.tmp"
		fi
	fi
	SYMBOLS=$map
	[ -s "$map" ]
}

t_linux_rec_start_kernel() {
	local name=linux-rec-start-kernel
	if ! kernel_symbols; then
		LOG=$RUNS/kernel-symbols/serial.log ELAPSED=0
		REASONS="; no kernel symbols from /proc/kallsyms (see $LOG)"
		finish $name
		return
	fi
	local sk=$(awk '$3 == "start_kernel" { print $1 }' "$SYMBOLS")
	local d=$(esp $name)
	add_linux "$d"
	local ram=$RUNS/$name/ram.img
	cfg "$d" 'next = \EFI\linux\vmlinuz' "cmdline = $LINUX_CMDLINE nokaslr" \
		'flight.size = 1M' "trace.start = 0x$sk" 'trace.stop = records:20000' 'channel = ram'
	run $name 240 --cpu-flags -hypervisor -- \
		-object memory-backend-file,id=ram,share=on,mem-path="$ram",size=512M -machine memory-backend=ram
	expect "recorder: tracing starts at 0*$sk"
	expect 'recorder: tracing stopped \(trace.stop records reached\) after 20000 records'
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	if "$HVTRACE" snapshot --dump "$ram" -o "$RUNS/$name/snap.trace" >"$RUNS/$name/snapshot.out" 2>&1 &&
		"$HVTRACE" report "$RUNS/$name/snap.trace" --symbols "$SYMBOLS" --calls \
			>"$RUNS/$name/calls.txt" 2>"$RUNS/$name/report.err"; then
		# start_kernel at the root, then the first functions it calls, in order
		local want="start_kernel set_task_stack_end_magic boot_cpu_init setup_arch" got
		got=$(awk '/^ *[0-9]+  [^ ]/ && NF == 2 { print $2 } /^ *[0-9]+    [^ ]/ && NF == 2 { print $2 }' \
			"$RUNS/$name/calls.txt" | tr '\n' ' ')
		local w rest=" $got"
		for w in $want; do
			case "$rest" in
			*" $w "*) rest=${rest#*" $w "}; rest=" $rest" ;;
			*) REASONS="$REASONS; '$w' not in order in the call history ($RUNS/$name/calls.txt)"; break ;;
			esac
		done
		head -1 "$RUNS/$name/calls.txt" | grep -q 'vcpu 0 function-call history:' ||
			REASONS="$REASONS; no call-history header"
		sed -n 2p "$RUNS/$name/calls.txt" | grep -qE '^ +1  start_kernel$' ||
			REASONS="$REASONS; the history does not start in start_kernel: $(sed -n 2p "$RUNS/$name/calls.txt")"
	else
		REASONS="$REASONS; hvtrace snapshot/report failed: $(cat "$RUNS/$name/snapshot.out" "$RUNS/$name/report.err" | head -3)"
	fi
	rm -f "$ram"
	finish $name
}

ALL="t_svm_rec_basic_fast t_svm_rec_basic_reference t_linux_rec_start_kernel"
runner_main integration-rec "$ALL" "$@"
