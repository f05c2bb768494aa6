/*
 * t_chan: the host channel (QEMU ivshmem-plain, 1af4:1110) is invisible to
 * the guest. Scans every bus through configuration mechanism #1 (ports
 * 0xCF8/0xCFC) and through ECAM (base from ACPI MCFG): the host bridge at
 * 00:00.0 (8086:29c0 on q35) must show up both ways, the ivshmem device in
 * neither. Then
 * takes BAR2's address from the firmware's PciIo instance (enumerated
 * before the hypervisor started: the guest "knows" it), reads it (must not
 * be the host's data) and writes "GUESTWRT" over its first pages (the
 * runner checks the host file never sees it), and reads the device's ECAM
 * page (all-ones). Without the hypervisor (enable = no) each check expects
 * the opposite, so that the probes are shown to find the device.
 */
#include "guest.h"
#include "acpi.h"
#include "base/pcicfg.h"

#define IVSHMEM_ID	0x11101af4u
#define CLASS_HOST_BRIDGE 0x060000u	/* PCI Code and ID Assignment 1.x: 06/00/00 */
#define WRITE_PAGES	4
#define HOST_PATTERN	"HOSTDATA"	/* what the runner filled the file with */
static const char guest_pattern[8] = "GUESTWRT";

static inline void outl_(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline uint32_t inl_(uint16_t port) { uint32_t v; asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline uint16_t inw_(uint16_t port) { uint16_t v; asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }

static uint32_t cf8_addr(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return PCI_CF8_ENABLE | bus << 16 | dev << 11 | fn << 8 | (reg & 0xfc);
}

static uint32_t cf8_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	outl_(PCI_CONFIG_ADDRESS, cf8_addr(bus, dev, fn, reg));
	return inl_(PCI_CONFIG_DATA);
}

static uint64_t ecam_base;
static uint8_t ecam_start, ecam_end;

static uint32_t ecam_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(
		ecam_base + pci_ecam_offset((uint8_t)bus, (uint8_t)dev, (uint8_t)fn, ecam_start) + reg);
	return *p;
}

struct scan {
	unsigned functions;
	uint64_t reads;
	uint32_t host_bridge;	/* the id of 00:00.0 when it is a host bridge */
	bool ivshmem;
	unsigned ivs_bus, ivs_dev, ivs_fn;
};

/* Every bus, device and function (functions 1-7 only where function 0 is
 * multi-function: PCI 3.0 6.2.1, header type bit 7). */
static void scan(uint32_t (*rd)(unsigned, unsigned, unsigned, unsigned), unsigned first,
		 unsigned last, struct scan *s)
{
	for (unsigned bus = first; bus <= last; bus++) {
		for (unsigned dev = 0; dev < 32; dev++) {
			for (unsigned fn = 0; fn < 8; fn++) {
				uint32_t id = rd(bus, dev, fn, 0);
				s->reads++;
				if ((id & 0xffff) == 0xffff) {
					if (fn == 0)
						break;
					continue;
				}
				s->functions++;
				if (bus == 0 && dev == 0 && fn == 0 &&
				    rd(0, 0, 0, 8) >> 8 == CLASS_HOST_BRIDGE)
					s->host_bridge = id;
				if (id == IVSHMEM_ID) {
					s->ivshmem = true;
					s->ivs_bus = bus, s->ivs_dev = dev, s->ivs_fn = fn;
				}
				if (fn == 0) {
					s->reads++;
					if (!(rd(bus, dev, 0, 0xc) & (0x80u << 16)))
						break;
				}
			}
		}
	}
}

/* WAY_finds_host_bridge, and WAY_ivshmem_hidden (under hvtrace) or
 * WAY_ivshmem_visible (without) */
static void report_scan(const char *way, const struct scan *s, bool hv)
{
	char name[40];
	hv_snprintf(name, sizeof(name), "%s_finds_host_bridge", way);
	report(s->host_bridge, name, "%04x:%04x", s->host_bridge & 0xffff, s->host_bridge >> 16);
	hv_snprintf(name, sizeof(name), "%s_ivshmem_%s", way, hv ? "hidden" : "visible");
	report(s->ivshmem != hv, name, s->ivshmem ? "seen at %02x:%02x.%x" : "not seen",
	       s->ivs_bus, s->ivs_dev, s->ivs_fn);
}

/* The PciIo instance of the channel device: the lowest-located one whose
 * configuration space reads as ivshmem, or as nothing at all (a function
 * the firmware enumerated that has vanished since: the hidden device). */
static EFI_PCI_IO_PROTOCOL *find_channel(UINTN *bus, UINTN *dev, UINTN *fn, uint32_t *id_now)
{
	UINTN n = 0;
	EFI_HANDLE *h = NULL;
	EFI_PCI_IO_PROTOCOL *best = NULL;
	uint64_t best_key = ~0ull;
	if (EFI_ERROR(LibLocateHandle(ByProtocol, &PciIoProtocol, NULL, &n, &h)))
		return NULL;
	for (UINTN i = 0; i < n; i++) {
		EFI_PCI_IO_PROTOCOL *pio;
		UINT32 id = 0;
		UINTN sg, b, d, f;
		if (EFI_ERROR(uefi_call_wrapper(BS->HandleProtocol, 3, h[i], &PciIoProtocol, (void **)&pio)) ||
		    EFI_ERROR(uefi_call_wrapper(pio->GetLocation, 5, pio, &sg, &b, &d, &f)))
			continue;
		uefi_call_wrapper(pio->Pci.Read, 5, pio, EfiPciIoWidthUint32, 0, 1, &id);
		uint64_t key = (uint64_t)sg << 16 | b << 8 | d << 3 | f;
		if ((id == IVSHMEM_ID || id == 0xffffffffu) && key < best_key) {
			best_key = key;
			best = pio;
			*bus = b, *dev = d, *fn = f, *id_now = id;
		}
	}
	FreePool(h);
	return best;
}

static bool is_host_data(volatile const uint8_t *p)
{
	for (unsigned i = 0; i < 8; i++)
		if (p[i] != (uint8_t)HOST_PATTERN[i])
			return false;
	return true;
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "t_chan");
	bool hv = under_hvtrace();
	report_info("running %s hvtrace: expecting the channel device %s", hv ? "under" : "without",
		    hv ? "hidden" : "visible");

	/* configuration mechanism #1 */
	struct scan c = { 0 };
	uint64_t t0 = 0, t1 = 0;
	t0 = rdtsc();
	scan(cf8_read, 0, 255, &c);
	t1 = rdtsc();
	/* the TSC rate from a 10 ms firmware stall, for the cost in time */
	uint64_t s0, s1;
	s0 = rdtsc();
	uefi_call_wrapper(BS->Stall, 1, 10000);
	s1 = rdtsc();
	uint64_t per_ms = (s1 - s0) / 10 ? (s1 - s0) / 10 : 1;
	report_info("CF8/CFC scan: %u functions, %lu config reads, %lu ms (%lu ns per read)",
		    c.functions, c.reads, (t1 - t0) / per_ms, (t1 - t0) * 1000000 / per_ms / c.reads);
	report_scan("cf8", &c, hv);
	/* byte and word reads of a hidden function read all-ones too */
	if (c.ivshmem || hv) {
		UINTN b = 0, d = 0, f = 0;
		uint32_t id_now = 0;
		if (find_channel(&b, &d, &f, &id_now)) {
			outl_(PCI_CONFIG_ADDRESS, cf8_addr((unsigned)b, (unsigned)d, (unsigned)f, 0));
			uint16_t w = inw_(PCI_CONFIG_DATA + 2);
			uint8_t by = inb(PCI_CONFIG_DATA + 1);
			if (hv)
				report(w == 0xffff && by == 0xff, "cf8_partial_reads_all_ones", "word %x byte %x", w, by);
			else
				report(w == 0x1110 && by == 0x1a, "cf8_partial_reads_device", "word %x byte %x", w, by);
		}
	}

	/* ECAM */
	const struct acpi_sdt_hdr *mcfg = acpi_find_table("MCFG");
	struct scan e = { 0 };
	if (!mcfg || !acpi_mcfg_find(mcfg, mcfg->length, 0, 0, &ecam_base, &ecam_start, &ecam_end)) {
		report_skip("ecam", "no MCFG entry for segment 0");
	} else {
		report_info("ECAM at %lx, buses %u-%u", ecam_base, ecam_start, ecam_end);
		scan(ecam_read, ecam_start, ecam_end, &e);
		report_info("ECAM scan: %u functions", e.functions);
		report_scan("ecam", &e, hv);
		report(e.functions == c.functions, "cf8_and_ecam_agree", "%u vs %u functions",
		       c.functions, e.functions);
	}

	/* the device as the firmware enumerated it */
	UINTN b = 0, d = 0, f = 0;
	uint32_t id_now = 0;
	EFI_PCI_IO_PROTOCOL *pio = find_channel(&b, &d, &f, &id_now);
	if (!pio) {
		report_skip("channel", "no PciIo instance reads as ivshmem or as nothing");
		report_done();
	}
	report_info("the firmware's PciIo for %02lx:%02lx.%lx; its config now reads %x", (uint64_t)b,
		    (uint64_t)d, (uint64_t)f, id_now);
	if (mcfg && ecam_base) {
		uint32_t id = ecam_read((unsigned)b, (unsigned)d, (unsigned)f, 0);
		uint32_t bar2 = ecam_read((unsigned)b, (unsigned)d, (unsigned)f, 0x18);
		if (hv)
			report(id == 0xffffffffu && bar2 == 0xffffffffu, "ecam_page_all_ones",
			       "id %x bar2 %x", id, bar2);
		else
			report(id == IVSHMEM_ID, "ecam_page_is_device", "id %x", id);
	}

	struct acpi_qword_desc *q = NULL;
	EFI_STATUS st = uefi_call_wrapper(pio->GetBarAttributes, 4, pio, 2, NULL, (void **)&q);
	if (EFI_ERROR(st) || !q || q->tag != ACPI_QWORD_DESC_TAG) {
		report(false, "bar2_known", "GetBarAttributes: %lx", (uint64_t)st);
		report_done();
	}
	uint64_t base = q->min, len = q->length;
	report_info("BAR2 (from the firmware) at %lx, %lu KiB", base, len >> 10);
	volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)base;
	if (hv)
		report(!is_host_data(p), "bar2_host_data_unreadable", "read %02x %02x %02x %02x", p[0],
		       p[1], p[2], p[3]);
	else
		report(is_host_data(p), "bar2_host_data_readable", "read %02x %02x %02x %02x", p[0],
		       p[1], p[2], p[3]);

	volatile uint64_t *w = (volatile uint64_t *)(uintptr_t)base;
	uint64_t pat;
	__builtin_memcpy(&pat, guest_pattern, 8);
	uint64_t n = MIN(len, (uint64_t)WRITE_PAGES * 4096) / 8;
	for (uint64_t i = 0; i < n; i++)
		w[i] = pat;
	bool host_seen = false;
	for (uint64_t i = 0; i < n; i++)
		host_seen |= is_host_data((volatile const uint8_t *)&w[i]);
	report(!host_seen, "bar2_readback_not_host_data", NULL);
	report_info("wrote GUESTWRT over %lu bytes of BAR2", n * 8);
	report_done();
}
