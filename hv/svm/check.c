/*
 * Why VMRUN refused a guest state (exit code -1, VMEXIT_INVALID): the
 * consistency checks of AMD APM Vol. 2 15.5.1, tried in its order on the
 * state as the VMCB holds it, the first that fails named. Only a guest
 * state the emulator let through reaches VMRUN this way (QEMU's TCG takes
 * some writes the hardware faults: issue #15); the hypervisor then ends
 * the guest saying which field it was (dispatch/event.c). Pure: the
 * processor's limits come in `lim`.
 */
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "svm/svm.h"
#include "svm/vmcb.h"

/* EFER bits that must be zero on every processor (APM Vol. 2 3.1.7):
 * 1-7, 9 and 32-63; the model-specific ones above 15 are left alone */
#define EFER_MBZ_ALWAYS		(0xfeull | (1ull << 9) | (~0ull << 32))

const char *svm_vmrun_refusal(const struct svm_entry_state *s, const struct svm_limits *lim)
{
	bool lme_pg = (s->efer & EFER_LME) && (s->cr0 & CR0_PG);
	if (!(s->efer & EFER_SVME))
		return "EFER.SVME is clear";
	if (!(s->cr0 & CR0_CD) && (s->cr0 & CR0_NW))
		return "CR0.NW is set with CR0.CD clear";
	if (s->cr0 >> 32)
		return "CR0 bits 63:32 are not zero";
	if ((s->efer & EFER_LMA) && lim->phys_bits < 64 && (s->cr3 & ~0ull << lim->phys_bits & ~(1ull << 63)))
		return "CR3 has bits set above the physical address width (MBZ)";
	if (s->cr4 & ~lim->cr4_valid)
		return "CR4 has a reserved (MBZ) bit set";
	if (s->dr6 >> 32)
		return "DR6 bits 63:32 are not zero";
	if (s->dr7 >> 32)
		return "DR7 bits 63:32 are not zero";
	if (s->efer & EFER_MBZ_ALWAYS)
		return "EFER has a reserved (MBZ) bit set";
	if (lme_pg && !(s->cr4 & CR4_PAE))
		return "EFER.LME and CR0.PG are set with CR4.PAE clear";
	if (lme_pg && !(s->cr0 & CR0_PE))
		return "EFER.LME and CR0.PG are set with CR0.PE clear";
	if (lme_pg && (s->cr4 & CR4_PAE) && (s->cs_attr & VMCB_ATTR_L) && (s->cs_attr & VMCB_ATTR_DB))
		return "EFER.LME, CR0.PG, CR4.PAE, CS.L and CS.D are all set";
	if (!(s->intercept_misc4 & INTERCEPT4_VMRUN))
		return "the VMRUN intercept is clear";
	if (!s->asid)
		return "the ASID is zero";
	u32 type = (s->event_inj >> 8) & 7;
	if ((s->event_inj & EVENTINJ_V) && (type == 1 || type > 4 || (type == 3 && (u8)s->event_inj == 2)))
		return "EVENTINJ holds an illegal event (APM 15.20)";
	return NULL;
}
