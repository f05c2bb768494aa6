#!/usr/bin/env bash
# Fetches Debian's GDB (package gdb-minimal: bookworm's gdb 13 built
# without Python, whose full build would need Python's standard library in
# the guest too; it keeps record btrace) and the shared libraries it loads
# into a build cache, without installing anything, as scripts/fetch-perf.sh
# does for perf: OUT/root/usr/bin/gdb, its libraries and the loader;
# OUT/version names the package. scripts/mkinitramfs.sh --perf adds OUT/root
# to the perf initramfs (tests/integration-perf.sh linux-gdb-btrace).
# Usage: scripts/fetch-gdb.sh OUTDIR
set -eu
. "$(dirname "$0")/debfetch.sh"
deb_tool fetch-gdb gdb-minimal usr/bin/gdb "${1:?usage: fetch-gdb.sh OUTDIR}"
