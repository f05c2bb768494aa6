#!/usr/bin/env bash
# Fetches Debian's `perf` (package linux-perf, bookworm's build from the
# same 6.1 kernel source as the guest's kernel) and the shared libraries it
# loads into a build cache, without installing anything: OUT/root/ holds
# usr/bin/perf, every library ldd resolves for it (from the downloaded
# packages first, the host's own bookworm libraries for the rest) and the
# dynamic loader, laid out as on a Debian system; OUT/version names the
# package. tests/integration-perf.sh puts OUT/root into a second initramfs
# (scripts/mkinitramfs.sh --perf) so the other Linux tests boot as before.
# Usage: scripts/fetch-perf.sh OUTDIR
set -eu
. "$(dirname "$0")/debfetch.sh"
out=${1:?usage: fetch-perf.sh OUTDIR}
[ -x "$out/root/usr/bin/perf" ] && [ -s "$out/version" ] && exit 0

# the package and the libraries it depends on (apt-cache depends: the
# libraries of the binary package; their own dependencies come from the
# host, which is bookworm as the guest's packages are)
pkgs=$(apt-cache depends linux-perf 2>/dev/null | awk '/Depends: lib/ { print $2 }' | sort -u)
if [ -z "$pkgs" ]; then
	echo "fetch-perf: cannot resolve linux-perf's dependencies (run 'apt-get update' as root first)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-perf: downloading linux-perf and $(echo $pkgs | wc -w) libraries"
deb_fetch fetch-perf "$tmp" linux-perf $pkgs
ver=$(dpkg-deb -f "$tmp"/linux-perf_*.deb Version)
perf=$tmp/x/usr/bin/perf
[ -x "$perf" ] || { echo "fetch-perf: linux-perf $ver has no usr/bin/perf" >&2; exit 1; }

root=$tmp/root
mkdir -p "$root/usr/bin"
cp "$perf" "$root/usr/bin/perf"
# ldd through the downloaded libraries first; everything else is the host's
libdirs=$(find "$tmp/x" -name 'lib*.so*' -printf '%h\n' | sort -u | tr '\n' ':')
LD_LIBRARY_PATH=$libdirs ldd "$perf" >"$tmp/ldd" || { echo "fetch-perf: ldd failed on perf" >&2; exit 1; }
if grep -q 'not found' "$tmp/ldd"; then
	echo "fetch-perf: perf needs libraries found neither in the packages nor on this host:" >&2
	grep 'not found' "$tmp/ldd" >&2
	exit 1
fi
# "libfoo.so.1 => /path (0x...)" and the loader's own "/lib64/ld-linux-x86-64.so.2 (0x...)"
for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$tmp/ldd"); do
	case "$lib" in
	"$tmp/x"/*) dst=${lib#"$tmp/x"} ;;
	*) dst=/usr/lib/x86_64-linux-gnu/${lib##*/} ;;
	esac
	case "$lib" in */ld-linux-x86-64.so.2) dst=/lib64/ld-linux-x86-64.so.2 ;; esac
	mkdir -p "$root${dst%/*}"
	cp -L "$lib" "$root$dst"
done
# the loader finds the libraries copied from $tmp/x at their Debian paths
# (lib/x86_64-linux-gnu and usr/lib/x86_64-linux-gnu, both searched by default)
mkdir -p "$out"
rm -rf "$out/root"
mv "$root" "$out/root"
echo "linux-perf $ver" >"$out/version"
echo "fetch-perf: linux-perf $ver ready in $out ($(du -sh "$out/root" | cut -f1), $(find "$out/root" -type f | wc -l) files)"
