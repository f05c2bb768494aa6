/* SPDX-License-Identifier: MIT */
/* libFuzzer: the dump scanner (raw images and ELF cores), and the copy of
 * each channel it finds. */
#include "libhvtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_dump d;
	struct hvt_chan ch;
	struct hvt_err err;
	size_t i;

	if (hvt_dump_open_mem(&d, data, len, &err))
		return 0;
	for (i = 0; i < d.nr_cand; i++)
		if (hvt_dump_chan(&d, d.cand[i].pa, &ch, &err) == 0)
			hvt_chan_close(&ch);
	hvt_dump_chan(&d, d.cand[0].pa + 1, &ch, &err);	/* no header there: refused */
	hvt_dump_close(&d);
	return 0;
}
