#!/usr/bin/env bash
# Runs Bochs (Intel CPU with VMX, EPT, unrestricted guest and the monitor
# trap flag) with OVMF on a boot disk made from a directory, time-bounded,
# serial console to a log file. The counterpart of tests/lib/qemu.sh.
#
#   tests/lib/bochs.sh --dir ESPDIR --log FILE [--timeout SEC] [--cpu MODEL]
#                      [--smp N] [--mem MIB] [--tee] [--until REGEX] [--keep DIR]
#                      [--save-chan FILE [--save-when REGEX]]
#
# --cpu: a Bochs CPU model (default tigerlake: it has the monitor trap flag;
# corei7_skylake_x does not). --until: stop Bochs as soon as the serial log
# matches REGEX (grep -E), for guests that never power off by themselves.
# --keep DIR: leave the bochsrc and Bochs's own log (bochs.log) in DIR
# (with --save-chan also its console, the debugger's answers: debugger.out).
# --save-chan FILE: the host's way to hvtrace's channel in reserved RAM
# (Bochs has no ivshmem). Once the serial log matches --save-when's REGEX
# (default: the recorder's "tracing stopped" line), Bochs is stopped into
# its debugger (SIGINT) and let run to its next VM exit, so that it stands
# in VMX root mode, in the hypervisor's page tables, which map physical
# memory one to one below 2^47 (efi-loader/main.c); there the debugger's
# `writemem` writes the channel, at the address and of the size the
# hypervisor logged ("recorder: channel at ADDR (reserved RAM, N KiB)"),
# to FILE, and Bochs runs on. FILE is a raw image of memory from ADDR:
# `hvtrace status|snapshot --dump FILE --base ADDR`. One processor: the
# debugger reads through the one it stopped on. What went wrong is said
# on stderr ("bochs.sh: --save-chan: ..."), and FILE is then left
# missing or short, which hvtrace refuses.
#
# COM1 (the console) and COM4 (0x2e8: the hypervisor's own log when
# hvtrace.cfg says `serial = 0x2e8`, as tests/lib/runner.sh's do; not COM2,
# which OVMF makes a console too) go to
# local TCP listeners of tests/lib/serialmerge.py, which writes both into
# the log line by line (a line of one never torn by the other's; a partial
# line after 2 s idle or when Bochs closes the port), rather than Bochs's
# `mode=file`, which is block-buffered and loses its tail when Bochs is
# killed. A guest ends Bochs by writing "Shutdown" to port 0x8900
# (tests/guest/guest.c does). Bochs ignores SIGTERM: it is bound with
# SIGKILL, by PID, and its disk lock file is removed afterwards.
# Exit status: Bochs's, 0 after --until matched, or 124 when the time bound
# killed it.
set -u
dir= log= timeout=180 cpu=tigerlake smp=1 mem=512 tee=0 until= keep=
save_chan= save_when='hvtrace: recorder: tracing stopped'
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dir=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--tee) tee=1; shift ;;
	--until) until=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	--save-chan) save_chan=$2; shift 2 ;;
	--save-when) save_when=$2; shift 2 ;;
	*) echo "bochs.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$dir" ] && [ -n "$log" ] || { echo "bochs.sh: --dir and --log are required" >&2; exit 2; }
if [ -n "$save_chan" ]; then
	[ "$smp" = 1 ] || { echo "bochs.sh: --save-chan reads through one processor: not with --smp $smp" >&2; exit 2; }
	case "$save_chan" in
	*[\"\ ]*) echo "bochs.sh: --save-chan: no quotes or spaces in the path (Bochs's debugger parses it)" >&2; exit 2 ;;
	/*) ;;
	*) save_chan=$PWD/$save_chan ;;
	esac
	rm -f "$save_chan"
fi

OVMF_FD=${OVMF_FD:-/usr/share/ovmf/OVMF.fd}
VGABIOS=${VGABIOS:-/usr/share/vgabios/vgabios.bin}
command -v bochs-bin >/dev/null || { echo "bochs.sh: no bochs-bin (scripts/setup-deps.sh installs bochs)" >&2; exit 2; }
[ -r "$OVMF_FD" ] || { echo "bochs.sh: no OVMF at $OVMF_FD (scripts/setup-deps.sh installs ovmf)" >&2; exit 2; }

work=$(mktemp -d)
bpid= npid= tpid=
cleanup() {
	# $bpid is timeout's: Bochs is its child
	[ -n "$bpid" ] && pkill -KILL -P "$bpid" 2>/dev/null
	for p in $bpid $tpid; do kill -KILL "$p" 2>/dev/null; done
	# the merger writes what it holds on SIGTERM
	[ -n "$npid" ] && kill -TERM "$npid" 2>/dev/null
	wait 2>/dev/null
	rm -f "$work/esp.img.lock"
	[ -n "$keep" ] && { mkdir -p "$keep"; cp "$work/bochsrc" "$work/bochs.log" "$keep/" 2>/dev/null; }
	# what Bochs's debugger said to --save-chan's commands
	[ -n "$keep" ] && [ -p "$work/dbg" ] && cp "$work/bochs.out" "$keep/debugger.out" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# A FAT32 volume with no partition table (OVMF boots \EFI\BOOT\BOOTX64.EFI
# from it), sized in whole cylinders of 16 heads x 63 sectors x 512 bytes:
# Bochs's flat disk image derives its geometry from that.
cyl_bytes=$((16 * 63 * 512))
size_kb=$(du -sk "$dir" | cut -f1)
cyls=$(( ((size_kb + 34 * 1024) * 1024 + cyl_bytes - 1) / cyl_bytes ))
truncate -s $((cyls * cyl_bytes)) "$work/esp.img"
mkfs.vfat -F 32 "$work/esp.img" >/dev/null || exit 2
export MTOOLS_SKIP_CHECK=1
(cd "$dir" && find . -mindepth 1 -type d | sed 's|^\./||' | while read -r d; do mmd -i "$work/esp.img" "::/$d"; done
 find . -type f | sed 's|^\./||' | while read -r f; do mcopy -i "$work/esp.img" "$f" "::/$f"; done) || exit 2

# The serial listeners: two free local ports, listening before Bochs starts
# (the merger binds both, or fails and another pair is drawn).
: >"$log"
for try in 1 2 3 4 5 6 7 8; do
	port=$((20000 + RANDOM % 40000)) port2=$((20000 + RANDOM % 40000))
	[ "$port" = "$port2" ] && continue
	rm -f "$work/merge.ready"
	python3 "$(dirname "$0")/serialmerge.py" --out "$log" --ready "$work/merge.ready" \
		tcp:"$port" tcp:"$port2" </dev/null 2>/dev/null &
	npid=$!
	for _ in $(seq 100); do [ -e "$work/merge.ready" ] && break; kill -0 "$npid" 2>/dev/null || break; sleep 0.05; done
	[ -e "$work/merge.ready" ] && kill -0 "$npid" 2>/dev/null && break
	kill -KILL "$npid" 2>/dev/null; wait "$npid" 2>/dev/null; npid=
done
[ -n "$npid" ] || { echo "bochs.sh: cannot open two local ports for the serial ports" >&2; exit 2; }

cat >"$work/bochsrc" <<EOF
plugin_ctrl: unmapped=1, biosdev=0, speaker=0, extfpuirq=0, parallel=0, gameport=0, iodebug=0, serial=1
config_interface: textconfig
display_library: term
memory: guest=$mem, host=$mem
romimage: file=$OVMF_FD, address=0xffe00000
vgaromimage: file=$VGABIOS
cpu: model=$cpu, count=$smp, ips=2000000, reset_on_triple_fault=0
pci: enabled=1, chipset=i440fx
clock: sync=none, time0=local
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=disk, path=$work/esp.img, mode=flat, cylinders=$cyls, heads=16, spt=63
ata1: enabled=0
boot: disk
floppy_bootsig_check: disabled=1
com1: enabled=1, mode=socket-client, dev=localhost:$port
com4: enabled=1, mode=socket-client, dev=localhost:$port2
port_e9_hack: enabled=1
log: $work/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
EOF
echo c >"$work/cmds"
# Bochs's debugger reads its commands from the -rc file, then from its
# stdin: with --save-chan a FIFO that this script holds open (fd 3), so
# that the debugger waits there for commands instead of reading an end
dbg_in=/dev/null
if [ -n "$save_chan" ]; then
	mkfifo "$work/dbg" || exit 2
	exec 3<>"$work/dbg"
	dbg_in=$work/dbg
fi

# save_chan_now: the channel to $save_chan through Bochs's debugger (above);
# 0 once FILE holds it all and Bochs runs on
save_chan_now() {
	local line addr kib pid i t0=$(date +%s.%N)
	line=$(grep -aoE 'hvtrace: recorder: channel at [0-9a-f]+ \(reserved RAM, [0-9]+ KiB\)' "$log" | head -n 1)
	if [ -z "$line" ]; then
		echo "bochs.sh: --save-chan: no 'recorder: channel at ADDR (reserved RAM, N KiB)' line in the log" >&2
		return 1
	fi
	addr=$(echo "$line" | sed -E 's/.* at ([0-9a-f]+) .*/\1/')
	kib=$(echo "$line" | sed -E 's/.* ([0-9]+) KiB\)$/\1/')
	pid=$(pgrep -P "$bpid" -x bochs-bin)
	[ -n "$pid" ] || { echo "bochs.sh: --save-chan: Bochs is gone" >&2; return 1; }
	# Bochs's debugger takes SIGINT as Ctrl-C: it stops and reads fd 3's
	# lines in turn; "vmexitbp" twice toggles the stop at VM exits on and off
	kill -INT "$pid"
	printf 'vmexitbp\nc\nwritemem "%s" 0x%s %d\nvmexitbp\nc\n' "$save_chan" "$addr" $((kib * 1024)) >&3
	# the second toggle's answer comes after writemem has closed the file
	for i in $(seq 600); do
		[ "$(grep -ac 'vmexit switch break' "$work/bochs.out")" -ge 2 ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	# read in root mode: the stop at a VM exit came before writemem
	if ! sed -n '/Caught VMEXIT breakpoint/,$p' "$work/bochs.out" | grep -q '> writemem '; then
		echo "bochs.sh: --save-chan: Bochs did not stop at a VM exit before writemem" \
			"($(grep -aE 'vmexit|VMEXIT|writemem|rror' "$work/bochs.out" | tail -n 3 | tr '\n' ' '))" >&2
		rm -f "$save_chan"
		return 1
	fi
	if [ "$(stat -c %s "$save_chan" 2>/dev/null || echo 0)" != $((kib * 1024)) ]; then
		echo "bochs.sh: --save-chan: $save_chan does not hold the channel's $kib KiB at 0x$addr" \
			"($(grep -aE 'vmexit|writemem|rror' "$work/bochs.out" | tail -n 3 | tr '\n' ' '))" >&2
		return 1
	fi
	echo "bochs.sh: --save-chan: the channel's $kib KiB at 0x$addr -> $save_chan" \
		"(Bochs stopped for $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)" >&2
}

if [ "$tee" = 1 ]; then
	tail -f "$log" & tpid=$!
fi
# The debugger build stops before the first instruction unless told `c`.
TERM=${TERM:-xterm} timeout -s KILL "$timeout" bochs-bin -q -f "$work/bochsrc" -rc "$work/cmds" \
	<"$dbg_in" >"$work/bochs.out" 2>&1 &
bpid=$!
rc=
if [ -n "$until" ] || [ -n "$save_chan" ]; then
	while kill -0 "$bpid" 2>/dev/null; do
		if [ -n "$save_chan" ] && grep -qaE "$save_when" "$log" 2>/dev/null; then
			save_chan_now
			save_chan=
		fi
		if [ -n "$until" ] && grep -qaE "$until" "$log" 2>/dev/null; then
			sleep 0.5 # let the lines after the match arrive
			pkill -KILL -P "$bpid" 2>/dev/null
			kill -KILL "$bpid" 2>/dev/null
			rc=0
			break
		fi
		sleep 0.2
	done
fi
wait "$bpid" 2>/dev/null
brc=$?
bpid=
# Bochs ends a guest's ACPI power-off with a "panic" (status 1): a guest
# that reached --until before powering off counts as matched
[ -z "$rc" ] && [ -n "$until" ] && grep -qaE "$until" "$log" && rc=0
[ -n "$rc" ] || rc=$brc
[ "$rc" = 137 ] && rc=124
# the merger ends when Bochs closes both connections, with what it held
for _ in $(seq 40); do kill -0 "$npid" 2>/dev/null || break; sleep 0.05; done
exit $rc
