/* SPDX-License-Identifier: MIT */
/* libFuzzer: the dump scanner (raw images and ELF cores). */
#include "libhvtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_chan ch;
	struct hvt_err err;

	if (hvt_chan_open_dump_mem(&ch, data, len, &err) == 0)
		hvt_chan_close(&ch);
	return 0;
}
