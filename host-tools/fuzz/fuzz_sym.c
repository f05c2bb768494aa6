/* SPDX-License-Identifier: MIT */
/* libFuzzer: the symbol loaders (text maps and ELF symbol tables). */
#include "libhvtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct hvt_syms s;
	struct hvt_err err;
	char buf[128];
	uint64_t off;

	if (hvt_syms_load_mem(&s, data, len, &err) == 0) {
		size_t i;

		for (i = 0; i < s.n && i < 64; i++) {
			hvt_syms_lookup(&s, s.v[i].addr + 1, &off);
			hvt_syms_format(&s, s.v[i].addr - 1, buf, sizeof(buf));
		}
		hvt_syms_format(&s, ~0ull, buf, sizeof(buf));
		hvt_syms_free(&s);
	}
	return 0;
}
