#!/usr/bin/env bash
# Runs every test tier that `make test` covers and sums their closing
# "N passed, M failed" lines into one. Tiers: the hypervisor's layers
# (scripts/check-layers.sh), host unit tests, the decoder's differential
# test (bounded sample; each run one test, its strings counted apart), the
# host tools (libhvtrace, hvtrace), QEMU integration tests (Linux's perf
# in the guest among them: tests/integration-perf.sh), Bochs (VMX)
# integration tests, the differential tier (guest programs with and
# without the hypervisor, idle and traced) and a whole boot traced (the
# small Linux: tests/integration-boot.sh). The tests under Linux's real
# KVM with nested SVM inside QEMU TCG (tests/integration-nested.sh) are
# make test-nested's: the emulated nested machine itself failed too often
# for make test (docs/testing.md item 7).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
log=$BUILD/test-runs/summary.txt
mkdir -p "$BUILD/test-runs"
: >"$log"

tier() {
	local name=$1
	shift
	echo "== $name"
	local tmp=$BUILD/test-runs/tier-$name.out rc p f
	mkdir -p "$(dirname "$tmp")"
	"$@" 2>&1 | tee "$tmp"
	rc=${PIPESTATUS[0]}
	# every "X passed, Y failed" line of the tier counts
	p=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/p' "$tmp" | awk '{s += $1} END {print s + 0}')
	f=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/p' "$tmp" | awk '{s += $1} END {print s + 0}')
	# a tier that ran nothing, or exited non-zero with no failure counted, failed
	if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	echo "$name: $p passed, $f failed" >>"$log"
}

# the unit-test binaries tests/unit/unit.mk builds (make test-run passes them)
[ -n "${UNIT_BINS:-}" ] || { echo "run-all.sh: UNIT_BINS is empty: run it through 'make test'" >&2; exit 2; }
# includes and symbols of the objects make just built
tier layers scripts/check-layers.sh hv "$BUILD/hv"
for t in $UNIT_BINS; do
	tier "unit/$(basename "$t")" "$t"
done
if [ -f tests/unit/decode.mk ]; then
	tier "unit/decode" make --no-print-directory -s test-decode
fi
# libhvtrace unit tests and the hvtrace CLI script (host-tools/tools.mk)
tier host-tools make --no-print-directory -s test-host-tools
# The emulator tiers in two streams at once (issue #27 item 4: make test's
# time on a 2-core machine; each emulator runs one processor's thread most
# of the time): QEMU's tiers in this shell, Bochs's (VMX), the differential
# tier and the whole boot in a second one, whose output follows when both
# are done (its log: test-runs/stream-2.out). HVTRACE_TEST_STREAMS=1 runs
# them one after another, as before.
stream2() {
	tier integration-vmx tests/integration-vmx.sh
	tier integration-diff tests/integration-diff.sh
	# a whole boot traced, firmware to /init, with the small Linux (Debian's
	# kernel: make test-boot)
	tier integration-boot tests/integration-boot.sh tiny
}
s2out=$BUILD/test-runs/stream-2.out
if [ "${HVTRACE_TEST_STREAMS:-2}" = 1 ]; then
	stream2
else
	echo "== integration-vmx, integration-diff, integration-boot: in a second stream (output at the end: $s2out)"
	stream2 >"$s2out" 2>&1 &
	s2pid=$!
fi
tier integration tests/integration.sh
tier integration-rec tests/integration-rec.sh
tier integration-perf tests/integration-perf.sh
if [ -n "${s2pid:-}" ]; then
	wait "$s2pid"
	echo "== the second stream's output"
	cat "$s2out"
fi

echo
cat "$log"
# the totals, from every tier's line (both streams wrote them)
total_pass=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
total_fail=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$log" | awk '{s += $1} END {print s + 0}')
tier_fail=$(awk '/: [0-9]+ passed, [0-9]+ failed$/ && $(NF - 1) != 0 {sub(":", "", $1); printf " %s", $1}' "$log")
[ -z "$tier_fail" ] || echo "failed tiers:$tier_fail"
echo "make test: $total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
