#!/usr/bin/env bash
# make fuzz: runs each libFuzzer harness for FUZZ_SECONDS (default 60), seeded
# with synthetic inputs from `hvtrace synth`. Corpora and crash artifacts stay
# in DIR/corpus-NAME and DIR/artifacts-NAME. Usage: run.sh DIR NAME...
set -u
cd "$(dirname "$0")/../.."
dir=$1
shift
H=${HVTRACE:-build/host-tools/hvtrace}
secs=${FUZZ_SECONDS:-60}
seeds=$dir/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{chan,dump,file,sym,report,gdb}
# seeds: a channel, dumps (raw, ELF), trace files, symbol maps, a tiny ELF
"$H" synth chan -o "$seeds/chan/two-rings" --vcpus 2 --ring 0:overwrite:8:20 --ring 1:lossless:4:3 --state frozen --freeze reset
"$H" synth chan -o "$seeds/chan/three" --vcpus 3 --ring 0:overwrite:2:1 --ring 2:lossless:2:5 --ring 1:overwrite:4:0
"$H" synth chan -o "$seeds/dump/raw" --dump raw --at 0x2000 --decoy --ring 0:overwrite:4:9
"$H" synth chan -o "$seeds/dump/elf" --dump elf --at 0x2000 --ring 0:overwrite:4:9
printf 'main:\n\tcall f\nf:\tret\n' >"$seeds/prog.S"
cc -c -o "$seeds/prog.o" "$seeds/prog.S" && ld -Ttext=0xffffffff81000000 -e main -o "$seeds/prog" "$seeds/prog.o" &&
	"$H" synth gdb -o "$seeds/dump/gdb-core" --code "$seeds/prog" --branch 0xffffffff81000000:0xffffffff81000005:call
rm -f "$seeds/prog.S" "$seeds/prog.o" "$seeds/prog"
"$H" synth file -o "$seeds/file/done" --records 12 --vcpus 2 --tsc-hz 1000
"$H" synth file -o "$seeds/file/partial" --records 3 --partial
cp "$seeds/file/done" "$seeds/file/partial" "$seeds/report/"	# report and export read trace files
"$H" synth sysmap -o "$seeds/sym/map" --funcs 12
printf 'int f(void){return 1;}\nvoid _start(void){f();for(;;);}\n' >"$seeds/tiny.c"
cc -O1 -nostdlib -static -s -Wl,--strip-debug -o "$seeds/sym/elf-stripped" "$seeds/tiny.c" 2>/dev/null
cc -O1 -nostdlib -static -o "$seeds/sym/elf" "$seeds/tiny.c" 2>/dev/null
rm -f "$seeds/tiny.c"
# GDB sessions: the packets gdb sends for threads, registers, memory, btrace
python3 - "$seeds/gdb" <<'PY'
import sys
def frame(b):
    return b"$" + b + b"#%02x" % (sum(b) % 256)
sessions = {
    "connect": [b"qSupported:multiprocess+;swbreak+;xmlRegisters=i386", b"vMustReplyEmpty",
                b"QStartNoAckMode", b"Hg0", b"qXfer:features:read:target.xml:0,ffb", b"qTStatus", b"?",
                b"qfThreadInfo", b"qsThreadInfo", b"qAttached", b"Hc-1", b"qC", b"g", b"D"],
    "threads": [b"qXfer:threads:read::0,1000", b"qThreadExtraInfo,2", b"T2", b"Hg2", b"p10", b"p3d",
                b"mffffffff81000000,40", b"m7000,10", b"qRcmd,70687973203078373030302031363030"],
    "btrace": [b"Hg1", b"Qbtrace:bts", b"qXfer:btrace-conf:read::0,1000", b"qXfer:btrace:read:delta:0,1000",
               b"qXfer:btrace:read:new:0,1000", b"qXfer:btrace:read:all:0,40", b"Qbtrace:off"],
    "refused": [b"c", b"s", b"vCont;c", b"Z0,ffffffff81000000,1", b"Mffffffff81000000,1:00",
                b"X0,1:}\x03", b"G00", b"P0=00", b"k"],
}
for name, pkts in sessions.items():
    open(sys.argv[1] + "/" + name, "wb").write(b"+".join(frame(p) for p in pkts))
# the live target (fuzz_gdb: a first byte that is odd, '+' here): writes,
# step, continue, then GDB's interrupt (0x03) and packets while running
live = [b"vCont?", b"Hg2", b"P10=1122334455667788", b"P0=0100000000000000", b"P12=00000000",
        b"G" + b"00" * 128 + b"xx" * 8, b"M1000,4:deadbeef", b"m1000,4", b"X1000,0:", b"s", b"vCont;s:2",
        b"Z1,1000,1", b"Z1,2000,1", b"z1,2000,1", b"z1,1000,1", b"Z0,1000,1", b"Z1,zz",
        b"vCont;c", b"g"]
open(sys.argv[1] + "/live", "wb").write(b"+" + b"+".join(frame(p) for p in live) + b"\x03" +
                                        frame(b"c") + b"\x03" + frame(b"D"))
# live breakpoints and watchpoints in the hypervisor's four slots (Z0-Z4,
# shared, a fifth refused, removed), stop reasons, monitor commands
hw = [b"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386", b"Z0,1000,1", b"Z1,1000,1",
      b"Z0,1008,1", b"Z2,2000,8", b"Z3,2008,4", b"Z4,2008,4", b"Z2,2001,8", b"Z2,2000,3", b"Z0,3000,2",
      b"Z1,4000,1", b"Z0,5000,1", b"Z5,1000,1", b"Z0,1000", b"Z0,ffffffffffffffff,1", b"Z2,fffffffffffffff8,8",
      b"z3,2008,4", b"z9,0,0", b"vCont;c", b"?", b"s", b"z0,1000,1", b"z1,1000,1", b"z0,1008,1",
      b"z2,2000,8", b"z4,2008,4", b"z0,1000,1",
      b"qRcmd,68656c70", b"qRcmd,736c6f7473", b"qRcmd,706879732030783130303020313620",
      b"qRcmd,7068797320307831303030203136", b"qRcmd,706879732030203130323530", b"qRcmd,7a7a",
      b"qRcmd,00", b"qRcmd,7",
      b"Z2,1041,8", b"Z4,3000,10", b"Z3,3008,8", b"z4,3000,10", b"Z2,1041,20", b"Z2,fffffffffffffffc,8",
      b"Z4,0,ffffffffffffffff", b"z2,1041,8", b"z3,3008,8",
      b"qRcmd,7472616e736c6174652030783130", b"qRcmd,7472616e736c61746520"]
# the live branch trace: on, read, continue, interrupted, read again (a
# fresh history), a step, off
bt = [b"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386", b"Hg1", b"Qbtrace:bts",
      b"qXfer:btrace-conf:read::0,1000", b"qXfer:btrace:read:delta:0,1000", b"qXfer:btrace:read:new:0,1000",
      b"qXfer:btrace:read:new:0,1000", b"qXfer:btrace:read:all:0,40", b"Hg2", b"Qbtrace:bts", b"Qbtrace:pt",
      b"qXfer:btrace:read:all:0,1000", b"vCont;c"]
after = [b"qXfer:btrace:read:new:0,1000", b"s", b"qXfer:btrace:read:new:40,1000", b"Qbtrace:off",
         b"Qbtrace:off", b"qXfer:btrace:read:all:0,1000", b"D"]
open(sys.argv[1] + "/live-btrace", "wb").write(b"+" + b"+".join(frame(p) for p in bt) + b"\x03" +
                                               b"".join(frame(p) for p in after))
open(sys.argv[1] + "/live-hw", "wb").write(b"+" + b"+".join(frame(p) for p in hw) + b"\x03" +
                                           frame(b"?") + frame(b"D"))
PY

crashed=""
for t in "$@"; do
	mkdir -p "$dir/corpus-$t" "$dir/artifacts-$t"
	echo "== fuzz_$t: ${secs}s"
	if ! "$dir/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts-$t/" "$dir/corpus-$t" "$seeds/$t" \
		>"$dir/fuzz_$t.log" 2>&1; then
		crashed="$crashed $t"
		tail -40 "$dir/fuzz_$t.log"
	fi
	grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$dir/fuzz_$t.log" | tr '\n' ' '
	echo
done
if [ -n "$crashed" ]; then
	echo "fuzz: crashes in:$crashed (inputs in $dir/artifacts-*)"
	exit 1
fi
echo "fuzz: $# targets, ${secs}s each, no crash"
