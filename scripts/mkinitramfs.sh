#!/usr/bin/env bash
# Builds the guest's initramfs: busybox-static, hvtrace-agent and an /init
# that prints markers the tests look for, runs the workload named on the
# kernel command line (hvtrace.workload=md5:MIB; hvtrace.kallsyms prints
# the kernel's text symbols; hvtrace.smp checks every processor;
# hvtrace.crash panics the kernel through sysrq c; hvtrace.idle=S sleeps S
# seconds), then powers off.
# Usage: scripts/mkinitramfs.sh AGENT OUT.cpio.gz
#        scripts/mkinitramfs.sh --perf PERFROOT WORK BASE.cpio.gz OUT.cpio.gz [GDBROOT [ROOT...]]
# The second form is the perf tests' initramfs (tests/integration-perf.sh):
# BASE with a second archive appended (the kernel unpacks both) that adds
# Debian's perf and its libraries (PERFROOT, from scripts/fetch-perf.sh),
# Debian's gdb and its libraries (GDBROOT, from scripts/fetch-gdb.sh),
# perf's own test suite and bash (a ROOT, from scripts/fetch-perf-tests.sh),
# the test program WORK as /bin/perf-work and tests/perf/hvtrace-perf.sh as
# /bin/hvtrace-perf, which /init runs for hvtrace.perf=STEPS. The other
# Linux tests keep the small BASE.
set -eu
if [ "${1:-}" = --perf ]; then
	perfroot=${2:?} work=${3:?} base=${4:?} out=${5:?} gdbroot=${6:-}
	shift 5; [ $# = 0 ] || shift
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	cp -a "$perfroot/." "$root/"
	mkdir -p "$root/bin"
	if [ -n "$gdbroot" ]; then
		cp -a "$gdbroot/." "$root/"
		ln -s /usr/bin/gdb "$root/bin/gdb"
	fi
	for r in "$@"; do cp -a "$r/." "$root/"; done
	cp "$work" "$root/bin/perf-work"
	cp "$(dirname "$0")/../tests/perf/hvtrace-perf.sh" "$root/bin/hvtrace-perf"
	ln -s /usr/bin/perf "$root/bin/perf"
	{ cat "$base"; (cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) | gzip -6; } >"$out.tmp"
	mv "$out.tmp" "$out"
	exit 0
fi
agent=${1:?usage: mkinitramfs.sh AGENT OUT}
out=${2:?usage: mkinitramfs.sh AGENT OUT}
bb=/bin/busybox
[ -x "$bb" ] && "$bb" --list | grep -qx cpio || { echo "mkinitramfs: needs busybox-static (scripts/setup-deps.sh)" >&2; exit 1; }
file -L "$bb" 2>/dev/null | grep -q "statically linked" || true

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc}
cp "$bb" "$root/bin/busybox"
cp "$agent" "$root/bin/hvtrace-agent"
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "HVTRACE-GUEST: init reached, uptime $(cut -d' ' -f1 /proc/uptime) s"
if grep -qw hypervisor /proc/cpuinfo; then
	echo "HVTRACE-GUEST: cpu flag hypervisor: yes"
else
	echo "HVTRACE-GUEST: cpu flag hypervisor: no"
fi
# the processor the kernel found (issue 14: the vendor the guest sees) and
# what its perf code made of the PMU (the kernel's line, from dmesg)
echo "HVTRACE-GUEST: cpu vendor $(sed -n 's/^vendor_id[[:space:]]*: //p' /proc/cpuinfo | head -n 1), family $(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -n 1) model $(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "HVTRACE-GUEST: pmu: $(dmesg | sed -n 's/^\[[^]]*\] //; /Performance Events/p' | head -n 1)"
echo "HVTRACE-GUEST: perf event sources: $(ls /sys/bus/event_source/devices 2>/dev/null | tr '\n' ' ')"
hvtrace-agent version; echo "HVTRACE-GUEST: agent version exit $?"
hvtrace-agent status; echo "HVTRACE-GUEST: agent status exit $?"
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	hvtrace.workload=md5:*)
		mib=${arg#hvtrace.workload=md5:}
		t0=$(cut -d' ' -f1 /proc/uptime)
		sum=$(dd if=/dev/zero bs=1048576 count="$mib" 2>/dev/null | md5sum)
		t1=$(cut -d' ' -f1 /proc/uptime)
		echo "HVTRACE-GUEST: workload md5 ${mib} MiB: $t0 $t1 ${sum%% *}"
		;;
	hvtrace.smp)
		# every processor (issue 13): the same CPUID flags everywhere,
		# the agent's hypercall on each CPU names that CPU's APIC ID,
		# no ivshmem device, and a CPU taken offline comes back
		n=$(grep -c '^processor' /proc/cpuinfo)
		echo "HVTRACE-GUEST: smp cpus $n, flag lines $(grep '^flags' /proc/cpuinfo | sort -u | wc -l), hypervisor on $(grep '^flags' /proc/cpuinfo | grep -cw hypervisor)"
		cpu=0
		for apic in $(sed -n 's/^apicid[[:space:]]*: //p' /proc/cpuinfo); do
			echo "HVTRACE-GUEST: smp cpu $cpu apicid $apic agent $(taskset -c $cpu hvtrace-agent version | sed -n 's/.*(APIC ID \([0-9]*\)).*/\1/p')"
			cpu=$((cpu + 1))
		done
		ivs=no
		for d in /sys/bus/pci/devices/*; do
			[ "$(cat $d/vendor)$(cat $d/device)" = 0x1af40x1110 ] && ivs=yes
		done
		echo "HVTRACE-GUEST: smp ivshmem visible: $ivs"
		last=$((n - 1))
		if [ "$last" -gt 0 ]; then
			echo 0 > /sys/devices/system/cpu/cpu$last/online
			off=$(cat /sys/devices/system/cpu/cpu$last/online)
			echo 1 > /sys/devices/system/cpu/cpu$last/online
			on=$(cat /sys/devices/system/cpu/cpu$last/online)
			echo "HVTRACE-GUEST: smp cpu $last offline $off online $on agent $(taskset -c $last hvtrace-agent version | sed -n 's/.*(APIC ID \([0-9]*\)).*/\1/p')"
		fi
		;;
	hvtrace.crash)
		# a kernel panic on purpose (issue 12's freeze tests): with
		# panic=0 the kernel then hangs in its panic loop
		echo "HVTRACE-GUEST: crashing the kernel through sysrq c"
		echo c > /proc/sysrq-trigger
		;;
	hvtrace.idle=*)
		# an idle kernel for a while (issue 12's host control on an
		# idle guest): nothing runs, the processors halt
		echo "HVTRACE-GUEST: idle for ${arg#hvtrace.idle=} s"
		sleep "${arg#hvtrace.idle=}"
		echo "HVTRACE-GUEST: idle done"
		;;
	hvtrace.perf=*)
		# Linux's perf on the virtual PMU and BTS (the perf initramfs
		# only: tests/integration-perf.sh); the kernel's own lines first
		dmesg | sed -n 's/^\[[^]]*\] //; /Performance Events\|^\.\.\. \|intel_bts\|BTS/p' | sed 's/^/HVTRACE-GUEST: dmesg: /'
		if [ -x /bin/hvtrace-perf ]; then
			hvtrace-perf "${arg#hvtrace.perf=}"
		else
			echo "HVTRACE-GUEST: perf: not in this initramfs"
		fi
		;;
	hvtrace.kallsyms)
		# the kernel's text symbols for the host's `hvtrace symbols`
		# (Debian ships only a placeholder System.map)
		hvtrace-agent symbols; echo "HVTRACE-GUEST: agent symbols exit $?"
		;;
	esac
done
echo "HVTRACE-GUEST: done"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | "$bb" cpio -o -H newc 2>/dev/null) | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
