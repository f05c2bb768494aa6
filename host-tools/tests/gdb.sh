#!/usr/bin/env bash
# `hvtrace gdb --dump` driven by the real gdb in batch mode, over a dump
# `hvtrace synth gdb` makes: two vCPUs (4- and 5-level paging), the code of
# a small program assembled here (its functions GDB names from the
# program's symbols), vCPU 0's flight recorder holding the program's
# branches. Threads, registers, memory through the page tables, the
# read-only refusals, `monitor`, and `record btrace` with the function-call
# and instruction histories; then malformed and hostile packets on a raw
# socket, and corrupt dumps. Prints "gdb: N passed, M failed".
# HVTRACE=path/to/hvtrace (default build/host-tools/hvtrace).
set -u
cd "$(dirname "$0")/../.."
H=${HVTRACE:-build/host-tools/hvtrace}
[ -x "$H" ] || { echo "gdb.sh: $H not built" >&2; echo "gdb: 0 passed, 1 failed"; exit 1; }
T=$(mktemp -d /tmp/hvt-gdb-XXXXXX); [ -n "${KEEP:-}" ] && echo "gdb.sh: in $T" >&2
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
. host-tools/tests/lib.sh
if ! command -v gdb >/dev/null; then
	echo "gdb.sh: no gdb on this machine" >&2
	echo "gdb: 0 passed, 1 failed"
	exit 1
fi


# serve CORE [ARGS...]: starts `hvtrace gdb` on a free loopback port ($port),
# its stderr in $T/srv.err; the server takes one connection and exits.
serve() {
	local core=$1 i
	shift
	: >"$T/srv.err"
	timeout 60 "$H" gdb --dump "$core" --listen 127.0.0.1:0 "$@" 2>"$T/srv.err" &
	srv=$!
	port=
	for i in $(seq 100); do
		port=$(sed -nE 's/^hvtrace gdb: listening on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$T/srv.err")
		[ -n "$port" ] && return 0
		kill -0 $srv 2>/dev/null || break
		sleep 0.1
	done
	bad "hvtrace gdb did not listen: $(head -c 300 "$T/srv.err")"
	return 1
}

# server_done DESC: the server exited 0 within 10 s of its client
server_done() {
	local i rc
	for i in $(seq 100); do
		kill -0 $srv 2>/dev/null || break
		sleep 0.1
	done
	wait $srv
	rc=$?
	srv=
	check "$1: the server ended cleanly (exit $rc)" test "$rc" = 0
}

# gdbrun OUT GDB-COMMANDS...: gdb in batch mode against the server on
# $port, given the test program's symbols (NOFILE=1: none, gdb loads what
# the server offers)
gdbrun() {
	local out=$1 a=() pre=()
	shift
	for c in "$@"; do a+=(-ex "$c"); done
	[ -n "${NOFILE:-}" ] || pre=(-ex "file $T/prog.sym")
	timeout 60 gdb -batch -nx -ex 'set pagination off' -ex 'set confirm off' "${pre[@]}" \
		-ex "target remote 127.0.0.1:$port" "${a[@]}" >"$out" 2>&1
}

# ---------------------------------------------------------------- the dump
cat >"$T/prog.S" <<'EOF'
	.text
	.globl main_loop, helper, leaf, crash
	.type main_loop, @function
main_loop:
	push %rbp
	mov %rsp, %rbp
site_c1:
	call helper
site_a1:
	add $1, %rax
site_j:
	jmp site_jt
	nop
site_jt:
	nop
site_c3:
	call crash
	pop %rbp
	ret
	.size main_loop, .-main_loop
	.type helper, @function
helper:
	push %rbx
site_c2:
	call leaf
site_a2:
	pop %rbx
site_r2:
	ret
	.size helper, .-helper
	.type leaf, @function
leaf:
	mov $1, %eax
	xor %ecx, %ecx
site_r1:
	ret
	.size leaf, .-leaf
	.type crash, @function
crash:
	nop
site_ud2:
	ud2
	.size crash, .-crash
EOF
cc -c "$T/prog.S" -o "$T/prog.o" && ld -Ttext=0xffffffff81000000 -e main_loop -o "$T/prog" "$T/prog.o" &&
	objcopy -w -N 'site_*' "$T/prog" "$T/prog.sym" || { bad "cannot assemble the test program"; }
a() { echo "0x$(nm "$T/prog" | awk -v n="$1" '$3 == n { print $1 }')"; }
# main_loop calls helper, which calls leaf; both return; main_loop jumps,
# then calls crash, which stops at its ud2 (vCPU 0's RIP)
run 0 "synth gdb" "$H" synth gdb -o "$T/core" --code "$T/prog" \
	--branch "$(a site_c1):$(a helper):call" --branch "$(a site_c2):$(a leaf):call" \
	--branch "$(a site_r1):$(a site_a2):ret" --branch "$(a site_r2):$(a site_a1):ret" \
	--branch "$(a site_j):$(a site_jt):jmp" --branch "$(a site_c3):$(a crash):call" --rip "$(a site_ud2)"

# ---------------------------------------------------------------- usage
run 0 "gdb --help" "$H" gdb --help
check "gdb --help: usage" has "$T/out" "^usage: hvtrace gdb --dump FILE"
check "gdb --help: the live mode" has "$T/out" "^       hvtrace gdb --shm PATH"
run 0 "--help" "$H" --help
check "--help lists gdb" has "$T/out" "^  gdb      --dump FILE"
run 2 "gdb without --dump" "$H" gdb
check "gdb without --dump: says what it needs" has "$T/err" "one of --dump FILE and --shm PATH is required"
run 2 "gdb with --dump and --shm" "$H" gdb --dump "$T/core" --shm "$T/core"
run 2 "gdb --shm with --at" "$H" gdb --shm "$T/core" --at 0x1000
# a live channel without the debugger's area (no control, or a hypervisor before ABI 1.9)
run 0 "synth a channel without a debugger" "$H" synth chan -o "$T/nodbg.shm" --vcpus 1 --tsc-hz 1000000000 \
	--ring 0:overwrite:64:10
run 1 "gdb --shm without a debugger area" "$H" gdb --shm "$T/nodbg.shm" --listen 127.0.0.1:0
check "gdb --shm: the missing area named" has "$T/err" "no debugger area"
run 1 "gdb --shm on a missing file" "$H" gdb --shm "$T/none"
run 2 "gdb with an unknown option" "$H" gdb --bogus
run 2 "gdb --listen garbage" "$H" gdb --dump "$T/core" --listen nohost:x
run 2 "gdb --vcpu beyond the dump" "$H" gdb --dump "$T/core" --vcpu 2
check "--vcpu: the count named" has "$T/err" "the dump has 2 vCPUs"

# ---------------------------------------------------------------- threads, registers, memory
serve "$T/core" && {
	check "summary: vCPU 0 at crash+1 with 6 records" has "$T/srv.err" \
		"^hvtrace gdb: thread 1: vCPU 0, rip 0xffffffff81000029, 6 flight-recorder records$"
	gdbrun "$T/g1" 'info threads' 'info registers rip rsp eflags cs cr0 cr3 cr4 gs_base k_gs_base' \
		'x/i $pc' 'x/4gx 0xffffffff81010000' 'x/2gx 0xffffffff81201000' 'x/gx 0xffffffff81400000' \
		'monitor phys 0x7000 16' 'monitor translate 0xffffffff81201008' 'thread 2' \
		'info registers rax rip cr3 cr4' 'x/2gx 0xffffffff81010010' 'x/2i $pc' 'detach'
	server_done "threads"
	g=$T/g1
	check "two threads, named" has "$g" '^\* 1    Thread 1 "vCPU 0" \(vCPU 0 \(QEMU CPU 0\)\) 0xffffffff81000029 in crash \(\)$'
	check "thread 2 at main_loop" has "$g" '^  2    Thread 2 "vCPU 1" \(vCPU 1 \(QEMU CPU 1\)\) 0xffffffff81000000 in main_loop \(\)$'
	check "rip" has "$g" '^rip +0xffffffff81000029 +0xffffffff81000029 <crash\+1>$'
	check "rsp" has "$g" '^rsp +0xffffffff81010800 '
	check "eflags" has "$g" '^eflags +0x246 +\[ PF ZF IF \]$'
	check "cs" has "$g" '^cs +0x10 '
	check "cr0 from the QEMU note" has "$g" '^cr0 +0x80050033 '
	check "cr3" has "$g" '^cr3 +0x1000 '
	check "gs_base" has "$g" '^gs_base +0xffff888000000000 '
	check "k_gs_base" has "$g" '^k_gs_base +0x7f0000000000 '
	check "x/i \$pc: the ud2 in the dump's code" has "$g" '^=> 0xffffffff81000029 <crash\+1>:\s+ud2$'
	check "x/4gx through 4 KiB pages" has "$g" '^0xffffffff81010010:\s+0x3333333333333333\s+0x4444444444444444$'
	check "x/2gx through a 2 MiB page" has "$g" '^0xffffffff81201000:\s+0xfeedface00000000\s+0xfeedface00000001$'
	check "unmapped: Cannot access memory" has "$g" '^0xffffffff81400000:\s+Cannot access memory at address 0xffffffff81400000$'
	check "monitor phys" has "$g" '^0x0000000000007000: 11 11 11 11 11 11 11 11 22 22 22 22 22 22 22 22$'
	check "monitor translate" has "$g" '^0xffffffff81201008 -> guest-physical 0x201008$'
	check "thread 2: its own rax" has "$g" '^rax +0x200 '
	check "thread 2: 5-level paging (CR4.LA57)" has "$g" '^cr4 +0x10a0 '
	check "thread 2: memory through its 5 levels" has "$g" '^0xffffffff81010010:\s+0x3333333333333333\s+0x4444444444444444$'
	check "thread 2: its code" has "$g" '^=> 0xffffffff81000000 <main_loop>:\s+push +%rbp$'
	check "detached" has "$g" 'Inferior 1 \(Remote target\) detached'
	check "server: no malformed packet from gdb" has "$T/srv.err" "^hvtrace gdb: detached: [0-9]+ packets, 0 malformed$"
}

# ---------------------------------------------------------------- the branch history
serve "$T/core" && {
	gdbrun "$T/g2" 'record function-call-history' 'record btrace pt' 'record btrace bts' 'info record' \
		'record function-call-history' 'record function-call-history /ci 1,5' \
		'record instruction-history 1,12' 'thread 2' 'record function-call-history' 'thread 1' \
		'reverse-stepi' 'reverse-stepi' 'x/i $pc' 'info registers rax' 'record goto begin' \
		'record goto end' 'record stop' 'record function-call-history' 'detach'
	server_done "btrace"
	g=$T/g2
	check "no history before record btrace" has "$g" "No (recording|record target) is currently active|No recording is currently active"
	check "record btrace bts: BTS" has "$g" '^Recording format: Branch Trace Store\.$'
	check "the records' instructions, no gap" has "$g" '^Recorded 12 instructions in 5 functions \(0 gaps\) for thread 1 \(Thread 1\)\.$'
	# the calls: helper -> leaf, back to helper, main_loop (returned to,
	# not seen called), crash called from it
	awk '/^[0-9]+\t/ && !/0x/' "$g" | head -5 | tr '\t' ' ' | sed 's/  */ /g' >"$T/calls"
	printf '1 helper\n2 leaf\n3 helper\n4 main_loop\n5 crash\n' >"$T/calls.want"
	check "function-call-history: helper, leaf, helper, main_loop, crash ($(tr '\n' ';' <"$T/calls"))" \
		cmp -s "$T/calls" "$T/calls.want"
	# /c: levels (main_loop at the top, helper under it, leaf under that)
	check "function-call-history /ci: helper one level down" has "$g" '^1	  helper	inst 1,2$'
	check "function-call-history /ci: leaf two levels down" has "$g" '^2	    leaf	inst 3,5$'
	check "function-call-history /ci: main_loop at the top" has "$g" '^4	main_loop	inst 8,11$'
	check "instruction-history: the call to leaf" has "$g" \
		'^2	   0xffffffff81000019 <helper\+1>:	call   0xffffffff81000020 <leaf>$'
	check "instruction-history: the jmp" has "$g" \
		'^9	   0xffffffff8100000d <main_loop\+13>:	jmp    0xffffffff81000010 <main_loop\+16>$'
	check "instruction-history: crash's first instruction, last" has "$g" \
		'^12	   0xffffffff81000028 <crash\+0>:	nop$'
	check "thread 2: no records, an empty history" has "$g" "^No trace\.$"
	check "record btrace pt: refused (bts only)" has "$g" "^Target does not support branch tracing\.$"
	check "reverse-stepi: back into crash's first instruction" has "$g" '^0xffffffff81000028 in crash \(\)$'
	check "reverse-stepi: back to the call" has "$g" '^=> 0xffffffff81000011 <main_loop\+17>:\s+call +0xffffffff81000028 <crash>$'
	check "replaying: other registers unavailable" has "$g" '^rax +<unavailable>$'
	check "record goto begin: the history's first instruction" has "$g" '^#0  0xffffffff81000018 in helper \(\)$'
	check "record goto end: back at the dump's RIP" has "$g" '^#0  0xffffffff81000029 in crash \(\)$'
	check "record stop" has "$g" "^Process record is stopped"
}

# ---------------------------------------------------------------- symbols from the server
# gdb given no file: the server's --symbols, a text map (written as an ELF
# of its symbols) or an ELF as it is
nm "$T/prog.sym" >"$T/prog.map"
for form in sym map; do
	serve "$T/core" --symbols "$T/prog.$form" && {
		NOFILE=1 gdbrun "$T/g4" 'record btrace bts' \
			'record function-call-history' 'x/i $pc' 'detach'
		server_done "symbols ($form)"
		check "symbols ($form): gdb read the server's symbol file" has "$T/g4" "^Reading symbols from (/tmp/hvtrace-gdb-syms-|$T/prog.sym)"
		check "symbols ($form): named in the history" has "$T/g4" "^5	crash$"
		check "symbols ($form): x/i names the place" has "$T/g4" '^=> 0xffffffff81000029 <crash\+1>:\s+ud2$'
	}
done
tmpf=$(sed -nE 's/.*as an ELF for gdb: (.*)$/\1/p' "$T/srv.err")
check "symbols: the temporary ELF removed" test -n "$tmpf" -a ! -e "$tmpf"

# ---------------------------------------------------------------- read-only
serve "$T/core" && {
	gdbrun "$T/g3" 'stepi' 'continue' 'set var *(long *)0xffffffff81010000 = 5' 'set var $rax = 1' \
		'break leaf' 'continue' 'x/gx 0xffffffff81010000' 'info registers rax' 'kill'
	server_done "read-only"
	g=$T/g3
	check "stepi: refused, told why" has "$g" "^hvtrace gdb: the target is a memory dump: it cannot continue or step"
	check "stepi: the failure reply" has "$g" "Remote failure reply: E01"
	check "memory write refused" has "$g" "^Cannot access memory at address 0xffffffff81010000$"
	check "register write refused" has "$g" "Could not write register \"rax\""
	check "breakpoint: cannot insert" has "$g" "Cannot insert breakpoint 1"
	check "memory unchanged" has "$g" '^0xffffffff81010000:\s+0x1111111111111111$'
	check "rax unchanged" has "$g" '^rax +0x100 '
}

# ---------------------------------------------------------------- hostile packets
# Malformed, oversized and hostile packets on a raw connection (no-ack
# mode after the first): each gets a reply, the last ones still work.
serve "$T/core" && {
	timeout 20 python3 - "$port" >"$T/hostile.out" 2>&1 <<'PY'
import socket, sys
def frame(b):
    return b"$" + b + b"#%02x" % (sum(b) % 256)
big = b"A" * 40000
pkts = [b"QStartNoAckMode", b"m", b"mffffffffffffffffff,10", b"m0,ffffffffffffffff",
        b"mffffffff81010000,ffffffffffffffff", b"p", b"p1000", b"pffffffffffffffffff",
        b"Hgzz", b"Hg99", b"Hx1", b"T0", b"qThreadExtraInfo,",
        b"qXfer:features:read:target.xml:",
        b"qXfer:features:read:target.xml:ffffffffffffffff,ffffffffffffffff",
        b"qXfer:features:read:nothere.xml:0,10", b"qXfer:btrace:read:all:0,fff",
        b"qXfer:btrace:read:bogus:0,fff", b"qXfer:" + big, b"qRcmd,7", b"qRcmd,zz",
        b"qRcmd,70687973203078373030302031303030303030", b"*", b"}", b"a*}", big,
        b"X0,1:\x00\x01", b"m0\x00,1"]
data = b"".join(frame(p) for p in pkts)
data += b"$m0,1#zz" + b"$m0,1#00" + b"\x03+-+" + frame(b"qC") + frame(b"D")
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode("latin-1"))
PY
	server_done "hostile packets"
	check "hostile: the server answered to the end (qC after the garbage)" grep -q 'QC1' "$T/hostile.out"
	check "hostile: detached at the end" grep -q '\$OK#9a$' "$T/hostile.out"
	check "hostile: malformed packets counted ($(tail -1 "$T/srv.err"))" has "$T/srv.err" \
		"^hvtrace gdb: detached: 3[0-9] packets, 1[0-9] malformed$"
	check "hostile: memory beyond the dump: E0e" grep -q '\$E0e#' "$T/hostile.out"
}

# ---------------------------------------------------------------- corrupt dumps
"$H" synth chan -o "$T/raw.img" --dump raw --at 0x2000 --ring 0:overwrite:4:9
run 1 "gdb on a raw image" "$H" gdb --dump "$T/raw.img"
check "raw: no registers in a raw image" has "$T/err" "raw image holds no CPU registers"
"$H" synth chan -o "$T/nonotes.elf" --dump elf --at 0x2000 --ring 0:overwrite:4:9
run 1 "gdb on an ELF core without CPU notes" "$H" gdb --dump "$T/nonotes.elf"
check "no notes: said" has "$T/err" "no CPU notes"
head -c 3000 "$T/core" >"$T/trunc.core"
run 1 "gdb on a truncated core" "$H" gdb --dump "$T/trunc.core"
check "truncated: an error, named" has "$T/err" "^hvtrace: $T/trunc.core: dump: "
# the notes' sizes cut: a PRSTATUS shorter than x86-64's
python3 - "$T/core" "$T/short.core" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
phoff, = struct.unpack_from("<Q", b, 32)
off, = struct.unpack_from("<Q", b, phoff + 8)   # PT_NOTE first: p_offset
struct.pack_into("<I", b, off + 4, 100)           # n_descsz of the first note
open(sys.argv[2], "wb").write(b)
PY
run 1 "gdb on a core with a short NT_PRSTATUS" "$H" gdb --dump "$T/short.core"
check "short note: said" has "$T/err" "NT_PRSTATUS note of 100 bytes|no CPU notes"

echo "gdb: $pass passed, $failn failed"
[ "$failn" = 0 ]
