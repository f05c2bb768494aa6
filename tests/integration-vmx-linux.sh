#!/usr/bin/env bash
# Linux under the VMX backend in Bochs (issue #27 item 1): the small kernel
# of make test's whole-boot trace (scripts/build-tiny-kernel.sh,
# tests/linux/tiny.config) booted by tests/guest/bootvmlinux.efi to its
# /init (the test initramfs, uncompressed) with 128 MiB, first without the
# hypervisor (the reference: what Bochs's machine gives the kernel), then
# under it. Whatever differs between the two is the hypervisor's.
#
#   vmx-linux-bare  enable = no: the kernel on Bochs's processor alone
#   vmx-linux       enable = yes, one processor: /init with the CPU's
#                   hypervisor flag and the guest agent's hypercall answered
#   vmx-linux-traced  enable = yes, traced from start_kernel for 20,000
#                   records (the fast engine, the flight recorder), which
#                   the host takes out of Bochs and checks: the recorder's
#                   exact counts, `hvtrace report --calls` with vmlinux
#   vmx-linux-smp-bare, vmx-linux-smp
#                   the same kernel with SMP and ACPI (tests/linux/
#                   tiny-smp.config, $TINY_SMP_DIR) on two processors,
#                   without and with the hypervisor: both CPUs up, the
#                   agent's hypercall on each, the second taken offline and
#                   back (the initramfs's hvtrace.smp). OVMF under Bochs
#                   publishes no ACPI RSDP (no MADT): bootvmlinux's
#                   mptable=2 gives the kernel an MP table for two
#                   processors instead
#
# The kernel's command line fits Bochs's machine (docs/testing.md "Known
# emulator divergences"): clearcpuid=fsrm, because Bochs does not implement
# IA32_MISC_ENABLE (reads give 0), so Linux sees fast strings off and
# clears ERMS while CPUID's FSRM stays, and Linux 6.1's memmove then takes
# the FSRM path without its length check into the 32-byte loop: a copy
# shorter than 32 bytes runs away through memory (the first printk shorter
# than 32 characters after the alternatives are applied, "Performance
# Events: ", overwrote the kernel's page tables); lpj= is the TSC's
# CPUID.15H rate (2419.2 MHz) per jiffy at the kernel's HZ of 250, as the
# kernel would calibrate it; no_timer_check as the QEMU boots.
#
#   tests/integration-vmx-linux.sh [--list] [PATTERN...]   (default: all five)
#
# Environment: see tests/lib/runner.sh (BUILD, HVTRACE_TIME_SCALE); TINY_DIR
# (default $BUILD/cache/tiny-linux), TINY_SMP_DIR (default
# $BUILD/cache/tiny-linux-smp).
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
ABI_MAJOR=$(sed -nE 's/^#define HVTRACE_ABI_MAJOR ([0-9]+)/\1/p' include/hvtrace/abi.h)
ABI_MINOR=$(sed -nE 's/^#define HVTRACE_ABI_MINOR ([0-9]+)/\1/p' include/hvtrace/abi.h)

VMX_LINUX_CFG=	# more hvtrace.cfg lines
VMX_LINUX_CMDLINE='console=ttyS0,115200 panic=-1 nokaslr no_timer_check lpj=9676800 clearcpuid=fsrm'

# vmx_linux NAME ENABLE BOUND VMLINUX EXTRA [bochs.sh options]: that small
# kernel to HVTRACE-GUEST: done, the hypervisor loaded or not, EXTRA added
# to its command line
vmx_linux() {
	local name=$1 enable=$2 bound=$3 vmlinux=$4 extra=$5
	shift 5
	local d=$(esp $name) cpio=$BUILD/initrd.cpio
	if [ ! -s "$vmlinux" ] || [ ! -s "$cpio" ]; then
		LOG=/dev/null ELAPSED=0 REASONS="; no $vmlinux or $cpio (make test-vmx-linux builds them)"
		return 1
	fi
	mkdir -p "$d/EFI/linux"
	cp "$vmlinux" "$d/EFI/linux/vmlinux"
	cp "$cpio" "$d/EFI/linux/initrd.cpio"
	cp "$BUILD/tests/guest/bootvmlinux.efi" "$d/EFI/hvtrace/"
	printf '%s\n' 'next = \EFI\hvtrace\bootvmlinux.efi' \
		"cmdline = vmlinux=\\EFI\\linux\\vmlinux ramdisk=\\EFI\\linux\\initrd.cpio $VMX_LINUX_CMDLINE$extra" \
		"enable = $enable" ${VMX_LINUX_CFG:+"$VMX_LINUX_CFG"} >"$d/EFI/hvtrace/hvtrace.cfg"
	boot bochs $name $bound --mem 128 --keep "$RUNS/$name" --until 'HVTRACE-GUEST: done|Kernel panic' "$@"
	expect 'bootvmlinux: e820: [0-9]+ entries; leaving the firmware'
	expect 'Clearing CPUID bits: fsrm'
	expect 'HVTRACE-GUEST: init reached'
	expect 'HVTRACE-GUEST: cpu vendor GenuineIntel'
	expect 'HVTRACE-GUEST: done'
	reject 'Kernel panic'
	reject 'BUG:|Oops|general protection fault|double fault'
	reject 'hvtrace: error'
	return 0
}

t_vmx_linux_bare() {
	vmx_linux vmx-linux-bare no 600 "$TINY" "" &&
		{ expect 'hvtrace: .enable = no. in hvtrace.cfg'
		  expect 'HVTRACE-GUEST: cpu flag hypervisor: no'; }
	finish vmx-linux-bare
}

t_vmx_linux() {
	vmx_linux vmx-linux yes 900 "$TINY" "" &&
		{ expect 'hvtrace: vmx backend ready'
		  expect 'hvtrace: hypervisor running; this processor is now its guest'
		  expect 'HVTRACE-GUEST: cpu flag hypervisor: yes'
		  expect "hvtrace-agent: hvtrace ABI $ABI_MAJOR\\.$ABI_MINOR,"
		  expect 'HVTRACE-GUEST: agent version exit 0'; }
	finish vmx-linux
}

# traced from start_kernel (nokaslr: its address from the kernel's
# System.map) for 20,000 records by the default (fast) engine into the
# flight recorder (1 MiB: 32,768 records, so none is overwritten), in
# reserved RAM (Bochs has no ivshmem): the recorder
# says it started there and stopped at the count, and the kernel goes on
# to /init. The host takes the records out of Bochs: once tracing has
# stopped, bochs.sh --save-chan writes the channel with Bochs's debugger
# (chan.raw, a raw image of memory from the channel's address), and
# vmx_linux_traced_check reads it with hvtrace
t_vmx_linux_traced() {
	local name=vmx-linux-traced
	local map=${TINY_DIR:-$BUILD/cache/tiny-linux}/System.map
	local sk=$(awk '$3 == "start_kernel" { print $1 }' "$map" 2>/dev/null)
	if [ -z "$sk" ]; then
		LOG=/dev/null ELAPSED=0 REASONS="; no start_kernel in $map"
	else
		VMX_LINUX_CFG=$(printf 'flight.size = 1M\ntrace.start = 0x%s\ntrace.stop = records:%s' "$sk" $TRACED_RECORDS)
		vmx_linux $name yes 900 "$TINY" "" --save-chan "$RUNS/$name/chan.raw" &&
			{ expect 'hvtrace: recorder: channel at [0-9a-f]+ \(reserved RAM'
			  expect "hvtrace: recorder: tracing starts at 0*$sk\$"
			  expect "hvtrace: recorder: tracing stopped \(trace.stop records reached\) after $TRACED_RECORDS records"
			  expect 'HVTRACE-GUEST: cpu flag hypervisor: yes'
			  vmx_linux_traced_check $name "$sk"; }
		VMX_LINUX_CFG=
	fi
	finish $name
}

# vmx_linux_traced_check NAME SK: the records of the channel bochs.sh saved,
# with the recorder's exact counts: the flight ring holds every record the
# hypervisor wrote (fill == head: none overwritten, none lost), those are the
# START marker at start_kernel, the $TRACED_RECORDS records the hypervisor
# logged it made, any CR3 records and the STOP marker, in TSC order; and
# `hvtrace report --calls` with the kernel's symbols (vmlinux) starts in
# start_kernel and reaches, in order, functions it calls at known depths
vmx_linux_traced_check() {
	local name=$1 sk=$2 d=$RUNS/$1
	local addr=$(sed -nE 's/^hvtrace: recorder: channel at ([0-9a-f]+) .*/\1/p' "$LOG" | head -n 1)
	local made=$(sed -nE 's/^hvtrace: recorder: tracing stopped .* after ([0-9]+) records.*/\1/p' "$LOG" | head -n 1)
	if [ -z "$addr" ] || [ -z "$made" ]; then
		REASONS="$REASONS; no channel address or record count in the log"
		return
	fi
	if ! "$HVTRACE" status --dump "$d/chan.raw" --base "$addr" --json >"$d/status.json" 2>"$d/status.err"; then
		REASONS="$REASONS; hvtrace status of the saved channel failed: $(head -c 300 "$d/status.err")"
		REASONS="$REASONS ($(grep -a 'save-chan' "$d/bochs.out" | head -n 1))"
		return
	fi
	# state, then ring 0 (the only one, one vCPU): consumer, mode, capacity, fill, head, lost
	local st=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); r = s["rings"]
print(s["state"], len(r), *(r[0][k] for k in ("consumer", "mode", "capacity", "fill", "head", "lost")))' \
		"$d/status.json" 2>&1)
	set -- $st
	if [ $# != 8 ] || [ "$1 $2 $3 $4" != "stopped 1 flight overwrite" ]; then
		REASONS="$REASONS; the saved channel is not one stopped flight ring: $st"
		return
	fi
	local cap=$5 fill=$6 head=$7 lost=$8
	[ "$head" -le "$cap" ] && [ "$fill" = "$head" ] ||
		REASONS="$REASONS; the flight ring holds $fill of $head records (capacity $cap): some overwritten"
	[ "$lost" = 0 ] || REASONS="$REASONS; the ring counts $lost lost"
	if ! "$HVTRACE" snapshot --dump "$d/chan.raw" --base "$addr" -o "$d/snap.trace" >"$d/snapshot.out" 2>&1; then
		REASONS="$REASONS; hvtrace snapshot failed: $(head -c 300 "$d/snapshot.out")"
		return
	fi
	grep -qx "hvtrace snapshot: $head records from 1 rings (state stopped) -> $d/snap.trace" "$d/snapshot.out" ||
		REASONS="$REASONS; the snapshot is not the ring's $head records: $(head -n 1 "$d/snapshot.out")"
	# the records by kind: those the recorder counts, markers, CR3 records, LOST records
	"$HVTRACE" dump --json "$d/snap.trace" >"$d/dump.json" 2>"$d/dump.err"
	local k=$(python3 -c 'import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
kinds = [r["kind"] for r in recs]
marks = [(r["marker"], r.get("value")) for r in recs if r["kind"] == "marker"]
tscs = [r["tsc"] for r in recs]
ends = recs[0].get("marker") == "start" and recs[-1].get("marker") == "stop"
print(len(recs), sum(k in ("branch", "interrupt", "exception", "far") for k in kinds),
      kinds.count("cr3"), kinds.count("lost"), sum(b < a for a, b in zip(tscs, tscs[1:])), int(ends),
      " ".join(m + ":" + str(v) for m, v in marks))' "$d/dump.json" 2>&1)
	if ! [[ $k =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ [01]\  ]]; then
		REASONS="$REASONS; the snapshot's records could not be counted: $(head -c 300 <<<"$k") $(head -c 300 "$d/dump.err")"
		return
	fi
	set -- $k
	local all=$1 counted=$2 cr3=$3 nlost=$4 disorder=$5 ends=$6
	shift 6
	[ "$all" = "$head" ] || REASONS="$REASONS; hvtrace dump gives $all records, the ring $head ($k)"
	[ "$made" = "$TRACED_RECORDS" ] && [ "$counted" = "$made" ] ||
		REASONS="$REASONS; $counted branch and event records, the hypervisor made $made (trace.stop $TRACED_RECORDS)"
	[ "$nlost" = 0 ] || REASONS="$REASONS; $nlost LOST records"
	[ "$disorder" = 0 ] || REASONS="$REASONS; $disorder records out of TSC order"
	[ "$all" = $((counted + cr3 + 2)) ] && [ $# = 2 ] && [ "$1" = "start:0x$sk" ] && [ "${2%%:*}" = stop ] &&
		[ "$ends" = 1 ] ||
		REASONS="$REASONS; not one START marker at start_kernel first and one STOP marker last: $k"
	# the call history with the kernel's symbols: start_kernel at the root,
	# then (depth:function, in order) its first callees and setup_arch's
	if "$HVTRACE" report "$d/snap.trace" --calls --symbols "$TINY" >"$d/calls.txt" 2>"$d/report.err"; then
		head -n 1 "$d/calls.txt" | grep -q 'vcpu 0 function-call history:' ||
			REASONS="$REASONS; no call-history header"
		sed -n 2p "$d/calls.txt" | grep -qE '^ +1  start_kernel$' ||
			REASONS="$REASONS; the history does not start in start_kernel: $(sed -n 2p "$d/calls.txt")"
		local got=" $(awk 'NR > 1 && match($0, /^ *[0-9]+  /) { rest = substr($0, RLENGTH + 1)
			n = match(rest, /[^ ]/) - 1; printf "%d:%s ", n / 2, substr(rest, n + 1) }' "$d/calls.txt")"
		local w rest=$got
		for w in 0:start_kernel 1:set_task_stack_end_magic 1:boot_cpu_init 1:setup_arch 2:early_cpu_init \
			2:e820__memory_setup; do
			case "$rest" in
			*" $w "*) rest=" ${rest#*" $w "}" ;;
			*) REASONS="$REASONS; '$w' (depth:function) not in order in the call history ($d/calls.txt)"; break ;;
			esac
		done
		# every call lands in a function of the kernel's symbols
		! grep -qE '^ +[0-9]+ +0x[0-9a-f]+$' "$d/calls.txt" ||
			REASONS="$REASONS; calls to addresses no symbol holds: $(grep -cE '^ +[0-9]+ +0x[0-9a-f]+$' "$d/calls.txt")"
	else
		REASONS="$REASONS; hvtrace report --calls failed: $(head -c 300 "$d/report.err")"
	fi
}

# two processors: both up, the same CPUID flags on each, the agent's
# hypercall answered by the vCPU it ran on, the second offline and back
vmx_linux_smp() {
	local name=$1 enable=$2 bound=$3
	vmx_linux $name $enable $bound "$TINY_SMP" " mptable=2 hvtrace.smp" --smp 2 || return 0
	expect 'bootvmlinux: mptable=2: an MP table for two processors'
	expect 'smp: Brought up 1 node, 2 CPUs'
	expect 'HVTRACE-GUEST: smp cpus 2, flag lines 1, '
	expect 'HVTRACE-GUEST: smp cpu 1 offline 0 online 1'
	reject 'hvtrace: warning'
	if [ $enable = yes ]; then
		expect 'hvtrace: all 2 processors are under the hypervisor'
		expect 'HVTRACE-GUEST: smp cpus 2, flag lines 1, hypervisor on 2'
		expect 'HVTRACE-GUEST: smp cpu 0 apicid 0 agent 0$'
		expect 'HVTRACE-GUEST: smp cpu 1 apicid 1 agent 1$'
		expect 'HVTRACE-GUEST: smp cpu 1 offline 0 online 1 agent 1$'
	else
		expect 'HVTRACE-GUEST: smp cpus 2, flag lines 1, hypervisor on 0'
	fi
}
t_vmx_linux_smp_bare() { vmx_linux_smp vmx-linux-smp-bare no 900; finish vmx-linux-smp-bare; }
t_vmx_linux_smp() { vmx_linux_smp vmx-linux-smp yes 1200; finish vmx-linux-smp; }

TINY=${TINY_DIR:-$BUILD/cache/tiny-linux}/vmlinux
HVTRACE=$BUILD/host-tools/hvtrace
TRACED_RECORDS=20000
TINY_SMP=${TINY_SMP_DIR:-$BUILD/cache/tiny-linux-smp}/vmlinux
runner_main integration-vmx-linux "t_vmx_linux_bare t_vmx_linux t_vmx_linux_traced t_vmx_linux_smp_bare t_vmx_linux_smp" "$@"
