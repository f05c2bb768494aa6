#!/usr/bin/env bash
# Where the hypervisor's own instructions go while it traces t_workload
# under QEMU TCG, by function (bench/tools/hotpc.c: a TCG plugin counting
# every executed instruction by address). Under TCG the hypervisor's time
# is about proportional to the instructions it executes, and the counts,
# unlike the TSC, do not move with the machine's load: the figure to
# compare an optimisation by (docs/benchmarks.md "Where the interpreting
# engine's time goes").
# usage: bench/hotpc.sh [ENGINE [TOP]]   ENGINE: interp (default), fast,
#        reference; TOP: functions listed (default 30)
# Prints the workload's traced line, the total, and per function its share
# and its instructions per interpreted instruction (interp) or per branch.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
engine=${1:-interp}
top=${2:-30}
case $engine in interp|fast|reference) ;; *) echo "usage: bench/hotpc.sh [interp|fast|reference [TOP]]" >&2; exit 2 ;; esac
[ -f "$BUILD/hvtrace.efi" ] && [ -f "$BUILD/hv/hv.elf" ] || { echo "hotpc: build first (make all)" >&2; exit 1; }
work=$BUILD/bench-hotpc/$engine
rm -rf "$work"
mkdir -p "$work/esp/EFI/BOOT" "$work/esp/EFI/hvtrace"
plugin=$BUILD/bench/hotpc.so
mkdir -p "$(dirname "$plugin")"
gcc -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -pthread -o "$plugin" bench/tools/hotpc.c
cp "$BUILD/hvtrace.efi" "$work/esp/EFI/BOOT/BOOTX64.EFI"
cp "$BUILD/tests/guest/t_workload.efi" "$work/esp/EFI/hvtrace/"
printf 'next = \\EFI\\hvtrace\\t_workload.efi\nengine = %s\nenable = yes\n' "$engine" >"$work/esp/EFI/hvtrace/hvtrace.cfg"
# the hypervisor's code: its ELF's first loaded segment (hv/hv.ld's link address)
lo=$(readelf -lW "$BUILD/hv/hv.elf" | awk '$1 == "LOAD" {print $3; exit}')
HVTRACE_QUIET_ACCEL=1 tests/lib/qemu.sh --dir "$work/esp" --log "$work/log" --timeout 300 -- \
	-plugin "$plugin,lo=$lo,out=$work/hot.txt" >/dev/null 2>&1 || true
grep -a "WORKLOAD: traced count" "$work/log" | tr -d '\r' || { echo "hotpc: the workload did not complete; log $work/log" >&2; exit 1; }
[ -s "$work/hot.txt" ] || { echo "hotpc: no counts written ($work/hot.txt)" >&2; exit 1; }
per=$(grep -a "WORKLOAD: traced interp insns" "$work/log" | tr -d '\r' | sed -nE 's/.* insns ([0-9]+) .*/\1/p' | head -1)
what="per interpreted instruction"
if [ "$engine" != interp ] || [ -z "$per" ] || [ "$per" = 0 ]; then
	per=$(grep -a "WORKLOAD: traced count" "$work/log" | tr -d '\r' | sed -nE 's/.* branches ([0-9]+).*/\1/p')
	what="per recorded branch"
fi
# symbolize: the function symbols by address, then each counted address to
# the last symbol at or below it (both lists sorted by address)
nm -n "$BUILD/hv/hv.elf" | awk '$2 ~ /^[tTwW]$/ {print $1, $3}' >"$work/syms.txt"
awk -v per="$per" -v top="$top" -v what="$what" '
	# the low 32 bits: every address here shares the high half (awk has doubles)
	function hex(s,   i, c, v) { v = 0; s = tolower(substr(s, length(s) - 7)); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c } return v }
	FNR == NR { sa[++ns] = hex($1); sn[ns] = $2; next }
	{ a = hex($1); while (k < ns && sa[k + 1] <= a) k++; f[k ? sn[k] : "?"] += $2; total += $2 }
	END {
		printf "hypervisor instructions: %d (%.0f %s)\n", total, per ? total / per : 0, what
		n = 0; for (x in f) { n++; nm[n] = x; c[n] = f[x] }
		for (i = 1; i <= n && i <= top; i++) { b = i; for (j = i + 1; j <= n; j++) if (c[j] > c[b]) b = j
			t = c[i]; c[i] = c[b]; c[b] = t; t = nm[i]; nm[i] = nm[b]; nm[b] = t
			printf "  %5.1f%%  %8.1f  %s\n", 100 * c[i] / total, per ? c[i] / per : 0, nm[i] }
	}' "$work/syms.txt" <(sort "$work/hot.txt") 
