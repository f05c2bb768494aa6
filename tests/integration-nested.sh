#!/usr/bin/env bash
# hvtrace under Linux's real KVM with nested SVM: no machine here offers
# nested KVM, so tests/nested/outer.sh makes one (an outer QEMU, TCG,
# -cpu max, booting Debian's kernel with kvm-amd nested=1; the workaround
# the outer QEMU needs is there too) and runs the project's own runners
# inside it with HVTRACE_ACCEL=kvm, so the inner QEMU runs OVMF and hvtrace
# with -accel kvm -cpu host, as on a user's nested-KVM host. The inner
# runs' logs land in build/test-runs/ as usual; the outer guest's console
# and kernel log in build/test-runs/nested/.
#
#   tests/integration-nested.sh [--all] [--list] [TEST...]
#
# Default (make test's nested tier): one boot of each thing issue 11 names,
# about 5 minutes here. --all (make test-nested) adds the rest below.
# TEST... picks tests by the runners' own names instead.
#
# Environment: BUILD (default build), HVTRACE_TIME_SCALE.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SCALE=${HVTRACE_TIME_SCALE:-1}
OUT=$BUILD/test-runs/nested

# What runs inside: the runners' own test names (a trailing $ anchors).
# make test: the EFI guest program, an SMP guest, a triple fault, BTS under
# both engines and their comparison, Linux to its shell, the recorder with
# exact counts, and a lossless ivshmem channel read by hvtrace record.
QEMU_TESTS="svm-guest-basic$ svm-smp$ svm-triple-fault$ svm-bts-reference$ svm-bts-fast$ svm-bts-engines-agree$ linux-boot$"
REC_TESTS="svm-rec-basic-fast$ svm-rec-lossless$"
# --all adds the hostile guest and the scribbled channel, hot-plug, a halt
# on triple fault, Linux on 2 vCPUs and the lossless stream with 2 vCPUs.
# The scribbled channel is here, not in make test: in a CI run the
# tier passed its time bound inside it, and once here the outer kernel
# panicked during it (docs/testing.md item 7).
MORE_QEMU="svm-smp-hotplug$ svm-hostile$ svm-triple-fault-halt$ linux-smp$"
MORE_REC="svm-rec-hostile-channel$ svm-rec-lossless-smp$"

if [ "${1:-}" = --all ]; then
	QEMU_TESTS="$QEMU_TESTS $MORE_QEMU" REC_TESTS="$REC_TESTS $MORE_REC"
	shift
fi
# TEST...: each goes to the runner whose --list has it
if [ $# -gt 0 ] && [ "$1" != --list ]; then
	QEMU_TESTS="" REC_TESTS=""
	for t in "$@"; do
		if tests/integration.sh --list | grep -q -- "${t//-/_}"; then QEMU_TESTS="$QEMU_TESTS $t"
		elif tests/integration-rec.sh --list | grep -q -- "${t//-/_}"; then REC_TESTS="$REC_TESTS $t"
		else echo "integration-nested.sh: no test $t in tests/integration.sh or tests/integration-rec.sh" >&2; exit 2
		fi
	done
fi
# picked RUNNER PATTERN...: the runner's tests the patterns select, as
# the runner itself picks them (tests/lib/runner.sh runner_main)
picked() {
	local runner=$1 t p
	shift
	for t in $("$runner" --list); do for p in "$@"; do
		p=${p//-/_}
		case "$p" in
		*'$') case "$t" in *"${p%'$'}") echo "$t" ;; esac ;;
		*) case "$t" in *"$p"*) echo "$t" ;; esac ;;
		esac
	done; done
}
selected=$( (picked tests/integration.sh $QEMU_TESTS; picked tests/integration-rec.sh $REC_TESTS) | sort -u)
if [ "${1:-}" = --list ]; then
	echo "$selected" | sed 's/^t_//; s/_/-/g'
	exit 0
fi
want=$(echo "$selected" | grep -c .)
# the whole outer run: its boot, then about a minute a test (one restart
# of a silent firmware costs ~100 s); the runners inside stop 2 minutes
# earlier, so that their files still come back
TIMEOUT=$(((300 + 60 * want) * SCALE))

fail() { echo "FAIL nested: $*"; echo "integration-nested: 0 passed, 1 failed"; exit 1; }

for x in "$BUILD/hvtrace.efi" "$BUILD/host-tools/hvtrace" "$BUILD/tests/guest/t_basic.efi"; do
	[ -e "$x" ] || fail "$x is not built (make)"
done
mkdir -p "$BUILD/test-runs"

# what the chroot runs: the project's runners, forced onto KVM
inner=$BUILD/test-runs/nested-inner.sh
cat >"$inner" <<INNER
# each inner boot takes 25-40 s under the emulated KVM (OVMF's start alone
# is ~200,000 exits to the inner QEMU: its TPM probe at 0xfed40000 and the
# ACPI PM timer reads of its delays, its variable writes to the flash,
# each exit emulated): the runners' bounds, set for TCG, are tripled
export BUILD="$BUILD" HVTRACE_ACCEL=kvm HVTRACE_TIME_SCALE=$((3 * SCALE))
# now and then an inner boot hangs in OVMF before its console is up (an
# empty serial log at the time bound; the outer kernel says nothing; seen
# in 3 of ~50 boots, root cause not found, docs/testing.md item 7):
# hvtrace.efi is not loaded yet then, so qemu.sh starts such a boot again,
# once, after 100 s; each restart is listed below
export HVTRACE_FIRMWARE_WAIT=$((100 * SCALE))
[ -w /dev/kvm ] && grep -q 1 /sys/module/kvm_amd/parameters/nested ||
	{ echo "NESTED: no nested KVM inside the outer guest"; exit 1; }
tests/lib/qemu.sh --which-accel
# the runs' files (serial logs, boot volumes, ivshmem channels) on the outer
# guest's tmpfs, copied back at the end: an ivshmem file on the 9p mount
# is mapped shared by the inner QEMU and written with dd by the tests, and
# 9p does not keep the two coherent (a write-back of the mapped page undid
# the host's scribble of the channel header)
runs=\$PWD/$BUILD/test-runs
mkdir -p /tmp/runs && mount --bind /tmp/runs "\$runs" ||
	{ echo "NESTED: cannot put \$runs on a tmpfs"; exit 1; }
left() { local l=\$(($TIMEOUT - 120 - SECONDS)); echo \$((l > 1 ? l : 1)); }
${QEMU_TESTS:+timeout -s KILL \$(left) tests/integration.sh $QEMU_TESTS}
${REC_TESTS:+timeout -s KILL \$(left) tests/integration-rec.sh $REC_TESTS}
umount -l "\$runs" && cp -r /tmp/runs/. "\$runs/"
for f in \$(grep -l 'the firmware printed nothing' /tmp/runs/*/qemu.out); do
	echo "NESTED: restarted once, the firmware silent: \${f%/qemu.out}"
done
INNER

start=$SECONDS
echo "nested: outer QEMU (TCG) boots Debian's kernel with kvm-amd nested=1; the runners go inside"
tests/nested/outer.sh "$OUT" "$TIMEOUT" "$inner" >"$BUILD/test-runs/nested-outer.out"
# the runners' own lines, as they printed them inside
grep -E '^(PASS|FAIL|     log:|qemu.sh:|NESTED:)' "$OUT/console.txt"
echo "nested: outer run $((SECONDS - start)) s (logs: $OUT/)"

problems=$(sed -n 's/^nested: /; /p' "$BUILD/test-runs/nested-outer.out" | tr -d '\n')
grep -q "using KVM" "$OUT/console.txt" || problems="$problems; the inner runs did not use KVM"
pass=$(grep -c '^PASS' "$OUT/console.txt")
failn=$(grep -c '^FAIL' "$OUT/console.txt")
[ $((pass + failn)) -ge "$want" ] || problems="$problems; $((pass + failn)) results for $want tests"
if [ -n "$problems" ]; then
	echo "FAIL nested${problems}"
	failn=$((failn + 1))
fi
echo "integration-nested: $pass passed, $failn failed"
[ "$failn" = 0 ]
