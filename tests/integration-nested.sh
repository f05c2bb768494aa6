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
# the whole outer run: its boot, then a minute and a half a test (a
# fresh-clone CI run of 2ea2e1e on a slow day took 54-214 s each and
# passed its 60 s a test after six; one restart of a silent firmware costs
# ~100 s); the runners inside stop 2 minutes earlier, so that their files
# still come back
TIMEOUT=$(((300 + 90 * want) * SCALE))

fail() { echo "FAIL nested: $*"; echo "integration-nested: 0 passed, 1 failed"; exit 1; }

for x in "$BUILD/hvtrace.efi" "$BUILD/host-tools/hvtrace" "$BUILD/tests/guest/t_basic.efi"; do
	[ -e "$x" ] || fail "$x is not built (make)"
done
mkdir -p "$BUILD/test-runs"

# what tests/nested/pin-vcpus.sh says when an inner vCPU thread was not
# alone on its outer CPU all along (the "NESTED: no vCPU thread pinned"
# line below too): a problem with the outer run
PIN_TROUBLE='no outer CPU of its own|could not be pinned|moved between outer CPUs'

# write_inner FILE QEMU_PATTERNS REC_PATTERNS: what the chroot runs: the
# project's runners, forced onto KVM
write_inner() {
	cat >"$1" <<INNER
# each inner boot takes 25-40 s under the emulated KVM (OVMF's start alone
# is ~200,000 exits to the inner QEMU: its TPM probe at 0xfed40000 and the
# ACPI PM timer reads of its delays, its variable writes to the flash,
# each exit emulated): the runners' bounds, set for TCG, are tripled
export BUILD="$BUILD" HVTRACE_ACCEL=kvm HVTRACE_TIME_SCALE=$((3 * SCALE))
# now and then an inner boot hangs in OVMF before its console is up (an
# empty serial log at the time bound; the outer kernel says nothing; seen
# in 3 of ~50 boots, root cause not found, docs/testing.md item 7):
# hvtrace.efi is not loaded yet then, so qemu.sh starts such a boot again,
# once, after 100 s, with the monitor's view of the vCPUs in its qemu.out;
# each restart is listed below
export HVTRACE_FIRMWARE_WAIT=$((100 * SCALE))
# t_rec's loop for the lossless stream: 50,000 (TCG: 200,000). Nested, with
# every stop kept (the vCPU pins), each record costs ~2 ms here (a run of
# the full loop recorded 174,593 in 6 minutes, 1.84 exits a record, and
# passed the tier's bound): still 1.6 MiB of records through a 1 MiB ring
export HVTRACE_REC_LOOP=50000
# OVMF's variable store read-only (tests/lib/qemu.sh): OVMF then keeps its
# variables in memory, and its flash writes, each an exit to the inner
# QEMU, are gone from every boot's start
export HVTRACE_VARS_READONLY=1
[ -w /dev/kvm ] && grep -q 1 /sys/module/kvm_amd/parameters/nested ||
	{ echo "NESTED: no nested KVM inside the outer guest"; exit 1; }
tests/lib/qemu.sh --which-accel
# the runs' files (serial logs, boot volumes, ivshmem channels) on the outer
# guest's tmpfs: an ivshmem file on the 9p mount is mapped shared by the
# inner QEMU and written with dd by the tests, and 9p does not keep the two
# coherent (a write-back of the mapped page undid the host's scribble of
# the channel header). Copied back every 10 s and at the end, so that the
# logs of a run the outer guest did not survive come back too.
runs=\$PWD/$BUILD/test-runs
mkdir -p /tmp/runs /tmp/back && mount --bind "\$runs" /tmp/back && mount --bind /tmp/runs "\$runs" ||
	{ echo "NESTED: cannot put \$runs on a tmpfs"; exit 1; }
back() { cp -r /tmp/runs/. /tmp/back/ 2>/dev/null; sync; }
(while sleep 10; do back; done) &
backpid=\$!
left() { local l=\$(($TIMEOUT - 120 - SECONDS)); echo \$((l > 1 ? l : 1)); }
${2:+timeout -s KILL \$(left) tests/integration.sh $2}
${3:+timeout -s KILL \$(left) tests/integration-rec.sh $3}
kill \$backpid
umount -l "\$runs" && back && umount -l /tmp/back
for f in \$(grep -lE 'the firmware printed nothing|before the firmware printed anything' /tmp/runs/*/qemu.out); do
	echo "NESTED: restarted once, the firmware silent: \${f%/qemu.out}"
done
# each inner vCPU thread on an outer CPU of its own (outer.sh sets
# HVTRACE_PIN_VCPUS; tests/nested/pin-vcpus.sh says why: else the outer
# TCG loses hvtrace's breakpoints): a run where that did not hold
for f in /tmp/runs/*/qemu.out; do
	grep -q 'pinned to outer CPU' "\$f" || echo "NESTED: no vCPU thread pinned: \${f%/qemu.out}"
	grep -E '$PIN_TROUBLE' "\$f" | sed "s|^qemu.sh: |NESTED: \${f%/qemu.out}: |"
done
INNER
}

# outer_run OUTDIR QEMU_PATTERNS REC_PATTERNS: one outer boot running the
# runners; their lines and the outer run's problems into OUTDIR
outer_run() {
	local start=$SECONDS
	write_inner "$1.inner.sh" "$2" "$3"
	tests/nested/outer.sh "$1" "$TIMEOUT" "$1.inner.sh" >"$1.outer.out"
	# the runners' own lines, as they printed them inside
	grep -E '^(PASS|FAIL|     log:|qemu.sh:|NESTED:)' "$1/console.txt"
	echo "nested: outer run $((SECONDS - start)) s (logs: $1/)"
}

# results OUTDIR: the names of the tests with a PASS or FAIL line
results() { sed -nE 's/^(PASS|FAIL) ([^ ]+).*/\2/p' "$1/console.txt"; }

echo "nested: outer QEMU (TCG) boots Debian's kernel with kvm-amd nested=1; the runners go inside"
outer_run "$OUT" "$QEMU_TESTS" "$REC_TESTS"
problems=$(sed -n 's/^nested: /; /p' "$OUT.outer.out" | tr -d '\n')
grep -q "using KVM" "$OUT/console.txt" || problems="$problems; the inner runs did not use KVM"
unpinned() { grep -qE "^NESTED: .*(no vCPU thread pinned|$PIN_TROUBLE)" "$1/console.txt" &&
	echo "; an inner vCPU thread not alone on its outer CPU (the NESTED lines above)"; }
problems="$problems$(unpinned "$OUT")"
pass=$(grep -c '^PASS' "$OUT/console.txt")
failn=$(grep -c '^FAIL' "$OUT/console.txt")

# The outer kernel panicking (seen: "corrupted stack end detected inside
# scheduler" in an inner QEMU's thread, 3 times in about 15 tier runs,
# during different tests) is the outer guest's failure, KVM's or TCG's,
# not a result of hvtrace's: the tests that had no result run again, once,
# in a new outer boot, and the panic is said on its own line. A test that
# FAILed before it keeps its FAIL.
if grep -q "the outer kernel panicked" "$OUT.outer.out"; then
	echo "NESTED: $(grep -m1 -o 'the outer kernel panicked.*' "$OUT.outer.out"); the tests without a result run again in a new outer boot"
	done_names=" $(results "$OUT" | tr '\n' ' ') "
	again_qemu="" again_rec=""
	for t in $(picked tests/integration.sh $QEMU_TESTS); do
		n=$(echo "${t#t_}" | tr _ -)
		case "$done_names" in *" $n "*) ;; *) again_qemu="$again_qemu $n\$" ;; esac
	done
	for t in $(picked tests/integration-rec.sh $REC_TESTS); do
		n=$(echo "${t#t_}" | tr _ -)
		case "$done_names" in *" $n "*) ;; *) again_rec="$again_rec $n\$" ;; esac
	done
	outer_run "$OUT-again" "$again_qemu" "$again_rec"
	problems=$(sed -n 's/^nested: /; /p' "$OUT-again.outer.out" | tr -d '\n')
	grep -q "using KVM" "$OUT-again/console.txt" || problems="$problems; the inner runs did not use KVM"
	problems="$problems$(unpinned "$OUT-again")"
	pass=$((pass + $(grep -c '^PASS' "$OUT-again/console.txt")))
	failn=$((failn + $(grep -c '^FAIL' "$OUT-again/console.txt")))
fi
[ $((pass + failn)) -ge "$want" ] || problems="$problems; $((pass + failn)) results for $want tests"
if [ -n "$problems" ]; then
	echo "FAIL nested${problems}"
	failn=$((failn + 1))
fi
echo "integration-nested: $pass passed, $failn failed"
[ "$failn" = 0 ]
