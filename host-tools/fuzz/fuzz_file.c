/* SPDX-License-Identifier: MIT */
/* libFuzzer: the trace-file reader. */
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_file f;
	struct hvt_err err;
	void *buf = malloc(len ? len : 1);	/* aligned, as the mmap the tool reads */

	if (!buf)
		return 0;
	memcpy(buf, data, len);
	if (hvt_file_open_mem(&f, buf, len, &err) == 0 && hvt_file_check_records(&f, &err) == 0) {
		uint64_t i, sum = 0;

		for (i = 0; i < f.nr; i++)
			sum += f.recs[i].tsc + hvt_kind_name(f.recs[i].kind)[0];
		(void)sum;
	}
	free(buf);
	return 0;
}
