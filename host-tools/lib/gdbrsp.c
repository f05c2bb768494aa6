/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: a GDB remote-serial-protocol server over a stopped,
 * read-only target (GDB manual, Appendix E "Remote Serial Protocol"):
 * packet framing, the packets GDB needs to inspect a post-mortem guest
 * (registers, memory, threads, the target description), and branch
 * tracing (qXfer:btrace:read in GDB's BTS format, gdb/features/btrace.dtd)
 * from the flight recorder's records. Over a dump, anything that would
 * change or run the target gets an error reply; over a running guest
 * (t->live, `hvtrace gdb --shm`) the server stops it when GDB attaches,
 * reads and writes registers and memory through the hypervisor, steps
 * the selected vCPU, continues until GDB's interrupt (Ctrl-C, the 0x03
 * byte) and lets the guest go on when GDB detaches; its branch trace is
 * the flight recorder's records read at each stop (live->history).
 *
 * Every byte comes from a client that may be hostile: packets are held in
 * fixed buffers of HVT_GDB_PKT_MAX bytes (a longer one is drained and
 * refused), numbers are parsed with their width checked, and every reply
 * is built within its buffer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

enum frame_state { F_IDLE, F_DATA, F_CK1, F_CK2 };

struct hvt_gdb {
	struct hvt_gdb_target *t;
	hvt_gdb_send_fn send;
	void *ctx;
	size_t sel;			/* Hg: registers, memory, btrace */
	int noack;			/* QStartNoAckMode acknowledged */
	int err_text;			/* the client takes "E.text" (error-message+) */
	int over;			/* detached or killed */
	int running;			/* live: continued, GDB waits for a stop reply */
	int noreply;			/* this packet has no reply (a continue) */
	/* live: GDB's breakpoints and watchpoints in the hypervisor's slots
	 * (refs[n]: GDB's Zn that use the slot's address and length) */
	struct {
		unsigned refs[5];
		unsigned rw, len;	/* as DR7 has them */
		uint64_t addr, kind;	/* kind: its bytes */
	} slot[HVT_GDB_ALL_SLOTS];	/* debug registers, then page slots (instruction only) */
	int swbreak, hwbreak;		/* the client takes these stop reasons */
	/* live: per thread, whether gdb heard of (or need not hear of) the
	 * slots that fired at its stop, and a stop of its own, found at
	 * another thread's, that gdb hears of at its next resume (pending) */
	struct pend {
		int heard, valid;
		const char *why;	/* its stop reason (stop_why) */
		uint64_t at;		/* a watchpoint's address; 0: a breakpoint */
		uint64_t addr;		/* the slot's address and GDB's Zn in it then */
		unsigned types;
	} *pend;
	int failed;			/* send failed */
	size_t list_pos;		/* qsThreadInfo's position */
	uint64_t packets, malformed;
	/* framing */
	enum frame_state st;
	uint8_t raw[HVT_GDB_PKT_MAX];	/* between '$' and '#', as sent */
	size_t nraw;
	int overflow;
	uint8_t sum;
	unsigned ck;
	char pkt[HVT_GDB_PKT_MAX + 1];	/* decoded, NUL-terminated (binary may hold NULs) */
	size_t npkt;
	char reply[HVT_GDB_PKT_MAX + 64];
	size_t nreply;
	uint8_t out[2 * (HVT_GDB_PKT_MAX + 64) + 4];	/* framed; kept for a '-' */
	size_t nout;
};

/* Bit n: GDB's Zn uses slot i (0: the slot is free). */
static unsigned slot_types(const struct hvt_gdb *g, unsigned i)
{
	unsigned t, m = 0;

	for (t = 0; t < 5; t++)
		if (g->slot[i].refs[t])
			m |= 1u << t;
	return m;
}

/* ---------------------------------------------------------------- */
/* Replies */

static void reply(struct hvt_gdb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct hvt_gdb *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(g->reply, sizeof(g->reply), fmt, ap);
	va_end(ap);
	g->nreply = n < 0 ? 0 : (size_t)n < sizeof(g->reply) ? (size_t)n : sizeof(g->reply) - 1;
}

/* An error: "E.text" when the client said it takes one, else "Ecc"
 * (GDB prints both; the code is errno-like: 01 EPERM, 0e EFAULT, 16
 * EINVAL). */
static void reply_err(struct hvt_gdb *g, unsigned code, const char *text)
{
	if (g->err_text)
		reply(g, "E.%s", text);
	else
		reply(g, "E%02x", code & 0xff);
}

static void bad_packet(struct hvt_gdb *g, const char *what)
{
	g->malformed++;
	reply_err(g, 0x16, what);
}

static void put_hex(struct hvt_gdb *g, const void *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len && g->nreply + 2 < sizeof(g->reply); i++) {
		g->reply[g->nreply++] = hex[b[i] >> 4];
		g->reply[g->nreply++] = hex[b[i] & 15];
	}
}

static int send_raw(struct hvt_gdb *g, const void *buf, size_t len)
{
	if (!g->failed && g->send(g->ctx, buf, len))
		g->failed = 1;
	return g->failed ? -1 : 0;
}

/* Frames the reply: $body#cc, with '#', '$', '}' and '*' escaped
 * ('}' then the byte ^ 0x20) so no byte reads as a delimiter or a
 * run-length mark. */
static int send_reply(struct hvt_gdb *g)
{
	uint8_t sum = 0;
	size_t i;

	g->nout = 0;
	g->out[g->nout++] = '$';
	for (i = 0; i < g->nreply; i++) {
		uint8_t c = (uint8_t)g->reply[i];

		if (c == '#' || c == '$' || c == '}' || c == '*') {
			g->out[g->nout++] = '}';
			sum += '}';
			c ^= 0x20;
		}
		g->out[g->nout++] = c;
		sum += c;
	}
	g->nout += (size_t)snprintf((char *)g->out + g->nout, 4, "#%02x", sum);
	return send_raw(g, g->out, g->nout);
}

/* ---------------------------------------------------------------- */
/* Parsing the packet's fields */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A hex number of at most 16 digits at *p, moved past it; -1 if none. */
static int parse_hex(const char **p, uint64_t *v)
{
	unsigned n = 0;

	*v = 0;
	while (hexval(**p) >= 0) {
		if (++n > 16)
			return -1;
		*v = *v << 4 | (uint64_t)hexval(**p);
		(*p)++;
	}
	return n ? 0 : -1;
}

/* "ADDR,LEN" and nothing after (or the byte `end`). */
static int parse_addr_len(const char *p, uint64_t *addr, uint64_t *len, char end)
{
	if (parse_hex(&p, addr) || *p++ != ',' || parse_hex(&p, len))
		return -1;
	return *p == end ? 0 : -1;
}

/* A thread id: a positive hex number, 0 (any) or -1 (all). *id: the
 * thread's index, or SIZE_MAX for 0 / -1. */
static int parse_thread(struct hvt_gdb *g, const char *p, size_t *id, int any_ok)
{
	uint64_t v;

	if (!strcmp(p, "-1") || !strcmp(p, "0")) {
		*id = SIZE_MAX;
		return any_ok ? 0 : -1;
	}
	if (parse_hex(&p, &v) || *p || !v || v > g->t->nth)
		return -1;
	*id = (size_t)(v - 1);
	return 0;
}

/* A number typed by a user: 0x hex or decimal, at most 64 bits. */
static int parse_u64_text(const char **p, uint64_t *v)
{
	const char *s = *p;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		*p = s + 2;
		return parse_hex(p, v);
	}
	*v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (*v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	return 0;
}

static int starts(const char *p, const char *prefix)
{
	return !strncmp(p, prefix, strlen(prefix));
}

/* ---------------------------------------------------------------- */
/* Registers: GDB's x86-64 description (gdb/features/i386/64bit-core.xml,
 * 64bit-sse.xml, 64bit-segments.xml) and the control registers in a
 * feature of our own, which GDB shows as extra registers. Numbers follow
 * the XML's order. What the dump does not hold (x87, SSE; control
 * registers without the QEMU note) is sent as unavailable ("xx"). */
enum { R_RIP = 16, R_EFLAGS, R_CS, R_ST0 = 24, R_FCTRL = 32, R_XMM0 = 40, R_MXCSR = 56,
       R_FS_BASE, R_GS_BASE, R_CR0, R_CR2, R_CR3, R_CR4, R_KGS, R_NR };

static unsigned reg_size(unsigned n)
{
	if (n < R_RIP || n == R_RIP || (n >= R_FS_BASE && n < R_NR))
		return 8;
	if (n >= R_ST0 && n < R_FCTRL)
		return 10;
	if (n >= R_XMM0 && n < R_MXCSR)
		return 16;
	return 4;
}

/* The value of register n (little-endian in buf); 0 when unavailable. */
static int reg_value(const struct hvt_vcpu_regs *c, unsigned n, uint8_t *buf)
{
	uint64_t v;

	if (n < 16)
		v = c->gpr[n];
	else if (n == R_RIP)
		v = c->rip;
	else if (n == R_EFLAGS)
		v = c->rflags;
	else if (n >= R_CS && n < R_CS + 6)
		v = c->seg[n - R_CS];
	else if (n == R_FS_BASE)
		v = c->fs_base;
	else if (n == R_GS_BASE)
		v = c->gs_base;
	else if (n >= R_CR0 && n <= R_CR4 && c->has_sys)
		v = c->cr[n == R_CR0 ? 0 : n - R_CR2 + 2];
	else if (n == R_KGS && c->has_kgs)
		v = c->kernel_gs_base;
	else
		return 0;
	memcpy(buf, &v, reg_size(n));
	return 1;
}

static void put_reg(struct hvt_gdb *g, unsigned n)
{
	uint8_t buf[16];
	unsigned i, size = reg_size(n);

	if (reg_value(g->t->th[g->sel].regs, n, buf)) {
		put_hex(g, buf, size);
		return;
	}
	for (i = 0; i < 2 * size && g->nreply < sizeof(g->reply); i++)
		g->reply[g->nreply++] = 'x';
}

static const char target_xml_head[] =
	"<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target>\n"
	"<architecture>i386:x86-64</architecture>\n"
	"<feature name=\"org.gnu.gdb.i386.core\">\n"
	"<flags id=\"i386_eflags\" size=\"4\">"
	"<field name=\"CF\" start=\"0\" end=\"0\"/><field name=\"\" start=\"1\" end=\"1\"/>"
	"<field name=\"PF\" start=\"2\" end=\"2\"/><field name=\"AF\" start=\"4\" end=\"4\"/>"
	"<field name=\"ZF\" start=\"6\" end=\"6\"/><field name=\"SF\" start=\"7\" end=\"7\"/>"
	"<field name=\"TF\" start=\"8\" end=\"8\"/><field name=\"IF\" start=\"9\" end=\"9\"/>"
	"<field name=\"DF\" start=\"10\" end=\"10\"/><field name=\"OF\" start=\"11\" end=\"11\"/>"
	"<field name=\"NT\" start=\"14\" end=\"14\"/><field name=\"RF\" start=\"16\" end=\"16\"/>"
	"<field name=\"VM\" start=\"17\" end=\"17\"/><field name=\"AC\" start=\"18\" end=\"18\"/>"
	"<field name=\"VIF\" start=\"19\" end=\"19\"/><field name=\"VIP\" start=\"20\" end=\"20\"/>"
	"<field name=\"ID\" start=\"21\" end=\"21\"/></flags>\n";

static const char *const gpr_names[16] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
					    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };
static const char *const seg_names[6] = { "cs", "ss", "ds", "es", "fs", "gs" };
static const char *const fpu_names[8] = { "fctrl", "fstat", "ftag", "fiseg",
					   "fioff", "foseg", "fooff", "fop" };

/* The target description, made once into a static buffer. */
static const char *target_xml(size_t *len)
{
	static char buf[8192];
	static size_t n;
	unsigned i;

#define ADD(...) (n += (size_t)snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__))
	if (n)
		goto done;
	ADD("%s", target_xml_head);
	for (i = 0; i < 16; i++)
		ADD("<reg name=\"%s\" bitsize=\"64\" type=\"%s\"/>\n", gpr_names[i],
		    i == 6 || i == 7 ? "data_ptr" : "int64");
	ADD("<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\"/>\n"
	    "<reg name=\"eflags\" bitsize=\"32\" type=\"i386_eflags\"/>\n");
	for (i = 0; i < 6; i++)
		ADD("<reg name=\"%s\" bitsize=\"32\" type=\"int32\"/>\n", seg_names[i]);
	for (i = 0; i < 8; i++)
		ADD("<reg name=\"st%u\" bitsize=\"80\" type=\"i387_ext\"/>\n", i);
	for (i = 0; i < 8; i++)
		ADD("<reg name=\"%s\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n", fpu_names[i]);
	ADD("</feature>\n<feature name=\"org.gnu.gdb.i386.sse\">\n");
	for (i = 0; i < 16; i++)
		ADD("<reg name=\"xmm%u\" bitsize=\"128\" type=\"uint128\" group=\"vector\"/>\n", i);
	ADD("<reg name=\"mxcsr\" bitsize=\"32\" type=\"int\" group=\"vector\"/>\n</feature>\n"
	    "<feature name=\"org.gnu.gdb.i386.segments\">\n"
	    "<reg name=\"fs_base\" bitsize=\"64\" type=\"int\"/>\n"
	    "<reg name=\"gs_base\" bitsize=\"64\" type=\"int\"/>\n</feature>\n"
	    "<feature name=\"org.hvtrace.x86.sys\">\n"
	    "<reg name=\"cr0\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	    "<reg name=\"cr2\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	    "<reg name=\"cr3\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	    "<reg name=\"cr4\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	    "<reg name=\"k_gs_base\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	    "</feature>\n</target>\n");
#undef ADD
done:
	*len = n;
	return buf;
}

/* ---------------------------------------------------------------- */
/* Threads: one per vCPU, ids 1..nth. */

static void thread_name(const struct hvt_gdb *g, size_t i, char *buf, size_t len)
{
	if (g->t->th[i].regs->has_apic) {
		snprintf(buf, len, "vCPU %zu (APIC ID %u)", i, g->t->th[i].regs->apic_id);
		return;
	}
	snprintf(buf, len, "vCPU %zu (QEMU CPU %u)", i, g->t->th[i].regs->id ? g->t->th[i].regs->id - 1 : 0);
}

/* A growing string for the XML documents. */
struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && (size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		size_t cap = b->cap ? 2 * b->cap : 4096;
		char *np;

		while (cap - b->n <= (size_t)k)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

static char *threads_xml(const struct hvt_gdb *g, size_t *len)
{
	struct sbuf b = { 0 };
	char name[64];
	size_t i;

	sb_add(&b, "<?xml version=\"1.0\"?>\n<threads>\n");
	for (i = 0; i < g->t->nth; i++) {
		thread_name(g, i, name, sizeof(name));
		sb_add(&b, "<thread id=\"%zx\" core=\"%zu\" name=\"vCPU %zu\">%s</thread>\n", i + 1, i, i, name);
	}
	sb_add(&b, "</threads>\n");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.n;
	return b.p;
}

/* ---------------------------------------------------------------- */
/* The branch trace. GDB's BTS format is a list of blocks of straight-line
 * code, newest first, each from the target of a branch to the source of
 * the next (inclusive: the branch instruction itself); GDB walks each
 * block instruction by instruction (reading the code from the target) and
 * classifies calls and returns to build its function-call history. */

static int is_flow(const struct hvtrace_rec *r)
{
	switch (r->kind) {
	case HVTRACE_REC_BRANCH:
	case HVTRACE_REC_FAR:
	case HVTRACE_REC_INTERRUPT:
	case HVTRACE_REC_EXCEPTION:
		return r->from != HVTRACE_ADDR_KERNEL && r->to != HVTRACE_ADDR_KERNEL;
	default:
		return 0;
	}
}

/* Where the history restarts: records lost just before r (a LOST record,
 * a gap marker) or tracing (re)started; what came before is not one path
 * with what follows. */
static int is_gap(const struct hvtrace_rec *r)
{
	return r->kind == HVTRACE_REC_LOST ||
	       (r->kind == HVTRACE_REC_MARKER && (r->aux == HVTRACE_MARK_GAP || r->aux == HVTRACE_MARK_START));
}

/* A block GDB could walk: it runs forward, and not absurdly far (a block
 * that does not is a sign of records missing in between; GDB would
 * decode megabytes of whatever lies there). */
#define BLOCK_MAX (1u << 20)

static int make_btrace(struct hvt_gdb *g, struct hvt_gdb_thread *th)
{
	struct sbuf b = { 0 };
	uint64_t i, last = UINT64_MAX, start = 0;

	for (i = 0; i < th->nr; i++)
		if (is_gap(&th->recs[i]))
			start = i + 1;
	for (i = th->nr; i-- > start;)
		if (is_flow(&th->recs[i])) {
			last = i;
			break;
		}
	sb_add(&b, "<?xml version=\"1.0\"?>\n<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n");
	if (last != UINT64_MAX) {
		const struct hvtrace_rec *r = &th->recs[last];
		uint64_t end = r->to, rip = th->regs->rip;

		/* the newest block: from the last branch's target to the RIP
		 * when that lies a little way on (GDB takes it as the current
		 * instruction, not yet executed); else the target alone, which
		 * GDB drops as current (where the vCPU went after the freeze is
		 * not recorded) */
		if (rip >= r->to && rip - r->to < (g->t->trace_live ? 4096 : 256))
			end = rip;
		sb_add(&b, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n", (unsigned long long)r->to,
		       (unsigned long long)end);
		for (i = last; i-- > start;) {
			const struct hvtrace_rec *p = &th->recs[i];

			if (!is_flow(p))
				continue;
			if (r->from < p->to || r->from - p->to > BLOCK_MAX)
				break;	/* not straight-line code: the history starts after it */
			sb_add(&b, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n", (unsigned long long)p->to,
			       (unsigned long long)r->from);
			r = p;
		}
	}
	sb_add(&b, "</btrace>\n");
	if (b.oom) {
		free(b.p);
		return -1;
	}
	th->btrace = b.p;
	th->btrace_len = b.n;
	return 0;
}

/* Live: the guest ran (or is about to), so every thread's history and the
 * document made from it are stale; GDB's next read of what is new gets
 * the whole trace again, read afresh at that stop. */
static void btrace_forget(struct hvt_gdb *g)
{
	size_t i;

	for (i = 0; i < g->t->nth; i++) {
		free(g->t->th[i].btrace);
		g->t->th[i].btrace = NULL;
		g->t->th[i].btrace_len = 0;
		g->t->th[i].sent = 0;
	}
}

/* Live: the branch trace is served (the server reads the flight recorder). */
static int live_btrace(const struct hvt_gdb *g)
{
	return g->t->live && g->t->live->history;
}

/* ---------------------------------------------------------------- */
/* qXfer:OBJECT:read:ANNEX:OFFSET,LENGTH: a slice of a document. */

static void reply_slice(struct hvt_gdb *g, const char *doc, size_t len, uint64_t off, uint64_t want)
{
	size_t k;

	if (off >= len) {
		reply(g, "l");
		return;
	}
	if (want > HVT_GDB_PKT_MAX - 8)
		want = HVT_GDB_PKT_MAX - 8;
	k = len - off < want ? len - off : (size_t)want;
	g->reply[0] = k == len - off ? 'l' : 'm';
	memcpy(g->reply + 1, doc + off, k);
	g->nreply = 1 + k;
}

static void handle_xfer(struct hvt_gdb *g, const char *p)
{
	char object[32], annex[64];
	const char *colon;
	uint64_t off, len;
	size_t n;

	/* OBJECT:read:ANNEX:OFF,LEN */
	colon = strchr(p, ':');
	if (!colon || (size_t)(colon - p) >= sizeof(object))
		return bad_packet(g, "malformed qXfer");
	memcpy(object, p, (size_t)(colon - p));
	object[colon - p] = 0;
	p = colon + 1;
	if (!starts(p, "read:")) {
		reply(g, "%s", "");	/* writes are not supported */
		return;
	}
	p += 5;
	colon = strchr(p, ':');
	if (!colon || (size_t)(colon - p) >= sizeof(annex))
		return bad_packet(g, "malformed qXfer annex");
	memcpy(annex, p, (size_t)(colon - p));
	annex[colon - p] = 0;
	if (parse_addr_len(colon + 1, &off, &len, 0))
		return bad_packet(g, "malformed qXfer offset,length");
	if (!strcmp(object, "features")) {
		const char *doc = target_xml(&n);

		if (strcmp(annex, "target.xml"))
			return reply_err(g, 0x0e, "no such target description");
		return reply_slice(g, doc, n, off, len);
	}
	if (!strcmp(object, "threads")) {
		char *doc = threads_xml(g, &n);

		if (!doc)
			return reply_err(g, 0x0c, "out of memory");
		reply_slice(g, doc, n, off, len);
		free(doc);
		return;
	}
	if (!strcmp(object, "exec-file")) {	/* the annex: a process id, there is one */
		if (!g->t->exec_file)
			return reply_err(g, 0x02, "no symbol file (hvtrace gdb --symbols)");
		return reply_slice(g, g->t->exec_file, strlen(g->t->exec_file), off, len);
	}
	if (!strcmp(object, "btrace-conf")) {
		char doc[256], bts[64] = "";
		int k;

		if (g->t->th[g->sel].bts)
			snprintf(bts, sizeof(bts), "<bts size=\"0x%llx\"/>", (unsigned long long)g->t->bts_size);
		k = snprintf(doc, sizeof(doc),
			     "<?xml version=\"1.0\"?>\n<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n"
			     "<btrace-conf version=\"1.0\">%s</btrace-conf>\n", bts);

		return reply_slice(g, doc, k > 0 && (size_t)k < sizeof(doc) ? (size_t)k : 0, off, len);
	}
	if (!strcmp(object, "btrace")) {
		struct hvt_gdb_thread *th = &g->t->th[g->sel];
		static const char empty[] = "<?xml version=\"1.0\"?>\n<btrace version=\"1.0\"/>\n";

		/* GDB asks for a delta first: the trace since the PC where it
		 * turned tracing on, which a dump's history is not; refused,
		 * it asks for what is new (all of it once, then nothing until
		 * the target runs again: never for a dump, at each resume
		 * live) and, failing that, for all. */
		if (!strcmp(annex, "delta"))
			return reply_err(g, 0x16, "no delta trace: read new or all");
		if (strcmp(annex, "all") && strcmp(annex, "new"))
			return reply_err(g, 0x16, "unknown btrace read");
		if (!th->bts)
			return reply_err(g, 0x16, "branch tracing is not on (record btrace bts)");
		if (!strcmp(annex, "new") && th->sent && !off)
			th->sent = 2;	/* this read (all its slices) is of nothing new */
		else if (!off)
			th->sent = 1;
		if (th->sent == 2)
			return reply_slice(g, empty, sizeof(empty) - 1, off, len);
		if (!th->btrace && g->t->live &&
		    (!g->t->live->history || g->t->live->history(g->t->live->ctx, g->sel)))
			return reply_err(g, 0x05, "the flight recorder could not be read");
		if (!th->btrace && make_btrace(g, th))
			return reply_err(g, 0x0c, "out of memory");
		return reply_slice(g, th->btrace, th->btrace_len, off, len);
	}
	reply(g, "%s", "");
}

/* ---------------------------------------------------------------- */
/* monitor (qRcmd): commands for what GDB has no packet for. */

static void monitor_out(struct hvt_gdb *g, const char *text)
{
	g->nreply = 0;
	put_hex(g, text, strlen(text));
}

static const char monitor_help_dump[] =
	"hvtrace gdb (a memory dump, read-only) monitor commands:\n"
	"  phys ADDR LEN     guest-physical memory (LEN <= 1024)\n"
	"  translate ADDR    the selected vCPU's linear ADDR through its page tables\n"
	"  help              this list\n";
static const char monitor_help_live[] =
	"hvtrace gdb --shm (a running guest) monitor commands:\n"
	"  phys ADDR LEN     guest-physical memory, guest RAM only (LEN <= 1024)\n"
	"  translate ADDR    the selected vCPU's linear ADDR through its page tables\n"
	"  slots             GDB's breakpoints and watchpoints in the hypervisor's slots (4 debug registers, 28 page slots)\n"
	"  help              this list\n";

static void handle_monitor(struct hvt_gdb *g, const char *hex)
{
	const struct hvt_gdb_live *l = g->t->live;
	char cmd[256], out[6000];
	size_t n = 0, o = 0;
	uint64_t a, len;
	const char *p;

	while (hex[0] && hex[1] && n + 1 < sizeof(cmd)) {
		int hi = hexval(hex[0]), lo = hexval(hex[1]);

		if (hi < 0 || lo < 0)
			return bad_packet(g, "malformed qRcmd");
		cmd[n++] = (char)(hi << 4 | lo);
		hex += 2;
	}
	if (*hex)
		return bad_packet(g, "malformed qRcmd");
	cmd[n] = 0;
	if (strlen(cmd) != n)
		return bad_packet(g, "NUL in qRcmd");
	if (starts(cmd, "phys ")) {
		uint8_t buf[1024];
		uint64_t i;
		int bad;

		p = cmd + 5;
		if (parse_u64_text(&p, &a) || *p++ != ' ' || parse_u64_text(&p, &len) || *p) {
			monitor_out(g, "usage: monitor phys ADDR LEN (guest-physical, LEN <= 1024)\n");
			return;
		}
		bad = !len || len > sizeof(buf);
		if (!bad)
			bad = l ? !l->read_phys || l->read_phys(l->ctx, g->sel, a, buf, len)
				: hvt_dump_read_phys(g->t->dump, a, buf, len);
		if (bad) {
			snprintf(out, sizeof(out), "Cannot access guest-physical memory at 0x%llx (%llu bytes)\n",
				 (unsigned long long)a, (unsigned long long)len);
			monitor_out(g, out);
			return;
		}
		for (i = 0; i < len; i += 16) {
			uint64_t j, m = len - i < 16 ? len - i : 16;

			o += (size_t)snprintf(out + o, sizeof(out) - o, "0x%016llx:", (unsigned long long)(a + i));
			for (j = 0; j < m; j++)
				o += (size_t)snprintf(out + o, sizeof(out) - o, " %02x", buf[i + j]);
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\n");
		}
		monitor_out(g, out);
		return;
	}
	if (starts(cmd, "translate ")) {
		uint64_t pa, left;

		p = cmd + 10;
		if (parse_u64_text(&p, &a) || *p) {
			monitor_out(g, "usage: monitor translate ADDR (a linear address of the selected vCPU)\n");
			return;
		}
		if (l ? !l->translate || l->translate(l->ctx, g->sel, a, &pa)
		      : hvt_vcpu_translate(g->t->dump, g->t->th[g->sel].regs, a, &pa, &left))
			snprintf(out, sizeof(out), "0x%llx: not mapped\n", (unsigned long long)a);
		else
			snprintf(out, sizeof(out), "0x%llx -> guest-physical 0x%llx\n", (unsigned long long)a,
				 (unsigned long long)pa);
		monitor_out(g, out);
		return;
	}
	if (l && !strcmp(cmd, "slots")) {
		static const char *const what[] = { "break", "hbreak", "watch", "rwatch", "awatch" };
		unsigned i, t;

		for (i = 0; i < HVT_GDB_ALL_SLOTS; i++) {
			if (i >= HVT_GDB_SLOTS && !slot_types(g, i))
				continue;	/* page slots: those in use */
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s %u:", i < HVT_GDB_SLOTS ? "slot" : "page slot", i);
			if (!slot_types(g, i))
				o += (size_t)snprintf(out + o, sizeof(out) - o, " free");
			for (t = 0; t < 5; t++)
				if (g->slot[i].refs[t])
					o += (size_t)snprintf(out + o, sizeof(out) - o, " %s", what[t]);
			if (slot_types(g, i))
				o += (size_t)snprintf(out + o, sizeof(out) - o, " 0x%llx, %llu byte%s",
						      (unsigned long long)g->slot[i].addr,
						      (unsigned long long)g->slot[i].kind, g->slot[i].kind > 1 ? "s" : "");
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\n");
		}
		monitor_out(g, out);
		return;
	}
	if (strcmp(cmd, "help")) {
		snprintf(out, sizeof(out), "unknown monitor command '%.64s'\n%s", cmd,
			 l ? monitor_help_live : monitor_help_dump);
		monitor_out(g, out);
		return;
	}
	monitor_out(g, l ? monitor_help_live : monitor_help_dump);
}

/* ---------------------------------------------------------------- */
/* The packets */

static void handle_query(struct hvt_gdb *g, const char *p)
{
	char name[64];
	size_t id;

	if (starts(p, "qSupported")) {
		g->err_text = strstr(p, "error-message+") != NULL;
		/* a stop at a breakpoint is reported with its reason, so GDB
		 * never moves the PC back over an INT3 that is not there */
		g->swbreak = strstr(p, "swbreak+") != NULL;
		g->hwbreak = strstr(p, "hwbreak+") != NULL;
		if (g->t->live)	/* the branch history when the server can read it */
			reply(g, "PacketSize=%x;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;"
				 "swbreak+;hwbreak+%s%s",
			      HVT_GDB_PKT_MAX,
			      live_btrace(g) ? ";qXfer:btrace:read+;qXfer:btrace-conf:read+;Qbtrace:bts+;"
					       "Qbtrace:off+;Qbtrace:pt-" : "",
			      g->t->exec_file ? ";qXfer:exec-file:read+" : "");
		else
			reply(g, "PacketSize=%x;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;"
				 "qXfer:btrace:read+;qXfer:btrace-conf:read+;Qbtrace:bts+;Qbtrace:off+;"
				 "Qbtrace:pt-%s",
			      HVT_GDB_PKT_MAX, g->t->exec_file ? ";qXfer:exec-file:read+" : "");
	} else if (!strcmp(p, "qAttached")) {
		reply(g, "1");	/* detaching leaves the target as it is (live: running) */
	} else if (!strcmp(p, "qC")) {
		reply(g, "QC%zx", g->sel + 1);
	} else if (!strcmp(p, "qfThreadInfo") || !strcmp(p, "qsThreadInfo")) {
		if (p[1] == 'f')
			g->list_pos = 0;
		if (g->list_pos >= g->t->nth) {
			reply(g, "l");
			return;
		}
		g->nreply = 0;
		g->reply[g->nreply++] = 'm';
		while (g->list_pos < g->t->nth && g->nreply < HVT_GDB_PKT_MAX - 32)
			g->nreply += (size_t)snprintf(g->reply + g->nreply, 32, "%s%zx",
						      g->nreply > 1 ? "," : "", ++g->list_pos);
	} else if (starts(p, "qThreadExtraInfo,")) {
		if (parse_thread(g, p + 17, &id, 0))
			return bad_packet(g, "no such thread");
		thread_name(g, id, name, sizeof(name));
		g->nreply = 0;
		put_hex(g, name, strlen(name));
	} else if (starts(p, "qXfer:")) {
		handle_xfer(g, p + 6);
	} else if (starts(p, "qRcmd,")) {
		handle_monitor(g, p + 6);
	} else if (starts(p, "qSymbol")) {
		reply(g, "OK");
	} else {
		reply(g, "%s", "");	/* unsupported: qOffsets, qTStatus, ... */
	}
}

static void handle_memory(struct hvt_gdb *g, const char *p)
{
	uint8_t buf[HVT_GDB_PKT_MAX / 2];
	uint64_t addr, len;
	int64_t k;

	if (parse_addr_len(p, &addr, &len, 0))
		return bad_packet(g, "malformed m packet");
	if (!len) {
		reply(g, "%s", "");
		return;
	}
	if (len > sizeof(buf) - 8)
		len = sizeof(buf) - 8;	/* GDB takes a shorter read and asks again */
	if (g->t->live)
		k = g->t->live->read(g->t->live->ctx, g->sel, addr, buf, len);
	else
		k = hvt_vcpu_read(g->t->dump, g->t->th[g->sel].regs, addr, buf, len);
	if (k < 0)
		return reply_err(g, 0x0e, "memory not mapped or not in the dump");
	g->nreply = 0;
	put_hex(g, buf, (size_t)k);
}

/* M: "ADDR,LEN:HEX", written through the selected vCPU (live). */
static void handle_write_memory(struct hvt_gdb *g, const char *p)
{
	uint8_t buf[HVT_GDB_PKT_MAX / 2];
	uint64_t addr, len, i;

	if (parse_addr_len(p, &addr, &len, ':'))
		return bad_packet(g, "malformed M packet");
	p = strchr(p, ':') + 1;
	if (len > sizeof(buf) || strlen(p) != 2 * len)
		return bad_packet(g, "M: the data is not LEN bytes");
	for (i = 0; i < len; i++) {
		int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return bad_packet(g, "M: not hex");
		buf[i] = (uint8_t)(hi << 4 | lo);
	}
	if (len && g->t->live->write(g->t->live->ctx, g->sel, addr, buf, len))
		return reply_err(g, 0x0e, "memory not mapped, not writable or not guest RAM");
	reply(g, "OK");
}

/* Register n of r := the len bytes at val (little-endian): only the
 * general registers, RIP and EFLAGS change; another register written with
 * its own value is accepted, any other value refused. */
static int reg_assign(struct hvt_vcpu_regs *r, unsigned n, const uint8_t *val)
{
	uint8_t cur[16];
	uint64_t v = 0;
	unsigned size = reg_size(n);

	if (n < 16 || n == R_RIP || n == R_EFLAGS) {
		memcpy(&v, val, size);
		if (n < 16)
			r->gpr[n] = v;
		else if (n == R_RIP)
			r->rip = v;
		else
			r->rflags = v;
		return 0;
	}
	return reg_value(r, n, cur) && !memcmp(cur, val, size) ? 0 : -1;
}

/* Hex into bytes: exactly 2 * len digits at *p, moved past them. */
static int parse_bytes(const char **p, uint8_t *out, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		int hi = hexval((*p)[0]), lo = hi < 0 ? -1 : hexval((*p)[1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
		*p += 2;
	}
	return 0;
}

/* P n=VALUE and G (every register, in 'g' order; 'x' digits: left alone) */
static void handle_write_regs(struct hvt_gdb *g, const char *p)
{
	struct hvt_vcpu_regs r = *g->t->th[g->sel].regs;
	uint8_t val[16];
	uint64_t n;
	unsigned i;

	if (p[0] == 'P') {
		p++;
		if (parse_hex(&p, &n) || *p++ != '=')
			return bad_packet(g, "malformed P");
		if (n >= R_NR)
			return reply_err(g, 0x16, "no such register");
		if (parse_bytes(&p, val, reg_size((unsigned)n)) || *p)
			return bad_packet(g, "P: the value is not the register's size");
		if (reg_assign(&r, (unsigned)n, val))
			return reply_err(g, 0x16, "only the general registers, rip and eflags can be written");
	} else {
		for (p++, i = 0; i < R_NR && *p; i++) {
			unsigned size = reg_size(i);

			if (p[0] == 'x') {
				if (strspn(p, "x") < 2 * size)
					return bad_packet(g, "malformed G");
				p += 2 * size;
				continue;
			}
			if (parse_bytes(&p, val, size))
				return bad_packet(g, "malformed G");
			if (reg_assign(&r, i, val))
				return reply_err(g, 0x16, "only the general registers, rip and eflags can be written");
		}
		if (*p)
			return bad_packet(g, "G: more than the registers");
	}
	if (g->t->live->set_regs(g->t->live->ctx, g->sel, &r))
		return reply_err(g, 0x16, "the hypervisor refused the registers");
	reply(g, "OK");
}

/* Why a thread stopped, from the slots that fired (`hits`): the reason GDB
 * can use, a watchpoint's address first (it reads the value and says
 * Old/New), else the breakpoint's kind; `slot`: the slot it names, -1 for
 * none GDB has now. */
struct stop_why {
	const char *why;
	uint64_t at;
	int slot;
};

static struct stop_why stop_why(const struct hvt_gdb *g, uint32_t hits)
{
	struct stop_why w = { "", 0, -1 };
	unsigned i;

	for (i = 0; i < HVT_GDB_ALL_SLOTS; i++) {
		unsigned t = slot_types(g, i);

		if (!(hits & (1u << i)) || !t)
			continue;
		if (t & (1u << 2 | 1u << 3 | 1u << 4)) {
			w.why = t & (1u << 2) ? "watch" : t & (1u << 4) ? "awatch" : "rwatch";
			w.at = g->slot[i].addr;
			w.slot = (int)i;
			break;
		}
		if (w.slot < 0)
			w.slot = (int)i;
		if ((t & 1u) && g->swbreak && !w.why[0])
			w.why = "swbreak";
		else if ((t & 2u) && g->hwbreak && !w.why[0])
			w.why = "hwbreak";
	}
	return w;
}

static void stop_reply_why(struct hvt_gdb *g, unsigned sig, const struct stop_why *w)
{
	if (w->at)
		reply(g, "T%02xthread:%zx;%s:%llx;", sig, g->sel + 1, w->why, (unsigned long long)w->at);
	else if (w->why[0])
		reply(g, "T%02xthread:%zx;%s:;", sig, g->sel + 1, w->why);
	else
		reply(g, "T%02xthread:%zx;", sig, g->sel + 1);
}

/*
 * Live: the other vCPUs that reached a breakpoint or watchpoint of GDB's
 * at this stop too (two at once: the first holds the guest, the second,
 * a watchpoint's trap already past its access, is held with its slots in
 * its `hits`): each kept pending, with its reason as the slots say now
 * (GDB removes its breakpoints once it has the stop reply, and may put
 * them back in other slots), to be reported at GDB's next resume as an
 * immediate stop, the guest still held (gdbserver's pending events in
 * all-stop mode). `skip`: the thread whose stop is being reported.
 */
static void pend_scan(struct hvt_gdb *g, size_t skip)
{
	const struct hvt_gdb_live *l = g->t->live;
	size_t i;

	if (!g->pend || !l->hits)
		return;
	for (i = 0; i < g->t->nth; i++) {
		struct pend *p = &g->pend[i];
		struct stop_why w;
		uint32_t hits;

		if (i == skip || p->heard || p->valid || !(hits = l->hits(l->ctx, i)))
			continue;
		p->heard = 1;
		w = stop_why(g, hits);
		if (w.slot < 0)
			continue;	/* none of GDB's */
		*p = (struct pend){ .heard = 1, .valid = 1, .why = w.why, .at = w.at, .addr = g->slot[w.slot].addr,
				    .types = slot_types(g, w.slot) };
	}
}

/* The stop reply for the selected thread (SIGTRAP after a step or an
 * attach, SIGINT after GDB's interrupt); the other threads' stops at
 * this one kept pending (pend_scan). */
static void stop_reply(struct hvt_gdb *g, unsigned sig)
{
	const struct hvt_gdb_live *l = g->t->live;
	uint32_t hits = sig == 5 && l && l->hits ? l->hits(l->ctx, g->sel) : 0;
	struct stop_why w = stop_why(g, hits);

	if (g->pend && sig == 5)
		g->pend[g->sel].heard = 1;
	if (l)
		pend_scan(g, sig == 5 ? g->sel : SIZE_MAX);
	stop_reply_why(g, sig, &w);
}

/* A pending stop of thread th reported, the guest still held: 1; 0 when
 * it has none, or one whose breakpoint or watchpoint GDB no longer has
 * (dropped, as gdbserver drops a removed breakpoint's) */
static int pend_report(struct hvt_gdb *g, size_t th)
{
	struct pend *p = g->pend ? &g->pend[th] : NULL;
	unsigned i;

	if (!p || !p->valid)
		return 0;
	p->valid = 0;
	for (i = 0; i < HVT_GDB_ALL_SLOTS; i++)
		if ((slot_types(g, i) & p->types) && g->slot[i].addr == p->addr)
			break;
	if (i == HVT_GDB_ALL_SLOTS)
		return 0;
	g->sel = th;
	stop_reply_why(g, 5, &(struct stop_why){ p->why, p->at, (int)i });
	return 1;
}

/* c/s/vCont (live): continue every vCPU, or step the selected one. A
 * continue has no reply until GDB interrupts (hvt_gdb_input). A thread
 * with a pending stop is reported at once instead: the one to step, or
 * for a continue any (the lowest first). */
static void live_resume(struct hvt_gdb *g, int step, size_t th)
{
	const struct hvt_gdb_live *l = g->t->live;
	size_t i;

	btrace_forget(g);	/* the guest runs: its history goes on */
	if (step) {
		if (pend_report(g, th))
			return;
		if (g->pend)
			g->pend[th].heard = 0;	/* it runs: its slots fire anew */
		if (l->step(l->ctx, th))
			return reply_err(g, 0x01, "the step failed (the vCPU did not stop again)");
		g->sel = th;
		return stop_reply(g, 5);
	}
	for (i = 0; g->pend && i < g->t->nth; i++)
		if (pend_report(g, i))
			return;
	if (l->resume(l->ctx))
		return reply_err(g, 0x01, "the hypervisor did not resume the guest");
	if (g->pend)
		memset(g->pend, 0, g->t->nth * sizeof(*g->pend));
	g->running = 1;
	g->noreply = 1;
}

/* vCont;ACTION[:THREAD]...: the first action is taken (s for a thread
 * steps it, c continues all); GDB sends one of these. */
static void handle_vcont(struct hvt_gdb *g, const char *p)
{
	size_t id = g->sel;
	char act = p[0];

	if ((act != 'c' && act != 's') || (p[1] && p[1] != ':' && p[1] != ';'))
		return reply_err(g, 0x16, "vCont: only c and s");
	if (p[1] == ':') {
		char t[24];
		size_t k = strcspn(p + 2, ";");

		if (k >= sizeof(t))
			return bad_packet(g, "vCont: bad thread");
		memcpy(t, p + 2, k);
		t[k] = 0;
		if (parse_thread(g, t, &id, 1))
			return bad_packet(g, "vCont: no such thread");
		if (id == SIZE_MAX)
			id = g->sel;
	}
	live_resume(g, act == 's', id);
}

/*
 * Z0-Z4/z0-z4 (live): GDB's breakpoints and watchpoints in the
 * hypervisor's slots (its debug registers; nothing is ever written into
 * the guest's memory). Z0 (software) and Z1 (hardware) are both
 * instruction breakpoints there; Z2 is a write watchpoint, Z4 a read or
 * write one, and Z3 (read) is read or write too (x86 has no read-only
 * breakpoint: GDB then reports a read when the value did not change).
 * A debug register watches 1, 2, 4 or 8 bytes aligned to their length
 * (SDM Vol. 3 18.2.5): a longer or misaligned range takes one slot per
 * aligned piece, largest first (as GDB's own x86 code splits it), all
 * or none. A write watchpoint the free debug registers cannot hold takes
 * page slots instead (ABI 1.13: the hypervisor takes write from the page
 * in the nested tables), one per page it spans, any length; a read or
 * access watchpoint cannot (the tables do not refuse reads alone). GDB's
 * breakpoints and watchpoints of one kind on one piece share its slot
 * (counted). GDB inserts before each resume and removes at each stop;
 * what does not fit gets an error ("Couldn't write debug register",
 * "Could not insert hardware watchpoint").
 */
struct z_piece {
	uint64_t addr, kind;
	unsigned len;		/* DR7's LEN of kind; in a page slot, kind (bytes) */
	unsigned slot;		/* its slot (insert: HVT_GDB_ALL_SLOTS until given one) */
};
#define Z_PAGE_PIECES 4	/* a page watchpoint of up to 3 pages and a bit */

/* The aligned pieces of [addr, addr + kind): how many (at most `max`), 0 when more. */
static unsigned z_pieces(uint64_t addr, uint64_t kind, struct z_piece *p, unsigned max)
{
	unsigned n = 0;

	while (kind) {
		uint64_t size = 8;

		while (size > kind || (addr & (size - 1)))
			size >>= 1;
		if (n == max)
			return 0;
		p[n].addr = addr;
		p[n].kind = size;
		p[n].len = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 3 : 2;
		n++;
		addr += size;
		kind -= size;
	}
	return n;
}

/* The pieces of [addr, addr + kind) within one page each, for page slots:
 * how many (at most `max`), 0 when more. */
static unsigned z_page_pieces(uint64_t addr, uint64_t kind, struct z_piece *p, unsigned max)
{
	unsigned n = 0;

	while (kind) {
		uint64_t size = 4096 - (addr & 4095);

		if (size > kind)
			size = kind;
		if (n == max)
			return 0;
		p[n] = (struct z_piece){ .addr = addr, .kind = size, .len = (unsigned)size };
		n++;
		addr += size;
		kind -= size;
	}
	return n;
}

/* The slot of a piece (a watchpoint's: among the debug registers, or,
 * `pages`, the page slots; a breakpoint's: any) */
static unsigned z_find(const struct hvt_gdb *g, uint64_t addr, unsigned rw, unsigned len, int pages)
{
	unsigned i, from = pages ? HVT_GDB_SLOTS : 0, to = pages || !rw ? HVT_GDB_ALL_SLOTS : HVT_GDB_SLOTS;

	for (i = from; i < to; i++)
		if (slot_types(g, i) && g->slot[i].addr == addr && g->slot[i].rw == rw && g->slot[i].len == len)
			return i;
	return HVT_GDB_ALL_SLOTS;
}

/* The pieces' slots (z_find): whether each has one holding GDB's Zn of `type` */
static int z_all_found(const struct hvt_gdb *g, struct z_piece *pc, unsigned n, unsigned rw, unsigned type,
		       int pages)
{
	unsigned k;

	for (k = 0; k < n; k++) {
		pc[k].slot = z_find(g, pc[k].addr, rw, pc[k].len, pages);
		if (pc[k].slot == HVT_GDB_ALL_SLOTS || !g->slot[pc[k].slot].refs[type])
			return 0;
	}
	return 1;
}

static void handle_z(struct hvt_gdb *g, const char *p)
{
	const struct hvt_gdb_live *l = g->t->live;
	int on = p[0] == 'Z', pages = 0;
	unsigned type = (unsigned)(p[1] - '0'), rw, n = 0, k, i, fresh = 0, free_drs = 0;
	struct z_piece pc[Z_PAGE_PIECES > HVT_GDB_SLOTS ? Z_PAGE_PIECES : HVT_GDB_SLOTS];
	uint64_t addr, kind;

	if (p[1] < '0' || p[1] > '4' || p[2] != ',' || parse_addr_len(p + 3, &addr, &kind, 0))
		return bad_packet(g, "malformed Z/z");
	if (type < 2) {
		if (kind != 1)
			return reply_err(g, 0x16, "an x86 breakpoint is 1 byte (kind 1)");
		rw = 0;
		n = 1;
		pc[0] = (struct z_piece){ .addr = addr, .kind = 1, .len = 0 };
	} else {
		int wrap = !kind || addr + kind - 1 < addr;

		rw = type == 2 ? 1 : 3;
		n = wrap ? 0 : z_pieces(addr, kind, pc, HVT_GDB_SLOTS);
		for (i = 0; i < HVT_GDB_SLOTS; i++)
			free_drs += !slot_types(g, i);
		/* a write watchpoint: in page slots where it is there already (z, or Z of
		 * one there), or the debug registers cannot hold it whole */
		if (type == 2 && !wrap) {
			struct z_piece pp[Z_PAGE_PIECES];
			unsigned np = z_page_pieces(addr, kind, pp, Z_PAGE_PIECES);

			if (np && (z_all_found(g, pp, np, rw, type, 1) ||
				   (on && (!n || (!z_all_found(g, pc, n, rw, type, 0) && n > free_drs))))) {
				memcpy(pc, pp, sizeof(pp));
				n = np;
				pages = 1;
			}
		}
		if (!n)
			return reply_err(g, 0x16, type == 2 ? "a write watchpoint over more than 3 pages"
							    : "a watchpoint the 4 debug registers cannot cover "
							      "(each watches 1, 2, 4 or 8 aligned bytes; a read or "
							      "access watchpoint needs them)");
	}
	for (k = 0; k < n; k++)
		pc[k].slot = z_find(g, pc[k].addr, rw, pc[k].len, pages);
	if (!on) {
		/* all its pieces must be there with this type, else it was not inserted */
		if (!z_all_found(g, pc, n, rw, type, pages)) {
			reply(g, "OK");	/* not inserted: nothing to remove */
			return;
		}
		for (k = 0; k < n; k++) {
			i = pc[k].slot;
			if (slot_types(g, i) == 1u << type && g->slot[i].refs[type] == 1 &&
			    l->set_hw(l->ctx, i, 0, 0, 0, 0, 0))
				return reply_err(g, 0x16, "the hypervisor did not clear the breakpoint");
			g->slot[i].refs[type]--;
		}
		reply(g, "OK");
		return;
	}
	/* the free slots for the pieces that have none, then all set or none:
	 * a debug register while one is free, else, for a breakpoint, a page
	 * slot (the hypervisor takes execute from its page); a write
	 * watchpoint's page pieces, page slots (write taken from the page) */
	for (k = 0, i = pages ? HVT_GDB_SLOTS : 0; k < n; k++) {
		if (pc[k].slot != HVT_GDB_ALL_SLOTS)
			continue;
		while (i < HVT_GDB_SLOTS && slot_types(g, i))
			i++;
		if (i >= HVT_GDB_SLOTS && (type < 2 || pages))
			while (i < HVT_GDB_ALL_SLOTS && slot_types(g, i))
				i++;
		if (i >= (type < 2 || pages ? HVT_GDB_ALL_SLOTS : HVT_GDB_SLOTS))
			return reply_err(g, 0x1c, type < 2 || pages ? "the debugger's 32 slots are all in use"
								    : "the debug registers are all in use (a read or "
								      "access watchpoint needs one: the nested tables "
								      "cannot watch reads; a write watchpoint or a "
								      "breakpoint beyond them takes a page slot)");
		pc[k].slot = i++;
		fresh |= 1u << k;
	}
	for (k = 0; k < n; k++) {
		if (!(fresh & (1u << k)))
			continue;
		if (l->set_hw(l->ctx, pc[k].slot, 1, rw, pc[k].len, pc[k].addr, g->sel)) {
			while (k--)
				if (fresh & (1u << k))
					l->set_hw(l->ctx, pc[k].slot, 0, 0, 0, 0, 0);
			return reply_err(g, 0x16, "the hypervisor refused the breakpoint");
		}
	}
	for (k = 0; k < n; k++) {
		i = pc[k].slot;
		if (fresh & (1u << k)) {
			memset(g->slot[i].refs, 0, sizeof(g->slot[i].refs));
			g->slot[i].rw = rw;
			g->slot[i].len = pc[k].len;
			g->slot[i].addr = pc[k].addr;
			g->slot[i].kind = pc[k].kind;
		}
		g->slot[i].refs[type]++;
	}
	reply(g, "OK");
}

/* Qbtrace:bts / Qbtrace:off: the history is the flight recorder's (the
 * dump's, or the running guest's as of its last stop): nothing starts or
 * stops, GDB is only told (btrace-conf) what it asked for. */
static void handle_qbtrace(struct hvt_gdb *g, const char *fmt)
{
	struct hvt_gdb_thread *th = &g->t->th[g->sel];
	int on = !strcmp(fmt, "bts");

	if (!on && strcmp(fmt, "off"))
		return reply_err(g, 0x16, "only the bts format: the flight recorder's branch records");
	if (on && g->t->live && !g->t->bts_size)
		return reply_err(g, 0x16, "no flight recorder in the channel (flight.size)");
	if (th->bts == on)
		reply_err(g, 0x16, on ? "branch tracing already on" : "branch tracing not on");
	else
		reply(g, "OK");
	th->bts = on;
	th->sent = 0;
}

static const char resume_msg[] =
	"hvtrace gdb: the target is a memory dump: it cannot continue or step "
	"(the live mode is not built yet)\n";

static void handle_packet(struct hvt_gdb *g)
{
	const char *p = g->pkt;
	uint64_t n;
	size_t id;
	unsigned i;

	g->packets++;
	g->nreply = 0;
	if (g->running) {
		/* GDB sends nothing but an interrupt while it waits */
		g->malformed++;
		g->noreply = 1;
		return;
	}
	if (g->npkt != strlen(p) && p[0] != 'X')
		return bad_packet(g, "NUL in packet");
	switch (p[0]) {
	case '?':
		stop_reply(g, 5);
		break;
	case 'g':
		if (p[1])
			return bad_packet(g, "malformed g");
		for (i = 0; i < R_NR; i++)
			put_reg(g, i);
		break;
	case 'p':
		p++;
		if (parse_hex(&p, &n) || *p)
			return bad_packet(g, "malformed p");
		if (n >= R_NR)
			return reply_err(g, 0x16, "no such register");
		put_reg(g, (unsigned)n);
		break;
	case 'm':
		handle_memory(g, p + 1);
		break;
	case 'H':
		if ((p[1] != 'g' && p[1] != 'c') || parse_thread(g, p + 2, &id, 1))
			return bad_packet(g, "no such thread");
		if (id != SIZE_MAX && p[1] == 'g')
			g->sel = id;
		reply(g, "OK");
		break;
	case 'T':
		if (parse_thread(g, p + 1, &id, 0))
			return reply_err(g, 0x16, "no such thread");
		reply(g, "OK");
		break;
	case 'q':
		handle_query(g, p);
		break;
	case 'Q':
		if (!strcmp(p, "QStartNoAckMode")) {
			reply(g, "OK");
			g->noack = 2;	/* from after this reply */
		} else if (starts(p, "Qbtrace:") && (!g->t->live || live_btrace(g))) {
			handle_qbtrace(g, p + 8);
		} else {
			reply(g, "%s", "");
		}
		break;
	case 'D':
		reply(g, "OK");
		g->over = 1;
		break;
	case 'k':
		g->over = 2;	/* no reply */
		break;
	case 'v':
		if (!strcmp(p, "vKill") || starts(p, "vKill;")) {
			reply(g, "OK");
			g->over = 1;
		} else if (g->t->live && !strcmp(p, "vCont?")) {
			reply(g, "vCont;c;s");
		} else if (g->t->live && starts(p, "vCont;")) {
			handle_vcont(g, p + 6);
		} else if (starts(p, "vCont;") || starts(p, "vRun") || starts(p, "vAttach")) {
			reply_err(g, 0x01, "hvtrace gdb --dump: a memory dump is read-only and cannot run");
		} else {
			reply(g, "%s", "");	/* vMustReplyEmpty, vCont?, vFile... */
		}
		break;
	case 'G': case 'P': case 'M': case 'X':
		if (!g->t->live)
			reply_err(g, 0x01, "hvtrace gdb --dump: a memory dump is read-only");
		else if (p[0] == 'M')
			handle_write_memory(g, p + 1);
		else if (p[0] == 'X')
			reply(g, "%s", "");	/* GDB writes with M then */
		else
			handle_write_regs(g, p);
		break;
	case 'c': case 's': case 'C': case 'S':
		if (g->t->live) {
			/* an address to resume at, or a signal, is not taken */
			if (p[1])
				return reply_err(g, 0x16, "c/s with an address or a signal is not supported");
			live_resume(g, p[0] == 's', g->sel);
			break;
		}
		/* GDB waits for a stop reply and prints console output ('O')
		 * meanwhile: say why, then fail */
		reply(g, "O");
		put_hex(g, resume_msg, sizeof(resume_msg) - 1);
		if (send_reply(g))
			return;
		reply_err(g, 0x01, "hvtrace gdb --dump: a memory dump is read-only and cannot run");
		break;
	case 'Z': case 'z':
		if (g->t->live) {
			handle_z(g, p);
			break;
		}
		/* fall through */
	case 'i': case 'I':
		/* live: an error, never an empty reply, or GDB would write
		 * INT3 into the guest's memory where the guest can see it */
		reply_err(g, 0x01, g->t->live ? "hvtrace gdb --shm: no cycle or instruction stepping (i, I)"
					       : "hvtrace gdb --dump: a memory dump is read-only and cannot run");
		break;
	default:
		reply(g, "%s", "");	/* unsupported */
		break;
	}
}

/* ---------------------------------------------------------------- */
/* Framing: $data#cc, acknowledged by + (or - for a retransmission) until
 * no-ack mode. Inside data '}' escapes the next byte (^ 0x20) and '*'
 * repeats the previous byte (the next byte - 29) times. */

static int decode(struct hvt_gdb *g)
{
	size_t i, o = 0;

	for (i = 0; i < g->nraw; i++) {
		uint8_t c = g->raw[i];

		if (c == '}') {
			if (++i == g->nraw)
				return -1;
			c = g->raw[i] ^ 0x20;
		} else if (c == '*') {
			unsigned rep;

			if (!o || ++i == g->nraw || g->raw[i] < 29 + 3 || g->raw[i] > 126)
				return -1;
			rep = g->raw[i] - 29u;
			if (rep > sizeof(g->pkt) - 1 - o)
				return -1;
			memset(g->pkt + o, g->pkt[o - 1], rep);
			o += rep;
			continue;
		}
		if (o >= sizeof(g->pkt) - 1)
			return -1;
		g->pkt[o++] = (char)c;
	}
	g->pkt[o] = 0;
	g->npkt = o;
	return 0;
}

static int packet_done(struct hvt_gdb *g)
{
	int ok = g->ck == g->sum;

	if (!g->noack && send_raw(g, ok ? "+" : "-", 1))
		return -1;
	if (!ok && !g->noack)
		return 0;	/* it will come again */
	if (g->overflow) {
		g->packets++;
		bad_packet(g, "packet too long");
	} else if (decode(g)) {
		g->packets++;
		bad_packet(g, "malformed escape or run-length");
	} else {
		handle_packet(g);
	}
	if (g->over == 2)
		return 1;
	if (g->noreply) {
		g->noreply = 0;
		return 0;
	}
	if (send_reply(g))
		return -1;
	if (g->noack == 2)
		g->noack = 1;
	return g->over ? 1 : 0;
}

int hvt_gdb_input(struct hvt_gdb *g, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	size_t i;
	int rc;

	for (i = 0; i < len; i++) {
		uint8_t c = b[i];

		if (g->over)
			return 1;
		switch (g->st) {
		case F_IDLE:
			if (c == '$') {
				g->st = F_DATA;
				g->nraw = 0;
				g->overflow = 0;
				g->sum = 0;
			} else if (c == '-' && g->nout && !g->noack) {
				if (send_raw(g, g->out, g->nout))
					return -1;
			}
			if (c == 0x03 && g->running) {
				/* GDB's interrupt: stop the guest, then the stop reply */
				g->running = 0;
				btrace_forget(g);
				if (g->t->live->stop(g->t->live->ctx)) {
					reply_err(g, 0x01, "the guest did not stop");
				} else {
					stop_reply(g, 2);
				}
				if (send_reply(g))
					return -1;
			}
			/* '+', Ctrl-C while stopped and noise: nothing */
			break;
		case F_DATA:
			if (c == '#') {
				g->st = F_CK1;
				break;
			}
			g->sum += c;
			if (g->nraw < sizeof(g->raw))
				g->raw[g->nraw++] = c;
			else
				g->overflow = 1;
			break;
		case F_CK1:
		case F_CK2:
			if (hexval(c) < 0) {	/* not a checksum: the packet is garbage */
				g->st = F_IDLE;
				if (!g->noack && send_raw(g, "-", 1))
					return -1;
				break;
			}
			if (g->st == F_CK1) {
				g->ck = (unsigned)hexval(c) << 4;
				g->st = F_CK2;
				break;
			}
			g->ck |= (unsigned)hexval(c);
			g->st = F_IDLE;
			rc = packet_done(g);
			if (rc)
				return rc;
			break;
		}
	}
	return 0;
}

struct hvt_gdb *hvt_gdb_new(struct hvt_gdb_target *t, hvt_gdb_send_fn send, void *ctx)
{
	struct hvt_gdb *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->t = t;
	g->send = send;
	g->ctx = ctx;
	g->sel = t->first < t->nth ? t->first : 0;
	if (t->live && t->nth && !(g->pend = calloc(t->nth, sizeof(*g->pend)))) {
		free(g);
		return NULL;
	}
	return g;
}

int hvt_gdb_running(const struct hvt_gdb *g)
{
	return g->running;
}

int hvt_gdb_stopped(struct hvt_gdb *g, size_t th)
{
	if (!g->running || !g->t->live)
		return 0;
	g->running = 0;
	g->nreply = 0;
	btrace_forget(g);
	if (g->t->live->stop(g->t->live->ctx)) {
		reply_err(g, 0x01, "the guest did not stop");
	} else {
		if (th < g->t->nth)
			g->sel = th;
		stop_reply(g, 5);
	}
	return send_reply(g);
}

void hvt_gdb_stats(const struct hvt_gdb *g, uint64_t *packets, uint64_t *malformed)
{
	*packets = g->packets;
	*malformed = g->malformed;
}

void hvt_gdb_free(struct hvt_gdb *g)
{
	size_t i;

	if (!g)
		return;
	for (i = 0; i < g->t->nth; i++) {
		free(g->t->th[i].btrace);
		g->t->th[i].btrace = NULL;
	}
	free(g->pend);
	free(g);
}
