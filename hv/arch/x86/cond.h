/* hv/arch/x86/cond.h — the condition codes (tttn) of Jcc, SETcc and CMOVcc, evaluated on
 * RFLAGS (SDM Vol. 1 Appendix B, Table B-1; Vol. 2A Jcc). Shared by the branch engines'
 * semantics (trace/branch.c) and the interpreter (arch/x86/interp). */
#ifndef HV_X86_COND_H
#define HV_X86_COND_H

#include "arch/x86/types.h"
#include "arch/x86/paging.h"

/* cc: the low four bits of the opcode (70+cc, 0F 80+cc, 0F 90+cc, 0F 40+cc) */
static inline bool x86_cond(unsigned cc, u64 f)
{
	bool cf = f & RFLAGS_CF, zf = f & RFLAGS_ZF, sf = f & RFLAGS_SF, of = f & RFLAGS_OF;
	bool c;
	switch ((cc & 0xf) >> 1) {
	case 0: c = of; break;
	case 1: c = cf; break;
	case 2: c = zf; break;
	case 3: c = cf || zf; break;
	case 4: c = sf; break;
	case 5: c = f & RFLAGS_PF; break;
	case 6: c = sf != of; break;
	default: c = zf || sf != of; break;
	}
	return (cc & 1) ? !c : c;
}

#endif
