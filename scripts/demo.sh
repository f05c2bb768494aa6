#!/usr/bin/env bash
# make demo: what hvtrace is for, in three steps and well under two
# minutes on a 2-core machine (QEMU's TCG unless the host offers nested
# KVM):
#   1. Debian's Linux boots under hvtrace on two processors, its serial
#      console live; its /init checks it runs as a guest and prints the
#      kernel's symbols (hvtrace-agent symbols, hidden from the terminal),
#      which `hvtrace symbols` turns into a map;
#   2. the same kernel boots again, traced from start_kernel for
#      DEMO_RECORDS branch records (default 100000) that `hvtrace record`
#      drains from an ivshmem channel into a trace file, none lost;
#   3. `hvtrace report --calls` shows the start of the kernel's call
#      history with its symbols, `hvtrace export` writes a Perfetto file.
# Any step that fails ends the demo with a line naming the cause and exit
# status 1. Files: build/demo/ (serial logs, boot.trace, boot.json).
# Environment: BUILD (default build), DEMO_RECORDS, DEMO_OUT (the files'
# directory; tests/integration.sh's `demo` test uses its own).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RECORDS=${DEMO_RECORDS:-100000}
HVTRACE=$BUILD/host-tools/hvtrace
out=${DEMO_OUT:-$BUILD/demo}
version=$(cat "$BUILD/cache/linux/version")
rm -rf "$out"
mkdir -p "$out"

fail() {
	echo "demo: FAILED: $*"
	exit 1
}

# volume DIR CONFIG-LINES...: a boot volume with hvtrace as the firmware's
# boot program, Debian's kernel and the test initramfs, and hvtrace.cfg
volume() {
	local d=$1
	shift
	mkdir -p "$d/EFI/BOOT" "$d/EFI/hvtrace" "$d/EFI/linux"
	cp "$BUILD/hvtrace.efi" "$d/EFI/BOOT/BOOTX64.EFI"
	cp "$BUILD/cache/linux/vmlinuz" "$BUILD/initrd.gz" "$d/EFI/linux/"
	{
		echo '# hvtrace demo configuration (see docs/config.md)'
		echo 'next = \EFI\linux\vmlinuz'
		printf '%s\n' "$@"
	} >"$d/EFI/hvtrace/hvtrace.cfg"
}
cmdline='cmdline = initrd=\EFI\linux\initrd.gz console=ttyS0,115200 panic=-1 nokaslr'

# --- 1. a boot, live ---------------------------------------------------------
echo "demo: [1/3] booting OVMF -> hvtrace.efi -> Linux $version in QEMU, two processors (up to 120 s)"
volume "$out/esp1" "$cmdline hvtrace.smp hvtrace.kallsyms" 'memory = 32M' 'log = info'
log1=$out/serial-boot.log
tests/lib/qemu.sh --dir "$out/esp1" --log "$log1" --timeout 120 --tee --smp 2 --cpu-flags -hypervisor |
	awk '/HVTRACE-KSYMS-BEGIN/ { skip = 1; n = 0 }
	     skip { n++ } !skip { print; fflush() }
	     /HVTRACE-KSYMS-END/ { skip = 0; printf "(%d lines of the kernel'\''s symbols for the host, not shown)\n", n; fflush() }'
rc=${PIPESTATUS[0]}
echo
[ "$rc" = 124 ] && fail "QEMU did not finish the first boot within 120 s (serial log: $log1)"
grep -qa "all 2 processors are under the hypervisor" "$log1" && grep -qa "cpu flag hypervisor: yes" "$log1" &&
	grep -qa "HVTRACE-GUEST: smp cpu 1 apicid 1 agent 1" "$log1" && grep -qa "HVTRACE-GUEST: done" "$log1" ||
	fail "Linux did not boot under hvtrace (serial log: $log1)"
echo "demo: Linux ran its /init on both processors as guests of hvtrace and powered off"
# named after the trace, so that hvtrace report, dump and export find it
map=$out/boot.trace.map
"$HVTRACE" symbols "$log1" -o "$map" >"$out/symbols.out" 2>&1 ||
	fail "no kernel symbols from the first boot: $(tail -1 "$out/symbols.out") (serial log: $log1)"
sk=$(awk '$3 == "start_kernel" { print $1; exit }' "$map")
[ -n "$sk" ] || fail "no start_kernel in $map"
echo "demo: $(tail -1 "$out/symbols.out"); start_kernel at 0x$sk (nokaslr)"

# --- 2. the same kernel traced from start_kernel -----------------------------
echo
echo "demo: [2/3] booting it again, traced from start_kernel for $RECORDS branch records;"
echo "      hvtrace record drains them from an ivshmem channel while the guest runs (up to 120 s)"
volume "$out/esp2" "$cmdline" 'memory = 32M' 'stream.size = 4M' 'stream.wait = 2s' \
	"trace.start = 0x$sk" "trace.stop = records:$RECORDS" 'channel = ivshmem'
log2=$out/serial-trace.log shm=$out/channel.shm trace=$out/boot.trace
truncate -s 16M "$shm"
# the reader first: it waits for the hypervisor to lay out the channel,
# and ends by itself once tracing stopped and the rings are drained
timeout 170 "$HVTRACE" record --shm "$shm" -o "$trace" --wait 120 --quiet >"$out/record.out" 2>&1 &
rpid=$!
# QEMU stops once the recorder is done: the rest of that boot is step 1's
tests/lib/qemu.sh --dir "$out/esp2" --log "$log2" --timeout 120 --cpu-flags -hypervisor \
	--until 'recorder: tracing stopped' \
	--then "for i in \$(seq 1 300); do kill -0 $rpid 2>/dev/null || break; sleep 0.2; done" -- \
	-object memory-backend-file,id=hvt,share=on,mem-path="$shm",size=16M -device ivshmem-plain,memdev=hvt \
	>"$out/qemu-trace.out" 2>&1
rc=$?
kill -TERM $rpid 2>/dev/null
wait $rpid
rrc=$?
rm -f "$shm"
grep -a 'hvtrace: recorder:' "$log2" | sed 's/\r$//'
[ "$rc" = 124 ] && fail "the traced boot did not stop tracing within 120 s (serial log: $log2)"
grep -qa "recorder: tracing stopped (trace.stop records reached) after $RECORDS records" "$log2" ||
	fail "the hypervisor did not trace $RECORDS records from start_kernel (serial log: $log2)"
[ "$rrc" = 0 ] && [ -s "$trace" ] || fail "hvtrace record exited $rrc without a trace file: $(tail -2 "$out/record.out")"
cat "$out/record.out"
# "hvtrace record: N records, L lost, X MiB -> FILE"
n=$(sed -nE 's/^hvtrace record: ([0-9]+) records, ([0-9]+) lost.*/\1/p' "$out/record.out")
lost=$(sed -nE 's/^hvtrace record: ([0-9]+) records, ([0-9]+) lost.*/\2/p' "$out/record.out")
[ -n "$n" ] || fail "hvtrace record did not say how many records it wrote ($out/record.out)"
[ "$lost" = 0 ] || fail "$lost records lost between the hypervisor and hvtrace record ($out/record.out)"
# every record the engine made is in the file, besides the markers
made=$("$HVTRACE" dump "$trace" 2>/dev/null | awk '$3 == "lost" { lost = 1 } $3 != "marker" { n++ } END { print lost ? "lost" : n + 0 }')
[ "$made" = "$RECORDS" ] || fail "the trace file holds $made records besides markers, the hypervisor made $RECORDS ($trace)"

# --- 3. the trace, read on the host ------------------------------------------
echo
echo "demo: [3/3] the kernel's call history from start_kernel (hvtrace report --calls, its first 25 lines):"
"$HVTRACE" report "$trace" --symbols "$map" --calls >"$out/calls.txt" 2>"$out/report.err" ||
	fail "hvtrace report failed: $(head -2 "$out/report.err")"
sed -n 2p "$out/calls.txt" | grep -qE '^ +1  start_kernel$' ||
	fail "the call history does not begin in start_kernel ($out/calls.txt)"
head -25 "$out/calls.txt"
echo "   ... ($(wc -l <"$out/calls.txt") lines in $out/calls.txt)"
# the calls start_kernel itself made within these records (depth 1)
echo "demo: start_kernel's own calls in the trace: $(awk '/^ *[0-9]+    [^ ]/ && NF == 2 { print $2 }' "$out/calls.txt" |
	uniq | tr '\n' ' ')"
"$HVTRACE" export "$trace" --perfetto "$out/boot.json" --symbols "$map" >"$out/export.out" 2>&1 ||
	fail "hvtrace export failed: $(head -2 "$out/export.out")"
echo
echo "demo: traced Linux from start_kernel: $RECORDS records, none lost ($n in the file with the start and stop markers)"
echo "demo: trace file:    $trace   (try: $HVTRACE report $trace --hot 20; symbols: $map)"
echo "demo: Perfetto file: $out/boot.json   (open it at ui.perfetto.dev)"
echo "demo: serial logs:   $log1, $log2"
