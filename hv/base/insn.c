/* The end of an instruction the hypervisor emulated, as far as the guest's
 * RIP goes, and the MOV to/from a control or debug register it decodes:
 * used by core, the engine and the backends alike. */
#include "base/gmem.h"
#include "base/log.h"
#include "base/vcpu.h"

void hv_skip_insn(struct vcpu *v, const struct hv_event *ev, u8 base_len)
{
	u64 base;
	enum dec_mode mode = gmem_code_mode(v, &base);
	u64 len = ev->insn_len;

	if (!len) {
		/* No next-RIP from the CPU (QEMU's TCG has no NRIP save): decode
		 * the instruction that exited, prefixes and all. */
		u8 b[15];
		struct dec_insn insn;
		if (gmem_decode(v, base + v->rip, v->rip, mode, b, &insn) == DEC_OK) {
			len = insn.len;
		} else {
			/* code outside the RAM and reserved memory the
			 * firmware's map names (MMIO, say), or changed under
			 * us: assume the bare opcode, as unprefixed code has
			 * it. Said once, then at debug. */
			static bool said;
			if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
				LOG_WARN("vcpu %u: cannot read the exiting instruction at %lx (outside guest "
					 "memory?): taken as %u bytes (said once)", v->id, v->rip, base_len);
			else
				LOG_DEBUG("vcpu %u: exiting instruction at %lx taken as %u bytes", v->id,
					  v->rip, base_len);
			len = base_len;
		}
	}
	v->rip += len;
	if (mode == DEC_MODE_32)
		v->rip &= 0xffffffffull;
	else if (mode == DEC_MODE_16)
		v->rip &= 0xffffull;
}

bool hv_decode_mov_crdr(struct vcpu *v, struct hv_mov_crdr *m)
{
	u8 b[15];
	struct dec_insn in;
	u64 base;

	m->mode = gmem_code_mode(v, &base);
	if (gmem_decode(v, base + v->rip, v->rip, m->mode, b, &in) != DEC_OK || in.encoding != DEC_ENC_LEGACY ||
	    in.map != 1 || in.opcode < 0x20 || in.opcode > 0x23)
		return false;
	m->opcode = in.opcode;
	m->reg = ((in.modrm >> 3) & 7) | (((in.rex >> 2) & 1) << 3);
	m->gpr = (in.modrm & 7) | ((in.rex & 1) << 3);
	return true;
}
