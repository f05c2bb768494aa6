#!/usr/bin/env bash
# Fetches QEMU 10 from Debian's bookworm-backports for the OUTER machine of
# the nested-KVM tier only (tests/nested/outer.sh), without installing it:
# the system's QEMU (bookworm's 7.2) stays installed and stays the QEMU of
# everything else, the nested tier's inner QEMU included. Issue 27 item 2.
#
# Downloads (apt-get download, unpacked with dpkg-deb -x into OUT/x):
# qemu-system-x86, qemu-system-common and qemu-system-data of the backports
# suite, and the backports' seabios (qemu-system-x86 10 depends on seabios
# >> 1.16.3, bookworm has 1.16.2). Then ldd on the unpacked binary: a
# library this host lacks is taken from the backports too (any library
# package qemu-system-x86 depends on that the backports carry), into the
# same tree, and named on LD_LIBRARY_PATH for that QEMU alone.
#
# Leaves OUT/qemu-system-x86_64, a wrapper that runs the unpacked binary
# with its own ROMs first on the firmware path (-L OUT/x/usr/share/qemu,
# -L OUT/x/usr/share/seabios), its own modules (QEMU_MODULE_DIR: never the
# system's 7.2 modules) and LD_LIBRARY_PATH only when a library was
# fetched; OUT/version names the package version.
#
# apt: bookworm-backports through a private configuration in OUT/apt (its
# own source list, lists and archive cache; the system's apt sources and
# lists are not changed). Idempotent: nothing to do when OUT/version and
# the wrapper are there and the wrapper runs.
#
# Usage: scripts/fetch-qemu10.sh OUTDIR     (make deps runs it for
# build/cache/qemu10; tests/integration-nested.sh uses it)
set -eu
out=${1:?usage: fetch-qemu10.sh OUTDIR}
tool=fetch-qemu10
SUITE=bookworm-backports
MIRROR=${HVTRACE_BACKPORTS_MIRROR:-http://deb.debian.org/debian}
die() { echo "$tool: $*" >&2; exit 1; }

if [ -s "$out/version" ] && [ -x "$out/qemu-system-x86_64" ] &&
	"$out/qemu-system-x86_64" --version >/dev/null 2>&1; then
	exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd -P)

# the private apt configuration: only the backports suite, signed by
# Debian's archive key as the system's own sources are
apt=$out/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/prefs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$apt/sources.list"
aptopt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
	-o "Dir::Etc::PreferencesParts=$apt/prefs" -o "Dir::State::Lists=$apt/lists"
	-o "Dir::Cache=$apt/cache")
echo "$tool: apt-get update of $SUITE ($MIRROR), private lists in $apt"
apt-get "${aptopt[@]}" update -q >"$apt/update.log" 2>&1 ||
	die "'apt-get update' of $SUITE failed (is $MIRROR reachable?): $(tail -3 "$apt/update.log" | tr '\n' ' ')"
# (apt-get update exits 0 when a source cannot be fetched: its Err lines)
if grep -qE '^(Err:|E:|W: Failed to fetch)' "$apt/update.log"; then
	die "'apt-get update' could not fetch $SUITE from $MIRROR: $(grep -m2 -E '^(Err:|E:|W: Failed)' "$apt/update.log" | tr '\n' ' ')"
fi
ver=$(apt-cache "${aptopt[@]}" policy qemu-system-x86 | awk '/Candidate:/ { print $2 }')
case "$ver" in
*bpo12*) ;;
*) die "$SUITE has no qemu-system-x86 (candidate '$ver'): see $apt/update.log" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# fetch PKG...: each from the backports, unpacked into $tmp/x
fetch() {
	(cd "$tmp" && apt-get "${aptopt[@]}" download -q "${@/%//$SUITE}" >"$tmp/download.log" 2>&1) ||
		die "'apt-get download $*' from $SUITE failed: $(grep -E '^(E|W):' "$tmp/download.log" | tr '\n' ' ')"
	local p
	for p in "$@"; do dpkg-deb -x "$tmp/${p}_"*.deb "$tmp/x" || die "dpkg-deb -x of $p failed"; done
}
PKGS="qemu-system-x86 qemu-system-common qemu-system-data seabios"
echo "$tool: downloading $PKGS ($ver)"
fetch $PKGS
bin=$tmp/x/usr/bin/qemu-system-x86_64
[ -x "$bin" ] || die "qemu-system-x86 $ver has no usr/bin/qemu-system-x86_64"

# libraries: what ldd cannot find on this host comes from the backports'
# library packages qemu-system-x86 depends on
libpath=""
if ldd "$bin" | grep -q 'not found'; then
	echo "$tool: this host lacks:" $(ldd "$bin" | awk '/not found/ { print $1 }')
	libs=""
	for p in $(apt-cache "${aptopt[@]}" depends qemu-system-x86 | awk '/Depends: lib/ { print $2 }' | sort -u); do
		apt-cache "${aptopt[@]}" policy "$p" | grep -q 'bpo12' && libs="$libs $p"
	done
	[ -n "$libs" ] || die "no library package of qemu-system-x86 is in $SUITE; missing: $(ldd "$bin" | grep 'not found' | tr '\n' ' ')"
	echo "$tool: downloading from $SUITE:$libs"
	fetch $libs
	libpath=$(find "$tmp/x" -name 'lib*.so*' -printf '%h\n' | sort -u | sed "s|^$tmp|$out|" | tr '\n' ':')
	if LD_LIBRARY_PATH=$(echo "$libpath" | sed "s|$out|$tmp|g") ldd "$bin" | grep 'not found' >"$tmp/missing"; then
		die "still missing with the backports' libraries: $(tr '\n' ' ' <"$tmp/missing")"
	fi
fi

rm -rf "$out/x"
mv "$tmp/x" "$out/x"
libline=""
[ -z "$libpath" ] || libline="LD_LIBRARY_PATH=$libpath\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}; export LD_LIBRARY_PATH"
cat >"$out/qemu-system-x86_64" <<WRAP
#!/bin/sh
# QEMU $ver from $SUITE, unpacked by scripts/fetch-qemu10.sh: its own
# ROMs and modules, never the system QEMU's
$libline
QEMU_MODULE_DIR=$out/x/usr/lib/x86_64-linux-gnu/qemu exec "$out/x/usr/bin/qemu-system-x86_64" \\
	-L "$out/x/usr/share/qemu" -L "$out/x/usr/share/seabios" "\$@"
WRAP
chmod +x "$out/qemu-system-x86_64"
"$out/qemu-system-x86_64" --version >"$tmp/v" 2>&1 || die "the unpacked QEMU does not run: $(cat "$tmp/v")"
echo "qemu-system-x86 $ver" >"$out/version"
echo "$tool: $(head -1 "$tmp/v") ready in $out (${libpath:+libraries from $SUITE, }wrapper $out/qemu-system-x86_64)"
