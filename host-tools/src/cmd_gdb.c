/* SPDX-License-Identifier: MIT */
/*
 * hvtrace gdb --dump FILE: a GDB remote-protocol server over a memory dump
 * of a guest that ran under hvtrace (post mortem, read-only). Opens the
 * dump, its CPUs and its flight recorder, then serves one GDB connection
 * on a TCP socket (127.0.0.1 unless told otherwise); the protocol is
 * libhvtrace's (gdbrsp.c).
 *
 * hvtrace gdb --shm PATH: the same server over a running guest, through
 * the channel's debugger requests (libhvtrace dbg.c): the guest is
 * stopped when GDB connects and goes on when the session ends; its
 * branch trace is each vCPU's flight ring, read from the channel while
 * the guest is stopped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char gdb_help[] =
	"usage: hvtrace gdb --dump FILE [--at ADDR] [--listen [HOST:]PORT] [--vcpu N]\n"
	"                  [--symbols SYMFILE]\n"
	"       hvtrace gdb --shm PATH [--listen [HOST:]PORT] [--vcpu N] [--symbols SYMFILE]\n"
	"\n"
	"--shm: a running guest through the channel (an ivshmem file). When gdb\n"
	"connects every vCPU is stopped (threads are vCPUs, named with their APIC\n"
	"IDs); registers (general, rip, eflags writable), memory read and written\n"
	"through the selected vCPU's page tables, stepi on the selected vCPU with the\n"
	"others held, continue until gdb's interrupt (Ctrl-C), a breakpoint or a\n"
	"watchpoint: up to 4 of `break`, `hbreak`, `watch`, `rwatch`, `awatch`, in\n"
	"the hypervisor's debug registers (never in guest memory; the guest's own DR7\n"
	"comes first), and up to 28 more breakpoints and `watch`es in pages the nested\n"
	"tables make not executable or not writable (read and access watchpoints: the\n"
	"debug registers only); breakpoints and stepi on every vCPU (on one that traces its\n"
	"branch engine looks for them), watchpoints on every untraced vCPU. `monitor\n"
	"help` lists the monitor commands. The flight recorder's records of each\n"
	"vCPU, read at each stop, are its branch trace: `record btrace bts` (needs\n"
	"flight.size, and tracing on for a history; at a breakpoint on a traced vCPU\n"
	"it runs right up to it). When gdb detaches or goes away the guest runs on,\n"
	"the breakpoints removed.\n"
	"\n"
	"A GDB server over a memory dump of a guest that ran under hvtrace (QEMU's\n"
	"dump-guest-memory ELF core, without -z/-l/-s/--paging), post mortem and\n"
	"read-only: in gdb, `target remote HOST:PORT`. Every vCPU is a thread with\n"
	"the registers the dump holds (general registers, RIP, RFLAGS, selectors,\n"
	"FS/GS bases, CR0-CR4); memory is read through the selected vCPU's page\n"
	"tables (`monitor phys ADDR LEN` reads guest-physical memory); the flight\n"
	"recorder's records of each vCPU are its branch trace: `record btrace bts`,\n"
	"then `record function-call-history` and `record instruction-history`.\n"
	"Writes, continue, step and breakpoints get an error: the target is a dump.\n"
	"\n"
	"  --dump FILE        the ELF core (a raw pmemsave image has no registers)\n"
	"  --shm PATH         the running guest's channel (ivshmem backing file)\n"
	"  --at ADDR          the channel's guest-physical address, when the dump holds\n"
	"                     more than one valid header (as for hvtrace status)\n"
	"  --listen [H:]PORT  where to listen (default 127.0.0.1:1234; port 0: any free\n"
	"                     port, printed); one connection, then the command exits\n"
	"  --vcpu N           the thread selected at first (default: the vCPU that\n"
	"                     reached a trace.freeze address, else vCPU 0)\n"
	"  --symbols SYMFILE  the guest kernel's symbols: an ELF (vmlinux) or a text map\n"
	"                     (System.map, kallsyms, hvtrace symbols); gdb loads them\n"
	"                     when it connects without a file of its own (a text map as\n"
	"                     an ELF of its symbols alone, written to a temporary file)\n";

enum { O_DUMP = 256, O_AT, O_LISTEN, O_VCPU, O_SYMBOLS, O_SHM };

static const struct option gdb_opts[] = {
	{ "dump", required_argument, NULL, O_DUMP },	 { "at", required_argument, NULL, O_AT },
	{ "listen", required_argument, NULL, O_LISTEN }, { "vcpu", required_argument, NULL, O_VCPU },
	{ "symbols", required_argument, NULL, O_SYMBOLS }, { "help", no_argument, NULL, OPT_HELP },
	{ "shm", required_argument, NULL, O_SHM },
	{ 0 },
};

struct gdb_state {
	struct hvt_dump dump;
	struct hvt_vcpu_regs *cpus;
	size_t ncpus;
	struct hvt_chan ch;
	int have_chan;
	struct hvt_gdb_thread *th;
	struct hvtrace_rec **recs;
	struct hvt_gdb_target t;
	/* --shm */
	struct hvt_dbg dbg;
	struct hvt_gdb_live live;
	int lock_fd;
	int held;		/* the guest is stopped by us */
	uint32_t hw_set;	/* the hypervisor's slots armed (bit per slot, HVTRACE_DBG_SLOTS_MAX) */
	unsigned long stops;	/* live_stop's successes */
	double stop_ms;		/* the last one's time */
};

/* vCPU v's flight ring (the first such ring of v's), or nr_rings. */
static unsigned flight_ring(const struct gdb_state *s, size_t v)
{
	unsigned r;

	for (r = 0; r < s->ch.nr_rings; r++)
		if (s->ch.ring[r].consumer == HVTRACE_CONSUMER_FLIGHT && s->ch.ring[r].vcpu == v)
			return r;
	return s->ch.nr_rings;
}

/* vCPU v's flight ring into its thread's records (checked; those refused
 * dropped). `live`: the ring is in shared memory, where the oldest slot
 * of a full ring may be under the producer's pen. An unreadable ring is
 * an empty history, said once. */
static int snap_history(struct gdb_state *s, size_t v, int live)
{
	unsigned r = flight_ring(s, v);
	struct hvt_err err;
	uint64_t torn = 0, bad = 0;
	int64_t n;

	if (r == s->ch.nr_rings)
		return 0;
	if (!s->recs[v])
		s->recs[v] = malloc(s->ch.ring[r].capacity * sizeof(struct hvtrace_rec));
	if (!s->recs[v])
		return fail("gdb", "out of memory for vCPU %zu's records", v);
	n = hvt_ring_snapshot(&s->ch, r, live, s->recs[v], &torn, &err);
	if (n < 0) {
		warn("gdb", "vCPU %zu's flight recorder: %s", v, err.msg);
		n = 0;
	}
	s->th[v].recs = s->recs[v];
	s->th[v].nr = hvt_recs_filter(s->recs[v], (uint64_t)n, &bad);
	if (bad)
		warn("gdb", "vCPU %zu: %llu records refused", v, (unsigned long long)bad);
	return 0;
}

/* The flight rings' size (btrace-conf), 0 when there is none. */
static uint64_t flight_bytes(const struct gdb_state *s)
{
	uint64_t cap = 0;
	unsigned r;

	for (r = 0; r < s->ch.nr_rings; r++)
		if (s->ch.ring[r].consumer == HVTRACE_CONSUMER_FLIGHT && s->ch.ring[r].capacity > cap)
			cap = s->ch.ring[r].capacity;
	return cap * sizeof(struct hvtrace_rec);
}

/* Each vCPU's flight ring. */
static int load_history(struct gdb_state *s)
{
	size_t v;

	for (v = 0; v < s->ncpus; v++)
		if (snap_history(s, v, 0))
			return -1;
	s->t.bts_size = flight_bytes(s);
	s->t.trace_live = hvt_chan_state(&s->ch) == HVTRACE_STATE_TRACING;
	return 0;
}

/* The vCPU whose records hold the trigger marker of a trace.freeze address. */
static size_t first_thread(const struct gdb_state *s)
{
	size_t v;
	uint64_t i;

	for (v = 0; v < s->ncpus; v++)
		for (i = 0; i < s->th[v].nr; i++)
			if (s->th[v].recs[i].kind == HVTRACE_REC_MARKER &&
			    s->th[v].recs[i].aux == HVTRACE_MARK_TRIGGER)
				return v;
	return 0;
}

/* A thread per vCPU, its registers in s->cpus (allocated here if not yet). */
static int alloc_threads(struct gdb_state *s)
{
	size_t v;

	if (!s->cpus)
		s->cpus = calloc(s->ncpus, sizeof(*s->cpus));
	s->th = calloc(s->ncpus, sizeof(*s->th));
	s->recs = calloc(s->ncpus, sizeof(*s->recs));
	if (!s->cpus || !s->th || !s->recs)
		return fail("gdb", "out of memory");
	for (v = 0; v < s->ncpus; v++)
		s->th[v].regs = &s->cpus[v];
	return 0;
}

static int open_target(struct gdb_state *s, const char *path, const char *at)
{
	struct hvt_err err;
	uint64_t pa = 0;

	if (at && parse_u64(at, &pa))
		return usage_error("gdb", "--at takes a guest-physical address, not '%s'", at);
	if (hvt_dump_open_any(&s->dump, path, &err))
		return fail(path, "%s", err.msg);
	if (hvt_dump_cpus(&s->dump, &s->cpus, &s->ncpus, &err))
		return fail(path, "%s", err.msg);
	if (alloc_threads(s))
		return EXIT_DATA;
	if (!s->dump.nr_cand) {
		warn(path, "%s: no branch history (the vCPUs' registers and memory only)", s->dump.no_chan.msg);
	} else if (!at && s->dump.nr_cand > 1) {
		fail(path, "dump: %zu pages hold a valid channel header, and a guest can forge one in its "
		     "RAM: choose with --at ADDR", s->dump.nr_cand);
		list_dump_headers(&s->dump);
		return EXIT_DATA;
	} else if (hvt_dump_chan(&s->dump, at ? pa : s->dump.cand[0].pa, &s->ch, &err)) {
		fail(path, "%s", err.msg);
		list_dump_headers(&s->dump);
		return EXIT_DATA;
	} else {
		s->have_chan = 1;
		if (load_history(s))
			return EXIT_DATA;
	}
	s->t = (struct hvt_gdb_target){ .dump = &s->dump, .th = s->th, .nth = s->ncpus,
					.first = first_thread(s), .trace_live = s->t.trace_live,
					.bts_size = s->t.bts_size };
	return 0;
}

/* --- the live target (--shm) ----------------------------------------- */

static int live_refresh(struct gdb_state *s, size_t v)
{
	struct hvt_err err;

	if (hvt_dbg_regs(&s->dbg, (uint32_t)v, &s->cpus[v], &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	return 0;
}

/* Every vCPU held; each stop after the first (attach) says how long it
 * took, so that a session gdb gave up on shows whether the guest stopped
 * (issue 28: it had, gdb had been sent a second interrupt). */
static int live_stop(void *ctx)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;
	struct timespec t0, t1;
	size_t v;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (hvt_dbg_stop(&s->dbg, &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->stop_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (s->stops++)
		fprintf(stderr, "hvtrace gdb: every vCPU stopped again in %.2f ms\n", s->stop_ms);
	s->held = 1;
	for (v = 0; v < s->ncpus; v++)
		if (live_refresh(s, v))
			return -1;
	return 0;
}

static int live_resume(void *ctx)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;

	if (hvt_dbg_resume(&s->dbg, &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	s->held = 0;
	return 0;
}

static int live_step(void *ctx, size_t v)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;

	if (hvt_dbg_step(&s->dbg, (uint32_t)v, &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	return live_refresh(s, v);
}

/* Memory in requests of at most a buffer and never across a page: a read
 * gives what it got up to the first page it could not. */
static int64_t live_mem(struct gdb_state *s, size_t v, uint64_t la, void *buf, uint64_t len, int write)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t a = la + done, n = 4096 - (a & 4095);
		struct hvt_err err;
		int64_t res;
		int rc;

		if (n > len - done)
			n = len - done;
		if (n > HVTRACE_DBG_BUF_SIZE)
			n = HVTRACE_DBG_BUF_SIZE;
		rc = write ? hvt_dbg_write(&s->dbg, (uint32_t)v, a, (uint8_t *)buf + done, n, &res, &err)
			   : hvt_dbg_read(&s->dbg, (uint32_t)v, a, (uint8_t *)buf + done, n, &res, &err);
		if (rc) {
			if (res != -HVTRACE_EFAULT)
				warn("gdb", "%s", err.msg);
			break;
		}
		done += n;
	}
	if (write)
		return done == len ? 0 : -1;
	return done ? (int64_t)done : -1;
}

static int64_t live_read(void *ctx, size_t v, uint64_t la, void *buf, uint64_t len)
{
	return live_mem(ctx, v, la, buf, len, 0);
}

static int live_write(void *ctx, size_t v, uint64_t la, const void *buf, uint64_t len)
{
	return (int)live_mem(ctx, v, la, (void *)buf, len, 1);
}

static int live_set_regs(void *ctx, size_t v, const struct hvt_vcpu_regs *r)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;
	int64_t res;

	if (hvt_dbg_set_regs(&s->dbg, (uint32_t)v, r, &res, &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	return live_refresh(s, v);
}

static int live_set_hw(void *ctx, unsigned slot, int on, unsigned rw, unsigned len, uint64_t addr, size_t th)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;
	int64_t res;

	if (hvt_dbg_set_hw(&s->dbg, slot, on, rw, len, addr, (uint32_t)th, &res, &err)) {
		warn("gdb", "%s", err.msg);
		return -1;
	}
	if (on)
		s->hw_set |= 1u << slot;
	else
		s->hw_set &= ~(1u << slot);
	return 0;
}

static uint32_t live_hits(void *ctx, size_t v)
{
	struct gdb_state *s = ctx;

	return hvt_dbg_hits(&s->dbg, (uint32_t)v);
}

static int live_read_phys(void *ctx, size_t v, uint64_t pa, void *buf, uint64_t len)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;
	int64_t res;

	if (hvt_dbg_read_phys(&s->dbg, (uint32_t)v, pa, buf, len, &res, &err)) {
		if (res != -HVTRACE_EFAULT)
			warn("gdb", "%s", err.msg);
		return -1;
	}
	return 0;
}

static int live_translate(void *ctx, size_t v, uint64_t la, uint64_t *pa)
{
	struct gdb_state *s = ctx;
	struct hvt_err err;
	int64_t res;

	if (hvt_dbg_translate(&s->dbg, (uint32_t)v, la, pa, &res, &err)) {
		if (res != -HVTRACE_EFAULT)
			warn("gdb", "%s", err.msg);
		return -1;
	}
	return 0;
}

/* GDB reads vCPU v's branch trace (every vCPU is stopped: nothing is
 * recorded meanwhile): its flight ring as it is now, through the channel. */
static int live_history(void *ctx, size_t v)
{
	struct gdb_state *s = ctx;

	if (!s->held || v >= s->ncpus || snap_history(s, v, 1))
		return -1;
	s->t.trace_live = hvt_chan_state(&s->ch) == HVTRACE_STATE_TRACING;
	return 0;
}

/* The session is over: no breakpoint or watchpoint left behind, the
 * guest runs on. */
static void live_end(struct gdb_state *s)
{
	unsigned i;

	if (s->hw_set && (s->held || live_stop(s) == 0))
		for (i = 0; i < HVTRACE_DBG_SLOTS_MAX; i++)
			if (s->hw_set & (1u << i))
				live_set_hw(s, i, 0, 0, 0, 0, 0);
	if (s->held && live_resume(s) == 0)
		fprintf(stderr, "hvtrace gdb: the guest runs on\n");
}

static int open_live(struct gdb_state *s, const char *path)
{
	struct hvt_err err;

	s->lock_fd = -1;
	if (hvt_chan_open_shm(&s->ch, path, &err))
		return fail(path, "%s", err.msg);
	s->have_chan = 1;
	s->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->lock_fd < 0)
		return fail(path, "%s", strerror(errno));
	if (hvt_dbg_open(&s->dbg, &s->ch, s->lock_fd, &err))
		return fail(path, "%s", err.msg);
	s->ncpus = s->dbg.nr_vcpus;
	if (alloc_threads(s))
		return EXIT_DATA;
	s->live = (struct hvt_gdb_live){ .ctx = s, .stop = live_stop, .resume = live_resume,
					 .step = live_step, .read = live_read, .write = live_write,
					 .set_regs = live_set_regs, .set_hw = live_set_hw, .hits = live_hits,
					 .read_phys = live_read_phys, .translate = live_translate,
					 .history = live_history };
	s->t = (struct hvt_gdb_target){ .th = s->th, .nth = s->ncpus, .live = &s->live,
					.bts_size = flight_bytes(s) };
	return 0;
}

static void close_target(struct gdb_state *s)
{
	size_t v;

	for (v = 0; s->recs && v < s->ncpus; v++)
		free(s->recs[v]);
	free(s->recs);
	free(s->th);
	free(s->cpus);
	if (s->have_chan)
		hvt_chan_close(&s->ch);
	if (s->t.live) {
		if (s->lock_fd >= 0)
			close(s->lock_fd);
		return;
	}
	hvt_dump_close(&s->dump);
}

static void summary(const struct gdb_state *s, const struct hvt_syms *syms)
{
	size_t v;
	char name[256];

	for (v = 0; v < s->ncpus; v++)
		if (s->t.live)
			fprintf(stderr, "hvtrace gdb: thread %zu: vCPU %zu (APIC ID %u), stopped at rip %s\n", v + 1,
				v, s->cpus[v].apic_id, hvt_syms_format(syms, s->cpus[v].rip, name, sizeof(name)));
		else
		fprintf(stderr, "hvtrace gdb: thread %zu: vCPU %zu, rip %s, %s%llu flight-recorder records\n",
			v + 1, v, hvt_syms_format(syms, s->cpus[v].rip, name, sizeof(name)),
			s->cpus[v].has_sys ? "" : "no control registers (no QEMU note), ",
			(unsigned long long)s->th[v].nr);
}

/* A temporary symbol file, removed when the command ends, by a signal too. */
static char tmp_syms[4096];

static void on_signal(int sig)
{
	if (tmp_syms[0])
		unlink(tmp_syms);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The file GDB loads symbols from: an ELF as it is (its absolute path), a
 * text map written as an ELF of its symbols (*tmp set: remove it after). */
static int exec_file_for(const char *symfile, const struct hvt_syms *syms, char *path, size_t len, int *tmp)
{
	struct hvt_err err;
	char magic[4] = "";
	FILE *f = fopen(symfile, "rb");
	int fd;

	if (f) {
		if (fread(magic, 1, 4, f) != 4)
			magic[0] = 0;
		fclose(f);
	}
	if (!memcmp(magic, "\177ELF", 4)) {
		if (!realpath(symfile, path))
			return fail(symfile, "%s", strerror(errno));
		return 0;
	}
	snprintf(path, len, "%s/hvtrace-gdb-syms-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return fail(path, "%s", strerror(errno));
	close(fd);
	*tmp = 1;
	snprintf(tmp_syms, sizeof(tmp_syms), "%s", path);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (hvt_syms_write_elf(syms, path, &err)) {
		unlink(path);
		*tmp = 0;
		return fail("symbols", "%s", err.msg);
	}
	fprintf(stderr, "hvtrace gdb: %zu symbols of %s as an ELF for gdb: %s\n", syms->n, symfile, path);
	return 0;
}

/* [HOST:]PORT, numeric only: nothing is looked up. */
static int listen_on(const char *spec, char *shown, size_t len)
{
	char host[64] = "127.0.0.1";
	const char *colon = strrchr(spec, ':'), *port = colon ? colon + 1 : spec;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	uint64_t p;
	int fd, one = 1;

	if (colon) {
		size_t n = (size_t)(colon - spec);

		if (n >= sizeof(host) || !n)
			return -2;
		memcpy(host, spec, n);
		host[n] = 0;
		if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
			memmove(host, host + 1, n - 2);
			host[n - 2] = 0;
		}
	}
	if (parse_u64(port, &p) || p > 65535 || getaddrinfo(host, port, &hints, &ai))
		return -2;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		errno = e;
		return -1;
	}
	freeaddrinfo(ai);
	snprintf(shown, len, "%s:%u", host,
		 ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						: ((struct sockaddr_in *)&sa)->sin_port));
	return fd;
}

static int send_all(void *ctx, const void *buf, size_t len)
{
	int fd = *(int *)ctx;
	const char *b = buf;

	while (len) {
		ssize_t k = send(fd, b, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		len -= (size_t)k;
	}
	return 0;
}

/* --shm: a signal ends the session like a detach, so a held guest goes on */
static volatile sig_atomic_t live_quit;

static void on_live_signal(int sig)
{
	(void)sig;
	live_quit = 1;
}

static int serve(struct gdb_state *s, int lfd, const char *where, const struct hvt_syms *syms)
{
	struct hvt_gdb *g;
	uint64_t packets, malformed;
	char buf[4096];
	int fd, one = 1, rc = 0;

	fprintf(stderr, "hvtrace gdb: listening on %s (in gdb: target remote %s)\n", where, where);
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		return fail("gdb", "accept: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (s->t.live) {
		struct sigaction sa = { .sa_handler = on_live_signal };	/* no SA_RESTART: recv returns */

		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		/* attached: the guest stops, as GDB expects of a target */
		if (live_stop(s)) {
			close(fd);
			return fail("gdb", "the guest did not stop");
		}
		fprintf(stderr, "hvtrace gdb: every vCPU stopped in %.2f ms\n", s->stop_ms);
		if (s->t.first >= s->ncpus)
			s->t.first = 0;
		summary(s, syms);
	}
	g = hvt_gdb_new(&s->t, send_all, &fd);
	if (!g) {
		close(fd);
		return fail("gdb", "out of memory");
	}
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t k;
		uint32_t who;

		/* continued: every 10 ms, whether the guest stopped by itself
		 * (a vCPU reached a breakpoint or watchpoint) */
		if (s->t.live && hvt_gdb_running(g)) {
			int n = poll(&pf, 1, 10);

			if (n < 0 && errno == EINTR && !live_quit)
				continue;
			if (n == 0) {
				if (hvt_dbg_held(&s->dbg, &who) && hvt_gdb_stopped(g, who == UINT32_MAX ? 0 : who))
					break;
				continue;
			}
		}
		k = recv(fd, buf, sizeof(buf), 0);
		if (k < 0 && errno == EINTR && !live_quit)
			continue;
		if (k <= 0)
			break;	/* the client went away */
		rc = hvt_gdb_input(g, buf, (size_t)k);
		if (rc)
			break;
	}
	hvt_gdb_stats(g, &packets, &malformed);
	fprintf(stderr, "hvtrace gdb: %s: %llu packets, %llu malformed\n",
		rc == 1 ? "detached" : "connection closed", (unsigned long long)packets,
		(unsigned long long)malformed);
	hvt_gdb_free(g);
	close(fd);
	if (s->t.live)
		live_end(s);
	return 0;
}

int cmd_gdb(int argc, char **argv)
{
	const char *dump = NULL, *at = NULL, *listen = "127.0.0.1:1234", *symfile = NULL, *shm = NULL;
	struct gdb_state s;
	struct hvt_syms syms = { 0 };
	uint64_t vcpu = UINT64_MAX;
	char where[128], exec_file[4096] = "";
	int opt, rc = 0, lfd, tmp = 0;

	memset(&s, 0, sizeof(s));
	optind = 1;
	while ((opt = next_opt(argc, argv, "gdb", ":h", gdb_opts, &rc)) != -1) {
		switch (opt) {
		case O_DUMP: dump = optarg; break;
		case O_SHM: shm = optarg; break;
		case O_AT: at = optarg; break;
		case O_LISTEN: listen = optarg; break;
		case O_SYMBOLS: symfile = optarg; break;
		case O_VCPU:
			if (parse_u64(optarg, &vcpu) || vcpu > 0xffff)
				return usage_error("gdb", "--vcpu takes a vCPU number, not '%s'", optarg);
			break;
		case OPT_HELP: fputs(gdb_help, stdout); return 0;
		default: return rc;
		}
	}
	if (optind < argc)
		return usage_error("gdb", "unexpected argument '%s'", argv[optind]);
	if (!dump == !shm)
		return usage_error("gdb", "one of --dump FILE and --shm PATH is required");
	if (shm && at)
		return usage_error("gdb", "--at is for a dump");
	if (symfile && load_symbols(&syms, symfile))
		return EXIT_DATA;
	if (symfile && exec_file_for(symfile, &syms, exec_file, sizeof(exec_file), &tmp)) {
		hvt_syms_free(&syms);
		return EXIT_DATA;
	}
	rc = shm ? open_live(&s, shm) : open_target(&s, dump, at);
	if (!rc && vcpu != UINT64_MAX) {
		if (vcpu >= s.ncpus)
			rc = usage_error("gdb", "--vcpu %llu: the %s has %zu vCPUs", (unsigned long long)vcpu,
					 shm ? "guest" : "dump", s.ncpus);
		else
			s.t.first = (size_t)vcpu;
	}
	if (exec_file[0])
		s.t.exec_file = exec_file;
	if (!rc) {
		if (!shm)
			summary(&s, symfile ? &syms : NULL);
		lfd = listen_on(listen, where, sizeof(where));
		if (lfd == -2)
			rc = usage_error("gdb", "--listen takes [HOST:]PORT with a numeric address, not '%s'",
					 listen);
		else if (lfd < 0)
			rc = fail("gdb", "cannot listen on %s: %s", listen, strerror(errno));
		else
			rc = serve(&s, lfd, where, symfile ? &syms : NULL);
	}
	close_target(&s);
	if (symfile)
		hvt_syms_free(&syms);
	if (tmp)
		unlink(exec_file);
	return rc;
}
