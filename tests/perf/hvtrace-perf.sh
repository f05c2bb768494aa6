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
	stat|bts|sample|pebs|branches|gdb) step_$s ;;
	*) echo "HVTRACE-PERF: unknown step $s" ;;
	esac
done
echo "HVTRACE-PERF: done"
