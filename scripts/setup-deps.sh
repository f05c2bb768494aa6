#!/usr/bin/env bash
# Installs what hvtrace's build, tests and demo need from Debian's packages.
# As root it runs apt-get; otherwise it prints the exact command and fails.
# Usage: scripts/setup-deps.sh [--check]   (--check: report only, install nothing)
set -eu

PKGS="build-essential gnu-efi qemu-system-x86 ovmf busybox-static mtools dosfstools \
cpio libzydis-dev libelf-dev libdw-dev bochs bochsbios vgabios bochs-term \
python3 clang libclang-rt-14-dev flex bison bc linux-perf uftrace tmux"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done

[ -z "$missing" ] && exit 0

if [ "${1:-}" = "--check" ]; then
	echo "hvtrace: missing Debian packages:$missing" >&2
	exit 1
fi

if [ "$(id -u)" != 0 ]; then
	echo "hvtrace: missing Debian packages:$missing" >&2
	echo "hvtrace: run as root:  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi

echo "hvtrace: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
