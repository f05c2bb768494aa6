#!/usr/bin/env bash
# make bench, part 2: the branch engines on a CPU-bound guest workload
# (tests/guest/t_workload.c: Collatz steps, ~108k branches), each mode timed
# by the guest's TSC in the same boot as its untraced baseline:
#   fast       - hvtrace's fast engine (BTS on)
#   reference  - hvtrace's reference engine (single-steps everything)
#   interp     - hvtrace's interpreting engine (runs the common
#                instructions in the hypervisor, the fast engine the rest)
#   qemu-log   - no hvtrace; QEMU's own execution log, -d exec,nochain,
#                restricted to the workload image with -dfilter (the
#                cheapest setting of what a QEMU user would reach for)
# Reports medians of BENCH_RUNS (default 3), slowdowns vs untraced, exits
# per recorded branch, fast vs reference and vs qemu-log, and where the
# traced runs' time went by the hypervisor's own count (ABI 1.6 time
# buckets, per exit: docs/benchmarks.md). Saved in bench/results/.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${BENCH_RUNS:-3}
export HVTRACE_QUIET_ACCEL=1
work=$BUILD/bench-engine
rm -rf "$work"
mkdir -p "$work"

mkesp() { # DIR ENGINE ENABLE OPTIONS
	mkdir -p "$1/EFI/BOOT" "$1/EFI/hvtrace"
	cp "$BUILD/hvtrace.efi" "$1/EFI/BOOT/BOOTX64.EFI"
	cp "$BUILD/tests/guest/t_workload.efi" "$1/EFI/hvtrace/"
	printf 'next = \\EFI\\hvtrace\\t_workload.efi\nengine = %s\nenable = %s\ncmdline = %s\n' \
		"$2" "$3" "$4" >"$1/EFI/hvtrace/hvtrace.cfg"
}
mkesp "$work/fast" fast yes ""
mkesp "$work/reference" reference yes ""
mkesp "$work/interp" interp yes ""
mkesp "$work/qemu" fast no untraced

PROF="t_guest t_exit t_entry t_decode t_record t_walk t_handler"
field() { # LOG MODE KEY
	grep -a "WORKLOAD: $2 " "$1" | tr -d '\r' | sed -nE "s/.* $3 ([0-9]+).*/\\1/p" | head -1
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# where the workload image lands without hvtrace (its reserve moves it):
# QEMU's log filter needs the address before the logged run starts
tests/lib/qemu.sh --dir "$work/qemu" --log "$work/probe.log" --timeout 120 >/dev/null 2>&1
img=$(grep -a "WORKLOAD: image" "$work/probe.log" | tr -d '\r' | awk '{print $5, $7}')
[ -n "$img" ] || { echo "bench: probe run failed; log $work/probe.log" >&2; exit 1; }

for i in $(seq 1 "$RUNS"); do
	for mode in fast reference interp; do
		log=$work/$mode-$i.log
		tests/lib/qemu.sh --dir "$work/$mode" --log "$log" --timeout 300 >/dev/null 2>&1
		u=$(field "$log" untraced tsc) t=$(field "$log" traced tsc)
		b=$(field "$log" traced branches) x=$(field "$log" traced exits)
		if [ -z "$u" ] || [ -z "$t" ] || [ -z "$b" ]; then
			echo "bench: $mode run $i did not complete; log $log" >&2
			exit 1
		fi
		echo "$u $t $b $x" >>"$work/$mode.txt"
		# the time buckets of the traced run, in the order PROF lists them
		p=
		for k in pexits $PROF; do p="$p $(field "$log" traced "$k")"; done
		echo "${p# }" >>"$work/$mode-prof.txt"
		echo "$(field "$log" traced reused) $(field "$log" traced decoded)" >>"$work/$mode-blocks.txt"
		# engine = interp's coverage (ABI 1.8) and its leave reasons (the hypervisor's log)
		echo "$(field "$log" traced insns) $(field "$log" traced ibranches) $(field "$log" traced left)" >>"$work/$mode-interp.txt"
		grep -a 'hvtrace: interp: vcpu 0' "$log" | tr -d '\r' | tail -3 >"$work/$mode-reasons.txt"
		echo "bench: $mode run $i: untraced $u, traced $t TSC ticks, $b branches, $x exits" >&2
	done
	# QEMU's own log over the same work, filtered to the workload image
	set -- $img
	log=$work/qemu-$i.log
	tests/lib/qemu.sh --dir "$work/qemu" --log "$log" --timeout 300 -- \
		-d exec,nochain -dfilter "0x$1+0x$2" -D "$work/qemu-exec.log" >/dev/null 2>&1
	q=$(field "$log" untraced tsc)
	lines=$(wc -l <"$work/qemu-exec.log")
	rm -f "$work/qemu-exec.log"
	[ -n "$q" ] || { echo "bench: qemu-log run $i did not complete; log $log" >&2; exit 1; }
	echo "$q $lines" >>"$work/qemu.txt"
	echo "bench: qemu-log run $i: $q TSC ticks, $lines log lines" >&2
done

# every engine must have recorded the same branches in every run
if [ "$(cut -d' ' -f3 "$work/fast.txt" | sort -u)" != "$(cut -d' ' -f3 "$work/reference.txt" | sort -u)" ] ||
	[ "$(cut -d' ' -f3 "$work/interp.txt" | sort -u)" != "$(cut -d' ' -f3 "$work/reference.txt" | sort -u)" ] ||
	[ "$(cut -d' ' -f3 "$work/fast.txt" | sort -u | wc -l)" != 1 ]; then
	echo "bench: the engines recorded different branch counts: fast $(cut -d' ' -f3 "$work/fast.txt" | tr '\n' ' '), reference $(cut -d' ' -f3 "$work/reference.txt" | tr '\n' ' '), interp $(cut -d' ' -f3 "$work/interp.txt" | tr '\n' ' ')" >&2
	exit 1
fi

col() { cut -d' ' -f"$2" "$work/$1.txt" | median; }
# one line per bucket: ticks per exit and share of the run's total, from
# the run whose total is the median (so the buckets add up)
breakdown() { # MODE
	awk -v names="exits $PROF" 'BEGIN {n = split(names, nm, " ")}
		{t = 0; for (i = 2; i <= NF; i++) t += $i; line[NR] = $0; tot[NR] = t}
		END {
			# the median run by total time
			for (i = 1; i <= NR; i++) idx[i] = i
			for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++)
				if (tot[idx[j]] < tot[idx[i]]) {k = idx[i]; idx[i] = idx[j]; idx[j] = k}
			m = idx[int((NR + 1) / 2)]
			split(line[m], f, " ")
			if (f[1] == 0) {print "  (no exits counted)"; exit}
			for (i = 2; i <= n; i++)
				printf "  %-10s %10.0f  %5.1f%%\n", substr(nm[i], 3), f[i] / f[1], 100 * f[i] / tot[m]
			printf "  %-10s %10.0f  (%d exits)\n", "total", tot[m] / f[1], f[1]
		}' "$work/$1-prof.txt"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a / b}'; }
base=$(col fast 1)
fast=$(col fast 2) ref=$(col reference 2) qemu=$(col qemu 1) interp=$(col interp 2)
br=$(col fast 3) fx=$(col fast 4) rx=$(col reference 4) ix=$(col interp 4)
icol() { cut -d' ' -f"$1" "$work/interp-interp.txt" | median; }
out=bench/results/engine-$(date -u +%Y%m%d-%H%M%S).txt
{
	echo "# hvtrace engine bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, QEMU TCG, guest TSC ticks, medians of $RUNS"
	echo "# workload: t_workload (Collatz steps), $br branches recorded per traced run"
	printf '%-34s %16s %10s\n' mode "TSC ticks" "vs untraced"
	printf '%-34s %16s %10s\n' "untraced" "$base" 1.0
	printf '%-34s %16s %10s\n' "fast engine" "$fast" "$(ratio "$fast" "$base")"
	printf '%-34s %16s %10s\n' "reference engine" "$ref" "$(ratio "$ref" "$base")"
	printf '%-34s %16s %10s\n' "interp engine" "$interp" "$(ratio "$interp" "$base")"
	printf '%-34s %16s %10s\n' "QEMU -d exec,nochain (-dfilter)" "$qemu" "$(ratio "$qemu" "$base")"
	echo "exits per recorded branch: fast $(awk -v a="$fx" -v b="$br" 'BEGIN {printf "%.3f", a / b}') (target <= 1.0), reference $(awk -v a="$rx" -v b="$br" 'BEGIN {printf "%.3f", a / b}')"
	echo "fast engine time / reference engine time: $(awk -v a="$fast" -v b="$ref" 'BEGIN {printf "%.3f", a / b}') (issue #16 target <= 0.15)"
	echo "fast engine time / QEMU log time: $(awk -v a="$fast" -v b="$qemu" 'BEGIN {printf "%.2f", a / b}') (target <= 1.0)"
	echo "exits per recorded branch: interp $(awk -v a="$ix" -v b="$br" 'BEGIN {printf "%.3f", a / b}') (issue #24 target <= 0.05)"
	echo "interp engine time / reference engine time: $(awk -v a="$interp" -v b="$ref" 'BEGIN {printf "%.3f", a / b}') (issue #24 target <= 0.02)"
	echo "interp engine time / fast engine time: $(awk -v a="$interp" -v b="$fast" 'BEGIN {printf "%.3f", a / b}')"
	echo "interp coverage (medians): $(icol 1) instructions and $(icol 2) branches interpreted, $(icol 3) instructions left to the processor"
	echo "interp, the last run's counts since boot:"
	sed 's/^hvtrace: interp: /  /' "$work/interp-reasons.txt"
	for mode in fast reference interp; do
		echo "$mode engine, TSC ticks per exit by the hypervisor's count (median run by total):"
		breakdown "$mode"
	done
	echo "fast engine decoded blocks: reused $(cut -d' ' -f1 "$work/fast-blocks.txt" | median), decoded $(cut -d' ' -f2 "$work/fast-blocks.txt" | median) (medians)"
	echo "# raw fast (untraced traced branches exits): $(tr '\n' ',' <"$work/fast.txt")"
	echo "# raw reference: $(tr '\n' ',' <"$work/reference.txt")"
	echo "# raw qemu-log (ticks lines): $(tr '\n' ',' <"$work/qemu.txt")"
	echo "# raw fast buckets (exits $PROF): $(tr '\n' ',' <"$work/fast-prof.txt")"
	echo "# raw reference buckets: $(tr '\n' ',' <"$work/reference-prof.txt")"
	echo "# raw interp: $(tr '\n' ',' <"$work/interp.txt")"
	echo "# raw interp buckets: $(tr '\n' ',' <"$work/interp-prof.txt")"
} | tee "$out"
echo "bench: saved $out"
