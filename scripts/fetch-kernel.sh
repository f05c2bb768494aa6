#!/usr/bin/env bash
# Fetches Debian's own kernel (the one linux-image-amd64 depends on) into a
# build cache without installing it: OUT/vmlinuz (an EFI application through
# the kernel's EFI stub), OUT/version, and OUT/modules/ with the modules the
# nested-KVM tier loads (KVM with nested SVM, 9p over virtio:
# tests/integration-nested.sh). Debian ships a placeholder System.map in
# this package (the real one is in the -dbg package).
# Usage: scripts/fetch-kernel.sh OUTDIR
set -eu
. "$(dirname "$0")/debfetch.sh"
out=${1:?usage: fetch-kernel.sh OUTDIR}
mkdir -p "$out"
# what tests/integration-nested.sh loads, in load order
NESTED_MODULES="irqbypass ccp kvm kvm-amd netfs fscache 9pnet virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet_virtio 9p"
[ -s "$out/vmlinuz" ] && [ -s "$out/modules/order" ] && exit 0

pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
	echo "fetch-kernel: cannot resolve linux-image-amd64's kernel package (run 'apt-get update' as root first)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-kernel: downloading $pkg"
deb_fetch fetch-kernel "$tmp" "$pkg"
ver=${pkg#linux-image-}
cp "$tmp/x/boot/vmlinuz-$ver" "$out/vmlinuz"
mkdir -p "$out/modules"
for m in $NESTED_MODULES; do
	f=$(find "$tmp/x/lib/modules/$ver/kernel" -name "$m.ko" | head -1)
	[ -n "$f" ] || { echo "fetch-kernel: $pkg has no module $m.ko" >&2; exit 1; }
	cp "$f" "$out/modules/"
done
echo "$NESTED_MODULES" > "$out/modules/order"
echo "$ver" > "$out/version"
echo "fetch-kernel: $ver ready in $out"
