/* Hypercall argument checks: pure logic, also built for the host tests. */
#include "hvtrace/abi.h"
#include "core/hypercall.h"

s64 hc_check(const struct hc_args *a, const struct hv_memmap *guest_ram)
{
	switch (a->nr) {
	case HVTRACE_HC_VERSION:
		return 0; /* any CPL: lets user space find out what it runs on */
	case HVTRACE_HC_STATUS:
		if (a->cpl != 0)
			return -HVTRACE_EPERM;
		if (a->buf_len < sizeof(struct hvtrace_status))
			return -HVTRACE_EINVAL;
		/* only the bytes we write must be RAM */
		if (!memmap_contains(guest_ram, a->buf_gpa, sizeof(struct hvtrace_status)))
			return -HVTRACE_EFAULT;
		return 0;
	}
	return -HVTRACE_ENOSYS;
}
