/* Keeps the host channel device out of the guest's sight (root mode, on
 * exits; pcihide_init at start-up). The loader found the device before the
 * hypervisor started (efi-loader/pci.c); here:
 *  - its BAR0 and BAR2 pages and its 4 KiB ECAM page (PCIe 7.2.2) join
 *    hv.hidden, so the nested tables send the guest's accesses to the sink
 *    page (reads 0xff, writes stay in the sink, never reach the device);
 *  - configuration mechanism #1 (PCI 3.0 3.2.2.3.2) is intercepted: the
 *    guest's CONFIG_ADDRESS is remembered as it writes it, and CONFIG_DATA
 *    accesses naming the device read all-ones and write nothing, as for an
 *    empty slot; all other accesses are performed on the real ports;
 *  - a write that resets the machine through 0xCF9 freezes the recorder
 *    first (port 0xCF9 is watched, even without a device, when a recorder
 *    is configured).
 * String forms (INS/OUTS, REP or not) on these ports get #GP(0), logged
 * once: no firmware or OS uses them for configuration space, and emulating
 * them would mean walking guest memory for nothing. */
#include "hvtrace/record.h"
#include "arch/x86/cpu.h"
#include "arch/x86/paging.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/pcicfg.h"
#include "dispatch/pcihide.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "trace/trace.h"
#include "trace/rec.h"

static struct pci_hide_fn hide_fn;
static u32 guest_cf8;		/* the guest's CONFIG_ADDRESS */
static bool string_io_logged;
static u64 io_exits, io_hidden;	/* logged (debug) at powers of two, then every 8192 */
/* CONFIG_ADDRESS is one register of the platform, shared by every
 * processor: one guest access (the decision, then the port access made
 * for it) at a time */
static struct spinlock cf8_lock;

static bool hide_range(const char *what, u64 base, u64 size)
{
	u64 lo = ALIGN_DOWN(base, PAGE_SIZE), hi = ALIGN_UP(base + size, PAGE_SIZE);
	if (!size || hi <= lo || !memmap_add(&hv.hidden, lo, hi - lo)) {
		LOG_ERR("cannot hide the ivshmem %s [%lx, +%lx)", what, base, size);
		return false;
	}
	LOG_INFO("ivshmem %s hidden: %lx-%lx", what, lo, hi - 1);
	return true;
}

int pcihide_init(const struct hv_boot_ivshmem *iv)
{
	/* the CONFIG_ADDRESS the firmware left, until the guest writes its own */
	guest_cf8 = inl(PCI_CONFIG_ADDRESS);
	if (!iv->found) {
		LOG_INFO("no ivshmem channel: nothing to hide%s",
			 hv.boot.rec.flight.size || hv.boot.rec.stream.size
				 ? "; port 0xcf9 watched for resets (the recorder freezes on one)" : "");
		return HV_OK;
	}
	if (!hide_range("BAR0", iv->bar0_pa, iv->bar0_size) ||
	    !hide_range("BAR2", iv->bar2_pa, iv->bar2_size))
		return HV_ERR_BAD_BOOT;
	if (iv->ecam_pa && iv->bus >= iv->ecam_bus_start && iv->bus <= iv->ecam_bus_end) {
		u64 page = iv->ecam_pa + pci_ecam_offset(iv->bus, iv->dev, iv->fn, iv->ecam_bus_start);
		if (!hide_range("ECAM page", page, PAGE_SIZE))
			return HV_ERR_BAD_BOOT;
	} else {
		LOG_WARN("no ECAM for ivshmem %04x:%02x:%02x.%x: only port I/O config is filtered",
			 iv->segment, iv->bus, iv->dev, iv->fn);
	}
	/* mechanism #1 reaches segment 0 only */
	hide_fn = (struct pci_hide_fn){ iv->segment == 0, iv->bus, iv->dev, iv->fn };
	LOG_INFO("ivshmem %04x:%02x:%02x.%x hidden; ports %x-%x intercepted", iv->segment, iv->bus,
		 iv->dev, iv->fn, PCI_CONFIG_ADDRESS, PCI_CONFIG_DATA + 3);
	return HV_OK;
}

u32 pcihide_io_ports(u16 *first)
{
	if (hide_fn.active) {
		*first = PCI_CONFIG_ADDRESS;
		return 8;
	}
	/* a reset request matters only to a recorder that would freeze; every
	 * dword CONFIG_ADDRESS write covers 0xCF9 too, so watching it costs an
	 * exit per configuration access */
	if (!hv.boot.rec.flight.size && !hv.boot.rec.stream.size)
		return 0;
	*first = PCI_RESET_CONTROL;
	return 1;
}

static u32 port_in(u16 port, u8 size)
{
	return size == 1 ? inb(port) : size == 2 ? inw(port) : inl(port);
}

static void port_out(u16 port, u8 size, u32 val)
{
	if (size == 1)
		outb(port, (u8)val);
	else if (size == 2)
		outw(port, (u16)val);
	else
		outl(port, val);
}

void pcihide_io(struct vcpu *v, const struct hv_event *ev)
{
	u8 size = ev->io_size;
	bool in = ev->io_flags & HV_IO_IN;

	if ((ev->io_flags & HV_IO_STRING) || (size != 1 && size != 2 && size != 4)) {
		if (!string_io_logged)
			LOG_WARN("string I/O at port %x (rip %lx): #GP(0) (logged once)", ev->io_port,
				 v->rip);
		string_io_logged = true;
		hv_inject_fault(v, X86_GP, true, 0);
		return;
	}
	u32 mask = size == 4 ? ~0u : (1u << (8 * size)) - 1;
	u32 val = (u32)v->gpr[GPR_RAX] & mask;
	spin_lock(&cf8_lock);
	struct pci_io_decision d = pci_io_decide(&hide_fn, &guest_cf8, ev->io_port, size, in, val);

	io_hidden += d.hide;
	io_exits++;
	if (!(io_exits & (io_exits - 1)) || !(io_exits % 8192))
		LOG_DEBUG("%lu port I/O exits, %lu of them hidden accesses", io_exits, io_hidden);

	if (d.reset) {
		LOG_INFO("the guest resets the machine (port %x <- %x)", ev->io_port, val);
		rec_freeze(v, HVTRACE_FREEZE_RESET);
	}
	if (in) {
		u32 r = d.hide ? ~0u : port_in(ev->io_port, size);
		/* a 32-bit destination is zero-extended (SDM Vol. 1 3.4.1.1) */
		if (size == 4)
			v->gpr[GPR_RAX] = r;
		else
			v->gpr[GPR_RAX] = (v->gpr[GPR_RAX] & ~(u64)mask) | (r & mask);
	} else if (!d.hide) {
		port_out(ev->io_port, size, val);
	}
	spin_unlock(&cf8_lock);
	hv_skip_insn(v, ev, 1);
}
