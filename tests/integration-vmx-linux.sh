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
#                   records (the fast engine, the flight recorder)
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
# flight recorder, in reserved RAM (Bochs has no ivshmem): the recorder
# says it started there and stopped at the count, and the kernel goes on
# to /init
t_vmx_linux_traced() {
	local map=${TINY_DIR:-$BUILD/cache/tiny-linux}/System.map
	local sk=$(awk '$3 == "start_kernel" { print $1 }' "$map" 2>/dev/null)
	if [ -z "$sk" ]; then
		LOG=/dev/null ELAPSED=0 REASONS="; no start_kernel in $map"
	else
		VMX_LINUX_CFG=$(printf 'flight.size = 4M\ntrace.start = 0x%s\ntrace.stop = records:20000' "$sk")
		vmx_linux vmx-linux-traced yes 900 "$TINY" "" &&
			{ expect 'hvtrace: recorder: channel at [0-9a-f]+ \(reserved RAM'
			  expect "hvtrace: recorder: tracing starts at 0*$sk\$"
			  expect 'hvtrace: recorder: tracing stopped \(trace.stop records reached\) after 20000 records'
			  expect 'HVTRACE-GUEST: cpu flag hypervisor: yes'; }
		VMX_LINUX_CFG=
	fi
	finish vmx-linux-traced
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
TINY_SMP=${TINY_SMP_DIR:-$BUILD/cache/tiny-linux-smp}/vmlinux
runner_main integration-vmx-linux "t_vmx_linux_bare t_vmx_linux t_vmx_linux_traced t_vmx_linux_smp_bare t_vmx_linux_smp" "$@"
