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
cmdline = initrd=\EFI\linux\initrd.gz console=ttyS0,115200 panic=-1
memory = 32M
log = info
CFG
echo "demo: booting OVMF -> hvtrace.efi -> Linux $(cat "$BUILD/cache/linux/version") in QEMU (up to 120 s)"
tests/lib/qemu.sh --dir "$d" --log "$BUILD/demo/serial.log" --timeout 120 --tee --cpu-flags -hypervisor
rc=$?
log=$BUILD/demo/serial.log
echo
if grep -qa "hypervisor running" "$log" && grep -qa "cpu flag hypervisor: yes" "$log" &&
	grep -qa "hvtrace-agent: hvtrace ABI" "$log" && grep -qa "HVTRACE-GUEST: done" "$log"; then
	echo "demo: Linux booted to its shell as a guest of hvtrace and powered off (serial log: $log)"
	exit 0
fi
[ $rc = 124 ] && echo "demo: QEMU did not finish within 120 s"
echo "demo: Linux did not boot under hvtrace; see $log"
exit 1
