/* SPDX-License-Identifier: MIT */
/* libFuzzer: the channel parser, and the ring readers on what it accepts. */
#include <stdlib.h>
#include <string.h>

#include "libhvtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_chan ch;
	struct hvt_err err;
	struct hvtrace_rec *out;
	void *buf;
	unsigned i;

	if (posix_memalign(&buf, 4096, len ? len : 1))
		return 0;
	memcpy(buf, data, len);
	if (hvt_chan_validate(&ch, buf, len, &err) == 0) {
		for (i = 0; i < ch.nr_rings; i++) {
			struct hvt_ring_counters c;
			uint64_t torn, bad = 0;
			int64_t n;

			if (hvt_ring_counters(&ch, i, &c, &err))
				continue;
			hvt_ring_fill(&ch, i, &c);
			out = malloc(ch.ring[i].capacity * sizeof(*out));
			if (!out)
				continue;
			if (ch.ring[i].mode == HVTRACE_RING_OVERWRITE)
				n = hvt_ring_snapshot(&ch, i, i & 1, out, &torn, &err);
			else
				n = hvt_ring_drain(&ch, i, out, ch.ring[i].capacity, &err);
			if (n > 0) {
				n = (int64_t)hvt_recs_filter(out, (uint64_t)n, &bad);
				hvt_recs_sort_tsc(out, (uint64_t)n);
			}
			free(out);
		}
	}
	free(buf);
	return 0;
}
