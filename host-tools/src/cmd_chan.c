/* SPDX-License-Identifier: MIT */
/* hvtrace status, record, snapshot and ctl: the commands that use a live channel. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A channel file that shrinks under its mapping faults (SIGBUS) on the
 * next access: turn that into an error instead of a crash. */
static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static const char *bus_what, *bus_out;
static struct hvt_fwriter *bus_writer;

/* Runs a subcommand with SIGBUS caught; a recording keeps what it wrote. */
static int guarded(int (*fn)(int, char **), int argc, char **argv)
{
	struct sigaction sa = { 0 };
	struct hvt_err err;

	if (sigsetjmp(bus_jmp, 1)) {
		const char *why = "the channel's file shrank under its mapping (SIGBUS)";

		if (!bus_writer || bus_writer->fd < 0)
			return fail(bus_what ? bus_what : "channel", "%s", why);
		hvt_fwriter_finish(bus_writer, 0, &err);
		return fail(bus_what, "%s; %llu records kept in %s", why,
			    (unsigned long long)bus_writer->records, bus_out);
	}
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
	return fn(argc, argv);
}

/* ---------------------------------------------------------------- */

static const char status_help[] =
	"usage: hvtrace status (--shm PATH | --dump FILE [--base ADDR] [--at ADDR]) [--json]\n"
	"Shows the channel: where it is, its state and freeze reason, tsc_hz, and per\n"
	"ring: vcpu, consumer, mode, capacity, fill (records held), head, lost,\n"
	"filtered, waits, and whether a reader is attached.\n"
	"  --shm PATH    an ivshmem backing file (memory-backend-file mem-path)\n"
	"  --dump FILE   a guest memory dump: raw pmemsave image or dump-guest-memory ELF\n"
	"  --base ADDR   the dump is a raw image of guest-physical memory from ADDR (hex),\n"
	"                not from 0: a range saved by pmemsave ADDR SIZE or Bochs's writemem\n"
	"  --at ADDR     the channel header at guest-physical ADDR, when the dump holds\n"
	"                more than one (a guest can forge one in its RAM: all are listed)\n"
	"  --json        one JSON object\n";

/* host control: what the hypervisor says of it (names checked: a
 * scribbled header shows as numbers) */
static void status_ctl_text(const struct hvtrace_chan *h)
{
	const char *mode = hvt_ctl_mode_name(h->ctl_mode), *res = hvt_result_name(h->ctl_result);

	if (!mode)
		printf("control: mode %u (unknown)\n", h->ctl_mode);
	else if (h->ctl_mode == HVTRACE_CTL_OFF)
		printf("control: off (the hypervisor reads no host requests)\n");
	else
		printf("control: %s%s, %llu applied, %llu refused, last request %llu: %s%s\n", mode,
		       h->ctl_mode == HVTRACE_CTL_POLL ? " (also while the guest halts)" : " (at VM exits)",
		       (unsigned long long)h->ctl_applied, (unsigned long long)h->ctl_rejected,
		       (unsigned long long)h->ctl_done, res ? res : "?",
		       h->watchdog_us ? ", watchdog armed" : "");
}

static void status_text(const struct hvt_chan *ch, const char *path,
			const struct hvt_ring_counters *c)
{
	const struct hvtrace_chan *h = ch->hdr;
	unsigned i;

	if (ch->source != HVT_SRC_DUMP)
		printf("channel: %s (shared memory)\n", path);
	else
		printf("channel: %s (%s dump), header at guest-physical 0x%llx%s\n", path,
		       ch->dump_format, (unsigned long long)ch->found_at,
		       ch->dump_headers > 1 ? " (chosen with --at: the dump holds more than one)" : "");
	printf("abi: %u.%u, %llu bytes, where %s, phys_base 0x%llx\n", h->abi_version >> 16,
	       h->abi_version & 0xffff, (unsigned long long)ch->size, hvt_where_name(h->where),
	       (unsigned long long)h->phys_base);
	printf("state: %s (seq %llu)\n", hvt_state_name(hvt_chan_state(ch)), (unsigned long long)h->seq);
	printf("freeze: %s", hvt_freeze_name(hvt_chan_freeze(ch)));
	if (hvt_chan_freeze(ch))
		printf(" at tsc %llu", (unsigned long long)h->freeze_tsc);
	printf("\ntsc_hz: %llu%s\n", (unsigned long long)ch->tsc_hz, ch->tsc_hz ? "" : " (unknown)");
	printf("vcpus: %u, rings: %u\n", ch->nr_vcpus, ch->nr_rings);
	status_ctl_text(h);
	if (!ch->nr_rings)
		return;
	printf("%4s %5s %-8s %-9s %-6s %10s %10s %12s %10s %10s %8s %s\n", "ring", "vcpu", "consumer",
	       "mode", "cpl", "capacity", "fill", "head", "lost", "filtered", "waits", "reader");
	for (i = 0; i < ch->nr_rings; i++) {
		const struct hvt_ring_desc *d = &ch->ring[i];
		char reader[32] = "-";

		if (d->mode == HVTRACE_RING_LOSSLESS)
			snprintf(reader, sizeof(reader), c[i].reader ? "pid %llu" : "none",
				 (unsigned long long)c[i].reader);
		printf("%4u %5u %-8s %-9s %-6s %10llu %10llu %12llu %10llu %10llu %8llu %s\n", i, d->vcpu,
		       hvt_consumer_name(d->consumer), hvt_mode_name(d->mode),
		       hvt_cpl_filter_name(d->cpl_filter), (unsigned long long)d->capacity,
		       (unsigned long long)hvt_ring_fill(ch, i, &c[i]), (unsigned long long)c[i].head,
		       (unsigned long long)c[i].lost, (unsigned long long)c[i].filtered,
		       (unsigned long long)c[i].waits, reader);
	}
}

static void status_json(const struct hvt_chan *ch, const char *path,
			const struct hvt_ring_counters *c)
{
	const struct hvtrace_chan *h = ch->hdr;
	unsigned i;

	printf("{\"source\":\"%s\",\"path\":", ch->source == HVT_SRC_DUMP ? "dump" : "shm");
	json_str(stdout, path);
	if (ch->source == HVT_SRC_DUMP)
		printf(",\"dump_format\":\"%s\",\"found_at\":\"0x%llx\",\"dump_headers\":%zu",
		       ch->dump_format, (unsigned long long)ch->found_at, ch->dump_headers);
	printf(",\"abi\":\"%u.%u\",\"size\":%llu,\"where\":\"%s\",\"phys_base\":\"0x%llx\"",
	       h->abi_version >> 16, h->abi_version & 0xffff, (unsigned long long)ch->size,
	       hvt_where_name(h->where), (unsigned long long)h->phys_base);
	printf(",\"state\":\"%s\",\"seq\":%llu,\"freeze\":\"%s\",\"freeze_tsc\":%llu,\"tsc_hz\":%llu",
	       hvt_state_name(hvt_chan_state(ch)), (unsigned long long)h->seq,
	       hvt_freeze_name(hvt_chan_freeze(ch)), (unsigned long long)h->freeze_tsc,
	       (unsigned long long)ch->tsc_hz);
	printf(",\"ctl_mode\":%u,\"ctl_done\":%llu,\"ctl_result\":%lld,\"ctl_applied\":%llu,"
	       "\"ctl_rejected\":%llu,\"watchdog_us\":%llu",
	       h->ctl_mode, (unsigned long long)h->ctl_done, (long long)h->ctl_result,
	       (unsigned long long)h->ctl_applied, (unsigned long long)h->ctl_rejected,
	       (unsigned long long)h->watchdog_us);
	printf(",\"nr_vcpus\":%u,\"rings\":[", ch->nr_vcpus);
	for (i = 0; i < ch->nr_rings; i++) {
		const struct hvt_ring_desc *d = &ch->ring[i];

		printf("%s{\"index\":%u,\"vcpu\":%u,\"consumer\":\"%s\",\"mode\":\"%s\",\"cpl_filter\":\"%s\","
		       "\"capacity\":%llu,\"wait_us\":%u,\"fill\":%llu,\"head\":%llu,\"tail\":%llu,"
		       "\"lost\":%llu,\"filtered\":%llu,\"waits\":%llu,\"reader\":%llu,"
		       "\"reader_attached\":%s}",
		       i ? "," : "", i, d->vcpu, hvt_consumer_name(d->consumer), hvt_mode_name(d->mode),
		       hvt_cpl_filter_name(d->cpl_filter), (unsigned long long)d->capacity, d->wait_us,
		       (unsigned long long)hvt_ring_fill(ch, i, &c[i]), (unsigned long long)c[i].head,
		       (unsigned long long)c[i].tail, (unsigned long long)c[i].lost,
		       (unsigned long long)c[i].filtered, (unsigned long long)c[i].waits,
		       (unsigned long long)c[i].reader,
		       d->mode == HVTRACE_RING_LOSSLESS && c[i].reader ? "true" : "false");
	}
	printf("]}\n");
}

static int status_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' }, { "dump", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },	 { "help", no_argument, NULL, OPT_HELP },
		{ "at", required_argument, NULL, 'a' },	 { "base", required_argument, NULL, 'b' },
		{ 0 },
	};
	const char *shm = NULL, *dump = NULL, *at = NULL, *base = NULL;
	struct hvt_ring_counters c[HVTRACE_CHAN_MAX_RINGS];
	struct hvt_chan ch;
	struct hvt_err err;
	int opt, json = 0, rc = 0;
	unsigned i;

	optind = 1;
	while ((opt = next_opt(argc, argv, "status", ":ho:", lo, &rc)) != -1) {
		switch (opt) {
		case 's': shm = optarg; break;
		case 'd': dump = optarg; break;
		case 'a': at = optarg; break;
		case 'b': base = optarg; break;
		case 'j': json = 1; break;
		case OPT_HELP: fputs(status_help, stdout); return 0;
		default: return rc ? rc : usage_error("status", "unexpected option");
		}
	}
	if (optind < argc)
		return usage_error("status", "unexpected argument '%s'", argv[optind]);
	bus_what = shm ? shm : dump;
	if ((rc = open_channel(&ch, "status", shm, dump, at, base)))
		return rc;
	for (i = 0; i < ch.nr_rings; i++)
		if (hvt_ring_counters(&ch, i, &c[i], &err)) {
			hvt_chan_close(&ch);
			return fail(shm ? shm : dump, "%s", err.msg);
		}
	if (json)
		status_json(&ch, shm ? shm : dump, c);
	else
		status_text(&ch, shm ? shm : dump, c);
	hvt_chan_close(&ch);
	return 0;
}

/* ---------------------------------------------------------------- */
/* Host -> hypervisor control (docs/channel.md "Control"). */

#define CTL_TIMEOUT_MS 5000u

/* One request, its writers serialized by an exclusive lock on the
 * channel's file (another `hvtrace ctl` or a recorder stopping the
 * stream). 0 with *result, or EXIT_DATA after saying why. */
static int ctl_send(const char *shm, struct hvt_chan *ch, const struct hvt_ctl_req *rq, uint64_t timeout_ms,
		    int64_t *result, uint64_t *latency_ns)
{
	struct hvt_err err;
	int fd = open(shm, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0 || flock(fd, LOCK_EX)) {
		rc = fail(shm, "cannot lock it for a control request: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	rc = hvt_ctl_send(ch, rq, timeout_ms, result, latency_ns, &err);
	close(fd);	/* the lock goes with it */
	return rc ? fail(shm, "%s", err.msg) : 0;
}

static const char ctl_help[] =
	"usage: hvtrace ctl --shm PATH [--timeout SEC] REQUEST [ARGS]\n"
	"Sends one request to the hypervisor through the channel and waits for its\n"
	"answer. The hypervisor checks it as it checks the guest's trace-control\n"
	"hypercall and applies it at its next VM exit; with channel.control = poll\n"
	"(the default for an ivshmem channel) also within about 200 us while the\n"
	"guest is idle (docs/channel.md \"Control\"). Requests:\n"
	"  start                    start tracing (every vCPU)\n"
	"  stop                     stop tracing; a STOP marker ends the stream\n"
	"  freeze                   freeze the flight recorder now (as on a crash)\n"
	"  mark VALUE               a HOST marker record carrying VALUE\n"
	"  freeze-at ADDR[+N]       freeze N records after the first record that goes\n"
	"                           to ADDR (as trace.freeze); freeze-at none removes all\n"
	"  filter CONSUMER [cpl=all|kernel|user] [cr3=ROOT] [range=LO-HI]...\n"
	"                           a new filter for flight or stream (up to 4 ranges)\n"
	"  watchdog TIME|off        freeze the flight recorder unless the watchdog is\n"
	"                           armed again within TIME (1s, 500ms; at most 1h)\n"
	"  --timeout SEC  how long to wait for the answer (default 5)\n"
	"Exit status: 0 applied, 1 refused by the hypervisor or no answer, 2 usage.\n";

/* filter CONSUMER [cpl=..] [cr3=..] [range=LO-HI]... */
static int ctl_parse_filter(int argc, char **argv, struct hvtrace_filter *f)
{
	int c = argc > 0 ? parse_name(argv[0], hvt_consumer_name, 8) : -1, i;

	if (c <= 0)
		return usage_error("ctl", "filter takes a consumer, flight or stream, first");
	f->consumer = (uint32_t)c;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		uint64_t lo, hi;
		int cpl;

		if (!strncmp(a, "cpl=", 4)) {
			if ((cpl = parse_name(a + 4, hvt_cpl_filter_name, 8)) < 0)
				return usage_error("ctl", "'%s': cpl is all, kernel or user", a);
			f->cpl = (uint32_t)cpl;
		} else if (!strncmp(a, "cr3=", 4)) {
			if (parse_u64(a + 4, &f->cr3))
				return usage_error("ctl", "'%s': cr3 takes a page-table root (0x...)", a);
		} else if (!strncmp(a, "range=", 6)) {
			char lo_s[32], *dash = strchr(a + 6, '-');

			if (!dash || (size_t)(dash - a - 6) >= sizeof(lo_s))
				return usage_error("ctl", "'%s': range takes LO-HI", a);
			memcpy(lo_s, a + 6, (size_t)(dash - a - 6));
			lo_s[dash - a - 6] = 0;
			if (parse_u64(lo_s, &lo) || parse_u64(dash + 1, &hi))
				return usage_error("ctl", "'%s': range takes LO-HI (numbers)", a);
			if (f->nr_ranges >= HVTRACE_FILTER_MAX_RANGES)
				return usage_error("ctl", "at most %u ranges", HVTRACE_FILTER_MAX_RANGES);
			f->ranges[f->nr_ranges].lo = lo;
			f->ranges[f->nr_ranges].hi = hi;
			f->nr_ranges++;
		} else {
			return usage_error("ctl", "'%s' is not cpl=, cr3= or range=", a);
		}
	}
	return 0;
}

/* REQUEST [ARGS] into rq; 0 or a usage error */
static int ctl_parse(int argc, char **argv, struct hvt_ctl_req *rq)
{
	const char *op = argv[0];
	int nargs = argc - 1, is_time;

	memset(rq, 0, sizeof(*rq));
	if (!strcmp(op, "start") || !strcmp(op, "stop") || !strcmp(op, "freeze")) {
		rq->op = op[0] == 'f' ? HVTRACE_TRACE_FREEZE : op[2] == 'a' ? HVTRACE_TRACE_START : HVTRACE_TRACE_STOP;
		return nargs ? usage_error("ctl", "%s takes no argument", op) : 0;
	}
	if (!strcmp(op, "mark")) {
		rq->op = HVTRACE_TRACE_MARK;
		if (nargs != 1 || parse_u64(argv[1], &rq->arg0))
			return usage_error("ctl", "mark takes one number (the marker's value)");
		return 0;
	}
	if (!strcmp(op, "freeze-at")) {
		char addr[32], *plus;

		rq->op = HVTRACE_TRACE_FREEZE_AT;
		if (nargs != 1)
			return usage_error("ctl", "freeze-at takes ADDR[+N] or none");
		if (!strcmp(argv[1], "none"))
			return 0;
		snprintf(addr, sizeof(addr), "%s", argv[1]);
		if ((plus = strchr(addr, '+')))
			*plus++ = 0;
		if (parse_u64(addr, &rq->arg0) || !rq->arg0 || (plus && parse_u64(plus, &rq->arg1)))
			return usage_error("ctl", "'%s': freeze-at takes ADDR[+N] (N records after it) or none",
					   argv[1]);
		return 0;
	}
	if (!strcmp(op, "filter")) {
		rq->op = HVTRACE_TRACE_FILTER;
		return ctl_parse_filter(nargs, argv + 1, &rq->filter);
	}
	if (!strcmp(op, "watchdog")) {
		rq->op = HVTRACE_TRACE_WATCHDOG;
		if (nargs != 1)
			return usage_error("ctl", "watchdog takes a time (30s, 500ms) or off");
		if (!strcmp(argv[1], "off"))
			return 0;
		if (parse_point(argv[1], &rq->arg0, &is_time) || !is_time || !rq->arg0)
			return usage_error("ctl", "'%s': watchdog takes a time with its unit (30s, 500ms) or off",
					   argv[1]);
		return 0;
	}
	return usage_error("ctl", "'%s' is not a request (start, stop, freeze, mark, freeze-at, filter, "
			   "watchdog)", op);
}

static int ctl_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	const char *shm = NULL;
	uint64_t timeout_s = CTL_TIMEOUT_MS / 1000, latency;
	struct hvt_ctl_req rq;
	struct hvt_chan ch;
	struct hvt_err err;
	int64_t result;
	int opt, rc = 0;

	optind = 1;
	/* "+": the request's own words (cpl=...) are not options */
	while ((opt = next_opt(argc, argv, "ctl", "+h", lo, &rc)) != -1) {
		switch (opt) {
		case 's': shm = optarg; break;
		case 't':
			if (parse_u64(optarg, &timeout_s) || !timeout_s || timeout_s > 3600)
				return usage_error("ctl", "--timeout takes seconds (1..3600), not '%s'", optarg);
			break;
		case OPT_HELP: fputs(ctl_help, stdout); return 0;
		default: return rc ? rc : usage_error("ctl", "unexpected option");
		}
	}
	if (!shm)
		return usage_error("ctl", "--shm PATH is required (the ivshmem backing file)");
	if (optind >= argc)
		return usage_error("ctl", "no request (start, stop, freeze, mark, freeze-at, filter, watchdog)");
	if ((rc = ctl_parse(argc - optind, argv + optind, &rq)))
		return rc;
	bus_what = shm;
	if (hvt_chan_open_shm(&ch, shm, &err))
		return fail(shm, "%s", err.msg);
	rc = ctl_send(shm, &ch, &rq, timeout_s * 1000, &result, &latency);
	if (!rc && result) {
		rc = fail("ctl", "%s: refused by the hypervisor: %s", argv[optind], hvt_result_name(result));
	} else if (!rc) {
		printf("hvtrace ctl: %s: applied in %.2f ms (state %s", argv[optind], latency / 1e6,
		       hvt_state_name(hvt_chan_state(&ch)));
		if (hvt_chan_state(&ch) == HVTRACE_STATE_FROZEN)
			printf(", frozen by %s", hvt_freeze_name(hvt_chan_freeze(&ch)));
		printf(")\n");
	}
	hvt_chan_close(&ch);
	return rc;
}

int cmd_ctl(int argc, char **argv)
{
	return guarded(ctl_main, argc, argv);
}

/* ---------------------------------------------------------------- */

static const char record_help[] =
	"usage: hvtrace record --shm PATH -o FILE [--wait SEC] [--rate N] [--idle-exit SEC]\n"
	"                      [--keep-tracing] [--quiet]\n"
	"Attaches to every LOSSLESS ring of the channel and drains it into FILE until\n"
	"SIGINT/SIGTERM, until the channel is STOPPED or FROZEN and drained, or until\n"
	"--idle-exit SEC seconds pass without a new record once tracing has started\n"
	"(not while the channel waits for its start trigger). Ending for a signal or\n"
	"--idle-exit, it first asks the hypervisor to stop tracing (`hvtrace ctl stop`:\n"
	"nobody else reads the stream) and drains the rings to the STOP marker, so\n"
	"nothing made before the stop is lost. The file is valid at any moment (a\n"
	"killed recorder leaves one readers accept); LOST records are kept, and the\n"
	"header's lost is the sum of the rings' lost.\n"
	"  -o FILE          the trace file to write\n"
	"  --wait SEC       wait up to SEC seconds for the channel to appear (start the\n"
	"                   recorder before the guest)\n"
	"  --rate N         drain at most N records/s (a deliberately slow reader)\n"
	"  --idle-exit SEC  stop after SEC seconds without a new record (counted\n"
	"                   from the start of tracing)\n"
	"  --keep-tracing   leave tracing on when the recorder ends (records made\n"
	"                   afterwards are dropped, counted, while nobody reads)\n"
	"  --quiet          no progress line\n";

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

#define DRAIN_MAX 65536u	/* records per ring per step */

struct recorder {
	struct hvt_chan ch;
	struct hvt_fwriter w;
	unsigned ring[HVTRACE_CHAN_MAX_RINGS], n;
	uint64_t pid, bad, lost;
	struct hvtrace_rec *buf;
	const char *shm;
	int keep_tracing, quiet;
	int stopping;			/* ending: drain until the channel is stopped */
	uint64_t stopped_at;		/* when the stop was applied (or the state seen) */
	uint64_t stop_deadline;		/* ... give up waiting for it then */
};

/* A stopped channel's rings are drained again this long after they first
 * look empty: a record begun before the stop is in by then. */
#define STOP_SETTLE_NS 100000000u
/* How long an ending recorder waits for the stop and the last records. */
#define STOP_WAIT_MS 5000u

static void detach_all(struct recorder *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++)
		hvt_ring_detach(&r->ch, r->ring[i], r->pid);
}

/* One pass over the rings; returns records drained, -1 on a data error. */
static int64_t drain_pass(struct recorder *r, uint64_t budget, struct hvt_err *err)
{
	int64_t total = 0;
	unsigned i;

	for (i = 0; i < r->n && budget; i++) {
		uint64_t max = budget < DRAIN_MAX ? budget : DRAIN_MAX, keep;
		int64_t got = hvt_ring_read(&r->ch, r->ring[i], r->buf, max, err);

		if (got < 0)
			return -1;
		if (!got)
			continue;
		/* to the file before the slots go back to the producer: a
		 * recorder killed in between loses nothing it had consumed */
		keep = hvt_recs_filter(r->buf, (uint64_t)got, &r->bad);
		if (hvt_fwriter_put(&r->w, r->buf, keep, err))
			return -1;
		hvt_ring_consume(&r->ch, r->ring[i], (uint64_t)got);
		total += got;
		budget -= (uint64_t)got;
	}
	return total;
}

static int all_drained(struct recorder *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++) {
		const struct hvtrace_ring *ring = &r->ch.hdr->rings[r->ring[i]];

		if (__atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE))
			return 0;
	}
	return 1;
}

static uint64_t sum_lost(struct recorder *r)
{
	uint64_t lost = 0;
	unsigned i;

	for (i = 0; i < r->n; i++)
		lost += __atomic_load_n(&r->ch.hdr->rings[r->ring[i]].lost, __ATOMIC_ACQUIRE);
	return lost;
}

/* The recorder ends (a signal, --idle-exit): unless --keep-tracing, the
 * hypervisor stops tracing first, and the loop drains the rings until the
 * channel is stopped and they are empty (record_loop). Without an answer
 * it drains what is there, as before control existed, and says so. */
static void stop_tracing(struct recorder *r)
{
	uint32_t state = hvt_chan_state(&r->ch);
	struct hvt_ctl_req rq = { .op = HVTRACE_TRACE_STOP };
	uint64_t latency;
	int64_t result;

	r->stopping = 1;
	r->stopped_at = now_ns();
	r->stop_deadline = r->stopped_at;	/* drain once and end, unless the stop is applied */
	if (r->keep_tracing || (state != HVTRACE_STATE_TRACING && state != HVTRACE_STATE_IDLE))
		return;
	if (!__atomic_load_n(&r->ch.hdr->ctl_mode, __ATOMIC_ACQUIRE)) {
		warn(r->shm, "tracing goes on: the hypervisor takes no host requests on this channel "
		     "(channel.control = off)");
		return;
	}
	if (ctl_send(r->shm, &r->ch, &rq, STOP_WAIT_MS, &result, &latency))
		return;
	if (result) {
		warn(r->shm, "the hypervisor refused to stop tracing: %s", hvt_result_name(result));
		return;
	}
	r->stopped_at = now_ns();
	r->stop_deadline = r->stopped_at + STOP_WAIT_MS * 1000000ull;
	if (!r->quiet)
		fprintf(stderr, "hvtrace record: tracing stopped (in %.2f ms); draining the rings\n",
			latency / 1e6);
}

static int record_loop(struct recorder *r, uint64_t rate, uint64_t idle_ns, int quiet)
{
	uint64_t t0 = now_ns(), last_new = t0, last_progress = t0, last_fill = t0, drained = 0,
		 at_progress = 0;
	/* --rate: a token bucket holding at most a tenth of a second's worth,
	 * so an idle spell does not turn into a burst */
	double tokens = 0, burst = rate / 10.0 > 1 ? rate / 10.0 : 1;
	struct hvt_err err;

	for (;;) {
		uint32_t state = hvt_chan_state(&r->ch);
		uint64_t now = now_ns(), budget = UINT64_MAX;
		int64_t got;

		if (rate) {
			tokens += (double)rate * (double)(now - last_fill) / 1e9;
			if (tokens > burst)
				tokens = burst;
			last_fill = now;
			budget = (uint64_t)tokens;
		}
		got = budget ? drain_pass(r, budget, &err) : 0;
		if (got < 0)
			return fail("record", "%s", err.msg);
		tokens -= (double)got;
		drained += (uint64_t)got;
		if (got)
			last_new = now;
		if ((state == HVTRACE_STATE_STOPPED || state == HVTRACE_STATE_FROZEN) && all_drained(r)) {
			if (!r->stopping)
				return 0;
			/* a vCPU may still be finishing a record it began
			 * before it saw the stop: one more look a moment later */
			if (now - r->stopped_at >= STOP_SETTLE_NS) {
				got = drain_pass(r, UINT64_MAX, &err);
				if (got <= 0)
					return got < 0 ? fail("record", "%s", err.msg) : 0;
			}
		} else if (r->stopping && now >= r->stop_deadline) {
			/* what the rings hold now goes into the file too: a
			 * signal loses nothing already produced */
			got = drain_pass(r, UINT64_MAX, &err);
			return got < 0 ? fail("record", "%s", err.msg) : 0;
		}
		/* --idle-exit counts once tracing has begun: a channel still
		 * waiting for its start trigger (IDLE) has made no record yet,
		 * however long the guest takes to start it (a stop asked of it
		 * changes nothing, so a reader that ended then left the stream
		 * to come unread: nested KVM, docs/testing.md item 7) */
		if (state == HVTRACE_STATE_IDLE)
			last_new = now;
		if (!r->stopping && (stop_requested || (idle_ns && now - last_new >= idle_ns))) {
			stop_tracing(r);
			continue;
		}
		if (!quiet && now - last_progress >= 1000000000u) {
			double s = (double)(now - last_progress) / 1e9;

			fprintf(stderr, "hvtrace record: %.0f records/s, %llu records, %.2f MiB, %llu lost\n",
				(double)(drained - at_progress) / s, (unsigned long long)r->w.records,
				(double)(r->w.records * 32 + 128) / 1048576.0,
				(unsigned long long)sum_lost(r));
			last_progress = now;
			at_progress = drained;
		}
		if (!got) {
			struct timespec ts = { 0, 500000 };

			nanosleep(&ts, NULL);
		}
	}
}

static int record_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' },	{ "output", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, 'r' },	{ "idle-exit", required_argument, NULL, 'i' },
		{ "quiet", no_argument, NULL, 'q' },		{ "help", no_argument, NULL, OPT_HELP },
		{ "wait", required_argument, NULL, 'w' },	{ "keep-tracing", no_argument, NULL, 'k' },
		{ 0 },
	};
	const char *shm = NULL, *out = NULL;
	uint64_t rate = 0, idle = 0, wait_s = 0;
	static struct recorder r;	/* static: the SIGBUS path finishes r.w */
	struct sigaction sa = { 0 };
	struct hvt_err err;
	int opt, quiet = 0, rc = 0, loop_rc;
	unsigned i;

	optind = 1;
	while ((opt = next_opt(argc, argv, "record", ":ho:", lo, &rc)) != -1) {
		switch (opt) {
		case 's': shm = optarg; break;
		case 'o': out = optarg; break;
		case 'r':
			if (parse_u64(optarg, &rate) || !rate)
				return usage_error("record", "--rate takes a whole number > 0, not '%s'", optarg);
			break;
		case 'i':
			if (parse_u64(optarg, &idle) || !idle || idle > 1000000)
				return usage_error("record", "--idle-exit takes seconds (1..1000000), not '%s'",
						   optarg);
			break;
		case 'q': quiet = 1; break;
		case 'k': r.keep_tracing = 1; break;
		case 'w':
			if (parse_u64(optarg, &wait_s) || !wait_s || wait_s > 1000000)
				return usage_error("record", "--wait takes seconds (1..1000000), not '%s'", optarg);
			break;
		case OPT_HELP: fputs(record_help, stdout); return 0;
		default: return rc ? rc : usage_error("record", "unexpected option");
		}
	}
	if (optind < argc)
		return usage_error("record", "unexpected argument '%s'", argv[optind]);
	if (!shm || !out)
		return usage_error("record", "--shm PATH and -o FILE are required");
	r.w.fd = -1;
	r.shm = shm;
	r.quiet = quiet;
	bus_what = shm;
	bus_writer = &r.w;
	bus_out = out;
	/* --wait: the guest may not have laid out its channel yet (the file
	 * exists before QEMU starts, the header once the hypervisor runs) */
	for (uint64_t waited_ms = 0;; waited_ms += 100) {
		if (!hvt_chan_open_shm(&r.ch, shm, &err))
			break;
		if (waited_ms >= wait_s * 1000)
			return fail(shm, "%s%s", err.msg, wait_s ? " (gave up waiting for the channel)" : "");
		if (!quiet && waited_ms % 5000 == 0)
			fprintf(stderr, "hvtrace record: waiting for a channel in %s (%s)\n", shm, err.msg);
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < r.ch.nr_rings; i++)
		if (r.ch.ring[i].mode == HVTRACE_RING_LOSSLESS)
			r.ring[r.n++] = i;
	if (!r.n) {
		hvt_chan_close(&r.ch);
		return fail(shm, "no lossless ring to record (%u rings, all overwrite)", r.ch.nr_rings);
	}
	r.pid = (uint64_t)getpid();
	for (i = 0; i < r.n; i++)
		if (hvt_ring_attach(&r.ch, r.ring[i], r.pid, &err)) {
			r.n = i;
			detach_all(&r);
			hvt_chan_close(&r.ch);
			return fail(shm, "%s", err.msg);
		}
	r.buf = malloc(DRAIN_MAX * sizeof(*r.buf));
	if (!r.buf || hvt_fwriter_open(&r.w, out, 0, r.ch.tsc_hz, r.ch.nr_vcpus,
				       hvt_chan_freeze(&r.ch), &err)) {
		detach_all(&r);
		hvt_chan_close(&r.ch);
		free(r.buf);
		return fail(out, "%s", r.buf ? err.msg : "out of memory");
	}
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	loop_rc = record_loop(&r, rate, idle * 1000000000u, quiet);
	detach_all(&r);
	if (hvt_chan_state(&r.ch) == HVTRACE_STATE_FROZEN)
		r.w.hdr.flags |= HVTRACE_FILE_FROZEN;
	r.w.hdr.freeze = hvt_chan_freeze(&r.ch);
	r.lost = sum_lost(&r);
	if (hvt_fwriter_finish(&r.w, r.lost, &err))
		loop_rc = fail(out, "%s", err.msg);
	if (r.bad)
		warn(shm, "%llu records with an invalid kind, type or marker left out",
		     (unsigned long long)r.bad);
	fprintf(stderr, "hvtrace record: %llu records, %llu lost, %.2f MiB -> %s\n",
		(unsigned long long)r.w.records, (unsigned long long)r.lost,
		(double)(r.w.records * 32 + 128) / 1048576.0, out);
	free(r.buf);
	hvt_chan_close(&r.ch);
	return loop_rc;
}

/* ---------------------------------------------------------------- */

static const char snapshot_help[] =
	"usage: hvtrace snapshot (--shm PATH | --dump FILE [--base ADDR] [--at ADDR]) -o FILE\n"
	"Copies the flight recorder (every OVERWRITE ring) into a trace file flagged\n"
	"SNAPSHOT (and FROZEN when the channel was frozen by a guest crash), the\n"
	"records of all vCPUs merged by TSC (stable). Records a live producer lapped\n"
	"while they were copied are thrown away.\n"
	"  --base ADDR the dump is a raw image of guest-physical memory from ADDR (hex)\n"
	"  --at ADDR   the channel header at guest-physical ADDR, when the dump holds\n"
	"              more than one (a guest can forge one in its RAM: all are listed)\n";

static int snapshot_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' },   { "dump", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, OPT_HELP },
		{ "at", required_argument, NULL, 'a' },	    { "base", required_argument, NULL, 'b' },
		{ 0 },
	};
	const char *shm = NULL, *dump = NULL, *out = NULL, *at = NULL, *base = NULL;
	struct hvtrace_rec *all;
	uint64_t total_cap = 0, n = 0, torn = 0, bad = 0, lost = 0;
	struct hvt_fwriter w;
	struct hvt_chan ch;
	struct hvt_err err;
	uint32_t state;
	unsigned i, rings = 0;
	int opt, rc = 0, live;

	optind = 1;
	while ((opt = next_opt(argc, argv, "snapshot", ":ho:", lo, &rc)) != -1) {
		switch (opt) {
		case 's': shm = optarg; break;
		case 'd': dump = optarg; break;
		case 'a': at = optarg; break;
		case 'b': base = optarg; break;
		case 'o': out = optarg; break;
		case OPT_HELP: fputs(snapshot_help, stdout); return 0;
		default: return rc ? rc : usage_error("snapshot", "unexpected option");
		}
	}
	if (optind < argc)
		return usage_error("snapshot", "unexpected argument '%s'", argv[optind]);
	if (!out)
		return usage_error("snapshot", "-o FILE is required");
	bus_what = shm ? shm : dump;
	if ((rc = open_channel(&ch, "snapshot", shm, dump, at, base)))
		return rc;
	state = hvt_chan_state(&ch);
	live = ch.source == HVT_SRC_SHM &&
	       (state == HVTRACE_STATE_IDLE || state == HVTRACE_STATE_TRACING);
	for (i = 0; i < ch.nr_rings; i++)
		if (ch.ring[i].mode == HVTRACE_RING_OVERWRITE)
			total_cap += ch.ring[i].capacity;
	all = malloc((total_cap ? total_cap : 1) * sizeof(*all));
	if (!all) {
		hvt_chan_close(&ch);
		return fail("snapshot", "out of memory for %llu records", (unsigned long long)total_cap);
	}
	for (i = 0; i < ch.nr_rings; i++) {
		uint64_t t;
		int64_t got;

		if (ch.ring[i].mode != HVTRACE_RING_OVERWRITE)
			continue;
		got = hvt_ring_snapshot(&ch, i, live, all + n, &t, &err);
		if (got < 0) {
			free(all);
			hvt_chan_close(&ch);
			return fail(shm ? shm : dump, "%s", err.msg);
		}
		n += hvt_recs_filter(all + n, (uint64_t)got, &bad);
		torn += t;
		lost += __atomic_load_n(&ch.hdr->rings[i].lost, __ATOMIC_ACQUIRE);
		rings++;
	}
	if (!rings) {
		free(all);
		hvt_chan_close(&ch);
		return fail(shm ? shm : dump, "no overwrite (flight recorder) ring in the channel");
	}
	if (hvt_recs_sort_tsc(all, n) ||
	    hvt_fwriter_open(&w, out, HVTRACE_FILE_SNAPSHOT |
					      (state == HVTRACE_STATE_FROZEN ? HVTRACE_FILE_FROZEN : 0),
			     ch.tsc_hz, ch.nr_vcpus, hvt_chan_freeze(&ch), &err) ||
	    hvt_fwriter_put(&w, all, n, &err) || hvt_fwriter_finish(&w, lost, &err)) {
		free(all);
		hvt_chan_close(&ch);
		return fail(out, "%s", err.msg);
	}
	if (torn)
		warn("snapshot", "%llu records lapped by the producer while copied, thrown away",
		     (unsigned long long)torn);
	if (bad)
		warn("snapshot", "%llu records with an invalid kind, type or marker left out",
		     (unsigned long long)bad);
	printf("hvtrace snapshot: %llu records from %u rings (state %s) -> %s\n", (unsigned long long)n,
	       rings, hvt_state_name(state), out);
	free(all);
	hvt_chan_close(&ch);
	return 0;
}

int cmd_status(int argc, char **argv)
{
	return guarded(status_main, argc, argv);
}

int cmd_record(int argc, char **argv)
{
	return guarded(record_main, argc, argv);
}

int cmd_snapshot(int argc, char **argv)
{
	return guarded(snapshot_main, argc, argv);
}
