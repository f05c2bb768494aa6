/* hvtrace.cfg parser (see config.h). Every problem becomes an error with
 * its line number and the key, so the console can say exactly what is
 * wrong; parsing goes on to report them all. */
#include <stdarg.h>
#include "config.h"
#include "hvtrace/abi.h"
#include "base/boot.h"
#include "arch/x86/uart.h"
#include "base/lib.h"
#include "base/pcicfg.h"

static __printf(3, 4) void cfg_err(struct hv_config *cfg, u32 line, const char *fmt, ...)
{
	if (cfg->nr_errors < CFG_MAX_ERRORS) {
		struct cfg_error *e = &cfg->errors[cfg->nr_errors];
		va_list ap;
		va_start(ap, fmt);
		e->line = line;
		hv_vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	cfg->nr_errors++;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool streq(const char *a, size_t alen, const char *b)
{
	size_t i = 0;
	for (; i < alen && b[i]; i++)
		if (a[i] != b[i])
			return false;
	return i == alen && !b[i];
}

bool cfg_parse_size(const char *s, u64 *out)
{
	u64 v = 0;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (~0ull - 9) / 10)
			return false;
		v = v * 10 + (u64)(*s - '0');
	}
	unsigned shift = 0;
	switch (*s) {
	case 'k': case 'K': shift = 10; s++; break;
	case 'm': case 'M': shift = 20; s++; break;
	case 'g': case 'G': shift = 30; s++; break;
	}
	if (*s == 'i' && shift)	/* "MiB" */
		s++;
	if ((*s == 'b' || *s == 'B') && shift)
		s++;
	if (*s)
		return false;
	if (shift && v > (~0ull >> shift))
		return false;
	*out = v << shift;
	return true;
}

static bool parse_u64(const char *s, u64 *out)
{
	u64 v = 0;
	unsigned base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f'))
			d = (unsigned)((*s | 0x20) - 'a' + 10);
		else
			return false;
		if (v > (~0ull - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static bool parse_u16(const char *s, u16 *out)
{
	u64 v;
	if (!parse_u64(s, &v) || v > 0xffff)
		return false;
	*out = (u16)v;
	return true;
}

/* "200ms", "5s", "300us", "2min", or a bare number of milliseconds; at
 * most max_us */
static bool parse_duration_us(const char *s, u64 max_us, u64 *out)
{
	char num[24];
	size_t n = 0;
	u64 v, mul = 1000;
	while (s[n] >= '0' && s[n] <= '9' && n < sizeof(num) - 1) {
		num[n] = s[n];
		n++;
	}
	num[n] = 0;
	if (!n || !parse_u64(num, &v))
		return false;
	const char *unit = s + n;
	if (!*unit || (unit[0] == 'm' && unit[1] == 's' && !unit[2]))
		mul = 1000;
	else if (unit[0] == 'u' && unit[1] == 's' && !unit[2])
		mul = 1;
	else if (unit[0] == 's' && !unit[1])
		mul = 1000000;
	else if (unit[0] == 'm' && unit[1] == 'i' && unit[2] == 'n' && !unit[3])
		mul = 60000000;
	else
		return false;
	if (v > max_us / mul)
		return false;
	*out = v * mul;
	return true;
}

static bool parse_wait_us(const char *s, u32 *out)
{
	u64 us;
	if (!parse_duration_us(s, 60000000ull, &us))	/* at most a minute */
		return false;
	*out = (u32)us;
	return true;
}

enum cfg_key { K_NEXT, K_CMDLINE, K_MEMORY, K_SERIAL, K_LOG, K_ENABLE, K_ENGINE,
	       K_FLIGHT_SIZE, K_FLIGHT_CPL, K_FLIGHT_RANGE, K_FLIGHT_CR3,
	       K_STREAM_SIZE, K_STREAM_CPL, K_STREAM_RANGE, K_STREAM_CR3, K_STREAM_WAIT,
	       K_FLIGHT_MODE, K_FLIGHT_WAIT, K_STREAM_MODE,
	       K_TRACE_START, K_TRACE_STOP, K_CHANNEL, K_TRACE_PACE, K_TRACE_FREEZE, K_CHANNEL_CONTROL,
	       K_TRIPLE_FAULT, K_INTERP_VERIFY, K_SERIAL_HIDE, K_COUNT };
static const char *const key_names[K_COUNT] = {
	"next", "cmdline", "memory", "serial", "log", "enable", "engine",
	"flight.size", "flight.cpl", "flight.range", "flight.cr3",
	"stream.size", "stream.cpl", "stream.range", "stream.cr3", "stream.wait",
	"flight.mode", "flight.wait", "stream.mode",
	"trace.start", "trace.stop", "channel", "trace.pace", "trace.freeze", "channel.control",
	"triple_fault", "interp.verify", "serial.hide" };
#define KEY_LIST "next, cmdline, memory, serial, log, enable, engine, flight.size, flight.cpl, " \
	"flight.range, flight.cr3, stream.size, stream.cpl, stream.range, stream.cr3, stream.wait, " \
	"flight.mode, flight.wait, stream.mode, " \
	"trace.start, trace.stop, channel, trace.pace, trace.freeze, channel.control, triple_fault, " \
	"interp.verify, serial.hide"
/* keys that may be given more than once */
static bool key_repeats(enum cfg_key k)
{
	return k == K_FLIGHT_RANGE || k == K_STREAM_RANGE || k == K_TRACE_FREEZE;
}

/* The smallest and largest ring a consumer may have (bytes per vCPU). */
#define REC_RING_MIN	(4ull << 10)
#define REC_RING_MAX	(512ull << 20)

static void cfg_rec_size(struct hv_config *cfg, u32 line, const char *name, const char *num,
			 u64 *out)
{
	u64 m;
	if (!cfg_parse_size(num, &m))
		cfg_err(cfg, line, "%s: '%s' is not a size (write e.g. 1M, or 0 for none)", name, num);
	else if (m && (m < REC_RING_MIN || m > REC_RING_MAX || (m & (m - 1))))
		cfg_err(cfg, line, "%s: '%s' must be 0 or a power of two from 4K to 512M", name, num);
	else
		*out = m;
}

static void cfg_rec_cpl(struct hv_config *cfg, u32 line, const char *name, const char *num,
			size_t vlen, struct hv_rec_filter *f)
{
	if (streq(num, vlen, "all"))
		f->cpl = HVTRACE_CPL_ALL;
	else if (streq(num, vlen, "kernel"))
		f->cpl = HVTRACE_CPL_KERNEL;
	else if (streq(num, vlen, "user"))
		f->cpl = HVTRACE_CPL_USER;
	else
		cfg_err(cfg, line, "%s: '%s' is not all, kernel or user", name, num);
}

static void cfg_rec_range(struct hv_config *cfg, u32 line, const char *name, char *num,
			  struct hv_rec_filter *f)
{
	char *dash = num;
	while (*dash && *dash != '-')
		dash++;
	u64 lo, hi;
	if (!*dash) {
		cfg_err(cfg, line, "%s: '%s' is not a range (write START-END, e.g. 0xffffffff81000000-0xffffffff81ffffff)", name, num);
		return;
	}
	*dash = 0;
	bool ok = parse_u64(num, &lo) && parse_u64(dash + 1, &hi);
	*dash = '-';
	if (!ok)
		cfg_err(cfg, line, "%s: '%s' is not a range of addresses (hexadecimal 0x... or decimal)", name, num);
	else if (hi < lo)
		cfg_err(cfg, line, "%s: '%s' ends before it starts", name, num);
	else if (f->nr_ranges >= HV_REC_MAX_RANGES)
		cfg_err(cfg, line, "%s: more than %u ranges", name, HV_REC_MAX_RANGES);
	else {
		f->ranges[f->nr_ranges].lo = lo;
		f->ranges[f->nr_ranges].hi = hi;
		f->nr_ranges++;
	}
}

static void cfg_rec_cr3(struct hv_config *cfg, u32 line, const char *name, const char *num,
			struct hv_rec_filter *f)
{
	u64 v;
	if (!parse_u64(num, &v) || !v || (v & 0xfff) || v >> 52)
		cfg_err(cfg, line, "%s: '%s' is not a page-table root (a non-zero, 4K-aligned physical address)", name, num);
	else
		f->cr3 = v;
}

/* "NAME:NUMBER" */
static bool word_arg(const char *v, const char *word, u64 *arg)
{
	size_t n = 0;
	while (word[n] && v[n] == word[n])
		n++;
	return !word[n] && v[n] == ':' && parse_u64(v + n + 1, arg);
}
static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* yes/true/1 or no/false/0 */
static void cfg_yes_no(struct hv_config *cfg, u32 line, const char *name, const char *num, size_t vlen, bool *out)
{
	if (streq(num, vlen, "yes") || streq(num, vlen, "true") || streq(num, vlen, "1"))
		*out = true;
	else if (streq(num, vlen, "no") || streq(num, vlen, "false") || streq(num, vlen, "0"))
		*out = false;
	else
		cfg_err(cfg, line, "%s: '%s' is not yes or no", name, num);
}

static void cfg_set(struct hv_config *cfg, u32 line, enum cfg_key k, const char *v, size_t vlen)
{
	char num[64];
	const char *name = key_names[k];
	struct hv_rec_cfg *rec = &cfg->rec;

	switch (k) {
	case K_NEXT:
		if (vlen == 0 || v[0] != '\\') {
			cfg_err(cfg, line, "next: '%s' is not an absolute path on the boot volume (like \\EFI\\linux\\vmlinuz)", v);
			return;
		}
		if (vlen >= CFG_PATH_MAX) {
			cfg_err(cfg, line, "%s: longer than %u characters", name, CFG_PATH_MAX - 1);
			return;
		}
		for (size_t i = 0; i < vlen; i++) {
			if ((u8)v[i] < 0x20 || (u8)v[i] > 0x7e || v[i] == '/') {
				cfg_err(cfg, line, "%s: only printable ASCII and '\\' separators are allowed", name);
				return;
			}
		}
		memcpy(cfg->next, v, vlen);
		cfg->next[vlen] = 0;
		return;
	case K_CMDLINE:
		for (size_t i = 0; i < vlen; i++) {
			if ((u8)v[i] < 0x20 || (u8)v[i] > 0x7e) {
				cfg_err(cfg, line, "%s: only printable ASCII is allowed", name);
				return;
			}
		}
		memcpy(cfg->cmdline, v, vlen);
		cfg->cmdline[vlen] = 0;
		return;
	default:
		break;
	}

	/* the remaining values are short words (a range is the longest) */
	if (vlen >= sizeof(num)) {
		cfg_err(cfg, line, "%s: '%.20s...' is too long", name, v);
		return;
	}
	memcpy(num, v, vlen + 1);

	switch (k) {
	case K_MEMORY: {
		u64 m;
		if (!cfg_parse_size(num, &m))
			cfg_err(cfg, line, "memory: '%s' is not a size (write e.g. 32M or 1G)", num);
		else if (m < HV_MIN_RESERVE || m > HV_MAX_RESERVE || m % 4096)
			cfg_err(cfg, line, "memory: '%s' is out of range (4M to 1G, a multiple of 4K)", num);
		else
			cfg->memory = m;
		return;
	}
	case K_SERIAL:
		if (streq(num, vlen, "none"))
			cfg->serial_port = 0;
		else if (!parse_u16(num, &cfg->serial_port) || !cfg->serial_port)
			cfg_err(cfg, line, "serial: '%s' is not an I/O port (write e.g. 0x3f8, or none)", num);
		return;
	case K_LOG:
		for (u8 i = 0; i < ARRAY_SIZE(level_names); i++) {
			if (streq(num, vlen, level_names[i])) {
				cfg->log_level = i;
				return;
			}
		}
		cfg_err(cfg, line, "log: '%s' is not one of error, warn, info, debug", num);
		return;
	case K_ENABLE:
		cfg_yes_no(cfg, line, name, num, vlen, &cfg->enable);
		return;
	case K_INTERP_VERIFY:
		cfg_yes_no(cfg, line, name, num, vlen, &cfg->interp_verify);
		return;
	case K_SERIAL_HIDE:
		cfg_yes_no(cfg, line, name, num, vlen, &cfg->serial_hide);
		return;
	case K_TRIPLE_FAULT:
		if (streq(num, vlen, "reset"))
			cfg->triple_fault = HV_TRIPLE_FAULT_RESET;
		else if (streq(num, vlen, "halt"))
			cfg->triple_fault = HV_TRIPLE_FAULT_HALT;
		else
			cfg_err(cfg, line, "triple_fault: '%s' is not reset or halt", num);
		return;
	case K_ENGINE:
		if (streq(num, vlen, "fast"))
			cfg->engine = HVTRACE_ENGINE_FAST;
		else if (streq(num, vlen, "reference"))
			cfg->engine = HVTRACE_ENGINE_REFERENCE;
		else if (streq(num, vlen, "lbr"))
			cfg->engine = HVTRACE_ENGINE_LBR;
		else if (streq(num, vlen, "interp"))
			cfg->engine = HVTRACE_ENGINE_INTERP;
		else
			cfg_err(cfg, line, "engine: '%s' is not fast, reference, lbr or interp", num);
		return;
	case K_FLIGHT_SIZE:
		cfg_rec_size(cfg, line, name, num, &rec->flight.size);
		return;
	case K_STREAM_SIZE:
		cfg_rec_size(cfg, line, name, num, &rec->stream.size);
		return;
	case K_FLIGHT_CPL:
	case K_STREAM_CPL:
		cfg_rec_cpl(cfg, line, name, num, vlen, k == K_FLIGHT_CPL ? &rec->flight.filter : &rec->stream.filter);
		return;
	case K_FLIGHT_RANGE:
	case K_STREAM_RANGE:
		cfg_rec_range(cfg, line, name, num, k == K_FLIGHT_RANGE ? &rec->flight.filter : &rec->stream.filter);
		return;
	case K_FLIGHT_CR3:
	case K_STREAM_CR3:
		cfg_rec_cr3(cfg, line, name, num, k == K_FLIGHT_CR3 ? &rec->flight.filter : &rec->stream.filter);
		return;
	case K_STREAM_WAIT:
	case K_FLIGHT_WAIT:
		if (!parse_wait_us(num, k == K_FLIGHT_WAIT ? &rec->flight.wait_us : &rec->stream.wait_us))
			cfg_err(cfg, line, "%s: '%s' is not a time up to 60s (write e.g. 200ms, 2s or 500us)", name, num);
		return;
	case K_FLIGHT_MODE:
	case K_STREAM_MODE: {
		u32 *mode = k == K_FLIGHT_MODE ? &rec->flight.mode : &rec->stream.mode;
		if (streq(num, vlen, "overwrite"))
			*mode = HVTRACE_RING_OVERWRITE;
		else if (streq(num, vlen, "lossless"))
			*mode = HVTRACE_RING_LOSSLESS;
		else
			cfg_err(cfg, line, "%s: '%s' is not overwrite or lossless", name, num);
		return;
	}
	case K_TRACE_START: {
		u64 arg;
		if (streq(num, vlen, "boot"))
			rec->start = REC_START_BOOT;
		else if (streq(num, vlen, "hypercall"))
			rec->start = REC_START_HYPERCALL;
		else if (word_arg(num, "branches", &arg)) {
			rec->start = REC_START_BRANCHES;
			rec->start_arg = arg;
		} else if (num[0] == '0' && (num[1] == 'x' || num[1] == 'X') && parse_u64(num, &arg)) {
			rec->start = REC_START_ADDR;
			rec->start_arg = arg;
		} else
			cfg_err(cfg, line, "trace.start: '%s' is not boot, hypercall, branches:N or an address (0x...)", num);
		return;
	}
	case K_TRACE_STOP: {
		u64 arg;
		if (streq(num, vlen, "never") || streq(num, vlen, "hypercall"))
			rec->stop = REC_STOP_NONE;
		else if (word_arg(num, "records", &arg) && arg) {
			rec->stop = REC_STOP_RECORDS;
			rec->stop_arg = arg;
		} else if (num[0] == 't' && num[1] == 'i' && num[2] == 'm' && num[3] == 'e' && num[4] == ':' &&
			   parse_duration_us(num + 5, CFG_STOP_TIME_MAX_US, &arg) && arg) {
			rec->stop = REC_STOP_TIME;
			rec->stop_arg = arg;
		} else
			cfg_err(cfg, line, "trace.stop: '%s' is not never, hypercall, records:N (N > 0) or "
				"time:T (e.g. 30s, 500ms, 10min; at most 24 hours)", num);
		return;
	}
	case K_TRACE_FREEZE: {
		/* nmi, or an address 0x... with an optional +N records after it */
		u64 addr, after = 0;
		char *plus = num;
		while (*plus && *plus != '+')
			plus++;
		bool has_after = *plus == '+';
		*plus = 0;
		bool ok = num[0] == '0' && (num[1] == 'x' || num[1] == 'X') && parse_u64(num, &addr) &&
			  (!has_after || parse_u64(plus + 1, &after));
		if (has_after)
			*plus = '+';
		u64 us;
		if (streq(num, vlen, "nmi"))
			rec->freeze_nmi = 1;
		else if (num[0] == 'h' && num[1] == 'a' && num[2] == 'n' && num[3] == 'g' && num[4] == ':') {
			if (parse_duration_us(num + 5, CFG_HANG_MAX_US, &us) && us >= CFG_HANG_MIN_US)
				rec->freeze_hang_us = us;
			else
				cfg_err(cfg, line, "trace.freeze: '%s': hang:T takes a time from 100ms to 60min "
					"(e.g. hang:10s)", num);
		} else if (!ok || after > CFG_FREEZE_AFTER_MAX)
			cfg_err(cfg, line, "trace.freeze: '%s' is not nmi, hang:T or an address 0x... with "
				"an optional +N (records kept after it, at most %u)", num, CFG_FREEZE_AFTER_MAX);
		else if (rec->nr_freeze_at >= HV_REC_MAX_FREEZE)
			cfg_err(cfg, line, "trace.freeze: more than %u addresses", HV_REC_MAX_FREEZE);
		else {
			rec->freeze_at[rec->nr_freeze_at] = addr;
			rec->freeze_after[rec->nr_freeze_at] = after;
			rec->nr_freeze_at++;
		}
		return;
	}
	case K_TRACE_PACE: {
		u64 v;
		if (streq(num, vlen, "off"))
			cfg->pace = 0;
		else if (parse_u64(num, &v) && (v == 0 || (v >= CFG_PACE_MIN && v <= CFG_PACE_MAX)))
			cfg->pace = (u32)v;
		else
			cfg_err(cfg, line, "trace.pace: '%s' is not off or a number of branches from %u to %u",
				num, CFG_PACE_MIN, CFG_PACE_MAX);
		return;
	}
	case K_CHANNEL:
		if (streq(num, vlen, "auto"))
			rec->channel = REC_CHAN_AUTO;
		else if (streq(num, vlen, "ivshmem"))
			rec->channel = REC_CHAN_IVSHMEM;
		else if (streq(num, vlen, "ram"))
			rec->channel = REC_CHAN_RAM;
		else
			cfg_err(cfg, line, "channel: '%s' is not auto, ivshmem or ram", num);
		return;
	case K_CHANNEL_CONTROL:
		if (streq(num, vlen, "poll"))
			rec->control = HVTRACE_CTL_POLL;
		else if (streq(num, vlen, "exits"))
			rec->control = HVTRACE_CTL_EXITS;
		else if (streq(num, vlen, "off"))
			rec->control = HVTRACE_CTL_OFF;
		else
			cfg_err(cfg, line, "channel.control: '%s' is not poll, exits or off", num);
		return;
	default:
		return;
	}
}

u32 cfg_parse(const char *text, size_t len, struct hv_config *cfg)
{
	bool seen[K_COUNT] = { false };
	u32 line = 0;
	size_t pos = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->memory = CFG_DEFAULT_MEMORY;
	cfg->serial_port = UART_COM1;
	cfg->log_level = 2; /* info */
	cfg->enable = true;
	cfg->engine = HVTRACE_ENGINE_INTERP;	/* docs/config.md: the default since 2026-11-28 */
	cfg->pace = CFG_DEFAULT_PACE;
	cfg->rec.start = REC_START_BOOT;
	cfg->rec.flight.mode = HVTRACE_RING_OVERWRITE;
	cfg->rec.stream.mode = HVTRACE_RING_LOSSLESS;
	cfg->rec.flight.wait_us = cfg->rec.stream.wait_us = 100000;
	cfg->rec.control = HVTRACE_CTL_POLL;	/* an ivshmem channel only (hv/trace/rec.c) */

	if (len > CFG_MAX_SIZE) {
		cfg_err(cfg, 0, "the file is larger than 64 KiB");
		return cfg->nr_errors;
	}
	if (len >= 3 && (u8)text[0] == 0xef && (u8)text[1] == 0xbb && (u8)text[2] == 0xbf)
		pos = 3; /* UTF-8 byte-order mark */

	while (pos < len) {
		size_t start = pos, end;
		while (pos < len && text[pos] != '\n')
			pos++;
		end = pos++;
		line++;

		while (start < end && is_space(text[start]))
			start++;
		while (end > start && is_space(text[end - 1]))
			end--;
		if (start == end || text[start] == '#')
			continue;

		size_t eq = start;
		while (eq < end && text[eq] != '=' && text[eq] != 0)
			eq++;
		if (eq == end || text[eq] == 0) {
			cfg_err(cfg, line, "expected 'key = value'");
			continue;
		}
		size_t kend = eq, vstart = eq + 1;
		while (kend > start && is_space(text[kend - 1]))
			kend--;
		while (vstart < end && is_space(text[vstart]))
			vstart++;

		char key[32];
		size_t klen = kend - start;
		if (klen == 0 || klen >= sizeof(key)) {
			cfg_err(cfg, line, "expected 'key = value'");
			continue;
		}
		memcpy(key, text + start, klen);
		key[klen] = 0;

		int k = -1;
		for (int i = 0; i < K_COUNT; i++)
			if (streq(key, klen, key_names[i]))
				k = i;
		if (k < 0) {
			cfg_err(cfg, line, "unknown key '%s' (known: " KEY_LIST ")", key);
			continue;
		}
		if (seen[k] && !key_repeats((enum cfg_key)k)) {
			cfg_err(cfg, line, "'%s' is given twice", key);
			continue;
		}
		seen[k] = true;
		char val[CFG_CMDLINE_MAX];
		size_t vlen = end - vstart;
		if (vlen >= sizeof(val)) {
			cfg_err(cfg, line, "%s: longer than %u characters", key, (unsigned)sizeof(val) - 1);
			continue;
		}
		memcpy(val, text + vstart, vlen);
		val[vlen] = 0;
		size_t n = 0;
		while (val[n])
			n++;
		if (n != vlen) {
			cfg_err(cfg, line, "%s: the value contains a NUL byte", key);
			continue;
		}
		cfg_set(cfg, line, (enum cfg_key)k, val, vlen);
	}
	if (!seen[K_NEXT])
		cfg_err(cfg, 0, "no 'next' line: nothing to boot after the hypervisor");
	/* the hypervisor's own log port is hidden from the guest unless it is
	 * COM1, the firmware's and the guest's console (docs/config.md) */
	if (!seen[K_SERIAL_HIDE])
		cfg->serial_hide = cfg->serial_port && cfg->serial_port != UART_COM1;
	else if (!cfg->serial_port)
		cfg_err(cfg, 0, "'serial.hide' is set but 'serial' is none: there is no port to hide");
	/* the hidden UART's 8 ports and the PCI configuration ports the
	 * hypervisor filters (dispatch/pcihide.c) must not overlap */
	if (cfg->serial_hide && cfg->serial_port + UART_NR_PORTS > PCI_CONFIG_ADDRESS &&
	    cfg->serial_port < PCI_CONFIG_DATA + 4)
		cfg_err(cfg, 0, "serial: a hidden UART at %x would cover the PCI configuration ports %x-%x",
			cfg->serial_port, PCI_CONFIG_ADDRESS, PCI_CONFIG_DATA + 3);
	/* a consumer's settings without the consumer are a mistake worth naming */
	static const struct { enum cfg_key k, needs; } deps[] = {
		{ K_FLIGHT_CPL, K_FLIGHT_SIZE }, { K_FLIGHT_RANGE, K_FLIGHT_SIZE },
		{ K_FLIGHT_CR3, K_FLIGHT_SIZE }, { K_STREAM_CPL, K_STREAM_SIZE },
		{ K_STREAM_RANGE, K_STREAM_SIZE }, { K_STREAM_CR3, K_STREAM_SIZE },
		{ K_STREAM_WAIT, K_STREAM_SIZE }, { K_FLIGHT_MODE, K_FLIGHT_SIZE },
		{ K_FLIGHT_WAIT, K_FLIGHT_SIZE }, { K_STREAM_MODE, K_STREAM_SIZE },
	};
	for (u32 i = 0; i < ARRAY_SIZE(deps); i++)
		if (seen[deps[i].k] && (!seen[deps[i].needs] ||
					(deps[i].needs == K_FLIGHT_SIZE ? !cfg->rec.flight.size
									: !cfg->rec.stream.size)))
			cfg_err(cfg, 0, "'%s' is set but '%s' is not (or is 0): that consumer does not exist",
				key_names[deps[i].k], key_names[deps[i].needs]);
	if ((seen[K_TRACE_START] || seen[K_TRACE_STOP] || seen[K_CHANNEL] || seen[K_TRACE_FREEZE] ||
	     seen[K_CHANNEL_CONTROL]) &&
	    !cfg->rec.flight.size && !cfg->rec.stream.size)
		cfg_err(cfg, 0, "trace.start, trace.stop, trace.freeze, channel and channel.control need a recorder: "
			"set flight.size or stream.size");
	if (seen[K_CHANNEL_CONTROL] && cfg->rec.control != HVTRACE_CTL_OFF && cfg->rec.channel == REC_CHAN_RAM)
		cfg_err(cfg, 0, "channel.control: a channel in reserved RAM ('channel = ram') takes no host "
			"requests: the host cannot write there (set channel.control = off, or channel = ivshmem)");
	return cfg->nr_errors;
}
