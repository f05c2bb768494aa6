/*
 * hvtrace-agent: the guest side of hvtrace, run inside the guest OS (Linux
 * user space, static). Finds the hypervisor through CPUID and talks to it
 * with hypercalls (include/hvtrace/abi.h).
 *   hvtrace-agent version   ABI version (a hypercall any CPL may make)
 *   hvtrace-agent status    needs CPL 0: from user space it shows the refusal
 * Exit status: 0 ok, 1 not running under hvtrace, 2 hypercall error.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cpuid.h>

#include "hvtrace/abi.h"

static int is_amd;

static int hvtrace_present(void)
{
	unsigned a, b, c, d;
	__cpuid(0, a, b, c, d);
	is_amd = (b == 0x68747541 || b == 0x6f677948);
	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 31)))
		return 0;
	__cpuid(HVTRACE_CPUID_BASE, a, b, c, d);
	return b == HVTRACE_CPUID_SIG_EBX && c == HVTRACE_CPUID_SIG_ECX &&
	       d == HVTRACE_CPUID_SIG_EDX && a >= HVTRACE_CPUID_VERSION;
}

static int64_t hypercall(uint64_t nr, uint64_t *b, uint64_t *c, uint64_t *d)
{
	uint64_t a = nr;
	if (is_amd)
		asm volatile("vmmcall" : "+a"(a), "+b"(*b), "+c"(*c), "+d"(*d) :: "memory");
	else
		asm volatile("vmcall" : "+a"(a), "+b"(*b), "+c"(*c), "+d"(*d) :: "memory");
	return (int64_t)a;
}

static const char *err_name(int64_t r)
{
	switch (-r) {
	case HVTRACE_EPERM: return "EPERM: needs CPL 0";
	case HVTRACE_EFAULT: return "EFAULT: bad buffer";
	case HVTRACE_EINVAL: return "EINVAL";
	case HVTRACE_ENOSYS: return "ENOSYS: unknown hypercall";
	}
	return "unknown error";
}

static int usage(FILE *f)
{
	fprintf(f, "usage: hvtrace-agent version|status|--help\n"
		   "  version  print the hypervisor's ABI version and the vCPU that answered\n"
		   "           (exit 1 if not under hvtrace)\n"
		   "  status   ask for the status page (needs kernel privilege; from user\n"
		   "           space the hypervisor refuses with EPERM)\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(stderr);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return usage(stdout);
	if (strcmp(argv[1], "version") && strcmp(argv[1], "status"))
		return usage(stderr);

	if (!hvtrace_present()) {
		printf("hvtrace-agent: not running under hvtrace\n");
		return 1;
	}
	uint64_t b = 0, c = 0, d = 0;
	if (!strcmp(argv[1], "version")) {
		int64_t r = hypercall(HVTRACE_HC_VERSION, &b, &c, &d);
		if (r) {
			printf("hvtrace-agent: version hypercall failed: %lld (%s)\n", (long long)r, err_name(r));
			return 2;
		}
		printf("hvtrace-agent: hvtrace ABI %u.%u, features %#llx", (unsigned)(b >> 16),
		       (unsigned)(b & 0xffff), (unsigned long long)c);
		/* ABI 1.3 names the vCPU that answered (taskset picks the CPU) */
		if ((b & 0xffff) >= 3 || (b >> 16) > 1)
			printf(", vCPU %u (APIC ID %u)", (unsigned)d, (unsigned)(d >> 32));
		printf("\n");
		return 0;
	}
	static struct hvtrace_status st;
	b = (uint64_t)(uintptr_t)&st; /* not a physical address: must be refused anyway */
	c = sizeof(st);
	int64_t r = hypercall(HVTRACE_HC_STATUS, &b, &c, &d);
	printf("hvtrace-agent: status hypercall from user space: %lld (%s)\n", (long long)r,
	       r ? err_name(r) : "accepted");
	return r ? 2 : 0;
}
