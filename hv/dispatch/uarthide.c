/* The hypervisor's log UART, hidden from the guest (root mode, on exits).
 * With serial.hide the backends intercept the UART's 8 ports (their I/O
 * bitmaps: dispatch/ioport.c) and the guest finds no device there, as on
 * an ISA bus with nothing decoding those addresses: every read returns all
 * ones, every write is dropped. So a guest OS probing for a second UART
 * (Linux's 8250 driver: scratch register, loopback test, LSR) sees none,
 * and never reprograms the hypervisor's port or puts it in loopback.
 *
 * An access that also covers ports outside the 8 (a word or dword IN/OUT
 * starting just below them) is made byte by byte there on the real ports.
 *
 * String forms (INS/OUTS, with or without REP) are emulated in 64-bit code
 * (CS.L in IA-32e mode): INS stores all ones at ES:rDI, OUTS reads DS:rSI
 * (or its segment override) and drops what it read, rDI/rSI move by the
 * element size in RFLAGS.DF's direction, a REP counts rCX down; the
 * registers are the address size's (67h: 32 bits, zero-extended as any
 * 32-bit register write in 64-bit mode, SDM Vol. 1 3.4.1.1). Each exit does
 * at most one page's elements (a REP with a huge rCX is resumed at the
 * same instruction for its next part, interruptible between parts as the
 * processor's own REP is, SDM Vol. 2B INS/OUTS "REP"). The memory operand
 * goes through the same checks the processor makes (arch/x86/pgwalk.c:
 * canonical form, present, R/W with CR0.WP, U/S at CPL 3, SMAP, SMEP, NX is
 * no concern, protection keys, reserved bits): a failure gets the
 * processor's fault, #GP(0) for a non-canonical address (SDM Vol. 3 6.15
 * "Interrupt 13", 64-bit mode), #PF with CR2 and its error code (4.7) for
 * the rest, with the elements done so far kept, as the processor's REP
 * keeps them. Only guest RAM is ever read or written (base/gmem.c), with
 * the accessed and dirty bits set as the processor sets them. What is not
 * modelled gets #GP(0), logged once: string I/O outside 64-bit code, a
 * memory operand in MMIO (or anything but guest RAM), paging with CR4.PKS
 * or CET, a supervisor write to a read-only page under CR0.WP = 0.
 *
 * A vCPU whose branches are traced takes these exits as the untraced one
 * does: the engines leave IN/OUT/INS/OUTS to the processor, whose intercept
 * brings them here, and dispatch/event.c's hv_emulation_done() gives the
 * engine the completed instruction (its single-step trap) as for the PCI
 * ports' (dispatch/pcihide.c). */
#include "arch/x86/cpu.h"
#include "arch/x86/decode/decode.h"
#include "arch/x86/paging.h"
#include "arch/x86/pgwalk.h"
#include "arch/x86/uart.h"
#include "arch/x86/vectors.h"
#include "base/gmem.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/mm.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "dispatch/uarthide.h"

static u64 io_exits, string_parts;	/* logged (debug) at powers of two */

u32 uarthide_io_ports(u16 *first)
{
	if (!hv.boot.serial_hide || !hv.boot.serial_port)
		return 0;
	*first = hv.boot.serial_port;
	return MIN(UART_NR_PORTS, 0x10000u - hv.boot.serial_port);
}

static bool hidden(u32 port)
{
	u16 first;
	u32 n = uarthide_io_ports(&first);
	return port - first < n;
}

/* What is not modelled: #GP(0), said once */
static void refuse(struct vcpu *v, const struct hv_event *ev, const char *why)
{
	static bool said;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		LOG_WARN("vcpu %u: string I/O at the hidden log UART's port %x (rip %lx): %s: #GP(0) (said once)",
			 v->id, ev->io_port, v->rip, why);
	hv_inject_fault(v, X86_GP, true, 0);
}

/* pgwalk's refusal as the processor's fault at `lin`; false for a refusal
 * that is no fault of the guest's (not modelled) */
static bool walk_fault(struct vcpu *v, const struct pgwalk_ctl *c, int st, u64 lin, bool write)
{
	u32 err = (write ? PF_ERR_W : 0) | (c->cpl == 3 ? PF_ERR_U : 0);
	switch (st) {
	case PGWALK_CANONICAL:
		hv_inject_fault(v, X86_GP, true, 0);
		return true;
	case PGWALK_NOT_PRESENT:
		break;
	case PGWALK_RESERVED:
		err |= PF_ERR_P | PF_ERR_RSVD;
		break;
	case PGWALK_RIGHTS:
		err |= PF_ERR_P;
		break;
	default:
		return false;
	}
	hv.ops->set_cr2(v, lin);
	hv_inject_fault(v, X86_PF, true, err);
	return true;
}

static const u64 *ram_entry(void *ctx, u64 pa)
{
	return memmap_contains(&hv.guest_ram, pa, 8) ? guest_pa_ptr(pa) : NULL;
}

/* The processor's checks of an access at `lin` (its page); the guest's
 * PKRU asked of the backend when a user page's protection key matters */
static int walk(struct vcpu *v, struct pgwalk_ctl *c, u64 lin, enum pgwalk_access acc)
{
	u64 gpa, page;
	int st = pgwalk(c, ram_entry, NULL, lin, acc, &gpa, &page);
	if (st == PGWALK_PKEY && !c->pkru_known && hv.ops->guest_pkru && hv.ops->guest_pkru(v, &c->pkru)) {
		c->pkru_known = true;
		st = pgwalk(c, ram_entry, NULL, lin, acc, &gpa, &page);
	}
	return st;
}

/* An ES: (INS) or DS:-with-override (OUTS) base in 64-bit mode: 0 but for
 * FS and GS (SDM Vol. 3 3.4.4) */
static u64 seg_base(struct vcpu *v, u8 prefix)
{
	struct hv_segment s;
	if (prefix != 0x64 && prefix != 0x65)
		return 0;
	hv.ops->get_seg(v, prefix == 0x64 ? SEG_FS : SEG_GS, &s);
	return s.base;
}

static void string_io(struct vcpu *v, const struct hv_event *ev)
{
	bool in = ev->io_flags & HV_IO_IN;
	u64 cs_base;
	if (gmem_code_mode(v, &cs_base) != DEC_MODE_64) {
		refuse(v, ev, "not in 64-bit code");
		return;
	}
	/* the exit says direction, size and port; the prefixes (address size,
	 * segment, REP) are the instruction's: one that is no longer the
	 * INS/OUTS that exited (another processor wrote over it) is left to
	 * run again as it now is */
	u8 b[15];
	struct dec_insn d;
	u8 op = (in ? 0x6c : 0x6e) | (ev->io_size > 1);
	if (gmem_decode(v, v->rip, v->rip, DEC_MODE_64, b, &d) != DEC_OK || d.encoding != DEC_ENC_LEGACY ||
	    d.map != 0 || d.opcode != op || (op & 1 && MIN(d.opsize, 4) != ev->io_size))
		return;
	u32 size = ev->io_size;
	int preg = in ? GPR_RDI : GPR_RSI;
	u64 amask = d.addrsize == 4 ? 0xffffffffull : ~0ull;
	u64 count = d.rep ? v->gpr[GPR_RCX] & amask : 1;
	if (!count) {
		hv_skip_insn(v, ev, 1);
		return;
	}
	/* this part: the elements within one page in DF's direction, or
	 * one element across two */
	bool down = v->rflags & RFLAGS_DF;
	u64 lin = (in ? 0 : seg_base(v, d.seg)) + (v->gpr[preg] & amask);
	u64 off = lin & (PAGE_SIZE - 1), k;
	if (off + size > PAGE_SIZE)
		k = 1;
	else
		k = down ? off / size + 1 : (PAGE_SIZE - off) / size;
	k = MIN(k, count);
	u64 lo = down ? lin - (k - 1) * size : lin, len = k * size;

	struct pgwalk_ctl c;
	gmem_walk_ctl(v, &c);
	c.ad_set = true;	/* gmem's copy below sets them */
	enum pgwalk_access acc = in ? PGWALK_WRITE : PGWALK_READ;
	u64 hi = lo + len - 1;
	int st = walk(v, &c, lo, acc);
	u64 at = lo;
	if (st == PGWALK_OK && (hi >> PAGE_SHIFT) != (lo >> PAGE_SHIFT)) {
		at = hi & ~(u64)(PAGE_SIZE - 1);
		st = hi < lo ? PGWALK_CANONICAL : walk(v, &c, at, acc);
	}
	if (st != PGWALK_OK) {
		if (!walk_fault(v, &c, st, at, in))
			refuse(v, ev, st == PGWALK_NOT_RAM ? "its page tables are not guest RAM"
							   : "paging this hypervisor does not model");
		return;
	}
	u8 buf[256];
	memset(buf, 0xff, sizeof(buf));
	for (u64 done = 0; done < len; done += sizeof(buf)) {
		u64 n = MIN(sizeof(buf), len - done);
		if (in ? !gmem_write_linear(v, lo + done, buf, n) : gmem_read_linear(v, lo + done, buf, n) != n) {
			/* a part of this page written already is as a
			 * processor's partial store: not counted done */
			refuse(v, ev, "its memory operand is not writable guest RAM");
			return;
		}
	}
	string_parts++;
	if (!(string_parts & (string_parts - 1)))
		LOG_DEBUG("%lu parts of string I/O at the hidden log UART", string_parts);
	u64 step = k * size;
	u64 ptr = down ? v->gpr[preg] - step : v->gpr[preg] + step;
	v->gpr[preg] = (v->gpr[preg] & ~amask) | (ptr & amask);
	if (d.addrsize == 4)
		v->gpr[preg] &= amask;	/* a 32-bit register write zero-extends */
	if (d.rep) {
		v->gpr[GPR_RCX] = d.addrsize == 4 ? (count - k) & amask : count - k;
		if (count > k)
			return;	/* its next part at the next entry: RIP stays */
	}
	hv_skip_insn(v, ev, 1);
}

void uarthide_io(struct vcpu *v, const struct hv_event *ev)
{
	u8 size = ev->io_size;
	io_exits++;
	if (!(io_exits & (io_exits - 1)))
		LOG_DEBUG("%lu port I/O exits at the hidden log UART", io_exits);
	if (ev->io_flags & HV_IO_STRING) {
		string_io(v, ev);
		return;
	}
	if (size != 1 && size != 2 && size != 4) {
		refuse(v, ev, "an access size the processor has not");
		return;
	}
	/* byte by byte: all ones and nothing written at the hidden ports, the
	 * real port elsewhere */
	u32 val = (u32)v->gpr[GPR_RAX], r = 0;
	for (u32 i = 0; i < size; i++) {
		u32 port = ev->io_port + i;
		if (ev->io_flags & HV_IO_IN)
			r |= (u32)(hidden(port) ? 0xff : inb((u16)port)) << (8 * i);
		else if (!hidden(port))
			outb((u16)port, (u8)(val >> (8 * i)));
	}
	if (ev->io_flags & HV_IO_IN) {
		u64 mask = size == 4 ? ~0ull : (1ull << (8 * size)) - 1;
		/* a 32-bit destination is zero-extended (SDM Vol. 1 3.4.1.1) */
		v->gpr[GPR_RAX] = size == 4 ? r : (v->gpr[GPR_RAX] & ~mask) | r;
	}
	hv_skip_insn(v, ev, 1);
}
