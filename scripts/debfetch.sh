# Sourced by scripts/fetch-kernel.sh and scripts/fetch-perf.sh: Debian
# packages downloaded from the configured mirror and unpacked, never
# installed.
# deb_fetch TOOL DIR PKG...: the .debs into DIR, each unpacked into DIR/x;
# on failure TOOL says why and the script exits 1.
deb_fetch() {
	local tool=$1 dir=$2 deb
	shift 2
	(cd "$dir" && apt-get download -q "$@" >/dev/null) || {
		echo "$tool: 'apt-get download $*' failed (is the Debian mirror reachable?)" >&2
		exit 1
	}
	for deb in "$dir"/*.deb; do dpkg-deb -x "$deb" "$dir/x"; done
}
