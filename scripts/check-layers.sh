#!/usr/bin/env bash
# The hypervisor's layers, each including only itself and those below it:
#
#   svm, vmx (backends)  ->  dispatch  ->  trace  ->  base  ->  arch/x86
#
# plus include/hvtrace (the shared ABI) from anywhere, and base/types.h
# (the basic types every layer speaks) from arch too. Backends do not
# include each other. Prints each include that points the wrong way and
# exits 1 if there is one (make test runs it: docs/architecture.md).
#
#   scripts/check-layers.sh [HV_DIR]      (default: hv)
set -u
hv=${1:-hv}
level() {
	case "$1" in
	arch) echo 0 ;; base) echo 1 ;; trace) echo 2 ;; dispatch) echo 3 ;;
	svm | vmx) echo 4 ;; *) echo -1 ;;
	esac
}
bad=0 n=0
while IFS= read -r f; do
	rel=${f#"$hv"/}
	layer=${rel%%/*}
	from=$(level "$layer")
	if [ "$from" -lt 0 ]; then
		# a file outside the layers (hv.ld, hv.mk): nothing to check
		continue
	fi
	while IFS= read -r inc; do
		n=$((n + 1))
		dir=${inc%%/*}
		[ "$dir" = "$inc" ] && continue		# same directory
		[ "$dir" = hvtrace ] && continue	# the ABI
		[ "$inc" = base/types.h ] && continue
		to=$(level "$dir")
		if [ "$to" -lt 0 ]; then
			echo "$f: includes \"$inc\", which is in no layer"
			bad=1
		elif [ "$to" -gt "$from" ] || { [ "$to" = 4 ] && [ "$dir" != "$layer" ]; }; then
			echo "$f: $layer includes \"$inc\" ($dir is above it, or another backend)"
			bad=1
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find "$hv" -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' \) | sort)
if [ $bad = 0 ]; then
	echo "layers: $n includes, none pointing up"
	exit 0
fi
echo "layers: includes point up (see the lines above; the rule is in docs/architecture.md)"
exit 1
