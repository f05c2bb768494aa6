#!/usr/bin/env bash
# make demo: boots Debian's Linux under hvtrace in QEMU (TCG unless the host
# offers nested KVM), showing the serial console live, and says whether the
# guest ran under the hypervisor.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
d=$BUILD/demo/esp
rm -rf "$BUILD/demo"
mkdir -p "$d/EFI/BOOT" "$d/EFI/hvtrace" "$d/EFI/linux"
cp "$BUILD/hvtrace.efi" "$d/EFI/BOOT/BOOTX64.EFI"
cp "$BUILD/cache/linux/vmlinuz" "$BUILD/initrd.gz" "$d/EFI/linux/"
cat >"$d/EFI/hvtrace/hvtrace.cfg" <<'CFG'
# hvtrace demo configuration (see docs/config.md)
next = \EFI\linux\vmlinuz
cmdline = initrd=\EFI\linux\initrd.gz console=ttyS0,115200 panic=-1 hvtrace.smp
memory = 32M
log = info
CFG
echo "demo: booting OVMF -> hvtrace.efi -> Linux $(cat "$BUILD/cache/linux/version") in QEMU, two processors (up to 120 s)"
tests/lib/qemu.sh --dir "$d" --log "$BUILD/demo/serial.log" --timeout 120 --tee --smp 2 --cpu-flags -hypervisor
rc=$?
log=$BUILD/demo/serial.log
echo
if grep -qa "all 2 processors are under the hypervisor" "$log" && grep -qa "cpu flag hypervisor: yes" "$log" &&
	grep -qa "HVTRACE-GUEST: smp cpu 1 apicid 1 agent 1" "$log" && grep -qa "HVTRACE-GUEST: done" "$log"; then
	echo "demo: Linux ran its /init on both processors as guests of hvtrace and powered off (serial log: $log)"
	exit 0
fi
[ $rc = 124 ] && echo "demo: QEMU did not finish within 120 s"
echo "demo: Linux did not boot under hvtrace; see $log"
exit 1
