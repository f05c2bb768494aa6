#!/usr/bin/env bash
# Fetches what Linux's own `perf test` suite needs in the guest beyond
# scripts/fetch-perf.sh's perf (issue 29 item 4; docs/pmu.md "Linux's perf
# test suite"): the suite's shell tests and their data from the same
# linux-perf package (usr/lib/perf-core/tests: perf looks for them under
# its exec path, /usr/lib/perf-core), and the shell and tools a Debian
# system runs them with: dash as /bin/sh, bash (several are bash scripts)
# and coreutils' programs (tests 8 and 24 look for the mappings of libc and
# the loader in `sleep` and `true`, which busybox's static ones lack; the
# shell tests call mktemp without a template and tail --pid, which
# busybox's refuse). The perf initramfs's own scripts run busybox's sh,
# which prefers its applets to these. Into a build cache, never installed:
# OUT/root/ laid out as on a Debian system, OUT/version names the
# packages.
# Usage: scripts/fetch-perf-tests.sh OUTDIR
set -eu
. "$(dirname "$0")/debfetch.sh"
out=${1:?usage: fetch-perf-tests.sh OUTDIR}
[ -d "$out/root/usr/lib/perf-core/tests/shell" ] && [ -x "$out/root/bin/bash" ] && [ -x "$out/root/bin/dash" ] &&
	[ -x "$out/root/bin/mktemp" ] && [ -s "$out/version" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-perf-tests: downloading linux-perf, dash, bash and coreutils"
deb_fetch fetch-perf-tests "$tmp" linux-perf dash bash coreutils
mkdir -p "$tmp/root/usr/lib/perf-core"
cp -a "$tmp/x/usr/lib/perf-core/tests" "$tmp/root/usr/lib/perf-core/"
for b in bin/dash bin/bash $(dpkg-deb -c "$tmp"/coreutils_*.deb | awk '$1 ~ /^-/ && $6 ~ /^[.]\/(usr\/)?bin\// { sub(/^[.]\//, "", $6); print $6 }'); do
	deb_bundle fetch-perf-tests "$tmp" "$b" "$tmp/root"
done
ln -s dash "$tmp/root/bin/sh"
ver="linux-perf $(dpkg-deb -f "$tmp"/linux-perf_*.deb Version) dash $(dpkg-deb -f "$tmp"/dash_*.deb Version)"
ver="$ver bash $(dpkg-deb -f "$tmp"/bash_*.deb Version) coreutils $(dpkg-deb -f "$tmp"/coreutils_*.deb Version)"
mkdir -p "$out"
rm -rf "$out/root"
mv "$tmp/root" "$out/root"
echo "$ver" >"$out/version"
echo "fetch-perf-tests: $ver ready in $out ($(du -sh "$out/root" | cut -f1), $(find "$out/root" -type f | wc -l) files)"
