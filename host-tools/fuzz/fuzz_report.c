/* SPDX-License-Identifier: MIT */
/* libFuzzer: `report` (calls, hot pairs, last records) and `export` over
 * whatever trace file the reader accepts, with a small symbol map, the
 * output thrown away. Bounded time per input is the point as much as
 * memory safety: crafted files once made these quadratic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"
#include "cli.h"

static const char map[] =
	"ffffffff81000000 T start_kernel\n"
	"ffffffff81000100 T do_one\n"
	"ffffffff81000200 t helper\n"
	"0000000000401000 T main\n";

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
		if (!null)
			abort();
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
	}
	free(buf);
	return 0;
}
