#!/usr/bin/env bash
# Integration tests of the Intel VMX backend under Bochs + OVMF (Bochs
# emulates VMX with EPT, unrestricted guest and the monitor trap flag; QEMU's
# TCG has no VMX). EFI guest programs chain-loaded by hvtrace.efi; Linux is
# not practical under Bochs (docs/testing.md). Each test has a hard time
# bound; each prints PASS or FAIL with the reason, and the serial log (and
# Bochs's own log) stays in build/test-runs/NAME/.
#
#   tests/integration-vmx.sh [--list] [PATTERN...]   (default: all tests)
#
# Environment: BUILD (default build), HVTRACE_TIME_SCALE (multiply every
# time bound).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=$BUILD/test-runs
SCALE=${HVTRACE_TIME_SCALE:-1}

pass=0 fail=0

# esp NAME: fresh boot volume with hvtrace.efi as the removable-media loader
esp() {
	local d=$RUNS/$1/esp
	rm -rf "$RUNS/$1"
	mkdir -p "$d/EFI/BOOT" "$d/EFI/hvtrace"
	cp "$BUILD/hvtrace.efi" "$d/EFI/BOOT/BOOTX64.EFI"
	echo "$d"
}

add_guest() { cp "$BUILD/tests/guest/$2.efi" "$1/EFI/hvtrace/"; }

# run NAME TIMEOUT [bochs.sh options]: boots, leaves the cleaned log in $LOG
run() {
	local name=$1 t=$2
	shift 2
	LOG=$RUNS/$name/serial.log
	local start=$(date +%s.%N)
	tests/lib/bochs.sh --dir "$RUNS/$name/esp" --log "$LOG.raw" --timeout $((t * SCALE)) \
		--keep "$RUNS/$name" "$@" >"$RUNS/$name/bochs.out" 2>&1
	RC=$?
	ELAPSED=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	# strip the firmware's terminal escapes and carriage returns
	tr -d '\r' <"$LOG.raw" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[()][A-Z0-9]//g' >"$LOG"
}

REASONS=""
expect() { grep -qaE -- "$1" "$LOG" || REASONS="$REASONS; missing: $1"; }
reject() { grep -qaE -- "$1" "$LOG" && REASONS="$REASONS; unexpected: $(grep -aE -m1 -- "$1" "$LOG")"; }

finish() {
	local name=$1
	if [ "${RC:-0}" = 124 ]; then REASONS="$REASONS; timed out"; fi
	if [ -z "$REASONS" ]; then
		printf 'PASS %-34s %6.1fs\n' "$name" "$ELAPSED"
		pass=$((pass + 1))
	else
		printf 'FAIL %-34s %6.1fs%s\n     log: %s\n' "$name" "$ELAPSED" "$REASONS" "$LOG"
		fail=$((fail + 1))
	fi
	REASONS=""
	RC=0
}

# --- EFI guest programs under VMX -------------------------------------------

t_vmx_guest_basic() {
	local d=$(esp vmx-guest-basic)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-guest-basic 150 --until 'SUMMARY: t_basic'
	expect 'hvtrace: VMX: revision [0-9a-f]+, controls .*, monitor trap flag'
	expect 'hvtrace: EPT: identity map of [0-9]+ GiB'
	expect 'hvtrace: vmx backend ready'
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'GUEST-TEST: INFO: running under hvtrace'
	expect 'GUEST-TEST: PASS: vmxon_ud'
	expect 'GUEST-TEST: PASS: cr4_vmxe_set_gp'
	expect 'GUEST-TEST: PASS: feature_control_locked_vmx_off'
	expect 'SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish vmx-guest-basic
}

t_vmx_triple_fault() {
	local d=$(esp vmx-triple-fault)
	add_guest "$d" t_triple
	printf 'next = \\EFI\\hvtrace\\t_triple.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	# the guest is stopped for good: end Bochs once the dump is complete
	run vmx-triple-fault 150 --until 'hvtrace: error: vmx_dump:   gdtr'
	expect 'GUEST-TEST: INFO: about to triple-fault'
	expect 'guest triple fault \(shutdown\): the guest is stopped; the hypervisor stays resident'
	expect 'vmx_dump: vcpu 0 VMCS at [0-9a-f]+: exit reason 2 \(triple fault\)'
	expect 'vmx_dump:   rip [0-9a-f]{16}'
	expect 'dump_seg:   cs   sel [0-9a-f]{4} ar '
	expect 'vmx_dump:   gdtr [0-9a-f]{16}/[0-9a-f]+ idtr 0000000000000000/0 '
	reject 'FAIL: triple_fault'
	finish vmx-triple-fault
}

# A CPU model without the monitor trap flag: the backend runs all the same
# and does not claim HV_CAP_MTF.
t_vmx_no_mtf_cpu() {
	local d=$(esp vmx-no-mtf-cpu)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-no-mtf-cpu 150 --cpu corei7_skylake_x --until 'SUMMARY: t_basic'
	expect 'hvtrace: VMX: revision [0-9a-f]+, controls '
	reject 'hvtrace: VMX: .*monitor trap flag'
	expect 'SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish vmx-no-mtf-cpu
}

# t_bts under VMX with one engine: the same exact records as under SVM
vmx_bts_with_engine() {
	local name=vmx-bts-$1
	local d=$(esp $name)
	add_guest "$d" t_bts
	printf 'next = \\EFI\\hvtrace\\t_bts.efi\nengine = %s\n' "$1" >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 200 --until 'SUMMARY: t_bts'
	expect 'hvtrace: vmx backend ready'
	expect 'SUMMARY: t_bts: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish $name
}
t_vmx_bts_fast() { vmx_bts_with_engine fast; }
t_vmx_bts_reference() { vmx_bts_with_engine reference; }

ALL="t_vmx_guest_basic t_vmx_triple_fault t_vmx_no_mtf_cpu t_vmx_bts_fast t_vmx_bts_reference"

if [ "${1:-}" = --list ]; then
	for t in $ALL; do echo "$t"; done
	exit 0
fi
sel=""
if [ $# -gt 0 ]; then
	for t in $ALL; do for p in "$@"; do case "$t" in *"${p//-/_}"*) sel="$sel $t" ;; esac; done; done
else
	sel=$ALL
fi

mkdir -p "$RUNS"
for t in $sel; do $t; done
echo "integration-vmx: $pass passed, $fail failed"
[ $fail = 0 ]
