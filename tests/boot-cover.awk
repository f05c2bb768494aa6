# tests/integration-boot.sh: one pass over `hvtrace dump`'s text lines
# (TSC VCPU KIND FROM -> TO cpl F->T ...) of a whole boot's trace. Variables:
# made (the records the hypervisor says it made), lb/lkib (the loader's
# image, hex base and KiB), bb/bsz (bootvmlinux's image, hex base and size).
# Prints what it found; the last line says what is wrong, exit 1, if any.
function hex(s,    n, i, c) {
	n = 0
	s = tolower(s)
	sub(/^0x/, "", s)
	for (i = 1; i <= length(s); i++) {
		c = index("0123456789abcdef", substr(s, i, 1))
		if (!c)
			return -1
		n = n * 16 + c - 1
	}
	return n
}
function first(what) { if (!(what in at)) at[what] = NR }
BEGIN { L0 = hex(lb); L1 = L0 + lkib * 1024; B0 = hex(bb); B1 = B0 + hex(bsz) }
$3 == "lost" { lost += $4; next }
$3 == "marker" { markers[$4]++; next }
$3 == "cr3" { cr3++; next }
{
	n++
	kind[$3]++
	split($8, cpl, "->")
	to = $6
	if (to ~ /^0xffffffff8/) {
		first("kernel")
		k++
	} else if (cpl[2] == 3) {
		first("user")
		u++
	} else {
		t = hex(to)
		if (t >= L0 && t < L1) { first("loader"); l++ }
		else if (t >= B0 && t < B1) { first("bootvmlinux"); b++ }
		else if (t < 4294967296) { first("firmware"); f++ }
	}
}
END {
	printf "records %d (made %d), lost %d, cr3 records %d, markers:", n, made, lost + 0, cr3 + 0
	for (m in markers) printf " %s %d", m, markers[m]
	printf "\nby kind:"
	for (x in kind) printf " %s %d", x, kind[x]
	printf "\nto the loader %d (first at line %d), bootvmlinux %d (%d), firmware %d (%d), kernel %d (%d), user %d (%d)\n",
		l, at["loader"], b, at["bootvmlinux"], f, at["firmware"], k, at["kernel"], u, at["user"]
	bad = ""
	if (n != made) bad = bad sprintf("; %d records in the file, the hypervisor made %d", n, made)
	if (lost) bad = bad sprintf("; %d records lost", lost)
	if (!("start" in markers) && !cr3) bad = bad "; no start of the trace"
	if (!("stop" in markers)) bad = bad "; no STOP marker"
	if (!l || !b || !f || !k || !u) bad = bad "; a part of the boot has no records"
	else if (!(at["loader"] < at["bootvmlinux"] && at["bootvmlinux"] < at["kernel"] && at["kernel"] < at["user"]))
		bad = bad "; the loader, bootvmlinux, the kernel and user space are not reached in that order"
	if (!kind["interrupt"]) bad = bad "; no interrupt records (the firmware's timer, paced)"
	if (bad != "") { print substr(bad, 3); exit 1 }
	print "ok"
}
