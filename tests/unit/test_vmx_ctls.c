/* VMX control adjustment (hv/vmx/ctls.c) against capability MSR values:
 * default1 bits forced, optional controls taken only where allowed, a
 * missing required control refused with a message that names it. */
#include <string.h>
#include "unit.h"
#include "base/lib.h"
#include "vmx/ctls.h"
#include "vmx/vmcs.h"

/* vmcs.h's inline accessors refer to this; never called on the host */
void vmx_vmcs_failed(const char *op, u32 field) { (void)op; (void)field; abort(); }

static const char *const names2[32] = { [1] = "enable EPT", [3] = "enable RDTSCP",
					[7] = "unrestricted guest" };
static const struct vmx_ctl_word proc2 = {
	"secondary processor-based VM-execution", "IA32_VMX_PROCBASED_CTLS2",
	PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST, PROC2_ENABLE_RDTSCP | PROC2_ENABLE_VPID, names2,
};

static u64 cap(u32 must_be_1, u32 may_be_1)
{
	return ((u64)may_be_1 << 32) | must_be_1;
}

int main(void)
{
	char msg[200];
	u32 out = 0xdeadbeef;
	int st;

	/* everything allowed: required + optional, nothing forced */
	st = vmx_adjust_ctls(&proc2, cap(0, 0xffffffff), &out, msg, sizeof(msg));
	CHECK(st == HV_OK && out == (PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST |
				     PROC2_ENABLE_RDTSCP | PROC2_ENABLE_VPID),
	      "all allowed: st %d out %x", st, out);
	CHECK(msg[0] == 0, "no message on success: '%s'", msg);

	/* an optional control the CPU lacks is left out, not an error */
	st = vmx_adjust_ctls(&proc2, cap(0, PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST |
					       PROC2_ENABLE_VPID), &out, msg, sizeof(msg));
	CHECK(st == HV_OK && out == (PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST | PROC2_ENABLE_VPID),
	      "optional RDTSCP dropped: st %d out %x", st, out);

	/* default1 bits (allowed-0 = 1) are forced on, as the primary
	 * processor-based controls without TRUE MSRs have them (A.3.2) */
	const struct vmx_ctl_word proc = { "primary processor-based VM-execution",
					   "IA32_VMX_PROCBASED_CTLS",
					   PROC_USE_MSR_BITMAPS | PROC_ACTIVATE_SECONDARY_CONTROLS, 0,
					   NULL };
	st = vmx_adjust_ctls(&proc, cap(0x0401e172, 0xfff9fffe), &out, msg, sizeof(msg));
	CHECK(st == HV_OK && out == (0x0401e172 | PROC_USE_MSR_BITMAPS | PROC_ACTIVATE_SECONDARY_CONTROLS),
	      "default1 forced: out %x", out);
	CHECK(out & PROC_CR3_LOAD_EXITING, "CR3-load exiting is default1 there: out %x", out);
	/* the TRUE MSR lets them be 0 */
	st = vmx_adjust_ctls(&proc, cap(0x04006172, 0xfff9fffe), &out, msg, sizeof(msg));
	CHECK(st == HV_OK && !(out & (PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING)),
	      "TRUE controls: out %x", out);

	/* a required control missing: the error names it, its bit and the MSR */
	out = 0x1234;
	st = vmx_adjust_ctls(&proc2, cap(0, PROC2_ENABLE_EPT | PROC2_ENABLE_RDTSCP), &out, msg,
			     sizeof(msg));
	CHECK(st == HV_ERR_VMX_CONTROLS, "no unrestricted guest refused: st %d", st);
	CHECK(out == 0x1234, "out untouched on error: %x", out);
	CHECK(strstr(msg, "'unrestricted guest' (bit 7)") && strstr(msg, "IA32_VMX_PROCBASED_CTLS2") &&
	      strstr(msg, "secondary processor-based VM-execution control"),
	      "message names the control: '%s'", msg);
	CHECK(!strstr(msg, "nor are others"), "one missing: '%s'", msg);

	/* several missing: the lowest is named, the others mentioned */
	st = vmx_adjust_ctls(&proc2, cap(0, 0), &out, msg, sizeof(msg));
	CHECK(st == HV_ERR_VMX_CONTROLS && strstr(msg, "'enable EPT' (bit 1)") &&
	      strstr(msg, "nor are others"), "two missing: '%s'", msg);

	/* a control without a name in the table still gets its bit number */
	st = vmx_adjust_ctls(&proc, cap(0, PROC_USE_MSR_BITMAPS), &out, msg, sizeof(msg));
	CHECK(st == HV_ERR_VMX_CONTROLS && strstr(msg, "'?' (bit 31)"), "unnamed: '%s'", msg);

	/* a malformed MSR: a bit that must be 1 but may not be */
	st = vmx_adjust_ctls(&proc2, cap(BIT(4), 0xffffffef), &out, msg, sizeof(msg));
	CHECK(st == HV_ERR_VMX_CONTROLS && strstr(msg, "must be 1 but may not be"),
	      "malformed: st %d '%s'", st, msg);

	/* a short message buffer is truncated, never overrun */
	char tiny[8];
	memset(tiny, 'x', sizeof(tiny));
	st = vmx_adjust_ctls(&proc2, cap(0, 0), &out, tiny, sizeof(tiny));
	CHECK(st == HV_ERR_VMX_CONTROLS && strlen(tiny) == 7, "truncated: '%s'", tiny);

	/* the dump's formats: '-' pads on the right (hv/base/fmt.c) */
	hv_snprintf(msg, sizeof(msg), "[%-4s|%4s|%-5x|%05x]", "cs", "ss", 0xab, 0xab);
	CHECK(!strcmp(msg, "[cs  |  ss|ab   |000ab]"), "fmt '-': '%s'", msg);
	return unit_done("test_vmx_ctls");
}
