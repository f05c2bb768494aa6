#!/usr/bin/env bash
# Builds the small Linux of the whole-boot trace in make test
# (tests/integration-boot.sh linux-rec-boot-tiny): Debian's linux-source-6.1
# (downloaded from the configured mirror, never installed), `make
# tinyconfig` with tests/linux/tiny.config on top, the uncompressed vmlinux.
# OUT/vmlinux, OUT/System.map, OUT/config (the resolved .config) and
# OUT/version (the source package's version). Needs flex, bison and bc
# (scripts/setup-deps.sh). A few minutes on two cores; make keeps the
# result in the build cache.
# Usage: scripts/build-tiny-kernel.sh OUTDIR [FRAGMENT...]
# FRAGMENTs: more configuration on top of tiny.config (tests/linux/tiny-smp.config).
set -eu
. "$(dirname "$0")/debfetch.sh"
frag=$(cd "$(dirname "$0")/.." && pwd)/tests/linux/tiny.config
out=${1:?usage: build-tiny-kernel.sh OUTDIR [FRAGMENT...]}
shift
frags="$frag"
for f in "$@"; do frags="$frags $(cd "$(dirname "$f")" && pwd)/$(basename "$f")"; done
mkdir -p "$out"
out=$(cd "$out" && pwd)
for t in flex bison bc; do
	command -v $t >/dev/null || { echo "build-tiny-kernel: needs $t (scripts/setup-deps.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "build-tiny-kernel: downloading linux-source-6.1"
deb_fetch build-tiny-kernel "$tmp" linux-source-6.1
tarball=$(ls "$tmp"/x/usr/src/linux-source-*.tar.xz 2>/dev/null | head -1)
[ -n "$tarball" ] || { echo "build-tiny-kernel: no source tarball in linux-source-6.1" >&2; exit 1; }
echo "build-tiny-kernel: unpacking $(basename "$tarball")"
tar -xJf "$tarball" -C "$tmp"
src=$(ls -d "$tmp"/linux-source-*/ | head -1)
obj=$tmp/obj
mk() { make -s -C "$src" O="$obj" ARCH=x86_64 "$@"; }
mk tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" $frags >/dev/null
mk olddefconfig >/dev/null
# every option the fragments set must have held (a dependency a fragment
# does not satisfy drops it silently); a later fragment's line for an option
# overrides an earlier one's
bad=""
while read -r line; do
	case "$line" in
	CONFIG_*=*) grep -qx "$line" "$obj/.config" || bad="$bad ${line%%=*}" ;;
	"# CONFIG_"*" is not set") opt=${line#\# } opt=${opt%% *}
		! grep -q "^$opt=" "$obj/.config" || bad="$bad $opt" ;;
	esac
done < <(awk '/^CONFIG_[A-Za-z0-9_]+=/ { k = $0; sub(/=.*/, "", k); v[k] = $0; next }
	/^# CONFIG_[A-Za-z0-9_]+ is not set/ { v[$2] = $0 } END { for (k in v) print v[k] }' $frags)
[ -z "$bad" ] || { echo "build-tiny-kernel: the configuration did not keep:$bad" >&2; exit 1; }
echo "build-tiny-kernel: building vmlinux ($(nproc) jobs)"
mk -j"$(nproc)" vmlinux KBUILD_BUILD_TIMESTAMP=2026-01-01 KBUILD_BUILD_USER=hvtrace KBUILD_BUILD_HOST=hvtrace
cp "$obj/vmlinux" "$out/vmlinux.tmp"
cp "$obj/System.map" "$out/System.map"
cp "$obj/.config" "$out/config"
dpkg-deb -f "$(ls "$tmp"/linux-source-*.deb | head -1)" Version >"$out/version"
mv "$out/vmlinux.tmp" "$out/vmlinux"
echo "build-tiny-kernel: $out/vmlinux ready"
