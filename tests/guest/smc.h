/*
 * Self- and cross-modifying code for the fast engine's decoded-block cache
 * (issue #16; hv/trace/engine.c find_stop): a function in a page of its
 * own, the code bytes 0-3 to write before each of SMC_STEPS calls, and the
 * check of the BTS records the calls made inside the page. Between calls
 * the code's JMP gets another target, the opcode itself changes (JMP ->
 * JNZ not taken -> JZ taken), the JZ another target, and a JMP is written
 * over the instruction before it (a branch where the block had none): a
 * stale block misses the JZ's new target and the new JMP. t_bts writes the
 * code itself, t_smp from another processor.
 */
#ifndef HVTRACE_GUEST_SMC_H
#define HVTRACE_GUEST_SMC_H
#include "guest.h"

static const uint8_t smc_code[] = {
	0x31, 0xc0,		/*  0: xor eax, eax (ZF = 1) */
	0xeb, 0x06,		/*  2: jmp 10 (patched: target, opcode) */
	0xb0, 0x01,		/*  4: mov al, 1 */
	0xc3,			/*  6: ret */
	0x90, 0x90, 0x90,	/*  7 */
	0xb0, 0x02,		/* 10: mov al, 2 */
	0xc3,			/* 12: ret */
	0x90,			/* 13 */
	0xb0, 0x03,		/* 14: mov al, 3 */
	0xc3,			/* 16: ret */
};

/* the code bytes 0-3 before each call, and what the call returns */
static const struct { uint8_t b[4]; uint64_t ret; } smc_step[] = {
	{ { 0x31, 0xc0, 0xeb, 0x06 }, 2 },	/* jmp 10 */
	{ { 0x31, 0xc0, 0xeb, 0x0a }, 3 },	/* jmp 14 */
	{ { 0x31, 0xc0, 0x75, 0x0a }, 1 },	/* jnz 14, not taken */
	{ { 0x31, 0xc0, 0x74, 0x0a }, 3 },	/* jz 14, taken */
	{ { 0x31, 0xc0, 0x74, 0x06 }, 2 },	/* jz 10, taken */
	{ { 0xeb, 0x0c, 0x74, 0x06 }, 3 },	/* jmp 14 at 0 */
	{ { 0x31, 0xc0, 0xeb, 0x06 }, 2 },	/* jmp 10 */
};
#define SMC_STEPS (sizeof(smc_step) / sizeof(smc_step[0]))

/* A page of code (0 when none): the function at its start, INT3 after. */
static uint64_t smc_page(void)
{
	EFI_PHYSICAL_ADDRESS page = 0;
	if (EFI_ERROR(uefi_call_wrapper(BS->AllocatePages, 4, AllocateAnyPages, EfiLoaderCode, 1, &page)))
		return 0;
	volatile uint8_t *code = (volatile uint8_t *)(uintptr_t)page;
	for (unsigned i = 0; i < 4096; i++)
		code[i] = 0xcc;
	for (unsigned i = 0; i < sizeof(smc_code); i++)
		code[i] = smc_code[i];
	return page;
}

/* Reports `name` (the records inside the page, in order, and one call
 * into it per step, among the n records) and `name`_ran (what each call
 * returned), printing every record as "<name> record N:". */
static void smc_check(const char *name, const struct bts_record64 *r, unsigned n, unsigned max, uint64_t c,
		      const uint64_t *got)
{
	const struct { uint64_t from, to; } want[] = {
		{ c + 2, c + 10 }, { c + 12, 0 },	/* jmp 10 */
		{ c + 2, c + 14 }, { c + 16, 0 },	/* jmp 14 */
		{ c + 6, 0 },				/* jnz not taken: ret at 6 */
		{ c + 2, c + 14 }, { c + 16, 0 },	/* jz 14 taken */
		{ c + 2, c + 10 }, { c + 12, 0 },	/* jz 10 taken */
		{ c + 0, c + 14 }, { c + 16, 0 },	/* jmp 14 at 0 */
		{ c + 2, c + 10 }, { c + 12, 0 },	/* jmp 10 again */
	};
	const unsigned nwant = sizeof(want) / sizeof(want[0]);
	unsigned k = 0, bad = 0, calls = 0;
	for (unsigned i = 0; i < n && i < max; i++) {
		report_info("%s record %u: %lx -> %lx", name, i, r[i].from, r[i].to);
		if (r[i].to == c)
			calls++;
		if (r[i].from < c || r[i].from >= c + 4096)
			continue;
		/* a RET leaves the page; its target is the caller's */
		if (k >= nwant || r[i].from != want[k].from || (want[k].to ? r[i].to != want[k].to : r[i].to - c < 4096))
			bad++;
		k++;
	}
	report(k == nwant && !bad && calls == SMC_STEPS && n < max, name,
	       "%u records in the page (want %u), %u differ, %u calls into it, %u records in all", k, nwant, bad,
	       calls, n);
	bool ran = true;
	for (unsigned i = 0; i < SMC_STEPS; i++)
		ran = ran && got[i] == smc_step[i].ret;
	char ran_name[64];
	hv_snprintf(ran_name, sizeof(ran_name), "%s_ran", name);
	report(ran, ran_name, "returned %lu %lu %lu %lu %lu %lu %lu", got[0], got[1], got[2], got[3], got[4], got[5],
	       got[6]);
}

#endif
