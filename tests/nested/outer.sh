#!/usr/bin/env bash
# A nested-KVM host made where there is none, for one command: an outer
# QEMU (TCG, -cpu max: AMD with SVM) boots Debian's kernel with a small
# initramfs that loads kvm and kvm-amd nested=1 from the same kernel
# package, mounts the host's root read-only and this checkout read-write
# over 9p, and runs SCRIPT (a bash script in the checkout) in a chroot of
# the host's root, where /dev/kvm offers nested SVM. The script's output is
# the outer guest's console. Used by tests/integration-nested.sh and
# bench/nested.sh.
#
#   tests/nested/outer.sh OUTDIR TIMEOUT SCRIPT
#
# Leaves in OUTDIR: console.txt (the console without kernel lines),
# outer.log (the raw console), dmesg.txt (the outer kernel's log, KVM's
# messages included), qemu.out (the outer QEMU's own output). Prints one
# "nested: ..." line per problem with the outer run; exits 0 when there is
# none and SCRIPT exited 0.
#
# The outer QEMU needs one workaround, tests/nested/tcg-lock-fix.c, an
# LD_PRELOAD for it alone (QEMU 7.2's TCG, and 10.0.2's, aborts in
# tcg_handle_interrupt when KVM's nested guest writes CR8 with a virtual
# interrupt pending; the file says why). If that abort ever comes back, this says so.
#
# The outer guest has OUTER_CPUS (4) CPUs, as many as the inner tests'
# most vCPUs (svm-smp, linux-smp, svm-rec-lossless-smp: 4), and SCRIPT
# runs with HVTRACE_PIN_VCPUS=1: tests/lib/qemu.sh pins each inner vCPU
# thread to an outer CPU of its own (the outer TCG keeps hvtrace's
# breakpoints per emulated CPU: tests/nested/pin-vcpus.sh says why). An
# idle TCG vCPU costs nothing.
#
# The outer QEMU: HVTRACE_OUTER_QEMU, by default QEMU 10 from Debian's
# bookworm-backports as scripts/fetch-qemu10.sh unpacks it into
# BUILD/cache/qemu10 (issue 27 item 2), else the system's
# qemu-system-x86_64 (bookworm's 7.2), with a note. The inner QEMU is always
# the system's: the chroot runs the host's own. Both need tcg-lock-fix.c
# (QEMU 10.0.2 aborts on the same assertion without it); the file does it
# one way for 7.2 and another for 10, and QEMU 10 says on stderr (qemu.out)
# whether it was patched.
#
# Environment: BUILD (default build), KERNEL_DIR (default BUILD/cache/linux),
# OUTER_CPUS (default 4), HVTRACE_OUTER_QEMU.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: outer.sh OUTDIR TIMEOUT SCRIPT} TIMEOUT=${2:?} SCRIPT=${3:?}
BUILD=${BUILD:-build}
KDIR=${KERNEL_DIR:-$BUILD/cache/linux}
OUTER_CPUS=${OUTER_CPUS:-4}

problem() { echo "nested: $*"; }
[ -s "$KDIR/vmlinuz" ] && [ -s "$KDIR/modules/order" ] ||
	{ problem "no kernel with its modules in $KDIR (scripts/fetch-kernel.sh $KDIR fetches them)"; exit 1; }
[ -x /bin/busybox ] || { problem "no /bin/busybox (scripts/setup-deps.sh installs busybox-static)"; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

# the outer QEMU, and the workaround it needs (7.2 and 10.0.2 alike)
QEMU=${HVTRACE_OUTER_QEMU:-}
if [ -z "$QEMU" ]; then
	QEMU=$BUILD/cache/qemu10/qemu-system-x86_64
	[ -x "$QEMU" ] || {
		echo "outer.sh: no $QEMU (scripts/fetch-qemu10.sh $BUILD/cache/qemu10 fetches QEMU 10): the outer QEMU is the system's" >&2
		QEMU=qemu-system-x86_64
	}
fi
qver=$("$QEMU" --version 2>/dev/null | sed -n '1s/^QEMU emulator version \([0-9.]*\).*/\1/p')
[ -n "$qver" ] || { problem "the outer QEMU $QEMU does not run"; exit 1; }
echo "outer.sh: the outer QEMU is $qver: $QEMU" >"$OUT/qemu.out"
cc -O2 -shared -fPIC -Wall -Werror -o "$OUT/tcg-lock-fix.so" tests/nested/tcg-lock-fix.c -ldl ||
	{ problem "cannot build tests/nested/tcg-lock-fix.c"; exit 1; }
preload=$PWD/$OUT/tcg-lock-fix.so

# the outer guest's initramfs: busybox, the modules, /init
root=$OUT/initramfs
mkdir -p "$root"/{bin,proc,sys,dev,host,lib/modules}
cp /bin/busybox "$root/bin/"
cp "$KDIR"/modules/*.ko "$KDIR/modules/order" "$root/lib/modules/"
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
for m in $(cat /lib/modules/order); do
	opt=""
	[ "$m" = kvm-amd ] && opt="nested=1"
	insmod "/lib/modules/$m.ko" $opt || echo "NESTED: insmod $m failed"
done
echo "NESTED: kvm_amd nested=$(cat /sys/module/kvm_amd/parameters/nested 2>/dev/null)"
# what KVM can pass on to its guests (arch/x86/kvm/svm/svm.c, svm_set_cpu_caps)
echo "NESTED: outer CPU's SVM features:" $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
	grep -xE 'svm|npt|nrip_save|vgif|lbrv|v_vmsave_vmload|vmcb_clean|decodeassists|flushbyasid|tsc_scale|pausefilter|pfthreshold|svme_addr_chk|avic|v_spec_ctrl')
dir=$(arg nested.dir)
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host || echo "NESTED: mount of the host's root failed"
# /tmp first: the checkout may be under it
mount -t tmpfs tmp /host/tmp
mkdir -p "/host$dir"
# cache=mmap: the recorder tests map the channel's file shared
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=262144,cache=mmap project "/host$dir" ||
	echo "NESTED: mount of the checkout failed"
mount -t devtmpfs dev /host/dev
# what udev would add: bash's <(...) needs /dev/fd
ln -sf /proc/self/fd /host/dev/fd
ln -sf /proc/self/fd/0 /host/dev/stdin
ln -sf /proc/self/fd/1 /host/dev/stdout
ln -sf /proc/self/fd/2 /host/dev/stderr
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null
echo "NESTED: inside, running $(arg nested.cmd)"
# HVTRACE_PIN_VCPUS: tests/lib/qemu.sh pins the inner vCPU threads
chroot /host /bin/bash -c "export HVTRACE_PIN_VCPUS=1; cd '$dir' || { echo 'NESTED: no $dir inside'; exit 1; }; exec bash '$(arg nested.cmd)'"
echo "NESTED: done, exit $?"
dmesg >"/host$dir/$(arg nested.out)/dmesg.txt"
sync
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$OUT/initramfs.gz" ||
	{ problem "cannot pack the initramfs"; exit 1; }

LD_PRELOAD=$preload timeout -s KILL "$TIMEOUT" "$QEMU" \
	-machine q35 -accel tcg -cpu max -smp "$OUTER_CPUS" -m 3072 -nodefaults -display none -vga none -no-reboot \
	-kernel "$KDIR/vmlinuz" -initrd "$OUT/initramfs.gz" \
	-append "console=ttyS0 panic=-1 quiet tsc=reliable nested.dir=$PWD nested.cmd=$SCRIPT nested.out=$OUT" \
	-serial file:"$OUT/outer.log" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$PWD",mount_tag=project,security_model=none \
	${HVTRACE_OUTER_QEMU_LOG:+-d "$HVTRACE_OUTER_QEMU_LOG" -D "$OUT/qemu-d.log"} \
	>>"$OUT/qemu.out" 2>&1 </dev/null
rc=$?
tr -d '\r' <"$OUT/outer.log" | grep -v '^\[' >"$OUT/console.txt"

bad=0
if grep -q "tcg_handle_interrupt: assertion failed" "$OUT/qemu.out"; then
	problem "the outer QEMU $qver aborted in tcg_handle_interrupt (the bug tests/nested/tcg-lock-fix.c works around is back: is it preloaded, did it patch? $OUT/qemu.out)"
	bad=1
fi
other=$(grep -m1 -E 'assertion failed|qemu: fatal|Aborted|core dumped' "$OUT/qemu.out" | grep -v tcg_handle_interrupt)
[ -n "$other" ] && { problem "the outer QEMU $qver failed: $other ($OUT/qemu.out)"; bad=1; }
panic=$(tr -d '\r' <"$OUT/outer.log" | grep -m1 -o 'Kernel panic - .*')
[ -n "$panic" ] && { problem "the outer kernel panicked ($panic; $OUT/outer.log)"; bad=1; }
[ $rc = 137 ] && { problem "the outer QEMU ran past $TIMEOUT s and was killed"; bad=1; }
grep -q "NESTED: kvm_amd nested=1" "$OUT/console.txt" || { problem "kvm_amd did not load with nested=1"; bad=1; }
inner=$(sed -n 's/^NESTED: done, exit //p' "$OUT/console.txt")
[ -n "$inner" ] || { problem "$SCRIPT never finished (outer QEMU exit $rc; $OUT/qemu.out)"; bad=1; }
[ "$bad" = 0 ] && [ "$inner" = 0 ]
