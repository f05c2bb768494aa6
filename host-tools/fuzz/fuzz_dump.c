/* SPDX-License-Identifier: MIT */
/* libFuzzer: the dump scanner (raw images and ELF cores), the copy of
 * each channel it finds, the CPU notes and the page walk over what they
 * say. */
#include <stdlib.h>

#include "libhvtrace.h"

static void cpus(const uint8_t *data, size_t len)
{
	struct hvt_dump d;
	struct hvt_vcpu_regs *c;
	struct hvt_err err;
	size_t n, i;
	uint8_t buf[64];

	if (hvt_dump_open_any_mem(&d, data, len, &err))
		return;
	if (!hvt_dump_cpus(&d, &c, &n, &err)) {
		for (i = 0; i < n && i < 4; i++) {
			hvt_vcpu_read(&d, &c[i], c[i].rip, buf, sizeof(buf));
			hvt_vcpu_read(&d, &c[i], 0xffffffff81000000ull, buf, sizeof(buf));
			hvt_vcpu_read(&d, &c[i], c[i].gpr[7] - 8, buf, sizeof(buf));
		}
		free(c);
	}
	hvt_dump_close(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_dump d;
	struct hvt_chan ch;
	struct hvt_err err;
	size_t i;

	cpus(data, len);
	if (hvt_dump_open_mem(&d, data, len, &err))
		return 0;
	for (i = 0; i < d.nr_cand; i++)
		if (hvt_dump_chan(&d, d.cand[i].pa, &ch, &err) == 0)
			hvt_chan_close(&ch);
	hvt_dump_chan(&d, d.cand[0].pa + 1, &ch, &err);	/* no header there: refused */
	hvt_dump_close(&d);
	return 0;
}
