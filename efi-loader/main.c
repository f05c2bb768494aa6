/*
 * hvtrace.efi: the UEFI application the firmware starts from the ESP. Reads
 * \EFI\hvtrace\hvtrace.cfg, reserves memory the OS never reuses, places the
 * hypervisor there with its own page tables, takes every processor into
 * guest mode (mp.c), then (as the guest) chain-loads the next stage. Any
 * failure is reported on the console and the next stage boots without the
 * hypervisor. Runs before ExitBootServices, with boot services.
 */
#include <efi.h>
#include <efilib.h>

#include "hvtrace/abi.h"
#include "arch/x86/msr.h"
#include "arch/x86/paging.h"
#include "base/boot.h"
#include "base/memmap.h"
#include "base/pgbuild.h"
#include "config.h"
#include "loader.h"

#define CFG_PATH L"\\EFI\\hvtrace\\hvtrace.cfg"
#define HV_STACK_PAGES 8

extern const UINT8 hv_image_start[] __attribute__((visibility("hidden")));
extern const UINT8 hv_image_end[] __attribute__((visibility("hidden")));
u64 hv_enter(struct hv_boot_guest *g, u64 host_cr3, u64 entry, u64 stack_top,
	     const struct hv_boot *bp, u64 op) __attribute__((visibility("hidden")));

static EFI_HANDLE self;
static EFI_LOADED_IMAGE *self_image;

void say(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	hv_vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	Print(L"hvtrace: %a\n", msg);
}

static EFI_STATUS read_file(EFI_FILE_HANDLE root, CHAR16 *path, char **out, UINTN *len)
{
	EFI_FILE_HANDLE fh;
	EFI_STATUS st = uefi_call_wrapper(root->Open, 5, root, &fh, path, EFI_FILE_MODE_READ, 0);
	if (EFI_ERROR(st))
		return st;
	EFI_FILE_INFO *info = LibFileInfo(fh);
	if (!info) {
		uefi_call_wrapper(fh->Close, 1, fh);
		return EFI_DEVICE_ERROR;
	}
	UINTN size = info->FileSize;
	FreePool(info);
	if (size > CFG_MAX_SIZE + 1)
		size = CFG_MAX_SIZE + 1; /* cfg_parse reports it as too large */
	char *buf = AllocatePool(size + 1);
	if (!buf) {
		uefi_call_wrapper(fh->Close, 1, fh);
		return EFI_OUT_OF_RESOURCES;
	}
	st = uefi_call_wrapper(fh->Read, 3, fh, &size, buf);
	uefi_call_wrapper(fh->Close, 1, fh);
	if (EFI_ERROR(st)) {
		FreePool(buf);
		return st;
	}
	buf[size] = 0;
	*out = buf;
	*len = size;
	return EFI_SUCCESS;
}

/* Bump allocator over the reserved range, for the tables the loader builds
 * (the firmware's page tables identity-map memory: VA == PA here). */
struct bump {
	u64 next, end;
};

static void *bump_alloc(void *ctx, u64 *pa)
{
	struct bump *b = ctx;
	if (b->end - b->next < PAGE_SIZE)
		return NULL;
	*pa = b->next;
	b->next += PAGE_SIZE;
	ZeroMem((void *)(uintptr_t)*pa, PAGE_SIZE);
	return (void *)(uintptr_t)*pa;
}

static void *ident_ptr(void *ctx, u64 pa)
{
	(void)ctx;
	return (void *)(uintptr_t)pa;
}

static u64 phys_limit(bool *gbpages)
{
	u32 a, b, c, d;
	asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000), "c"(0));
	u32 bits = 36;
	if (a >= 0x80000008) {
		asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000008), "c"(0));
		bits = a & 0xff;
	}
	asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001), "c"(0));
	*gbpages = d & (1u << 26);
	return 1ull << bits;
}

static u64 measure_tsc_hz(void)
{
	u32 lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	u64 t0 = ((u64)hi << 32) | lo;
	uefi_call_wrapper(BS->Stall, 1, 20000);
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((((u64)hi << 32) | lo) - t0) * 50;
}

/* Guest RAM as the firmware describes it: the ranges the hypervisor may
 * touch on the guest's behalf (hypercall buffers, page-table walks). And
 * where the hypervisor may read the guest's code to decode an exiting
 * instruction: that RAM and the firmware's EfiReservedMemoryType, where
 * edk2's MpInitLib parks the application processors at ExitBootServices
 * (its AP loop allocated as reserved memory so that the OS leaves it
 * alone: UEFI 2.10 7.2, EfiReservedMemoryType "not usable"); that loop
 * writes CR0, EFER and CR4, intercepted exits whose length and operands
 * the hypervisor reads from the code (no NRIP save under QEMU's TCG). */
static bool collect_ram(struct hv_memmap *ram, struct hv_memmap *code)
{
	UINTN entries, key, dsize;
	UINT32 dver;
	EFI_MEMORY_DESCRIPTOR *map = LibMemoryMap(&entries, &key, &dsize, &dver);
	if (!map)
		return false;
	bool ok = true;
	for (UINTN i = 0; i < entries; i++) {
		EFI_MEMORY_DESCRIPTOR *d = (void *)((u8 *)map + i * dsize);
		if (efi_type_is_ram(d->Type))
			ok &= memmap_add(ram, d->PhysicalStart, d->NumberOfPages * PAGE_SIZE);
		if (efi_type_is_ram(d->Type) || d->Type == EfiReservedMemoryType)
			ok &= memmap_add(code, d->PhysicalStart, d->NumberOfPages * PAGE_SIZE);
	}
	FreePool(map);
	return ok;
}

static u64 rdmsr_apic_base(void)
{
	u32 lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(MSR_IA32_APICBASE));
	return ((u64)hi << 32) | lo;
}

/* Places the hypervisor and enters it on every processor. Returns its
 * status (HV_OK: every processor now runs as its guest). */
static int start_hypervisor(const struct hv_config *cfg)
{
	const struct hv_image_hdr *hdr = (const void *)hv_image_start;
	u64 image_bytes = (u64)(hv_image_end - hv_image_start);
	bool gbpages;

	if (hdr->magic != HV_IMAGE_HDR_MAGIC || hdr->file_end - HV_VA_BASE != image_bytes) {
		say("the embedded hypervisor image is damaged (rebuild hvtrace.efi)");
		return HV_ERR_BAD_BOOT;
	}
	u64 mem_bytes = hdr->mem_end - HV_VA_BASE;
	u64 pages = cfg->memory / PAGE_SIZE;
	EFI_PHYSICAL_ADDRESS pa = 0;
	EFI_STATUS st = uefi_call_wrapper(BS->AllocatePages, 4, AllocateAnyPages,
					  (EFI_MEMORY_TYPE)HVTRACE_EFI_MEMTYPE, pages, &pa);
	if (EFI_ERROR(st)) {
		say("cannot reserve %lu MiB for the hypervisor (AllocatePages: error %lx); lower 'memory'",
		    cfg->memory >> 20, (u64)st);
		return HV_ERR_NO_MEMORY;
	}
	ZeroMem((void *)(uintptr_t)pa, cfg->memory);
	CopyMem((void *)(uintptr_t)pa, (void *)hv_image_start, image_bytes);

	struct bump bump = { pa + ALIGN_UP(mem_bytes, PAGE_SIZE), pa + cfg->memory };
	u64 bp_pa, stack_pa, limit = phys_limit(&gbpages);
	bool entered = false;
	/* where the firmware left this processor's local APIC: the hypervisor
	 * reaches it there, whatever the guest later writes to APIC_BASE */
	u64 apic_pa = rdmsr_apic_base() & APICBASE_ADDR_MASK;
	struct hv_boot *bp = bump_alloc(&bump, &bp_pa);
	for (int i = 1; bp && i < HV_BOOT_PAGES; i++)
		if (!bump_alloc(&bump, &stack_pa))	/* the next pages: bump is contiguous */
			bp = NULL;
	struct pg_builder pgb;
	const struct pg_alloc alloc = { bump_alloc, ident_ptr, &bump };
	int ret = HV_ERR_NO_MEMORY;

	if (!bp || !pg_init(&pgb, &alloc, gbpages ? PAGE_1G : PAGE_2M, PTE_P | PTE_RW) ||
	    /* all of physical memory below 2^47 (the lower canonical half) */
	    !pg_map(&pgb, 0, 0, MIN(limit, 1ull << 47), PTE_P | PTE_RW) ||
	    !pg_map(&pgb, HV_VA_BASE, pa, cfg->memory, PTE_P | PTE_RW | PTE_G) ||
	    /* the local APIC's registers, uncached (SDM Vol. 3 11.4.1) */
	    !pg_map(&pgb, HV_APIC_VA, apic_pa, PAGE_SIZE, PTE_P | PTE_RW | PTE_PCD | PTE_PWT | PTE_G))
		goto fail;
	ret = mp_collect(bp);
	if (ret != HV_OK)
		goto fail;
	ret = HV_ERR_NO_MEMORY;
	for (u32 c = 0; c < bp->nr_cpus; c++) {
		for (int i = 0; i < HV_STACK_PAGES; i++)
			if (!bump_alloc(&bump, &stack_pa))
				goto fail;
		bp->cpus[c].stack_top = HV_VA_BASE + (stack_pa + PAGE_SIZE - pa);
	}

	bp->magic = HV_BOOT_MAGIC;
	bp->version = HV_BOOT_VERSION;
	bp->log_level = cfg->log_level;
	bp->serial_port = cfg->serial_port;
	bp->serial_hide = cfg->serial_hide;
	bp->reserve_pa = pa;
	bp->reserve_size = cfg->memory;
	bp->host_cr3 = pgb.root_pa;
	bp->phys_limit = limit;
	bp->tsc_hz = measure_tsc_hz();
	bp->apic_pa = apic_pa;
	bp->trace_engine = cfg->engine;
	bp->trace_pace = cfg->pace;
	bp->triple_fault = cfg->triple_fault;
	bp->interp_verify = cfg->interp_verify;
	bp->rec = cfg->rec;
	/* the recorder's channel: an ivshmem device, found (and so hidden from
	 * the guest) only when a recorder is configured and may use one */
	if ((cfg->rec.flight.size || cfg->rec.stream.size) && cfg->rec.channel != REC_CHAN_RAM)
		pci_find_ivshmem(&bp->ivshmem);
	if (!collect_ram(&bp->ram, &bp->code)) {
		say("the firmware's memory map has more than %u RAM ranges", HV_MAX_RANGES);
		ret = HV_ERR_BAD_BOOT;
		goto fail;
	}
	bp->heap_pa = bump.next;
	if (bump.end - bump.next < (1ull << 20)) {
		say("'memory = %lu' leaves less than 1 MiB for the hypervisor's heap", cfg->memory);
		goto fail;
	}

	/* the hypervisor's set-up, on this processor; then every application
	 * processor is asked, and only when all can run it does any enter */
	ret = (int)(s64)hv_enter(&bp->cpus[0].guest, pgb.root_pa, hdr->entry, bp->cpus[0].stack_top,
				 bp, HV_OP_INIT);
	if (ret == HV_OK)
		ret = mp_run(bp, pgb.root_pa, hdr->entry, HV_OP_PROBE);
	if (ret != HV_OK)
		goto fail;
	/* once a processor is in, the reserve (bp with it) reads as the sink */
	u32 nr_cpus = bp->nr_cpus;
	entered = nr_cpus > 1;
	ret = mp_run(bp, pgb.root_pa, hdr->entry, HV_OP_ENTER);
	if (ret != HV_OK)
		/* those that entered cannot leave: the reserve stays theirs */
		say("not every processor is under the hypervisor: the serial log says why");
	int bsp = (int)(s64)hv_enter(&bp->cpus[0].guest, pgb.root_pa, hdr->entry, bp->cpus[0].stack_top,
				     bp, HV_OP_ENTER);
	if (bsp == HV_OK) {
		if (nr_cpus > 1 && ret == HV_OK)
			say("all %u processors are under the hypervisor", nr_cpus);
		return HV_OK;	/* a processor that failed was named above */
	}
	say("the boot processor did not enter the hypervisor: %s", hv_status_str(bsp));
	if (entered)
		return bsp;
	ret = bsp;
fail:
	if (!entered)
		uefi_call_wrapper(BS->FreePages, 2, pa, pages);
	return ret;
}

static EFI_STATUS boot_next(const struct hv_config *cfg)
{
	static CHAR16 path[CFG_PATH_MAX];
	static CHAR16 opts[CFG_CMDLINE_MAX];
	EFI_HANDLE child;
	EFI_LOADED_IMAGE *li;
	UINTN i;

	for (i = 0; cfg->next[i]; i++)
		path[i] = (CHAR16)cfg->next[i];
	path[i] = 0;
	for (i = 0; cfg->cmdline[i]; i++)
		opts[i] = (CHAR16)cfg->cmdline[i];
	opts[i] = 0;

	EFI_DEVICE_PATH *dp = FileDevicePath(self_image->DeviceHandle, path);
	if (!dp) {
		say("cannot build a device path for %s", cfg->next);
		return EFI_OUT_OF_RESOURCES;
	}
	EFI_STATUS st = uefi_call_wrapper(BS->LoadImage, 6, FALSE, self, dp, NULL, 0, &child);
	FreePool(dp);
	if (EFI_ERROR(st)) {
		say("cannot load the next stage %s: %s", cfg->next, efi_status_str(st));
		return st;
	}
	st = uefi_call_wrapper(BS->HandleProtocol, 3, child, &LoadedImageProtocol, (void **)&li);
	if (!EFI_ERROR(st) && i) {
		li->LoadOptions = opts;
		li->LoadOptionsSize = (UINT32)((i + 1) * sizeof(CHAR16));
	}
	say("starting %s%s%s", cfg->next, i ? " " : "", cfg->cmdline);
	st = uefi_call_wrapper(BS->StartImage, 3, child, NULL, NULL);
	say("the next stage %s returned: %s", cfg->next, efi_status_str(st));
	return st;
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	static struct hv_config cfg;
	char *text = NULL;
	UINTN len = 0;

	InitializeLib(image, systab);
	self = image;
	say("loader, ABI %u.%u", HVTRACE_ABI_MAJOR, HVTRACE_ABI_MINOR);

	EFI_STATUS st = uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol,
					  (void **)&self_image);
	if (!EFI_ERROR(st))	/* to symbolize its records in a trace from boot */
		say("loader image at %lx (%lu KiB)", (u64)(UINTN)self_image->ImageBase,
		    (u64)self_image->ImageSize / 1024);
	EFI_FILE_HANDLE root = EFI_ERROR(st) ? NULL : LibOpenRoot(self_image->DeviceHandle);
	if (!root) {
		say("cannot open the boot volume: %s", efi_status_str(st));
		return EFI_LOAD_ERROR;
	}

	st = read_file(root, CFG_PATH, &text, &len);
	if (EFI_ERROR(st)) {
		say("cannot read \\EFI\\hvtrace\\hvtrace.cfg: %s", efi_status_str(st));
		cfg_parse("", 0, &cfg);
		cfg.nr_errors = 1; /* keeps the default-free state: no next stage */
	} else if (cfg_parse(text, len, &cfg)) {
		for (u32 i = 0; i < MIN(cfg.nr_errors, (u32)CFG_MAX_ERRORS); i++) {
			if (cfg.errors[i].line)
				say("hvtrace.cfg:%u: %s", cfg.errors[i].line, cfg.errors[i].msg);
			else
				say("hvtrace.cfg: %s", cfg.errors[i].msg);
		}
		if (cfg.nr_errors > CFG_MAX_ERRORS)
			say("hvtrace.cfg: %u more errors", cfg.nr_errors - CFG_MAX_ERRORS);
	}
	if (text)
		FreePool(text);

	bool running = false;
	if (cfg.nr_errors)
		say("configuration errors: not starting the hypervisor");
	else if (!cfg.enable)
		say("'enable = no' in hvtrace.cfg: not starting the hypervisor");
	else {
		int hst = start_hypervisor(&cfg);
		running = hst == HV_OK;
		if (running)
			say("hypervisor running; this processor is now its guest");
		else
			say("hypervisor not started: %s", hv_status_str(hst));
	}

	if (!cfg.next[0]) {
		say("no next stage configured: returning to the firmware's boot manager");
		return EFI_NOT_FOUND;
	}
	if (!running)
		say("booting %s without the hypervisor", cfg.next);
	return boot_next(&cfg);
}
