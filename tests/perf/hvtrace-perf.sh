#!/bin/busybox sh
# The guest side of tests/integration-perf.sh: Linux's perf run against
# hvtrace's virtual PMU and BTS on tests/perf/work.S (/bin/perf-work), each
# step's results on the console behind its own marker. /init runs it for
# hvtrace.perf=STEP[,STEP...] (the perf initramfs only). Steps:
#   stat    perf stat -e instructions:u,branches:u and two raw events,
#           BR_INST_RETIRED.NEAR_TAKEN (r20c4) and .NOT_TAKEN (r10c4)
#   bts     perf record -e intel_bts// --per-thread, then perf script: every
#           branch with a user-mode end, "FROM TO" in hex, a kernel address
#           written as k (the host stream's user filter hides those)
#   sample  perf record -e instructions:u -c $SAMPLE_PERIOD (the PMI), then
#           perf script: each sample's IP
#   pebs    perf record -e branches:upp -c $PEBS_PERIOD (PEBS: each sample's
#           IP the record's eventing IP), then perf script: each sample's IP
#   branches  perf record -e branches:u -c 1 -d (the perf core's BTS event, the
#           DS area's BTS buffer drained at its threshold PMI), then perf
#           script: "FROM TO" of each branch as for bts
#   gdb     GDB (/usr/bin/gdb, the perf initramfs's gdb-minimal): starti,
#           record btrace bts (the same perf event), continue to a
#           breakpoint on the exit's SYSCALL, then record
#           function-call-history /i ("N FUNCTION inst A,B" a line) and
#           record instruction-history (each instruction's address)
#   cycles  perf stat of cycles:u, cycles:k and cycles, and cycles:u sampled
#   suite   Linux's own perf test suite (perf test, the tests from the
#           linux-perf package: scripts/fetch-perf-tests.sh), one test at a
#           time, each bounded (bounded: hvtrace.perftest.timeout=S on the kernel's
#           command line, 120 s unless given) and timed; the tests
#           hvtrace.perftest=N[,N...] names, all of them unless given. Each
#           result "HVTRACE-PERFTEST: N[.K] SECONDS RESULT" (Ok, FAILED!,
#           Skip..., TIMEOUT: killed at the bound, NONE: no result line),
#           and the verbose output of a test not Ok (perf test -v N, its
#           first 60 and last 90 lines, and the kernel's last 20 lines
#           meanwhile) behind HVTRACE-PERFTEST-LOG: N:
#           (hvtrace.perftest.v=-vvv: more of it); hvtrace.perftest.skip=N[,N]:
#           those not run ("NOT RUN"); with
#           hvtrace.perftest.live, all of it as it comes (for a test that
#           hangs); hvtrace.perftest.ftrace=EV[,EV...]: those tracefs
#           events (GROUP:NAME, or kprobe:FUNC for a probe on FUNC's entry)
#           traced during each test, the trace printed behind
#           HVTRACE-PERFTEST-TRACE: N: for a test not Ok (for a race's
#           evidence)
SAMPLE_PERIOD=997
PEBS_PERIOD=499
W=/bin/perf-work
cd /tmp || exit 1
export HOME=/tmp

# FROM TO pairs of perf script's "IP => ADDR" (or "IP ADDR") lines, those
# with a user end only, kernel halves as k
user_pairs() {
	awk '{ gsub("=>", " "); n = split($0, f, " "); if (n < 2) next
	       a = tolower(f[1]); b = tolower(f[n]); sub(/^0x/, "", a); sub(/^0x/, "", b)
	       sub(/^0+/, "", a); sub(/^0+/, "", b); if (a == "") a = "0"; if (b == "") b = "0"
	       ka = length(a) == 16 && a ~ /^ffff[89a-f]/; kb = length(b) == 16 && b ~ /^ffff[89a-f]/
	       if (ka && kb) next
	       print (ka ? "k" : a), (kb ? "k" : b) }'
}

step_stat() {
	perf stat -x, -e instructions:u,branches:u,r20c4:u,r10c4:u -o /tmp/stat.txt -- $W
	echo "HVTRACE-PERF: stat exit $?"
	grep -v '^#' /tmp/stat.txt | grep . | sed 's/^/HVTRACE-PERF: stat: /'
}

step_bts() {
	perf record -N -q -e intel_bts// --per-thread -o /tmp/bts.data -- $W
	echo "HVTRACE-PERF: bts record exit $?"
	perf script -i /tmp/bts.data --itrace=b -F ip,addr >/tmp/bts.raw 2>/tmp/bts.err
	echo "HVTRACE-PERF: bts script exit $? lines $(wc -l </tmp/bts.raw)"
	user_pairs </tmp/bts.raw >/tmp/bts.txt
	sed 's/^/HVTRACE-PERF: bts: /' /tmp/bts.err | head -n 5
	sed 's/^/HVTRACE-BTS: /' /tmp/bts.txt
}

step_sample() {
	perf record -N -q -e instructions:u -c $SAMPLE_PERIOD -o /tmp/sample.data -- $W
	echo "HVTRACE-PERF: sample record exit $?"
	perf script -i /tmp/sample.data -F ip,period 2>/dev/null >/tmp/sample.txt
	echo "HVTRACE-PERF: sample period $SAMPLE_PERIOD samples $(grep -c . /tmp/sample.txt)"
	dmesg | grep -i 'perf:' | sed 's/^\[[^]]*\] /HVTRACE-PERF: dmesg: /'

	sed 's/^ */HVTRACE-SAMPLE: /' /tmp/sample.txt
	perf report -i /tmp/sample.data --stdio -q --sort sym 2>/dev/null | grep . | head -n 5 |
		sed 's/^ */HVTRACE-PERF: sample report: /'
}

step_pebs() {
	perf record -N -q -e branches:upp -c $PEBS_PERIOD -o /tmp/pebs.data -- $W
	echo "HVTRACE-PERF: pebs record exit $?"
	perf script -i /tmp/pebs.data -F ip,period 2>/dev/null >/tmp/pebs.txt
	echo "HVTRACE-PERF: pebs period $PEBS_PERIOD samples $(grep -c . /tmp/pebs.txt)"
	sed 's/^ */HVTRACE-PEBS: /' /tmp/pebs.txt
}

step_branches() {
	perf record -N -q -e branches:u -c 1 -d -o /tmp/branches.data -- $W
	echo "HVTRACE-PERF: branches record exit $?"
	perf script -i /tmp/branches.data -F ip,addr >/tmp/branches.raw 2>/tmp/branches.err
	echo "HVTRACE-PERF: branches script exit $? lines $(wc -l </tmp/branches.raw)"
	sed 's/^/HVTRACE-PERF: branches: /' /tmp/branches.err | head -n 5
	user_pairs </tmp/branches.raw | sed 's/^/HVTRACE-BRANCH: /'
}

# the cycles events' privilege filter (docs/pmu.md "The TSC-counted
# events"): perf stat of cycles:u, cycles:k and cycles, then cycles:u
# sampled every 1,000,000 ticks, a spinning program's (sh's loop)
step_cycles() {
	perf stat -x, -e cycles:u,cycles:k,cycles -o /tmp/cycles.txt -- $W
	echo "HVTRACE-PERF: cycles stat exit $?"
	grep -v '^#' /tmp/cycles.txt | grep . | sed 's/^/HVTRACE-PERF: cycles: /'
	perf record -N -q -e cycles:u -c 1000000 -o /tmp/cycles.data -- sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done'
	echo "HVTRACE-PERF: cycles record exit $?"
	perf script -i /tmp/cycles.data -F ip,sym 2>/dev/null >/tmp/cycles-s.txt
	echo "HVTRACE-PERF: cycles samples $(grep -c . /tmp/cycles-s.txt), kernel $(grep -c '^ *ffff' /tmp/cycles-s.txt)"
}

# the exit's SYSCALL is the 2 bytes before leaf (tests/perf/work.S); GDB's
# BTS buffer (64 KiB by default, 24 bytes a sample) made large enough for
# the program's 3500 branches
step_gdb() {
	gdb -batch -nx -q -ex 'set pagination off' -ex 'set width 0' \
		-ex 'set record btrace bts buffer-size 262144' -ex starti -ex 'record btrace bts' \
		-ex 'break *((char *) leaf - 2)' -ex continue -ex 'info record' -ex 'maint info btrace' \
		-ex 'set record function-call-history-size unlimited' -ex 'record function-call-history /i' \
		-ex 'set record instruction-history-size unlimited' -ex 'record instruction-history' \
		-ex kill $W >/tmp/gdb.txt 2>&1
	echo "HVTRACE-PERF: gdb exit $?"
	# GDB's own lines but the histories', then the histories in short
	grep -v '^[0-9]' /tmp/gdb.txt | sed 's/^/HVTRACE-PERF: gdb: /'
	awk -F'\t' '$1 ~ /^[0-9]+$/ && $3 ~ /^inst / { print "HVTRACE-GDB-CALL:", $1, $2, $3 }' /tmp/gdb.txt
	awk '$1 ~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i ~ /^0x[0-9a-f]+$/) { print "HVTRACE-GDB-INSN:", $i; break } }' /tmp/gdb.txt
}

# bounded S CMD...: CMD in a session of its own, killed whole (TERM, then
# KILL 5 s later: a shell test's perf and its workload too) once it has run
# S seconds of the guest's time; CMD's status, 124 when cut. One sleep, not
# busybox timeout's one a second: while a counter counts, every
# instruction is single-stepped and each wakeup costs.
bounded() {
	local s=$1 pid wd rc
	shift
	rm -f /tmp/suite-cut
	setsid "$@" &
	pid=$!
	( sleep "$s"; echo cut >/tmp/suite-cut; kill -TERM -"$pid"; sleep 5; kill -KILL -"$pid" ) 2>/dev/null &
	wd=$!
	wait $pid
	rc=$?
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	[ -e /tmp/suite-cut ] && rc=124
	return $rc
}

# suite_ftrace_setup EV...: hvtrace.perftest.ftrace's events enabled,
# tracing off until a test starts
TR=/sys/kernel/tracing
suite_ftrace_setup() {
	local ev
	[ $# -gt 0 ] || return 0
	echo 0 >$TR/tracing_on
	echo 8192 >$TR/buffer_size_kb
	for ev in "$@"; do
		case "$ev" in
		kprobe:*) echo "p:hv_${ev#kprobe:} ${ev#kprobe:}" >>$TR/kprobe_events &&
			echo 1 >$TR/events/kprobes/hv_${ev#kprobe:}/enable ;;
		*:*) echo 1 >$TR/events/${ev%%:*}/${ev#*:}/enable ;;
		esac || echo "HVTRACE-PERF: ftrace: no event $ev"
	done
}

# the suite's (docs/pmu.md "Linux's perf test suite")
step_suite() {
	local list="" bound=120 live=0 v=-v skip="" ftrace="" arg n t0 t1 rc
	for arg in $(cat /proc/cmdline); do
		case "$arg" in
		hvtrace.perftest=*) list=$(echo "${arg#hvtrace.perftest=}" | tr , ' ') ;;
		hvtrace.perftest.timeout=*) bound=${arg#hvtrace.perftest.timeout=} ;;
		hvtrace.perftest.live) live=1 ;;
		hvtrace.perftest.v=*) v=${arg#hvtrace.perftest.v=} ;;
		hvtrace.perftest.skip=*) skip=" $(echo "${arg#hvtrace.perftest.skip=}" | tr , ' ') " ;;
		hvtrace.perftest.ftrace=*) ftrace=$(echo "${arg#hvtrace.perftest.ftrace=}" | tr , ' ') ;;
		esac
	done
	# Debian's PATH: coreutils' programs (scripts/fetch-perf-tests.sh) before
	# busybox's applets in /bin
	export PATH=/usr/sbin:/usr/bin:/sbin:/bin
	# what a Debian system mounts, and the tracepoint tests read
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	suite_ftrace_setup $ftrace
	perf test list >/tmp/suite-list.txt 2>&1
	sed 's/^/HVTRACE-PERFTEST-LIST: /' /tmp/suite-list.txt
	[ -n "$list" ] || list=$(sed -nE 's/^ *([0-9]+): .*/\1/p' /tmp/suite-list.txt)
	for n in $list; do
		case "$skip" in *" $n "*)
			echo "HVTRACE-PERFTEST: $n 0.0 NOT RUN (hvtrace.perftest.skip)"
			continue ;;
		esac
		dmesg -c >/dev/null	# the kernel's lines of this test only, below
		[ -z "$ftrace" ] || { echo >$TR/trace; echo 1 >$TR/tracing_on; }
		t0=$(cut -d' ' -f1 /proc/uptime)
		if [ $live = 1 ]; then
			{ bounded "$bound" perf test $v "$n" 2>&1; echo "rc $?" >/tmp/suite-rc; } |
				tee /tmp/suite-$n.txt | sed "s/^/HVTRACE-PERFTEST-LIVE: $n: /"
			read -r _ rc </tmp/suite-rc
		else
			bounded "$bound" perf test $v "$n" >/tmp/suite-$n.txt 2>&1
			rc=$?
		fi
		t1=$(cut -d' ' -f1 /proc/uptime)
		[ -z "$ftrace" ] || echo 0 >$TR/tracing_on
		# the result lines follow each test's (or subtest's) "---- end ----":
		# "DESC: Ok", "DESC subtest K: FAILED!", ...
		awk -v n="$n" -v rc="$rc" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" '
			end { end = 0; r = $0; k = ""
			      if (match(r, / subtest [0-9]+: /)) { k = substr(r, RSTART + 9, RLENGTH - 11); k = "." k }
			      sub(/^.*: /, "", r); print "HVTRACE-PERFTEST: " n k " " s " " r; got = 1; next }
			/^---- end ----$/ { end = 1 }
			END { if (rc == 124 || rc == 143) print "HVTRACE-PERFTEST: " n " " s " TIMEOUT"
			      else if (!got) print "HVTRACE-PERFTEST: " n " " s " NONE (exit " rc ")" }' /tmp/suite-$n.txt
		grep -q -- '---- end ----' /tmp/suite-$n.txt && ! grep -A1 -- '---- end ----' /tmp/suite-$n.txt |
			grep -qvE -- '^---- end ----$|^--$|: Ok$' && [ $rc != 124 ] && continue
		awk 'NR <= 60 { print; next } { t[NR % 90] = $0 } END { if (NR > 150) print "[... " NR - 150 " lines ...]"
			for (i = (NR > 150 ? NR - 89 : 61); i <= NR; i++) print t[i % 90] }' /tmp/suite-$n.txt |
			sed "s/^/HVTRACE-PERFTEST-LOG: $n: /"
		dmesg | tail -n 20 | sed "s/^/HVTRACE-PERFTEST-LOG: $n: dmesg: /"
		echo "HVTRACE-PERFTEST-LOG: $n: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
		[ -z "$ftrace" ] || grep -v '^#' $TR/trace | sed "s/^/HVTRACE-PERFTEST-TRACE: $n: /"
	done
	echo "HVTRACE-PERF: suite done"
}

echo "HVTRACE-PERF: $(perf version)"
# Linux lowers perf_event_max_sample_rate when a PMI handler takes long
# (here: every instruction is single-stepped while a counter counts, under
# TCG), and then throttles an event past max_samples_per_tick PMIs within
# one tick, which with trace.pace holding the timer back can be the whole
# run (the NMI watchdog's handler alone took it down to 250 once, before
# this script ran). The rate as high as it goes, then the time check off
# (in that order: Linux refuses a new rate while the check is off)
echo 100000 >/proc/sys/kernel/perf_event_max_sample_rate
echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
echo "HVTRACE-PERF: perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate)," \
	"perf_cpu_time_max_percent $(cat /proc/sys/kernel/perf_cpu_time_max_percent)"
for s in $(echo "$1" | tr , ' '); do
	case "$s" in
	stat|bts|sample|pebs|branches|gdb|suite|cycles) step_$s ;;
	*) echo "HVTRACE-PERF: unknown step $s" ;;
	esac
done
echo "HVTRACE-PERF: done"
