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
deb_tool fetch-perf linux-perf usr/bin/perf "${1:?usage: fetch-perf.sh OUTDIR}"
