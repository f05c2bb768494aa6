#!/usr/bin/env bash
# Fetches Debian's own kernel (the one linux-image-amd64 depends on) into a
# build cache without installing it: OUT/vmlinuz (an EFI application through
# the kernel's EFI stub) and OUT/version. Debian ships a placeholder
# System.map in this package (the real one is in the -dbg package).
# Usage: scripts/fetch-kernel.sh OUTDIR
set -eu
out=${1:?usage: fetch-kernel.sh OUTDIR}
mkdir -p "$out"
[ -s "$out/vmlinuz" ] && exit 0

pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
	echo "fetch-kernel: cannot resolve linux-image-amd64's kernel package (run 'apt-get update' as root first)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-kernel: downloading $pkg"
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null) || {
	echo "fetch-kernel: 'apt-get download $pkg' failed (is the Debian mirror reachable?)" >&2
	exit 1
}
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
ver=${pkg#linux-image-}
cp "$tmp/x/boot/vmlinuz-$ver" "$out/vmlinuz"
echo "$ver" > "$out/version"
echo "fetch-kernel: $ver ready in $out"
