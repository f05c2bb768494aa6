#!/usr/bin/env bash
# Runs QEMU with OVMF on a boot volume made from a directory, time-bounded,
# its two serial ports to a log file (and optionally to stdout): COM1 (the
# firmware's and the guest's console) and COM4 (0x2e8, IRQ 3: the
# hypervisor's own log when hvtrace.cfg says `serial = 0x2e8`, as
# tests/lib/runner.sh's do; not COM2, which OVMF makes a console too, and
# whose output would stall once the hypervisor hides it), merged line by
# line by tests/lib/serialmerge.py so that a line of one never tears a line
# of the other (a partial line goes out after 2 s idle or when QEMU exits).
#
#   tests/lib/qemu.sh --dir ESPDIR --log FILE [--timeout SEC] [--cpu MODEL]
#                     [--smp N] [--mem MIB] [--tee] [--until REGEX]
#                     [--cpu-flags FLAGS] [--then CMD]
#                     [-- EXTRA QEMU ARGS]
#   tests/lib/qemu.sh --which-accel     (prints "using kvm" or "using tcg: WHY")
#
# --cpu-flags: appended to the CPU model (e.g. -hypervisor: QEMU itself sets
# CPUID.1:ECX[31] for its guests, which would mask hvtrace's own).
# --until: stop QEMU as soon as the serial log matches REGEX (grep -E), for
# guests that never power off by themselves (a stopped guest, say).
# --then: a shell command run once --until matched, while QEMU still runs
# (to take a memory dump through a monitor, say), before QEMU is killed.
#
# Acceleration: HVTRACE_ACCEL=tcg|kvm|auto (default auto). auto picks KVM
# only when the host offers nested virtualization (kvm_amd nested=1 or
# kvm_intel nested=Y) and /dev/kvm is usable; otherwise TCG, and says why.
# HVTRACE_VARS_READONLY=1 (the nested tier): OVMF's variable store
# read-only, so OVMF keeps its variables in memory and writes no flash.
# Exit status: QEMU's, or 124 when the time bound killed it.
set -u
dir= log= timeout=120 cpu= cpuflags= smp=1 mem=512 tee=0 until= then= which=0
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dir=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--cpu-flags) cpuflags=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--tee) tee=1; shift ;;
	--until) until=$2; shift 2 ;;
	--then) then=$2; shift 2 ;;
	--which-accel) which=1; shift ;;
	--) shift; break ;;
	*) echo "qemu.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ "$which" = 0 ] && { [ -z "$dir" ] || [ -z "$log" ]; }; then
	echo "qemu.sh: --dir and --log are required" >&2
	exit 2
fi

OVMF_CODE=${OVMF_CODE:-/usr/share/OVMF/OVMF_CODE.fd}
OVMF_VARS=${OVMF_VARS:-/usr/share/OVMF/OVMF_VARS.fd}
[ -r "$OVMF_CODE" ] || { echo "qemu.sh: no OVMF at $OVMF_CODE (scripts/setup-deps.sh installs ovmf)" >&2; exit 2; }

nested_kvm() {
	[ -r /sys/module/kvm_amd/parameters/nested ] && grep -qE '^(1|Y)$' /sys/module/kvm_amd/parameters/nested && return 0
	[ -r /sys/module/kvm_intel/parameters/nested ] && grep -qE '^(1|Y)$' /sys/module/kvm_intel/parameters/nested && return 0
	return 1
}

accel=${HVTRACE_ACCEL:-auto}
case "$accel" in
auto)
	if [ -w /dev/kvm ] && nested_kvm; then accel=kvm
	else
		accel=tcg
		[ -n "${HVTRACE_QUIET_ACCEL:-}" ] || [ "$which" = 1 ] || echo "qemu.sh: using TCG: the host offers no nested virtualization through KVM (kvm_amd/kvm_intel nested is off or absent)" >&2
	fi ;;
tcg|kvm) ;;
*) echo "qemu.sh: HVTRACE_ACCEL must be tcg, kvm or auto" >&2; exit 2 ;;
esac
if [ "$which" = 1 ]; then
	if [ "$accel" = kvm ]; then echo "qemu.sh: using KVM (HVTRACE_ACCEL=${HVTRACE_ACCEL:-auto})"
	elif [ "${HVTRACE_ACCEL:-auto}" = tcg ]; then echo "qemu.sh: using TCG (HVTRACE_ACCEL=tcg)"
	else echo "qemu.sh: using TCG: the host offers no nested virtualization through KVM (kvm_amd/kvm_intel nested is off or absent)"; fi
	exit 0
fi
if [ -z "$cpu" ]; then
	[ "$accel" = kvm ] && cpu=host || cpu=max
fi
[ -n "$cpuflags" ] && cpu="$cpu,$cpuflags"

work=$(mktemp -d)
mpid=
# merger_end: QEMU has ended: the merger reads the ports' files to their
# end, writes what it holds and exits (SIGTERM; bounded, then killed)
merger_end() {
	[ -n "$mpid" ] || return 0
	kill -TERM "$mpid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
	mpid=
}
trap 'merger_end; rm -rf "$work"' EXIT
cp "$OVMF_VARS" "$work/vars.fd"
# FAT image with no partition table: OVMF boots \EFI\BOOT\BOOTX64.EFI from it
size_kb=$(du -sk --apparent-size "$dir" | cut -f1)	# sparse files (an ELF with holes) count whole
size_mb=$(( size_kb / 1024 + 34 ))
truncate -s ${size_mb}M "$work/esp.img"
mkfs.vfat -F 32 "$work/esp.img" >/dev/null || exit 2
export MTOOLS_SKIP_CHECK=1
(cd "$dir" && find . -mindepth 1 -type d | sed 's|^\./||' | while read -r d; do mmd -i "$work/esp.img" "::/$d"; done
 find . -type f | sed 's|^\./||' | while read -r f; do mcopy -i "$work/esp.img" "$f" "::/$f"; done) || exit 2

set -- -machine q35 -accel "$accel" -cpu "$cpu" -smp "$smp" -m "$mem" \
	-drive if=pflash,format=raw,unit=0,readonly=on,file="$OVMF_CODE" \
	-drive if=pflash,format=raw,unit=1,file="$work/vars.fd"${HVTRACE_VARS_READONLY:+,readonly=on} \
	-drive format=raw,file="$work/esp.img" \
	-nodefaults -vga none -display none -no-reboot \
	-chardev file,id=hvtcom1,path="$work/com1.out" -serial chardev:hvtcom1 \
	-chardev file,id=hvtcom4,path="$work/com4.out" -device isa-serial,iobase=0x2e8,irq=3,chardev=hvtcom4 "$@"

: >"$log"
# merger_start: the merger of the two files QEMU writes (files, not sockets:
# QEMU's UART gives up on a byte after a few writes a socket refused, which
# a reader held up on a loaded machine made it do), before QEMU starts
merger_start() {
	rm -f "$work/merge.ready" "$work/com1.out" "$work/com4.out"
	python3 "$(dirname "$0")/serialmerge.py" --out "$log" --ready "$work/merge.ready" \
		file:"$work/com1.out" file:"$work/com4.out" </dev/null &
	mpid=$!
	for _ in $(seq 100); do [ -e "$work/merge.ready" ] && return 0; kill -0 "$mpid" 2>/dev/null || break; sleep 0.05; done
	echo "qemu.sh: the serial merger (tests/lib/serialmerge.py) did not start" >&2
	exit 2
}
if [ "$tee" = 1 ]; then
	tail -f "$log" & tailpid=$!
fi
# HVTRACE_FIRMWARE_WAIT=S (the nested-KVM tier sets it): a boot whose serial
# log is still empty S seconds after QEMU started never got past the
# firmware (OVMF writes its console before it loads anything from the
# volume); QEMU is then killed and started again, once, and this says so
# on stderr, with the evidence: what QEMU's monitor says of the vCPUs
# (status, registers, twice a second apart) just before the kill, and for
# every boot, how long the firmware took to print. A QEMU that exits before
# the firmware printed anything is started again the same way, once. Off
# (0) by default.
#
# A run that reaches its time bound (--timeout) is a hang: what QEMU's
# monitor then says of the vCPUs goes to stderr the same way, and QEMU is
# killed (status 124).
fwwait=${HVTRACE_FIRMWARE_WAIT:-0} restarted=0 fwseen=0
set -- "$@" -monitor unix:"$work/monitor.sock",server=on,wait=off
# vcpu_evidence: the monitor's view of the vCPUs (a boot that printed
# nothing, a hang), and of the 8259s and the local APIC (an interrupt
# held in service for ever)
vcpu_evidence() {
	python3 - "$work/monitor.sock" <<'PY' 2>&1 | sed 's/^/qemu.sh: monitor: /' >&2
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("cannot reach the monitor:", e); sys.exit(0)
def answer():
    out = b""
    try:
        while not out.endswith(b"(qemu) "):
            d = s.recv(65536)
            if not d: break
            out += d
    except socket.timeout:
        out += b" [no answer in 5 s]"
    # the monitor echoes what it was sent with cursor moves: drop those lines
    # the FPU and vector registers say nothing of where the firmware is
    return [l for l in out.decode(errors="replace").splitlines()
            if "\x1b" not in l and l.strip() != "(qemu)" and not l.startswith(("FPR", "XMM", "YMM", "FCW"))]
answer()
for cmd in ["info status", "info registers -a", "info registers -a", "info pic", "info lapic"]:
    s.sendall((cmd + "\n").encode())
    print(cmd + ":")
    for l in answer(): print("  " + l)
    time.sleep(1)
PY
}
# HVTRACE_PIN_VCPUS=1 (the nested-KVM tier sets it): each vCPU thread on
# its own CPU of the outer guest, for as long as QEMU runs (the outer
# QEMU's TCG keeps hvtrace's breakpoints per emulated CPU; the file says
# why). Its lines go to stderr. HVTRACE_PIN_VCPUS=shuffle instead moves each
# vCPU thread to the next CPU every 50 ms (pin-vcpus.sh --shuffle).
pin=${HVTRACE_PIN_VCPUS:-0}
case "$pin" in 1|shuffle) set -- "$@" -name hvtrace,debug-threads=on ;; esac
start_qemu() {
	merger_end
	merger_start
	# the kill at the bound is the loop's, after the evidence; this one
	# only if the loop could not
	timeout -s KILL "$((timeout + 30))" qemu-system-x86_64 "$@" </dev/null &
	qpid=$! qstart=$SECONDS
	[ "$pin" = 1 ] && "$(dirname "$0")/../nested/pin-vcpus.sh" "$qpid" &
	[ "$pin" = shuffle ] && "$(dirname "$0")/../nested/pin-vcpus.sh" "$qpid" --shuffle &
}
start_qemu "$@"
while :; do
	if ! kill -0 "$qpid" 2>/dev/null; then
		# QEMU ended. Before the firmware printed anything (seen in the
		# nested tier: an exit after 3 s, nothing in any log), it is the
		# same silent boot as above: started again, once.
		[ "$fwwait" -gt 0 ] && [ "$restarted" = 0 ] && [ ! -s "$log" ] || break
		wait "$qpid"
		echo "qemu.sh: QEMU exited (status $?) after $((SECONDS - qstart)) s before the firmware printed anything: started again (HVTRACE_FIRMWARE_WAIT)" >&2
		restarted=1
		start_qemu "$@"
	fi
	if [ "$fwwait" -gt 0 ] && [ "$restarted" = 0 ] && [ ! -s "$log" ] && [ $((SECONDS - qstart)) -ge "$fwwait" ]; then
		echo "qemu.sh: the firmware printed nothing in $fwwait s: QEMU killed and started again (HVTRACE_FIRMWARE_WAIT)" >&2
		vcpu_evidence
		pkill -KILL -P "$qpid" 2>/dev/null
		kill -KILL "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
		restarted=1
		start_qemu "$@"
	fi
	if [ "$fwwait" -gt 0 ] && [ "$fwseen" = 0 ] && [ -s "$log" ]; then
		echo "qemu.sh: the firmware's first output after $((SECONDS - qstart)) s" >&2
		fwseen=1
	fi
	if [ -n "$until" ]; then
		if grep -qaE "$until" "$log" 2>/dev/null; then
			sleep 0.3 # let the lines after the match arrive
			[ -n "$then" ] && bash -c "$then"
			pkill -KILL -P "$qpid" 2>/dev/null
			kill -KILL "$qpid" 2>/dev/null
			wait "$qpid" 2>/dev/null
			merger_end
			[ "$tee" = 1 ] && { kill "$tailpid" 2>/dev/null; wait "$tailpid" 2>/dev/null; }
			exit 0
		fi
		sleep 0.2
	else
		sleep 1
	fi
	if [ $((SECONDS - qstart)) -ge "$timeout" ]; then
		echo "qemu.sh: no end after $((SECONDS - qstart)) s (the bound is $timeout s): QEMU killed; its vCPUs before that:" >&2
		vcpu_evidence
		pkill -KILL -P "$qpid" 2>/dev/null
		kill -KILL "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
		merger_end
		[ "$tee" = 1 ] && { kill "$tailpid" 2>/dev/null; wait "$tailpid" 2>/dev/null; }
		exit 124
	fi
done
wait "$qpid"
rc=$?
merger_end
# (the nested tier) how the boot ended: with -no-reboot a guest's reset or
# triple fault before hvtrace is loaded ends QEMU as a poweroff does
[ "$fwwait" -gt 0 ] && echo "qemu.sh: QEMU exited (status $rc) after $((SECONDS - qstart)) s" >&2
if [ "$tee" = 1 ]; then sleep 0.2; kill "$tailpid" 2>/dev/null; wait "$tailpid" 2>/dev/null; fi
[ $rc = 137 ] && rc=124
exit $rc
