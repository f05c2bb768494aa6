/* The pure part of the EPT builder (hv/vmx/ept.c), host-tested. */
#ifndef HV_VMX_EPT_H
#define HV_VMX_EPT_H

#include "base/memmap.h"
#include "base/pgbuild.h"

/* Identity-maps [0, limit) in 4-level EPT with leaves of at most max_leaf:
 * `ram` write-back, all else uncacheable, `hidden` to the sink page. */
int vmx_ept_build_tables(struct pg_builder *b, const struct pg_alloc *a, u64 limit, u64 max_leaf,
			 const struct hv_memmap *ram, const struct hv_memmap *hidden, u64 sink_pa);

#endif
