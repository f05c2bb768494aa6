/* Why VMRUN refused a guest state (hv/svm/check.c): each consistency check
 * of AMD APM Vol. 2 15.5.1 named on a state that fails it alone, none on a
 * good long-mode state, and the first in the APM's order when several fail. */
#include <string.h>
#include "unit.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "svm/svm.h"

static const struct svm_limits lim = { .cr4_valid = 0x3f77ff, .phys_bits = 40 };

/* a 64-bit guest as the firmware runs one */
static struct svm_entry_state good(void)
{
	return (struct svm_entry_state){
		.cr0 = CR0_PG | CR0_PE | (1ull << 16) | 0x32, .cr3 = 0x1fc01000, .cr4 = 0x668,
		.efer = EFER_SVME | EFER_LME | EFER_LMA | EFER_NXE, .dr6 = 0xffff0ff0, .dr7 = 0x400,
		.intercept_misc4 = INTERCEPT4_VMRUN, .asid = 1, .cs_attr = 0xa9b,
	};
}

static void fails(struct svm_entry_state s, const char *needle)
{
	const char *why = svm_vmrun_refusal(&s, &lim);
	CHECK(why && strstr(why, needle), "want '%s', got '%s'", needle, why ? why : "(none)");
}

int main(void)
{
	struct svm_entry_state s = good();
	const char *why = svm_vmrun_refusal(&s, &lim);
	CHECK(!why, "a good state refused: %s", why);

	s = good(); s.efer &= ~EFER_SVME; fails(s, "EFER.SVME");
	s = good(); s.cr0 |= CR0_NW; fails(s, "CR0.NW is set with CR0.CD clear");
	s = good(); s.cr0 |= CR0_NW | CR0_CD;
	CHECK(!svm_vmrun_refusal(&s, &lim), "NW with CD is legal");
	s = good(); s.cr0 |= 1ull << 40; fails(s, "CR0 bits 63:32");
	s = good(); s.cr3 |= 1ull << 45; fails(s, "CR3");
	s = good(); s.cr3 |= 1ull << 39;
	CHECK(!svm_vmrun_refusal(&s, &lim), "CR3 below the address width is legal");
	s = good(); s.cr4 |= 1ull << 15; fails(s, "CR4 has a reserved");
	s = good(); s.cr4 |= 1ull << 32; fails(s, "CR4 has a reserved");
	s = good(); s.dr6 |= 1ull << 32; fails(s, "DR6 bits 63:32");
	s = good(); s.dr7 |= 1ull << 40; fails(s, "DR7 bits 63:32");
	s = good(); s.efer |= 1ull << 3; fails(s, "EFER has a reserved");
	s = good(); s.efer |= 1ull << 9; fails(s, "EFER has a reserved");
	s = good(); s.efer |= 1ull << 50; fails(s, "EFER has a reserved");
	s = good(); s.cr4 &= ~CR4_PAE; fails(s, "CR4.PAE clear");
	s = good(); s.cr0 &= ~CR0_PE; fails(s, "CR0.PE clear");
	s = good(); s.cs_attr |= VMCB_ATTR_DB; fails(s, "CS.L and CS.D");
	s = good(); s.cs_attr = 0xc9b;	/* 32-bit code in compatibility mode: legal */
	CHECK(!svm_vmrun_refusal(&s, &lim), "CS.D without CS.L is legal");
	s = good(); s.intercept_misc4 = 0; fails(s, "VMRUN intercept");
	s = good(); s.asid = 0; fails(s, "ASID is zero");
	s = good(); s.event_inj = EVENTINJ_V | (1u << 8) | 32; fails(s, "EVENTINJ");
	s = good(); s.event_inj = EVENTINJ_V | EVENTINJ_TYPE_EXCEPTION | 2; fails(s, "EVENTINJ");
	s = good(); s.event_inj = EVENTINJ_V | EVENTINJ_TYPE_EXCEPTION | 13 | EVENTINJ_EV;
	CHECK(!svm_vmrun_refusal(&s, &lim), "a #GP with its error code is legal");
	/* 32-bit paging (no LME): CR3's high bits are not checked, nor PAE */
	s = good(); s.efer = EFER_SVME; s.cr4 = 0x10; s.cs_attr = 0xc9b;
	CHECK(!svm_vmrun_refusal(&s, &lim), "a legacy-mode guest is legal: %s", svm_vmrun_refusal(&s, &lim));
	/* several at once: the APM's order */
	s = good(); s.asid = 0; s.cr0 |= CR0_NW; fails(s, "CR0.NW");
	return unit_done("test_svm_check");
}
