# Sourced by scripts/fetch-kernel.sh, scripts/fetch-perf.sh and
# scripts/fetch-gdb.sh: Debian packages downloaded from the configured
# mirror and unpacked, never installed.
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

# deb_libs PKG: the library packages PKG depends on (apt-cache depends:
# those of the binary package; their own dependencies come from the host,
# which is bookworm as the guest's packages are); empty when apt knows no
# PKG (no 'apt-get update' yet)
deb_libs() {
	apt-cache depends "$1" 2>/dev/null | awk '/Depends: lib/ { print $2 }' | sort -u
}

# deb_bundle TOOL DIR BIN ROOT: the program DIR/x/BIN (unpacked by
# deb_fetch) copied to ROOT/BIN with every library ldd resolves for it
# (from the downloaded packages first, the host's own bookworm libraries
# for the rest) and the dynamic loader, laid out as on a Debian system: the
# loader finds the libraries from DIR/x at their Debian paths
# (lib/x86_64-linux-gnu and usr/lib/x86_64-linux-gnu, both searched by
# default), the host's in usr/lib/x86_64-linux-gnu.
deb_bundle() {
	local tool=$1 dir=$2 bin=$3 root=$4 lib dst libdirs
	[ -x "$dir/x/$bin" ] || { echo "$tool: the package has no $bin" >&2; exit 1; }
	mkdir -p "$root/${bin%/*}"
	cp "$dir/x/$bin" "$root/$bin"
	libdirs=$(find "$dir/x" -name 'lib*.so*' -printf '%h\n' | sort -u | tr '\n' ':')
	LD_LIBRARY_PATH=$libdirs ldd "$dir/x/$bin" >"$dir/ldd" || { echo "$tool: ldd failed on $bin" >&2; exit 1; }
	if grep -q 'not found' "$dir/ldd"; then
		echo "$tool: $bin needs libraries found neither in the packages nor on this host:" >&2
		grep 'not found' "$dir/ldd" >&2
		exit 1
	fi
	# "libfoo.so.1 => /path (0x...)" and the loader's own "/lib64/ld-linux-x86-64.so.2 (0x...)"
	for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$dir/ldd"); do
		case "$lib" in
		"$dir/x"/*) dst=${lib#"$dir/x"} ;;
		*) dst=/usr/lib/x86_64-linux-gnu/${lib##*/} ;;
		esac
		case "$lib" in */ld-linux-x86-64.so.2) dst=/lib64/ld-linux-x86-64.so.2 ;; esac
		mkdir -p "$root${dst%/*}"
		cp -L "$lib" "$root$dst"
	done
}

# deb_tool TOOL PKG BIN OUT: Debian's PKG and the library packages it
# depends on downloaded, its program BIN (usr/bin/...) bundled by
# deb_bundle into OUT/root; OUT/version names the package. Nothing to do
# when OUT already holds them.
deb_tool() {
	local tool=$1 pkg=$2 bin=$3 out=$4 pkgs ver tmp
	[ -x "$out/root/$bin" ] && [ -s "$out/version" ] && return 0
	pkgs=$(deb_libs "$pkg")
	if [ -z "$pkgs" ]; then
		echo "$tool: cannot resolve $pkg's dependencies (run 'apt-get update' as root first)" >&2
		exit 1
	fi
	tmp=$(mktemp -d)
	deb_tmp=$tmp	# global: the trap runs after this function returned
	trap 'rm -rf "$deb_tmp"' EXIT
	echo "$tool: downloading $pkg and $(echo $pkgs | wc -w) libraries"
	deb_fetch "$tool" "$tmp" "$pkg" $pkgs
	ver=$(dpkg-deb -f "$tmp/${pkg}_"*.deb Version)
	deb_bundle "$tool" "$tmp" "$bin" "$tmp/root"
	mkdir -p "$out"
	rm -rf "$out/root"
	mv "$tmp/root" "$out/root"
	echo "$pkg $ver" >"$out/version"
	echo "$tool: $pkg $ver ready in $out ($(du -sh "$out/root" | cut -f1), $(find "$out/root" -type f | wc -l) files)"
}
