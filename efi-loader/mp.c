/*
 * Every processor (UEFI PI MP Services, efi-loader/mpsvc.h). The loader
 * lists the enabled processors (the boot processor becomes vCPU 0, the
 * others follow in the firmware's order), asks the hypervisor on each
 * application processor whether it can run there (HV_OP_PROBE, which
 * changes nothing), and only when every one can, enters it on each
 * (HV_OP_ENTER): the application processor returns from the procedure as
 * the hypervisor's guest, back into the firmware's AP loop. The boot
 * processor enters last (main.c). All application processors run the
 * procedure at once, woken by one broadcast, so none is a guest while the
 * firmware still wakes processors by INIT and SIPI itself.
 */
#include <efi.h>
#include <efilib.h>

#include "hvtrace/abi.h"
#include "arch/x86/cpu.h"
#include "base/boot.h"
#include "acpi.h"
#include "loader.h"
#include "mpsvc.h"

/* 10 s per round: the hypervisor's set-up per processor takes
 * milliseconds, but an emulator may be slow */
#define MP_TIMEOUT_US 10000000

u64 hv_enter(struct hv_boot_guest *g, u64 host_cr3, u64 entry, u64 stack_top,
	     const struct hv_boot *bp, u64 op) __attribute__((visibility("hidden")));
void mp_ap_trampoline(void *arg) __attribute__((visibility("hidden")));
void mp_ap_procedure(void *arg) __attribute__((visibility("hidden")));

static EFI_GUID mp_guid = HV_MP_SERVICES_GUID;
static HV_MP_SERVICES *mp;

static struct {
	struct hv_boot *bp;
	u64 host_cr3, entry;
	u32 op;
	volatile s32 status[HV_MAX_CPUS];
} job;

/* A processor ACPI lists but MP services does not run (or one that can be
 * hot-added later) is never taken: said, so that no count differs
 * silently. The hypervisor refuses to start such a processor (mp.c). */
static void check_madt(u32 taken)
{
	const struct acpi_sdt_hdr *madt = acpi_find_table("APIC");
	u32 enabled, hotplug;
	if (!madt || madt_count_cpus((const u8 *)madt, madt->length, &enabled, &hotplug)) {
		say("no usable ACPI MADT to count the processors against");
		return;
	}
	if (enabled != taken)
		say("ACPI's MADT lists %u enabled processor%s, MP services gave %u: only those %u are "
		    "taken, and the hypervisor will not let the OS start another", enabled,
		    enabled == 1 ? "" : "s", taken, taken);
	if (hotplug)
		say("ACPI's MADT lists %u more processor%s not enabled (disabled, or hot-pluggable): "
		    "the hypervisor will not let the OS start %s", hotplug, hotplug == 1 ? "" : "s",
		    hotplug == 1 ? "it" : "them");
}

int mp_collect(struct hv_boot *bp)
{
	UINTN nr = 0, nr_enabled = 0;
	EFI_STATUS st = uefi_call_wrapper(BS->LocateProtocol, 3, &mp_guid, NULL, (void **)&mp);

	bp->nr_cpus = 1;
	bp->nr_disabled = 0;
	bp->cpus[0].apic_id = cpu_apic_id();
	bp->cpus[0].mp_index = 0;
	if (EFI_ERROR(st)) {
		mp = NULL;
		say("the firmware has no MP services: only this processor is taken, and the "
		    "hypervisor will not let the OS start any other");
		check_madt(1);
		return HV_OK;
	}
	st = uefi_call_wrapper(mp->GetNumberOfProcessors, 3, mp, &nr, &nr_enabled);
	if (EFI_ERROR(st)) {
		say("MP services cannot count the processors: %s", efi_status_str(st));
		return HV_ERR_BAD_BOOT;
	}
	if (nr_enabled > HV_MAX_CPUS) {
		say("%lu enabled processors: the hypervisor takes at most %u", (u64)nr_enabled, HV_MAX_CPUS);
		return HV_ERR_TOO_MANY_CPUS;
	}
	u32 n = 1;
	bool bsp_seen = false;
	for (UINTN i = 0; i < nr; i++) {
		HV_MP_PROCESSOR_INFO info;
		st = uefi_call_wrapper(mp->GetProcessorInfo, 3, mp, i, &info);
		if (EFI_ERROR(st)) {
			say("MP services cannot describe processor %lu: %s", (u64)i, efi_status_str(st));
			return HV_ERR_BAD_BOOT;
		}
		if (!(info.StatusFlag & HV_MP_PROC_ENABLED)) {
			bp->nr_disabled++;
			say("processor %lu (APIC ID %lu) is disabled in the firmware: not taken, and the "
			    "hypervisor will not let the OS start it", (u64)i, info.ProcessorId);
			continue;
		}
		struct hv_boot_cpu *c;
		if (info.StatusFlag & HV_MP_PROC_BSP) {
			c = &bp->cpus[0];
			bsp_seen = true;
		} else {
			if (n >= HV_MAX_CPUS)
				return HV_ERR_TOO_MANY_CPUS;
			c = &bp->cpus[n++];
		}
		c->apic_id = (u32)info.ProcessorId;
		c->mp_index = (u32)i;
	}
	if (!bsp_seen || bp->cpus[0].apic_id != cpu_apic_id()) {
		say("MP services do not name this processor as the boot processor");
		return HV_ERR_BAD_BOOT;
	}
	bp->nr_cpus = n;
	check_madt(n);
	return HV_OK;
}

/* On each application processor, in the firmware's AP context. */
void mp_ap_procedure(void *arg)
{
	(void)arg;
	u32 id = cpu_apic_id();
	for (u32 k = 1; k < job.bp->nr_cpus; k++) {
		if (job.bp->cpus[k].apic_id != id)
			continue;
		job.status[k] = (s32)hv_enter(&job.bp->cpus[k].guest, job.host_cr3, job.entry,
					      job.bp->cpus[k].stack_top, job.bp,
					      job.op | ((u64)k << HV_OP_CPU_SHIFT));
		return;
	}
}

/* Runs `op` on every application processor; HV_OK, or the first failure
 * (said on the console with the processor it concerns). */
int mp_run(struct hv_boot *bp, u64 host_cr3, u64 entry, u32 op)
{
	if (bp->nr_cpus < 2)
		return HV_OK;
	job.bp = bp;
	job.host_cr3 = host_cr3;
	job.entry = entry;
	job.op = op;
	for (u32 k = 0; k < HV_MAX_CPUS; k++)
		job.status[k] = HV_ERR_AP_NO_ANSWER;
	EFI_STATUS st = uefi_call_wrapper(mp->StartupAllAPs, 7, mp, (HV_AP_PROCEDURE)mp_ap_trampoline,
					  (BOOLEAN)FALSE, NULL, (UINTN)MP_TIMEOUT_US, NULL, NULL);
	int ret = HV_OK;
	for (u32 k = 1; k < bp->nr_cpus; k++) {
		if (job.status[k] == HV_OK)
			continue;
		say("processor %u (APIC ID %u) %s: %s", bp->cpus[k].mp_index, bp->cpus[k].apic_id,
		    op == HV_OP_PROBE ? "cannot run the hypervisor" : "did not enter the hypervisor",
		    hv_status_str(job.status[k]));
		if (job.status[k] == HV_ERR_AP_NO_ANSWER && EFI_ERROR(st))
			say("MP services StartupAllAPs: %s", efi_status_str(st));
		if (ret == HV_OK)
			ret = job.status[k];
	}
	return ret;
}
