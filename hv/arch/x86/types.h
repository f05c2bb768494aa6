/* Basic types for freestanding hypervisor code; also compiled on the host
 * for the unit tests of pure logic. */
#ifndef HV_ARCH_X86_TYPES_H
#define HV_ARCH_X86_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)		(((x) + ((a) - 1)) & ~((u64)(a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((u64)(a) - 1))
#define IS_ALIGNED(x, a)	(((x) & ((u64)(a) - 1)) == 0)
#define BIT(n)			(1ull << (n))
#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))

#define __packed		__attribute__((packed))
#define __aligned(n)		__attribute__((aligned(n)))
#define __noreturn		__attribute__((noreturn))
#define __printf(a, b)		__attribute__((format(printf, a, b)))
#define unlikely(x)		__builtin_expect(!!(x), 0)

/* Start-up status: one type for every start-up path, turned into an
 * EFI_STATUS only in efi-loader/. Values are stable (they cross into the
 * loader as the hypervisor entry's return value). */
enum hv_status {
	HV_OK = 0,
	HV_ERR_NO_SVM = -1,		/* CPUID: no SVM */
	HV_ERR_SVM_DISABLED = -2,	/* VM_CR.SVMDIS set (BIOS) */
	HV_ERR_NO_NPT = -3,		/* SVM without nested paging */
	HV_ERR_NO_MEMORY = -4,		/* reserve too small */
	HV_ERR_BAD_BOOT = -5,		/* boot parameters malformed */
	HV_ERR_VMRUN_FAILED = -6,	/* first VMRUN refused the guest state */
	HV_ERR_UNSUPPORTED_CPU = -7,	/* neither SVM nor VMX in CPUID */
	HV_ERR_NO_VMX = -8,
	HV_ERR_VMX_DISABLED = -9,
	HV_ERR_VMX_CONTROLS = -10,
	HV_ERR_VMENTRY_FAILED = -11,	/* first VM entry refused the guest state */
	HV_ERR_NO_EPT = -12,		/* VMX without usable EPT */
	HV_ERR_VMX_SETUP = -13,		/* VMXON/VMPTRLD/VMWRITE failed */
	HV_ERR_REC_CONFIG = -14,	/* the recorder's rings do not fit */
	HV_ERR_TOO_MANY_CPUS = -15,	/* more enabled processors than HV_MAX_CPUS */
	HV_ERR_CPU_DIFFERS = -16,	/* an application processor is not like the boot one */
	HV_ERR_AP_NO_ANSWER = -17,	/* an application processor did not run the loader's code */
	HV_ERR_SMP_UNSUPPORTED = -18,	/* the backend cannot take application processors */
	HV_ERR_CPU_DISABLED = -19,	/* a disabled processor the backend cannot keep from starting */
};

const char *hv_status_str(int st);

#endif
