/* Hypervisor entry, on every processor. Called by efi-loader/enter.S on
 * the processor's own root-mode stack and the hypervisor's page tables,
 * interrupts off, with the firmware's GDT/IDT still loaded (they become
 * the guest's): HV_OP_INIT once on the boot processor, HV_OP_PROBE on each
 * application processor, then HV_OP_ENTER on each, the boot processor
 * last. A failure returns a negative enum hv_status, having changed
 * nothing on that processor. */
#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/desc.h"
#include "arch/x86/paging.h"
#include "base/boot.h"
#include "base/integrity.h"
#include "base/lib.h"
#include "base/log.h"
#include "base/mm.h"
#include "dispatch/pcihide.h"
#include "base/vcpu.h"
#include "dispatch/cpuid.h"
#include "dispatch/dispatch.h"
#include "trace/trace.h"

extern const struct hv_image_hdr hv_image_hdr;

/* The backend by what this processor has (dispatch/cpuid.c), and
 * whether the guest's hypercall instruction is the other vendor's. */
static const struct hv_arch_ops *pick_backend(void)
{
	struct cpuid_ident id;
	cpuid_ident_read(&id);
	u32 b = cpuid_backend(&id);
	const struct hv_arch_ops *ops = b == HVTRACE_BACKEND_SVM   ? &svm_ops
					: b == HVTRACE_BACKEND_VMX ? &vmx_ops
								   : NULL;
	char vendor[13];
	memcpy(vendor, &id.l0.ebx, 4);
	memcpy(vendor + 4, &id.l0.edx, 4);
	memcpy(vendor + 8, &id.l0.ecx, 4);
	vendor[12] = 0;
	if (!ops) {
		LOG_ERR("%s processor: %s", vendor, hv_status_str(HV_ERR_UNSUPPORTED_CPU));
		return NULL;
	}
	hv.vendor_amd = cpuid_vendor_amd(&id);
	hv.hc_foreign = cpuid_foreign_hypercall(b, hv.vendor_amd);
	if (hv.hc_foreign)
		LOG_INFO("%s processor with %s: the %s backend; the guest's %s arrives as #UD, taken as "
			 "the hypercall", vendor, b == HVTRACE_BACKEND_SVM ? "SVM" : "VMX", ops->name,
			 hv.hc_foreign == INSN_0F01_VMCALL ? "VMCALL" : "VMMCALL");
	else
		LOG_INFO("%s processor: the %s backend", vendor, ops->name);
	return ops;
}

/* HV_OP_INIT, on the boot processor: everything every vCPU shares, and a
 * vCPU (with its rings) for every processor the loader listed. Nothing
 * runs as a guest yet. */
static bool initialized;

static int hv_init(const struct hv_boot *bp)
{
	int st;

	if (bp->magic != HV_BOOT_MAGIC || bp->version != HV_BOOT_VERSION || !bp->nr_cpus ||
	    bp->nr_cpus > HV_MAX_CPUS || hv.ops)
		return HV_ERR_BAD_BOOT;
	hv.boot = *bp;
	log_init(bp->serial_port, bp->serial_hide, (int)bp->log_level);
	LOG_INFO("hypervisor at %016lx (%lu MiB), %s", bp->reserve_pa, bp->reserve_size >> 20,
		 hv_image_hdr.sig);

	const struct hv_arch_ops *ops = pick_backend();
	if (!ops)
		return HV_ERR_UNSUPPORTED_CPU;
	st = ops->probe(&hv.caps);
	if (st) {
		LOG_ERR("%s backend: %s", ops->name, hv_status_str(st));
		return st;
	}
	hv.ops = ops;
	if (bp->nr_cpus > 1 && !(hv.caps & HV_CAP_SMP)) {
		LOG_ERR("%s backend, %u processors: %s", ops->name, bp->nr_cpus,
			hv_status_str(HV_ERR_SMP_UNSUPPORTED));
		return HV_ERR_SMP_UNSUPPORTED;
	}
	/* without the INIT/SIPI gate a guest could start a disabled processor
	 * outside the hypervisor (docs/smp.md) */
	if (bp->nr_disabled && !(hv.caps & HV_CAP_IPI_GATE)) {
		LOG_ERR("%s backend: %u processor%s disabled in the firmware: %s", ops->name,
			bp->nr_disabled, bp->nr_disabled == 1 ? "" : "s", hv_status_str(HV_ERR_CPU_DISABLED));
		return HV_ERR_CPU_DISABLED;
	}

	mm_init(bp->reserve_pa, bp->reserve_size, bp->heap_pa);
	integrity_init();
	hv.guest_ram = bp->ram;
	memmap_add(&hv.hidden, bp->reserve_pa, bp->reserve_size);
	memmap_remove(&hv.guest_ram, bp->reserve_pa, bp->reserve_size);
	st = pcihide_init(&bp->ivshmem);	/* more of hv.hidden, before the nested tables */
	if (st)
		return st;
	/* the guest's code may be read wherever the guest may run it, never
	 * in the hypervisor's ranges */
	hv.guest_code = bp->code;
	for (u32 i = 0; i < hv.hidden.nr; i++)
		memmap_remove(&hv.guest_code, hv.hidden.r[i].base, hv.hidden.r[i].size);

	for (u32 i = 0; i < bp->nr_cpus; i++) {
		struct vcpu *v = mm_alloc_pages(1, NULL);
		if (!v)
			return HV_ERR_NO_MEMORY;
		v->id = i;
		v->apic_id = bp->cpus[i].apic_id;
		v->apic_base = bp->apic_pa;
		st = trace_vcpu_init(v, bp->trace_engine, bp->trace_pace);
		if (st)
			return st;
		hv.vcpus[i] = v;
	}
	hv.nr_vcpus = bp->nr_cpus;
	hv.nr_disabled = bp->nr_disabled;
	st = rec_init();	/* the channel: before the nested page tables hide it */
	if (st) {
		LOG_ERR("recorder: %s", hv_status_str(st));
		return st;
	}
	st = ops->setup();
	if (st) {
		LOG_ERR("%s backend: %s", ops->name, hv_status_str(st));
		return st;
	}
	initialized = true;
	LOG_INFO("%s backend set up for %u processor%s", ops->name, hv.nr_vcpus,
		 hv.nr_vcpus == 1 ? "" : "s");
	return HV_OK;
}

/* HV_OP_PROBE, on an application processor: can it run the hypervisor as
 * the boot processor does? Changes nothing. */
static int cpu_probe(u32 cpu)
{
	u32 caps = 0;
	int st = hv.ops->probe(&caps);
	if (st) {
		LOG_ERR("processor %u: %s", cpu, hv_status_str(st));
		return st;
	}
	if (caps != hv.caps) {
		LOG_ERR("processor %u: capabilities %x, the boot processor's %x", cpu, caps, hv.caps);
		return HV_ERR_CPU_DIFFERS;
	}
	if (cpu_apic_id() != hv.vcpus[cpu]->apic_id) {
		LOG_ERR("processor %u: APIC ID %u, the firmware said %u", cpu, cpu_apic_id(),
			hv.vcpus[cpu]->apic_id);
		return HV_ERR_CPU_DIFFERS;
	}
	return HV_OK;
}

/* HV_OP_ENTER: this processor becomes vCPU `cpu` and resumes in the loader
 * (efi-loader/enter.S) as if hv_enter() returned HV_OK, with interrupts off
 * (enter.S restores the caller's flags). Returns only on failure. */
static int cpu_enter(const struct hv_boot *bp, u32 cpu)
{
	struct vcpu *v = hv.vcpus[cpu];
	if (v->boot || cpu_apic_id() != v->apic_id)
		return HV_ERR_BAD_BOOT;	/* entered twice, or on another processor */
	v->boot = &bp->cpus[cpu];
	int st = hv.ops->vcpu_init(v);
	if (st) {
		LOG_ERR("%s backend, processor %u: %s", hv.ops->name, cpu, hv_status_str(st));
		return st;
	}
	desc_load_host(&v->host);

	v->rip = v->boot->guest.rip;
	v->gpr[GPR_RSP] = v->boot->guest.rsp;
	v->gpr[GPR_RAX] = HV_OK;
	v->rflags = RFLAGS_FIXED1;
	trace_update(v);	/* trace.start = boot: the engine runs from here */
	hv_prepare_entry(v);
	u32 n = __atomic_add_fetch(&hv.nr_running, 1, __ATOMIC_SEQ_CST);
	LOG_INFO("%s backend ready on processor %u (APIC ID %u), %u of %u running, %lu KiB free",
		 hv.ops->name, cpu, v->apic_id, n, hv.nr_vcpus, mm_free_bytes() >> 10);
	hv.ops->vcpu_run(v);
}

int hv_entry(const struct hv_boot *bp, u64 op)
{
	u32 cpu = (u32)(op >> HV_OP_CPU_SHIFT), what = (u32)op & ((1u << HV_OP_CPU_SHIFT) - 1);
	if (what == HV_OP_INIT)
		return hv_init(bp);
	if (!initialized || cpu >= hv.nr_vcpus)
		return HV_ERR_BAD_BOOT;
	if (what == HV_OP_PROBE)
		return cpu_probe(cpu);
	if (what == HV_OP_ENTER)
		return cpu_enter(bp, cpu);
	return HV_ERR_BAD_BOOT;
}
