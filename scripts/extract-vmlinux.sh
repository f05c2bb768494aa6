#!/usr/bin/env bash
# Extracts the ELF vmlinux from an x86 bzImage, locating the compressed payload
# through the boot-protocol setup header (payload_offset/payload_length).
# Usage: scripts/extract-vmlinux.sh VMLINUZ OUT
set -eu
in=${1:?usage: extract-vmlinux.sh VMLINUZ OUT}
out=${2:?usage: extract-vmlinux.sh VMLINUZ OUT}

# Little-endian unsigned integer of $2 bytes at offset $1 of the image.
le() {
	od -An -tu"$2" -j "$1" -N "$2" "$in" | tr -d ' \n'
}

magic=$(dd if="$in" bs=1 skip=$((0x202)) count=4 2>/dev/null)
if [ "$magic" != "HdrS" ]; then
	echo "extract-vmlinux: $in is not a bzImage (no HdrS at 0x202)" >&2
	exit 1
fi
version=$(le $((0x206)) 2)
if [ "$version" -lt $((0x208)) ]; then
	echo "extract-vmlinux: boot protocol $(printf %#x "$version") has no payload fields (need >= 2.08)" >&2
	exit 1
fi
setup_sects=$(le $((0x1f1)) 1)
[ "$setup_sects" -eq 0 ] && setup_sects=4	# boot protocol: 0 means 4
payload_offset=$(le $((0x248)) 4)
payload_length=$(le $((0x24c)) 4)
start=$(( (setup_sects + 1) * 512 + payload_offset ))

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tail -c +$((start + 1)) "$in" | head -c "$payload_length" > "$tmp/payload"

sig=$(od -An -tx1 -N 6 "$tmp/payload" | tr -d ' \n')
case "$sig" in
1f8b*)		fmt=gzip;	cmd="gzip -dc" ;;
fd377a585a00)	fmt=xz;		cmd="xz -dc --single-stream" ;;
28b52ffd*)	fmt=zstd;	cmd="zstd -dcq" ;;
5d0000*)	fmt=lzma;	cmd="xz -dc --format=lzma" ;;
425a68*)	fmt=bzip2;	cmd="bzip2 -dc" ;;
02214c18*)	fmt=lz4;	cmd="lz4 -dc" ;;
894c5a4f*)	fmt=lzo;	cmd="lzop -dc" ;;
7f454c46*)	fmt=none;	cmd="cat" ;;
*)
	echo "extract-vmlinux: unknown payload format (magic $sig)" >&2
	exit 1 ;;
esac
if ! command -v "${cmd%% *}" >/dev/null 2>&1; then
	echo "extract-vmlinux: payload is $fmt but '${cmd%% *}' is not installed" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
# Decompressors may complain about the trailing size word the kernel appends;
# trust the output only if it is an ELF file.
$cmd < "$tmp/payload" > "$tmp/vmlinux" 2>"$tmp/err" || true
if [ "$(od -An -tx1 -N 4 "$tmp/vmlinux" | tr -d ' \n')" != "7f454c46" ]; then
	echo "extract-vmlinux: $fmt decompression did not produce an ELF file:" >&2
	cat "$tmp/err" >&2
	exit 1
fi
mv "$tmp/vmlinux" "$out"
echo "extract-vmlinux: $fmt payload -> $out ($(wc -c < "$out") bytes)"
