#!/usr/bin/env bash
# make bench, part 4: how many branches a whole Linux boot is (issue #16:
# "the number of branches from start_kernel to /init"), counted on an
# untraced boot by a QEMU TCG plugin (bench/tools/branchcount.c: every
# translation block that does not start where the previous one ended, as a
# BTS records them: taken branches, interrupts, exceptions). Debian's
# kernel, 1 vCPU, 512 MiB, nokaslr, lpj= (as the traced tests boot it),
# its gzip initramfs. Counted from the processor's reset: to start_kernel
# (the firmware, the loader and the EFI stub, whose XZ decompression of
# the kernel is nearly all of it), to populate_rootfs, to run_init_process
# (the kernel about to exec /init); then the same kernel as make test-boot
# boots it (tests/guest/bootvmlinux.efi: the uncompressed ELF, no EFI stub,
# the initramfs uncompressed). With the traced rate bench/run.sh
# measured in the same `make bench` (build/bench/trace.rates), the time a
# lossless trace of each part would take at that rate.
# Saved in bench/results/boot-branches-<date>.txt.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export HVTRACE_QUIET_ACCEL=1
. tests/lib/runner.sh
. bench/lib.sh
sk=$(sym start_kernel) pr=$(sym populate_rootfs) ri=$(sym run_init_process)
d=$(esp bench-branches)
add_linux "$d"
mhz=$(awk -F': *' '/^cpu MHz/ { print int($2); exit }' /proc/cpuinfo)
printf '%s\n' 'next = \EFI\linux\vmlinuz' \
	"cmdline = $LINUX_CMDLINE nokaslr lpj=$(((${mhz:-2500} * 1000000) / 250))" 'enable = no' \
	>"$d/EFI/hvtrace/hvtrace.cfg"
echo "bench: counting a whole boot's branches (untraced, QEMU plugin)" >&2
boot qemu bench-branches 600 --until 'HVTRACE-GUEST: init reached' --cpu-flags -hypervisor -- \
	-plugin "$plugin,start=0,at=0x$sk,at=0x$pr,at=0x$ri"
out=$RUNS/bench-branches/qemu.out
at() { sed -nE "s/^branchcount: at 0x0*$1: ([0-9]+) transfers.*/\\1/p" "$out"; }
n_sk=$(at "$sk") n_pr=$(at "$pr") n_ri=$(at "$ri")
if [ -z "$n_sk" ] || [ -z "$n_pr" ] || [ -z "$n_ri" ] || ! grep -qa 'init reached' "$LOG"; then
	echo "bench: the counted boot did not reach /init with every checkpoint; see $out" >&2
	exit 1
fi
# the same kernel as the whole-boot test boots it (make test-boot):
# tests/guest/bootvmlinux.efi, its uncompressed ELF and initramfs
bv=""
if [ -s "$BUILD/cache/linux/vmlinux" ] && [ -s "$BUILD/initrd.cpio" ]; then
	d=$(esp bench-branches-bv)
	mkdir -p "$d/EFI/linux"
	cp "$BUILD/cache/linux/vmlinux" "$BUILD/initrd.cpio" "$d/EFI/linux/"
	cp "$BUILD/tests/guest/bootvmlinux.efi" "$d/EFI/hvtrace/"
	printf '%s\n' 'next = \EFI\hvtrace\bootvmlinux.efi' \
		"cmdline = vmlinux=\\EFI\\linux\\vmlinux ramdisk=\\EFI\\linux\\initrd.cpio console=ttyS0,115200 panic=-1 quiet nokaslr lpj=$(((${mhz:-2500} * 1000000) / 250))" \
		'enable = no' >"$d/EFI/hvtrace/hvtrace.cfg"
	echo "bench: counting the same boot through bootvmlinux (uncompressed kernel and initramfs)" >&2
	boot qemu bench-branches-bv 600 --until 'HVTRACE-GUEST: init reached' --cpu-flags -hypervisor -- \
		-plugin "$plugin,start=0,at=0x$sk,at=0x$ri"
	bvo=$RUNS/bench-branches-bv/qemu.out
	bv_sk=$(sed -nE "s/^branchcount: at 0x0*$sk: ([0-9]+) transfers.*/\\1/p" "$bvo")
	bv_ri=$(sed -nE "s/^branchcount: at 0x0*$ri: ([0-9]+) transfers.*/\\1/p" "$bvo")
	[ -n "$bv_sk" ] && [ -n "$bv_ri" ] && bv=yes
fi
# the region with the most transfers before start_kernel: the EFI stub's
# decompressor (its range decoder's loop, seen there in a traced run)
top=$(awk '/^branchcount: at /{ n++ } n == 1 && /^branchcount:   /{ print $2, $4; exit }' "$out")
# and after populate_rootfs: the initramfs's gunzip (inflate_fast's region)
gz=$(awk '/^branchcount: at /{ n++ } n == 3 && /^branchcount:   /{ print $2, $4; exit }' "$out")
rate=$(sort -g "$BUILD/bench/trace.rates" 2>/dev/null | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
when() { # N: the time a lossless trace of N records takes at $rate
	[ -n "$rate" ] && awk -v n="$1" -v r="$rate" 'BEGIN { s = n / r; printf "%.0f min", s / 60 }' || echo "(no rate)"
}
res=bench/results/boot-branches-$(date -u +%Y%m%d-%H%M%S).txt
{
	echo "# hvtrace bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}')"
	echo "# guest: Linux $(cat "$BUILD/cache/linux/version"), 1 vCPU, 512 MiB, untraced; branches (taken transfers) counted by bench/tools/branchcount.c"
	printf '%-46s %12s %14s\n' part branches "lossless trace at ${rate:-?} rec/s"
	printf '%-46s %12s %14s\n' "reset to start_kernel" "$n_sk" "$(when "$n_sk")"
	printf '%-46s %12s\n' "  of which to ${top#* } (the stub's XZ)" "${top% *}"
	printf '%-46s %12s %14s\n' "start_kernel to populate_rootfs" $((n_pr - n_sk)) "$(when $((n_pr - n_sk)))"
	printf '%-46s %12s %14s\n' "populate_rootfs to run_init_process (/init)" $((n_ri - n_pr)) "$(when $((n_ri - n_pr)))"
	printf '%-46s %12s\n' "  of which to ${gz#* } (initramfs gunzip)" "${gz% *}"
	printf '%-46s %12s %14s\n' "start_kernel to /init" $((n_ri - n_sk)) "$(when $((n_ri - n_sk)))"
	printf '%-46s %12s %14s\n' "reset to /init" "$n_ri" "$(when "$n_ri")"
	if [ -n "$bv" ]; then
		echo "# booted by bootvmlinux.efi (make test-boot's path): no decompression, initramfs uncompressed"
		printf '%-46s %12s %14s\n' "reset to start_kernel" "$bv_sk" "$(when "$bv_sk")"
		printf '%-46s %12s %14s\n' "start_kernel to /init" $((bv_ri - bv_sk)) "$(when $((bv_ri - bv_sk)))"
		printf '%-46s %12s %14s\n' "reset to /init" "$bv_ri" "$(when "$bv_ri")"
	fi
	echo "# raw:"
	sed 's/^/#   /' "$out"
	[ -z "$bv" ] || sed 's/^/#   bootvmlinux: /' "$bvo"
} | tee "$res"
echo "bench: saved $res"
