#!/usr/bin/env bash
# Integration tests of the Intel VMX backend under Bochs + OVMF (Bochs
# emulates VMX with EPT, unrestricted guest and the monitor trap flag; QEMU's
# TCG has no VMX). EFI guest programs chain-loaded by hvtrace.efi; Linux is
# not practical under Bochs (docs/testing.md). Each test has a hard time
# bound; each prints PASS or FAIL with the reason, and the serial log (and
# Bochs's own log) stays in build/test-runs/NAME/.
#
#   tests/integration-vmx.sh [--list] [PATTERN...]   (default: all tests)
#
# Environment: see tests/lib/runner.sh (BUILD, HVTRACE_TIME_SCALE);
# HVTRACE_VMX_JOBS: Bochs runs at a time (default 2).
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh

run() { local name=$1; boot bochs "$@" --keep "$RUNS/$name"; }

# --- EFI guest programs under VMX -------------------------------------------

# with engine = lbr, which Bochs cannot run (no architectural LBRs, no
# PMU): VMX's capability probe says so and the fast engine stands in
# (docs/branch-engine.md "LBR batching"); t_basic's traced stretch runs on it
t_vmx_guest_basic() {
	local d=$(esp vmx-guest-basic)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\nengine = lbr\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-guest-basic 150 --until 'SUMMARY: t_basic'
	expect 'hvtrace: VMX: revision [0-9a-f]+, controls .*, monitor trap flag'
	expect 'hvtrace: warning: trace_vcpu_init: engine = lbr: no architectural LBRs hvtrace can use on this processor .*: the fast engine runs'
	expect 'hvtrace: EPT: identity map of [0-9]+ GiB'
	expect 'hvtrace: vmx backend ready'
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'GUEST-TEST: INFO: running under hvtrace'
	expect 'GUEST-TEST: PASS: vmxon_ud'
	expect 'GUEST-TEST: PASS: cr4_vmxe_set_gp'
	expect 'GUEST-TEST: PASS: feature_control_locked_vmx_off'
	expect 'SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish vmx-guest-basic
}

# Two processors under VMX (Bochs is built with SMP support): both taken
# before the next stage; t_smp on the application processor through MP
# services (the firmware wakes it by INIT-SIPI-SIPI, which the hypervisor
# delivers: the APIC page is read-only in the EPT) and its own SIPI.
t_vmx_smp() {
	local d=$(esp vmx-smp)
	add_guest "$d" t_smp
	# engine = fast: t_smp's lock_counter traces its CMPXCHG loop only under the
	# interpreting engine, and Bochs, which runs its processors in turns in one thread,
	# lets the other add hundreds of times during each interpreted instruction there:
	# the loop's CMPXCHG never finds the value it read (vmx-smp timed out at 900 s)
	printf 'next = \\EFI\\hvtrace\\t_smp.efi\nengine = fast\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-smp 600 --smp 2 --until 'SUMMARY: t_smp'
	expect 'hvtrace: all 2 processors are under the hypervisor'
	expect 'GUEST-TEST: PASS: status_counts_every_processor'
	expect 'GUEST-TEST: PASS: each_cpu1_version_names_vcpu'
	expect 'GUEST-TEST: PASS: own_sipi_starts_a_guest'
	expect 'GUEST-TEST: PASS: init_clears_pending_interrupts'
	expect 'SUMMARY: t_smp: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish vmx-smp
}

# What a guest can tell of the hypervisor (issue 25), idle under VMX: NMI
# blocking (the processor keeps it: NMIs are not intercepted idle), INT n
# in an STI shadow, prompt self-IPIs, MTRR writes taken and read back, the
# frame-pointer chain the loader hands over. Every check must pass (each
# passes without the hypervisor: the SVM differential tier compares them).
t_vmx_fidel() {
	local d=$(esp vmx-fidel)
	add_guest "$d" t_fidel
	printf 'next = \\EFI\\hvtrace\\t_fidel.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-fidel 300 --until 'SUMMARY: t_fidel'
	expect 'hvtrace: hypervisor running; this processor is now its guest'
	expect 'GUEST-TEST: PASS: nmi_blocked_until_iret'
	expect 'GUEST-TEST: PASS: mtrr_disable_and_restore'
	expect 'SUMMARY: t_fidel: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	reject 'hvtrace: warning'
	finish vmx-fidel
}

# The port I/O exit path under VMX: Bochs (i440fx) has no ivshmem and no
# MCFG, so t_chan's scan through CF8/CFC runs with only 0xCF9 intercepted
# (every dword CONFIG_ADDRESS write exits) and must still find the host
# bridge (8086:1237) and the same devices as without the hypervisor.
t_vmx_pci_cf8() {
	local d=$(esp vmx-pci-cf8)
	add_guest "$d" t_chan
	printf 'next = \\EFI\\hvtrace\\t_chan.efi\nlog = debug\nflight.size = 64K\ntrace.start = hypercall\n' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-pci-cf8 150 --until 'SUMMARY: t_chan'
	expect 'hvtrace: no ivshmem channel: nothing to hide; port 0xcf9 watched for resets'
	expect 'hvtrace: hypervisor running'
	expect 'GUEST-TEST: PASS: cf8_finds_host_bridge \(8086:1237\)'
	expect 'pcihide_io: 4096 port I/O exits, 0 of them hidden'
	expect 'SUMMARY: t_chan: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish vmx-pci-cf8
}

t_vmx_triple_fault() {
	local d=$(esp vmx-triple-fault)
	add_guest "$d" t_triple
	printf 'next = \\EFI\\hvtrace\\t_triple.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	# the machine shuts down as without the hypervisor: Bochs, configured
	# not to reset on a triple fault (tests/lib/bochs.sh), ends with its
	# own "3rd exception with no resolution" panic
	run vmx-triple-fault 150
	expect 'GUEST-TEST: INFO: about to triple-fault'
	expect 'guest triple fault \(shutdown\): the machine shuts down as the platform does'
	expect 'vmx_dump: vcpu 0 VMCS at [0-9a-f]+: exit reason 2 \(triple fault\)'
	expect 'vmx_dump:   rip [0-9a-f]{16}'
	expect 'dump_seg:   cs   sel [0-9a-f]{4} ar '
	expect 'vmx_dump:   gdtr [0-9a-f]{16}/[0-9a-f]+ idtr 0000000000000000/0 '
	reject 'FAIL: triple_fault'
	grep -q '3rd (13) exception with no resolution' "$RUNS/vmx-triple-fault/bochs.log" 2>/dev/null ||
		REASONS="$REASONS; Bochs did not see the processor shut down (bochs.log)"
	[ "$RC" != 124 ] || REASONS="$REASONS; Bochs ran until the timeout"
	finish vmx-triple-fault
}

# A hostile guest under VMX (docs/security.md): the same attacks as
# t_svm_hostile, each answered by the VMX backend's own intercepts.
t_vmx_hostile() {
	local d=$(esp vmx-hostile)
	add_guest "$d" t_hostile
	printf 'next = \\EFI\\hvtrace\\t_hostile.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-hostile 200 --until 'SUMMARY: t_hostile'
	expect 'hvtrace: vmx backend ready'
	expect 'GUEST-TEST: PASS: breakpoints_on_hv_code_traced'
	expect 'GUEST-TEST: PASS: data_breakpoints_on_hv_traced'
	expect 'GUEST-TEST: PASS: pmi_with_apic_base_moved'
	expect 'GUEST-TEST: PASS: bts_wrap_refused'
	expect 'GUEST-TEST: PASS: invd_intercepted'
	expect 'SUMMARY: t_hostile: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	reject 'in the hypervisor at rip'
	finish vmx-hostile
}

# The hypervisor's log UART (COM4, the runner's `serial = 0x2e8`) is no
# device under VMX either (t_uart, tests/integration.sh t_svm_uart): its
# ports in the I/O bitmaps, the string forms and their faults; untraced,
# then with the interpreting engine tracing the checks (a million
# instructions: about 115 s), where the
# recorder's stop line must still reach the log after the guest
# reprogrammed "its" UART.
# vmx_uart NAME BOUND CFG-LINES...
vmx_uart() {
	local name=$1 bound=$2 d=$(esp $1)
	shift 2
	add_guest "$d" t_uart
	printf '%s\n' 'next = \EFI\hvtrace\t_uart.efi' "$@" >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name $bound --until 'SUMMARY: t_uart'
	expect 'hvtrace: vmx backend ready'
	expect 'GUEST-TEST: PASS: uart_rep_insb_huge_rcx_pf'
	expect 'SUMMARY: t_uart: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'UART-LEAK'
	reject 'hvtrace: (error|warning)'
}
t_vmx_uart() {
	vmx_uart vmx-uart 200
	finish vmx-uart
}
t_vmx_uart_traced() {
	vmx_uart vmx-uart-traced 300 'cmdline = traced' 'engine = interp' 'flight.size = 64K' 'trace.start = hypercall'
	expect 'hvtrace: recorder: tracing stopped'
	finish vmx-uart-traced
}

# A CPU model without the monitor trap flag: the backend runs all the same
# and does not claim HV_CAP_MTF.
t_vmx_no_mtf_cpu() {
	local d=$(esp vmx-no-mtf-cpu)
	add_guest "$d" t_basic
	printf 'next = \\EFI\\hvtrace\\t_basic.efi\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-no-mtf-cpu 150 --cpu corei7_skylake_x --until 'SUMMARY: t_basic'
	expect 'hvtrace: VMX: revision [0-9a-f]+, controls '
	reject 'hvtrace: VMX: .*monitor trap flag'
	expect 'SUMMARY: t_basic: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish vmx-no-mtf-cpu
}

# t_bts under VMX with one engine: the same exact records as under SVM
vmx_bts_with_engine() {
	local name=vmx-bts-$1
	local d=$(esp $name)
	add_guest "$d" t_bts
	# cmdline = bochs: t_bts's bts_code_cross_page names Bochs's own stale
	# immediate a skip (docs/testing.md "Known emulator divergences")
	printf 'next = \\EFI\\hvtrace\\t_bts.efi\nengine = %s\ncmdline = bochs\n' "$1" >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 200 --until 'SUMMARY: t_bts'
	expect 'hvtrace: vmx backend ready'
	expect 'SUMMARY: t_bts: [1-9][0-9]* passed, 0 failed'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish $name
}
t_vmx_bts_fast() { vmx_bts_with_engine fast; }
t_vmx_bts_reference() { vmx_bts_with_engine reference; }
# engine = interp under VMX (Bochs's processor computes the interpreter's
# flags as it runs the guest's), its records equal the reference engine's
# (t_vmx_bts_interp_agrees; run vmx-bts-reference first)
t_vmx_bts_interp() { vmx_bts_with_engine interp; }
# interp.verify = yes under VMX (docs/branch-engine.md "Verify mode"): every
# instruction the interpreter would run on t_bts also stepped by Bochs's
# processor (the reference engine's monitor trap flag) and compared. One
# difference is Bochs's, and verify finds it: bts_code_cross_page's MOV whose
# immediate ends on a page remapped under it, which Bochs runs with the old
# mapping's bytes (docs/testing.md "Known emulator divergences"; t_bts skips
# that check by name with cmdline = bochs). Only that one instruction, with the
# old and the new immediate, may differ.
t_vmx_bts_interp_verify() {
	local name=vmx-bts-interp-verify
	local d=$(esp $name)
	add_guest "$d" t_bts
	printf 'next = \\EFI\\hvtrace\\t_bts.efi\nengine = interp\ninterp.verify = yes\ncmdline = bochs\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run $name 200 --until 'SUMMARY: t_bts'
	expect 'hvtrace: vmx backend ready'
	expect 'SUMMARY: t_bts: [1-9][0-9]* passed, 0 failed'
	local line=$(grep -aE 'hvtrace: interp.verify: vcpu 0: [1-9][0-9]* instructions checked against the processor, [0-9]+ differ' "$LOG" | tail -1)
	local differ=$(sed -nE 's/.* ([0-9]+) differ$/\1/p' <<<"$line")
	local known=$(grep -ac 'verify_report: interp.verify: vcpu 0: registers differ at rip 200000004ffd: b8 55 66 33 44 $' "$LOG")
	local other=$(grep -a 'hvtrace: error' "$LOG" | grep -avE 'verify_report: (interp.verify: vcpu 0: registers differ at rip 200000004ffd: b8 55 66 33 44 |  gpr 0: before 0, interpreter 44336655, processor 22116655|  rip: interpreter 200000005002, processor 200000005002; rflags: before 46, interpreter 46, processor 46)$' | head -1)
	[ -n "$differ" ] || REASONS="$REASONS; missing: the interp.verify count line"
	[ -z "$differ" ] || [ "$differ" -le 8 -a "$differ" = "$known" ] ||
		REASONS="$REASONS; $differ differ, $known of them Bochs's stale immediate"
	[ -z "$other" ] || REASONS="$REASONS; unexpected: $other"
	reject 'GUEST-TEST: FAIL'
	finish $name
}
# The two engines' record streams under VMX, record for record, as
# svm-bts-engines-agree does under SVM (run vmx-bts-fast and
# vmx-bts-reference first: a pattern of vmx-bts runs all three).
t_vmx_bts_engines_agree() {
	engines_agree vmx-bts-engines-agree vmx-bts-reference vmx-bts-fast
}
t_vmx_bts_interp_agrees() {
	engines_agree vmx-bts-interp-agrees vmx-bts-reference vmx-bts-interp
}

# The virtual PMU under VMX (docs/pmu.md): t_pmu as under SVM (svm-pmu),
# Bochs's CPU being Intel's; RDPMC through its VMX exit.
t_vmx_pmu() {
	local d=$(esp vmx-pmu)
	add_guest "$d" t_pmu
	# engine = fast: the reference engine counts (as svm-pmu)
	printf 'next = \\EFI\\hvtrace\\t_pmu.efi\nengine = fast\n' >"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-pmu 200 --until 'SUMMARY: t_pmu'
	expect 'hvtrace: vmx backend ready'
	expect 'GUEST-TEST: PASS: count_branches_insns_os'
	expect 'GUEST-TEST: PASS: count_ring3_usr'
	expect 'GUEST-TEST: PASS: rdpmc_gp_counter'
	# pmi_storm_lets_interrupt_in is skipped under VMX (its second NMI
	# PMI stays blocked: t_pmu.c, docs/pmu.md)
	expect 'SUMMARY: t_pmu: [1-9][0-9]* passed, 0 failed, 1 skipped'
	expect 'GUEST-TEST: SKIP: pmi_storm_lets_interrupt_in'
	reject 'GUEST-TEST: FAIL'
	reject 'hvtrace: error'
	finish vmx-pmu
}

# The recorder under VMX: the trace-control hypercall (VMCALL) and exact
# record counts seen from the guest, as under SVM.
t_vmx_rec_basic() {
	local d=$(esp vmx-rec-basic)
	add_guest "$d" t_rec
	printf 'next = \\EFI\\hvtrace\\t_rec.efi\nflight.size = 64K\ntrace.start = hypercall\n' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-rec-basic 200 --until 'SUMMARY: t_rec'
	expect 'hvtrace: recorder: channel at [0-9a-f]+ \(reserved RAM'
	expect 'GUEST-TEST: PASS: loop_1000_records'
	expect 'SUMMARY: t_rec: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish vmx-rec-basic
}
# Traced from boot with no stop, the firmware's timer running: its
# interrupts exit whatever the guest's IF (VMX external-interrupt exiting),
# wait for the interrupt window and are paced (trace.pace), and the firmware
# still loads t_rec, which finds the engine running and the interrupts
# injected and paced (as svm-rec-boot-paced under SVM, without the snapshot).
t_vmx_rec_boot_paced() {
	local d=$(esp vmx-rec-boot-paced)
	add_guest "$d" t_rec
	# engine = fast: a vector is paced when its traced handler takes half its period
	# or more; the interpreting engine runs the firmware's timer handler under Bochs
	# well within it (0 of 39 interrupts paced: nothing to check)
	printf 'next = \\EFI\\hvtrace\\t_rec.efi\ncmdline = b\nflight.size = 4M\ntrace.start = boot\nengine = fast\n' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-rec-boot-paced 300 --until 'SUMMARY: t_rec'
	expect 'recorder: .*tracing from boot'
	expect 'GUEST-TEST: PASS: traced_from_boot'
	expect 'GUEST-TEST: PASS: timer_interrupts_paced'
	expect 'SUMMARY: t_rec: [1-9][0-9]* passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish vmx-rec-boot-paced
}
# trace.start at an address reached with the engine already on for the
# guest (BTF), as svm-rec-trigger-engine-on.
t_vmx_rec_trigger_engine_on() {
	local d=$(esp vmx-rec-trigger-engine-on)
	add_guest "$d" t_rec
	printf 'next = \\EFI\\hvtrace\\t_rec.efi\ncmdline = a\nflight.size = 64K\nflight.range = 0x4000000-0x4000fff\ntrace.start = 0x4000000\n' \
		>"$d/EFI/hvtrace/hvtrace.cfg"
	run vmx-rec-trigger-engine-on 200 --until 'SUMMARY: t_rec'
	expect 'recorder: tracing starts at 0*4000000$'
	expect 'GUEST-TEST: PASS: trigger_with_engine_on'
	expect 'SUMMARY: t_rec: 3 passed, 0 failed, 0 skipped'
	reject 'hvtrace: error'
	finish vmx-rec-trigger-engine-on
}
# Two Bochs runs at a time (tests/lib/runner.sh runner_parallel): each is
# one single-threaded process whose guest clock counts instructions
# (`clock: sync=none`, tests/lib/bochs.sh), so a guest's progress does not
# depend on the host's load, and each has its own directory, disk image and
# serial port. HVTRACE_VMX_JOBS=1 runs them one at a time.
RUNNER_JOBS=${HVTRACE_VMX_JOBS:-2}
RUNNER_AFTER[t_vmx_bts_engines_agree]="t_vmx_bts_reference t_vmx_bts_fast"
RUNNER_AFTER[t_vmx_bts_interp_agrees]="t_vmx_bts_reference t_vmx_bts_interp"
ALL="t_vmx_guest_basic t_vmx_smp t_vmx_fidel t_vmx_hostile t_vmx_uart t_vmx_uart_traced t_vmx_pci_cf8 t_vmx_triple_fault t_vmx_no_mtf_cpu t_vmx_bts_fast t_vmx_bts_reference t_vmx_bts_engines_agree t_vmx_bts_interp t_vmx_bts_interp_agrees t_vmx_bts_interp_verify t_vmx_pmu t_vmx_rec_basic
t_vmx_rec_boot_paced t_vmx_rec_trigger_engine_on"

runner_main integration-vmx "$ALL" "$@"
