#!/usr/bin/env bash
# make bench, part 3: what one intercepted CPUID and one traced branch cost
# under QEMU TCG and under Linux's real KVM with nested SVM, in one run, on
# the same guest program (tests/guest/t_workload.c: its CPUID loop, its
# Collatz loop traced by the fast engine, the TSC's rate against the
# firmware's Stall). The KVM host is the nested tier's
# (tests/nested/outer.sh: KVM inside an outer QEMU TCG), so its absolute
# figures are emulated too: they compare the two paths through hvtrace,
# not hardware. Per run, one boot with hvtrace (enable = yes, fast engine)
# and one without (enable = no: the CPUID loop untouched by hvtrace).
# Medians of BENCH_NESTED_RUNS (default 3). Saved in bench/results/.
#
#   bench/nested.sh            both, and the table
#   bench/nested.sh --inner    (run by outer.sh) the KVM half alone
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${BENCH_NESTED_RUNS:-3}
export HVTRACE_QUIET_ACCEL=1
work=$BUILD/bench-nested

field() { # LOG KEY: the number after KEY on its WORKLOAD: line
	grep -a "WORKLOAD: " "$1" | tr -d '\r' | sed -nE "s/.*WORKLOAD: $2 ([0-9]+).*/\\1/p" | head -1
}
traced() { # LOG KEY: KEY's number on the traced pass's line
	grep -a "WORKLOAD: traced " "$1" | tr -d '\r' | sed -nE "s/.* $2 ([0-9]+).*/\\1/p" | head -1
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# measure ACCEL: RUNS pairs of boots under ACCEL; one line per pair in
# $work/ACCEL.txt: cpuid-ticks-with cpuid-ticks-without untraced traced
# branches exits tsc_khz cpuid-count
measure() {
	local accel=$1 i on off
	: >"$work/$accel.txt"
	for i in $(seq 1 "$RUNS"); do
		on=$work/$accel-on-$i.log off=$work/$accel-off-$i.log
		HVTRACE_ACCEL=$accel tests/lib/qemu.sh --dir "$work/on" --log "$on" --timeout 600 >/dev/null 2>&1
		HVTRACE_ACCEL=$accel tests/lib/qemu.sh --dir "$work/off" --log "$off" --timeout 600 >/dev/null 2>&1
		local line="$(field "$on" "cpuid count [0-9]+ tsc") $(field "$off" "cpuid count [0-9]+ tsc")"
		line="$line $(field "$on" "untraced count [0-9]+ steps [0-9]+ tsc") $(traced "$on" tsc)"
		line="$line $(traced "$on" branches) $(traced "$on" exits) $(field "$on" tsc_khz) $(field "$on" "cpuid count")"
		if [ "$(echo $line | wc -w)" != 8 ] || ! grep -qa "hypervisor running" "$on"; then
			echo "bench: $accel run $i did not complete; logs $on $off" >&2
			return 1
		fi
		echo "$line" >>"$work/$accel.txt"
		echo "bench: $accel run $i: $line" >&2
	done
}

if [ "${1:-}" = --inner ]; then
	measure kvm
	exit
fi

rm -rf "$work"
mkdir -p "$work"
mkesp() { # DIR ENABLE CMDLINE
	mkdir -p "$1/EFI/BOOT" "$1/EFI/hvtrace"
	cp "$BUILD/hvtrace.efi" "$1/EFI/BOOT/BOOTX64.EFI"
	cp "$BUILD/tests/guest/t_workload.efi" "$1/EFI/hvtrace/"
	printf 'next = \\EFI\\hvtrace\\t_workload.efi\nengine = fast\nenable = %s\ncmdline = %s\n' "$2" "$3" \
		>"$1/EFI/hvtrace/hvtrace.cfg"
}
mkesp "$work/on" yes ""
mkesp "$work/off" no untraced

start=$SECONDS
measure tcg || exit 1
tcg_s=$((SECONDS - start))
start=$SECONDS
echo 'exec bench/nested.sh --inner' >"$work/inner.sh"
tests/nested/outer.sh "$work/outer" $((400 * RUNS)) "$work/inner.sh" || {
	echo "bench: the nested-KVM half failed; $work/outer/console.txt:" >&2
	grep -E '^bench:' "$work/outer/console.txt" >&2
	exit 1
}
kvm_s=$((SECONDS - start))

col() { cut -d' ' -f"$2" "$work/$1.txt" | median; }
ns() { # TICKS PER KHZ -> nanoseconds for one of PER
	awk -v t="$1" -v n="$2" -v k="$3" 'BEGIN {printf "%.0f", t / n / k * 1e6}'
}
row() { # ACCEL -> "cpuid-with cpuid-without branch exits/branch" in ns
	local a=$1 k n br
	k=$(col "$a" 7) n=$(col "$a" 8) br=$(col "$a" 5)
	echo "$(ns "$(col "$a" 1)" "$n" "$k") $(ns "$(col "$a" 2)" "$n" "$k")" \
		"$(ns "$(awk -v t="$(col "$a" 4)" -v u="$(col "$a" 3)" 'BEGIN {print t - u}')" "$br" "$k")" \
		"$(awk -v x="$(col "$a" 6)" -v b="$br" 'BEGIN {printf "%.3f", x / b}')"
}
set -- $(row tcg)
tcg_row=("$@")
set -- $(row kvm)
kvm_row=("$@")
out=bench/results/nested-$(date -u +%Y%m%d-%H%M%S).txt
{
	echo "# hvtrace nested-KVM bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}'); medians of $RUNS"
	echo "# TCG: QEMU -accel tcg -cpu max here ($tcg_s s); KVM: Linux $(cat "$BUILD/cache/linux/version") kvm_amd nested=1 inside QEMU TCG, -accel kvm -cpu host ($kvm_s s, outer boot included)"
	echo "# guest: t_workload, $(col tcg 8) CPUIDs (leaf 0) and $(col tcg 5) branches (fast engine); ns from the guest's TSC rate"
	printf '%-40s %12s %12s %8s\n' metric "TCG (ns)" "KVM (ns)" "KVM/TCG"
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
	printf '%-40s %12s %12s %8s\n' "one CPUID, intercepted by hvtrace" "${tcg_row[0]}" "${kvm_row[0]}" "$(ratio "${kvm_row[0]}" "${tcg_row[0]}")"
	printf '%-40s %12s %12s %8s\n' "one CPUID, without hvtrace" "${tcg_row[1]}" "${kvm_row[1]}" "$(ratio "${kvm_row[1]}" "${tcg_row[1]}")"
	printf '%-40s %12s %12s %8s\n' "one traced branch, fast engine" "${tcg_row[2]}" "${kvm_row[2]}" "$(ratio "${kvm_row[2]}" "${tcg_row[2]}")"
	printf '%-40s %12s %12s\n' "exits per recorded branch" "${tcg_row[3]}" "${kvm_row[3]}"
	echo "# raw TCG (cpuid-with cpuid-without untraced traced branches exits tsc_khz n): $(tr '\n' ',' <"$work/tcg.txt")"
	echo "# raw KVM: $(tr '\n' ',' <"$work/kvm.txt")"
} | tee "$out"
echo "bench: saved $out"
