/* The VMCS as the Intel SDM Vol. 3 defines it: field encodings (Appendix B,
 * named as the manual spells them), control bits (25.6-25.8), exit reasons
 * (Appendix C), access-rights and interruption formats, EPT entries (29.3),
 * and width-checked VMREAD/VMWRITE accessors. Definitions only; root mode. */
#ifndef HV_VMX_VMCS_H
#define HV_VMX_VMCS_H

#include "arch/x86/types.h"

/*
 * Field encodings (25.11.2): bit 0 access type (1 = high half of a 64-bit
 * field), 9:1 index, 11:10 type (control, read-only data, guest, host),
 * 14:13 width (0 = 16-bit, 1 = 64-bit, 2 = 32-bit, 3 = natural width).
 */
enum vmcs_field {
	/* B.1.1 16-bit control fields */
	VMCS_VIRTUAL_PROCESSOR_ID		= 0x0000,
	/* B.1.2 16-bit guest-state fields */
	VMCS_GUEST_ES_SELECTOR			= 0x0800,
	VMCS_GUEST_CS_SELECTOR			= 0x0802,
	VMCS_GUEST_SS_SELECTOR			= 0x0804,
	VMCS_GUEST_DS_SELECTOR			= 0x0806,
	VMCS_GUEST_FS_SELECTOR			= 0x0808,
	VMCS_GUEST_GS_SELECTOR			= 0x080a,
	VMCS_GUEST_LDTR_SELECTOR		= 0x080c,
	VMCS_GUEST_TR_SELECTOR			= 0x080e,
	/* B.1.3 16-bit host-state fields */
	VMCS_HOST_ES_SELECTOR			= 0x0c00,
	VMCS_HOST_CS_SELECTOR			= 0x0c02,
	VMCS_HOST_SS_SELECTOR			= 0x0c04,
	VMCS_HOST_DS_SELECTOR			= 0x0c06,
	VMCS_HOST_FS_SELECTOR			= 0x0c08,
	VMCS_HOST_GS_SELECTOR			= 0x0c0a,
	VMCS_HOST_TR_SELECTOR			= 0x0c0c,
	/* B.2.1 64-bit control fields */
	VMCS_IO_BITMAP_A			= 0x2000,
	VMCS_IO_BITMAP_B			= 0x2002,
	VMCS_MSR_BITMAPS			= 0x2004,
	VMCS_VM_EXIT_MSR_STORE_ADDRESS		= 0x2006,
	VMCS_VM_EXIT_MSR_LOAD_ADDRESS		= 0x2008,
	VMCS_VM_ENTRY_MSR_LOAD_ADDRESS		= 0x200a,
	VMCS_TSC_OFFSET				= 0x2010,
	VMCS_EPT_POINTER			= 0x201a,
	/* B.2.2 64-bit read-only data fields */
	VMCS_GUEST_PHYSICAL_ADDRESS		= 0x2400,
	/* B.2.3 64-bit guest-state fields */
	VMCS_VMCS_LINK_POINTER			= 0x2800,
	VMCS_GUEST_IA32_DEBUGCTL		= 0x2802,
	VMCS_GUEST_IA32_PAT			= 0x2804,
	VMCS_GUEST_IA32_EFER			= 0x2806,
	VMCS_GUEST_IA32_PERF_GLOBAL_CTRL	= 0x2808,	/* "load IA32_PERF_GLOBAL_CTRL" CPUs */
	VMCS_GUEST_PDPTE0			= 0x280a,
	VMCS_GUEST_PDPTE1			= 0x280c,
	VMCS_GUEST_PDPTE2			= 0x280e,
	VMCS_GUEST_PDPTE3			= 0x2810,
	VMCS_GUEST_IA32_LBR_CTL			= 0x2816,	/* "load guest IA32_LBR_CTL" CPUs */
	/* B.2.4 64-bit host-state fields */
	VMCS_HOST_IA32_PAT			= 0x2c00,
	VMCS_HOST_IA32_EFER			= 0x2c02,
	VMCS_HOST_IA32_PERF_GLOBAL_CTRL		= 0x2c04,
	/* B.3.1 32-bit control fields */
	VMCS_PIN_BASED_VM_EXECUTION_CONTROLS	= 0x4000,
	VMCS_PRIMARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS = 0x4002,
	VMCS_EXCEPTION_BITMAP			= 0x4004,
	VMCS_PAGE_FAULT_ERROR_CODE_MASK		= 0x4006,
	VMCS_PAGE_FAULT_ERROR_CODE_MATCH	= 0x4008,
	VMCS_CR3_TARGET_COUNT			= 0x400a,
	VMCS_PRIMARY_VM_EXIT_CONTROLS		= 0x400c,
	VMCS_VM_EXIT_MSR_STORE_COUNT		= 0x400e,
	VMCS_VM_EXIT_MSR_LOAD_COUNT		= 0x4010,
	VMCS_VM_ENTRY_CONTROLS			= 0x4012,
	VMCS_VM_ENTRY_MSR_LOAD_COUNT		= 0x4014,
	VMCS_VM_ENTRY_INTERRUPTION_INFORMATION	= 0x4016,
	VMCS_VM_ENTRY_EXCEPTION_ERROR_CODE	= 0x4018,
	VMCS_VM_ENTRY_INSTRUCTION_LENGTH	= 0x401a,
	VMCS_SECONDARY_PROCESSOR_BASED_VM_EXECUTION_CONTROLS = 0x401e,
	/* B.3.2 32-bit read-only data fields */
	VMCS_VM_INSTRUCTION_ERROR		= 0x4400,
	VMCS_EXIT_REASON			= 0x4402,
	VMCS_VM_EXIT_INTERRUPTION_INFORMATION	= 0x4404,
	VMCS_VM_EXIT_INTERRUPTION_ERROR_CODE	= 0x4406,
	VMCS_IDT_VECTORING_INFORMATION		= 0x4408,
	VMCS_IDT_VECTORING_ERROR_CODE		= 0x440a,
	VMCS_VM_EXIT_INSTRUCTION_LENGTH		= 0x440c,
	VMCS_VM_EXIT_INSTRUCTION_INFORMATION	= 0x440e,
	/* B.3.3 32-bit guest-state fields */
	VMCS_GUEST_ES_LIMIT			= 0x4800,
	VMCS_GUEST_CS_LIMIT			= 0x4802,
	VMCS_GUEST_SS_LIMIT			= 0x4804,
	VMCS_GUEST_DS_LIMIT			= 0x4806,
	VMCS_GUEST_FS_LIMIT			= 0x4808,
	VMCS_GUEST_GS_LIMIT			= 0x480a,
	VMCS_GUEST_LDTR_LIMIT			= 0x480c,
	VMCS_GUEST_TR_LIMIT			= 0x480e,
	VMCS_GUEST_GDTR_LIMIT			= 0x4810,
	VMCS_GUEST_IDTR_LIMIT			= 0x4812,
	VMCS_GUEST_ES_ACCESS_RIGHTS		= 0x4814,
	VMCS_GUEST_CS_ACCESS_RIGHTS		= 0x4816,
	VMCS_GUEST_SS_ACCESS_RIGHTS		= 0x4818,
	VMCS_GUEST_DS_ACCESS_RIGHTS		= 0x481a,
	VMCS_GUEST_FS_ACCESS_RIGHTS		= 0x481c,
	VMCS_GUEST_GS_ACCESS_RIGHTS		= 0x481e,
	VMCS_GUEST_LDTR_ACCESS_RIGHTS		= 0x4820,
	VMCS_GUEST_TR_ACCESS_RIGHTS		= 0x4822,
	VMCS_GUEST_INTERRUPTIBILITY_STATE	= 0x4824,
	VMCS_GUEST_ACTIVITY_STATE		= 0x4826,
	VMCS_GUEST_IA32_SYSENTER_CS		= 0x482a,
	VMCS_PREEMPTION_TIMER_VALUE		= 0x482e,
	/* B.3.4 32-bit host-state field */
	VMCS_HOST_IA32_SYSENTER_CS		= 0x4c00,
	/* B.4.1 natural-width control fields */
	VMCS_CR0_GUEST_HOST_MASK		= 0x6000,
	VMCS_CR4_GUEST_HOST_MASK		= 0x6002,
	VMCS_CR0_READ_SHADOW			= 0x6004,
	VMCS_CR4_READ_SHADOW			= 0x6006,
	/* B.4.2 natural-width read-only data fields */
	VMCS_EXIT_QUALIFICATION			= 0x6400,
	VMCS_GUEST_LINEAR_ADDRESS		= 0x640a,
	/* B.4.3 natural-width guest-state fields */
	VMCS_GUEST_CR0				= 0x6800,
	VMCS_GUEST_CR3				= 0x6802,
	VMCS_GUEST_CR4				= 0x6804,
	VMCS_GUEST_ES_BASE			= 0x6806,
	VMCS_GUEST_CS_BASE			= 0x6808,
	VMCS_GUEST_SS_BASE			= 0x680a,
	VMCS_GUEST_DS_BASE			= 0x680c,
	VMCS_GUEST_FS_BASE			= 0x680e,
	VMCS_GUEST_GS_BASE			= 0x6810,
	VMCS_GUEST_LDTR_BASE			= 0x6812,
	VMCS_GUEST_TR_BASE			= 0x6814,
	VMCS_GUEST_GDTR_BASE			= 0x6816,
	VMCS_GUEST_IDTR_BASE			= 0x6818,
	VMCS_GUEST_DR7				= 0x681a,
	VMCS_GUEST_RSP				= 0x681c,
	VMCS_GUEST_RIP				= 0x681e,
	VMCS_GUEST_RFLAGS			= 0x6820,
	VMCS_GUEST_PENDING_DEBUG_EXCEPTIONS	= 0x6822,
	VMCS_GUEST_IA32_SYSENTER_ESP		= 0x6824,
	VMCS_GUEST_IA32_SYSENTER_EIP		= 0x6826,
	/* B.4.4 natural-width host-state fields */
	VMCS_HOST_CR0				= 0x6c00,
	VMCS_HOST_CR3				= 0x6c02,
	VMCS_HOST_CR4				= 0x6c04,
	VMCS_HOST_FS_BASE			= 0x6c06,
	VMCS_HOST_GS_BASE			= 0x6c08,
	VMCS_HOST_TR_BASE			= 0x6c0a,
	VMCS_HOST_GDTR_BASE			= 0x6c0c,
	VMCS_HOST_IDTR_BASE			= 0x6c0e,
	VMCS_HOST_IA32_SYSENTER_ESP		= 0x6c10,
	VMCS_HOST_IA32_SYSENTER_EIP		= 0x6c12,
	VMCS_HOST_RSP				= 0x6c14,
	VMCS_HOST_RIP				= 0x6c16,
};

#define VMCS_WIDTH(f)		(((unsigned)(f) >> 13) & 3)
#define VMCS_WIDTH_16		0
#define VMCS_WIDTH_64		1
#define VMCS_WIDTH_32		2
#define VMCS_WIDTH_NATURAL	3
_Static_assert(VMCS_WIDTH(VMCS_GUEST_ES_SELECTOR) == VMCS_WIDTH_16, "B.1");
_Static_assert(VMCS_WIDTH(VMCS_EPT_POINTER) == VMCS_WIDTH_64, "B.2");
_Static_assert(VMCS_WIDTH(VMCS_EXIT_REASON) == VMCS_WIDTH_32, "B.3");
_Static_assert(VMCS_WIDTH(VMCS_HOST_RIP) == VMCS_WIDTH_NATURAL, "B.4");
/* B.2.3, B.2.4: the LBR batching fields are 64-bit guest and host state */
_Static_assert(VMCS_WIDTH(VMCS_GUEST_IA32_LBR_CTL) == VMCS_WIDTH_64 &&
		       VMCS_WIDTH(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL) == VMCS_WIDTH_64 &&
		       VMCS_WIDTH(VMCS_HOST_IA32_PERF_GLOBAL_CTRL) == VMCS_WIDTH_64,
	       "B.2.3/B.2.4");

/* 25.6.1 Table 25-5: pin-based VM-execution controls */
#define PIN_EXTERNAL_INTERRUPT_EXITING	BIT(0)
#define PIN_NMI_EXITING			BIT(3)
#define PIN_VIRTUAL_NMIS		BIT(5)
#define PIN_PREEMPTION_TIMER		BIT(6)	/* activate VMX-preemption timer */
/* 25.6.2 Table 25-6: primary processor-based VM-execution controls */
#define PROC_INTERRUPT_WINDOW_EXITING	BIT(2)
#define PROC_HLT_EXITING		BIT(7)
#define PROC_RDPMC_EXITING		BIT(11)
#define PROC_CR3_LOAD_EXITING		BIT(15)
#define PROC_CR3_STORE_EXITING		BIT(16)
#define PROC_MOV_DR_EXITING		BIT(23)
#define PROC_UNCONDITIONAL_IO_EXITING	BIT(24)
#define PROC_USE_IO_BITMAPS		BIT(25)
#define PROC_MONITOR_TRAP_FLAG		BIT(27)
#define PROC_USE_MSR_BITMAPS		BIT(28)
#define PROC_ACTIVATE_SECONDARY_CONTROLS BIT(31)
/* 25.6.2 Table 25-7: secondary processor-based VM-execution controls */
#define PROC2_ENABLE_EPT		BIT(1)
#define PROC2_ENABLE_RDTSCP		BIT(3)
#define PROC2_ENABLE_VPID		BIT(5)
#define PROC2_UNRESTRICTED_GUEST	BIT(7)
#define PROC2_ENABLE_INVPCID		BIT(12)
#define PROC2_ENABLE_XSAVES_XRSTORS	BIT(20)
#define PROC2_ENABLE_USER_WAIT_AND_PAUSE BIT(26)
/* 25.7.1 Table 25-13: primary VM-exit controls */
#define EXIT_SAVE_DEBUG_CONTROLS	BIT(2)
#define EXIT_HOST_ADDRESS_SPACE_SIZE	BIT(9)
#define EXIT_LOAD_IA32_PERF_GLOBAL_CTRL	BIT(12)
#define EXIT_ACKNOWLEDGE_INTERRUPT_ON_EXIT BIT(15)
#define EXIT_SAVE_IA32_PAT		BIT(18)
#define EXIT_LOAD_IA32_PAT		BIT(19)
#define EXIT_SAVE_IA32_EFER		BIT(20)
#define EXIT_LOAD_IA32_EFER		BIT(21)
#define EXIT_CLEAR_IA32_LBR_CTL		BIT(26)
/* 25.8.1 Table 25-15: VM-entry controls */
#define ENTRY_LOAD_DEBUG_CONTROLS	BIT(2)
#define ENTRY_IA32E_MODE_GUEST		BIT(9)
#define ENTRY_LOAD_IA32_PERF_GLOBAL_CTRL BIT(13)
#define ENTRY_LOAD_IA32_PAT		BIT(14)
#define ENTRY_LOAD_IA32_EFER		BIT(15)
#define ENTRY_LOAD_IA32_LBR_CTL		BIT(21)

/* 25.4.1 Table 25-2: segment access rights; bit 16 = unusable */
#define VMX_AR_TYPE_ACCESSED		BIT(0)
#define VMX_AR_S			BIT(4)
#define VMX_AR_DPL(ar)			(((ar) >> 5) & 3)
#define VMX_AR_P			BIT(7)
#define VMX_AR_UNUSABLE			BIT(16)
#define VMX_AR_TSS64_BUSY		0xb

/* Guest activity state (25.4.2) */
#define VMX_ACTIVITY_ACTIVE		0

/* 25.4.2 Table 25-3: interruptibility state */
#define VMX_INTR_BLOCKING_BY_STI	BIT(0)
#define VMX_INTR_BLOCKING_BY_MOV_SS	BIT(1)
#define VMX_INTR_BLOCKING_BY_NMI	BIT(3)

/* 25.8.3 Table 25-17: VM-entry interruption-information field (and the
 * same layout for exit and IDT-vectoring information, 25.9.2-25.9.3) */
#define VMX_INTR_INFO_VECTOR(x)		((x) & 0xff)
#define VMX_INTR_TYPE_NMI		(2u << 8)
#define VMX_INTR_TYPE_HW_EXCEPTION	(3u << 8)
#define VMX_INTR_INFO_TYPE(x)		(((x) >> 8) & 7)
#define VMX_INTR_INFO_HAS_ERROR_CODE	BIT(11)
#define VMX_INTR_INFO_DELIVER_ERROR_CODE BIT(11)
#define VMX_INTR_INFO_VALID		BIT(31)

/* 25.9.1: exit reason; Appendix C: basic exit reasons */
#define VMX_EXIT_REASON_BASIC(r)	((r) & 0xffff)
#define VMX_EXIT_REASON_ENTRY_FAILURE	BIT(31)
enum vmx_exit_reason {
	VMX_EXIT_EXCEPTION_OR_NMI = 0,
	VMX_EXIT_EXTERNAL_INTERRUPT = 1,
	VMX_EXIT_TRIPLE_FAULT = 2,
	VMX_EXIT_INIT_SIGNAL = 3,
	VMX_EXIT_SIPI = 4,
	VMX_EXIT_INTERRUPT_WINDOW = 7,
	VMX_EXIT_TASK_SWITCH = 9,
	VMX_EXIT_CPUID = 10,
	VMX_EXIT_GETSEC = 11,
	VMX_EXIT_HLT = 12,
	VMX_EXIT_INVD = 13,
	VMX_EXIT_RDPMC = 15,
	VMX_EXIT_VMCALL = 18,
	VMX_EXIT_VMCLEAR = 19,
	VMX_EXIT_VMLAUNCH = 20,
	VMX_EXIT_VMPTRLD = 21,
	VMX_EXIT_VMPTRST = 22,
	VMX_EXIT_VMREAD = 23,
	VMX_EXIT_VMRESUME = 24,
	VMX_EXIT_VMWRITE = 25,
	VMX_EXIT_VMXOFF = 26,
	VMX_EXIT_VMXON = 27,
	VMX_EXIT_CONTROL_REGISTER_ACCESS = 28,
	VMX_EXIT_MOV_DR = 29,
	VMX_EXIT_IO_INSTRUCTION = 30,
	VMX_EXIT_RDMSR = 31,
	VMX_EXIT_WRMSR = 32,
	VMX_EXIT_INVALID_GUEST_STATE = 33,
	VMX_EXIT_MSR_LOADING = 34,
	VMX_EXIT_MONITOR_TRAP_FLAG = 37,
	VMX_EXIT_MACHINE_CHECK_EVENT = 41,
	VMX_EXIT_EPT_VIOLATION = 48,
	VMX_EXIT_EPT_MISCONFIGURATION = 49,
	VMX_EXIT_INVEPT = 50,
	VMX_EXIT_PREEMPTION_TIMER = 52,
	VMX_EXIT_INVVPID = 53,
	VMX_EXIT_XSETBV = 55,
	VMX_EXIT_VMFUNC = 59,
	VMX_EXIT_REASON_MAX = 75,
};

/* 28.2.1 Table 28-3: exit qualification for control-register accesses */
#define VMX_CR_QUAL_CR(q)		((q) & 0xf)
#define VMX_CR_QUAL_ACCESS(q)		(((q) >> 4) & 3)
#define VMX_CR_ACCESS_MOV_TO_CR		0
#define VMX_CR_QUAL_GPR(q)		(((q) >> 8) & 0xf)

/* 28.2.1 Table 28-5: exit qualification for I/O instructions */
#define VMX_IO_QUAL_SIZE(q)		(((q) & 7) + 1)	/* 0: 1 byte, 1: 2, 3: 4 */
#define VMX_IO_QUAL_IN			BIT(3)
#define VMX_IO_QUAL_STRING		BIT(4)
#define VMX_IO_QUAL_REP			BIT(5)
#define VMX_IO_QUAL_PORT(q)		((u16)((q) >> 16))

/* 27.8: exit qualification of a VM-entry failure due to invalid guest state */
#define VMX_ENTRY_FAIL_QUAL_PDPTE	2
#define VMX_ENTRY_FAIL_QUAL_NMI_BLOCKED	3
#define VMX_ENTRY_FAIL_QUAL_LINK_PTR	4

/* 29.3.2 Tables 29-1..29-6: EPT paging-structure entries */
#define EPT_READ			BIT(0)
#define EPT_WRITE			BIT(1)
#define EPT_EXECUTE			BIT(2)
#define EPT_RWX				(EPT_READ | EPT_WRITE | EPT_EXECUTE)
#define EPT_MEMTYPE(t)			((u64)(t) << 3)	/* leaves only */
#define EPT_LARGE_PAGE			BIT(7)
/* Memory types (SDM Vol. 3 Table 12-2 encodings, also used by the EPTP) */
#define VMX_MEMTYPE_UC			0
#define VMX_MEMTYPE_WB			6
/* 25.6.11 Table 25-9: EPT pointer */
#define EPTP_MEMTYPE(t)			((u64)(t))
#define EPTP_WALK_LENGTH_4		(3ull << 3)

/* Appendix A.10: IA32_VMX_EPT_VPID_CAP */
#define EPT_CAP_WALK_LENGTH_4		BIT(6)
#define EPT_CAP_MEMTYPE_UC		BIT(8)
#define EPT_CAP_MEMTYPE_WB		BIT(14)
#define EPT_CAP_2M_PAGES		BIT(16)
#define EPT_CAP_1G_PAGES		BIT(17)
#define EPT_CAP_INVEPT			BIT(20)
#define EPT_CAP_INVEPT_SINGLE_CONTEXT	BIT(25)
#define EPT_CAP_INVEPT_ALL_CONTEXTS	BIT(26)
#define INVEPT_TYPE_SINGLE_CONTEXT	1
#define INVEPT_TYPE_ALL_CONTEXTS	2

/* Appendix A.1: IA32_VMX_BASIC */
#define VMX_BASIC_REVISION(b)		((u32)(b) & 0x7fffffff)
#define VMX_BASIC_VMCS_SIZE(b)		(((b) >> 32) & 0x1fff)
#define VMX_BASIC_TRUE_CONTROLS		BIT(55)

/*
 * VMREAD/VMWRITE (SDM Vol. 3 31.3). Failure (CF or ZF set) means a field
 * this CPU does not have or no current VMCS: a hypervisor bug, reported by
 * vmx_vmcs_failed() (hv/vmx/exit.c) with the VM-instruction error.
 */
void vmx_vmcs_failed(const char *op, u32 field);
extern u32 vmx_vmcs_failures;	/* how many so far: start-up checks it */

static inline u64 vmcs_read_any(u32 field)
{
	u64 v = 0;
	bool fail;
	asm volatile("vmread %[f], %[v]" : [v] "=r"(v), "=@ccbe"(fail) : [f] "r"((u64)field) : "cc");
	if (unlikely(fail))
		vmx_vmcs_failed("VMREAD", field);
	return v;
}

static inline void vmcs_write_any(u32 field, u64 val)
{
	bool fail;
	asm volatile("vmwrite %[v], %[f]" : "=@ccbe"(fail) : [v] "r"(val), [f] "r"((u64)field) : "cc", "memory");
	if (unlikely(fail))
		vmx_vmcs_failed("VMWRITE", field);
}

/* Width-checked accessors: the field's width, from its encoding, must match
 * at compile time (fields are always enum constants here). */
#define VMCS_CHECK_WIDTH(f, w) \
	_Static_assert(VMCS_WIDTH(f) == (w), #f " is not a " #w " field")
#define vmcs_read16(f) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_16); (u16)vmcs_read_any(f); })
#define vmcs_read32(f) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_32); (u32)vmcs_read_any(f); })
#define vmcs_read64(f) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_64); vmcs_read_any(f); })
#define vmcs_readl(f) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_NATURAL); vmcs_read_any(f); })
#define vmcs_write16(f, v) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_16); vmcs_write_any(f, (u16)(v)); })
#define vmcs_write32(f, v) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_32); vmcs_write_any(f, (u32)(v)); })
#define vmcs_write64(f, v) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_64); vmcs_write_any(f, (u64)(v)); })
#define vmcs_writel(f, v) ({ VMCS_CHECK_WIDTH(f, VMCS_WIDTH_NATURAL); vmcs_write_any(f, (u64)(v)); })

#endif
