/*
 * hvtrace-agent: the guest side of hvtrace, run inside the guest OS (Linux
 * user space, static). Finds the hypervisor through CPUID and talks to it
 * with hypercalls (include/hvtrace/abi.h).
 *   hvtrace-agent version   ABI version (a hypercall any CPL may make)
 *   hvtrace-agent status    needs CPL 0: from user space it shows the refusal
 *   hvtrace-agent symbols   the running kernel's text symbols (/proc/kallsyms,
 *                           with KASLR's addresses, modules too) as one block
 *                           for the host's `hvtrace symbols` (gzip, base64)
 * Exit status: 0 ok, 1 not running under hvtrace (symbols: unreadable or
 * hidden addresses), 2 hypercall or usage error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cpuid.h>
#include <zlib.h>

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

/* The vendor's instruction, whichever backend runs (docs/hypercalls.md):
 * under SVM an Intel guest's VMCALL arrives as #UD and is taken as the
 * hypercall */
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
	fprintf(f, "usage: hvtrace-agent version|status|symbols|--help\n"
		   "  version  print the hypervisor's ABI version and the vCPU that answered\n"
		   "           (exit 1 if not under hvtrace)\n"
		   "  status   ask for the status page (needs kernel privilege; from user\n"
		   "           space the hypervisor refuses with EPERM)\n"
		   "  symbols  print the running kernel's text symbols, modules included, as\n"
		   "           they are now (KASLR too), between HVTRACE-KSYMS-BEGIN and\n"
		   "           HVTRACE-KSYMS-END lines (gzip, base64); on the console the\n"
		   "           host's `hvtrace symbols LOG -o System.map` takes them back.\n"
		   "           Needs root (kptr_restrict hides the addresses otherwise)\n");
	return f == stdout ? 0 : 2;
}

/* The text symbols of /proc/kallsyms (types t T w W, module ones with
 * their [module]), gzip-compressed, base64 in 76-column lines between
 * the markers. 1: unreadable, or every address 0 (not root). */
static int symbols(void)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	FILE *k = fopen("/proc/kallsyms", "r");
	char line[512];
	size_t cap = 1 << 20, len = 0, n = 0, nonzero = 0;
	char *text = malloc(cap);
	if (!k || !text) {
		fprintf(stderr, "hvtrace-agent: symbols: cannot read /proc/kallsyms\n");
		return 1;
	}
	while (fgets(line, sizeof(line), k)) {
		char type = 0;
		unsigned long long addr;
		if (sscanf(line, "%llx %c", &addr, &type) != 2 || !strchr("tTwW", type))
			continue;
		size_t l = strlen(line);
		if (len + l + 1 > cap) {
			char *t = realloc(text, cap *= 2);
			if (!t) {
				fprintf(stderr, "hvtrace-agent: symbols: out of memory\n");
				return 1;
			}
			text = t;
		}
		memcpy(text + len, line, l);
		len += l;
		n++;
		nonzero += addr != 0;
	}
	fclose(k);
	if (!n || !nonzero) {
		fprintf(stderr, "hvtrace-agent: symbols: %s\n",
			!n ? "no text symbols in /proc/kallsyms"
			   : "every address in /proc/kallsyms is 0: run as root (kernel.kptr_restrict)");
		return 1;
	}
	z_stream z = { 0 };
	uLong out_cap = compressBound(len) + 64;
	unsigned char *gz = malloc(out_cap);
	/* windowBits 15 + 16: a gzip stream, as gunzip reads */
	if (!gz || deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		fprintf(stderr, "hvtrace-agent: symbols: zlib failed\n");
		return 1;
	}
	z.next_in = (unsigned char *)text;
	z.avail_in = (uInt)len;
	z.next_out = gz;
	z.avail_out = (uInt)out_cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		fprintf(stderr, "hvtrace-agent: symbols: zlib failed\n");
		return 1;
	}
	size_t gzlen = z.total_out, col = 0;
	deflateEnd(&z);
	printf("HVTRACE-KSYMS-BEGIN\n");
	for (size_t i = 0; i < gzlen; i += 3) {
		unsigned v = (unsigned)gz[i] << 16 | (i + 1 < gzlen ? (unsigned)gz[i + 1] << 8 : 0) |
			     (i + 2 < gzlen ? gz[i + 2] : 0);
		char q[4] = { b64[v >> 18], b64[(v >> 12) & 63], i + 1 < gzlen ? b64[(v >> 6) & 63] : '=',
			      i + 2 < gzlen ? b64[v & 63] : '=' };
		fwrite(q, 1, 4, stdout);
		if ((col += 4) == 76) {
			putchar('\n');
			col = 0;
		}
	}
	if (col)
		putchar('\n');
	printf("HVTRACE-KSYMS-END\n");
	fprintf(stderr, "hvtrace-agent: symbols: %zu text symbols, %zu bytes compressed\n", n, gzlen);
	free(gz);
	free(text);
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(stderr);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return usage(stdout);
	if (!strcmp(argv[1], "symbols"))
		return symbols();	/* /proc/kallsyms needs no hypervisor */
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
