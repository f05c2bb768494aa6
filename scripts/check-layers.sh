#!/usr/bin/env bash
# The hypervisor's layers, each including only itself and those below it:
#
#   svm, vmx (backends)  ->  dispatch  ->  trace  ->  base  ->  arch/x86
#
# plus include/hvtrace (the shared ABI) from anywhere. Backends do not
# include each other. With OBJ_DIR (the built objects), the same rule for
# symbols: no object uses a function or variable defined in a layer above
# its own, but for two calls made through a table on purpose: the
# root-mode exception stubs (arch) calling exc_handler (base), and the
# vendor table in dispatch/entry.c naming svm_ops and vmx_ops. Prints each
# include or symbol that points the wrong way and exits 1 if there is one
# (make test runs it: docs/architecture.md).
#
#   scripts/check-layers.sh [HV_DIR [OBJ_DIR]]      (default: hv)
set -u
hv=${1:-hv}
objs=${2:-}
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
syms=0
if [ -n "$objs" ]; then
	# "LAYER OBJECT KIND SYMBOL" for every defined (T D B R) and undefined
	# (U) symbol of every object in a layer
	table=$(find "$objs" -name '*.o' | sort | while IFS= read -r o; do
		rel=${o#"$objs"/}
		layer=${rel%%/*}
		[ "$(level "$layer")" -ge 0 ] || continue
		# an object whose source is gone (moved or deleted) is stale
		[ -e "$hv/${rel%.o}.c" ] || [ -e "$hv/${rel%.o}.S" ] || continue
		nm "$o" | awk -v l="$layer" -v o="$rel" \
			'NF == 3 && $2 ~ /^[TDBRC]$/ { print l, o, "D", $3 } NF == 2 && $1 == "U" { print l, o, "U", $2 }'
	done)
	syms=$(printf '%s\n' "$table" | awk '$3 == "U"' | wc -l)
	while read -r layer obj sym dlayer dobj; do
		case "$layer:$sym" in
		arch:exc_handler | dispatch:svm_ops | dispatch:vmx_ops) continue ;;
		esac
		echo "$obj: $layer uses $sym, defined in $dobj ($dlayer)"
		bad=1
	done < <(printf '%s\n' "$table" | awk '
		function lv(x) { return x == "arch" ? 0 : x == "base" ? 1 : x == "trace" ? 2 : x == "dispatch" ? 3 : 4 }
		$3 == "D" { dl[$4] = $1; dob[$4] = $2; next }
		$3 == "U" { u[++n] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				split(u[i], f, " ")
				if (!(f[4] in dl)) continue
				d = dl[f[4]]
				if (lv(d) > lv(f[1]) || (lv(d) == 4 && d != f[1]))
					print f[1], f[2], f[4], d, dob[f[4]]
			}
		}')
fi
if [ $bad = 0 ]; then
	echo "layers: $n includes${objs:+ and $syms symbol uses}, none pointing up"
	echo "layers: 1 passed, 0 failed"
	exit 0
fi
echo "layers: something points up (the lines above; the rule is in docs/architecture.md)"
echo "layers: 0 passed, 1 failed"
exit 1
