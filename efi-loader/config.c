/* hvtrace.cfg parser (see config.h). Every problem becomes an error with
 * its line number and the key, so the console can say exactly what is
 * wrong; parsing goes on to report them all. */
#include <stdarg.h>
#include "config.h"
#include "hvtrace/abi.h"
#include "core/boot.h"
#include "core/lib.h"

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

static bool parse_u16(const char *s, u16 *out)
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
		v = v * base + d;
		if (v > 0xffff)
			return false;
	}
	*out = (u16)v;
	return true;
}

enum cfg_key { K_NEXT, K_CMDLINE, K_MEMORY, K_SERIAL, K_LOG, K_ENABLE, K_ENGINE, K_COUNT };
static const char *const key_names[K_COUNT] = { "next", "cmdline", "memory", "serial", "log",
						"enable", "engine" };
static const char *const level_names[] = { "error", "warn", "info", "debug" };

static void cfg_set(struct hv_config *cfg, u32 line, enum cfg_key k, const char *v, size_t vlen)
{
	char num[32];
	const char *name = key_names[k];

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

	/* the remaining values are short words */
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
		if (streq(num, vlen, "yes") || streq(num, vlen, "true") || streq(num, vlen, "1"))
			cfg->enable = true;
		else if (streq(num, vlen, "no") || streq(num, vlen, "false") || streq(num, vlen, "0"))
			cfg->enable = false;
		else
			cfg_err(cfg, line, "enable: '%s' is not yes or no", num);
		return;
	case K_ENGINE:
		if (streq(num, vlen, "fast"))
			cfg->engine = HVTRACE_ENGINE_FAST;
		else if (streq(num, vlen, "reference"))
			cfg->engine = HVTRACE_ENGINE_REFERENCE;
		else
			cfg_err(cfg, line, "engine: '%s' is not fast or reference", num);
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
	cfg->serial_port = 0x3f8;
	cfg->log_level = 2; /* info */
	cfg->enable = true;
	cfg->engine = HVTRACE_ENGINE_FAST;

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

		char key[24];
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
			cfg_err(cfg, line, "unknown key '%s' (known: next, cmdline, memory, serial, log, enable, engine)", key);
			continue;
		}
		if (seen[k]) {
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
	return cfg->nr_errors;
}
