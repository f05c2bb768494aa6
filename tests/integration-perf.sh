#!/usr/bin/env bash
# Linux's own perf (Debian's linux-perf) in the Debian guest against
# hvtrace's virtual PMU and BTS (issue 14; docs/pmu.md "Linux's perf in the
# guest"), under QEMU TCG with an Intel vendor and the SVM backend. The
# guest runs tests/perf/work.S under perf (tests/perf/hvtrace-perf.sh, from
# the perf initramfs: make $(BUILD)/initrd-perf.gz); the hypervisor traces
# the same run into the host stream, from the program's entry (trace.start
# at its address), user mode only, and the test cuts the stream to the
# program's address space and walks its code along it
# (tests/perf/trace-count.awk) for the hypervisor's own counts. Each boot
# costs about a minute or two under TCG; one boot runs several perf
# commands, and only the first run of the program in a boot is traced.
#
#   tests/integration-perf.sh [--list] [PATTERN...]   (default: all tests)
#
# Environment: BUILD (default build), HVTRACE_ACCEL, HVTRACE_TIME_SCALE.
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
export HVTRACE_QUIET_ACCEL=1
HVTRACE=$BUILD/host-tools/hvtrace
WORK=$BUILD/tests/perf/perf-work
PERF_CMDLINE=${LINUX_CMDLINE/initrd.gz/initrd-perf.gz}
# the program's analytically known counts (tests/perf/work.S, LOOPS 1000)
WORK_INSNS=7504 WORK_BRANCHES=4001 WORK_TAKEN=3500
SAMPLE_PERIOD=997 PEBS_PERIOD=499	# tests/perf/hvtrace-perf.sh

run() { boot qemu "$@"; }

# perf_boot NAME STEPS [RECORDS]: Linux with pti=off on an Intel-vendor
# guest CPU, /init running hvtrace-perf STEPS; the host stream (user mode)
# traced from the program's entry for RECORDS records, 100,000 unless
# given (the run, its exit, and on into perf: from the entry to the exit's
# SYSCALL took 10,350 of them with the kernel's, stream.cpl = all; the
# records of the kernel count too, though the stream keeps only those with
# a user end), drained by `hvtrace record`. Leaves $LOG, $DUMP (hvtrace dump of
# the stream) and $COUNT (trace-count.awk's output, pairs and counts);
# returns 1 (the reason in REASONS) when the perf images are not built.
perf_boot() {
	local name=$1 steps=$2 records=${3:-100000}
	local d=$(esp "$name")
	SECONDS=0
	if [ ! -s "$BUILD/initrd-perf.gz" ] || [ ! -x "$WORK" ]; then
		LOG=/dev/null ELAPSED=0 COUNT=/dev/null
		REASONS="; no $BUILD/initrd-perf.gz or $WORK: make test-perf builds them"
		return 1
	fi
	mkdir -p "$d/EFI/linux"
	cp "$BUILD/cache/linux/vmlinuz" "$BUILD/initrd-perf.gz" "$d/EFI/linux/"
	local entry=$(nm "$WORK" | awk '$3 == "_start" { print $1 }')
	printf '%s\n' 'next = \EFI\linux\vmlinuz' "cmdline = $PERF_CMDLINE pti=off hvtrace.perf=$steps" \
		'stream.size = 1M' 'stream.wait = 2s' 'stream.cpl = user' "trace.start = 0x$entry" \
		"trace.stop = records:$records" 'channel = ivshmem' >"$d/EFI/hvtrace/hvtrace.cfg"
	local shm=$RUNS/$name/chan.shm out=$RUNS/$name/stream.trace
	truncate -s 8M "$shm"
	run "$name" 480 --cpu-flags -hypervisor,vendor=GenuineIntel -- \
		-object memory-backend-file,id=hvt,share=on,mem-path="$shm",size=8M -device ivshmem-plain,memdev=hvt &
	local qpid=$!
	# ends by itself once tracing stopped and the rings are drained; a run
	# that never started tracing ends it when QEMU is gone
	timeout 470 "$HVTRACE" record --shm "$shm" -o "$out" --wait 120 --quiet >"$RUNS/$name/record.out" 2>&1 &
	local rpid=$!
	wait $qpid
	sleep 2
	kill -INT $rpid 2>/dev/null
	wait $rpid
	local rrc=$?
	LOG=$RUNS/$name/serial.log ELAPSED=$SECONDS
	DUMP=$RUNS/$name/dump.txt COUNT=$RUNS/$name/count.txt
	[ $rrc = 0 ] || REASONS="$REASONS; hvtrace record exited $rrc: $(tail -2 "$RUNS/$name/record.out")"
	"$HVTRACE" dump "$out" >"$DUMP" 2>"$RUNS/$name/dump.err" ||
		REASONS="$REASONS; hvtrace dump failed: $(head -2 "$RUNS/$name/dump.err")"
	objdump -d "$WORK" >"$RUNS/$name/work.lst"
	awk -v period=$SAMPLE_PERIOD -f tests/perf/trace-count.awk "$RUNS/$name/work.lst" "$DUMP" >"$COUNT" ||
		REASONS="$REASONS; the stream does not walk the program: $(grep -m1 '^error' "$COUNT")"
	# issue #29 item 5, with PERF_ROUNDTRIP set: the exporters' round trips over this Linux
	# run's stream with the program's symbols (perf script = hvtrace dump, uftrace replay =
	# report --calls, record for record)
	if [ -n "${PERF_ROUNDTRIP:-}" ]; then
		# the program's labels as a System.map (its ELF has no typed function symbols)
		nm -n "$WORK" | awk '$2 ~ /^[tT]$/ && $3 !~ /^(__bss_start|_edata|_end)$/' >"$RUNS/$name/work.map"
		if ! HVTRACE=$HVTRACE host-tools/tests/export.sh --trace "$out" "$RUNS/$name/work.map" \
			>"$RUNS/$name/roundtrip.out" 2>&1; then
			REASONS="$REASONS; export round trip: $(grep -m1 -E 'FAIL|usage' "$RUNS/$name/roundtrip.out")"
			cp "$out" "$RUNS/$name/roundtrip.trace"	# kept for the evidence
		fi
	fi
	rm -f "$shm" "$out"
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect "recorder: tracing starts at 0*$entry"
	expect "recorder: tracing stopped \\(trace.stop records reached\\) after $records records"
	# the kernel's own lines: the Intel PMU driver and intel_bts registered
	expect 'HVTRACE-GUEST: dmesg: Performance Events: PEBS fmt4\+-baseline, generic architected perfmon, full-width counters, Intel PMU driver\.'
	expect 'HVTRACE-GUEST: dmesg: \.\.\. version: +2$'
	expect 'HVTRACE-GUEST: dmesg: \.\.\. generic registers: +4$'
	expect 'HVTRACE-GUEST: dmesg: \.\.\. fixed-purpose events: +3$'
	expect 'HVTRACE-GUEST: perf event sources: .*\bcpu\b'
	expect 'HVTRACE-GUEST: perf event sources: .*\bintel_bts\b'
	expect 'HVTRACE-PERF: perf version 6\.1'
	expect 'HVTRACE-PERF: done'
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	# the hypervisor's own count: the program's code walked along its records
	count_is instructions $WORK_INSNS
	count_is branches $WORK_BRANCHES
	count_is taken $WORK_TAKEN
}

# suite_boot NAME TESTS BOUND TIMEOUT [CFG...]: Linux booted as perf_boot boots it
# (pti=off, an Intel-vendor guest CPU; no tracing), /init running Linux's
# own perf test suite (hvtrace-perf suite) on TESTS (perf test's numbers,
# comma-separated; all of them when empty), each test bounded to BOUND s
# of the guest's time, the whole boot to TIMEOUT s; CFG: more hvtrace.cfg
# lines. Leaves $LOG and
# $RESULTS ($RUNS/NAME/perf-test-results.txt, the artifact: "N[.K] SECONDS
# RESULT" a line, from the log's HVTRACE-PERFTEST lines; the verbose output
# of every test not Ok stays in the serial log, HVTRACE-PERFTEST-LOG).
# Environment, for looking into a test by hand: SUITE_V (perf test's
# verbosity, -v unless given), SUITE_LIVE=1 (its output as it comes),
# SUITE_SKIP (tests not run), SUITE_FTRACE (tracefs events traced during
# each test and printed for one not Ok: tests/perf/hvtrace-perf.sh).
suite_boot() {
	local name=$1 tests=$2 bound=$3 t=$4
	shift 4
	local d=$(esp "$name")
	RESULTS=$RUNS/$name/perf-test-results.txt
	if [ ! -s "$BUILD/initrd-perf.gz" ]; then
		LOG=/dev/null ELAPSED=0
		REASONS="; no $BUILD/initrd-perf.gz: make test-perf builds it"
		return 1
	fi
	mkdir -p "$d/EFI/linux"
	cp "$BUILD/cache/linux/vmlinuz" "$BUILD/initrd-perf.gz" "$d/EFI/linux/"
	printf '%s\n' 'next = \EFI\linux\vmlinuz' \
		"cmdline = $PERF_CMDLINE pti=off hvtrace.perf=suite hvtrace.perftest.timeout=$bound${SUITE_LIVE:+ hvtrace.perftest.live}${SUITE_V:+ hvtrace.perftest.v=$SUITE_V}${SUITE_SKIP:+ hvtrace.perftest.skip=$SUITE_SKIP}${SUITE_FTRACE:+ hvtrace.perftest.ftrace=$SUITE_FTRACE}${tests:+ hvtrace.perftest=$tests}" \
		"$@" >"$d/EFI/hvtrace/hvtrace.cfg"
	run "$name" "$t" --cpu-flags -hypervisor,vendor=GenuineIntel
	sed -nE 's/^.*HVTRACE-PERFTEST: //p' "$LOG" >"$RESULTS"
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'HVTRACE-GUEST: dmesg: Performance Events: PEBS fmt4\+-baseline, generic architected perfmon, full-width counters, Intel PMU driver\.'
	expect 'HVTRACE-PERF: perf version 6\.1'
	expect 'HVTRACE-PERF: suite done'
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	return 0
}

# count_is WHAT N: trace-count.awk's count WHAT is N
count_is() {
	local got=$(sed -nE "s/^count .*\\b$1 ([0-9]+).*/\\1/p" "$COUNT")
	[ "$got" = "$2" ] || REASONS="$REASONS; the hypervisor's stream gives $1 ${got:-?}, the program has $2 ($COUNT)"
}

# lists_agree WHAT GUEST HOSTWHAT HOST: the guest's list (one item a
# line) is the host's, which is not empty
lists_agree() {
	if [ ! -s "$4" ]; then
		REASONS="$REASONS; $3 list is empty ($4)"
	elif ! cmp -s "$2" "$4"; then
		REASONS="$REASONS; $1 ($(wc -l <"$2")) differ from $3 ($(wc -l <"$4")): diff $2 $4"
	fi
}

# perf_stat_is EVENT N: perf stat's count of EVENT (-x, output) is N
perf_stat_is() {
	local got=$(sed -nE "s/^.*HVTRACE-PERF: stat: ([0-9]+),[^,]*,$1,.*/\\1/p" "$LOG")
	[ "$got" = "$2" ] || REASONS="$REASONS; perf stat counts $1 ${got:-?}, the hypervisor's stream $2"
}

# synth_stream [DROP [LOST [OTHER]]]: the `hvtrace dump` text of work.S's
# run as the user-mode stream shows it, made here from its code: the start
# marker, the page fault at the entry and its return, each iteration's
# CALL, RET, taken JZ and JNZ, the exit's SYSCALL; then an interrupt in
# the middle that switches to another address space (OTHER: one of its
# branches there) and back. DROP: leave out that record (counted from 1);
# LOST: a lost record before record LOST.
synth_stream() {
	awk -v drop="${1:-0}" -v lost="${2:-0}" -v other="${3:-0}" 'function r(s) {
		if (++n == lost) print "1 0 lost 3 records (first at tsc 1)"
		if (n != drop) print "1 0 " s }
	BEGIN { k = "0x8000000000000000"
		print "1 0 marker start 0x10001000 cr3 0x1234000"
		r("exception 0x10001000 -> " k " cpl 3->0 vector 14"); r("far " k " -> 0x10001000 cpl 0->3 iret")
		for (c = 1000; c > 0; c--) {
			r("branch 0x10001005 -> 0x10001022 cpl 3->3 call"); r("branch 0x10001024 -> 0x1000100a cpl 3->3 ret")
			if (c % 2 == 0) r("branch 0x10001010 -> 0x10001015 cpl 3->3 jcc")
			if (c == 500) {
				r("interrupt 0x10001015 -> " k " cpl 3->0 vector 0xec"); print "1 0 cr3 0x1234000 -> 0x5555000 cpl 0->0"
				if (other) print "1 0 branch 0x10001005 -> 0x10001022 cpl 3->3 call"
				print "1 0 cr3 0x5555000 -> 0x1234000 cpl 0->0"; r("far " k " -> 0x10001015 cpl 0->3 iret") }
			if (c > 1) r("branch 0x10001017 -> 0x10001005 cpl 3->3 jcc") }
		r("far 0x10001020 -> " k " cpl 3->0 syscall") }'
}

# The walk itself (tests/perf/trace-count.awk), no boot: a stream made from
# the program's code gives its counts, the samples' places and its
# instructions in order, a branch of another address space in the middle
# changes nothing; a taken branch left
# out, or records lost before the program's last, are errors.
t_perf_walk() {
	local name=perf-walk d=$RUNS/perf-walk
	rm -rf "$d"
	mkdir -p "$d"
	LOG=$d/walk.txt ELAPSED=0
	objdump -d "$WORK" >"$d/work.lst"
	walk() { awk -v period=$SAMPLE_PERIOD -f tests/perf/trace-count.awk "$d/work.lst" -; }
	synth_stream 0 0 1 | walk >"$LOG"
	expect "^count instructions $WORK_INSNS branches $WORK_BRANCHES taken $WORK_TAKEN far 1 records 3504 "
	expect '^sample 10001017\|10001005 after 10001015$'
	[ "$(grep -c '^sample ' "$LOG")" = $((WORK_INSNS / SAMPLE_PERIOD)) ] || REASONS="$REASONS; not 7 samples"
	[ "$(grep -c '^pair ' "$LOG")" = 3504 ] || REASONS="$REASONS; not 3504 pairs"
	# the instructions one by one (GDB's instruction history is compared
	# with them): as many as counted, _start's first to the SYSCALL
	synth_stream 0 0 1 | awk -v insns=1 -f tests/perf/trace-count.awk "$d/work.lst" - | sed -n 's/^insn //p' >"$d/insns.txt"
	[ "$(wc -l <"$d/insns.txt")" = $WORK_INSNS ] && [ "$(sed -n '1p;$p' "$d/insns.txt" | tr '\n' ' ')" = "10001000 10001020 " ] ||
		REASONS="$REASONS; -v insns=1 gave $(wc -l <"$d/insns.txt") instructions, $(sed -n '1p;$p' "$d/insns.txt" | tr '\n' ' ')"
	synth_stream 1000 | walk >"$d/drop.txt" && REASONS="$REASONS; a dropped JNZ went unnoticed"
	grep -q '^error ' "$d/drop.txt" || REASONS="$REASONS; no error line for the dropped JNZ"
	synth_stream 0 1000 | walk >"$d/lost.txt" && REASONS="$REASONS; a lost record went unnoticed"
	grep -q '^error the stream lost records' "$d/lost.txt" || REASONS="$REASONS; no error line for the lost record"
	synth_stream 0 99999 | walk >/dev/null || REASONS="$REASONS; a lost record after the program's last failed the walk"
	finish $name
}

# perf stat of the traced run: instructions:u and branches:u exactly the
# hypervisor's counts of the same run (which equal the program's own), and
# the raw near-taken and not-taken branch events those of the walk;
# then sampling on instructions:u through the PMI, untraced: floor(I/N)
# samples (the counter is exact and starts at -N), every IP in the program.
t_linux_perf_stat() {
	local name=linux-perf-stat
	PERF_ROUNDTRIP=1 perf_boot $name stat,sample || { finish $name; return 0; }
	grep -qE '^export: [1-9][0-9]* passed, 0 failed$' "$RUNS/$name/roundtrip.out" 2>/dev/null ||
		REASONS="$REASONS; no passing export round trip ($RUNS/$name/roundtrip.out)"
	local ins=$(sed -nE 's/^count instructions ([0-9]+) branches ([0-9]+).*/\1/p' "$COUNT")
	local br=$(sed -nE 's/^count instructions ([0-9]+) branches ([0-9]+).*/\2/p' "$COUNT")
	expect 'HVTRACE-PERF: stat exit 0'
	perf_stat_is instructions:u "${ins:-none}"
	perf_stat_is branches:u "${br:-none}"
	# BR_INST_RETIRED.NEAR_TAKEN and .NOT_TAKEN (docs/pmu.md's events)
	local taken=$(sed -nE 's/^count .* taken ([0-9]+) far ([0-9]+).*/\1/p' "$COUNT")
	local far=$(sed -nE 's/^count .* taken ([0-9]+) far ([0-9]+).*/\2/p' "$COUNT")
	if [ -n "$taken" ] && [ -n "$far" ] && [ -n "$br" ]; then
		perf_stat_is r20c4:u $((taken - far))
		perf_stat_is r10c4:u $((br - taken))
	else
		REASONS="$REASONS; no taken/far counts from the stream"
	fi
	# sampling
	expect 'HVTRACE-PERF: sample record exit 0'
	expect 'HVTRACE-PERF: perf_event_max_sample_rate 100000, perf_cpu_time_max_percent 0$'
	local want=$((WORK_INSNS / SAMPLE_PERIOD))
	expect "HVTRACE-PERF: sample period $SAMPLE_PERIOD samples $want\$"
	# the program's code: objdump's first and last instruction
	local lo=$(awk -F'[ :\t]+' '$2 ~ /^[0-9a-f]+$/ && NF > 3 { print $2; exit }' "$RUNS/$name/work.lst")
	local hi=$(awk -F'[ :\t]+' '$2 ~ /^[0-9a-f]+$/ && NF > 3 { a = $2 } END { print a }' "$RUNS/$name/work.lst")
	local outside=$(sed -nE 's/.*HVTRACE-SAMPLE: .* ([0-9a-f]+)$/\1/p' "$LOG" |
		awk -v lo="$lo" -v hi="$hi" '{ a = sprintf("%16s", $1); if (a < sprintf("%16s", lo) || a > sprintf("%16s", hi)) print $1 }' | head -3)
	[ -z "$outside" ] || REASONS="$REASONS; sample IPs outside the program: $outside"
	expect 'HVTRACE-PERF: sample report: .*\b_start\b'
	# each sample where the exact count puts it: at the instruction after
	# every N-th of the traced run (the program does the same each run),
	# or the one after that (the PMI's skid: docs/pmu.md)
	local got=$(sed -nE 's/.*HVTRACE-SAMPLE: .* ([0-9a-f]+)$/\1/p' "$LOG" | tr '\n' ' ')
	local ips=$(sed -n 's/^sample \([^ ]*\) after .*/\1/p' "$COUNT" | tr '\n' ' ')
	[ -n "$ips" ] && awk -v got="$got" -v want="$ips" 'BEGIN {
		n = split(got, g, " "); m = split(want, w, " "); if (n != m) exit 1
		for (i = 1; i <= n; i++) if (index("|" w[i] "|", "|" g[i] "|") == 0) exit 1 }' ||
		REASONS="$REASONS; sample IPs [$got], the stream's instructions after every ${SAMPLE_PERIOD}th [$ips]"
	finish $name
}

# perf record -e intel_bts// --per-thread of the traced run, perf script
# in the guest: the branches with a user-mode end, in order, exactly those
# the hypervisor's stream holds for the program's address space (Linux's
# BTS records start at exec, before the program's first instruction; the
# comparison starts at the first record from user mode).
t_linux_perf_bts() {
	local name=linux-perf-bts
	perf_boot $name bts || { finish $name; return 0; }
	expect 'HVTRACE-PERF: bts record exit 0'
	expect 'HVTRACE-PERF: bts script exit 0'
	local guest=$RUNS/$name/bts-guest.txt host=$RUNS/$name/bts-host.txt
	sed -nE 's/.*HVTRACE-BTS: ([0-9a-fk]+ [0-9a-fk]+)$/\1/p' "$LOG" | awk '$1 != "k" { go = 1 } go' >"$guest"
	sed -n 's/^pair //p' "$COUNT" >"$host"
	lists_agree "perf's BTS branches" "$guest" "the hypervisor's" "$host"
	finish $name
}

# perf record -e branches:upp -c N of the traced run: PEBS (adaptive, the
# basic group; docs/pmu.md "PEBS"), whose records Linux reads at the
# threshold PMI or when the program is switched out. A precise sample's IP
# is the record's eventing IP: exactly the N-th, 2N-th ... branch
# instruction the program retired (trace-count.awk -v event=branches walks
# the hypervisor's stream of the same run: its "after AT" addresses), no
# skid; floor(B/N) samples.
t_linux_perf_pebs() {
	local name=linux-perf-pebs
	perf_boot $name pebs || { finish $name; return 0; }
	expect 'HVTRACE-PERF: pebs record exit 0'
	local want=$((WORK_BRANCHES / PEBS_PERIOD))
	expect "HVTRACE-PERF: pebs period $PEBS_PERIOD samples $want\$"
	local at=$RUNS/$name/count-branches.txt
	awk -v period=$PEBS_PERIOD -v event=branches -f tests/perf/trace-count.awk "$RUNS/$name/work.lst" "$DUMP" >"$at" ||
		REASONS="$REASONS; the stream does not walk the program: $(grep -m1 '^error' "$at")"
	local got=$(sed -nE 's/.*HVTRACE-PEBS: .* ([0-9a-f]+)$/\1/p' "$LOG" | sed 's/^0*//' | tr '\n' ' ')
	local ips=$(sed -n 's/^sample [^ ]* after \([0-9a-f]*\)$/\1/p' "$at" | tr '\n' ' ')
	[ -n "$ips" ] && [ "$got" = "$ips" ] ||
		REASONS="$REASONS; PEBS sample IPs [$got], the stream's every ${PEBS_PERIOD}th branch [$ips]"
	finish $name
}

# perf record -e branches:u -c 1 of the traced run: the perf core's BTS
# event (not intel_bts: the DS area's BTS buffer, drained into samples at
# its threshold PMI and when the task is switched out; the event GDB's
# record btrace bts opens), perf script in the guest: each sample's FROM TO,
# exactly the hypervisor's records for the program with both ends in user
# mode (Linux drops a record with a kernel end for an exclude_kernel event)
t_linux_perf_branches() {
	local name=linux-perf-branches
	perf_boot $name branches 500000 || { finish $name; return 0; }
	expect 'HVTRACE-PERF: branches record exit 0'
	expect 'HVTRACE-PERF: branches script exit 0'
	local guest=$RUNS/$name/branches-guest.txt host=$RUNS/$name/branches-host.txt
	sed -nE 's/.*HVTRACE-BRANCH: ([0-9a-fk]+ [0-9a-fk]+)$/\1/p' "$LOG" >"$guest"
	sed -n 's/^pair //p' "$COUNT" | grep -v k >"$host"
	lists_agree "perf's branches:u samples" "$guest" "the hypervisor's user-mode branches" "$host"
	finish $name
}

# GDB's record btrace bts on the traced run (tests/perf/hvtrace-perf.sh
# step_gdb: starti, record btrace bts, continue to a breakpoint on the
# exit's SYSCALL): its record instruction-history, the addresses in order,
# is the list of instructions the hypervisor's stream walks the program
# through (trace-count.awk -v insns=1), from _start up to the breakpoint;
# its record function-call-history /i, "N FUNCTION inst A,B" a segment, is
# that list cut where the function (nm's symbol) changes
t_linux_gdb_btrace() {
	local name=linux-gdb-btrace
	perf_boot $name gdb 500000 || { finish $name; return 0; }
	expect 'HVTRACE-PERF: gdb exit 0'
	expect 'HVTRACE-PERF: gdb: Active record target: record-btrace'
	expect 'HVTRACE-PERF: gdb: Recording format: Branch Trace Store'
	reject 'HVTRACE-PERF: gdb: Could not enable branch tracing'
	expect 'HVTRACE-PERF: gdb: Recorded [0-9]+ instructions in [0-9]+ functions \(0 gaps\)'
	local d=$RUNS/$name
	sed -nE 's/.*HVTRACE-GDB-INSN: 0x0*([0-9a-f]+)$/\1/p' "$LOG" >"$d/insn-guest.txt"
	awk -v insns=1 -f tests/perf/trace-count.awk "$d/work.lst" "$DUMP" | sed -n 's/^insn //p' >"$d/insn-all.txt"
	# the stream's last is the breakpoint's INT3 (an exception record from
	# the SYSCALL's address), where GDB stopped: its current instruction,
	# which the instruction history leaves out and the function call
	# history counts
	local stop=$(sed -nE 's/.*HVTRACE-PERF: gdb: Breakpoint 1, 0x0*([0-9a-f]+) in .*/\1/p' "$LOG")
	[ -n "$stop" ] && [ "$(tail -n 1 "$d/insn-all.txt")" = "$stop" ] ||
		REASONS="$REASONS; the stream's last instruction $(tail -n 1 "$d/insn-all.txt") is not GDB's stop ${stop:-?}"
	head -n -1 "$d/insn-all.txt" >"$d/insn-host.txt"
	sed -nE 's/.*HVTRACE-GDB-CALL: (.*)$/\1/p' "$LOG" >"$d/call-guest.txt"
	{ nm "$WORK" | awk '$2 ~ /^[tT]$/ { print "sym", $1, $3 }'; sed 's/^/insn /' "$d/insn-all.txt"; } |
		awk -v seg=0 '$1 == "sym" { sub(/^0+/, "", $2); a[++n] = sprintf("%16s", $2); f[n] = $3; next }
		{ x = sprintf("%16s", $2); fn = "??"; best = ""
		  for (i = 1; i <= n; i++) if (a[i] <= x && a[i] > best) { best = a[i]; fn = f[i] }
		  i = ++k
		  if (fn != cur) { if (cur != "") print seg, cur, "inst " first "," (i - 1); seg++; cur = fn; first = i } }
		END { if (cur != "") print seg, cur, "inst " first "," k }' >"$d/call-host.txt"
	lists_agree "GDB's instruction history" "$d/insn-guest.txt" "the hypervisor's stream" "$d/insn-host.txt"
	lists_agree "GDB's function call history" "$d/call-guest.txt" "the stream's" "$d/call-host.txt"
	finish $name
}

# suite_check: each of $RESULTS' results (suite_boot) is Ok or the one
# docs/pmu.md's table "Linux's perf test suite" lists for that test (its
# rows "| N | DESCRIPTION | RESULT | WHY |", N perf test's number, N.K a
# subtest's); a listed test that is Ok now is said (SUITE-NOTE lines in
# $RUNS/NAME/perf-test-check.txt), not failed. Every test named in
# $1 (comma-separated) must have a result.
suite_check() {
	local want=$1 out=${RESULTS%/*}/perf-test-check.txt
	awk -F'|' '/^## Linux.s perf test suite/ { on = 1; next } /^## / { on = 0 }
		on && $2 ~ /^ *[0-9]+(\.[0-9]+)? *$/ { n = $2; r = $4; gsub(/^ +| +$/, "", n); gsub(/^ +| +$/, "", r); print n, r }' \
		docs/pmu.md >"${out%.txt}-listed.txt"
	awk -v want="$want" 'FNR == NR { n = $1; $1 = ""; sub(/^ /, ""); listed[n] = $0; next }
		{ n = $1; secs = $2; $1 = $2 = ""; r = $0; sub(/^ +/, "", r); top = n; sub(/\..*/, "", top); seen[top] = 1
		  if (r == "Ok") { if (n in listed) print "SUITE-NOTE " n " is Ok now, listed as " listed[n]; next }
		  if (!(n in listed)) { print "SUITE-UNLISTED " n " " r; next }
		  if (r != listed[n]) print "SUITE-DIFFERS " n " " r " (listed: " listed[n] ")" }
		END { k = split(want, w, ","); for (i = 1; i <= k; i++) if (!(w[i] in seen)) print "SUITE-MISSING " w[i] }' \
		"${out%.txt}-listed.txt" "$RESULTS" >"$out"
	[ -s "${out%.txt}-listed.txt" ] || REASONS="$REASONS; no listed results in docs/pmu.md"
	[ -s "$RESULTS" ] || REASONS="$REASONS; no results"
	grep -q '^SUITE-\(UNLISTED\|DIFFERS\|MISSING\)' "$out" &&
		REASONS="$REASONS; $(grep -c '^SUITE-\(UNLISTED\|DIFFERS\|MISSING\)' "$out") results not as docs/pmu.md lists: $(grep -m3 '^SUITE-\(UNLISTED\|DIFFERS\|MISSING\)' "$out" | tr '\n' ';') ($out)"
}

# Linux's own perf test suite in the guest (issue 29 item 4; docs/pmu.md
# "Linux's perf test suite"): SUITE_TESTS, the named part that fits make
# test's time (each test bounded to SUITE_BOUND s in the guest), each
# result Ok or the one docs/pmu.md lists with its reason; the results are
# kept in the run's perf-test-results.txt. t_linux_perf_suite_all (make
# test-perf-suite): the whole suite the same way.
SUITE_TESTS=1,2,3,5,6,7,9,11,12,13,14,15,16,17,18,19,20,21,22,23,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,95
SUITE_BOUND=45
t_linux_perf_suite() {
	local name=linux-perf-suite
	suite_boot $name $SUITE_TESTS $SUITE_BOUND 600 'trace.pace = 1000' || { finish $name; return 0; }
	suite_check $SUITE_TESTS
	finish $name
}
# not run by linux-perf-suite-all: 97 (perf stat -a of instructions for
# `sleep 1`) single-steps the whole guest, which starves and does not
# reach its bound's end in 10 minutes and more (docs/pmu.md)
SUITE_NOT_RUN=97
t_linux_perf_suite_all() {
	local name=linux-perf-suite-all
	SUITE_SKIP=$SUITE_NOT_RUN suite_boot $name "" $SUITE_BOUND 3600 'trace.pace = 1000' || { finish $name; return 0; }
	suite_check "$(sed -nE 's/^.*HVTRACE-PERFTEST-LIST: +([0-9]+): .*/\1/p' "$LOG" | tr '\n' , | sed 's/,$//')"
	finish $name
}

ALL="t_perf_walk t_linux_perf_stat t_linux_perf_bts t_linux_perf_pebs t_linux_perf_branches t_linux_gdb_btrace t_linux_perf_suite"
# make test-perf-suite: the whole suite alone
[ -z "${PERF_SUITE_ALL:-}" ] || ALL=t_linux_perf_suite_all
[ "${1:-}" = --list ] || tests/lib/qemu.sh --which-accel
runner_main integration-perf "$ALL" "$@"
