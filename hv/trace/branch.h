/* Branch semantics for the engines (trace/branch.c): whether a decoded
 * transfer is taken and where it goes, computed from the guest's state
 * before it runs. Host-tested (tests/unit/test_branch.c). */
#ifndef HV_TRACE_BRANCH_H
#define HV_TRACE_BRANCH_H

#include "base/vcpu.h"
#include "arch/x86/decode/decode.h"

/* The record kind (enum hvtrace_rec_kind) and branch type of a transfer */
u8 rec_kind_of(const struct dec_insn *in, u32 *type);
/* A Jcc, LOOPcc or JrCXZ with these flags and RCX */
bool branch_taken(const struct dec_insn *insn, u64 rflags, u64 rcx);
bool is_legacy_op(const struct dec_insn *insn, u8 map, u8 op);
/* SS.base + RSP/ESP/SP, as the mode and SS.B say */
u64 stack_top(struct vcpu *v, enum dec_mode mode);
/* Where the near branch `in` at RIP goes; false: left to a single step */
bool resolve_near(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 cs_base,
		  bool *taken, u64 *to);
/* Whether a decoded kind ends a fast-engine block */
bool ends_block(const struct dec_insn *in);
/* Whether the instruction leaves the arithmetic flags as they were,
 * whatever its operands (a short list: MOV, LEA, NOP...) */
bool keeps_flags(const struct dec_insn *in);

#endif
