# Shared by the integration tiers (tests/integration.sh under QEMU,
# tests/integration-vmx.sh under Bochs): boot volumes, time-bounded runs,
# expectations on the serial log, PASS/FAIL lines and the closing
# "TIER: N passed, M failed". Sourced, not run.
#
# Environment: BUILD (default build), HVTRACE_TIME_SCALE (multiply every
# time bound), HVTRACE_SERIAL (the hypervisor's log port: HV_SERIAL below).
BUILD=${BUILD:-build}
RUNS=$BUILD/test-runs
SCALE=${HVTRACE_TIME_SCALE:-1}
pass=0 fail=0
# Tests run at a time (runner_main). One unless the tier, after sourcing
# this file, sets more: only a tier whose tests share nothing but the logs
# RUNNER_AFTER names may (not the QEMU tiers: their guests' timers run on
# the host's clock). Not read from the environment, so that one tier's
# setting never reaches another.
RUNNER_JOBS=1
# RUNNER_AFTER[TEST]="TEST...": tests whose results TEST reads (an
# engines_agree comparison of their serial logs); with RUNNER_JOBS > 1 it
# starts only after those have ended
declare -A RUNNER_AFTER=()
REASONS=""
LINUX_CMDLINE='initrd=\EFI\linux\initrd.gz console=ttyS0,115200 panic=-1 quiet'

# esp NAME: fresh boot volume with hvtrace.efi as the removable-media loader
esp() {
	local d=$RUNS/$1/esp
	rm -rf "$RUNS/$1"
	mkdir -p "$d/EFI/BOOT" "$d/EFI/hvtrace"
	cp "$BUILD/hvtrace.efi" "$d/EFI/BOOT/BOOTX64.EFI"
	echo "$d"
}

add_guest() { cp "$BUILD/tests/guest/$2.efi" "$1/EFI/hvtrace/"; }

add_linux() {
	mkdir -p "$1/EFI/linux"
	cp "$BUILD/cache/linux/vmlinuz" "$1/EFI/linux/vmlinuz"
	cp "$BUILD/initrd.gz" "$1/EFI/linux/initrd.gz"
}

# The kernel's text symbols, as a System.map: Debian's package ships a
# placeholder one (the real one is in the 850 MB -dbg package), so one boot
# without the hypervisor prints /proc/kallsyms (nokaslr: the addresses of
# every later nokaslr boot). Cached per kernel version. $SYMBOLS: the
# map (the tiers and bench/run.sh use it).
kernel_symbols() {
	local map=$BUILD/cache/linux/System.map-$(cat "$BUILD/cache/linux/version")
	if [ ! -s "$map" ]; then
		local d=$(esp kernel-symbols)
		add_linux "$d"
		printf '%s\n' 'next = \EFI\linux\vmlinuz' "cmdline = $LINUX_CMDLINE nokaslr hvtrace.kallsyms" 'enable = no' \
			>"$d/EFI/hvtrace/hvtrace.cfg"
		boot qemu kernel-symbols 180 --cpu-flags -hypervisor
		"$BUILD/host-tools/hvtrace" symbols "$LOG" -o "$map.tmp" >"$RUNS/kernel-symbols/symbols.out" 2>&1
		if [ "$(grep -c ' start_kernel$' "$map.tmp" 2>/dev/null)" = 1 ]; then
			mv "$map.tmp" "$map"
		else
			rm -f "$map.tmp"
		fi
	fi
	SYMBOLS=$map
	[ -s "$map" ]
}

# HV_SERIAL: the hypervisor's log port in every hvtrace.cfg the tests
# write: COM4 (not COM2: OVMF writes its console there too, and a console
# on a port the hypervisor hides stalls the firmware), which the emulator
# scripts (tests/lib/qemu.sh, bochs.sh) merge with COM1 into the one
# serial log line by line (tests/lib/serialmerge.py), and which the
# hypervisor hides from the guest (docs/config.md `serial.hide`), so that
# its lines never tear the guest's. hv_serial_cfg CFG appends it to a
# config that names no `serial` of its own (a test that sets `serial`,
# `none` included, means what it says). HVTRACE_SERIAL=PORT sets another
# (0x3f8: the hypervisor's lines on the guest's console, as before).
HV_SERIAL=${HVTRACE_SERIAL:-0x2e8}
hv_serial_cfg() {
	local f=$1
	[ -f "$f" ] || return 0
	grep -qE '^[[:space:]]*serial[[:space:]]*=' "$f" && return 0
	# a last line without its newline would join ours
	[ -s "$f" ] && [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ] && echo >>"$f"
	echo "serial = $HV_SERIAL" >>"$f"
}

# boot EMULATOR NAME TIMEOUT [options of tests/lib/EMULATOR.sh]: boots the
# volume esp NAME made (its hvtrace.cfg given HV_SERIAL), leaves the cleaned
# serial log in $LOG, the exit status in $RC (124: timed out) and the
# seconds taken in $ELAPSED
boot() {
	local emu=$1 name=$2 t=$3
	shift 3
	hv_serial_cfg "$RUNS/$name/esp/EFI/hvtrace/hvtrace.cfg"
	# two at a time they share the machine with one another: half as much
	# again (tests/lib/runner.sh RUNNER_JOBS)
	[ "$RUNNER_JOBS" = 1 ] || t=$((t * 3 / 2))
	LOG=$RUNS/$name/serial.log
	local start=$(date +%s.%N)
	tests/lib/$emu.sh --dir "$RUNS/$name/esp" --log "$LOG.raw" --timeout $((t * SCALE)) "$@" \
		>"$RUNS/$name/$emu.out" 2>&1
	RC=$?
	ELAPSED=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	# strip the firmware's terminal escapes and carriage returns
	tr -d '\r' <"$LOG.raw" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[()][A-Z0-9]//g' >"$LOG"
}

# expectations: each failure is remembered with its reason
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

# engines_agree NAME REF_RUN FAST_RUN: the record streams two earlier
# runs' serial logs hold (t_bts under each engine) identical, record for
# record, and at least 20 of them
engines_agree() {
	local a=$RUNS/$2/serial.log b=$RUNS/$3/serial.log
	LOG=$b ELAPSED=0
	if [ ! -s "$a" ] || [ ! -s "$b" ]; then
		REASONS="; run $2 and $3 first"
	elif ! diff <(grep -a 'record [0-9]*:' "$a") <(grep -a 'record [0-9]*:' "$b") >/dev/null; then
		REASONS="; record streams differ: diff <(grep -a 'record [0-9]*:' $a) <(grep -a 'record [0-9]*:' $b)"
	elif [ "$(grep -ac 'record [0-9]*:' "$a")" -lt 20 ]; then
		REASONS="; too few records compared"
	fi
	finish "$1"
}

# runner_main TIER "TESTS" [--list | PATTERN...]: runs the tests (shell
# functions) whose names contain a pattern (dashes match underscores; a
# pattern ending in $ only at the name's end), or all of them, then prints
# the tier's closing line.
# RUNNER_JOBS at a time (runner_parallel) when the tier sets more than one.
runner_main() {
	local tier=$1 all=$2 sel="" t p
	shift 2
	if [ "${1:-}" = --list ]; then
		for t in $all; do echo "$t"; done
		return 0
	fi
	if [ $# -gt 0 ]; then
		for t in $all; do for p in "$@"; do
			p=${p//-/_}
			case "$p" in
			*'$') case "$t" in *"${p%'$'}") sel="$sel $t" ;; esac ;;
			*) case "$t" in *"$p"*) sel="$sel $t" ;; esac ;;
			esac
		done; done
	else
		sel=$all
	fi
	mkdir -p "$RUNS"
	if [ "$RUNNER_JOBS" -gt 1 ]; then
		runner_parallel $sel
	else
		for t in $sel; do $t; done
	fi
	echo "$tier: $pass passed, $fail failed"
	[ $fail = 0 ]
}

# runner_parallel TEST...: runs the tests RUNNER_JOBS at a time, each
# started as soon as there is room and the tests RUNNER_AFTER names for it
# (if selected) have ended; a test that must wait lets the ones after it
# go first. Each one's output is kept in $RUNS/.runner/TEST.out and printed
# in the tests' order as soon as it and every test before it have ended;
# its pass and fail counts come back through TEST.count (a test that ends
# without one, killed say, counts as failed).
runner_parallel() {
	local tests=("$@") dir=$RUNS/.runner n=$# printed=0 active=0 i j t d p f running
	local -a pids=() ended=()
	rm -rf "$dir"
	mkdir -p "$dir"
	# stopped, it stops the tests running (and their emulator scripts)
	trap 'for p in ${pids[*]}; do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null; exit 130' INT TERM
	while [ $printed -lt $n ]; do
		# this shell's jobs still running (never another process given a
		# PID again since)
		running=" $(jobs -rp | tr '\n' ' ') "
		for ((i = printed; i < n; i++)); do
			if [ -n "${pids[$i]:-}" ] && [ -z "${ended[$i]:-}" ] && [[ $running != *" ${pids[$i]} "* ]]; then
				ended[$i]=1 active=$((active - 1))
			fi
		done
		# start what there is room for and may start
		for ((i = printed; i < n && active < RUNNER_JOBS; i++)); do
			[ -z "${pids[$i]:-}" ] || continue
			t=${tests[$i]}
			for d in ${RUNNER_AFTER[$t]:-}; do
				for ((j = 0; j < n; j++)); do
					[ "${tests[$j]}" = "$d" ] && [ -z "${ended[$j]:-}" ] && continue 3
				done
			done
			(pass=0 fail=0; $t; echo "$pass $fail" >"$dir/$t.count") >"$dir/$t.out" 2>&1 &
			pids[$i]=$! active=$((active + 1))
		done
		# print the ended ones, in order
		while [ $printed -lt $n ] && [ -n "${ended[$printed]:-}" ]; do
			t=${tests[$printed]}
			wait "${pids[$printed]}"
			cat "$dir/$t.out"
			if [ -s "$dir/$t.count" ] && read -r p f <"$dir/$t.count"; then
				pass=$((pass + p)) fail=$((fail + f))
			else
				printf 'FAIL %-34s ended without a result: %s\n' "$t" "$dir/$t.out"
				fail=$((fail + 1))
			fi
			printed=$((printed + 1))
		done
		[ $printed -lt $n ] && sleep 0.5
	done
	trap - INT TERM
}
