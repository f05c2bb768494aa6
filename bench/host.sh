#!/usr/bin/env bash
# make bench (host part; `make bench-host` alone): the host tools on this
# machine, each figure a median of BENCH_RUNS runs (default 5), ratios from
# the same run:
#   drain  - libhvtrace draining a lossless ring in shared memory while a
#            producer thread fills it, in GB/s, against a plain memcpy of
#            the same byte count (one call, buffer to buffer; target: ratio
#            >= 0.5), and against a best-case in-cache chunked memcpy
#   dump   - `hvtrace dump` decode rate to /dev/null, records/s
#   report - `hvtrace report` (all sections, symbolized from a synthetic
#            System.map of ~50k functions), seconds per million records
# Results: bench/results/host-<date>.txt (and stdout).
set -u -o pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${BENCH_RUNS:-5}
RECORDS=${BENCH_HOST_RECORDS:-1000000}
H=$BUILD/host-tools/hvtrace
D=$BUILD/host-tools/hvtrace-bench-drain
[ -x "$H" ] && [ -x "$D" ] || { echo "bench/host.sh: build first: make bench-host" >&2; exit 1; }
work=$BUILD/bench-host
rm -rf "$work"
mkdir -p "$work"

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
secs() { # secs CMD... -> wall seconds on stdout, the command's output discarded
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}'
}

echo "bench: drain vs memcpy, $RUNS runs of 1 GiB" >&2
"$D" "$RUNS" 1024 | tee "$work/drain.txt" >&2 || { echo "bench: the drain benchmark failed" >&2; exit 1; }
drain_line=$(grep '^median:' "$work/drain.txt")
drain=$(echo "$drain_line" | sed -E 's/.*drain ([0-9.]+) GB.*/\1/')
mcpy=$(echo "$drain_line" | sed -E 's/.*, memcpy ([0-9.]+) GB.*/\1/')
ratio=$(echo "$drain_line" | sed -E 's/.*, memcpy [0-9.]+ GB\/s, ratio ([0-9.]+).*/\1/')
cmcpy=$(echo "$drain_line" | sed -E 's/.*cached memcpy ([0-9.]+) GB.*/\1/')
cratio=$(echo "$drain_line" | sed -E 's/.*cached memcpy [0-9.]+ GB\/s, ratio ([0-9.]+).*/\1/')

echo "bench: $RECORDS records, 4 vCPUs, a 50,000-function System.map" >&2
"$H" synth sysmap -o "$work/System.map" --funcs 50000
"$H" synth file -o "$work/trace.hvt" --records "$RECORDS" --vcpus 4 --funcs 50000 --tsc-hz 2000000000
for i in $(seq 1 "$RUNS"); do
	secs "$H" dump "$work/trace.hvt" >>"$work/dump.times"
	secs "$H" dump --symbols "$work/System.map" "$work/trace.hvt" >>"$work/dumpsym.times"
	secs "$H" report "$work/trace.hvt" --symbols "$work/System.map" >>"$work/report.times"
done
rate() { awk -v n="$RECORDS" -v s="$1" 'BEGIN {printf "%.0f", n / s}'; }
per_m() { awk -v n="$RECORDS" -v s="$1" 'BEGIN {printf "%.3f", s * 1000000 / n}'; }
dump_s=$(median <"$work/dump.times")
dumpsym_s=$(median <"$work/dumpsym.times")
report_s=$(median <"$work/report.times")
met=$(awk -v r="$ratio" 'BEGIN {print (r >= 0.5) ? "met" : "MISSED"}')

out=bench/results/host-$(date -u +%Y%m%d-%H%M%S).txt
{
	echo "# hvtrace host bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "# medians of $RUNS runs"
	printf '%-44s %14s %s\n' metric value target
	printf '%-44s %14s\n' "drain, lossless ring, 1 GiB (GB/s)" "$drain"
	printf '%-44s %14s\n' "memcpy, same bytes, one call (GB/s)" "$mcpy"
	printf '%-44s %14s %s\n' "drain / memcpy" "$ratio" ">= 0.5 ($met)"
	printf '%-44s %14s\n' "memcpy, 128 KiB chunks, in cache (GB/s)" "$cmcpy"
	printf '%-44s %14s\n' "drain / in-cache memcpy" "$cratio"
	printf '%-44s %14s\n' "hvtrace dump to /dev/null (records/s)" "$(rate "$dump_s")"
	printf '%-44s %14s\n' "hvtrace dump --symbols (records/s)" "$(rate "$dumpsym_s")"
	printf '%-44s %14s\n' "hvtrace report, 50k symbols (s per 1M rec)" "$(per_m "$report_s")"
	echo "# raw drain runs:"
	grep '^run' "$work/drain.txt" | sed 's/^/#   /'
	echo "# raw seconds ($RECORDS records) dump: $(tr '\n' ' ' <"$work/dump.times")"
	echo "# raw seconds dump --symbols: $(tr '\n' ' ' <"$work/dumpsym.times")"
	echo "# raw seconds report: $(tr '\n' ' ' <"$work/report.times")"
} | tee "$out"
echo "bench: saved $out"
