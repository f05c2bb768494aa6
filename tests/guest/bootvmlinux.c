/*
 * bootvmlinux: boots Linux from its uncompressed ELF image (vmlinux) with
 * the x86 64-bit boot protocol, without the EFI stub, for the whole-boot
 * trace test (tests/integration-rec.sh linux-rec-boot-init; issue #16):
 * Debian's bzImage spends about 469 million branches in its EFI stub's XZ
 * decompression before start_kernel (bench/boot-branches.sh), hours of
 * tracing; this loader gets the same kernel to startup_64 in a few
 * thousand. It is a test tool, not a general boot loader.
 *
 * Load options (hvtrace.cfg's `cmdline`): `vmlinux=PATH` (the ELF, on this
 * volume), `ramdisk=PATH` (an initramfs, optional), `mptable=2`
 * (optional: put_mp_table2), the rest the kernel's command line. The
 * kernel gets no EFI system table (efi_info empty): its
 * memory map is e820 from the firmware's final map, ACPI is found through
 * boot_params.acpi_rsdp_addr, the console is the serial port.
 *
 * Linux's Documentation/arch/x86/boot.rst, "64-bit Boot Protocol": 64-bit
 * mode with paging, the kernel, boot_params and the command line
 * identity-mapped (the firmware's page tables map all of RAM so), a GDT
 * with flat __BOOT_CS (0x10, 64-bit code) and __BOOT_DS (0x18), interrupts
 * off, %rsi = boot_params, jump to the kernel's 64-bit entry (the ELF's
 * entry point, physical startup_64). x86-64 kernels run at any physical
 * address aligned to CONFIG_PHYSICAL_ALIGN (2 MiB) without relocation
 * processing (head64.c fixes its page tables up by the load delta).
 */
#include "guest.h"

/* struct boot_params (arch/x86/include/uapi/asm/bootparam.h): the fields
 * set here, at their offsets in the zero page */
#define BP_ACPI_RSDP		0x070	/* u64 acpi_rsdp_addr (protocol 2.14) */
#define BP_EXT_RAMDISK_IMAGE	0x0c0	/* u32 */
#define BP_EXT_RAMDISK_SIZE	0x0c4	/* u32 */
#define BP_EXT_CMD_LINE_PTR	0x0c8	/* u32 */
#define BP_E820_ENTRIES		0x1e8	/* u8 */
#define BP_HDR			0x1f1	/* struct setup_header */
#define BP_E820_TABLE		0x2d0	/* struct boot_e820_entry[128] */
#define BP_E820_MAX		128
/* struct setup_header, offsets in the zero page */
#define HDR_BOOT_FLAG		0x1fe	/* u16 0xaa55 */
#define HDR_HEADER		0x202	/* u32 "HdrS" */
#define HDR_VERSION		0x206	/* u16 */
#define HDR_TYPE_OF_LOADER	0x210	/* u8: 0xff, undefined */
#define HDR_LOADFLAGS		0x211	/* u8: LOADED_HIGH */
#define HDR_RAMDISK_IMAGE	0x218	/* u32 */
#define HDR_RAMDISK_SIZE	0x21c	/* u32 */
#define HDR_CMD_LINE_PTR	0x228	/* u32 */
#define HDR_KERNEL_ALIGNMENT	0x230	/* u32 */
#define HDR_RELOCATABLE		0x234	/* u8 */
#define HDR_CMDLINE_SIZE	0x238	/* u32 */

struct e820_entry { uint64_t addr, size; uint32_t type; } __attribute__((packed));
_Static_assert(sizeof(struct e820_entry) == 20, "boot_e820_entry");
_Static_assert(BP_E820_TABLE + BP_E820_MAX * sizeof(struct e820_entry) <= 0xd00, "e820_table fits its place");
enum { E820_RAM = 1, E820_RESERVED = 2, E820_ACPI = 3, E820_NVS = 4, E820_UNUSABLE = 5, E820_PMEM = 7 };

/* ELF64 (the fields used) */
struct elf64_ehdr {
	uint8_t ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf64_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};
_Static_assert(sizeof(struct elf64_ehdr) == 64 && sizeof(struct elf64_phdr) == 56, "ELF64 layouts");
#define PT_LOAD		1
#define KERNEL_ALIGN	0x200000ull	/* CONFIG_PHYSICAL_ALIGN */

static char opts[1024];

/* Copies and fills with one REP string instruction each: gnu-efi's
 * CopyMem and SetMem loop a byte at a time, a branch per byte (66
 * million for the kernel), which is what this loader exists to avoid */
static void copy(void *to, const void *from, uint64_t n)
{
	asm volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(n)::"memory");
}

static void fill(void *to, uint8_t v, uint64_t n)
{
	asm volatile("rep stosb" : "+D"(to), "+c"(n) : "a"(v) : "memory");
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	hv_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	report_info("bootvmlinux: %s", buf);
}

/* stops with the reason; the test sees it on the console */
static void __attribute__((noreturn)) fail(const char *why, EFI_STATUS st)
{
	say("error: %s (status %lx)", why, (uint64_t)st);
	for (;;)
		asm volatile("hlt");
}

/* the value of `key=` in the options, copied out (NULL when absent) */
static bool option(const char *key, char *out, size_t n)
{
	size_t kl = strlena((const CHAR8 *)key);
	for (const char *p = opts; *p; p++) {
		if ((p == opts || p[-1] == ' ') && !strncmpa((const CHAR8 *)p, (const CHAR8 *)key, kl) && p[kl] == '=') {
			size_t i = 0;
			for (p += kl + 1; *p && *p != ' ' && i + 1 < n; p++)
				out[i++] = *p;
			out[i] = 0;
			return true;
		}
	}
	return false;
}

/* the options without `vmlinux=` and `ramdisk=`: the kernel's command line */
static void kernel_cmdline(char *out, size_t n)
{
	size_t k = 0;
	for (const char *p = opts; *p;) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		bool ours = !strncmpa((const CHAR8 *)w, (const CHAR8 *)"vmlinux=", 8) ||
			    !strncmpa((const CHAR8 *)w, (const CHAR8 *)"ramdisk=", 8) ||
			    !strncmpa((const CHAR8 *)w, (const CHAR8 *)"mptable=", 8);
		if (p == w || ours)
			continue;
		if (k && k + 1 < n)
			out[k++] = ' ';
		while (w < p && k + 1 < n)
			out[k++] = *w++;
	}
	out[k] = 0;
}

/* A file of this image's volume, read whole into pages below 4 GiB
 * (the boot protocol's 32-bit fields); its size in *size */
static void *read_file(EFI_HANDLE device, const char *path, uint64_t *size)
{
	CHAR16 wpath[256];
	size_t i = 0;
	for (; path[i] && i + 1 < 256; i++)
		wpath[i] = (CHAR16)path[i];
	wpath[i] = 0;
	EFI_FILE_HANDLE root = LibOpenRoot(device), fh = NULL;
	if (!root)
		fail("cannot open this image's volume", EFI_NOT_FOUND);
	EFI_STATUS st = uefi_call_wrapper(root->Open, 5, root, &fh, wpath, EFI_FILE_MODE_READ, 0ull);
	if (EFI_ERROR(st))
		fail(path, st);
	EFI_FILE_INFO *info = LibFileInfo(fh);
	if (!info)
		fail("cannot read the file's size", EFI_DEVICE_ERROR);
	*size = info->FileSize;
	FreePool(info);
	EFI_PHYSICAL_ADDRESS at = 0xffffffffull;
	st = uefi_call_wrapper(BS->AllocatePages, 4, AllocateMaxAddress, EfiLoaderData, EFI_SIZE_TO_PAGES(*size), &at);
	if (EFI_ERROR(st))
		fail("no memory below 4 GiB for a file", st);
	UINTN n = *size;
	st = uefi_call_wrapper(fh->Read, 3, fh, &n, (void *)(uintptr_t)at);
	if (EFI_ERROR(st) || n != *size)
		fail("reading the file", st);
	uefi_call_wrapper(fh->Close, 1, fh);
	uefi_call_wrapper(root->Close, 1, root);
	return (void *)(uintptr_t)at;
}

/* The ELF's loadable segments at a 2 MiB-aligned physical address: their
 * own (p_paddr) when free, else the lowest fitting below 4 GiB. Returns
 * the physical entry point. */
static uint64_t load_kernel(const uint8_t *elf, uint64_t size)
{
	const struct elf64_ehdr *eh = (const void *)elf;
	if (size < sizeof(*eh) || eh->ident[0] != 0x7f || eh->ident[1] != 'E' || eh->ident[2] != 'L' ||
	    eh->ident[3] != 'F' || eh->ident[4] != 2 || eh->machine != 62 ||
	    eh->phentsize != sizeof(struct elf64_phdr) || eh->phoff + (uint64_t)eh->phnum * sizeof(struct elf64_phdr) > size)
		fail("vmlinux is not an x86-64 ELF", EFI_LOAD_ERROR);
	const struct elf64_phdr *ph = (const void *)(elf + eh->phoff);
	uint64_t lo = ~0ull, hi = 0;
	for (unsigned i = 0; i < eh->phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		if (ph[i].offset + ph[i].filesz > size || ph[i].filesz > ph[i].memsz)
			fail("a segment lies outside the file", EFI_LOAD_ERROR);
		lo = ph[i].paddr < lo ? ph[i].paddr : lo;
		hi = ph[i].paddr + ph[i].memsz > hi ? ph[i].paddr + ph[i].memsz : hi;
	}
	if (lo >= hi || (lo & (KERNEL_ALIGN - 1)) || eh->entry < lo || eh->entry >= hi)
		fail("no loadable segments, or the entry point outside them", EFI_LOAD_ERROR);
	UINTN pages = EFI_SIZE_TO_PAGES(hi - lo);
	EFI_PHYSICAL_ADDRESS base = lo;
	EFI_STATUS st = uefi_call_wrapper(BS->AllocatePages, 4, AllocateAddress, EfiLoaderData, pages, &base);
	if (EFI_ERROR(st)) {
		/* one extra alignment's worth, then the aligned part */
		EFI_PHYSICAL_ADDRESS any = 0xffffffffull;
		st = uefi_call_wrapper(BS->AllocatePages, 4, AllocateMaxAddress, EfiLoaderData,
				       pages + KERNEL_ALIGN / 4096, &any);
		if (EFI_ERROR(st))
			fail("no memory for the kernel", st);
		base = (any + KERNEL_ALIGN - 1) & ~(KERNEL_ALIGN - 1);
	}
	for (unsigned i = 0; i < eh->phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		uint8_t *to = (uint8_t *)(uintptr_t)(base + ph[i].paddr - lo);
		copy(to, elf + ph[i].offset, ph[i].filesz);
		fill(to + ph[i].filesz, 0, ph[i].memsz - ph[i].filesz);
	}
	say("kernel %lx-%lx at %lx, entry %lx", lo, hi, (uint64_t)base, base + eh->entry - lo);
	return base + eh->entry - lo;
}

/* UEFI 2.x 7.2 memory types to e820 types (as Linux's EFI stub maps them) */
static uint32_t e820_type(uint32_t t)
{
	switch (t) {
	case EfiLoaderCode:
	case EfiLoaderData:
	case EfiBootServicesCode:
	case EfiBootServicesData:
	case EfiConventionalMemory:
		return E820_RAM;
	case EfiACPIReclaimMemory:
		return E820_ACPI;
	case EfiACPIMemoryNVS:
		return E820_NVS;
	case EfiUnusableMemory:
		return E820_UNUSABLE;
	case 14:	/* EfiPersistentMemory */
		return E820_PMEM;
	default:	/* reserved, runtime services, MMIO, PAL code */
		return E820_RESERVED;
	}
}

/* The firmware's memory map as e820, adjacent entries of one type merged */
static unsigned build_e820(uint8_t *bp, const uint8_t *map, UINTN map_size, UINTN desc_size)
{
	struct e820_entry *e = (void *)(bp + BP_E820_TABLE);
	unsigned n = 0;
	for (UINTN off = 0; off + desc_size <= map_size; off += desc_size) {
		const EFI_MEMORY_DESCRIPTOR *d = (const void *)(map + off);
		uint32_t type = e820_type(d->Type);
		uint64_t size = d->NumberOfPages * 4096;
		if (n && e[n - 1].type == type && e[n - 1].addr + e[n - 1].size == d->PhysicalStart) {
			e[n - 1].size += size;
			continue;
		}
		if (n == BP_E820_MAX)
			return 0;	/* the caller says so before anything is gone */
		e[n++] = (struct e820_entry){ d->PhysicalStart, size, type };
	}
	return n;
}

static void put16(uint8_t *bp, unsigned off, uint16_t v) { copy(bp + off, &v, 2); }
static void put32(uint8_t *bp, unsigned off, uint32_t v) { copy(bp + off, &v, 4); }
static void put64(uint8_t *bp, unsigned off, uint64_t v) { copy(bp + off, &v, 8); }

/* The GDT of the protocol: null, null, __BOOT_CS 0x10, __BOOT_DS 0x18 */
/*
 * `mptable=2`: where the firmware publishes no ACPI RSDP (OVMF under
 * Bochs: no MADT, so Linux would find one processor), an Intel
 * MultiProcessor Specification 1.4 table for two processors: its floating
 * pointer structure (section 4.1) and a configuration table (4.2, 4.3):
 * processors with local APIC IDs 0 (the bootstrap processor) and 1, an
 * ISA bus, the I/O APIC at 0xfec00000 (ID 2) and the ISA interrupts on
 * its pins, IRQ 0 on pin 2 (the usual override). Linux 6.1 looks for it in
 * the last KiB of base memory among other places and reserves it
 * (arch/x86/kernel/mpparse.c). Not a default configuration (feature byte 1
 * non-zero): Linux 6.1 faults on one, its boot processor's APIC ID not yet
 * read when default_get_smp_config adds the processors (a #PF in
 * generic_processor_info, seen under Bochs). Written after
 * ExitBootServices, when that RAM is no longer the firmware's.
 */
#define MPF_ADDR	0x9fc00ull	/* 639 KiB: the last KiB of base memory */
static uint8_t mp_checksum(const uint8_t *p, unsigned n)
{
	uint8_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += p[i];
	return (uint8_t)-sum;
}

static void put_mp_table2(void)
{
	uint8_t *mpf = (uint8_t *)(uintptr_t)MPF_ADDR, *mpc = mpf + 16;
	fill(mpf, 0, 512);
	/* configuration table entries: 2 processors (20 bytes each), a bus,
	 * an I/O APIC and 15 I/O interrupts (8 bytes each) */
	uint8_t *e = mpc + 44;
	unsigned n = 0;
	for (int cpu = 0; cpu < 2; cpu++, e += 20, n++) {
		e[0] = 0;			/* processor */
		e[1] = (uint8_t)cpu;		/* local APIC ID */
		e[2] = 0x14;			/* local APIC version */
		e[3] = cpu ? 1 : 3;		/* EN, and BP for the first */
		put32(e, 4, 0x000806c1);	/* CPU signature (family 6) */
		put32(e, 8, 0x00000201);	/* feature flags: FPU, APIC */
	}
	e[0] = 1; e[1] = 0; copy(e + 2, "ISA   ", 6);	/* bus 0: ISA */
	e += 8, n++;
	e[0] = 2; e[1] = 2; e[2] = 0x11; e[3] = 1;	/* I/O APIC 2, usable */
	put32(e, 4, 0xfec00000);
	e += 8, n++;
	for (int irq = 0; irq < 16; irq++) {
		if (irq == 2)
			continue;	/* the cascade */
		e[0] = 3;		/* I/O interrupt */
		e[1] = 0;		/* INT */
		e[4] = 0;		/* source bus 0 */
		e[5] = (uint8_t)irq;
		e[6] = 2;		/* I/O APIC 2 */
		e[7] = irq ? (uint8_t)irq : 2;
		e += 8, n++;
	}
	unsigned len = (unsigned)(e - mpc);
	copy(mpc, "PCMP", 4);
	put16(mpc, 4, (uint16_t)len);
	mpc[6] = 4;				/* specification revision 1.4 */
	copy(mpc + 8, "HVTRACE ", 8);		/* OEM ID */
	copy(mpc + 16, "BOOTVMLINUX ", 12);	/* product ID */
	put16(mpc, 34, (uint16_t)n);
	put32(mpc, 36, 0xfee00000);		/* local APIC address */
	mpc[7] = mp_checksum(mpc, len);
	copy(mpf, "_MP_", 4);
	put32(mpf, 4, (uint32_t)(MPF_ADDR + 16));	/* the configuration table */
	mpf[8] = 1;				/* length in 16-byte paragraphs */
	mpf[9] = 4;				/* specification revision 1.4 */
	mpf[10] = mp_checksum(mpf, 16);
}

static const uint64_t boot_gdt[4] __attribute__((aligned(16))) = {
	0, 0, 0x00af9a000000ffffull, 0x00cf92000000ffffull,
};

static void __attribute__((noreturn)) enter(uint64_t entry, uint64_t bp)
{
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) gdtr = { sizeof(boot_gdt) - 1,
										   (uint64_t)(uintptr_t)boot_gdt };
	asm volatile("cli\n\t"
		     "lgdt %0\n\t"
		     "mov $0x18, %%eax\n\t"
		     "mov %%eax, %%ds\n\t"
		     "mov %%eax, %%es\n\t"
		     "mov %%eax, %%ss\n\t"
		     "mov %%eax, %%fs\n\t"
		     "mov %%eax, %%gs\n\t"
		     "pushq $0x10\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "pushq %%rax\n\t"
		     "lretq\n"
		     "1:\n\t"
		     "jmp *%1"
		     :
		     : "m"(gdtr), "r"(entry), "S"(bp)
		     : "rax", "memory");
	__builtin_unreachable();
}

EFI_STATUS EFIAPI efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	guest_init(image, systab, "bootvmlinux");
	EFI_LOADED_IMAGE *li = NULL;
	if (EFI_ERROR(uefi_call_wrapper(BS->HandleProtocol, 3, image, &LoadedImageProtocol, (void **)&li)) || !li)
		fail("no loaded-image protocol", EFI_NOT_FOUND);
	const CHAR16 *o = li->LoadOptions;
	for (size_t i = 0, k = 0; o && i < li->LoadOptionsSize / sizeof(CHAR16) && o[i] && k + 1 < sizeof(opts); i++)
		opts[k++] = o[i] < 0x80 ? (char)o[i] : '?';
	say("image at %lx size %lx", (uint64_t)(uintptr_t)li->ImageBase, (uint64_t)li->ImageSize);

	char path[256], rd_path[256];
	if (!option("vmlinux", path, sizeof(path)))
		fail("no vmlinux=PATH in the load options", EFI_INVALID_PARAMETER);
	uint64_t ksize, rd_size = 0;
	void *elf = read_file(li->DeviceHandle, path, &ksize);
	uint64_t entry = load_kernel(elf, ksize);
	uefi_call_wrapper(BS->FreePages, 2, (EFI_PHYSICAL_ADDRESS)(uintptr_t)elf, EFI_SIZE_TO_PAGES(ksize));
	void *rd = option("ramdisk", rd_path, sizeof(rd_path)) ? read_file(li->DeviceHandle, rd_path, &rd_size) : NULL;

	EFI_PHYSICAL_ADDRESS bpa = 0xffffffffull;
	if (EFI_ERROR(uefi_call_wrapper(BS->AllocatePages, 4, AllocateMaxAddress, EfiLoaderData, 2, &bpa)))
		fail("no memory for boot_params", EFI_OUT_OF_RESOURCES);
	uint8_t *bp = (uint8_t *)(uintptr_t)bpa;
	char *cmdline = (char *)bp + 4096;
	fill(bp, 0, 8192);
	kernel_cmdline(cmdline, 4096);
	put16(bp, HDR_BOOT_FLAG, 0xaa55);
	put32(bp, HDR_HEADER, 0x53726448);	/* "HdrS" */
	put16(bp, HDR_VERSION, 0x020f);
	bp[HDR_TYPE_OF_LOADER] = 0xff;
	bp[HDR_LOADFLAGS] = 0x01;		/* LOADED_HIGH */
	put32(bp, HDR_KERNEL_ALIGNMENT, KERNEL_ALIGN);
	bp[HDR_RELOCATABLE] = 1;
	put32(bp, HDR_CMDLINE_SIZE, 4095);
	put32(bp, HDR_CMD_LINE_PTR, (uint32_t)(uintptr_t)cmdline);
	put32(bp, BP_EXT_CMD_LINE_PTR, 0);
	put32(bp, HDR_RAMDISK_IMAGE, (uint32_t)(uintptr_t)rd);
	put32(bp, HDR_RAMDISK_SIZE, (uint32_t)rd_size);
	put32(bp, BP_EXT_RAMDISK_IMAGE, 0);
	put32(bp, BP_EXT_RAMDISK_SIZE, 0);
	/* the ACPI 2.0 RSDP, else ACPI 1.0's (the kernel reads either); said,
	 * since without one Linux finds no MADT and runs on one processor */
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID, acpi10 = ACPI_TABLE_GUID;
	uint64_t rsdp20 = 0, rsdp10 = 0;
	for (UINTN i = 0; i < ST->NumberOfTableEntries; i++) {
		if (!CompareMem(&ST->ConfigurationTable[i].VendorGuid, &acpi20, sizeof(acpi20)))
			rsdp20 = (uint64_t)(uintptr_t)ST->ConfigurationTable[i].VendorTable;
		if (!CompareMem(&ST->ConfigurationTable[i].VendorGuid, &acpi10, sizeof(acpi10)))
			rsdp10 = (uint64_t)(uintptr_t)ST->ConfigurationTable[i].VendorTable;
	}
	put64(bp, BP_ACPI_RSDP, rsdp20 ? rsdp20 : rsdp10);
	say("ACPI RSDP: 2.0 %lx, 1.0 %lx, %lu configuration tables", rsdp20, rsdp10,
	    (uint64_t)ST->NumberOfTableEntries);
	char mp[16];
	bool mp_table2 = false;
	if (option("mptable", mp, sizeof(mp))) {
		if (strcmpa((const CHAR8 *)mp, (const CHAR8 *)"2"))
			fail("mptable= takes 2", EFI_INVALID_PARAMETER);
		mp_table2 = !rsdp20 && !rsdp10;
		say("mptable=2: %s", mp_table2 ? "an MP table for two processors at 9fc00"
						  : "not written: the firmware has ACPI");
	}
	say("cmdline '%s', ramdisk %lx (%lu bytes), boot_params %lx", cmdline, (uint64_t)(uintptr_t)rd, rd_size,
	    (uint64_t)bpa);

	/* the final map: no allocation between GetMemoryMap and ExitBootServices */
	static uint8_t map[64 * 1024];
	for (int tries = 0; tries < 2; tries++) {
		UINTN map_size = sizeof(map), key, desc_size;
		UINT32 desc_ver;
		EFI_STATUS st = uefi_call_wrapper(BS->GetMemoryMap, 5, &map_size, (EFI_MEMORY_DESCRIPTOR *)map, &key,
						  &desc_size, &desc_ver);
		if (EFI_ERROR(st))
			fail("GetMemoryMap", st);
		unsigned n = build_e820(bp, map, map_size, desc_size);
		if (!n)
			fail("the memory map has more than 128 runs", EFI_BUFFER_TOO_SMALL);
		bp[BP_E820_ENTRIES] = (uint8_t)n;
		if (tries == 0)
			say("e820: %u entries; leaving the firmware", n);
		st = uefi_call_wrapper(BS->ExitBootServices, 2, image, key);
		if (!EFI_ERROR(st)) {
			if (mp_table2)
				put_mp_table2();
			enter(entry, bpa);
		}
	}
	fail("ExitBootServices", EFI_INVALID_PARAMETER);
}
