/* Hypercall argument checks: pure logic, also built for the host tests. */
#include "hvtrace/abi.h"
#include "dispatch/hypercall.h"

/* A buffer the hypervisor writes `size` bytes to. */
static s64 check_out_buffer(const struct hc_args *a, const struct hv_memmap *guest_ram, u64 size)
{
	if (a->buf_len < size)
		return -HVTRACE_EINVAL;
	/* only the bytes we write must be RAM */
	if (!memmap_contains(guest_ram, a->buf_gpa, size))
		return -HVTRACE_EFAULT;
	return 0;
}

s64 hc_check(const struct hc_args *a, const struct hv_memmap *guest_ram, u32 nr_vcpus)
{
	switch (a->nr) {
	case HVTRACE_HC_VERSION:
		return 0; /* any CPL: lets user space find out what it runs on */
	case HVTRACE_HC_STATUS:
		if (a->cpl != 0)
			return -HVTRACE_EPERM;
		return check_out_buffer(a, guest_ram, sizeof(struct hvtrace_status));
	case HVTRACE_HC_VCPU_STATUS:
		if (a->cpl != 0)
			return -HVTRACE_EPERM;
		if (a->index >= nr_vcpus)
			return -HVTRACE_EINVAL;
		/* a caller of ABI 1.5 or before gets that layout (hypercall.c) */
		return check_out_buffer(a, guest_ram,
					a->buf_len < sizeof(struct hvtrace_vcpu_status)
						? HVTRACE_VCPU_STATUS_SIZE_1_5
						: sizeof(struct hvtrace_vcpu_status));
	case HVTRACE_HC_TRACE_CTL:
		return a->cpl != 0 ? -HVTRACE_EPERM : 0;
	}
	return -HVTRACE_ENOSYS;
}
