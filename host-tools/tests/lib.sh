# Sourced by the host-tools test scripts (cli.sh, gdb.sh, hostile.sh): counters and
# the checks they share. The script prints "NAME: $pass passed, $failn
# failed" at the end (tests/run-all.sh sums those lines).
pass=0 failn=0

ok() { pass=$((pass + 1)); }
bad() { failn=$((failn + 1)); echo "FAIL: $*" >&2; }
check() { # check DESC CONDITION...
	local d=$1
	shift
	if "$@"; then ok; else bad "$d"; fi
}
has() { grep -qE -- "$2" "$1"; } # has FILE ERE
# run RC DESC CMD...: runs CMD, output in $T/out and $T/err, expects exit RC
run() {
	local want=$1 d=$2 rc
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = "$want" ]; then ok; else bad "$d: exit $rc, wanted $want; stderr: $(head -c 400 "$T/err")"; fi
}
