# bench/lib.sh: what the benches that boot Debian's kernel under the
# branchcount plugin share (bench/boot-branches.sh, bench/boot-interp.sh).
# Sourced after tests/lib/runner.sh. Sets $plugin (built) and $SYMBOLS
# (the kernel's System.map the tiers cache) or exits with the cause;
# sym NAME prints a symbol's address.
plugin=$BUILD/bench/branchcount.so
mkdir -p "$BUILD/bench"
gcc -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -o "$plugin" \
	bench/tools/branchcount.c || exit 1
if ! kernel_symbols; then
	echo "bench: no kernel symbols (the kallsyms boot failed: $RUNS/kernel-symbols/)" >&2
	exit 1
fi
sym() { awk -v s="$1" '$3 == s { print $1 }' "$SYMBOLS"; }
