#!/usr/bin/env bash
# Inside the nested tier's outer guest: pins each vCPU thread of the inner
# QEMU started by PID (qemu.sh's `timeout` or QEMU itself; QEMU started
# with -name debug-threads=on, so its threads are named "CPU N/KVM") to
# outer CPU N, for as long as that QEMU runs. tests/lib/qemu.sh starts it
# when HVTRACE_PIN_VCPUS=1, which tests/nested/outer.sh sets for what it
# runs (the nested tier, bench/nested.sh).
#
#   tests/nested/pin-vcpus.sh PID [--shuffle]
#
# --shuffle does the opposite, for a check of the outer QEMU: each vCPU
# thread moved to the next outer CPU every 50 ms (tests/integration-nested.sh
# with HVTRACE_NESTED_PINS=shuffle), so that L2 runs after moves between
# hvtrace's MOV DR7 and its VMRUN and while it runs; it says how many moves
# it made. A lossless stream that still records every branch then shows
# that the outer TCG re-inserts hvtrace's breakpoints itself.
#
# Why: the outer QEMU's TCG (7.2) keeps the breakpoints it checks in a
# list per emulated CPU (cpu_breakpoint_insert and cpu_watchpoint_insert,
# from cpu_x86_update_dr7 and helper_set_dr:
# target/i386/tcg/sysemu/bpt_helper.c) and changes it
# only when that CPU executes a MOV to a debug register; helper_vmrun and
# do_vmexit (svm_helper.c) assign env->dr[7] from the VMCB without touching
# it. KVM's own VMRUN of hvtrace's guest (L2) loads DR7 only that way, and
# KVM's entry path writes DR7 only with 0 (vcpu_enter_guest) before it
# loads DR0-3: so hvtrace's stops (DR3/DR2, armed by its MOV DR7 in root
# mode, L1, right before its VMRUN: hv/trace/dr.c trace_host_dr7) exist
# only in the list of the outer CPU on which that MOV ran. When the outer
# kernel moves the vCPU's thread to another outer CPU while L2 runs, or
# between that MOV and the VMRUN, L2 runs there without them: the branches
# the fast engine misses (docs/testing.md item 7). Two vCPU threads sharing
# one outer CPU lose each other's the same way (hvtrace's host_dr7_disarm
# on one removes the other's). With each vCPU thread alone on its own
# outer CPU (outer.sh gives the outer guest enough of them) the list is
# always the one that thread's hvtrace last armed, as under plain TCG.
# The fault is QEMU's: VMRUN and #VMEXIT change DR7 without going through
# cpu_x86_update_dr7 (do_vmexit's own comment, "Disables all breakpoints
# in the host DR7 register", is not done either). QEMU 10.0.2, the tier's
# outer QEMU now, calls cpu_x86_update_dr7 from both (seen in its code),
# and in one outer boot with --shuffle below the lossless streams lost no
# branch (svm-rec-lossless, svm-rec-lossless-smp): the pins may not be
# needed there; kept until more runs show it (docs/testing.md item 7).
#
# Says on stderr ("qemu.sh: ..." lines, in the run's qemu.out) each pin,
# a vCPU with no outer CPU of its own, and a pinned thread that the outer
# kernel moved all the same (its se.nr_migrations grew after the pin).
set -u
parent=${1:?usage: pin-vcpus.sh PID}
ncpu=$(getconf _NPROCESSORS_ONLN)
say() { echo "qemu.sh: $*" >&2; }

if [ "${2:-}" = --shuffle ]; then
	# python: a process start costs ~0.1 s inside, taskset every 50 ms would not keep up
	exec python3 - "$parent" "$ncpu" <<'PY'
import glob, os, sys, time
parent, ncpu = int(sys.argv[1]), int(sys.argv[2])
moves, said, pid = {}, 0, None
def say(m):
    print("qemu.sh: " + m, file=sys.stderr, flush=True)
def alive(p):
    try:
        return open("/proc/%d/stat" % p).read().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False
def qemu_pid():
    # PID itself or its child (qemu.sh runs QEMU under timeout)
    try:
        if open("/proc/%d/comm" % parent).read().startswith("qemu-system-x86"):
            return parent
        c = open("/proc/%d/task/%d/children" % (parent, parent)).read().split()
        return int(c[0]) if c else None
    except OSError:
        return None
while alive(parent):
    pid = pid or qemu_pid()
    for t in glob.glob("/proc/%d/task/*/comm" % pid) if pid else []:
        try:
            comm = open(t).read().strip()
        except OSError:
            continue
        if not (comm.startswith("CPU ") and comm.endswith("/KVM")):
            continue
        tid, n = int(t.split("/")[4]), moves.get(int(t.split("/")[4]), 0)
        try:
            os.sched_setaffinity(tid, {(int(comm[4:-4]) + n + 1) % ncpu})
        except OSError:
            continue
        moves[tid] = n + 1
    if moves and time.time() - said >= 10:
        say("vCPU threads moved to the next outer CPU every 50 ms (--shuffle), moves so far: %s" %
            ", ".join("thread %d %d" % kv for kv in sorted(moves.items())))
        said = time.time()
    time.sleep(0.05)
say("vCPU threads moved to the next outer CPU every 50 ms (--shuffle), moves in all: %s" %
    (", ".join("thread %d %d" % kv for kv in sorted(moves.items())) or "none"))
PY
fi

# the QEMU: PID itself or its child (qemu.sh runs QEMU under timeout)
qemu_pid() {
	local c
	read -r c _ 2>/dev/null <"/proc/$parent/comm" || return 1
	case "$c" in qemu-system-x86*) echo "$parent"; return 0 ;; esac
	c=""
	read -r c _ 2>/dev/null <"/proc/$parent/task/$parent/children"	# no newline: read says 1
	[ -n "$c" ] && echo "$c"
}
# (both below set REPLY, without a subshell: a process costs ~0.1 s here)
# nr_migrations TASKDIR: the scheduler's count of the thread's moves
# between CPUs (CONFIG_SCHED_DEBUG's /proc/.../sched)
nr_migrations() {
	local k _x v
	REPLY=""
	while read -r k _x v; do
		[ "$k" = se.nr_migrations ] && { REPLY=$v; return; }
	done 2>/dev/null <"$1/sched"
}
# on_cpu TASKDIR: the CPU the thread last ran on (/proc/.../stat field 39)
on_cpu() {
	local line f
	REPLY=""
	read -r line 2>/dev/null <"$1/stat" || return
	read -r -a f <<<"${line##*) }"
	REPLY=${f[36]}
}

# pinned[tid]: its pin is in force; base[tid]: its nr_migrations once seen
# on its CPU (a thread asleep at the pin moves there when it next wakes)
declare -A pinned=() base=() warned=()
pid=""
while kill -0 "$parent" 2>/dev/null; do
	[ -n "$pid" ] || pid=$(qemu_pid) || pid=""
	for t in ${pid:+/proc/$pid/task/*}; do
		read -r comm 2>/dev/null <"$t/comm" || continue	# a thread that ended
		case "$comm" in "CPU "*/KVM) ;; *) continue ;; esac
		n=${comm#CPU }
		n=${n%/KVM}
		tid=${t##*/}
		[ -z "${warned[$tid]:-}" ] || continue
		if [ -z "${pinned[$tid]:-}" ]; then
			if [ "$n" -ge "$ncpu" ]; then
				say "vCPU $n has no outer CPU of its own ($ncpu online): its breakpoints may be lost (tests/nested/pin-vcpus.sh)"
				warned[$tid]=1
			elif taskset -p -c "$n" "$tid" >/dev/null; then
				pinned[$tid]=1
				say "vCPU $n (thread $tid) pinned to outer CPU $n"
			else
				say "vCPU $n (thread $tid) could not be pinned: its breakpoints may be lost"
				warned[$tid]=1
			fi
		elif [ -z "${base[$tid]:-}" ]; then
			on_cpu "$t"
			[ "$REPLY" = "$n" ] && nr_migrations "$t" && base[$tid]=$REPLY
		else
			nr_migrations "$t"
			m=$REPLY
			if [ -n "$m" ] && [ "$m" != "${base[$tid]}" ]; then
				say "vCPU $n (thread $tid) moved between outer CPUs after its pin ($((m - base[$tid])) times): its breakpoints may have been lost"
				warned[$tid]=1
			fi
		fi
	done
	sleep 0.5
done
