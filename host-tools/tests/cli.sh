#!/usr/bin/env bash
# CLI tests of `hvtrace` on synthetic channels, dumps and trace files made by
# its hidden `hvtrace synth`: every subcommand, exit codes (0 ok, 1 data
# error, 2 usage), and exact record counts while `hvtrace record` drains a
# ring another process is producing into. Prints "cli: N passed, M failed".
# HVTRACE=path/to/hvtrace (default build/host-tools/hvtrace).
set -u
cd "$(dirname "$0")/../.."
H=${HVTRACE:-build/host-tools/hvtrace}
[ -x "$H" ] || { echo "cli.sh: $H not built" >&2; echo "cli: 0 passed, 1 failed"; exit 1; }
T=$(mktemp -d /tmp/hvt-cli-XXXXXX)
SHM=$T
[ -d /dev/shm ] && [ -w /dev/shm ] && SHM=$(mktemp -d /dev/shm/hvt-cli-XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$T" "$SHM"
}
trap cleanup EXIT
. host-tools/tests/lib.sh
# data records and the sum of LOST counts in a trace file
tally() {
	"$H" dump "$1" 2>/dev/null | awk '$3 == "lost" {l += $4; next} {d++} END {printf "%d %d\n", d, l}'
}
hdr_lost() { # the header's lost field (offset 40)
	od -An -tu8 -j40 -N8 "$1" | tr -d ' '
}
json_ok() { python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }

# ---------------------------------------------------------------- usage
run 0 "--help" "$H" --help
check "--help: every record option" has "$T/out" "record   --shm PATH -o FILE \\[--wait SEC\\] \\[--rate N\\]"
check "--help lists the commands" has "$T/out" "snapshot"
run 2 "no command" "$H"
run 2 "unknown command" "$H" frobnicate
for c in status record snapshot dump report export ctl; do
	run 0 "$c --help" "$H" "$c" --help
	check "$c --help shows usage" has "$T/out" "usage: hvtrace $c"
	run 2 "$c with an unknown option" "$H" "$c" --bogus
	check "$c usage error names the command" has "$T/err" "^hvtrace $c: "
done
run 1 "status on a missing file" "$H" status --shm "$T/none"
check "a missing file: named once" has "$T/err" "^hvtrace: $T/none: No such file or directory$"
run 2 "status without a source" "$H" status
run 2 "status with both sources" "$H" status --shm a --dump b
run 2 "record without -o" "$H" record --shm x
run 1 "report of a missing file" "$H" report x
run 2 "dump without FILE" "$H" dump
run 2 "dump with two files" "$H" dump a b
run 2 "record --rate 0" "$H" record --shm x -o y --rate 0
run 2 "report --hot x" "$H" report f --symbols s --hot x
run 2 "ctl without --shm" "$H" ctl stop
check "ctl: --shm named" has "$T/err" "--shm PATH is required"
run 2 "ctl without a request" "$H" ctl --shm x
run 2 "ctl: an unknown request" "$H" ctl --shm x frob
check "ctl: the requests listed" has "$T/err" "'frob' is not a request \\(start, stop"
run 2 "ctl mark without a value" "$H" ctl --shm x mark
run 2 "ctl stop with an argument" "$H" ctl --shm x stop now
run 2 "ctl filter: a bad consumer" "$H" ctl --shm x filter both
run 2 "ctl filter: a bad cpl" "$H" ctl --shm x filter flight cpl=root
run 2 "ctl filter: a bad range" "$H" ctl --shm x filter flight range=5
run 2 "ctl filter: five ranges" "$H" ctl --shm x filter stream range=1-2 range=1-2 range=1-2 range=1-2 range=1-2
run 2 "ctl freeze-at 0" "$H" ctl --shm x freeze-at 0
run 2 "ctl watchdog without a unit" "$H" ctl --shm x watchdog 30
check "ctl watchdog: says how" has "$T/err" "watchdog takes a time with its unit"
run 2 "ctl --timeout 0" "$H" ctl --shm x --timeout 0 stop
run 1 "ctl on a missing channel" "$H" ctl --shm "$T/none" stop

# ---------------------------------------------------------------- status, snapshot
C=$SHM/frozen.shm
run 0 "synth a frozen flight recorder" "$H" synth chan -o "$C" --vcpus 2 --tsc-hz 1000000000 \
	--ring 0:overwrite:64:100 --ring 1:overwrite:64:30 --ring 0:lossless:1024:0 \
	--state frozen --freeze triple-fault
run 0 "status" "$H" status --shm "$C"
check "status: state" has "$T/out" "^state: frozen"
check "status: freeze reason" has "$T/out" "^freeze: triple-fault"
check "status: tsc_hz" has "$T/out" "^tsc_hz: 1000000000"
check "status: ring 0 full" has "$T/out" "^ +0 +0 flight +overwrite +all +64 +64 +100 "
check "status: ring 1 partly" has "$T/out" "^ +1 +1 flight +overwrite +all +64 +30 +30 "
check "status: ring 2 no reader" has "$T/out" "^ +2 +0 stream +lossless .* none$"
check "status: control off" has "$T/out" "^control: off "
run 1 "ctl on a channel without control" "$H" ctl --shm "$C" stop
check "ctl: control off named" has "$T/err" "takes no host requests on this channel"
run 0 "status --json" "$H" status --shm "$C" --json
if command -v python3 >/dev/null; then
	check "status --json parses, fields right" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
r = s["rings"]
assert s["state"] == "frozen" and s["freeze"] == "triple-fault" and s["tsc_hz"] == 10**9
assert [x["fill"] for x in r] == [64, 30, 0] and r[0]["head"] == 100 and r[2]["mode"] == "lossless"
assert r[2]["reader_attached"] is False
' "$T/out"
fi
run 0 "snapshot --shm" "$H" snapshot --shm "$C" -o "$T/snap.hvt"
check "snapshot line" has "$T/out" "^hvtrace snapshot: 94 records from 2 rings \(state frozen\) -> $T/snap.hvt$"
"$H" dump "$T/snap.hvt" >"$T/snap.txt" 2>/dev/null
check "snapshot: merged by TSC" sort -n -c -k1,1 "$T/snap.txt"
check "snapshot: both vCPUs" test "$(awk '{print $2}' "$T/snap.txt" | sort -u | tr '\n' ' ')" = "0 1 "
check "snapshot: SNAPSHOT|FROZEN|COMPLETE flags" test "$(od -An -tu4 -j20 -N4 "$T/snap.hvt" | tr -d ' ')" = 7
check "snapshot: ring 0 newest 64 (from record 36)" has "$T/snap.txt" "^4600 0 "
check "snapshot: record 35 gone" test "$(grep -c '^4500 0 ' "$T/snap.txt")" = 0
for f in raw elf; do
	"$H" synth chan -o "$T/mem.$f" --dump $f --at 0x20000 --decoy --vcpus 2 --tsc-hz 1000000000 \
		--ring 0:overwrite:64:100 --ring 1:overwrite:64:30 --state frozen --freeze triple-fault
	run 0 "status --dump ($f)" "$H" status --dump "$T/mem.$f"
	check "status --dump ($f): where found" has "$T/out" "$f dump\), header at guest-physical 0x20000"
	run 0 "snapshot --dump ($f)" "$H" snapshot --dump "$T/mem.$f" -o "$T/snap.$f"
	"$H" dump "$T/snap.$f" >"$T/snap.$f.txt" 2>/dev/null
	check "snapshot from a $f dump == from shm" cmp -s "$T/snap.txt" "$T/snap.$f.txt"
done
# a forged header below the real one: both listed, neither picked, --at picks
for f in raw elf; do
	"$H" synth chan -o "$T/forged.$f" --dump $f --at 0x20000 --forge 0x8000 --vcpus 2 \
		--tsc-hz 1000000000 --ring 0:overwrite:64:100 --ring 1:overwrite:64:30 --state frozen \
		--freeze triple-fault
	run 1 "status --dump ($f) with a forged header: refused" "$H" status --dump "$T/forged.$f"
	check "forged ($f): says why and how to choose" has "$T/err" \
		"^hvtrace: $T/forged.$f: dump: 2 pages hold a valid channel header.*--at ADDR"
	check "forged ($f): lists the forgery" has "$T/err" \
		"^  --at 0x8000: abi [0-9.]+, 0 rings, 1 vcpu, 4096 bytes, state stopped, where reserved-ram, phys_base 0x8000$"
	check "forged ($f): lists the real one" has "$T/err" "^  --at 0x20000: abi [0-9.]+, 2 rings, 2 vcpus, .*state frozen"
	run 1 "snapshot --dump ($f) with a forged header: refused" "$H" snapshot --dump "$T/forged.$f" -o "$T/forged-snap.hvt"
	check "forged ($f): no file written" test ! -e "$T/forged-snap.hvt"
	run 0 "status --dump ($f) --at the real one" "$H" status --dump "$T/forged.$f" --at 0x20000
	check "--at ($f): the real one" has "$T/out" "header at guest-physical 0x20000 \(chosen with --at"
	check "--at ($f): its rings" has "$T/out" "^vcpus: 2, rings: 2$"
	run 0 "status --dump ($f) --at the forgery (hex without 0x)" "$H" status --dump "$T/forged.$f" --at 8000
	check "--at ($f): the forgery" has "$T/out" "^state: stopped"
	run 0 "snapshot --dump ($f) --at the real one" "$H" snapshot --dump "$T/forged.$f" --at 0x20000 -o "$T/snapf.hvt"
	"$H" dump "$T/snapf.hvt" >"$T/snapf.txt" 2>/dev/null
	check "snapshot --at ($f) == from shm" cmp -s "$T/snap.txt" "$T/snapf.txt"
	run 1 "status --dump ($f) --at a page without a header" "$H" status --dump "$T/forged.$f" --at 0x9000
	check "--at nothing ($f): message" has "$T/err" "no valid channel header at guest-physical 0x9000"
done
run 2 "status --at with --shm" "$H" status --shm "$C" --at 0x1000
run 2 "status --at not hex" "$H" status --dump "$T/forged.raw" --at 0xzz
"$H" synth chan -o "$T/one.raw" --dump raw --at 0x20000 --ring 0:overwrite:64:10
run 0 "status --at on a dump with one header" "$H" status --dump "$T/one.raw" --at 0x20000
check "--at, one header: no note" has "$T/out" "header at guest-physical 0x20000$"
# a raw image of one range of memory, from the channel's page on (Bochs's
# debugger's writemem, pmemsave ADDR SIZE): --base says where it starts
tail -c +$((0x20000 + 1)) "$T/mem.raw" >"$T/range.raw"
run 0 "status --dump --base" "$H" status --dump "$T/range.raw" --base 0x20000
check "--base: header at its address" has "$T/out" "raw dump\), header at guest-physical 0x20000$"
run 0 "snapshot --dump --base" "$H" snapshot --dump "$T/range.raw" --base 20000 -o "$T/snapr.hvt"
"$H" dump "$T/snapr.hvt" >"$T/snapr.txt" 2>/dev/null
check "snapshot --base == from shm" cmp -s "$T/snap.txt" "$T/snapr.txt"
csize=$("$H" status --dump "$T/range.raw" --base 0x20000 --json | sed -nE 's/.*"size":([0-9]+).*/\1/p')
head -c $((csize - 32)) "$T/range.raw" >"$T/range-cut.raw"
run 1 "status --dump --base, the range a record short" "$H" status --dump "$T/range-cut.raw" --base 0x20000
check "range cut short: message" has "$T/err" \
	"^hvtrace: $T/range-cut.raw: dump: 1 candidate page rejected, the last: channel at 0x20000: size $csize runs past the dump, whose memory there ends at 0x$(printf %x $((0x20000 + csize - 32)))$"
run 1 "status --dump --base off by half a page" "$H" status --dump "$T/range.raw" --base 0x20800
check "wrong base: message" has "$T/err" "dump: no channel \(no 4 KiB-aligned page in 0x20800\.\."
run 1 "status --dump --base of an ELF core" "$H" status --dump "$T/mem.elf" --base 0x20000
check "--base of an ELF core: message" has "$T/err" "an ELF core, not a raw image"
run 2 "status --base with --shm" "$H" status --shm "$C" --base 0x1000
run 2 "snapshot --base not hex" "$H" snapshot --dump "$T/range.raw" --base 0xzz -o "$T/x.hvt"
head -c 1048576 /dev/zero >"$T/zero.img"
run 1 "snapshot --dump without a channel" "$H" snapshot --dump "$T/zero.img" -o "$T/x.hvt"
check "no channel: message" has "$T/err" "^hvtrace: $T/zero.img: dump: no channel"
run 0 "synth tracing-only lossless" "$H" synth chan -o "$SHM/ll.shm" --ring 0:lossless:64:0
run 1 "snapshot with no overwrite ring" "$H" snapshot --shm "$SHM/ll.shm" -o "$T/x.hvt"
check "no overwrite ring: message" has "$T/err" "no overwrite"

# corrupted channels through the CLI
cp "$C" "$SHM/bad.shm"
printf 'X' | dd of="$SHM/bad.shm" bs=1 seek=0 conv=notrunc status=none
run 1 "status: bad magic" "$H" status --shm "$SHM/bad.shm"
check "bad magic: message" has "$T/err" "^hvtrace: $SHM/bad.shm: channel: magic 0x"
cp "$C" "$SHM/bad.shm"
printf '\003\000\000\000\000\000\000\000' | dd of="$SHM/bad.shm" bs=1 seek=$((128 + 16)) conv=notrunc status=none
run 1 "status: capacity 3" "$H" status --shm "$SHM/bad.shm"
check "capacity 3: message" has "$T/err" "ring 0: capacity 3 not a power of two"
run 1 "status: missing file" "$H" status --shm "$T/nonexistent"

# ---------------------------------------------------------------- dump
run 0 "synth sysmap" "$H" synth sysmap -o "$T/System.map"
"$H" synth file -o "$T/two.hvt" --records 64 --vcpus 2 --tsc-hz 2000000000
run 0 "dump" "$H" dump "$T/two.hvt"
check "dump: 64 lines" test "$(wc -l <"$T/out")" = 64
check "dump: a call" has "$T/out" "^1000 0 branch 0xffffffff81000010 -> 0xffffffff81001000 cpl 0->0 call$"
check "dump: an interrupt" has "$T/out" " 1 interrupt 0xffffffff81000020 -> 0xffffffff81004000 cpl 0->0 vector 0x20$"
run 0 "dump --symbols" "$H" dump "$T/two.hvt" --symbols "$T/System.map"
check "dump --symbols: func+off" has "$T/out" "^1200 0 branch f1\+0x30 -> f2 cpl 0->0 call$"
run 0 "dump --json" "$H" dump --json "$T/two.hvt" --symbols "$T/System.map"
check "dump --json: a line" has "$T/out" '^\{"tsc":1000,"vcpu":0,"kind":"branch","type":"call","from":"0xffffffff81000010","to":"0xffffffff81001000",.*"to_sym":"f1"\}$'
if command -v python3 >/dev/null; then
	check "dump --json: every line parses" python3 -c '
import json, sys
n = sum(1 for l in open(sys.argv[1]) if json.loads(l)["kind"])
assert n == 64
' "$T/out"
fi
run 0 "synth unfinished file" "$H" synth file -o "$T/partial.hvt" --records 10 --partial
run 0 "dump of an unfinished file" "$H" dump "$T/partial.hvt"
check "unfinished: 10 records" test "$(wc -l <"$T/out")" = 10
check "unfinished: warning" has "$T/err" "not finalized.*partial record ignored"
cp "$T/two.hvt" "$T/cut.hvt"
truncate -s 300 "$T/cut.hvt"
run 1 "dump of a truncated file" "$H" dump "$T/cut.hvt"
check "truncated: message" has "$T/err" "^hvtrace: trace file: $T/cut.hvt: truncated"
: >"$T/empty.hvt"
run 1 "dump of an empty file" "$H" dump "$T/empty.hvt"
check "empty: message" has "$T/err" "empty file"
cp "$T/two.hvt" "$T/kind.hvt"
printf '\011' | dd of="$T/kind.hvt" bs=1 seek=$((128 + 5 * 32 + 26)) conv=notrunc status=none
run 1 "dump: record kind 9" "$H" dump "$T/kind.hvt"
check "bad kind: message" has "$T/err" "record 5: kind 9 out of range"
run 1 "dump: bad symbol file" "$H" dump "$T/two.hvt" --symbols "$T/two.hvt"
check "bad symbol file: message" has "$T/err" "^hvtrace: symbols: "

# ---------------------------------------------------------------- report
"$H" synth file -o "$T/one.hvt" --records 24
run 0 "report --calls" "$H" report "$T/one.hvt" --symbols "$T/System.map" --calls
printf '%s\n' "vcpu 0 function-call history:" "     1  main" "     2    f1" "     3      f2" \
	"     4        f3" "     5    f1" "     6      f2" "     7        f3" "     8    f1" \
	"     9      f2" "    10        f3" >"$T/calls.want"
check "report --calls: exact history" cmp -s "$T/out" "$T/calls.want"
run 0 "report --hot 2" "$H" report "$T/one.hvt" --symbols "$T/System.map" --hot 2
check "report --hot: header" has "$T/out" "^hot branches: top 2 of 8 distinct from -> to pairs \(24 branch records\)$"
check "report --hot: top pair" has "$T/out" "^         3  0xffffffff81000010 main\+0x10 -> 0xffffffff81001000 f1$"
run 0 "report --last 2" "$H" report "$T/one.hvt" --symbols "$T/System.map" --last 2
check "report --last: two, ending with the last" test "$(tail -1 "$T/out")" = "3300 0 branch main+0x20 -> main+0x8 cpl 0->0 jmp"
check "report --last: header" has "$T/out" "^vcpu 0 last 2 records:$"
# the call history looks through __fentry__, a retpoline and the return
# thunk, as a retbleed-mitigated kernel runs them (a hand-made file)
python3 - "$T/thunks.hvt" "$T/thunks.map" <<'PY'
import struct, sys
S = {"main": 0x1000, "f": 0x2000, "g": 0x3000, "h": 0x3800, "__fentry__": 0x4000,
     "__x86_indirect_thunk_array": 0x5000, "__x86_return_thunk": 0x6000}
CALL, JMP, RET = 5, 3, 7
def a(x):
    n, _, off = x.partition("+")
    return S[n] + (int(off, 16) if off else 0)
recs = [("main+10", "f", CALL), ("f", "__fentry__", CALL), ("__fentry__", "__x86_return_thunk", JMP),
        ("__x86_return_thunk", "f+5", RET), ("f+10", "__x86_indirect_thunk_array", CALL),
        ("__x86_indirect_thunk_array", "__x86_indirect_thunk_array+c", CALL),
        ("__x86_indirect_thunk_array+10", "__x86_return_thunk", JMP), ("__x86_return_thunk", "g", RET),
        ("g", "__fentry__", CALL), ("__fentry__", "__x86_return_thunk", JMP),
        ("__x86_return_thunk", "g+5", RET), ("g+8", "__x86_return_thunk", JMP),
        ("__x86_return_thunk", "f+15", RET), ("f+20", "h", CALL), ("h+4", "__x86_return_thunk", JMP),
        ("__x86_return_thunk", "f+25", RET), ("f+30", "__x86_return_thunk", JMP),
        ("__x86_return_thunk", "main+15", RET), ("main+20", "h", CALL)]
body = b"".join(struct.pack("<QQQHBBI", 100 * (i + 1), a(f), a(t), 0, 1, 0, k) for i, (f, t, k) in enumerate(recs))
body += struct.pack("<QQQHBBI", 9999, 0x100, a("main"), 0, 1, 0, JMP)
hdr = struct.pack("<QIIIIQQQII", 0x314c494652545648, (1 << 16) | 4, 32, 128, 1, 0, len(recs) + 1, 0, 1, 0)
open(sys.argv[1], "wb").write(hdr + bytes(128 - len(hdr)) + body)
open(sys.argv[2], "w").write("".join("%016x T %s\n" % (v, k) for k, v in sorted(S.items(), key=lambda x: x[1])))
PY
run 0 "report --calls through thunks" "$H" report "$T/thunks.hvt" --symbols "$T/thunks.map" --calls
printf '%s\n' "vcpu 0 function-call history:" "     1  main" "     2    f" "     3      g" "     4      h" \
	"     5    h" >"$T/thunks.want"
check "report --calls: __fentry__ left out, the retpoline's real callee, returns through the thunk" \
	cmp -s "$T/out" "$T/thunks.want"
run 0 "report --hot, an address without a symbol" "$H" report "$T/thunks.hvt" --symbols "$T/thunks.map" --hot 30
check "report --hot: an unsymbolized address once" has "$T/out" "^         1  0x100 -> 0x1000 main$"
# what happened just before (and after) a place; symbols are optional
run 0 "report --before g" "$H" report "$T/thunks.hvt" --symbols "$T/thunks.map" --before g --last 2
check "--before: header" has "$T/out" "^vcpu 0: 1 record goes to 0x3000 g; up to the first:$"
check "--before: two records, ending with the one that goes there" \
	test "$(sed -n '2,$p' "$T/out" | tr '\n' '|')" = "700 0 branch __x86_indirect_thunk_array+0x10 -> __x86_return_thunk cpl 0->0 jmp|800 0 branch __x86_return_thunk -> g cpl 0->0 ret|"
run 0 "report --around g" "$H" report "$T/thunks.hvt" --symbols "$T/thunks.map" --around g --last 2
check "--around: two up to the one that goes there, two after" \
	test "$(sed -n '2,$p' "$T/out" | cut -d' ' -f1 | tr '\n' ' ')" = "700 800 900 1000 "
run 0 "report --before 0xADDR, no symbols" "$H" report "$T/thunks.hvt" --before 0x3000 --last 1
check "--before 0xADDR: raw addresses" has "$T/out" "^800 0 branch 0x6000 -> 0x3000 cpl 0->0 ret$"
run 0 "report --before, nothing goes there" "$H" report "$T/thunks.hvt" --before 0x7777
check "--before: says none" has "$T/out" "^no record goes to 0x7777$"
run 2 "report --before a symbol without --symbols" "$H" report "$T/thunks.hvt" --before g
check "--before a symbol without --symbols: message" has "$T/err" "a symbol needs symbols"
run 1 "report --before an unknown symbol" "$H" report "$T/thunks.hvt" --symbols "$T/thunks.map" --before nosuch
check "--before an unknown symbol: message" has "$T/err" "no symbol 'nosuch' in"
run 2 "report --before and --around" "$H" report "$T/thunks.hvt" --before g --around 0x10
# the trace's own map beside it is used without --symbols, and said so
cp "$T/thunks.hvt" "$T/beside.hvt"
cp "$T/thunks.map" "$T/beside.hvt.map"
run 0 "report with FILE.map beside" "$H" report "$T/beside.hvt" --before g --last 1
check "FILE.map beside: said" has "$T/err" "^hvtrace: symbols from $T/beside.hvt.map "
check "FILE.map beside: symbolized" has "$T/out" "-> g cpl 0->0 ret$"
run 0 "dump with FILE.map beside" "$H" dump "$T/beside.hvt"
check "dump: FILE.map beside used" has "$T/out" "__x86_return_thunk"
run 0 "--symbols wins over FILE.map" "$H" dump "$T/beside.hvt" --symbols "$T/System.map"
check "--symbols wins: no note" test ! -s "$T/err"
run 0 "report without --symbols" "$H" report "$T/thunks.hvt" --last 1
check "report without --symbols: raw addresses" has "$T/out" "^9999 0 branch 0x100 -> 0x1000 cpl 0->0 jmp$"
# export windows: by record index, by time, by vCPU
run 0 "export --from 2 --to 5" "$H" export "$T/thunks.hvt" --perfetto "$T/w.json" --symbols "$T/thunks.map" --from 2 --to 5
check "export --from/--to: only records 2..4 (their B events)" \
	test "$(python3 -c 'import json,sys; print(" ".join(e["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "B"))' "$T/w.json")" = "__x86_indirect_thunk_array"
run 0 "export --vcpu 1" "$H" export "$T/two.hvt" --perfetto "$T/v.json" --vcpu 1
check "export --vcpu 1: only vCPU 1's thread" \
	test "$(python3 -c 'import json,sys; print(sorted({e["tid"] for e in json.load(open(sys.argv[1]))["traceEvents"] if "tid" in e}))' "$T/v.json")" = "[1]"
run 2 "export --to before --from" "$H" export "$T/thunks.hvt" --perfetto "$T/x.json" --from 5 --to 3
run 2 "export --from nonsense" "$H" export "$T/thunks.hvt" --perfetto "$T/x.json" --from 1x
check "export --from nonsense: message" has "$T/err" "not a record index or a time"
run 1 "export --from a time, tsc_hz 0" "$H" export "$T/thunks.hvt" --perfetto "$T/x.json" --from 1ms
check "export --from a time, tsc_hz 0: message" has "$T/err" "tsc_hz is 0"
# hvtrace symbols: the block hvtrace-agent symbols prints, from a console log
python3 - "$T" <<'PY'
import base64, gzip, sys
t = sys.argv[1]
m = b"ffffffff81000000 T _text\nffffffff81000100 T start_kernel\nffffffffc0001000 t mod_fn\t[mod]\n"
def block(data, crlf=False):
    b = base64.encodebytes(gzip.compress(data)).decode()
    nl = "\r\n" if crlf else "\n"
    return "HVTRACE-KSYMS-BEGIN" + nl + b.replace("\n", nl) + "HVTRACE-KSYMS-END" + nl
open(t + "/ks-good.log", "w", newline="").write("[ 1.0] boot\n" + block(b"ffffffff81000000 T old\n") + "noise\n" + block(m, True) + "done\n")
open(t + "/ks.want", "wb").write(m)
open(t + "/ks-noend.log", "w").write(block(m).replace("HVTRACE-KSYMS-END\n", ""))
open(t + "/ks-b64.log", "w").write(block(m).replace("HVTRACE-KSYMS-BEGIN\n", "HVTRACE-KSYMS-BEGIN\nnot*base64\n"))
g = base64.encodebytes(gzip.compress(m)[:-12]).decode()
open(t + "/ks-cut.log", "w").write("HVTRACE-KSYMS-BEGIN\n" + g + "HVTRACE-KSYMS-END\n")
open(t + "/ks-notmap.log", "w").write(block(b"hello world\n"))
PY
run 0 "symbols from a console log" "$H" symbols "$T/ks-good.log" -o "$T/ks.map"
check "symbols: the last block, exact, CRLF tolerated" cmp -s "$T/ks.map" "$T/ks.want"
check "symbols: says what it found" has "$T/err" "^hvtrace symbols: 3 functions \(1 in modules\), _text at 0xffffffff81000000 -> "
run 0 "the map works as --symbols" "$H" dump "$T/two.hvt" --symbols "$T/ks.map"
run 1 "symbols: no block" "$H" symbols "$T/calls.want" -o "$T/x.map"
check "symbols: no block: message" has "$T/err" "no HVTRACE-KSYMS-BEGIN ... HVTRACE-KSYMS-END block"
run 1 "symbols: no END" "$H" symbols "$T/ks-noend.log" -o "$T/x.map"
check "symbols: no END: message" has "$T/err" "starts at line 1 has no HVTRACE-KSYMS-END line"
run 1 "symbols: not base64" "$H" symbols "$T/ks-b64.log" -o "$T/x.map"
check "symbols: not base64: message" has "$T/err" "line 1 of it: '\*' is not base64"
run 1 "symbols: gzip cut short" "$H" symbols "$T/ks-cut.log" -o "$T/x.map"
check "symbols: gzip cut short: message" has "$T/err" "not a whole gzip stream"
run 1 "symbols: not a map" "$H" symbols "$T/ks-notmap.log" -o "$T/x.map"
check "symbols: not a map: message" has "$T/err" "the symbols block: symbol map: line 1"
check "symbols: nothing written on failure" test ! -e "$T/x.map"
run 2 "symbols without -o" "$H" symbols "$T/ks-good.log"
run 0 "report (all sections), --vcpu 1" "$H" report "$T/two.hvt" --symbols "$T/System.map" --vcpu 1
check "report --vcpu 1: only vcpu 1" test "$(grep -c 'function-call history' "$T/out")" = 1
check "report --vcpu 1: its history" has "$T/out" "^vcpu 1 function-call history:$"
check "report: all three sections" has "$T/out" "^hot branches:"
# /proc/kallsyms reports 0 bytes in stat: read to EOF (root sees addresses)
if [ -r /proc/kallsyms ] && grep -qm1 -v '^0000000000000000 ' /proc/kallsyms; then
	run 0 "report with /proc/kallsyms" "$H" report "$T/one.hvt" --symbols /proc/kallsyms --calls
fi
# an ELF symbol file, built now
cat >"$T/tiny.c" <<'EOF'
void f(void) { __asm__ volatile("nop"); }
void _start(void) { f(); for (;;); }
EOF
if cc -O1 -nostdlib -static -o "$T/tiny.elf" "$T/tiny.c" 2>/dev/null; then
	run 0 "report with ELF symbols" "$H" report "$T/one.hvt" --symbols "$T/tiny.elf" --calls
	run 0 "dump with ELF symbols" "$H" dump "$T/one.hvt" --symbols "$T/tiny.elf"
fi

# ---------------------------------------------------------------- export
run 0 "export --perfetto" "$H" export "$T/two.hvt" --perfetto "$T/trace.json" --symbols "$T/System.map"
if command -v python3 >/dev/null; then
	check "export: JSON, B/E balanced per vCPU, µs timestamps" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
for tid in (0, 1):
    b = [e for e in ev if e.get("tid") == tid and e["ph"] == "B"]
    e = [e for e in ev if e.get("tid") == tid and e["ph"] == "E"]
    assert len(b) == len(e) == 12, (tid, len(b), len(e))
    assert b[0]["name"] == "f1" and b[1]["name"] == "f2" and b[2]["name"] == "f3"
assert any(e["ph"] == "i" and e["name"] == "interrupt 0x20" for e in ev)
ts = [e["ts"] for e in ev if "ts" in e]
assert max(ts) == (31 * 100 + 10) / 2000.0, max(ts)
' "$T/trace.json"
fi
"$H" synth file -o "$T/nohz.hvt" --records 20
run 0 "export with tsc_hz 0" "$H" export "$T/nohz.hvt" --perfetto "$T/nohz.json"
check "export tsc_hz 0: a note" has "$T/err" "tsc_hz is 0"
command -v python3 >/dev/null && check "export tsc_hz 0: JSON" json_ok "$T/nohz.json"
run 2 "export without --perfetto" "$H" export "$T/nohz.hvt"

# ---------------------------------------------------------------- record
# an exact count: a producer in another process, a reader fast enough
L=$SHM/live.shm
"$H" synth chan -o "$L" --ring 0:overwrite:64:0 --ring 0:lossless:1024:0:1000 --state tracing
"$H" record --shm "$L" -o "$T/rec.hvt" --quiet 2>"$T/rec.err" &
rp=$!
pids+=("$rp")
"$H" synth produce --shm "$L" --ring 1 --count 200000 --wait-reader 10 --stop >"$T/prod.out"
wait "$rp"
check "record: exit 0 on STOPPED" test $? = 0
read -r data lost < <(tally "$T/rec.hvt")
plost=$(sed -nE 's/.*: ([0-9]+) lost.*/\1/p' "$T/prod.out")
check "record: received + lost == produced ($data + $lost)" test "$((data + lost))" = 200000
check "record: LOST records == producer's drops ($lost, $plost)" test "$lost" = "$plost"
check "record: header lost == LOST records" test "$(hdr_lost "$T/rec.hvt")" = "$lost"
check "record: final line" has "$T/rec.err" "^hvtrace record: [0-9]+ records, $lost lost, [0-9.]+ MiB -> $T/rec.hvt$"
"$H" status --shm "$L" >"$T/out"
check "record: detached on exit" has "$T/out" " none$"

# a slow reader (--rate): the producer waits, then drops; counts still exact
"$H" synth chan -o "$L" --ring 0:lossless:256:0:200 --state tracing
"$H" record --shm "$L" -o "$T/slow.hvt" --rate 5000 2>"$T/slow.err" &
rp=$!
pids+=("$rp")
"$H" synth produce --shm "$L" --ring 0 --count 40000 --pace-us 2000 --batch 40 --wait-reader 10 --stop >"$T/prod.out"
wait "$rp"
check "record --rate: exit 0" test $? = 0
read -r data lost < <(tally "$T/slow.hvt")
plost=$(sed -nE 's/.*: ([0-9]+) lost.*/\1/p' "$T/prod.out")
pwaits=$(sed -nE 's/.* ([0-9]+) waits.*/\1/p' "$T/prod.out")
check "record --rate: some lost ($lost)" test "$lost" -gt 0
check "record --rate: received + lost == produced ($data + $lost)" test "$((data + lost))" = 40000
check "record --rate: LOST records == producer's drops ($lost, $plost)" test "$lost" = "$plost"
check "record --rate: header lost ($(hdr_lost "$T/slow.hvt")) == $lost" test "$(hdr_lost "$T/slow.hvt")" = "$lost"
check "record --rate: the producer waited ($pwaits)" test "$pwaits" -gt 0
check "record --rate: progress lines" has "$T/slow.err" "^hvtrace record: [0-9]+ records/s, "

# idle exit, a second reader refused, SIGINT, SIGKILL. 1024 records: the
# 1000 of the SIGINT check fit even when the recorder is not scheduled
# while they are produced (a loaded machine; with 256, some were lost)
"$H" synth chan -o "$L" --ring 0:lossless:1024:0 --state tracing
start=$(date +%s)
run 0 "record --idle-exit 1" "$H" record --shm "$L" -o "$T/idle.hvt" --idle-exit 1 --quiet
check "record --idle-exit: stopped in time" test $(($(date +%s) - start)) -le 4
check "record --idle-exit: empty, valid file" has "$T/err" "^hvtrace record: 0 records, 0 lost"
run 0 "dump of an empty recording" "$H" dump "$T/idle.hvt"
# --idle-exit does not count while the channel waits for its start trigger
# (a guest slow to start tracing: the reader stays, then ends once idle)
"$H" synth chan -o "$T/idle2.shm" --ring 0:lossless:1024:0 --state idle
"$H" record --shm "$T/idle2.shm" -o "$T/idle2.hvt" --idle-exit 1 --quiet 2>"$T/idle2.err" &
rp=$!
pids+=("$rp")
sleep 2.5
check "record --idle-exit: still waiting while tracing has not started" kill -0 "$rp"
"$H" synth state --shm "$T/idle2.shm" --state tracing
start=$(date +%s)
wait "$rp"
check "record --idle-exit: exit 0 once tracing started and stayed idle" test $? = 0
check "record --idle-exit: ended in time after the start" test $(($(date +%s) - start)) -le 4

# --wait: no channel yet, then one appears while the recorder waits
truncate -s 1M "$T/later.shm"
run 1 "record --wait 1 on a file with no channel" "$H" record --shm "$T/later.shm" -o "$T/later.hvt" --wait 1 --quiet
check "record --wait: says it gave up" has "$T/err" "gave up waiting for the channel"
( sleep 1; "$H" synth chan -o "$T/later.shm" --ring 0:lossless:256:0 --state stopped ) &
pids+=("$!")
run 0 "record --wait 10: a channel that appears later" "$H" record --shm "$T/later.shm" -o "$T/later.hvt" --wait 10 --quiet
check "record --wait: recorded once it appeared" has "$T/err" "^hvtrace record: 0 records, 0 lost"
"$H" record --shm "$L" -o "$T/int.hvt" --quiet 2>/dev/null &
rp=$!
pids+=("$rp")
for _ in $(seq 100); do "$H" status --shm "$L" | grep -q " pid " && break; sleep 0.05; done
run 1 "record: a second reader is refused" "$H" record --shm "$L" -o "$T/second.hvt"
check "second reader: message" has "$T/err" "attached already"
"$H" synth produce --shm "$L" --ring 0 --count 1000 >/dev/null
for _ in $(seq 200); do "$H" status --shm "$L" --json | grep -q '"fill":0,"head":1000' && break; sleep 0.05; done
kill -INT "$rp"
wait "$rp"
check "record: SIGINT exits 0" test $? = 0
check "record: SIGINT leaves a COMPLETE file" test "$(od -An -tu4 -j20 -N4 "$T/int.hvt" | tr -d ' ')" = 1
check "record: SIGINT, all 1000" test "$("$H" dump "$T/int.hvt" | wc -l)" = 1000
"$H" record --shm "$L" -o "$T/kill.hvt" --quiet 2>/dev/null &
rp=$!
"$H" synth produce --shm "$L" --ring 0 --count 5000 --wait-reader 10 >/dev/null
sleep 0.3
{
	kill -KILL "$rp"
	wait "$rp"
} 2>/dev/null
run 0 "dump of a killed recorder's file" "$H" dump "$T/kill.hvt"
check "killed recorder: warning" has "$T/err" "not finalized"
read -r data lost < <(tally "$T/kill.hvt")
check "killed recorder: received + lost == 5000 ($data + $lost)" test "$((data + lost))" = 5000
run 0 "record after a killed reader (stale pid taken over)" "$H" record --shm "$L" -o "$T/after.hvt" --idle-exit 1 --quiet
# the channel's file cut under a running recorder: an error, not a crash
"$H" record --shm "$L" -o "$T/bus.hvt" --quiet 2>"$T/bus.err" &
rp=$!
# attached, and its file created (it attaches first, then opens the file)
for _ in $(seq 100); do "$H" status --shm "$L" | grep -q " pid " && [ -s "$T/bus.hvt" ] && break; sleep 0.05; done
truncate -s 0 "$L"
wait "$rp"
check "record: a shrunk channel file exits 1" test $? = 1
check "record: a shrunk channel file, message" has "$T/bus.err" "shrank under its mapping"
run 0 "record: the file kept after SIGBUS" "$H" dump "$T/bus.hvt"
run 1 "status of an emptied channel file" "$H" status --shm "$L"
"$H" synth chan -o "$L" --ring 0:overwrite:64:0 --state tracing
run 1 "record: only overwrite rings" "$H" record --shm "$L" -o "$T/x.hvt"
check "only overwrite: message" has "$T/err" "no lossless ring"

echo "cli: $pass passed, $failn failed"
[ "$failn" = 0 ]
