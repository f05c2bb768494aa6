#!/usr/bin/env bash
# Integration tests under QEMU + OVMF: EFI guest programs chain-loaded by
# hvtrace.efi, the loader's failure paths, and Debian's Linux booting as the
# hypervisor's guest. Each test has a hard time bound; each prints PASS or
# FAIL with the reason, and the serial log stays in build/test-runs/NAME/.
#
#   tests/integration.sh [--list] [PATTERN...]   (default: all tests)
#
# Environment: BUILD (default build), HVTRACE_ACCEL=tcg|kvm|auto (see
# tests/lib/qemu.sh), HVTRACE_TIME_SCALE (multiply every time bound).
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
export HVTRACE_QUIET_ACCEL=1
ABI_MAJOR=$(sed -nE 's/^#define HVTRACE_ABI_MAJOR ([0-9]+)/\1/p' include/hvtrace/abi.h)
ABI_MINOR=$(sed -nE 's/^#define HVTRACE_ABI_MINOR ([0-9]+)/\1/p' include/hvtrace/abi.h)

accel_note() {
	tests/lib/qemu.sh --which-accel
}

run() { boot qemu "$@"; }

# An empty 16 MiB channel file FILE and, in CHAN_QEMU, the QEMU arguments
# of an ivshmem device on it (the hypervisor takes it as its channel)
chan_device() {
	truncate -s 16M "$1"
	CHAN_QEMU=(-object memory-backend-file,id=hvt,share=on,mem-path="$1",size=16M -device ivshmem-plain,memdev=hvt)
}

# --- EFI guest programs --------------------------------------------------

t_svm_guest_basic() {
	local d=$(esp svm-guest-basic)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	# under KVM one check cannot run as on the hardware (t_basic.c,
	# test_hypercall_insns): KVM rewrites an AMD guest's VMCALL
	local skipped=0
	if tests/lib/qemu.sh --which-accel | grep -q 'using KVM'; then
		echo 'cmdline = kvm-host' >>"$d/EFI/hvtrace/hvtrace.cfg"
		skipped=1
	fi
	run svm-guest-basic 60
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'GUEST-TEST: INFO: running under hvtrace'
	expect "SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, $skipped skipped"
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-guest-basic
}

# The backend by capability, not by vendor string (issue 14): QEMU's
# -cpu max told it is GenuineIntel keeps SVM, so the SVM backend runs and
# the guest sees an Intel processor. t_basic then checks what Intel's
# hardware rules say (VMX hidden as well as SVM), and its VMCALL, which
# the processor refuses with #UD, is the hypercall (also while tracing).
t_svm_intel_vendor() {
	local d=$(esp svm-intel-vendor)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-intel-vendor 60 --cpu-flags vendor=GenuineIntel
	expect "GenuineIntel processor with SVM: the svm backend; the guest's VMCALL arrives as #UD"
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect "GUEST-TEST: INFO: vendor not AMD, backend svm: the guest's hypercall is VMCALL"
	expect 'GUEST-TEST: PASS: vmxon_ud'
	expect 'GUEST-TEST: PASS: vmrun_ud'
	expect 'GUEST-TEST: PASS: feature_control_locked_vmx_off'
	expect 'GUEST-TEST: PASS: vmx_capability_msrs_gp'
	expect 'GUEST-TEST: PASS: hc_vmcall'
	expect 'GUEST-TEST: PASS: hc_traced_no_records'
	expect 'SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-intel-vendor
}

# A guest's triple fault ends the machine as it would without the
# hypervisor (issue 15): the platform's shutdown, which QEMU (-no-reboot)
# answers by exiting, after the hypervisor has said why and dumped the
# guest's state. Without the fix the machine sat there until the timeout.
t_svm_triple_fault() {
	local d=$(esp svm-triple-fault)
	add_guest "$d" t_triple
	printf 'next = \\EFI\\hvtrace\\t_triple.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-triple-fault 60
	[ "$RC" = 0 ] || REASONS="$REASONS; QEMU did not exit by itself (status $RC)"
	expect 'GUEST-TEST: INFO: about to triple-fault'
	expect 'guest triple fault \(shutdown\): the machine shuts down as the platform does'
	expect 'svm_dump: vcpu 0 VMCB at [0-9a-f]+: exit 7f'
	expect 'svm_dump:   rip [0-9a-f]{16}'
	reject 'FAIL: triple_fault'
	finish svm-triple-fault
}

# MOV to CR0 with NW set and CD clear (issue 15 item 3): the hardware
# gives #GP; QEMU's TCG takes it, and before the fix the next VMRUN
# refused the guest state ("unhandled exit") and the machine hung. Now
# the SVM backend intercepts CR0 writes and gives the #GP itself: t_triple
# sees vector 13 and goes on to its summary.
t_svm_cr0_nw_gp() {
	local d=$(esp svm-cr0-nw-gp)
	add_guest "$d" t_triple
	printf 'next = \\EFI\\hvtrace\\t_triple.efi\ncmdline = nw\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-cr0-nw-gp 60 --until 'SUMMARY: t_triple'
	expect 'about to set CR0.NW with CR0.CD clear'
	expect 'GUEST-TEST: PASS: cr0_nw_without_cd \(vec 13 '
	expect 'SUMMARY: t_triple: 1 passed, 0 failed'
	reject 'refused the guest|unhandled exit'
	finish svm-cr0-nw-gp
}

# triple_fault = halt: the guest stopped, the hypervisor resident, the
# machine left as it is (for extraction from RAM)
t_svm_triple_fault_halt() {
	local d=$(esp svm-triple-fault-halt)
	add_guest "$d" t_triple
	printf 'next = \\EFI\\hvtrace\\t_triple.efi\ntriple_fault = halt\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	# the guest is stopped for good: end QEMU once the dump is complete
	run svm-triple-fault-halt 60 --until 'hvtrace: error: svm_dump:   gdtr'
	expect 'GUEST-TEST: INFO: about to triple-fault'
	expect 'guest triple fault \(shutdown\): the guest is stopped; the hypervisor stays resident \(triple_fault = halt'
	expect 'svm_dump: vcpu 0 VMCB at [0-9a-f]+: exit 7f'
	reject 'FAIL: triple_fault'
	finish svm-triple-fault-halt
}

t_svm_mmio_high_bar() {
	local d=$(esp svm-mmio-high-bar)
	add_guest "$d" t_mmio
	printf 'next = \\EFI\\hvtrace\\t_mmio.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	local shm=$RUNS/svm-mmio-high-bar/ivshmem.bin
	truncate -s 4M "$shm"
	# no recorder configured: the device is the guest's, not a channel
	run svm-mmio-high-bar 60 -- -object memory-backend-file,id=hm,share=on,mem-path="$shm",size=4M \
		-device ivshmem-plain,memdev=hm
	expect 'hvtrace: hypervisor running'
	expect 'SUMMARY: t_mmio: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: ivshmem channel'
	# the pattern went through the nested page tables to the device: at the
	# BAR's start and end
	[ "$(head -c 25 "$shm")" = HVTRACE-MMIO-TEST-PATTERN ] || REASONS="$REASONS; pattern not at the start of the host file"
	[ "$(tail -c 64 "$shm" | head -c 25)" = HVTRACE-MMIO-TEST-PATTERN ] || REASONS="$REASONS; pattern not at the end of the host file"
	finish svm-mmio-high-bar
}

# The host channel (ivshmem-plain): t_chan probes for it through CF8/CFC,
# ECAM and BAR2. chan_run NAME ENABLE: a 16 MiB backing file filled with
# "HOSTDATA", the device on it, t_chan with `enable = ENABLE`.
chan_run() {
	local name=$1 d=$(esp $1)
	add_guest "$d" t_chan
	# a recorder configured: the loader takes the device as its channel
	printf 'next = \\EFI\\hvtrace\\t_chan.efi\nenable = %s\nflight.size = 64K\ntrace.start = hypercall\n' "$2" \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	CHAN=$RUNS/$name/chan.bin
	yes HOSTDATA | tr -d '\n' | head -c 16M >"$CHAN"
	run $name 60 -- -object memory-backend-file,id=hvt,share=on,mem-path="$CHAN",size=16M \
		-device ivshmem-plain,memdev=hvt
	expect 'SUMMARY: t_chan: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
}

t_svm_chan_hidden() {
	chan_run svm-chan-hidden yes
	expect 'hvtrace: ivshmem channel 0000:00:01.0: BAR0 [0-9a-f]+ \(256 bytes\), BAR2 [0-9a-f]+ \(16384 KiB\)'
	expect 'hvtrace: ivshmem 0000:00:01.0 hidden; ports cf8-cff intercepted'
	expect 'hvtrace: hypervisor running'
	expect 'GUEST-TEST: PASS: cf8_finds_host_bridge \(8086:29c0\)'
	expect 'GUEST-TEST: PASS: ecam_finds_host_bridge \(8086:29c0\)'
	expect 'GUEST-TEST: PASS: cf8_ivshmem_hidden'
	expect 'GUEST-TEST: PASS: ecam_ivshmem_hidden'
	expect 'GUEST-TEST: PASS: ecam_page_all_ones'
	expect 'GUEST-TEST: PASS: bar2_host_data_unreadable'
	reject 'hvtrace: error'
	# the guest wrote GUESTWRT over BAR2: none of it reached the host
	grep -qa GUESTWRT "$CHAN" && REASONS="$REASONS; the guest's pattern reached the host file"
	expect 'hvtrace: recorder: channel at [0-9a-f]+ \(ivshmem'
	[ "$(head -c 8 "$CHAN")" = HVTRCHN1 ] || REASONS="$REASONS; no channel header at the start of the host file"
	# past the channel's header page the host's data is as it was (the rings
	# are written only as records are made: none here), but for the
	# debugger's area (ABI 1.9: dbg_offset, the header's last 8 bytes, up to
	# the channel's size) and nothing after the channel's end
	local size=$(od -An -t u8 -j 24 -N 8 "$CHAN" | tr -d ' ') dbg=$(od -An -t u8 -j 4088 -N 8 "$CHAN" | tr -d ' ')
	hostdata() { [ "$(tail -c +$(($1 + 1)) "$CHAN" | head -c $2 | tr -d HOSTDA | wc -c)" = 0 ]; }
	[ "$dbg" -ge 4096 ] 2>/dev/null && [ "$size" -gt "$dbg" ] && [ "$size" -le 16777216 ] &&
		[ "$(tail -c +4097 "$CHAN" | head -c 8)" = HOSTDATA ] && hostdata 4096 $((dbg - 4096)) &&
		hostdata "$size" $((16777216 - size)) || REASONS="$REASONS; the host's data changed (size ${size:-?}, dbg_offset ${dbg:-?})"
	finish svm-chan-hidden
}

# The same probes without the hypervisor find the device: they can fail.
t_svm_chan_visible_without_hv() {
	chan_run chan-visible-without-hv no
	expect "hvtrace: 'enable = no'"
	expect 'GUEST-TEST: PASS: cf8_ivshmem_visible'
	expect 'GUEST-TEST: PASS: ecam_ivshmem_visible'
	expect 'GUEST-TEST: PASS: ecam_page_is_device'
	expect 'GUEST-TEST: PASS: bar2_host_data_readable'
	grep -qa GUESTWRT "$CHAN" || REASONS="$REASONS; the guest's pattern did not reach the host file"
	finish chan-visible-without-hv
}

# A hostile guest (docs/security.md): each attack on the hypervisor, then
# a check that it answers and its image is intact. A #DB or fault in root
# mode halts the machine, which the time bound turns into a failure.
t_svm_hostile() {
	local d=$(esp svm-hostile)
	add_guest "$d" t_hostile
	printf 'next = \\EFI\\hvtrace\\t_hostile.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-hostile 120
	expect 'hvtrace: hypervisor running'
	expect 'GUEST-TEST: PASS: breakpoints_on_hv_code_traced'
	expect 'GUEST-TEST: PASS: data_breakpoints_on_hv_traced'
	expect 'GUEST-TEST: PASS: pmi_with_apic_base_moved'
	expect 'GUEST-TEST: PASS: bts_wrap_refused'
	expect 'GUEST-TEST: PASS: invd_intercepted'
	expect 'hvtrace: .*the guest moves its local APIC to [0-9a-f]+: kept virtual'
	expect 'SUMMARY: t_hostile: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'in the hypervisor at rip'
	reject 'hvtrace: error'
	finish svm-hostile
}

# The hypervisor's own log UART (COM4, the runner's `serial = 0x2e8`) is no
# device to the guest (t_uart: every port, every width, the string forms
# and their faults; docs/security.md), and its lines keep coming after the
# guest wrote loopback, divisor and "UART-LEAK" bytes to it. uart_check
# NAME: the expectations each run shares.
uart_check() {
	expect 'hvtrace: hypervisor running'
	expect 'SUMMARY: t_uart: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'UART-LEAK'
	reject 'hvtrace: (error|warning)'
	finish "$1"
}
t_svm_uart() {
	local d=$(esp svm-uart)
	add_guest "$d" t_uart
	printf 'next = \\EFI\\hvtrace\\t_uart.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-uart 120
	expect 'GUEST-TEST: PASS: uart_rep_insb_huge_rcx_pf'
	uart_check svm-uart
}

# the same while the interpreting engine traces (from the guest's start
# hypercall before its checks to its stop hypercall after them); the
# recorder's stop line, which the hypervisor writes after the guest's last
# probe, must follow it in the log: the UART still the hypervisor's
t_svm_uart_traced() {
	local d=$(esp svm-uart-traced)
	add_guest "$d" t_uart
	printf '%s\n' 'next = \EFI\hvtrace\t_uart.efi' 'cmdline = traced' 'engine = interp' 'flight.size = 64K' \
		'trace.start = hypercall' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-uart-traced 180
	expect 'GUEST-TEST: PASS: uart_traced_stop'
	local probe=$(grep -an 'GUEST-TEST: PASS: uart_setup_not_kept' "$LOG" | head -1 | cut -d: -f1)
	local stop=$(grep -an 'hvtrace: recorder: tracing stopped' "$LOG" | tail -1 | cut -d: -f1)
	[ -n "$probe" ] && [ -n "$stop" ] && [ "$stop" -gt "$probe" ] ||
		REASONS="$REASONS; no hypervisor line after the guest reprogrammed its UART (lines $probe, $stop)"
	uart_check svm-uart-traced
}

# t_uart's checks on port 0x3e8, where QEMU has no device and nothing
# intercepts: the processor's own answers, which the hypervisor's
# emulation at 0x2e8 must equal (the same expectations)
t_svm_uart_native() {
	local d=$(esp svm-uart-native)
	add_guest "$d" t_uart
	printf '%s\n' 'next = \EFI\hvtrace\t_uart.efi' 'cmdline = native' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-uart-native 120
	expect 'GUEST-TEST: PASS: uart_rep_insb_huge_rcx_pf'
	uart_check svm-uart-native
}

# serial.hide = no: the same port is a UART the guest reaches (the hiding
# above is the hypervisor's doing, not the machine's)
t_svm_uart_shown() {
	local d=$(esp svm-uart-shown)
	add_guest "$d" t_uart
	printf '%s\n' 'next = \EFI\hvtrace\t_uart.efi' 'cmdline = shown' 'serial = 0x2e8' 'serial.hide = no' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-uart-shown 120
	expect 'GUEST-TEST: PASS: uart_shown_scratch_kept'
	uart_check svm-uart-shown
}

# t_hostile's attacks with engine = interp: the interpreter leaves what
# it must (the reserve, MMIO, a non-canonical address, each also by a locked
# read-modify-write: interp_memory), the
# traced sections behave as under the fast engine, the hypervisor intact
t_svm_hostile_interp() {
	local d=$(esp svm-hostile-interp)
	add_guest "$d" t_hostile
	printf 'next = \\EFI\\hvtrace\\t_hostile.efi\nengine = interp\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-hostile-interp 120
	expect 'hvtrace: engine = interp'
	expect 'GUEST-TEST: PASS: interp_hostile_memory'
	expect 'GUEST-TEST: PASS: interp_hostile_locked'
	expect 'GUEST-TEST: PASS: interp_hostile_invlpg'
	expect 'GUEST-TEST: INFO: interp_memory: [1-9][0-9]* instructions interpreted, [1-9][0-9]* left'
	expect 'GUEST-TEST: PASS: interp_hostile_memory_intact'
	expect 'GUEST-TEST: PASS: breakpoints_on_hv_code_traced'
	expect 'SUMMARY: t_hostile: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'in the hypervisor at rip'
	reject 'hvtrace: error'
	finish svm-hostile-interp
}

# t_bts under one engine: ENGINE = reference | fast, in run NAME (default
# svm-bts-ENGINE), with QEMU's CPU flags FLAGS when given; the caller
# finishes
bts_with_engine() {
	local name=${2:-svm-bts-$1}
	local d=$(esp $name)
	add_guest "$d" t_bts
	printf 'next = \\EFI\\hvtrace\\t_bts.efi\nengine = %s\n' "$1" >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 90 ${3:+--cpu-flags "$3"}
	expect 'hvtrace: hypervisor running'
	expect 'SUMMARY: t_bts: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
}
t_svm_bts_reference() { bts_with_engine reference; finish svm-bts-reference; }
t_svm_bts_fast() { bts_with_engine fast; finish svm-bts-fast; }
# engine = interp (docs/branch-engine.md "The interpreting engine"): the
# hypervisor ran t_bts's common instructions itself (the coverage line
# says how many), and the records equal the reference engine's
# (t_svm_bts_interp_agrees)
t_svm_bts_interp() {
	bts_with_engine interp
	expect 'hvtrace: engine = interp: the hypervisor interprets'
	expect 'GUEST-TEST: INFO: interp: [1-9][0-9]* instructions, [1-9][0-9]* branches interpreted'
	# t_bts test_pkeys: the user page's data under CR4.PKE interpreted with the
	# guest's PKRU (svm_guest_pkru); without it each access is left (65 left)
	expect 'GUEST-TEST: INFO: pkeys: [1-9][0-9]* instructions interpreted, [0-9] left'
	# t_bts test_flag_insns: STI (and its shadow), CLI, PUSHF, POPF, MOV r, SS,
	# PREFETCHT0 and BTS/BTR/BT on memory interpreted; the few left are the
	# vcpu_status hypercall's and an interrupt's
	expect 'GUEST-TEST: INFO: flag insns: [1-9][0-9]* instructions interpreted, [0-9] left'
	# the 32 INVLPGs of bts_invlpg interpreted: at most the first left
	expect 'GUEST-TEST: INFO: invlpg: [1-9][0-9]{2,} instructions interpreted, [0-2] left'
	finish svm-bts-interp
}
# engine = lbr where the processor has no architectural LBRs (QEMU's TCG,
# AMD: none): the hypervisor says so once and the fast engine runs t_bts,
# its decoded-block cache in use (docs/branch-engine.md "LBR batching")
t_svm_bts_lbr_fallback() {
	bts_with_engine lbr svm-bts-lbr-fallback
	expect 'hvtrace: warning: trace_vcpu_init: engine = lbr: no architectural LBRs hvtrace can use on this processor .*: the fast engine runs'
	expect 'GUEST-TEST: INFO: fast engine blocks: [1-9][0-9]* reused'
	finish svm-bts-lbr-fallback
}

# t_bts for an Intel guest under SVM (issue 14): its ring-3 SYSENTER goes
# to the handler and back by SYSEXIT, as on Intel's processors (QEMU's TCG
# follows the vendor). QEMU 7.2 leaves CS with both L and D set after
# them, which VMRUN refuses: the SVM backend clears D before each VMRUN
# (svm_cs_l_and_d); without that the guest ended at its SYSEXIT.
t_svm_bts_intel_vendor() {
	bts_with_engine fast svm-bts-intel-vendor vendor=GenuineIntel
	expect 'GUEST-TEST: INFO: ring 3: SYSENTER to its handler'
	finish svm-bts-intel-vendor
}

# The virtual PMU (docs/pmu.md) for an Intel guest under SVM: CPUID 0AH,
# the MSRs' #GP rules, exact instruction and branch counts with each
# sub-event and filter, the 48-bit wrap, the PMI; and for an AMD guest,
# none (leaf 0AH empty, the counters #GP).
# pmu_intel NAME BOUND [CONFIG LINE...]: t_pmu on an Intel-vendor guest,
# every check passing
pmu_intel() {
	local name=$1 bound=$2
	shift 2
	local d=$(esp $name)
	add_guest "$d" t_pmu
	printf '%s\n' 'next = \EFI\hvtrace\t_pmu.efi' "$@" >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name $bound --cpu-flags vendor=GenuineIntel
	expect 'hvtrace: hypervisor running'
	expect 'GUEST-TEST: PASS: count_branches_insns_os'
	expect 'GUEST-TEST: PASS: pmi_pmc_overflow'
	expect 'SUMMARY: t_pmu: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
}
# engine = fast named: the reference engine counts for it (t_pmu's
# branches_start_reference_engine); the default, interp, counts itself
# (svm-pmu-interp)
t_svm_pmu() {
	pmu_intel svm-pmu 90 'engine = fast'
	finish svm-pmu
}
# The same checks with engine = interp (issue #24 item 6): the interpreting
# engine counts the instructions and branches it runs for the virtual PMU
# and the reference engine steps what it leaves (docs/pmu.md)
t_svm_pmu_interp() {
	pmu_intel svm-pmu-interp 120 'engine = interp' 'cmdline = interp'
	expect 'hvtrace: engine = interp'
	expect 'interp: vcpu 0: the virtual PMU counts: interpreted instructions are counted'
	finish svm-pmu-interp
}
t_svm_pmu_amd() {
	local d=$(esp svm-pmu-amd)
	add_guest "$d" t_pmu
	printf 'next = \\EFI\\hvtrace\\t_pmu.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-pmu-amd 60
	expect 'GUEST-TEST: PASS: amd_cpuid_0a_empty'
	expect 'GUEST-TEST: PASS: amd_pmu_msrs_gp'
	expect 'SUMMARY: t_pmu: 3 passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-pmu-amd
}

# Both engines produce identical record streams on the same program.
# interp.verify = yes (docs/branch-engine.md "Verify mode"): every
# instruction the interpreter would run is also run by the processor (the
# reference engine's step) and the two compared; none may differ, on
# t_bts and on t_workload's Collatz loop (about 330,000 instructions)
interp_verify() { # NAME PROGRAM SECONDS
	local d=$(esp $1)
	add_guest "$d" $2
	printf 'next = \\EFI\\hvtrace\\%s.efi\nengine = interp\ninterp.verify = yes\n' $2 >"$d/EFI/hvtrace/hvtrace.cfg"
	run $1 $3
	expect 'hvtrace: hypervisor running'
	expect "SUMMARY: $2: [1-9][0-9]* passed, 0 failed, 0 skipped"
	expect 'hvtrace: interp.verify: vcpu 0: [1-9][0-9]* instructions checked against the processor, 0 differ'
	reject 'interp.verify: .* [1-9][0-9]* differ'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish $1
}
t_svm_bts_interp_verify() { interp_verify svm-bts-interp-verify t_bts 120; }
t_svm_workload_interp_verify() { interp_verify svm-workload-interp-verify t_workload 240; }
# ... and on Debian's kernel from start_kernel for 100,000 records (about 380,000
# instructions, each stepped by the processor too): the bound, not a whole boot, is
# make test's time budget (200,000 records: 139 s on a quiet day, 0 differ)
t_linux_interp_verify() {
	local name=linux-interp-verify
	kernel_symbols || { LOG=$RUNS/kernel-symbols/serial.log ELAPSED=0 REASONS="; no kernel symbols"; finish $name; return 0; }
	local sk=$(awk '$3 == "start_kernel" { print $1 }' "$SYMBOLS")
	local d=$(esp $name)
	add_linux "$d"
	printf '%s\n' 'next = \EFI\linux\vmlinuz' "cmdline = $LINUX_CMDLINE nokaslr no_timer_check" 'engine = interp' \
		'interp.verify = yes' 'flight.size = 64K' "trace.start = 0x$sk" 'trace.stop = records:100000' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 400 --cpu-flags -hypervisor --until 'recorder: tracing stopped'
	expect "recorder: tracing starts at $sk"
	expect 'recorder: tracing stopped \(trace.stop records reached\) after 100000 records'
	expect 'hvtrace: interp.verify: vcpu 0: [1-9][0-9]{5,} instructions checked against the processor, 0 differ'
	reject 'interp.verify: .* [1-9][0-9]* differ'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	finish $name
}

t_svm_bts_engines_agree() {
	engines_agree svm-bts-engines-agree svm-bts-reference svm-bts-fast
}
t_svm_bts_interp_agrees() {
	engines_agree svm-bts-interp-agrees svm-bts-reference svm-bts-interp
}

# Neither SVM nor VMX (qemu64 without svm): the loader says which CPUID
# bits it looked for and boots the next stage without the hypervisor.
t_svm_no_svm_cpu() {
	local d=$(esp no-svm-cpu)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run no-svm-cpu 60 --cpu qemu64,-svm
	expect 'hvtrace: hypervisor not started: this CPU has neither AMD SVM \(CPUID 0x80000001 ECX\[2\]\) nor Intel VMX \(CPUID 1 ECX\[5\]\)'
	expect 'hvtrace: booting \\EFI\\hvtrace\\t_basic.efi without the hypervisor'
	expect 'GUEST-TEST: INFO: running without hvtrace'
	finish no-svm-cpu
}

t_loader_missing_config() {
	local d=$(esp loader-missing-config)
	add_guest "$d" t_basic
	run loader-missing-config 60 --until "returning to the firmware's boot manager"
	expect 'hvtrace: cannot read \\EFI\\hvtrace\\hvtrace.cfg: Not Found'
	expect "hvtrace: no next stage configured: returning to the firmware's boot manager"
	reject 'hypervisor running'
	finish loader-missing-config
}

t_loader_enable_no() {
	local d=$(esp loader-enable-no)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\nenable = no\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run loader-enable-no 60
	expect "hvtrace: 'enable = no' in hvtrace.cfg: not starting the hypervisor"
	expect 'GUEST-TEST: INFO: running without hvtrace'
	finish loader-enable-no
}

t_loader_memory_too_small_for_heap() {
	local d=$(esp loader-bad-values)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\nmemory = 3M\nlog = chatty\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run loader-bad-values 60
	expect "hvtrace: hvtrace.cfg:2: memory: '3M' is out of range"
	expect "hvtrace: hvtrace.cfg:3: log: 'chatty' is not one of error, warn, info, debug"
	expect 'hvtrace: booting \\EFI\\hvtrace\\t_basic.efi without the hypervisor'
	expect 'GUEST-TEST: INFO: running without hvtrace'
	finish loader-bad-values
}

# --- Debian's Linux as the guest -----------------------------------------

# linux_guest NAME CPU-FLAGS [KERNEL ARGS]: Debian's Linux boots as the
# guest of the hypervisor, sees the hypervisor flag, and its agent's
# hypercall answers (EPERM for the privileged one from user space); the
# caller adds its own expectations and finishes
linux_guest() {
	local name=$1 d=$(esp "$1")
	add_linux "$d"
	printf 'next = \\EFI\\linux\\vmlinuz\ncmdline = %s\n' "$LINUX_CMDLINE${3:+ $3}" >"$d/EFI/hvtrace/hvtrace.cfg"
	run "$name" 120 --cpu-flags "$2"
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'HVTRACE-GUEST: init reached'
	expect 'HVTRACE-GUEST: cpu flag hypervisor: yes'
	expect "hvtrace-agent: hvtrace ABI $ABI_MAJOR\\.$ABI_MINOR,"
	expect 'hvtrace-agent: status hypercall from user space: -1 \(EPERM'
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: error'
	reject 'Kernel panic'
}

t_linux_boot() {
	linux_guest linux-boot -hypervisor
	finish linux-boot
}

# Linux booted from its uncompressed ELF by tests/guest/bootvmlinux.efi
# (the next stage of the whole-boot trace, tests/integration-boot.sh),
# under the hypervisor, untraced: the loader's boot_params (e820 from the
# firmware's final map, command line, initramfs, ACPI's RSDP) and its entry
# into startup_64 are right when the kernel reaches /init with the
# hypervisor flag and the agent's hypercall.
t_linux_bootvmlinux() {
	local name=linux-bootvmlinux d=$(esp linux-bootvmlinux)
	if [ ! -s "$BUILD/cache/linux/vmlinux" ] || [ ! -s "$BUILD/initrd.cpio" ]; then
		LOG=/dev/null ELAPSED=0 REASONS="; no $BUILD/cache/linux/vmlinux or $BUILD/initrd.cpio (make builds them)"
		finish $name
		return 0
	fi
	mkdir -p "$d/EFI/linux"
	cp "$BUILD/cache/linux/vmlinux" "$BUILD/initrd.cpio" "$d/EFI/linux/"
	cp "$BUILD/tests/guest/bootvmlinux.efi" "$d/EFI/hvtrace/"
	printf '%s\n' 'next = \EFI\hvtrace\bootvmlinux.efi' \
		'cmdline = vmlinux=\EFI\linux\vmlinux ramdisk=\EFI\linux\initrd.cpio console=ttyS0,115200 panic=-1 quiet' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 120 --cpu-flags -hypervisor
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'bootvmlinux: kernel 1000000-[0-9a-f]+ at [0-9a-f]+000, entry [0-9a-f]+'
	expect "bootvmlinux: cmdline 'console=ttyS0,115200 panic=-1 quiet', ramdisk [0-9a-f]+ \\(2[0-9]{6} bytes\\)"
	expect 'bootvmlinux: e820: [0-9]+ entries; leaving the firmware'
	expect 'HVTRACE-GUEST: init reached'
	expect 'HVTRACE-GUEST: cpu flag hypervisor: yes'
	expect "hvtrace-agent: hvtrace ABI $ABI_MAJOR\\.$ABI_MINOR,"
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	finish $name
}

# Linux on an Intel guest CPU under the SVM backend (issue 14): QEMU's -cpu
# max told it is GenuineIntel, so Linux runs its Intel code (init_intel,
# the Intel PMU probe) against hvtrace; its agent's VMCALL is the
# hypercall (by #UD), EPERM from user space as under VMMCALL. The PMU:
# hvtrace's virtual architectural PMU (CPUID leaf 0xA, version 2, with
# PERF_CAPABILITIES: docs/pmu.md) makes Linux register its Intel PMU
# driver, the generic architectural one (-cpu max is family 15 model 107,
# no model Linux knows), with adaptive PEBS and full-width counters:
# "Performance Events: PEBS fmt4+-baseline, generic architected perfmon,
# full-width counters, Intel PMU driver." (before PEBS: "generic
# architected perfmon, Intel PMU driver."; "-baseline" is what lets it
# schedule precise events on a model it does not know). Its NMI watchdog
# then counts cycles on fixed counter 1 (the
# TSC's) and reads the counters with RDPMC, which hvtrace emulates; before
# the virtual PMU it said "unsupported Netburst CPU model 107 no PMU
# driver, software events only". (With AuthenticAMD, linux-boot, Linux
# says "PMU not available due to virtualization, using software events
# only.")
t_linux_intel_vendor() {
	linux_guest linux-intel-vendor -hypervisor,vendor=GenuineIntel pti=off
	expect "GenuineIntel processor with SVM: the svm backend; the guest's VMCALL arrives as #UD"
	expect 'HVTRACE-GUEST: cpu vendor GenuineIntel'
	expect 'HVTRACE-GUEST: pmu: Performance Events: PEBS fmt4\+-baseline, generic architected perfmon, full-width counters, Intel PMU driver\.'
	expect 'HVTRACE-GUEST: perf event sources: .*\bcpu\b'
	# Linux's BTS driver on the virtual BTS: it refuses to load with
	# page-table isolation on, which Linux turns on for this Intel model
	expect 'HVTRACE-GUEST: perf event sources: .*\bintel_bts\b'
	finish linux-intel-vendor
}

# Every processor (docs/smp.md): four processors under the hypervisor
# before the next stage; t_smp runs code on each through MP services and
# starts one itself by INIT and SIPI.
t_svm_smp() {
	local d=$(esp svm-smp)
	add_guest "$d" t_smp
	printf 'next = \\EFI\\hvtrace\\t_smp.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-smp 90 --smp 4
	expect 'hvtrace: all 4 processors are under the hypervisor'
	expect 'GUEST-TEST: PASS: status_counts_every_processor'
	expect 'GUEST-TEST: PASS: each_cpu3_reserve_hidden'
	expect 'GUEST-TEST: PASS: own_sipi_starts_a_guest'
	expect 'hvtrace: warning: mp_icr_write: vcpu 0: INIT to APIC ID 85, a processor outside the hypervisor: dropped'
	expect 'SUMMARY: t_smp: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-smp
}

# The same with engine = interp (issue #24): t_smp's cross-modifying check
# (another processor rewrites the code the traced one calls between calls)
# under the interpreter's decode cache, whose entries are checked once per
# burst (docs/branch-engine.md "The interpreting engine")
t_svm_smp_interp() {
	local d=$(esp svm-smp-interp)
	add_guest "$d" t_smp
	printf 'next = \\EFI\\hvtrace\\t_smp.efi\nengine = interp\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-smp-interp 90 --smp 4
	expect 'hvtrace: engine = interp'
	expect 'GUEST-TEST: PASS: xmc_cross_modifying_code'
	expect 'GUEST-TEST: INFO: xmc: [1-9][0-9]* instructions interpreted'
	# t_smp lock_counter: LOCK XADD and LOCK CMPXCHG interpreted on one vCPU
	# while another adds to the same counter natively: the sum exact
	expect 'GUEST-TEST: PASS: lock_counter'
	expect 'GUEST-TEST: INFO: lock: [1-9][0-9]* instructions interpreted'
	expect 'SUMMARY: t_smp: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-smp-interp
}

# Processors ACPI lists that the firmware does not run (hot-pluggable ones,
# -smp 2,maxcpus=4): not taken, said on the console, and never startable
# by the guest; the two that run are both under the hypervisor.
t_svm_smp_hotplug() {
	local d=$(esp svm-smp-hotplug)
	add_guest "$d" t_smp
	printf 'next = \\EFI\\hvtrace\\t_smp.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-smp-hotplug 90 --smp 2,maxcpus=4
	expect 'hvtrace: all 2 processors are under the hypervisor'
	expect "hvtrace: ACPI's MADT lists 2 more processors not enabled \\(disabled, or hot-pluggable\\): the hypervisor will not let the OS start them"
	expect 'SUMMARY: t_smp: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish svm-smp-hotplug
}

# An interrupt the hypervisor injects is delivered once (t_irq; hv/svm/svm.c
# svm_tcg_injection_quirk): the boot processor is the channel's watcher
# (channel.control = poll by default), so its interrupts exit and are
# injected. QEMU's TCG delivered one a second time, nested in its own
# handler, when the 8259 woke the processor meanwhile.
t_svm_irq_once() {
	local d=$(esp svm-irq-once) chan=$RUNS/svm-irq-once/chan.bin
	add_guest "$d" t_irq
	printf 'next = \\EFI\\hvtrace\\t_irq.efi\nflight.size = 64K\ntrace.start = hypercall\n' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	chan_device "$chan"
	run svm-irq-once 60 -- "${CHAN_QEMU[@]}"
	expect 'hvtrace: recorder: host control requests read at every exit and while the guest halts'
	# the workaround runs where SVM has no NRIP save: QEMU's TCG (and a
	# KVM whose processor has none, as the nested tier's inside TCG)
	tests/lib/qemu.sh --which-accel | grep -q 'using KVM' ||
		expect "hvtrace: no NRIP save \\(QEMU's TCG\\): each external interrupt injected will be followed by an NMI exit"
	expect 'GUEST-TEST: PASS: irq_8259_delivered'
	expect 'GUEST-TEST: PASS: injected_interrupt_delivered_once'
	expect 'GUEST-TEST: PASS: irq_8259_lower_level_not_starved'
	expect 'GUEST-TEST: PASS: irq_isr_balanced'
	expect 'SUMMARY: t_irq: 4 passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish svm-irq-once
}

# The same program traced from boot (paced): the 8254's tick at the
# 8259's level 0 is always pending again when a paced handler ends, and
# the RTC's interrupt below it must still come (hv/dispatch/irq.c
# release_8259: failed before it, the RTC's never taken).
t_svm_irq_8259_traced() {
	local d=$(esp svm-irq-8259-traced)
	add_guest "$d" t_irq
	printf 'next = \\EFI\\hvtrace\\t_irq.efi\nflight.size = 1M\ntrace.start = boot\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run svm-irq-8259-traced 240
	expect 'recorder: .*tracing from boot'
	expect 'hvtrace: vcpu 0: interrupts from the 8259 held for pacing end in service there at once'
	expect 'GUEST-TEST: PASS: irq_8259_lower_level_not_starved'
	expect 'GUEST-TEST: PASS: irq_isr_balanced'
	expect 'SUMMARY: t_irq: 4 passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish svm-irq-8259-traced
}

# Linux with four processors: it starts the three others by INIT-SIPI-SIPI
# through the hypervisor, sees the same CPUID everywhere, the agent's
# hypercall answers on each CPU with that CPU's APIC ID, the channel device
# stays hidden, and a CPU taken offline comes back as a guest. Without
# `quiet`, Linux says nothing it would not say on the hardware (issue 25):
# no interrupt pending from before an INIT ("APIC: Stale IRR", then "No
# irq handler"), no MTRR write refused, no hvtrace warning.
t_linux_smp() {
	local d=$(esp linux-smp) chan=$RUNS/linux-smp/chan.bin
	add_linux "$d"
	printf 'next = \\EFI\\linux\\vmlinuz\ncmdline = %s hvtrace.smp\nflight.size = 64K\ntrace.start = hypercall\n' \
		"${LINUX_CMDLINE% quiet}" >"$d/EFI/hvtrace/hvtrace.cfg"
	chan_device "$chan"
	run linux-smp 180 --smp 4 --cpu-flags -hypervisor -- "${CHAN_QEMU[@]}"
	expect 'hvtrace: all 4 processors are under the hypervisor'
	expect 'HVTRACE-GUEST: smp cpus 4, flag lines 1, hypervisor on 4'
	local c
	for c in 0 1 2 3; do
		expect "HVTRACE-GUEST: smp cpu $c apicid $c agent $c\$"
	done
	expect 'HVTRACE-GUEST: smp ivshmem visible: no'
	expect 'HVTRACE-GUEST: smp cpu 3 offline 0 online 1 agent 3$'
	expect 'HVTRACE-GUEST: done'
	expect 'smpboot: Total of 4 processors activated'
	reject 'hvtrace: error'
	reject 'hvtrace: warning'
	reject 'Kernel panic'
	reject 'APIC: Stale IRR'
	reject 'No irq handler for'
	reject 'MTRR: CPU [0-9]+: Writing MSR'
	finish linux-smp
}

# Linux probes PCI through CF8/CFC (and ECAM above register 0xff): with the
# channel hidden it boots, enumerates the host bridge and never sees
# 1af4:1110. Kernel log at loglevel 7 for the enumeration lines; the
# hypervisor's debug log counts the port I/O exits (the cost).
t_linux_chan_hidden() {
	local d=$(esp linux-chan-hidden) chan=$RUNS/linux-chan-hidden/chan.bin
	add_linux "$d"
	printf 'next = \\EFI\\linux\\vmlinuz\ncmdline = %s\nlog = debug\nflight.size = 64K\ntrace.start = hypercall\n' \
		"${LINUX_CMDLINE/quiet/loglevel=7}" \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	chan_device "$chan"
	run linux-chan-hidden 150 --cpu-flags -hypervisor -- "${CHAN_QEMU[@]}"
	expect 'hvtrace: ivshmem 0000:00:01.0 hidden; ports cf8-cff intercepted'
	expect 'pci 0000:00:00.0: \[8086:29c0\]'
	expect 'HVTRACE-GUEST: init reached'
	expect 'HVTRACE-GUEST: done'
	reject '\[1af4:1110\]'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	finish linux-chan-hidden
}

t_linux_broken_config() {
	local d=$(esp linux-broken-config)
	add_linux "$d"
	printf 'next = \\EFI\\linux\\vmlinuz\ncmdline = %s\nmemory = lots\n' "$LINUX_CMDLINE" \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run linux-broken-config 120 --cpu-flags -hypervisor
	expect "hvtrace: hvtrace.cfg:3: memory: 'lots' is not a size"
	expect 'hvtrace: configuration errors: not starting the hypervisor'
	expect 'hvtrace: booting \\EFI\\linux\\vmlinuz without the hypervisor'
	expect 'HVTRACE-GUEST: init reached'
	expect 'HVTRACE-GUEST: cpu flag hypervisor: no'
	expect 'hvtrace-agent: not running under hvtrace'
	expect 'HVTRACE-GUEST: done'
	reject 'hvtrace: hypervisor running'
	finish linux-broken-config
}

# `make demo` end to end (scripts/demo.sh, issue #26): Linux boots under
# hvtrace on two processors, then again traced from start_kernel, drained
# by `hvtrace record` with none lost, reported with the kernel's symbols
# and exported for Perfetto; the demo's own checks fail it otherwise. And
# a healthy boot warns of nothing: no `hvtrace: warning` in either serial
# log.
t_demo() {
	local out=$RUNS/demo
	rm -rf "$out"
	mkdir -p "$out"
	SECONDS=0
	timeout $((300 * SCALE)) env DEMO_OUT="$out/files" DEMO_RECORDS=100000 scripts/demo.sh >"$out/demo.out" 2>&1
	RC=$?
	LOG=$out/demo.out ELAPSED=$SECONDS
	[ $RC = 0 ] || [ $RC = 124 ] || REASONS="$REASONS; exit $RC: $(grep -a -m1 '^demo: FAILED' "$LOG")"
	expect '^demo: traced Linux from start_kernel: 100000 records, none lost'
	expect '^ +1  start_kernel$'
	expect "^demo: start_kernel's own calls in the trace: .*setup_arch"
	expect '^demo: Perfetto file: .*/boot.json +\(open it at ui.perfetto.dev\)$'
	local w
	w=$(cat "$out"/files/serial-*.log 2>/dev/null | tr -d '\r' | grep -a 'hvtrace: warning' | head -1)
	[ -z "$w" ] || REASONS="$REASONS; a warning on a healthy boot: $w"
	finish demo
}

ALL="t_demo t_svm_guest_basic t_svm_intel_vendor t_svm_smp t_svm_smp_interp t_svm_smp_hotplug t_svm_irq_once t_svm_irq_8259_traced t_linux_smp t_svm_hostile t_svm_hostile_interp t_svm_uart t_svm_uart_traced t_svm_uart_native t_svm_uart_shown t_svm_triple_fault t_svm_triple_fault_halt t_svm_cr0_nw_gp t_svm_mmio_high_bar t_svm_chan_hidden t_svm_chan_visible_without_hv t_svm_bts_reference t_svm_bts_fast t_svm_bts_interp t_svm_bts_lbr_fallback t_svm_bts_engines_agree t_svm_bts_interp_agrees t_svm_bts_interp_verify t_svm_workload_interp_verify t_linux_interp_verify t_svm_bts_intel_vendor t_svm_pmu t_svm_pmu_interp t_svm_pmu_amd t_svm_no_svm_cpu t_loader_missing_config
t_loader_enable_no t_loader_memory_too_small_for_heap t_linux_boot t_linux_bootvmlinux t_linux_intel_vendor t_linux_chan_hidden t_linux_broken_config"

[ "${1:-}" = --list ] || accel_note
runner_main integration "$ALL" "$@"
