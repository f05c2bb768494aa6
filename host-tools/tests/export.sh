#!/usr/bin/env bash
# `hvtrace export --perf` and `--uftrace` checked with the real clients,
# Debian's perf (linux-perf) and uftrace: a synthetic trace of known
# content (hvtrace synth, and a hand-made file with an interrupt, a marker,
# a LOST record, user-mode and unsymbolized addresses) is exported, and what
# `perf script`/`perf report` and `uftrace replay/report/graph/dump
# --chrome/tui` print is compared with what `hvtrace dump` and `hvtrace
# report --calls` say of the same file, record for record. Then bad
# arguments and bad trace files. Prints "export: N passed, M failed"; a
# client that is not installed is a failure (scripts/setup-deps.sh installs
# both). HVTRACE=path/to/hvtrace (default build/host-tools/hvtrace).
#
#   host-tools/tests/export.sh --trace FILE SYMBOLS
# only the two round trips, over a trace someone else made (the perf tier
# passes each Linux run's stream and its program): perf script against
# hvtrace dump, and uftrace replay against report --calls for every vCPU
# the trace holds.
set -u
cd "$(dirname "$0")/../.."
H=${HVTRACE:-build/host-tools/hvtrace}
[ -x "$H" ] || { echo "export.sh: $H not built" >&2; echo "export: 0 passed, 1 failed"; exit 1; }
T=$(mktemp -d /tmp/hvt-export-XXXXXX)
TMUX_S=hvt-export-$$
cleanup() {
	tmux kill-session -t "$TMUX_S" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
. host-tools/tests/lib.sh
run() { # run RC DESC CMD...: output in $T/out and $T/err, expects exit RC
	local want=$1 d=$2 rc
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = "$want" ]; then ok; else bad "$d: exit $rc, wanted $want; stderr: $(head -c 400 "$T/err")"; fi
}
for tool in perf uftrace python3; do
	command -v "$tool" >/dev/null || bad "$tool is not installed (scripts/setup-deps.sh installs it)"
done

# perf script's -F cpu,time,ip,sym,addr --ns lines as hvtrace dump sees the
# same records: every branch, interrupt and exception, in time order
want_perf() { # want_perf TRACE SYMS
	"$H" dump --json "$1" --symbols "$2" 2>/dev/null | python3 -c '
import json, struct, sys
recs = [json.loads(l) for l in sys.stdin]
t0 = min(r["tsc"] for r in recs)
# the header'"'"'s tsc_hz (struct hvtrace_file_hdr, offset 24): perf'"'"'s times are ns
hz = struct.unpack_from("<Q", open(sys.argv[1], "rb").read(32), 24)[0]
def sym(r, k):
    # a user-mode sample (CPL 3) is looked up in its process'"'"'s maps, which
    # the file does not have: perf prints [unknown] for both ends
    if r.get("from_cpl", 0):
        return "[unknown]"
    s = r.get(k + "_sym")
    return s.split("+")[0] if s and not s.startswith("0x") else "[unknown]"
for r in recs:
    if r["kind"] in ("branch", "far", "interrupt", "exception"):
        ns = (r["tsc"] - t0) * 10**9 // hz if hz else r["tsc"] - t0
        print("[%03d] %d.%09d: %x %s => %x %s" % (r["vcpu"], ns // 10**9, ns % 10**9,
              int(r["from"], 16), sym(r, "from"), int(r["to"], 16), sym(r, "to")))
' "$1"
}
norm() { sed -E 's/ +/ /g; s/^ //; s/ $//' "$@"; }

# the entries of `uftrace replay --tid T` (depth, name) == `report --calls`
calls_of_report() { # TRACE SYMS VCPU
	# an address no symbol holds: report says 0xADDR, uftrace <ADDR> of its low 48 bits
	"$H" report "$1" --symbols "$2" --calls --vcpu "$3" 2>/dev/null |
		sed -nE '2,$ s/^ *[0-9]+  ( *)(.*)$/\1\2/p' |
		awk '{ match($0, /^ */); d = RLENGTH / 2; n = substr($0, RLENGTH + 1)
		       if (n ~ /^0x[0-9a-f]+$/) { h = substr(n, 3); if (length(h) > 12) h = substr(h, length(h) - 11)
		                                   sub(/^0+/, "", h); n = "<" (h == "" ? "0" : h) ">" }
		       printf "%d %s\n", d, n }'
}
calls_of_replay() { # DIR TID
	uftrace replay -d "$1" --tid "$2" 2>/dev/null | sed -nE 's/^.*\| (.*)$/\1/p' |
		sed -nE 's/^( *)([^ ]+)\(\)( \{|;)$/\1\2/p' |
		awk '{ match($0, /^ */); printf "%d %s\n", RLENGTH / 2, substr($0, RLENGTH + 1) }'
}
# perf_roundtrip NAME TRACE SYMS: export --perf, then perf script's lines
# are hvtrace dump's, record for record
perf_roundtrip() {
	local n=$1 tr=$2 sy=$3
	run 0 "export --perf ($n)" "$H" export "$tr" --perf "$T/$n.data" --symbols "$sy"
	check "export --perf ($n): the kallsyms beside" test -s "$T/$n.data.kallsyms"
	want_perf "$tr" "$sy" >"$T/$n.perf.want"
	perf script -i "$T/$n.data" --kallsyms "$T/$n.data.kallsyms" -F cpu,time,ip,sym,addr --ns \
		2>"$T/$n.perf.err" | norm >"$T/$n.perf.got"
	check "perf script ($n): runs" test "${PIPESTATUS[0]}" = 0
	check "perf script ($n): $(wc -l <"$T/$n.perf.want") samples, cpu, time, from/to and symbols as hvtrace dump" \
		cmp -s "$T/$n.perf.want" "$T/$n.perf.got"
	cmp -s "$T/$n.perf.want" "$T/$n.perf.got" || diff "$T/$n.perf.want" "$T/$n.perf.got" | head -6 >&2
}
# uftrace_roundtrip NAME TRACE SYMS VCPU...: export --uftrace, then each
# vCPU's task replays report --calls' entries, names and nesting
uftrace_roundtrip() {
	local n=$1 tr=$2 sy=$3 v
	shift 3
	run 0 "export --uftrace ($n)" "$H" export "$tr" --uftrace "$T/$n.uft" --symbols "$sy"
	for v in "$@"; do
		calls_of_report "$tr" "$sy" "$v" >"$T/$n.$v.want"
		calls_of_replay "$T/$n.uft" $((v + 1)) >"$T/$n.$v.got"
		check "uftrace replay ($n, vCPU $v = task $((v + 1))): $(wc -l <"$T/$n.$v.want") entries, names and nesting as report --calls" \
			cmp -s "$T/$n.$v.want" "$T/$n.$v.got"
		cmp -s "$T/$n.$v.want" "$T/$n.$v.got" || diff "$T/$n.$v.want" "$T/$n.$v.got" | head -6 >&2
		check "uftrace replay ($n, vCPU $v): not empty" test -s "$T/$n.$v.got"
	done
}

if [ "${1:-}" = --trace ]; then
	[ $# = 3 ] && [ -s "$2" ] && [ -s "$3" ] || { echo "usage: export.sh --trace FILE SYMBOLS (both present)" >&2; exit 2; }
	vcpus=$("$H" dump --json "$2" 2>/dev/null | sed -nE 's/.*"vcpu":([0-9]+),"kind":"branch".*/\1/p' | sort -un)
	[ -n "$vcpus" ] || bad "$2: no branch records"
	perf_roundtrip trace "$2" "$3"
	uftrace_roundtrip trace "$2" "$3" $vcpus
	echo "export: $pass passed, $failn failed"
	[ "$failn" = 0 ]
	exit
fi

# ---------------------------------------------------------------- inputs
"$H" synth sysmap -o "$T/System.map"
"$H" synth file -o "$T/two.hvt" --records 64 --vcpus 2 --tsc-hz 1000000000
# by hand: vCPU 0 and 2 (none on 1), a marker and a CR3 switch (no
# sample), a LOST record, an interrupt, a user-mode branch to an address no
# symbol holds, a call through a retpoline, a return past the start
python3 - "$T/mixed.hvt" "$T/mixed.map" <<'PY'
import struct, sys
K = 0xffffffff81000000
S = {"start_kernel": K, "do_work": K + 0x1000, "helper": K + 0x2000, "irq_handler": K + 0x3000,
     "__x86_indirect_thunk_rax": K + 0x4000, "leaf": K + 0x5000}
BR, IRQ, FAR, CR3, MARK, LOST = 1, 2, 4, 5, 6, 7
CALL, JMP, RET, JCC, IRET = 5, 3, 7, 1, 11
def a(x):
    n, _, off = x.partition("+")
    return S[n] + (int(off, 16) if off else 0)
# (tsc, vcpu, kind, from, to, cpl from/to, aux)
R = [(1000, 0, MARK, 0x1, 0x0, 0, 1),
     (1100, 0, BR, "start_kernel+10", "do_work", 0, CALL),
     (1150, 2, BR, "start_kernel+20", "helper", 0, CALL),
     (1200, 0, BR, "do_work+8", "do_work+30", 0, JCC),
     (1300, 0, BR, "do_work+40", "helper", 0, CALL),
     (1350, 2, IRQ, "helper+4", "irq_handler", 0, 0x20),
     (1400, 0, BR, "helper+10", "__x86_indirect_thunk_rax", 0, CALL),
     (1410, 0, BR, "__x86_indirect_thunk_rax", "__x86_indirect_thunk_rax+20", 0, CALL),
     (1420, 0, BR, "__x86_indirect_thunk_rax+30", "leaf", 0, RET),
     (1450, 2, LOST, 5, 1400, 0, 0),
     (1500, 0, BR, "leaf+8", "helper+15", 0, RET),
     (1550, 2, FAR, "irq_handler+8", "helper+4", 0, IRET),
     (1600, 0, BR, "helper+20", "do_work+45", 0, RET),
     (1650, 2, BR, "helper+30", "start_kernel+25", 0, RET),
     (1700, 0, CR3, 0x1000, 0x2000, 0, 0),
     (1800, 0, BR, 0x401000, 0x401100, 3, JMP),
     (1900, 0, BR, "do_work+50", "start_kernel+15", 0, RET),
     (2000, 0, BR, "start_kernel+30", "leaf", 0, CALL)]
body = b""
for t, v, k, f, to, cpl, aux in R:
    f = a(f) if isinstance(f, str) else f
    to = a(to) if isinstance(to, str) else to
    body += struct.pack("<QQQHBBI", t, f, to, v, k, cpl | cpl << 2, aux)
hdr = struct.pack("<QIIIIQQQII", 0x314c494652545648, (1 << 16) | 4, 32, 128, 1, 1000000000,
                  len(R), 5, 3, 0)
open(sys.argv[1], "wb").write(hdr + bytes(128 - len(hdr)) + body)
open(sys.argv[2], "w").write("".join("%016x T %s\n" % (v, k) for k, v in sorted(S.items(), key=lambda x: x[1])))
PY

# ---------------------------------------------------------------- perf
for n in two mixed; do
	case $n in two) S=$T/System.map ;; mixed) S=$T/mixed.map ;; esac
	perf_roundtrip "$n" "$T/$n.hvt" "$S"
	perf report -i "$T/$n.data" --kallsyms "$T/$n.data.kallsyms" --stdio --sort symbol >"$T/$n.rep" 2>/dev/null
	check "perf report --sort symbol ($n): runs" test $? = 0
	check "perf report ($n): the sample count" has "$T/$n.rep" "^# Samples: $(wc -l <"$T/$n.perf.want") +of event 'branches'"
done
check "export --perf: says the count" has "$T/err" "^hvtrace export: 15 samples, 2 vCPUs, lost records -> $T/mixed.data \(symbols: perf \.\.\. --kallsyms $T/mixed.data.kallsyms\)$"
check "perf script (mixed): the interrupt, on vCPU 2" has "$T/mixed.perf.got" "^\[002\] 0\.000000350: ffffffff81002004 helper => ffffffff81003000 irq_handler$"
check "perf script (mixed): a user-mode branch, unresolved" has "$T/mixed.perf.got" "^\[000\] 0\.000000800: 401000 \[unknown\] => 401100 \[unknown\]$"
# a TSC that is not 1 GHz (every real trace's): perf's times are nanoseconds
"$H" synth file -o "$T/hz.hvt" --records 16 --vcpus 1 --tsc-hz 2300000000
perf_roundtrip hz "$T/hz.hvt" "$T/System.map"
# counts per symbol of the sampled ips: two.hvt's 32 records a vCPU
check "perf report --sort symbol (two): the four functions, their shares" python3 -c '
import re, sys
got = {m.group(2): float(m.group(1)) for m in re.finditer(r"^ +([0-9.]+)%  \[k\] (\S+)", open(sys.argv[1]).read(), re.M)}
assert got == {"f1": 37.5, "main": 25.0, "f2": 25.0, "f3": 12.5}, got
' "$T/two.rep"
perf report -i "$T/mixed.data" --kallsyms "$T/mixed.data.kallsyms" --stdio --sort cpu,comm,sym 2>/dev/null >"$T/out"
check "perf report --sort cpu,comm,sym: vCPU 2's thread and its handler" has "$T/out" " 002 +vcpu2 +\[k\] irq_handler"
perf report -i "$T/mixed.data" --stdio 2>/dev/null >"$T/out"
check "perf report: the LOST record as perf's lost samples" has "$T/out" "^# Total Lost Samples: 5$"
# without --kallsyms perf must not take the host's kernel symbols: the
# build-id is the guest's own
perf script -i "$T/two.data" -F ip,sym 2>"$T/err" | norm >"$T/out"
check "perf script without --kallsyms: no host symbol, every sample [unknown]" \
	test "$(grep -c ' \[unknown\]$' "$T/out")" = 64
check "perf script without --kallsyms: says which build-id it lacks" has "$T/err" "No kallsyms or vmlinux with build-id [0-9a-f]+ was found"
rm -f "$T/two.json"
perf data convert -i "$T/two.data" --to-json "$T/two.json" >/dev/null 2>&1
check "perf data convert --to-json: 64 samples, cpus 0 and 1" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
assert len(s) == 64 and {x["cpu"] for x in s} == {0, 1}, len(s)
' "$T/two.json"
run 0 "export --perf without symbols" "$H" export "$T/two.hvt" --perf "$T/raw.data"
check "export --perf without symbols: no kallsyms file" test ! -e "$T/raw.data.kallsyms"
check "export --perf without symbols: said" has "$T/err" "no symbols: addresses stay raw"
run 0 "export --perf --vcpu 1 --from 10" "$H" export "$T/two.hvt" --perf "$T/w.data" --vcpu 1 --from 10
perf script -i "$T/w.data" -F cpu 2>/dev/null | norm >"$T/out"
check "export --perf --vcpu 1 --from 10: vCPU 1's 27 records of 10..63" \
	test "$(sort -u "$T/out" | tr '\n' ' ')" = "[001] " -a "$(wc -l <"$T/out")" = 27

# ---------------------------------------------------------------- uftrace
for n in two mixed; do
	case $n in two) S=$T/System.map V="0 1" ;; mixed) S=$T/mixed.map V="0 2" ;; esac
	uftrace_roundtrip "$n" "$T/$n.hvt" "$S" $V
done
check "export --uftrace: says the count" has "$T/err" "^hvtrace export: 7 function entries, 2 vCPUs as tasks -> $T/mixed.uft"
uftrace replay -d "$T/mixed.uft" --tid 1 >"$T/out" 2>&1
check "uftrace replay (mixed): the retpoline's callee, nested, timed (leaf: 80 ns)" has "$T/out" "^ +0\.080 us \[ +1\] \|       leaf\(\);$"
uftrace report -d "$T/two.uft" >"$T/out" 2>&1
check "uftrace report: runs" test $? = 0
check "uftrace report: f1 called 8 times (4 a vCPU)" has "$T/out" "^ +[0-9.]+ us +[0-9.]+ us +8  f1$"
uftrace graph -d "$T/mixed.uft" >"$T/out" 2>&1
check "uftrace graph: runs" test $? = 0
check "uftrace graph: both vCPUs' calls under start_kernel, nested" python3 -c '
import sys
l = [x.split(":", 1)[1].strip() for x in open(sys.argv[1]) if " : " in x]
assert l == ["(1) guest", "(2) start_kernel", "+-(1) do_work", "| (1) helper", "| (1) leaf", "|",
             "+-(1) helper", "|", "+-(1) leaf"], l
' "$T/out"
uftrace dump -d "$T/two.uft" --chrome >"$T/two.chrome.json" 2>"$T/err"
check "uftrace dump --chrome: runs" test $? = 0
check "uftrace dump --chrome: JSON, a thread per vCPU, B/E balanced, 13 entries each (as report --calls)" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for tid in (1, 2):	# the tid, or the pid when they are equal
    b = [e["name"] for e in ev if e.get("tid", e["pid"]) == tid and e["ph"] == "B"]
    e = [x for x in ev if x.get("tid", x["pid"]) == tid and x["ph"] == "E"]
    assert len(b) == len(e) == 13 and b[:4] == ["main", "f1", "f2", "f3"], (tid, b)
' "$T/two.chrome.json"
uftrace info -d "$T/two.uft" >"$T/out" 2>&1
check "uftrace info: two tasks" has "$T/out" "^# task list +: 1\(guest\), 2\(guest\)$"
# tmux is one of setup-deps.sh's packages: the TUI is always checked
tmux new-session -d -s "$TMUX_S" -x 120 -y 30 "uftrace tui -d $T/two.uft"
for _ in $(seq 50); do tmux capture-pane -p -t "$TMUX_S" >"$T/tui" 2>/dev/null; grep -q "(8) f1" "$T/tui" && break; sleep 0.1; done
check "uftrace tui: starts, shows the graph" has "$T/tui" "\(2\) main"
tmux send-keys -t "$TMUX_S" q
run 0 "export --uftrace without symbols" "$H" export "$T/two.hvt" --uftrace "$T/raw.uft"
uftrace replay -d "$T/raw.uft" --tid 1 >"$T/out" 2>&1
check "uftrace replay without symbols: the low 48 bits of addresses" has "$T/out" "\|   <ffff81001000>\(\) \{$"
mkdir "$T/empty.uft"
run 0 "export --uftrace into an empty directory" "$H" export "$T/two.hvt" --uftrace "$T/empty.uft" --symbols "$T/System.map"

# ---------------------------------------------------------------- bad arguments, bad files
run 2 "export --perf and --uftrace" "$H" export "$T/two.hvt" --perf "$T/x.data" --uftrace "$T/x.uft"
check "two formats: message" has "$T/err" "give one of --perfetto OUT.json, --perf OUT.data and --uftrace DIR"
run 1 "export --perf into a missing directory" "$H" export "$T/two.hvt" --perf "$T/nodir/x.data"
check "unwritable OUT: the path and the cause" has "$T/err" "^hvtrace: export: $T/nodir/x.data: cannot write: No such file or directory$"
run 1 "export --uftrace into a non-empty directory" "$H" export "$T/two.hvt" --uftrace "$T/two.uft"
check "non-empty DIR: the path and the cause" has "$T/err" "^hvtrace: export: $T/two.uft: exists and is not empty"
run 1 "export --uftrace onto a file" "$H" export "$T/two.hvt" --uftrace "$T/two.hvt"
check "DIR a file: the cause" has "$T/err" "$T/two.hvt: exists and is not a directory"
run 1 "export --uftrace under a missing directory" "$H" export "$T/two.hvt" --uftrace "$T/nodir/x.uft"
check "DIR's parent missing: the cause" has "$T/err" "$T/nodir/x.uft: cannot create the directory: No such file or directory"
run 1 "export --perf, a missing symbols file" "$H" export "$T/two.hvt" --perf "$T/x.data" --symbols "$T/nosyms"
check "missing symbols file: named, the cause" has "$T/err" "^hvtrace: symbols: .*$T/nosyms.*No such file or directory"
check "missing symbols file: nothing written" test ! -e "$T/x.data"
run 1 "export --uftrace, a missing symbols file" "$H" export "$T/two.hvt" --uftrace "$T/x.uft" --symbols "$T/nosyms"
check "missing symbols file: no directory made" test ! -e "$T/x.uft"
cp "$T/two.hvt" "$T/cut.hvt"
truncate -s 300 "$T/cut.hvt"
for fmt in perf uftrace; do
	run 1 "export --$fmt of a truncated file" "$H" export "$T/cut.hvt" --$fmt "$T/cut.$fmt"
	check "export --$fmt, truncated: message" has "$T/err" "^hvtrace: trace file: $T/cut.hvt: truncated"
	check "export --$fmt, truncated: nothing written" test ! -e "$T/cut.$fmt"
done
cp "$T/two.hvt" "$T/kind.hvt"
printf '\011' | dd of="$T/kind.hvt" bs=1 seek=$((128 + 5 * 32 + 26)) conv=notrunc status=none
run 1 "export --perf: record kind 9" "$H" export "$T/kind.hvt" --perf "$T/kind.data"
check "export --perf, bad kind: message" has "$T/err" "record 5: kind 9 out of range"
head -c 64 /dev/urandom >"$T/noise.hvt"
run 1 "export --uftrace of noise" "$H" export "$T/noise.hvt" --uftrace "$T/noise.uft"
check "export --uftrace of noise: says what is wrong" has "$T/err" "^hvtrace: trace file: $T/noise.hvt: 64 bytes, shorter than the 128-byte header"
"$H" synth file -o "$T/unfinished.hvt" --records 10 --partial
run 0 "export --perf of an unfinished file" "$H" export "$T/unfinished.hvt" --perf "$T/unf.data"
check "unfinished: warned" has "$T/err" "not finalized"
check "unfinished: its 10 records" test "$(perf script -i "$T/unf.data" 2>/dev/null | wc -l)" = 10
run 0 "export --help" "$H" export --help
check "export --help: --perf and --uftrace" has "$T/out" "--perf OUT.data .*--uftrace DIR"
run 0 "hvtrace --help" "$H" --help
check "hvtrace --help: export's formats" has "$T/out" "export +FILE \(--perfetto OUT.json \| --perf OUT.data \| --uftrace DIR\)"

echo "export: $pass passed, $failn failed"
[ "$failn" = 0 ]
