/* The firmware's MP Services protocol (UEFI PI Specification 1.7, Vol. 2,
 * 13.4 "MP Services Protocol"), which GNU-EFI does not define. Used by the
 * loader to take every processor and by the guest test programs to run
 * code on each. Boot services only; the functions are called through
 * uefi_call_wrapper, the AP procedure is called with the Microsoft ABI. */
#ifndef HVTRACE_EFI_MPSVC_H
#define HVTRACE_EFI_MPSVC_H

#include <efi.h>

#define HV_MP_SERVICES_GUID \
	{ 0x3fdda605, 0xa76e, 0x4f46, { 0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08 } }

#define HV_MP_PROC_BSP		0x1	/* PROCESSOR_AS_BSP_BIT */
#define HV_MP_PROC_ENABLED	0x2	/* PROCESSOR_ENABLED_BIT */
#define HV_MP_PROC_HEALTHY	0x4	/* PROCESSOR_HEALTH_STATUS_BIT */

typedef struct {
	UINT64 ProcessorId;	/* the local APIC ID */
	UINT32 StatusFlag;	/* HV_MP_PROC_* */
	struct { UINT32 Package, Core, Thread; } Location;
} HV_MP_PROCESSOR_INFO;

typedef struct _HV_MP_SERVICES HV_MP_SERVICES;
/* the firmware calls it with the Microsoft ABI (argument in RCX) */
typedef void (__attribute__((ms_abi)) *HV_AP_PROCEDURE)(void *arg);

struct _HV_MP_SERVICES {
	EFI_STATUS (*GetNumberOfProcessors)(HV_MP_SERVICES *self, UINTN *nr, UINTN *nr_enabled);
	EFI_STATUS (*GetProcessorInfo)(HV_MP_SERVICES *self, UINTN number, HV_MP_PROCESSOR_INFO *info);
	EFI_STATUS (*StartupAllAPs)(HV_MP_SERVICES *self, HV_AP_PROCEDURE proc, BOOLEAN single_thread,
				    EFI_EVENT wait_event, UINTN timeout_us, void *arg, UINTN **failed);
	EFI_STATUS (*StartupThisAP)(HV_MP_SERVICES *self, HV_AP_PROCEDURE proc, UINTN number,
				    EFI_EVENT wait_event, UINTN timeout_us, void *arg, BOOLEAN *finished);
	EFI_STATUS (*SwitchBSP)(HV_MP_SERVICES *self, UINTN number, BOOLEAN enable_old_bsp);
	EFI_STATUS (*EnableDisableAP)(HV_MP_SERVICES *self, UINTN number, BOOLEAN enable, UINT32 *health);
	EFI_STATUS (*WhoAmI)(HV_MP_SERVICES *self, UINTN *number);
};

#endif
