/* SPDX-License-Identifier: MIT */
/* libhvtrace: error strings, the ABI's names, record checks and ordering. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libhvtrace.h"

void hvt_seterr(struct hvt_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

#define NAME_AT(tab, i) ((i) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[i] : NULL)

const char *hvt_kind_name(unsigned kind)
{
	static const char *const n[] = {
		[HVTRACE_REC_BRANCH] = "branch",	[HVTRACE_REC_INTERRUPT] = "interrupt",
		[HVTRACE_REC_EXCEPTION] = "exception",	[HVTRACE_REC_FAR] = "far",
		[HVTRACE_REC_CR3] = "cr3",		[HVTRACE_REC_MARKER] = "marker",
		[HVTRACE_REC_LOST] = "lost",
	};
	return NAME_AT(n, kind);
}

const char *hvt_branch_type_name(unsigned type)
{
	static const char *const n[] = {
		[HVTRACE_BR_JCC] = "jcc",	    [HVTRACE_BR_LOOP] = "loop",
		[HVTRACE_BR_JMP] = "jmp",	    [HVTRACE_BR_JMP_IND] = "jmp_ind",
		[HVTRACE_BR_CALL] = "call",	    [HVTRACE_BR_CALL_IND] = "call_ind",
		[HVTRACE_BR_RET] = "ret",	    [HVTRACE_BR_FAR_JMP] = "far_jmp",
		[HVTRACE_BR_FAR_CALL] = "far_call", [HVTRACE_BR_FAR_RET] = "far_ret",
		[HVTRACE_BR_IRET] = "iret",	    [HVTRACE_BR_SYSCALL] = "syscall",
		[HVTRACE_BR_SYSRET] = "sysret",	    [HVTRACE_BR_SYSENTER] = "sysenter",
		[HVTRACE_BR_SYSEXIT] = "sysexit",   [HVTRACE_BR_OTHER] = "other",
	};
	return NAME_AT(n, type);
}

const char *hvt_marker_name(unsigned marker)
{
	static const char *const n[] = {
		[HVTRACE_MARK_START] = "start", [HVTRACE_MARK_STOP] = "stop",
		[HVTRACE_MARK_GUEST] = "guest", [HVTRACE_MARK_CRASH] = "crash",
		[HVTRACE_MARK_TRIGGER] = "trigger", [HVTRACE_MARK_HOST] = "host",
		[HVTRACE_MARK_GAP] = "gap",
	};
	return NAME_AT(n, marker);
}

const char *hvt_state_name(unsigned state)
{
	static const char *const n[] = {
		[HVTRACE_STATE_IDLE] = "idle", [HVTRACE_STATE_TRACING] = "tracing",
		[HVTRACE_STATE_STOPPED] = "stopped", [HVTRACE_STATE_FROZEN] = "frozen",
	};
	return NAME_AT(n, state);
}

const char *hvt_freeze_name(unsigned freeze)
{
	static const char *const n[] = {
		[HVTRACE_FREEZE_NONE] = "none", [HVTRACE_FREEZE_TRIPLE_FAULT] = "triple-fault",
		[HVTRACE_FREEZE_RESET] = "reset", [HVTRACE_FREEZE_HYPERCALL] = "hypercall",
		[HVTRACE_FREEZE_ADDRESS] = "address", [HVTRACE_FREEZE_NMI] = "nmi",
		[HVTRACE_FREEZE_HANG] = "hang", [HVTRACE_FREEZE_WATCHDOG] = "watchdog",
		[HVTRACE_FREEZE_HOST] = "host", [HVTRACE_FREEZE_INVALID_STATE] = "invalid-state",
	};
	return NAME_AT(n, freeze);
}

const char *hvt_consumer_name(unsigned consumer)
{
	static const char *const n[] = {
		[HVTRACE_CONSUMER_FLIGHT] = "flight", [HVTRACE_CONSUMER_STREAM] = "stream",
	};
	return NAME_AT(n, consumer);
}

const char *hvt_mode_name(unsigned mode)
{
	static const char *const n[] = {
		[HVTRACE_RING_OVERWRITE] = "overwrite", [HVTRACE_RING_LOSSLESS] = "lossless",
	};
	return NAME_AT(n, mode);
}

const char *hvt_cpl_filter_name(unsigned filter)
{
	static const char *const n[] = {
		[HVTRACE_CPL_ALL] = "all", [HVTRACE_CPL_KERNEL] = "kernel", [HVTRACE_CPL_USER] = "user",
	};
	return NAME_AT(n, filter);
}

const char *hvt_where_name(unsigned where)
{
	static const char *const n[] = {
		[HVTRACE_CHAN_IVSHMEM] = "ivshmem", [HVTRACE_CHAN_RESERVED_RAM] = "reserved-ram",
	};
	return NAME_AT(n, where);
}

int hvt_rec_check(const struct hvtrace_rec *r, struct hvt_err *err)
{
	if (!hvt_kind_name(r->kind)) {
		hvt_seterr(err, "kind %u out of range (1..%u)", r->kind, HVTRACE_REC_KIND_MAX);
		return -1;
	}
	if ((r->kind == HVTRACE_REC_BRANCH || r->kind == HVTRACE_REC_FAR) &&
	    !hvt_branch_type_name(r->aux)) {
		hvt_seterr(err, "%s record: branch type (aux) %u unknown", hvt_kind_name(r->kind), r->aux);
		return -1;
	}
	if (r->kind == HVTRACE_REC_MARKER && !hvt_marker_name(r->aux)) {
		hvt_seterr(err, "marker record: marker code (aux) %u unknown", r->aux);
		return -1;
	}
	return 0;
}

uint64_t hvt_recs_filter(struct hvtrace_rec *r, uint64_t n, uint64_t *bad)
{
	uint64_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (hvt_rec_check(&r[i], NULL)) {
			(*bad)++;
			continue;
		}
		if (k != i)
			r[k] = r[i];
		k++;
	}
	return k;
}

/* Bottom-up merge sort: stable, O(n log n), one scratch buffer. */
int hvt_recs_sort_tsc(struct hvtrace_rec *r, uint64_t n)
{
	struct hvtrace_rec *tmp, *src = r, *dst;
	uint64_t width;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -1;
	dst = tmp;
	for (width = 1; width < n; width *= 2) {
		uint64_t lo;

		for (lo = 0; lo < n; lo += 2 * width) {
			uint64_t mid = lo + width < n ? lo + width : n;
			uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint64_t a = lo, b = mid, k = lo;

			while (a < mid && b < hi)
				dst[k++] = src[b].tsc < src[a].tsc ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		struct hvtrace_rec *t = src;
		src = dst;
		dst = t;
	}
	if (src != r)
		memcpy(r, src, n * sizeof(*r));
	free(tmp);
	return 0;
}

/* Reads to EOF rather than trusting st_size: /proc/kallsyms says 0 bytes. */
void *hvt_read_file(const char *path, size_t *len, struct hvt_err *err)
{
	const size_t max = (size_t)1 << 30;
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		hvt_seterr(err, "%s: %s", path, fd < 0 ? strerror(errno) : "out of memory");
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t k;

		if (got == cap) {
			char *n = cap < max ? realloc(buf, cap * 2 + 1) : NULL;

			if (!n) {
				hvt_seterr(err, "%s: larger than %zu MiB, or out of memory", path, max >> 20);
				free(buf);
				close(fd);
				return NULL;
			}
			buf = n;
			cap *= 2;
		}
		k = read(fd, buf + got, cap - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			hvt_seterr(err, "%s: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (!k)
			break;
		got += (size_t)k;
	}
	close(fd);
	buf[got] = 0;
	*len = got;
	return buf;
}

void *hvt_map_file(const char *path, int writable, size_t min, size_t *len, struct hvt_err *err)
{
	struct stat st;
	void *map;
	int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);

	if (fd < 0) {
		hvt_seterr(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		hvt_seterr(err, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if (st.st_size == 0 || (size_t)st.st_size < min) {
		if (st.st_size == 0)
			hvt_seterr(err, "%s: empty file", path);
		else
			hvt_seterr(err, "%s: %lld bytes, shorter than %zu", path, (long long)st.st_size, min);
		close(fd);
		return NULL;
	}
	map = mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		   writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		hvt_seterr(err, "%s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	*len = (size_t)st.st_size;
	return map;
}
