#!/usr/bin/env bash
# A whole boot traced (issue #16): the recorder from the hypervisor's first
# guest instruction (trace.start = boot, no stop), the firmware's timer
# running, Linux as the next stage, to the kernel's exec of /init, every
# record drained into a file by `hvtrace record` (lossless stream,
# ivshmem). Two kernels:
#
#   linux-rec-boot-tiny  (make test): a small Linux built from Debian's
#       linux-source-6.1 with tinyconfig and tests/linux/tiny.config
#       (scripts/build-tiny-kernel.sh), 128 MiB of memory (its struct
#       pages and direct map are branches too): the same boot path,
#       firmware to busybox's /init, in minutes;
#   linux-rec-boot-init  (make test-boot, over an hour here): Debian's own
#       kernel.
#
# The next stage is tests/guest/bootvmlinux.efi with the kernel as its
# uncompressed ELF (Debian's: scripts/extract-vmlinux.sh) and the test
# initramfs uncompressed: Debian's bzImage would spend ~469 million
# branches in its EFI stub's XZ decompression and the gzip initramfs ~37
# million in the kernel's inflate (bench/boot-branches.sh), hours more of
# tracing; the kernel itself runs the same code from startup_64 on.
#
# The kernel boots with no_timer_check: its IO-APIC timer check
# (check_timer -> timer_irq_works) wants 4 ticks within 40e9/HZ TSC
# cycles, and traced, with interrupts paced in guest branches while the
# TSC runs at the host's rate, it sees fewer and panics ("IO-APIC + timer
# doesn't work!"; docs/branch-engine.md "Forward progress": fewer ticks per
# second of the guest's clocks, as with lost ticks). lpj= skips the delay
# calibration's tick counting likewise. The small kernel also gets
# nolapic_timer: it ticks
# with the PIT through the 8259, the path it otherwise took only in some
# runs (when its local APIC timer's verification against the paced PIT
# tick failed): the tick then starved the serial port's IRQ 4 at the 8259
# until the hypervisor ended a held interrupt's in-service bit there
# (docs/branch-engine.md "Forward progress"; every run failed so before).
#
# Checks: /init reached; the hypervisor stopped tracing at the recorder's
# request after N records and the file holds exactly N records besides
# markers and CR3 records, none lost; the records go, in this order, into
# the hypervisor's loader, bootvmlinux, the kernel and user space (CPL 3),
# with the firmware's code and paced timer interrupts among them.
#
#   tests/integration-boot.sh [--list | PATTERN...]
# Environment: HVTRACE_BOOT_BOUND (seconds; default 7200 for Debian's
# kernel, 1500 for the small one, times HVTRACE_TIME_SCALE: 413 s on a usual
# day here, QEMU runs 2-3 times slower on some machines).
set -u
cd "$(dirname "$0")/.."
. tests/lib/runner.sh
export HVTRACE_QUIET_ACCEL=1
HVTRACE=$BUILD/host-tools/hvtrace

# boot_trace NAME VMLINUX BOUND MIB [CMDLINE [ENGINE]]: the whole boot of
# that kernel with MIB of memory, traced (by ENGINE: the configured default
# unless given); CMDLINE (ending in a space) added
boot_trace() {
	local name=$1 vmlinux=$2 bound=$3 mib=$4 extra=${5:-} engine=${6:-}
	local d=$(esp $name) cpio=$BUILD/initrd.cpio
	SECONDS=0
	if [ ! -s "$vmlinux" ] || [ ! -s "$cpio" ]; then
		LOG=/dev/null ELAPSED=0 REASONS="; no $vmlinux or $cpio (make test and make test-boot build them)"
		finish $name
		return 0
	fi
	mkdir -p "$d/EFI/linux"
	cp "$vmlinux" "$d/EFI/linux/vmlinux"
	cp "$cpio" "$d/EFI/linux/initrd.cpio"
	cp "$BUILD/tests/guest/bootvmlinux.efi" "$d/EFI/hvtrace/"
	local mhz=$(awk -F': *' '/^cpu MHz/ { print int($2); exit }' /proc/cpuinfo)
	printf '%s\n' 'next = \EFI\hvtrace\bootvmlinux.efi' \
		"cmdline = vmlinux=\\EFI\\linux\\vmlinux ramdisk=\\EFI\\linux\\initrd.cpio console=ttyS0,115200 panic=-1 quiet nokaslr ${extra}no_timer_check lpj=$(((${mhz:-2500} * 1000000) / 250))" \
		'stream.size = 4M' 'stream.wait = 2s' 'trace.start = boot' 'channel = ivshmem' \
		${engine:+"engine = $engine"} >"$d/EFI/hvtrace/hvtrace.cfg"
	local shm=$RUNS/$name/chan.shm out=$RUNS/$name/boot.trace
	truncate -s 16M "$shm"
	rm -f "$out"
	# the recorder first (it waits for the channel); at /init it is told
	# to end, which stops tracing and drains to the STOP marker
	timeout $(((bound + 120) * SCALE)) "$HVTRACE" record --shm "$shm" -o "$out" --wait $((120 * SCALE)) >"$RUNS/$name/record.out" 2>&1 &
	local rpid=$!
	boot qemu $name $bound --mem "$mib" --until 'HVTRACE-GUEST: init reached' \
		--then "kill -TERM $rpid; for i in \$(seq 1 300); do kill -0 $rpid 2>/dev/null || break; sleep 0.2; done" \
		--cpu-flags -hypervisor -- \
		-object memory-backend-file,id=hvt,share=on,mem-path="$shm",size=16M -device ivshmem-plain,memdev=hvt
	kill -TERM $rpid 2>/dev/null
	wait $rpid
	expect 'recorder: .*tracing from boot'
	[ -z "$engine" ] || expect "hvtrace: engine = $engine"
	expect 'bootvmlinux: e820: [0-9]+ entries; leaving the firmware'
	expect 'HVTRACE-GUEST: init reached'
	expect 'recorder: tracing stopped \(host request\) after [0-9]+ records'
	reject 'hvtrace: error'
	reject 'Kernel panic'
	local made=$(sed -nE 's/.*recorder: tracing stopped \(host request\) after ([0-9]+) records.*/\1/p' "$LOG")
	local ldr=$(sed -nE 's/.*hvtrace: loader image at ([0-9a-f]+) \(([0-9]+) KiB\).*/\1 \2/p' "$LOG")
	local bv=$(sed -nE 's/.*bootvmlinux: image at ([0-9a-f]+) size ([0-9a-f]+).*/\1 \2/p' "$LOG")
	if [ ! -s "$out" ] || [ -z "$made" ] || [ -z "$ldr" ] || [ -z "$bv" ]; then
		REASONS="$REASONS; no trace file, stop line, loader or bootvmlinux image line ($RUNS/$name/record.out)"
	else
		set -- $ldr $bv
		# one pass over the text dump: TSC VCPU KIND FROM -> TO cpl F->T AUX
		"$HVTRACE" dump "$out" 2>"$RUNS/$name/dump.err" | awk -v made="$made" \
			-v lb="$1" -v lkib="$2" -v bb="$3" -v bsz="$4" -f tests/boot-cover.awk \
			>"$RUNS/$name/cover.txt" 2>&1 ||
			REASONS="$REASONS; $(tail -1 "$RUNS/$name/cover.txt") ($RUNS/$name/cover.txt)"
	fi
	rm -f "$shm" "$out"
	ELAPSED=$SECONDS
	finish $name
}

t_linux_rec_boot_tiny() {
	boot_trace linux-rec-boot-tiny "${TINY_DIR:-$BUILD/cache/tiny-linux}/vmlinux" \
		"${HVTRACE_BOOT_BOUND:-1500}" 128 'nolapic_timer '
}
# the small kernel's whole boot with the interpreting engine (issue #24's
# whole-boot target): make test-boot, not make test (its time budget)
t_linux_rec_boot_interp() {
	boot_trace linux-rec-boot-interp "${TINY_DIR:-$BUILD/cache/tiny-linux}/vmlinux" \
		"${HVTRACE_BOOT_BOUND:-1500}" 128 'nolapic_timer ' interp
}
t_linux_rec_boot_init() {
	boot_trace linux-rec-boot-init "${KERNEL_DIR:-$BUILD/cache/linux}/vmlinux" \
		"${HVTRACE_BOOT_BOUND:-7200}" 512
}

runner_main integration-boot "t_linux_rec_boot_tiny t_linux_rec_boot_interp t_linux_rec_boot_init" "$@"
