/* SPDX-License-Identifier: MIT */
/* libFuzzer: `report` (calls, hot pairs, last records) and `export`
 * (Perfetto JSON, perf.data, a uftrace directory) over whatever trace file
 * the reader accepts, with a small symbol map, the output thrown away (the
 * files into a scratch directory emptied after each input). Bounded time
 * per input is the point as much as memory safety: crafted files once made
 * these quadratic. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libhvtrace.h"
#include "cli.h"

static const char map[] =
	"ffffffff81000000 T start_kernel\n"
	"ffffffff81000100 T do_one\n"
	"ffffffff81000200 t helper\n"
	"0000000000401000 T main\n";

static char scratch[] = "/tmp/fuzz_report-XXXXXX";
static char perf_out[sizeof(scratch) + 16], perf_ks[sizeof(scratch) + 24], uft_dir[sizeof(scratch) + 16];

/* Removes the files of dir (no subdirectories are made). */
static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[256];

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
}

static void remove_scratch(void)
{
	empty_dir(uft_dir);
	rmdir(uft_dir);
	empty_dir(scratch);
	rmdir(scratch);
}

static void export_others(const struct hvt_file *f, const struct hvt_syms *s)
{
	struct export_opts eo = EXPORT_ALL, win = { 3, 40, 0, UINT64_MAX, 1 };
	struct export_stats st;
	struct hvt_err err;

	export_perf(perf_out, perf_ks, f, s, &eo, &st, &err);
	export_perf(perf_out, NULL, f, NULL, &win, &st, &err);
	export_uftrace(uft_dir, "fuzz", f, s, &eo, &st, &err);
	empty_dir(uft_dir);
	rmdir(uft_dir);
	export_uftrace(uft_dir, "fuzz", f, NULL, &win, &st, &err);
	empty_dir(uft_dir);
	rmdir(uft_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct hvt_syms syms;
	static int have_syms;
	static FILE *null;
	struct hvt_file f;
	struct hvt_err err;
	void *buf;

	if (!have_syms) {
		if (hvt_syms_parse_map(&syms, map, sizeof(map) - 1, &err))
			abort();
		null = fopen("/dev/null", "w");
		if (!null || !mkdtemp(scratch))
			abort();
		snprintf(perf_out, sizeof(perf_out), "%s/perf.data", scratch);
		snprintf(perf_ks, sizeof(perf_ks), "%s/perf.data.kallsyms", scratch);
		snprintf(uft_dir, sizeof(uft_dir), "%s/uftrace", scratch);
		atexit(remove_scratch);
		have_syms = 1;
	}
	buf = malloc(len ? len : 1);	/* aligned, as the mmap the tool reads */
	if (!buf)
		return 0;
	memcpy(buf, data, len);
	if (hvt_file_open_mem(&f, buf, len, &err) == 0 && hvt_file_check_records(&f, &err) == 0) {
		struct report_opts all = { .calls = 1, .hot = 20, .last = 8, .vcpu = -1 };
		struct report_opts one = { .calls = 1, .hot = 5, .last = 2, .vcpu = 1 };

		report_write(null, &f, &syms, &all);
		report_write(null, &f, NULL, &one);
		struct export_opts eo = EXPORT_ALL, win = { 3, 40, 0, UINT64_MAX, 1 };
		export_write(null, &f, &syms, "fuzz", &eo);
		export_write(null, &f, NULL, "fuzz", &win);
		export_others(&f, &syms);
	}
	free(buf);
	return 0;
}
