/* Hypervisor entry on the boot processor. Called by efi-loader/enter.S on
 * the hypervisor's own stack and page tables, interrupts off, with the
 * firmware's GDT/IDT still loaded (they become the guest's). Returns only
 * on failure (a negative enum hv_status), having changed nothing. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/paging.h"
#include "base/boot.h"
#include "base/integrity.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "dispatch/pcihide.h"
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "trace/trace.h"

extern const struct hv_image_hdr hv_image_hdr;

static const struct hv_arch_ops *pick_backend(void)
{
	struct cpuid_regs r;
	cpuid_count(0, 0, &r);
	/* "AuthenticAMD" / "HygonGenuine" have SVM; "GenuineIntel" VMX */
	if (r.ebx == 0x68747541 || r.ebx == 0x6f677948)
		return &svm_ops;
	if (r.ebx == 0x756e6547 && r.edx == 0x49656e69 && r.ecx == 0x6c65746e)
		return &vmx_ops;
	return NULL;
}

int hv_entry(const struct hv_boot *bp)
{
	int st;

	if (bp->magic != HV_BOOT_MAGIC || bp->version != HV_BOOT_VERSION)
		return HV_ERR_BAD_BOOT;
	hv.boot = *bp;
	log_init(bp->serial_port, (int)bp->log_level);
	LOG_INFO("hypervisor at %016lx (%lu MiB), %s", bp->reserve_pa, bp->reserve_size >> 20,
		 hv_image_hdr.sig);

	hv.ops = pick_backend();
	if (!hv.ops) {
		LOG_ERR("%s", hv_status_str(HV_ERR_UNSUPPORTED_CPU));
		return HV_ERR_UNSUPPORTED_CPU;
	}
	st = hv.ops->probe(&hv.caps);
	if (st) {
		LOG_ERR("%s backend: %s", hv.ops->name, hv_status_str(st));
		return st;
	}

	mm_init(bp->reserve_pa, bp->reserve_size, bp->heap_pa);
	integrity_init();
	hv.guest_ram = bp->ram;
	memmap_add(&hv.hidden, bp->reserve_pa, bp->reserve_size);
	memmap_remove(&hv.guest_ram, bp->reserve_pa, bp->reserve_size);
	st = pcihide_init(&bp->ivshmem);	/* more of hv.hidden, before the nested tables */
	if (st)
		return st;

	struct vcpu *v = mm_alloc_pages(1, NULL);
	if (!v)
		return HV_ERR_NO_MEMORY;
	hv.vcpus[0] = v;
	hv.nr_vcpus = 1;
	st = trace_vcpu_init(v, bp->trace_engine);
	if (st)
		return st;
	v->apic_base = bp->apic_pa;
	st = rec_init();	/* the channel: before the nested page tables hide it */
	if (st) {
		LOG_ERR("recorder: %s", hv_status_str(st));
		return st;
	}

	st = hv.ops->vcpu_init(v);
	if (st) {
		LOG_ERR("%s backend: %s", hv.ops->name, hv_status_str(st));
		return st;
	}
	desc_load_host();

	/* The guest resumes in efi-loader/enter.S as if hv_enter() returned
	 * HV_OK, with interrupts off (enter.S restores the caller's flags). */
	v->rip = bp->guest.rip;
	v->gpr[GPR_RSP] = bp->guest.rsp;
	v->gpr[GPR_RAX] = HV_OK;
	v->rflags = RFLAGS_FIXED1;
	trace_update(v);	/* trace.start = boot: the engine runs from here */
	hv_prepare_entry(v);
	LOG_INFO("%s backend ready, %lu KiB free; entering the guest", hv.ops->name,
		 mm_free_bytes() >> 10);
	hv.ops->vcpu_run(v);
}
