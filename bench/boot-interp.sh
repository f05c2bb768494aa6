#!/usr/bin/env bash
# make bench, part 5 (issue #24): Debian's kernel traced losslessly from
# start_kernel to /init by the interpreting engine, beside the anchor a
# QEMU user would pick for the same boot.
#   hvtrace - engine = interp, trace.start = start_kernel, the lossless
#             stream in an ivshmem channel drained by `hvtrace record`
#             (stream.wait: the vCPU waits for the reader rather than lose
#             records); the time from the recorder's "tracing starts" to
#             the guest's /init marker, host wall clock; records and lost
#             from the recorder's own summary
#   plugin  - no hvtrace; QEMU's TCG with bench/tools/branchcount.c
#             writing every transfer's from/to to a file (log=FILE), from
#             start_kernel to run_init_process, by the plugin's clock
# Prints:
#   start_kernel to /init traced: N s (M records, L lost)
#   TCG plugin writing every branch, start_kernel to /init: P s (K branches)
#   hvtrace / plugin: X
# BENCH_INTERP_TIMEOUT (s, default 3600) bounds the traced boot.
# Saved in bench/results/boot-interp-<date>.txt.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export HVTRACE_QUIET_ACCEL=1
. tests/lib/runner.sh
limit=${BENCH_INTERP_TIMEOUT:-3600}
HVTRACE=$BUILD/host-tools/hvtrace
. bench/lib.sh
sk=$(sym start_kernel) ri=$(sym run_init_process)
mhz=$(awk -F': *' '/^cpu MHz/ { print int($2); exit }' /proc/cpuinfo)
# no_timer_check: traced, the interrupts are paced in guest branches while the TSC runs at the
# host's rate, and the IO-APIC timer check panics (tests/integration-boot.sh says more)
cmdline="$LINUX_CMDLINE nokaslr no_timer_check lpj=$(((${mhz:-2500} * 1000000) / 250))"

# --- the anchor: the plugin logging every branch --------------------------
d=$(esp bench-interp-plugin)
add_linux "$d"
printf '%s\n' 'next = \EFI\linux\vmlinuz' "cmdline = $cmdline" 'enable = no' >"$d/EFI/hvtrace/hvtrace.cfg"
blog=$RUNS/bench-interp-plugin/branches.bin
echo "bench: the TCG plugin writing every branch from start_kernel to /init" >&2
boot qemu bench-interp-plugin 900 --until 'HVTRACE-GUEST: init reached' --cpu-flags -hypervisor -- \
	-plugin "$plugin,start=0x$sk,at=0x$ri,log=$blog"
pout=$RUNS/bench-interp-plugin/qemu.out
t0=$(sed -nE 's/^branchcount: counting from .*, t=([0-9.]+)$/\1/p' "$pout")
t1=$(sed -nE "s/^branchcount: at 0x0*$ri: .* t=([0-9.]+)\$/\\1/p" "$pout")
pn=$(sed -nE "s/^branchcount: at 0x0*$ri: ([0-9]+) transfers.*/\\1/p" "$pout")
if [ -z "$t0" ] || [ -z "$t1" ] || [ -z "$pn" ]; then
	echo "bench: the plugin's boot did not reach run_init_process; see $pout" >&2
	exit 1
fi
ptime=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
pbytes=$(stat -c %s "$blog" 2>/dev/null || echo 0)
rm -f "$blog"

# --- hvtrace: the interpreting engine, lossless to the host ----------------
name=bench-interp-traced
d=$(esp $name)
add_linux "$d"
printf '%s\n' 'next = \EFI\linux\vmlinuz' "cmdline = $cmdline" 'engine = interp' 'channel = ivshmem' \
	'stream.size = 4M' 'stream.wait = 10s' "trace.start = 0x$sk" >"$d/EFI/hvtrace/hvtrace.cfg"
shm=$RUNS/$name/chan.shm out=$RUNS/$name/boot.trace
truncate -s 16M "$shm"
echo "bench: Debian's kernel traced by engine = interp from start_kernel to /init (bound $limit s)" >&2
raw=$RUNS/$name/serial.raw
# the recorder first (it waits for the channel); at the /init marker, while
# QEMU still runs, it is stopped: it asks the hypervisor to stop tracing and
# drains the rings to the STOP marker
"$HVTRACE" record --shm "$shm" -o "$out" --wait 300 --quiet >"$RUNS/$name/record.out" 2>&1 &
rpid=$!
tests/lib/qemu.sh --dir "$d" --log "$raw" --timeout "$limit" --cpu-flags -hypervisor \
	--until 'HVTRACE-GUEST: init reached' \
	--then "kill -INT $rpid; for i in \$(seq 150); do kill -0 $rpid 2>/dev/null || break; sleep 0.2; done" -- \
	-object memory-backend-file,id=hvt,share=on,mem-path="$shm",size=16M -device ivshmem-plain,memdev=hvt \
	>"$RUNS/$name/qemu.out" 2>&1 &
qpid=$!
ts="" te=""
while kill -0 $qpid 2>/dev/null; do
	[ -n "$ts" ] || ! grep -qa 'recorder: tracing starts at' "$raw" 2>/dev/null || ts=$(date +%s.%N)
	[ -n "$te" ] || ! grep -qa 'HVTRACE-GUEST: init reached' "$raw" 2>/dev/null || te=$(date +%s.%N)
	sleep 0.2
done
wait $qpid
kill -INT $rpid 2>/dev/null
wait $rpid
rrc=$?
if [ -z "$ts" ] || [ -z "$te" ] || ! grep -qa "tracing starts at 0*$sk" "$raw"; then
	echo "bench: the traced boot did not go from start_kernel to /init within $limit s; log $raw" >&2
	exit 1
fi
htime=$(awk -v a="$ts" -v b="$te" 'BEGIN { printf "%.1f", b - a }')
# the recorder's summary: "... N records ..., L lost"
summary=$(grep -a -E '[0-9]+ records' "$RUNS/$name/record.out" | tail -1)
hn=$(printf '%s\n' "$summary" | grep -oE '[0-9]+ records' | head -1 | grep -oE '[0-9]+')
hl=$(printf '%s\n' "$summary" | grep -oE '[0-9]+ lost' | head -1 | grep -oE '[0-9]+')
rm -f "$shm"
res=bench/results/boot-interp-$(date -u +%Y%m%d-%H%M%S).txt
{
	echo "# hvtrace bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}')"
	echo "# guest: Linux $(cat "$BUILD/cache/linux/version"), 1 vCPU, 512 MiB, nokaslr; recorder exit status $rrc"
	echo "start_kernel to /init traced: $htime s (${hn:-?} records, ${hl:-?} lost) (issue #24 target <= 300 s, >= 400,000 records/s)"
	awk -v n="${hn:-0}" -v t="$htime" 'BEGIN { if (t > 0) printf "traced rate: %.0f records/s\n", n / t }'
	echo "TCG plugin writing every branch, start_kernel to /init: $ptime s ($pn branches, $pbytes bytes)"
	awk -v a="$htime" -v b="$ptime" 'BEGIN { if (b > 0) printf "hvtrace / plugin: %.1f\n", a / b }'
	echo "# recorder: $summary"
} | tee "$res"
echo "bench: saved $res"
