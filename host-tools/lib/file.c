/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: trace files (record.h). The writer puts a header with
 * COMPLETE clear and records = 0 first, so a killed writer leaves a file
 * whose length says what it holds; finishing rewrites the header. The
 * reader maps the file and checks the header against its length.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libhvtrace.h"

#define REC_SIZE ((uint64_t)sizeof(struct hvtrace_rec))
#define HDR_SIZE ((uint64_t)sizeof(struct hvtrace_file_hdr))
#define KNOWN_FLAGS (HVTRACE_FILE_COMPLETE | HVTRACE_FILE_SNAPSHOT | HVTRACE_FILE_FROZEN)

static int write_all(int fd, const void *buf, size_t len, off_t at)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = at >= 0 ? pwrite(fd, p, len, at) : write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		len -= (size_t)k;
		if (at >= 0)
			at += k;
	}
	return 0;
}

int hvt_fwriter_open(struct hvt_fwriter *w, const char *path, uint32_t flags, uint64_t tsc_hz,
		     uint32_t nr_vcpus, uint32_t freeze, struct hvt_err *err)
{
	memset(w, 0, sizeof(*w));
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		hvt_seterr(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	w->hdr.magic = HVTRACE_FILE_MAGIC;
	w->hdr.abi_version = HVTRACE_ABI_VERSION;
	w->hdr.rec_size = REC_SIZE;
	w->hdr.hdr_size = HDR_SIZE;
	w->hdr.flags = flags & ~HVTRACE_FILE_COMPLETE;
	w->hdr.tsc_hz = tsc_hz;
	w->hdr.nr_vcpus = nr_vcpus;
	w->hdr.freeze = freeze;
	if (write_all(w->fd, &w->hdr, HDR_SIZE, -1)) {
		hvt_seterr(err, "%s: write: %s", path, strerror(errno));
		close(w->fd);
		return -1;
	}
	return 0;
}

int hvt_fwriter_put(struct hvt_fwriter *w, const struct hvtrace_rec *r, uint64_t n, struct hvt_err *err)
{
	if (write_all(w->fd, r, n * REC_SIZE, -1)) {
		hvt_seterr(err, "trace file: write: %s", strerror(errno));
		return -1;
	}
	w->records += n;
	return 0;
}

int hvt_fwriter_finish(struct hvt_fwriter *w, uint64_t lost, struct hvt_err *err)
{
	int rc = 0;

	w->hdr.flags |= HVTRACE_FILE_COMPLETE;
	w->hdr.records = w->records;
	w->hdr.lost = lost;
	if (write_all(w->fd, &w->hdr, HDR_SIZE, 0)) {
		hvt_seterr(err, "trace file: header: %s", strerror(errno));
		rc = -1;
	}
	if (close(w->fd) && !rc) {
		hvt_seterr(err, "trace file: close: %s", strerror(errno));
		rc = -1;
	}
	w->fd = -1;
	return rc;
}

void hvt_fwriter_abort(struct hvt_fwriter *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

int hvt_file_open_mem(struct hvt_file *f, const void *buf, size_t len, struct hvt_err *err)
{
	struct hvtrace_file_hdr hc;
	const struct hvtrace_file_hdr *h = &hc;
	uint64_t body;

	memset(f, 0, sizeof(*f));
	if (len == 0) {
		hvt_seterr(err, "empty file");
		return -1;
	}
	if (len < HDR_SIZE) {
		hvt_seterr(err, "%zu bytes, shorter than the %llu-byte header", len,
			   (unsigned long long)HDR_SIZE);
		return -1;
	}
	memcpy(&hc, buf, HDR_SIZE);
	if (h->magic != HVTRACE_FILE_MAGIC) {
		hvt_seterr(err, "magic 0x%016llx is not HVTRFIL1 (0x%016llx)", (unsigned long long)h->magic,
			   HVTRACE_FILE_MAGIC);
		return -1;
	}
	if (h->abi_version >> 16 != HVTRACE_ABI_MAJOR) {
		hvt_seterr(err, "abi_version %u.%u, this reader knows major %u", h->abi_version >> 16,
			   h->abi_version & 0xffff, HVTRACE_ABI_MAJOR);
		return -1;
	}
	if (h->rec_size != REC_SIZE) {
		hvt_seterr(err, "rec_size %u, expected %llu", h->rec_size, (unsigned long long)REC_SIZE);
		return -1;
	}
	if (h->hdr_size != HDR_SIZE) {
		hvt_seterr(err, "hdr_size %u, expected %llu", h->hdr_size, (unsigned long long)HDR_SIZE);
		return -1;
	}
	if (h->flags & ~KNOWN_FLAGS) {
		hvt_seterr(err, "flags 0x%x has unknown bits 0x%x", h->flags, h->flags & ~KNOWN_FLAGS);
		return -1;
	}
	if (!hvt_freeze_name(h->freeze)) {
		hvt_seterr(err, "freeze %u unknown", h->freeze);
		return -1;
	}
	if (h->lost > HVT_COUNT_MAX) {
		hvt_seterr(err, "lost %llu is absurd (> 2^56)", (unsigned long long)h->lost);
		return -1;
	}
	body = len - HDR_SIZE;
	if (h->flags & HVTRACE_FILE_COMPLETE) {
		if (h->records > body / REC_SIZE) {
			hvt_seterr(err, "truncated: the header says %llu records, the file holds %llu",
				   (unsigned long long)h->records, (unsigned long long)(body / REC_SIZE));
			return -1;
		}
		if (h->records * REC_SIZE != body) {
			hvt_seterr(err, "the header says %llu records, but %llu bytes follow it (%llu extra)",
				   (unsigned long long)h->records, (unsigned long long)body,
				   (unsigned long long)(body - h->records * REC_SIZE));
			return -1;
		}
		f->nr = h->records;
	} else {
		/* being written (or its writer died): the length decides */
		f->nr = body / REC_SIZE;
		f->partial = body % REC_SIZE != 0;
	}
	f->hdr = *h;
	f->recs = (const void *)((const uint8_t *)buf + HDR_SIZE);
	return 0;
}

int hvt_file_open(struct hvt_file *f, const char *path, struct hvt_err *err)
{
	size_t len;
	void *map = hvt_map_file(path, 0, 1, &len, err);

	if (!map)
		return -1;
	if (hvt_file_open_mem(f, map, len, err)) {
		struct hvt_err inner = *err;

		hvt_seterr(err, "%s: %s", path, inner.msg);
		munmap(map, len);
		return -1;
	}
	f->map = map;
	f->map_len = len;
	return 0;
}

int hvt_file_check_records(const struct hvt_file *f, struct hvt_err *err)
{
	uint64_t i;
	struct hvt_err e;

	for (i = 0; i < f->nr; i++) {
		struct hvtrace_rec r;

		memcpy(&r, &f->recs[i], sizeof(r));
		if (hvt_rec_check(&r, &e)) {
			hvt_seterr(err, "record %llu: %s", (unsigned long long)i, e.msg);
			return -1;
		}
	}
	return 0;
}

int hvt_file_merge_tsc(struct hvt_file *f, struct hvt_err *err)
{
	uint64_t i;

	for (i = 1; i < f->nr && f->recs[i - 1].tsc <= f->recs[i].tsc; i++)
		;
	if (i >= f->nr)
		return 0;
	struct hvtrace_rec *m = malloc(f->nr * sizeof(*m));
	if (!m) {
		hvt_seterr(err, "out of memory merging %llu records by TSC", (unsigned long long)f->nr);
		return -1;
	}
	memcpy(m, f->recs, f->nr * sizeof(*m));
	if (hvt_recs_sort_tsc(m, f->nr)) {
		free(m);
		hvt_seterr(err, "out of memory merging %llu records by TSC", (unsigned long long)f->nr);
		return -1;
	}
	free(f->merged);
	f->merged = m;
	f->recs = m;
	return 0;
}

void hvt_file_close(struct hvt_file *f)
{
	free(f->merged);
	if (f->map)
		munmap(f->map, f->map_len);
	memset(f, 0, sizeof(*f));
}
