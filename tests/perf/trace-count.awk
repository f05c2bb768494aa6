# The hypervisor's own account of one traced run of a program, from the
# host's record stream: which instructions and branches it retired in user
# mode. Reads first a program's `objdump -d` listing, then `hvtrace dump`
# of the stream (user-mode filter: kernel ends read 0x8000000000000000),
# which must begin tracing at the program's entry (trace.start = its
# address: the start marker gives the entry and the address space). Keeps
# the records made in that address space (cut by the start marker's CR3
# and the cr3 records, per vCPU) and walks the program's code along them:
# from each record's destination to the next record's source every
# instruction ran, a conditional branch there was not taken; the source
# itself is a taken branch (or, for an interrupt or a fault, the
# instruction that had not run yet). Prints
#   count instructions I branches B taken T far F records R cr3 C
# (T counts every taken branch, F those of them that are far: SYSCALL,
# INT n)
# and, one a line, "pair FROM TO" for each record (hex, no 0x; a kernel end
# as k), the list perf's BTS output is compared with; with -v period=N,
# "sample IP1|IP2 after AT" for every N-th instruction (-v event=branches:
# every N-th branch, for a branches sampling test such as PEBS's): AT that
# instruction, IP1|IP2 the two that ran next, where the overflow interrupt
# of an exact counter finds the program (the next one, or with one
# instruction's skid the one after: docs/pmu.md); with -v insns=1, "insn
# ADDR" for each instruction retired, in order (the list GDB's record
# instruction-history is compared with). Exit 1, with a line
# "error ...", when the stream and the code disagree (a taken branch the
# stream lacks, a destination outside the listing) or lost records before
# one of the program's.
# Usage: awk [-v period=N [-v event=branches]] [-v insns=1] -f trace-count.awk LISTING DUMP
function hex(s) { sub(/^0x/, "", s); return tolower(s) }
function num(s,   i, n, c) {
	s = hex(s); n = 0
	for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c }
	return n
}
# a kernel address, or the user-mode filter's pseudo-address for one
function kern(s) { s = hex(s); return length(s) == 16 && substr(s, 1, 1) ~ /[89a-f]/ }
function fail(msg) { print "error " msg; bad = 1; exit 1 }
# one instruction retired at a: counted, and noted as one of the two
# places the overflow interrupt of an earlier N-th instruction may find
function retire(a, isbranch,   s) {
	for (s = nsamp; s > 0 && need[s] > 0; s--) {
		ips[s] = ips[s] (ips[s] == "" ? "" : "|") sprintf("%x", a)
		need[s]--
	}
	ins++
	if (isbranch) br++
	if (insns) print "insn", sprintf("%x", a)
	if (!period || (event == "branches" ? !isbranch || br % period : ins % period))
		return
	need[++nsamp] = 2
	at[nsamp] = sprintf("%x", a)
}
# every instruction from pc up to (not including) the one at "to"
function walk(to,   i) {
	if (!(pc in idx)) fail(sprintf("record at %x: %x is not an instruction of the program", to, pc))
	if (to < pc) fail(sprintf("record at %x, behind %x: a taken branch the stream does not hold", to, pc))
	for (i = idx[pc]; addr[i] < to; i++) {
		if (i > n) fail("ran off the program's end looking for " sprintf("%x", to))
		if (jump[i] && !cond[i]) fail(sprintf("%x: %s is a taken branch the stream does not hold", addr[i], mn[i]))
		retire(addr[i], cond[i])
	}
	if (addr[i] != to) fail(sprintf("%x is not an instruction boundary", to))
}
FNR == NR {
	# "    10001005:	e8 18 00 00 00       	call   10001022 <leaf>"
	if (split($0, f, "\t") >= 3 && f[1] ~ /^ *[0-9a-f]+:$/) {
		a = f[1]; gsub(/[ :]/, "", a)
		split(f[3], m, " ")
		n++; addr[n] = num(a); idx[addr[n]] = n; mn[n] = m[1]
		cond[n] = m[1] ~ /^(j[a-z]+|loop[a-z]*)$/ && m[1] != "jmp"
		jump[n] = m[1] ~ /^(jmp|call|ret|syscall|sysenter|int|int3|iret[dq]?|lret)/
	}
	next
}
$3 == "marker" && $4 == "start" && !started {
	started = 1; v0 = $2; pc = num($5); cr3 = hex($7); cur[$2] = cr3; inprog = 1
	next
}
!started { next }
$3 == "cr3" { cur[$2] = hex($6); next }
$3 == "lost" { lost = $0; next }
$3 == "marker" { next }
cur[$2] != cr3 { next }
{
	# a gap before one of the program's records: the walk cannot be
	# trusted (one after its last record, in what runs next, does no harm)
	if (lost != "") fail("the stream lost records: " lost)
	from = $4; to = $6
	if (!kern(from)) {
		if (!inuser) fail("record from user mode while the walk is in the kernel: " $0)
		walk(num(from))
		if ($3 == "branch" || $3 == "far" || ($3 == "exception" && $NF == "soft")) {
			retire(num(from), 1); taken++
			if ($3 != "branch") far++
		}
	}
	if (kern(from) && kern(to))
		next	# a stream with kernel records too (stream.cpl = all)
	rec++
	print "pair", (kern(from) ? "k" : hex(from)), (kern(to) ? "k" : hex(to))
	inuser = !kern(to)
	if (inuser) pc = num(to)
}
BEGIN { inuser = 1 }
END {
	if (bad) exit 1
	if (!started) { print "error no start marker"; exit 1 }
	for (s = 1; s <= nsamp; s++) print "sample", ips[s], "after", at[s]
	printf "count instructions %d branches %d taken %d far %d records %d cr3 %s\n", ins, br, taken, far,
		rec, cr3
}
