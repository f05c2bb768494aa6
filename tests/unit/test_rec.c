/* The recorder (hv/trace/rec.c) on the host, with the backend faked: ring
 * arithmetic, lossless drops counted exactly, LOST records, filters with
 * the user pseudo-address, and the start/stop/freeze triggers; the host's
 * debugger requests (hv/trace/dbg.c) against a vCPU held in a thread. */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "hvtrace/abi.h"
#include "base/gmem.h"
#include "base/log.h"
#include "base/memmap.h"
#include "base/mm.h"
#include "trace/hstep.h"
#include "base/vcpu.h"
#include "arch/x86/dr.h"
#include "arch/x86/msr.h"
#include "trace/dbg.h"
#include "trace/rec.h"
#include "trace/trace.h"

struct hv hv;
static struct vcpu vcpu0;
static int fake_cpl;
static u64 fake_cr3 = 0x1000;

void log_printf(int level, const char *fn, const char *fmt, ...)
{
	(void)level, (void)fn, (void)fmt;
}
/* the reserve: one arena, reused by each setup() */
static u8 arena[64 * 4096] __attribute__((aligned(4096)));
static u64 arena_used;
void *mm_alloc_pages(u64 n, u64 *pa)
{
	if ((arena_used + n) * 4096 > sizeof(arena))
		return NULL;
	void *p = arena + arena_used * 4096;
	arena_used += n;
	memset(p, 0, n * 4096);
	if (pa)
		*pa = (u64)(uintptr_t)p;
	return p;
}
u64 mm_free_bytes(void) { return 1ull << 30; }
/* the kick: counted (one processor here, nothing to interrupt) */
static unsigned kicks;
void hv_kick_others(struct vcpu *v)
{
	(void)v;
	kicks++;
}
u64 gmem_linear_rip(struct vcpu *v)
{
	return v->rip;
}
static int get_cpl(struct vcpu *v) { (void)v; return fake_cpl; }
static u64 get_cr(struct vcpu *v, int n) { (void)v; return n == 3 ? fake_cr3 : n == 4 ? 0x20 : 0; }
/* what trace/dbg.c needs: long mode, a segment per register, DR6 and the
 * exception intercepts it sets, guest memory [0x1000, 0x1100) */
static u64 fake_dr6 = 0xffff0ff0;
static u32 fake_intercepts;
static u8 fake_ram[0x100];
static u64 get_efer(struct vcpu *v) { (void)v; return EFER_LMA; }
static void get_seg(struct vcpu *v, enum hv_seg s, struct hv_segment *out)
{
	(void)v;
	*out = (struct hv_segment){ .sel = (u16)(8 * s), .base = s == SEG_GS ? 0xffff888000000000ull : 0 };
}
static u64 get_msr(struct vcpu *v, u32 msr) { (void)v; return msr == MSR_KERNEL_GS_BASE ? 0x4000 : 0; }
static u64 fake_dr7 = 0x400, fake_drs[4];
static u64 get_dr(struct vcpu *v, int n) { (void)v; return n == 6 ? fake_dr6 : fake_dr7; }
static void set_dr(struct vcpu *v, int n, u64 val)
{
	(void)v;
	if (n == 6)
		fake_dr6 = val;
	else
		fake_dr7 = val;
}
/* the processor's DR0-DR3 (trace/dr.c) */
u64 dr_hw_read(int n) { return fake_drs[n & 3]; }
void dr_hw_write(int n, u64 val) { fake_drs[n & 3] = val; }
/* the guest's own debug registers while the engine runs (trace/dr.c): the VMCB's here */
u64 guest_dr_read(struct vcpu *v, int n) { return n < 4 ? fake_drs[n] : get_dr(v, n); }
static void set_exception_intercepts(struct vcpu *v, u32 mask) { (void)v; fake_intercepts = mask; }
static const struct hv_arch_ops ops = { .get_cpl = get_cpl, .get_cr = get_cr, .get_efer = get_efer,
					.get_seg = get_seg, .get_msr = get_msr, .get_dr = get_dr,
					.set_dr = set_dr, .set_exception_intercepts = set_exception_intercepts };
/* the nested tables' execute permission of the pages page breakpoints
 * touch (trace/dbg.c page slots): a page not executable while its bit is set */
static u64 fake_nx_pages[8], fake_nx_calls, fake_ro_pages[8];
/* page gpa's bit in `pages` (a page listed with bit 0 set lacks the permission): given
 * (allow) or taken; *was: it was given */
static bool fake_perm(u64 *pages, u64 gpa, bool allow, bool *was)
{
	u32 i = 0;
	while (i < 8 && pages[i] && pages[i] != (gpa | 1))
		i++;
	if (i == 8)
		return false;
	*was = pages[i] != (gpa | 1);
	pages[i] = allow ? 0 : gpa | 1;
	return true;
}
static bool fake_npt_set_exec(u64 gpa, bool exec, bool *was)
{
	fake_nx_calls++;
	return fake_perm(fake_nx_pages, gpa, exec, was);
}
/* ... and their write permission (page watchpoints) */
static bool fake_npt_set_write(u64 gpa, bool write, bool *was)
{
	return fake_perm(fake_ro_pages, gpa, write, was);
}
static bool fake_listed(const u64 *pages, u64 gpa)
{
	for (u32 i = 0; i < 8; i++)
		if (pages[i] == ((gpa & ~0xfffull) | 1))
			return true;
	return false;
}
static bool fake_nx(u64 gpa) { return fake_listed(fake_nx_pages, gpa); }
static bool fake_ro(u64 gpa) { return fake_listed(fake_ro_pages, gpa); }
static struct hv_arch_ops ops_npt;
/* The backend with the nested tables' execute control, every page executable, guest code
 * at guest-physical 0x101000 (gmem_translate maps linear 0x1000 there) */
static void fake_npt_on(void)
{
	ops_npt = ops;
	ops_npt.npt_set_exec = fake_npt_set_exec;
	ops_npt.npt_set_write = fake_npt_set_write;
	hv.ops = &ops_npt;
	memset(&hv.guest_code, 0, sizeof(hv.guest_code));
	memmap_add(&hv.guest_code, 0x101000, 0x1000);
	memset(&hv.guest_ram, 0, sizeof(hv.guest_ram));
	memmap_add(&hv.guest_ram, 0x101000, 0x1000);
	memset(fake_nx_pages, 0, sizeof(fake_nx_pages));
	memset(fake_ro_pages, 0, sizeof(fake_ro_pages));
	fake_nx_calls = 0;
}
size_t gmem_read_linear(struct vcpu *v, u64 gva, void *buf, size_t len)
{
	(void)v;
	if (gva < 0x1000 || gva >= 0x1100 || len > 0x1100 - gva)
		return 0;
	memcpy(buf, fake_ram + (gva - 0x1000), len);
	return len;
}
bool gmem_translate(struct vcpu *v, u64 gva, u64 *gpa)
{
	(void)v;
	if (gva < 0x1000 || gva >= 0x1100)
		return false;
	*gpa = gva + 0x100000;
	return true;
}
bool gmem_read_phys(u64 gpa, void *buf, size_t len)
{
	if (gpa >= 0x101000 && gpa < 0x101100)	/* where gmem_translate maps fake_ram too */
		gpa -= 0x100000;
	if (gpa < 0x1000 || gpa >= 0x1100 || len > 0x1100 - gpa)
		return false;
	memcpy(buf, fake_ram + (gpa - 0x1000), len);
	return true;
}
bool gmem_write_linear(struct vcpu *v, u64 gva, const void *buf, size_t len)
{
	(void)v;
	if (gva < 0x1000 || gva >= 0x1100 || len > 0x1100 - gva)
		return false;
	memcpy(fake_ram + (gva - 0x1000), buf, len);
	return true;
}
bool trace_guest_tf(const struct vcpu *v)
{
	return v->trace->dbg_step.on ? v->trace->dbg_step.tf : (v->rflags & RFLAGS_TF);
}
u32 trace_idle_exceptions(struct vcpu *v)
{
	return v->trace->dbg_step.on || v->trace->dbg_dr.held ? 1u << X86_DB : 0;
}
/* the guest's IDT (trace/follow.c): a #PF handler at 0x402000, a #BP
 * handler at 0x403000, no other */
bool idt_handler(struct vcpu *v, u8 vector, u64 *addr)
{
	(void)v;
	*addr = vector == X86_BP ? 0x403000 : 0x402000;
	return vector == X86_PF || vector == X86_BP;
}
/* the instruction at RIP (base/gmem.c, trace/follow.c): an INT n's vector, or -1 */
static int fake_soft_vec = -1;
enum dec_mode gmem_code_mode(struct vcpu *v, u64 *cs_base)
{
	(void)v;
	*cs_base = 0;
	return DEC_MODE_64;
}
int gmem_decode(struct vcpu *v, u64 lin, u64 rip, enum dec_mode mode, u8 *bytes, struct dec_insn *out)
{
	(void)v, (void)lin, (void)rip, (void)mode, (void)bytes;
	memset(out, 0, sizeof(*out));
	return DEC_OK;
}
/* trace/branch.c: no PUSHF here, the stack in fake_ram */
bool is_legacy_op(const struct dec_insn *insn, u8 map, u8 op)
{
	(void)insn, (void)map, (void)op;
	return false;
}
u64 stack_top(struct vcpu *v, enum dec_mode mode)
{
	(void)mode;
	return v->gpr[GPR_RSP];
}
/* trace/follow.c: no SYSCALL here (is_legacy_op), so no mend */
bool syscall_target(struct vcpu *v, const struct dec_insn *in, enum dec_mode mode, u64 *to)
{
	(void)v, (void)in, (void)mode, (void)to;
	return false;
}
void mend_saved_tf_r11(struct vcpu *v, bool tf) { (void)v, (void)tf; }
void mend_saved_tf(struct vcpu *v, u64 at, unsigned w, bool tf) { (void)v, (void)at, (void)w, (void)tf; }
int soft_int_vector(struct vcpu *v, const struct dec_insn *in, const u8 *bytes)
{
	(void)v, (void)in, (void)bytes;
	return fake_soft_vec;
}
/* the engine's DR3 (trace/dr.c), as far as dbg.c sees it */
void bp_arm(struct vcpu *v, enum engine_bp_kind kind, u64 addr, u64 from, int cpl)
{
	(void)from, (void)cpl;
	v->trace->bp.armed = true;
	v->trace->bp.kind = kind;
	v->trace->bp.addr = addr;
}
void bp_disarm(struct vcpu *v)
{
	v->trace->bp.armed = false;
}

static struct hvtrace_chan *chan;

/* rec_init() with cfg, the channel in the reserve, or in bar2 (size
 * bytes) as in an ivshmem device's BAR the host filled with garbage */
static void setup_in(const struct hv_rec_cfg *cfg, void *bar2, u64 size)
{
	static struct trace_vcpu tv0;
	memset(&vcpu0, 0, sizeof(vcpu0));
	memset(&tv0, 0, sizeof(tv0));
	vcpu0.trace = &tv0;
	memset(&hv, 0, sizeof(hv));
	hv.ops = &ops;
	hv.boot.rec = *cfg;
	/* the modes the loader fills in when hvtrace.cfg says none */
	if (!hv.boot.rec.flight.mode)
		hv.boot.rec.flight.mode = HVTRACE_RING_OVERWRITE;
	if (!hv.boot.rec.stream.mode)
		hv.boot.rec.stream.mode = HVTRACE_RING_LOSSLESS;
	hv.boot.tsc_hz = 1000000000;
	if (bar2) {
		hv.boot.ivshmem.found = 1;
		hv.boot.ivshmem.bar2_pa = (u64)(uintptr_t)bar2;
		hv.boot.ivshmem.bar2_size = size;
		memset(bar2, 0xa5, size);
	}
	hv.vcpus[0] = &vcpu0;
	hv.nr_vcpus = 1;
	fake_cpl = 0;
	arena_used = 0;
	CHECK(rec_init() == HV_OK, "rec_init");
	rec_take_changed(&vcpu0);
	chan = (struct hvtrace_chan *)(uintptr_t)(vcpu0.trace->rec.ring[0].g->offset ?
		(u64)(uintptr_t)vcpu0.trace->rec.ring[0].recs - vcpu0.trace->rec.ring[0].g->offset : 0);
}

static void setup(const struct hv_rec_cfg *cfg)
{
	setup_in(cfg, NULL, 0);
}

static struct hvtrace_rec *slot(int ring, u64 i)
{
	struct rec_ring *r = &vcpu0.trace->rec.ring[ring];
	return &r->recs[i & r->mask];
}

static void branch(u64 from, u64 to)
{
	rec_emit(&vcpu0, HVTRACE_REC_BRANCH, from, to, fake_cpl, HVTRACE_BR_JMP);
}

/* --- the host's debugger (trace/dbg.c; docs/channel.md "The debugger") --- */

static struct hvtrace_chan *dbg_chan;
static u64 dbg_seq;

/* One request as the host writes it, answered by the vCPU held in the
 * other thread (or by this one's rec_ctl_poll when none is held). */
static s64 dbg_req(u32 op, u64 arg0, u64 arg1, bool held)
{
	struct hvtrace_chan *c = dbg_chan;
	memset((void *)&c->ctl, 0, sizeof(c->ctl));
	c->ctl.op = op;
	c->ctl.arg0 = arg0;
	c->ctl.arg1 = arg1;
	__atomic_store_n(&c->ctl.seq, ++dbg_seq, __ATOMIC_RELEASE);
	if (!held)
		rec_ctl_poll(&vcpu0);
	while (__atomic_load_n(&c->ctl_done, __ATOMIC_ACQUIRE) != dbg_seq)
		;
	return c->ctl_result;
}

static void *dbg_vcpu_thread(void *arg)
{
	(void)arg;
	dbg_before_entry(&vcpu0);	/* held here until RESUME or a STEP */
	return NULL;
}

static volatile u32 *dbg_state(struct hvtrace_dbg *a) { return &a->vcpu[0].state; }

/* A channel with host control in an ivshmem BAR, the debugger's area in it */
static void dbg_setup(u8 *bar2, u64 size)
{
	struct hv_rec_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;
	cfg.start = REC_START_HYPERCALL;
	cfg.control = HVTRACE_CTL_POLL;
	setup_in(&cfg, bar2, size);
	dbg_chan = (struct hvtrace_chan *)bar2;
	dbg_seq = 0;
}

static void test_dbg(void)
{
	static u8 bar2[16384] __attribute__((aligned(4096)));
	dbg_setup(bar2, sizeof(bar2));
	struct hvtrace_chan *c = dbg_chan;
	CHECK(c->dbg_offset == 8192, "the debugger's area after the rings: %llu", (unsigned long long)c->dbg_offset);
	struct hvtrace_dbg *a = (struct hvtrace_dbg *)(bar2 + c->dbg_offset);
	CHECK(a->magic == HVTRACE_DBG_MAGIC && a->nr_vcpus == 1 && c->size == sizeof(bar2),
	      "its magic and vCPUs, within the channel's size %llu", (unsigned long long)c->size);

	/* nothing but STOP before the guest is held; never from the guest */
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32, 0x1000, false) == -HVTRACE_EPERM, "READ before STOP");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, false) == -HVTRACE_EPERM, "RESUME before STOP");
	CHECK(dbg_req(HVTRACE_DBG_STOP, 1, 0, false) == -HVTRACE_EINVAL, "STOP with an argument");
	CHECK(rec_hypercall(&vcpu0, HVTRACE_DBG_STOP, 0) == -HVTRACE_EINVAL && !a->held,
	      "the guest's trace_ctl cannot stop itself");
	kicks = 0;
	CHECK(dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0 && a->held && kicks == 1, "STOP: held, the others kicked");
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32, 0x1000, false) == -HVTRACE_EAGAIN,
	      "a vCPU not stopped yet: EAGAIN");

	/* the vCPU reaches its entry and waits there */
	for (u32 i = 0; i < 16; i++)
		vcpu0.gpr[i] = 0x100 + i;
	vcpu0.rip = 0x401000;
	vcpu0.rflags = RFLAGS_FIXED1 | RFLAGS_IF;
	vcpu0.apic_id = 7;
	memset(fake_ram, 0x5a, sizeof(fake_ram));
	pthread_t th;
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	struct hvtrace_dbg_regs *r = &a->vcpu[0].regs;
	CHECK(r->gpr[3] == 0x103 && r->rip == 0x401000 && r->rflags == (RFLAGS_FIXED1 | RFLAGS_IF) &&
	      r->cr3 == fake_cr3 && r->efer == EFER_LMA && r->seg_sel[SEG_CS] == 8 &&
	      r->seg_base[SEG_GS] == 0xffff888000000000ull && r->kernel_gs_base == 0x4000 && a->vcpu[0].stops == 1,
	      "the registers published");

	/* memory: lengths, vCPU numbers and addresses checked */
	u64 bad[][2] = { { 0, 0x1000 }, { 0 | (u64)(HVTRACE_DBG_BUF_SIZE + 1) << 32, 0x1000 },
			 { 0 | 8ull << 32 | 1ull << 49, 0x1000 }, { 1 | 8ull << 32, 0x1000 } };
	for (u32 i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(dbg_req(HVTRACE_DBG_READ, bad[i][0], bad[i][1], true) == -HVTRACE_EINVAL &&
		      dbg_req(HVTRACE_DBG_WRITE, bad[i][0], bad[i][1], true) == -HVTRACE_EINVAL,
		      "bad length or vCPU %u refused", i);
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 16ull << 32, 0x10f8, true) == -HVTRACE_EFAULT,
	      "a read past guest RAM: EFAULT");
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32, 0x1010, true) == 0 && a->buf[0] == 0x5a && a->buf[7] == 0x5a,
	      "a read");
	memcpy(a->buf, "hvtrace!", 8);
	CHECK(dbg_req(HVTRACE_DBG_WRITE, 0 | 8ull << 32, 0x1020, true) == 0 && !memcmp(fake_ram + 0x20, "hvtrace!", 8),
	      "a write");
	memcpy(a->buf, "XXXXXXXX", 8);
	CHECK(dbg_req(HVTRACE_DBG_WRITE, 0 | 8ull << 32, 0x10fc, true) == -HVTRACE_EFAULT && fake_ram[0xfc] == 0x5a,
	      "a write past guest RAM: EFAULT, nothing written");

	/* registers: RFLAGS beyond the status flags, a non-canonical RIP */
	struct hvtrace_dbg_regs w = *r;
	w.rflags |= RFLAGS_TF;
	memcpy(a->buf, &w, sizeof(w));
	CHECK(dbg_req(HVTRACE_DBG_SET_REGS, 0, 0, true) == -HVTRACE_EINVAL && !(vcpu0.rflags & RFLAGS_TF), "TF refused");
	w = *r;
	w.rflags &= ~RFLAGS_IF;
	memcpy(a->buf, &w, sizeof(w));
	CHECK(dbg_req(HVTRACE_DBG_SET_REGS, 0, 0, true) == -HVTRACE_EINVAL && (vcpu0.rflags & RFLAGS_IF), "IF refused");
	w = *r;
	w.rip = 0x0000800000000000ull;
	memcpy(a->buf, &w, sizeof(w));
	CHECK(dbg_req(HVTRACE_DBG_SET_REGS, 0, 0, true) == -HVTRACE_EINVAL && vcpu0.rip == 0x401000,
	      "a non-canonical RIP refused");
	w = *r;
	w.gpr[15] = 0x1234;
	w.rip = 0x401010;
	w.rflags |= RFLAGS_ZF | RFLAGS_CF;
	memcpy(a->buf, &w, sizeof(w));
	CHECK(dbg_req(HVTRACE_DBG_SET_REGS, 0, 0, true) == 0 && vcpu0.gpr[15] == 0x1234 && vcpu0.rip == 0x401010 &&
	      (vcpu0.rflags & (RFLAGS_ZF | RFLAGS_CF)) == (RFLAGS_ZF | RFLAGS_CF) && r->gpr[15] == 0x1234 &&
	      a->vcpu[0].stops == 2, "registers set and published again");
	CHECK(dbg_req(HVTRACE_DBG_SET_REGS, 0, 1, true) == -HVTRACE_EINVAL, "SET_REGS with arg1");

	/* a step: the vCPU leaves with TF forced and #DB intercepted, comes
	 * back after RIP moved with TF and the intercepts as they were */
	CHECK(dbg_req(HVTRACE_DBG_STEP, 1, 0, true) == -HVTRACE_EINVAL, "STEP of no vCPU");
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP");
	pthread_join(th, NULL);
	CHECK((vcpu0.rflags & RFLAGS_TF) && fake_intercepts == 1u << X86_DB && vcpu0.trace->dbg_step.on &&
	      *dbg_state(a) == HVTRACE_DBG_RUNNING, "stepping: TF forced, #DB intercepted, not stopped");
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32, 0x1010, false) == -HVTRACE_EAGAIN,
	      "no request reaches the stepping vCPU");
	struct hv_event db = { .kind = HV_EV_EXCEPTION, .vector = X86_DB };
	fake_dr6 = 0xffff0ff0 | DR6_BS;
	vcpu0.rip = 0x401013;
	CHECK(dbg_step_db(&vcpu0, &db) && fake_dr6 == 0xffff0ff0 && !(vcpu0.rflags & RFLAGS_TF) && !fake_intercepts,
	      "the step's #DB is the debugger's: DR6, TF and the intercepts restored");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(r->rip == 0x401013 && a->vcpu[0].stops == 3 && !(r->rflags & RFLAGS_TF), "stopped again after the step");
	/* a step whose instruction faults: TF the guest's again before the
	 * fault goes to the guest as it came, the step on to the handler in
	 * a register the guest's DR7 leaves free, held there before its
	 * first instruction */
	struct dbg_dr *dd = &vcpu0.trace->dbg_dr;
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP of a faulting instruction");
	pthread_join(th, NULL);
	dbg_after_trace_sync(&vcpu0);
	CHECK((fake_intercepts & (1u << X86_PF)) && (fake_intercepts & (1u << X86_GP)) &&
	      !(fake_intercepts & (1u << X86_BP)) && !(fake_intercepts & (1u << X86_MC)),
	      "stepping: the faults intercepted too, #BP and #MC not");
	struct hv_event pf = { .kind = HV_EV_EXCEPTION, .vector = X86_PF, .has_error = true, .error_code = 0x10 };
	CHECK(!dbg_step_db(&vcpu0, &pf) && !vcpu0.trace->dbg_step.on && !(vcpu0.rflags & RFLAGS_TF) && dd->to_on &&
	      dd->to == 0x402000, "the step's #PF: the guest's to deliver, TF its own, the step on to the handler");
	dbg_before_entry(&vcpu0);	/* not held: on its way */
	dbg_after_trace_sync(&vcpu0);
	CHECK(*dbg_state(a) == HVTRACE_DBG_RUNNING && dd->on && dd->held == 1u << 3 && fake_drs[3] == 0x402000 &&
	      dd->slot[3] == 0xff && fake_dr7 == (0x400 | DR7_L(3)) && (fake_intercepts & (1u << X86_PF)) &&
	      (fake_intercepts & (1u << X86_DB)), "the handler's address in DR3, the faults still intercepted");
	fake_dr6 = 0xffff0ff0 | DR6_B3;
	vcpu0.rip = 0x402000;
	CHECK(dbg_bp_hit(&vcpu0, &db) && !dd->to_on && !dd->hits && !a->vcpu[0].hits && fake_dr6 == 0xffff0ff0,
	      "the handler reached: no hit of a slot, the #DB hidden");
	dbg_after_trace_sync(&vcpu0);
	CHECK(!dd->on && fake_drs[3] == 0 && fake_dr7 == 0x400 && !fake_intercepts, "DR3, DR7 and the intercepts the guest's");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(r->rip == 0x402000 && a->vcpu[0].stops == 4 && !(r->rflags & RFLAGS_TF), "held at the handler");
	/* with every register the guest's, the step ends at the fault */
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP of a faulting instruction, no register free");
	pthread_join(th, NULL);
	fake_dr7 = 0x4ff;
	CHECK(!dbg_step_db(&vcpu0, &pf) && !vcpu0.trace->dbg_step.on && !dd->to_on && !(vcpu0.rflags & RFLAGS_TF),
	      "no register free: the step ends at the fault");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	dbg_after_trace_sync(&vcpu0);
	CHECK(r->rip == 0x402000 && a->vcpu[0].stops == 5 && !fake_intercepts, "held at the fault, the intercepts idle");
	fake_dr7 = 0x400;
	/* a STEP of an INT3: no hidden TF, on to its handler */
	fake_soft_vec = X86_BP;
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP of an INT3");
	pthread_join(th, NULL);
	CHECK(!(vcpu0.rflags & RFLAGS_TF) && !vcpu0.trace->dbg_step.on && dd->to_on && dd->to == 0x403000,
	      "an INT3 stepped: no TF forced, on to the #BP handler");
	dbg_before_entry(&vcpu0);
	dbg_after_trace_sync(&vcpu0);
	fake_soft_vec = -1;
	CHECK(*dbg_state(a) == HVTRACE_DBG_RUNNING && fake_drs[3] == 0x403000 && (fake_intercepts & (1u << X86_GP)),
	      "the handler's address in DR3, the faults intercepted (a gate's #GP on the way)");
	fake_dr6 = 0xffff0ff0 | DR6_B3;
	vcpu0.rip = 0x403000;
	CHECK(dbg_bp_hit(&vcpu0, &db) && !dd->to_on, "the #BP handler reached");
	dbg_after_trace_sync(&vcpu0);
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(r->rip == 0x403000 && a->vcpu[0].stops == 6 && !fake_intercepts && fake_drs[3] == 0,
	      "held at the #BP handler, DR3 and the intercepts the guest's");
	/* the breakpoint: checked, armed when the vCPU goes on, reached */
	fake_dr7 = 0x400;
	fake_drs[3] = 0x3333;
	CHECK(dbg_req(HVTRACE_DBG_SET_BP, 1ull << 33, 0x401020, true) == -HVTRACE_EINVAL &&
	      dbg_req(HVTRACE_DBG_SET_BP, 1ull << 32, 0, true) == -HVTRACE_EINVAL &&
	      dbg_req(HVTRACE_DBG_SET_BP, 1ull << 32, 0x0100000000000000ull, true) == -HVTRACE_EINVAL &&
	      a->bp_addr == 0, "SET_BP: bad flags, address 0, a non-canonical address");
	CHECK(dbg_req(HVTRACE_DBG_SET_BP, 1ull << 32, 0x401020, true) == 0 && a->bp_addr == 0x401020 && !dd->on,
	      "SET_BP: recorded, armed only when the vCPU goes on");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	CHECK(*dbg_state(a) == HVTRACE_DBG_RUNNING && !a->held, "running again");
	CHECK(dd->on && dd->held == 1u << 3 && fake_drs[3] == 0x401020 && dd->saved[3] == 0x3333 &&
	      dd->saved_dr7 == 0x400 && fake_dr7 == (0x400 | DR7_L(3)) && fake_intercepts == 1u << X86_DB,
	      "the breakpoint in DR3 (the guest's kept), L3 in the DR7 entered with, #DB intercepted");
	fake_dr6 = 0xffff0ff0 | DR6_B3;
	vcpu0.rip = 0x401010;
	CHECK(dbg_bp_hit(&vcpu0, &db) && !a->held && fake_dr6 == 0xffff0ff0,
	      "B3 elsewhere (a match RF hid): not a hit, but B3 is never the guest's");
	fake_dr6 = 0xffff0ff0 | DR6_B0;
	CHECK(!dbg_bp_hit(&vcpu0, &db) && fake_dr6 == (0xffff0ff0 | DR6_B0), "the guest's own B0: its #DB");
	vcpu0.rip = 0x401020;
	kicks = 0;
	fake_dr6 = 0xffff0ff0 | DR6_B3 | DR6_B0;
	CHECK(!dbg_bp_hit(&vcpu0, &db) && a->held && a->stop_vcpu == 1 && kicks == 1 && fake_dr6 == (0xffff0ff0 | DR6_B0),
	      "the breakpoint reached with the guest's B0: held, by vCPU 0, B3 taken from DR6, the #DB the guest's");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(r->rip == 0x401020 && a->vcpu[0].hits == 1, "stopped at the breakpoint, slot 0 its hit");
	/* SET_HW: its checks, then a second breakpoint and a watchpoint */
	u64 bad_hw[][2] = { { 4, 0x1000 }, { 1u << 8 | 2u << 16 | 0, 0x1000 }, { 1u << 8 | 1u << 24, 0x1000 },
			    { 1u << 8 | 1u << 16 | 3u << 24, 0x1002 }, { 1u << 8, 0 }, { 1, 0x1000 },
			    { 1u << 8, 0x0100000000000000ull }, { 1u << 8 | 1u << 16 | 2u << 24, 0x1004 } };
	for (u32 i = 0; i < ARRAY_SIZE(bad_hw); i++)
		CHECK(dbg_req(HVTRACE_DBG_SET_HW, bad_hw[i][0], bad_hw[i][1], true) == -HVTRACE_EINVAL,
		      "SET_HW %u refused: an unknown bit, I/O, an execute length, unaligned, no address, "
		      "an address to clear, non-canonical", i);
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 1 | 1u << 8, 0x401030, true) == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 2 | 1u << 8 | 1u << 16 | 2u << 24, 0x1040, true) == 0,
	      "SET_HW: a breakpoint in slot 1, a write watchpoint of 8 bytes in slot 2");
	fake_drs[0] = 0x1111;
	fake_drs[1] = 0x2222;
	fake_drs[2] = 0x2020;
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	CHECK(dd->held == 0xe && fake_drs[3] == 0x401020 && fake_drs[2] == 0x401030 && fake_drs[1] == 0x1040 &&
	      dd->saved[3] == 0x3333 && dd->saved[2] == 0x2020 && dd->saved[1] == 0x2222 && fake_drs[0] == 0x1111 &&
	      fake_dr7 == (0x400 | DR7_L(3) | DR7_L(2) | DR7_L(1) | (0x9ull << DR7_RW_SHIFT(1))) && !dd->hits,
	      "three slots in DR3, DR2, DR1 (RW 01, LEN 10), DR0 the guest's: dr7 %llx",
	      (unsigned long long)fake_dr7);
	/* tracing starts: the registers go back; it stops at an exit: the
	 * slots come back before that exit's entry, not at a later exit */
	vcpu0.trace->engine = HVTRACE_ENGINE_FAST;
	dbg_after_trace_sync(&vcpu0);
	CHECK(!dd->on && !dd->held && fake_drs[3] == 0x3333 && fake_drs[2] == 0x2020 && dd->tw_held == 2 &&
		      fake_drs[1] == 0x1040 && fake_drs[0] == 0x1111 &&
		      fake_dr7 == (0x400 | DR7_L(1) | (0x9ull << DR7_RW_SHIFT(1))),
	      "the engine on: the guest's registers back, the watchpoint alone in DR1 for this entry: dr7 %llx",
	      (unsigned long long)fake_dr7);
	struct hv_event ev_db = { .kind = HV_EV_EXCEPTION, .vector = X86_DB };
	fake_dr6 = DR6_CLEAN | 2;
	dbg_trace_dr_exit(&vcpu0, &ev_db);
	CHECK(!dd->tw_held && dd->tw_fired && fake_drs[1] == 0x2222 && fake_dr7 == 0x400 && fake_dr6 == DR6_CLEAN &&
		      dd->hits == 1u << 2,
	      "its #DB at the exit: slot 2's hit, B1 taken from DR6, DR1 and DR7 the guest's again");
	dd->hits = 0;
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, false) == 0, "the hit held every vCPU: RESUME");
	dbg_after_trace_sync(&vcpu0);
	CHECK(dd->tw_held == 2, "armed again at the next entry");
	vcpu0.trace->engine = HVTRACE_ENGINE_OFF;
	dbg_after_trace_sync(&vcpu0);
	CHECK(dd->on && dd->held == 0xe && fake_drs[3] == 0x401020 && fake_drs[1] == 0x1040,
	      "the engine off again: the three slots armed at this entry");
	dbg_after_trace_sync(&vcpu0);
	CHECK(dd->held == 0xe && dd->saved[3] == 0x3333, "again: nothing changes (the guest's values kept)");
	/* the guest enables its DR2: it gets its register back, the slots move down */
	dbg_dr_guest_dr7(&vcpu0, 0x400 | DR7_G(2));
	CHECK(dd->held == 0xb && fake_drs[2] == 0x2020 && fake_drs[1] == 0x401030 && fake_drs[0] == 0x1040 &&
	      dd->saved[0] == 0x1111 && dd->saved[1] == 0x2222 &&
	      dd->saved_dr7 == (0x400 | DR7_G(2)) && (fake_dr7 & (DR7_G(2) | DR7_L(0) | DR7_L(1) | DR7_L(3))) ==
	      (DR7_G(2) | DR7_L(0) | DR7_L(1) | DR7_L(3)) && !(fake_dr7 & DR7_L(2)),
	      "the guest's DR7 takes DR2 back: slot 1 in DR1, slot 2 in DR0 now (dr7 %llx)", (unsigned long long)fake_dr7);
	/* all four its own: the debugger's wait */
	dbg_dr_guest_dr7(&vcpu0, 0x400 | 0xff);
	CHECK(dd->on && !dd->held && fake_drs[0] == 0x1111 && fake_drs[1] == 0x2222 && fake_drs[2] == 0x2020 &&
	      fake_drs[3] == 0x3333 && fake_dr7 == 0x4ff && !fake_intercepts,
	      "the guest enables all four: its values back, nothing of the debugger's, #DB not intercepted");
	dbg_dr_guest_dr7(&vcpu0, 0x400);
	CHECK(dd->held == 0xe && fake_drs[1] == 0x1040, "and freed again: the slots back");
	/* the debugger steps the instruction its breakpoint is on: RF, no hit */
	vcpu0.trace->dbg_step.on = true;
	vcpu0.trace->dbg_step.rip = vcpu0.rip = 0x401020;
	vcpu0.rflags &= ~RFLAGS_RF;
	fake_dr6 = 0xffff0ff0 | DR6_B3;
	CHECK(dbg_bp_hit(&vcpu0, &db) && !a->held && (vcpu0.rflags & RFLAGS_RF) && !dd->hits && fake_dr6 == 0xffff0ff0,
	      "a breakpoint at the stepped instruction: RF set, not held, the #DB dropped");
	vcpu0.trace->dbg_step.on = false;
	vcpu0.rflags &= ~RFLAGS_RF;
	/* the watchpoint: a trap, wherever RIP is */
	vcpu0.rip = 0x401077;
	fake_dr6 = 0xffff0ff0 | DR6_B1;
	CHECK(dbg_bp_hit(&vcpu0, &db) && a->held && fake_dr6 == 0xffff0ff0 && dd->hits == 1u << 2,
	      "the watchpoint in DR1: slot 2's hit, held, the #DB dropped");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->vcpu[0].hits == 1u << 2, "hits published: %x", a->vcpu[0].hits);
	CHECK(dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32 | HVTRACE_DBG_READ_PHYS, 0x1010, true) == 0 && a->buf[0] == 0x5a &&
	      dbg_req(HVTRACE_DBG_READ, 0 | 8ull << 32 | HVTRACE_DBG_READ_PHYS, 0x10fc, true) == -HVTRACE_EFAULT &&
	      dbg_req(HVTRACE_DBG_WRITE, 0 | 8ull << 32 | HVTRACE_DBG_READ_PHYS, 0x1010, true) == -HVTRACE_EINVAL,
	      "READ_PHYS: guest RAM, past it EFAULT, no physical write");
	u64 gpa = 0;
	CHECK(dbg_req(HVTRACE_DBG_TRANSLATE, 0, 0x1010, true) == 0 && (memcpy(&gpa, a->buf, 8), gpa == 0x101010) &&
	      dbg_req(HVTRACE_DBG_TRANSLATE, 0, 0x2000, true) == -HVTRACE_EFAULT &&
	      dbg_req(HVTRACE_DBG_TRANSLATE, 1, 0x1010, true) == -HVTRACE_EINVAL &&
	      dbg_req(HVTRACE_DBG_TRANSLATE, 1ull << 32, 0x1010, true) == -HVTRACE_EINVAL,
	      "TRANSLATE: the walk's address into buf, unmapped EFAULT, no such vCPU, a stray bit");
	CHECK(dbg_req(HVTRACE_DBG_SET_BP, 0, 0, true) == 0 && a->bp_addr == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 1, 0, true) == 0 && dbg_req(HVTRACE_DBG_SET_HW, 2, 0, true) == 0,
	      "SET_BP and SET_HW: cleared");
	/* page slots (4-31): a backend without the control refuses them; with
	 * it, two breakpoints on one page take its execute once; linear
	 * 0x1010 maps to guest-physical 0x101010 (gmem_translate here) */
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 5 | 1u << 8, 0x1010, true) == -HVTRACE_ENOSYS, "page slot: ENOSYS without NPT");
	fake_npt_on();
	u64 bad_pg[][2] = { { 5 | 1u << 8 | 2u << 16, 0x1010 }, { 5 | 1u << 8 | 1u << 24, 0x1010 },
			    { 5 | 1u << 8, 0 }, { 5, 0x1010 }, { 5 | 1ull << 32, 0 }, { 5 | 1u << 8 | 1ull << 32, 0x1010 },
			    { 5 | 1u << 8 | 1ull << 48, 0x1010 }, { 5 | 1u << 8, 0x0100000000000000ull } };
	for (u32 i = 0; i < ARRAY_SIZE(bad_pg); i++)
		CHECK(dbg_req(HVTRACE_DBG_SET_HW, bad_pg[i][0], bad_pg[i][1], true) == -HVTRACE_EINVAL,
		      "page slot %u refused: an I/O watchpoint, a length, no address, an address to clear, a vCPU to clear, "
		      "no vCPU 1, a stray bit, non-canonical", i);
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 5 | 1u << 8, 0x2000, true) == -HVTRACE_EFAULT &&
	      dbg_req(HVTRACE_DBG_SET_HW, 5 | 1u << 8, 0x10f0 + 0x100, true) == -HVTRACE_EFAULT && !fake_nx_calls,
	      "page slot: an address not mapped, EFAULT; nothing changed");
	memset(&hv.guest_code, 0, sizeof(hv.guest_code));
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 5 | 1u << 8, 0x1010, true) == -HVTRACE_EFAULT && !fake_nx_calls,
	      "page slot: a page not the guest's RAM or code, EFAULT");
	memmap_add(&hv.guest_code, 0x101000, 0x1000);
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 5 | 1u << 8, 0x1010, true) == 0 && fake_nx(0x101000) && fake_nx_calls == 1 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 31 | 1u << 8, 0x1020, true) == 0 && fake_nx_calls == 1,
	      "page slots 5 and 31 on one page: execute taken once");
	/* tracing started while the vCPU was held: its engine starts at the entry (trace_update)
	 * and takes the hidden step over as its own */
	CHECK(dbg_req(HVTRACE_TRACE_START, 0, 0, true) == 0 && rec_tracing() && dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0,
	      "STEP granted once tracing started while the vCPU was held");
	pthread_join(th, NULL);
	CHECK(vcpu0.trace->dbg_step.on && (vcpu0.rflags & RFLAGS_TF), "the hidden step armed, the engine still off");
	dbg_step_cancel(&vcpu0);	/* the engine starts */
	CHECK(!vcpu0.trace->dbg_step.on && !(vcpu0.rflags & RFLAGS_TF) && dd->tstep == DBG_TSTEP_WANT &&
	      dd->tstep_rip == vcpu0.rip, "the engine's step instead: wanted from the same RIP, TF the guest's");
	dd->tstep = DBG_TSTEP_NONE;
	CHECK(dbg_req(HVTRACE_TRACE_STOP, 0, 0, false) == 0 && !rec_tracing(), "tracing stopped");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, false) == 0, "RESUME");
	CHECK(!dd->on && !dd->held && !fake_intercepts && fake_drs[3] == 0x3333 && fake_drs[2] == 0x2020 &&
	      fake_drs[1] == 0x2222 && fake_dr7 == 0x400 && !dd->hits,
	      "the registers the guest's again when the vCPU went on");
	CHECK(dbg_req(HVTRACE_DBG_SET_BP, 1ull << 32, 0x401020, false) == -HVTRACE_EPERM, "SET_BP not held");
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, false) == -HVTRACE_EPERM, "STEP after RESUME");
	dbg_before_entry(&vcpu0);	/* not held: returns at once */
	CHECK(*dbg_state(a) == HVTRACE_DBG_RUNNING, "not held after RESUME");

	/* the page breakpoints' nested page faults (dbg_npf) */
	struct hv_event npf = { .kind = HV_EV_NPF, .gpa = 0x101014, .error_code = HV_NPF_FETCH | HV_NPF_PRESENT };
	struct hv_event npf_w = { .kind = HV_EV_NPF, .gpa = 0x101014, .error_code = HV_NPF_WRITE | HV_NPF_PRESENT };
	struct hv_event npf_np = { .kind = HV_EV_NPF, .gpa = 0x901000, .error_code = HV_NPF_FETCH };
	CHECK(!dbg_npf(&vcpu0, &npf_w) && !dbg_npf(&vcpu0, &npf_np), "a write, a page the tables lack: not ours");
	/* another instruction on the page: opened for it, one hidden step */
	vcpu0.rip = 0x1014;
	vcpu0.rflags = 0x2;
	CHECK(dbg_npf(&vcpu0, &npf) && !a->held && !fake_nx(0x101000) && dd->np_n == 1 &&
	      vcpu0.trace->dbg_step.on && (vcpu0.rflags & RFLAGS_TF),
	      "not a hit: the page executable for one step of the instruction");
	dbg_before_entry(&vcpu0);
	CHECK(vcpu0.trace->dbg_step.on && !fake_nx(0x101000), "the step not done (RIP the same): open still");
	vcpu0.rip = 0x1018;
	dbg_before_entry(&vcpu0);
	CHECK(!vcpu0.trace->dbg_step.on && !(vcpu0.rflags & RFLAGS_TF) && fake_nx(0x101000) && !dd->np_n && !a->held,
	      "the instruction ran: the page protected again, TF the guest's, not held");
	/* a vCPU that traces: no hit, open until its next entry */
	vcpu0.rip = 0x1010;
	npf.gpa = 0x101010;
	vcpu0.trace->engine = HVTRACE_ENGINE_FAST;
	CHECK(dbg_npf(&vcpu0, &npf) && !a->held && !fake_nx(0x101000) && !vcpu0.trace->dbg_step.on && dd->np_at_exit,
	      "tracing: the breakpoint passed, the page open, no step of ours");
	dbg_before_entry(&vcpu0);
	CHECK(!fake_nx(0x101000) && dd->np_n == 1, "tracing: open for the entry after the fault");
	dbg_before_entry(&vcpu0);
	CHECK(fake_nx(0x101000) && !dd->np_n, "tracing: closed at the exit after it");
	vcpu0.trace->engine = HVTRACE_ENGINE_OFF;
	/* a fetch refused on a page no longer protected: taken again */
	struct hv_event npf_gone = { .kind = HV_EV_NPF, .gpa = 0x777000, .error_code = HV_NPF_FETCH | HV_NPF_PRESENT };
	CHECK(dbg_npf(&vcpu0, &npf_gone) && !a->held, "a fetch refused elsewhere since page breakpoints were used: again");
	/* the hit: the breakpoint's address on its page */
	kicks = 0;
	CHECK(dbg_npf(&vcpu0, &npf) && a->held && a->stop_vcpu == 1 && dd->hits == 1u << 5 && fake_nx(0x101000) &&
	      !dd->np_n,
	      "a hit: held by vCPU 0, slot 5, the page as it was (hits %x)", dd->hits);
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->vcpu[0].hits == 1u << 5 && r->rip == 0x1010, "slot 5's hit published: %x", a->vcpu[0].hits);
	/* the last breakpoint cleared: the page's permission exactly as it was */
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 5, 0, true) == 0 && fake_nx(0x101000) &&
	      dbg_req(HVTRACE_DBG_SET_HW, 31, 0, true) == 0 && !fake_nx(0x101000) &&
	      dbg_req(HVTRACE_DBG_SET_HW, 31, 0, true) == 0,
	      "slot 5 cleared: still protected for 31; 31 cleared: executable again; cleared twice: nothing");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	vcpu0.rip = 0x1010;
	CHECK(!dbg_npf(&vcpu0, &npf_np), "after: a page the tables lack is still not ours");
	hv.ops = &ops;
}

/* A vCPU held in dbg_trace_bp, as trace_before_entry calls it (the other thread) */
static void *dbg_trace_thread(void *arg)
{
	(void)arg;
	dbg_trace_bp(&vcpu0);
	return NULL;
}

/* The debugger's breakpoints and step on a vCPU that traces (trace/dbg.c dbg_trace_bp,
 * struct dbg_bps): the list the engines look at, a hit held before the instruction with its
 * slot published, passed once when the vCPU goes on from there, a page breakpoint on another
 * page not a hit, and the engine's step of it from wanted to done. */
static void test_dbg_traced(void)
{
	static u8 bar2[16384] __attribute__((aligned(4096)));
	dbg_setup(bar2, sizeof(bar2));
	struct hvtrace_dbg *a = (struct hvtrace_dbg *)(bar2 + dbg_chan->dbg_offset);
	struct trace_vcpu *t = vcpu0.trace;
	struct dbg_dr *dd = &t->dbg_dr;
	struct dbg_bps *b = &t->dbg_bps;
	fake_npt_on();
	fake_dr7 = 0x400;
	vcpu0.rip = 0x1000;
	vcpu0.rflags = RFLAGS_FIXED1;
	pthread_t th;
	CHECK(dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0, "STOP");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	/* two debug-register breakpoints, a write watchpoint, two page breakpoints */
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 0 | 1u << 8, 0x1040, true) == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 1 | 1u << 8 | 1u << 16 | 3u << 24, 0x1080, true) == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 2 | 1u << 8, 0x1050, true) == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 6 | 1u << 8, 0x1060, true) == 0 &&
	      dbg_req(HVTRACE_DBG_SET_HW, 7 | 1u << 8, 0x1070, true) == 0,
	      "slots 0 and 2 (breakpoints), 1 (a watchpoint), 6 and 7 (page breakpoints)");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	CHECK(b->n == 4 && b->filter && dbg_bp_listed(b, 0x1040) && dbg_bp_listed(b, 0x1050) && dbg_bp_listed(b, 0x1060) &&
	      dbg_bp_listed(b, 0x1070) && !dbg_bp_listed(b, 0x1080) && !dbg_bp_listed(b, 0x1041),
	      "the engines' list: the four instruction breakpoints, not the watchpoint (%u)", b->n);
	/* tracing: not at a breakpoint, nothing */
	t->engine = HVTRACE_ENGINE_FAST;
	vcpu0.rip = 0x1030;
	dbg_trace_bp(&vcpu0);
	CHECK(!a->held && !dd->pass_on, "an address without a breakpoint: runs on");
	/* a page breakpoint where the address maps to another page: no hit (gmem_translate maps
	 * 0x10xx to 0x1010xx; the slot said 0x2010xx) */
	CHECK(b->gpa[2] == 0x101060, "page slot 6 on 0x101060 (%llx)", (unsigned long long)b->gpa[2]);
	b->gpa[2] = 0x201060;
	vcpu0.rip = 0x1060;
	dbg_trace_bp(&vcpu0);
	CHECK(!a->held, "a page breakpoint's address on another page: no hit");
	b->gpa[2] = 0x101060;
	/* the hit: held before the instruction, slot 6 published */
	kicks = 0;
	pthread_create(&th, NULL, dbg_trace_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->held && a->stop_vcpu == 1 && a->vcpu[0].hits == 1u << 6 && a->vcpu[0].regs.rip == 0x1060 && kicks == 1,
	      "a page breakpoint reached tracing: every vCPU held, slot 6 (hits %x)", a->vcpu[0].hits);
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	CHECK(!a->held && dd->pass_on && dd->pass == 0x1060 && !dd->hits, "passed from there once");
	dbg_trace_bp(&vcpu0);
	CHECK(!a->held && dd->pass_on, "an exit before it ran (the same RIP): no second hit");
	vcpu0.rip = 0x1064;
	dbg_trace_bp(&vcpu0);
	CHECK(!dd->pass_on, "elsewhere: the pass forgotten");
	/* a debug-register slot's breakpoint, then the engine's step from it */
	vcpu0.rip = 0x1040;
	pthread_create(&th, NULL, dbg_trace_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->vcpu[0].hits == 1u << 0, "slot 0 reached tracing (hits %x)", a->vcpu[0].hits);
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP of the vCPU that traces");
	pthread_join(th, NULL);
	CHECK(dd->tstep == DBG_TSTEP_WANT && dd->tstep_rip == 0x1040 && !t->dbg_step.on && !(vcpu0.rflags & RFLAGS_TF) &&
	      *dbg_state(a) == HVTRACE_DBG_RUNNING, "the engine's step wanted, no hidden step: TF is the engine's");
	dbg_after_trace_sync(&vcpu0);
	CHECK(dd->tstep == DBG_TSTEP_RUN, "running once the engine armed it");
	t->interp_db_exit = false;
	dbg_before_entry(&vcpu0);	/* an exit before the instruction (an interrupt): not done */
	CHECK(dd->tstep == DBG_TSTEP_RUN && *dbg_state(a) == HVTRACE_DBG_RUNNING, "not done at an exit before it");
	t->bp.armed = true;
	t->bp.kind = BP_HANDLER;
	t->interp_db_exit = true;
	dbg_before_entry(&vcpu0);	/* a fault on its way to its handler */
	CHECK(dd->tstep == DBG_TSTEP_RUN && *dbg_state(a) == HVTRACE_DBG_RUNNING, "not done while an event is delivered");
	t->bp.armed = false;
	vcpu0.rip = 0x1044;
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);	/* the step's trap: done, held */
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(dd->tstep == DBG_TSTEP_NONE && !dd->pass_on && a->vcpu[0].regs.rip == 0x1044 && !a->vcpu[0].hits,
	      "done at the step's trap: held again after the instruction");
	/* a step granted while the engine runs, tracing stopped at that entry: the hidden step */
	CHECK(dbg_req(HVTRACE_DBG_STEP, 0, 0, true) == 0, "STEP");
	pthread_join(th, NULL);
	t->engine = HVTRACE_ENGINE_OFF;
	dbg_after_trace_sync(&vcpu0);
	CHECK(dd->tstep == DBG_TSTEP_NONE && t->dbg_step.on && (vcpu0.rflags & RFLAGS_TF),
	      "the engine stopped at the entry: the hidden step instead");
	hstep_end(&vcpu0, &t->dbg_step, false);
	/* a breakpoint reached while the guest is held already (another vCPU's stop came first,
	 * here the host's STOP): its slot kept in its hits for the host, the stop's vCPU as it was */
	t->engine = HVTRACE_ENGINE_FAST;
	dd->pass_on = false;
	vcpu0.rip = 0x1050;
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, false) == 0 && dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0 &&
	      a->held && !a->stop_vcpu, "held by the host");
	kicks = 0;
	pthread_create(&th, NULL, dbg_trace_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(!a->stop_vcpu && a->vcpu[0].hits == 1u << 2 && !kicks,
	      "reached while held: slot 2 in its hits, stop_vcpu still the host's, nobody kicked again");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	t->engine = HVTRACE_ENGINE_OFF;
	/* clear every slot: an empty list */
	CHECK(dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0, "STOP");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	u32 slots[] = { 0, 1, 2, 6, 7 };
	bool ok = true;
	for (u32 i = 0; i < ARRAY_SIZE(slots); i++)
		ok = ok && dbg_req(HVTRACE_DBG_SET_HW, slots[i], 0, true) == 0;
	CHECK(ok && dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "cleared, RESUME");
	pthread_join(th, NULL);
	CHECK(!b->n && !b->filter && !fake_nx(0x101000), "no breakpoint: an empty list, the page executable again");
	hv.ops = &ops;
}

/* The debugger's page watchpoints (ABI 1.13: SET_HW page slots with RW 1 and a length):
 * the page's write taken in the nested tables, refusals, a write fault on it stepped with the
 * page open, a hit when the watched bytes changed (held after it, the slot published), none
 * when they did not, a vCPU that traces passing, the page's write given back with the last. */
static void test_dbg_watch(void)
{
	static u8 bar2[16384] __attribute__((aligned(4096)));
	dbg_setup(bar2, sizeof(bar2));
	struct hvtrace_dbg *a = (struct hvtrace_dbg *)(bar2 + dbg_chan->dbg_offset);
	struct trace_vcpu *t = vcpu0.trace;
	struct dbg_dr *dd = &t->dbg_dr;
	fake_npt_on();
	fake_dr7 = 0x400;
	vcpu0.rip = 0x1000;
	vcpu0.rflags = RFLAGS_FIXED1;
	memset(fake_ram, 0, sizeof(fake_ram));
	pthread_t th;
	CHECK(dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0, "STOP");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	/* slot 9: 8 bytes at 0x1040 (guest-physical 0x101040) */
	const u64 w9 = 9 | 1u << 8 | 1u << 16 | 7ull << 48;
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 9 | 1u << 8 | 3u << 16 | 7ull << 48, 0x1040, true) == -HVTRACE_ENOSYS,
	      "a read-or-write page watchpoint: ENOSYS (the tables cannot refuse reads alone)");
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 9 | 1u << 8 | 1u << 16 | 0xfffull << 48, 0x1040, true) == -HVTRACE_EINVAL &&
	      dbg_req(HVTRACE_DBG_SET_HW, 9 | 1u << 8 | 1u << 16 | 1u << 24, 0x1040, true) == -HVTRACE_EINVAL &&
	      dbg_req(HVTRACE_DBG_SET_HW, 9 | 1u << 8 | 1u << 16 | 7ull << 48, 0x3040, true) == -HVTRACE_EFAULT &&
	      !fake_ro(0x101000), "past its page, a DR LEN, an address not mapped: refused, nothing changed");
	ops_npt.npt_set_write = NULL;
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, w9, 0x1040, true) == -HVTRACE_ENOSYS, "a backend without the control: ENOSYS");
	ops_npt.npt_set_write = fake_npt_set_write;
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, w9, 0x1040, true) == 0 && fake_ro(0x101000) && !fake_nx(0x101000),
	      "set: the page not writable, still executable");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	CHECK(!t->dbg_bps.n, "a watchpoint is no breakpoint for the engines");
	/* a write on the page that leaves the watched bytes alone: stepped, no hit */
	struct hv_event wf = { .kind = HV_EV_NPF, .gpa = 0x101080, .error_code = HV_NPF_WRITE | HV_NPF_PRESENT };
	vcpu0.rip = 0x1010;
	CHECK(dbg_npf(&vcpu0, &wf) && !a->held && !fake_ro(0x101000) && t->dbg_step.on && dd->wslots == 1u << 5,
	      "a write fault: the page open for one step, the watched bytes summed (slot 9: page slot 5)");
	fake_ram[0x80] = 1;
	vcpu0.rip = 0x1014;
	dbg_before_entry(&vcpu0);
	CHECK(!a->held && fake_ro(0x101000) && !t->dbg_step.on && !dd->wslots,
	      "the step done, the watched bytes as they were: no hit, the page protected again");
	/* a write into them: held after it, slot 9 published */
	wf.gpa = 0x101044;
	kicks = 0;
	CHECK(dbg_npf(&vcpu0, &wf) && !fake_ro(0x101000) && t->dbg_step.on, "a write fault in the watched bytes: stepped");
	fake_ram[0x44] = 0x77;
	vcpu0.rip = 0x1018;
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->held && a->stop_vcpu == 1 && a->vcpu[0].hits == 1u << 9 && a->vcpu[0].regs.rip == 0x1018 &&
	      fake_ro(0x101000) && kicks == 1, "changed: a hit, held after the write, slot 9 (hits %x)", a->vcpu[0].hits);
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	/* a vCPU that traces: the page open until the exit after, the engine stepping the write
	 * (dbg_trace_wstep), the watched bytes compared then */
	t->engine = HVTRACE_ENGINE_FAST;
	fake_ram[0x44] = 0x78;
	CHECK(dbg_npf(&vcpu0, &wf) && !a->held && !fake_ro(0x101000) && !t->dbg_step.on && dd->wslots,
	      "tracing: the page open, the watched bytes summed, no hidden step (the engine's own)");
	dbg_before_entry(&vcpu0);
	CHECK(dbg_trace_wstep(&vcpu0), "tracing: the engine steps the write");
	dbg_before_entry(&vcpu0);
	CHECK(!a->held && fake_ro(0x101000) && !dd->np_n, "tracing: no hit, closed at the exit after");
	t->engine = HVTRACE_ENGINE_OFF;
	/* the write of an event's delivery (a #PF's frame on the watched page): no hidden TF to
	 * push, the delivery runs on to the handler (0x402000 here), held there as changed */
	struct hv_event wd = { .kind = HV_EV_NPF, .gpa = 0x101040, .error_code = HV_NPF_WRITE | HV_NPF_PRESENT,
			       .vectoring = true, .vec_type = HV_VEC_EXCEPTION, .vec_vector = X86_PF };
	vcpu0.rip = 0x1020;
	vcpu0.rflags = RFLAGS_FIXED1;
	CHECK(dbg_npf(&vcpu0, &wd) && !t->dbg_step.on && !(vcpu0.rflags & RFLAGS_TF) && dd->to_on &&
	      dd->to == 0x402000 && !fake_ro(0x101000) && dd->wslots == 1u << 5,
	      "a delivery's write: on to the handler, no hidden TF, the page open, the bytes summed");
	dbg_after_trace_sync(&vcpu0);
	fake_ram[0x40] = 0x99;
	vcpu0.rip = 0x402000;
	struct hv_event db = { .kind = HV_EV_EXCEPTION, .vector = X86_DB };
	fake_dr6 = 0xffff0ff0 | (u64)dd->held;
	CHECK(dbg_bp_hit(&vcpu0, &db) && !dd->to_on, "the handler reached");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(a->vcpu[0].hits == 1u << 9 && a->vcpu[0].regs.rip == 0x402000 && fake_ro(0x101000),
	      "the frame changed the watched bytes: held at the handler, slot 9 (hits %x)", a->vcpu[0].hits);
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	fake_dr6 = 0xffff0ff0;
	/* a breakpoint on the same page: both kept; the watchpoint cleared: write given back */
	CHECK(dbg_req(HVTRACE_DBG_STOP, 0, 0, false) == 0, "STOP");
	pthread_create(&th, NULL, dbg_vcpu_thread, NULL);
	while (*dbg_state(a) != HVTRACE_DBG_STOPPED)
		;
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 6 | 1u << 8, 0x1010, true) == 0 && fake_nx(0x101000) && fake_ro(0x101000),
	      "a breakpoint on the page too: not executable, not writable");
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 9, 0, true) == 0 && !fake_ro(0x101000) && fake_nx(0x101000),
	      "the watchpoint cleared: writable again, the breakpoint's execute still taken");
	CHECK(dbg_req(HVTRACE_DBG_SET_HW, 6, 0, true) == 0 && !fake_nx(0x101000), "the breakpoint cleared");
	CHECK(dbg_req(HVTRACE_DBG_RESUME, 0, 0, true) == 0, "RESUME");
	pthread_join(th, NULL);
	struct hv_event wf2 = { .kind = HV_EV_NPF, .gpa = 0x101044, .error_code = HV_NPF_WRITE | HV_NPF_PRESENT };
	CHECK(dbg_npf(&vcpu0, &wf2) && !t->dbg_step.on, "a write refused on a page no longer protected: taken again");
	hv.ops = &ops;
}

/* The hidden step (trace/hstep.c) that the debugger's stepi and an NMI's
 * IRET share: whose its #DB is, and the guest's TF and DR6 after it. */
static void test_hstep(void)
{
	struct hidden_step *s = &vcpu0.trace->dbg_step;
	struct hv_event db = { .kind = HV_EV_EXCEPTION, .vector = X86_DB };
	const u64 clean = 0xffff0ff0;

	vcpu0.rflags = 0x202;
	fake_dr6 = clean;
	fake_intercepts = 0;
	hstep_arm(&vcpu0, s, false);
	CHECK(s->on && (vcpu0.rflags & RFLAGS_TF) && fake_intercepts == 1u << X86_DB, "armed: TF forced, #DB intercepted");
	fake_dr6 = clean | DR6_B0;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_NOT_STEP && s->on && (vcpu0.rflags & RFLAGS_TF),
	      "a breakpoint fault before the instruction (no BS): not the step's, it goes on");
	/* issue 28's review: the debugger's step restored DR6 over these */
	fake_dr6 = clean | DR6_BS | DR6_B1;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_GUEST && !s->on && fake_dr6 == (clean | DR6_B1) &&
		      !(vcpu0.rflags & RFLAGS_TF) && !fake_intercepts,
	      "the guest's data breakpoint hit during the step: its #DB, B1 without BS, TF clear again (dr6 %llx)",
	      (unsigned long long)fake_dr6);
	fake_dr6 = clean;
	hstep_arm(&vcpu0, s, false);
	fake_dr6 = clean | DR6_BS;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_HIDDEN && fake_dr6 == clean && !(vcpu0.rflags & RFLAGS_TF),
	      "the step's alone: hidden, DR6 and TF as before");
	/* the guest's own TF: its trap, its TF kept */
	vcpu0.rflags = 0x302;
	hstep_arm(&vcpu0, s, false);
	fake_dr6 = clean | DR6_BS;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_GUEST && fake_dr6 == (clean | DR6_BS) && (vcpu0.rflags & RFLAGS_TF),
	      "the guest's own TF: the trap is its, BS in DR6, TF set");
	/* a POPF that cleared the guest's TF: not set again */
	hstep_arm(&vcpu0, s, false);
	vcpu0.rflags &= ~RFLAGS_TF;
	fake_dr6 = clean | DR6_BS;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_GUEST && !(vcpu0.rflags & RFLAGS_TF),
	      "an instruction that cleared TF: the guest's TF stays clear");
	/* an IRET (the NMI's step) sets TF as it popped it, even over the TF of before */
	vcpu0.rflags = 0x202;
	fake_dr6 = clean;
	hstep_arm(&vcpu0, s, true);
	fake_dr6 = clean | DR6_BS;
	CHECK(hstep_db(&vcpu0, s, &db) == HSTEP_HIDDEN && (vcpu0.rflags & RFLAGS_TF),
	      "after an IRET, the TF it popped (set) stays");
	/* cancelled before the instruction ran: the TF of then, whatever the kind */
	vcpu0.rflags = 0x202;
	hstep_arm(&vcpu0, s, true);
	hstep_end(&vcpu0, s, false);
	CHECK(!(vcpu0.rflags & RFLAGS_TF) && !s->on && !fake_intercepts, "cancelled: TF of before (clear)");
	/* emulated by the hypervisor (another exit, RIP moved): TF still forced, the guest's goes back */
	vcpu0.rflags = 0x202;
	hstep_arm(&vcpu0, s, false);
	hstep_end(&vcpu0, s, true);
	CHECK(!(vcpu0.rflags & RFLAGS_TF), "completed by another exit: the guest's TF (clear)");
	fake_dr6 = clean;
}

int main(void)
{
	struct hv_rec_cfg cfg;

	/* --- overwrite ring, start at boot ------------------------------ */
	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;	/* 128 records */
	cfg.start = REC_START_BOOT;
	setup(&cfg);
	CHECK(chan->magic == HVTRACE_CHAN_MAGIC && chan->nr_rings == 1 && chan->size == 8192,
	      "header: magic %llx rings %u size %llu", (unsigned long long)chan->magic, chan->nr_rings,
	      (unsigned long long)chan->size);
	CHECK(chan->rings[0].capacity == 128 && chan->rings[0].offset == 4096 &&
	      chan->rings[0].mode == HVTRACE_RING_OVERWRITE && chan->state == HVTRACE_STATE_TRACING,
	      "ring 0");
	CHECK(rec_tracing() && !rec_trigger_addr(), "tracing from boot");
	for (u64 i = 0; i < 300; i++)
		branch(0x1000 + i, 0x2000 + i);
	CHECK(chan->rings[0].head == 300, "head %llu", (unsigned long long)chan->rings[0].head);
	CHECK(slot(0, 299)->from == 0x1000 + 299 && slot(0, 172)->from == 0x1000 + 172 &&
	      slot(0, 299)->kind == HVTRACE_REC_BRANCH && slot(0, 299)->aux == HVTRACE_BR_JMP,
	      "newest 128 kept");
	CHECK(slot(0, 299)->tsc >= slot(0, 172)->tsc && slot(0, 299)->tsc, "TSC on");

	/* CR3 switch: one record, before the next branch (from boot, the
	 * first one names the address space, from 0) */
	fake_cr3 = 0x5000;
	rec_exit_begin(&vcpu0);
	rec_exit_begin(&vcpu0);
	branch(1, 2);
	CHECK(chan->rings[0].head == 302 && slot(0, 300)->kind == HVTRACE_REC_CR3 &&
	      slot(0, 300)->from == 0 && slot(0, 300)->to == 0x5000, "cr3 record");

	/* stop by hypercall, then markers only; freeze ends everything */
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_STOP, 0) == 0 && !rec_tracing() &&
	      chan->state == HVTRACE_STATE_STOPPED && rec_take_changed(&vcpu0), "stop");
	CHECK(slot(0, 302)->kind == HVTRACE_REC_MARKER && slot(0, 302)->aux == HVTRACE_MARK_STOP &&
	      slot(0, 302)->to == 301, "stop marker counts records made: %llu",
	      (unsigned long long)slot(0, 302)->to);
	branch(3, 4);
	CHECK(chan->rings[0].head == 303, "nothing while stopped");
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_MARK, 0x77) == 0 && chan->rings[0].head == 304 &&
	      slot(0, 303)->from == 0x77 && slot(0, 303)->aux == HVTRACE_MARK_GUEST, "guest mark");
	CHECK(rec_hypercall(&vcpu0, 9, 0) == -HVTRACE_EINVAL, "bad op");
	unsigned k0 = kicks;
	rec_freeze(&vcpu0, HVTRACE_FREEZE_TRIPLE_FAULT);
	CHECK(kicks == k0 + 1, "a freeze kicks the other vCPUs");
	CHECK(chan->state == HVTRACE_STATE_FROZEN && chan->freeze == HVTRACE_FREEZE_TRIPLE_FAULT &&
	      slot(0, 304)->aux == HVTRACE_MARK_CRASH && slot(0, 304)->to == HVTRACE_FREEZE_TRIPLE_FAULT,
	      "freeze with a crash marker");
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_START, 0) == -HVTRACE_EPERM, "no start once frozen");
	rec_hypercall(&vcpu0, HVTRACE_TRACE_MARK, 1);
	CHECK(chan->rings[0].head == 305, "frozen: nothing written");

	/* --- triggers: address, branches:N, records:N ------------------- */
	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;
	cfg.start = REC_START_ADDR;
	cfg.start_arg = 0xffffffff81000000ull;
	cfg.stop = REC_STOP_RECORDS;
	cfg.stop_arg = 10;
	setup(&cfg);
	CHECK(!rec_tracing() && rec_trigger_addr() == 0xffffffff81000000ull &&
	      chan->state == HVTRACE_STATE_IDLE, "waiting for the address");
	branch(1, 2);
	CHECK(chan->rings[0].head == 0, "nothing before the trigger");
	rec_trigger_hit(&vcpu0);
	CHECK(rec_tracing() && !rec_trigger_addr() && rec_take_changed(&vcpu0), "trigger starts");
	CHECK(slot(0, 0)->aux == HVTRACE_MARK_START && slot(0, 0)->from == 0xffffffff81000000ull,
	      "start marker");
	for (int i = 0; i < 15; i++)
		branch(0x100 + i, 0x200);
	CHECK(!rec_tracing() && chan->rings[0].head == 12 && slot(0, 10)->from == 0x100 + 9 &&
	      slot(0, 11)->aux == HVTRACE_MARK_STOP, "records:10 stops after 10: head %llu",
	      (unsigned long long)chan->rings[0].head);

	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;
	cfg.start = REC_START_BRANCHES;
	cfg.start_arg = 5;
	setup(&cfg);
	for (int i = 0; i < 8; i++)
		branch(0x100 + i, 0x200);
	CHECK(chan->rings[0].head == 3 && slot(0, 0)->from == 0x105, "branches:5 skips 5");

	/* modes swapped by configuration: a lossless flight recorder and an
	 * overwriting host ring */
	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;
	cfg.flight.mode = HVTRACE_RING_LOSSLESS;
	cfg.flight.wait_us = 50;
	cfg.stream.size = 4096;
	cfg.stream.mode = HVTRACE_RING_OVERWRITE;
	cfg.start = REC_START_BOOT;
	setup(&cfg);
	CHECK(chan->rings[0].mode == HVTRACE_RING_LOSSLESS && chan->rings[0].wait_us == 50 &&
	      chan->rings[1].mode == HVTRACE_RING_OVERWRITE && chan->rings[1].wait_us == 0, "modes from the config");
	for (int i = 0; i < 200; i++)
		branch(0x100 + i, 0x200);
	CHECK(chan->rings[0].head == 128 && chan->rings[0].lost == 72 && chan->rings[1].head == 200 &&
	      chan->rings[1].lost == 0, "lossless flight keeps the oldest, overwriting stream the newest");

	/* --- filters ---------------------------------------------------- */
	memset(&cfg, 0, sizeof(cfg));
	cfg.flight.size = 4096;
	cfg.stream.size = 4096;
	cfg.flight.filter.cpl = HVTRACE_CPL_USER;
	cfg.stream.filter.nr_ranges = 1;
	cfg.stream.filter.ranges[0].lo = 0x400000;
	cfg.stream.filter.ranges[0].hi = 0x4fffff;
	cfg.start = REC_START_BOOT;
	setup(&cfg);
	fake_cpl = 0;
	branch(0xffffffff81000000ull, 0xffffffff81000010ull);	/* kernel only */
	fake_cpl = 3;
	branch(0x401000, 0x402000);				/* user, in range */
	/* SYSCALL from user: lands at CPL 0 */
	fake_cpl = 0;
	rec_emit(&vcpu0, HVTRACE_REC_FAR, 0x401100, 0xffffffff81800000ull, 3, HVTRACE_BR_SYSCALL);
	struct hvtrace_ring *fl = &chan->rings[0], *st = &chan->rings[1];
	CHECK(fl->head == 2 && fl->filtered == 1, "user filter: head %llu filtered %llu",
	      (unsigned long long)fl->head, (unsigned long long)fl->filtered);
	CHECK(slot(0, 1)->from == 0x401100 && slot(0, 1)->to == HVTRACE_ADDR_KERNEL &&
	      HVTRACE_INFO_FROM_CPL(slot(0, 1)->info) == 3 && HVTRACE_INFO_TO_CPL(slot(0, 1)->info) == 0,
	      "kernel end hidden: to %llx", (unsigned long long)slot(0, 1)->to);
	CHECK(st->head == 2 && st->filtered == 1 && slot(1, 1)->to == 0xffffffff81800000ull,
	      "range filter keeps either end; stream sees kernel addresses");

	/* a new filter by hypercall, checked like the config's */
	static struct hvtrace_filter nf;
	memset(&hv.guest_ram, 0, sizeof(hv.guest_ram));
	memmap_add(&hv.guest_ram, (u64)(uintptr_t)&nf & ~0xfffull, 8192);
	u64 gpa = (u64)(uintptr_t)&nf;
	nf = (struct hvtrace_filter){ .consumer = HVTRACE_CONSUMER_FLIGHT, .cpl = HVTRACE_CPL_KERNEL };
	vcpu0.gpr[GPR_RDX] = sizeof(nf);
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == 0 && fl->cpl_filter == HVTRACE_CPL_KERNEL,
	      "filter hypercall");
	fake_cpl = 0;
	branch(0xffffffff81000000ull, 0xffffffff81000010ull);
	CHECK(fl->head == 3 && slot(0, 2)->from == 0xffffffff81000000ull, "kernel now kept");
	vcpu0.gpr[GPR_RDX] = sizeof(nf) - 1;
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == -HVTRACE_EINVAL, "short");
	vcpu0.gpr[GPR_RDX] = sizeof(nf);
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, 0x10) == -HVTRACE_EFAULT, "not RAM");
	nf.consumer = 3;
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == -HVTRACE_EINVAL, "bad consumer");
	nf = (struct hvtrace_filter){ .consumer = 2, .nr_ranges = 5 };
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == -HVTRACE_EINVAL, "too many ranges");
	nf = (struct hvtrace_filter){ .consumer = 2, .nr_ranges = 1, .ranges = { { 5, 4 } } };
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == -HVTRACE_EINVAL, "backwards range");
	nf = (struct hvtrace_filter){ .consumer = 2, .cr3 = 0x1001 };
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == -HVTRACE_EINVAL, "bad cr3");

	/* a reader scribbled the shared header: the hypervisor works from its
	 * own rings (AddressSanitizer sees any access past them) */
	chan->nr_rings = 0xffffffffu;
	for (int i = 0; i < HVTRACE_CHAN_MAX_RINGS; i++) {
		chan->rings[i].consumer = 0xffff;
		chan->rings[i].offset = 0xdead0000ull;
		chan->rings[i].capacity = 3;
	}
	nf = (struct hvtrace_filter){ .consumer = HVTRACE_CONSUMER_FLIGHT, .cpl = HVTRACE_CPL_USER };
	CHECK(rec_hypercall(&vcpu0, HVTRACE_TRACE_FILTER, gpa) == 0 && fl->cpl_filter == HVTRACE_CPL_USER &&
	      st->cpl_filter != HVTRACE_CPL_USER, "filter with a scribbled header: only the flight ring");
	u64 head = vcpu0.trace->rec.ring[0].head;
	fake_cpl = 3;
	branch(0x401000, 0x402000);
	CHECK(vcpu0.trace->rec.ring[0].head == head + 1 && slot(0, head)->from == 0x401000,
	      "records still go where the hypervisor put the ring");

	/* --- lossless: drops counted exactly, one LOST record ----------- */
	memset(&cfg, 0, sizeof(cfg));
	cfg.stream.size = 4096;		/* 128 records */
	cfg.stream.wait_us = 100;
	cfg.start = REC_START_BOOT;
	setup(&cfg);
	st = &chan->rings[0];
	CHECK(st->mode == HVTRACE_RING_LOSSLESS && st->wait_us == 100, "lossless ring");
	for (int i = 0; i < 200; i++)
		branch(0x1000 + i, 0);
	CHECK(st->head == 128 && st->lost == 72 && st->waits == 0,
	      "no reader: full ring keeps the oldest, drops 72 without waiting (head %llu lost %llu)",
	      (unsigned long long)st->head, (unsigned long long)st->lost);
	st->reader = 1;
	st->tail = 100;		/* the reader consumed 100 */
	branch(0x9000, 0);
	CHECK(st->head == 130 && slot(0, 128)->kind == HVTRACE_REC_LOST && slot(0, 128)->from == 72 &&
	      slot(0, 129)->from == 0x9000, "LOST record with the exact count, then the record");
	for (int i = 0; i < 100; i++)
		branch(0xa000 + i, 0);
	CHECK(st->head == 228 && st->lost == 72 + 2 && st->waits == 1,
	      "reader attached, stalled: one bounded wait per overflow (head %llu lost %llu waits %llu)",
	      (unsigned long long)st->head, (unsigned long long)st->lost, (unsigned long long)st->waits);
	u64 total = 0, lost_told = 0;
	st->tail = st->head;
	branch(0xb000, 0);
	for (u64 i = 0; i < st->head; i++) {
		if (i < st->head - 128)
			continue;
		if (slot(0, i)->kind == HVTRACE_REC_LOST)
			lost_told += slot(0, i)->from;
		else
			total++;
	}
	CHECK(lost_told == 74 && total == 126, "every drop told exactly: %llu lost, %llu records",
	      (unsigned long long)lost_told, (unsigned long long)total);
	st->tail = st->head + 5;	/* a broken reader: tail ahead of head */
	branch(0xc000, 0);
	CHECK(st->lost == 75, "an unbelievable tail: no room, nothing overwritten (lost %llu)",
	      (unsigned long long)st->lost);
	CHECK(vcpu0.trace->rec.lost == 75, "per-vCPU lost for the status hypercall");
	/* the bound is the hypervisor's own: a header scribbled with a huge
	 * wait_us does not stall the vCPU (a new overflow, reader attached) */
	st->wait_us = 0xffffffffu;
	st->tail = st->head;
	for (int i = 0; i < 127; i++)	/* the LOST record of the last gap, then 127: full */
		branch(0xd000 + i, 0);
	u64 waits = st->waits, t0 = __builtin_ia32_rdtsc();
	branch(0xe000, 0);
	CHECK(__builtin_ia32_rdtsc() - t0 < 1000000000ull && st->lost == 76 && st->waits == waits + 1,
	      "waited its own 100 us, not the header's: lost %llu", (unsigned long long)st->lost);
	/* --- two vCPUs: machine-wide state, rings of their own ---------- */
	{
		static struct vcpu vcpu1;
		static struct trace_vcpu tv1;
		memset(&cfg, 0, sizeof(cfg));
		cfg.flight.size = 4096;
		cfg.start = REC_START_BOOT;
		cfg.stop = REC_STOP_RECORDS;
		cfg.stop_arg = 7;
		memset(&vcpu1, 0, sizeof(vcpu1));
		memset(&tv1, 0, sizeof(tv1));
		vcpu1.trace = &tv1;
		vcpu1.id = 1;
		/* setup() with a second vCPU: rec_init lays out both rings */
		struct vcpu *saved = &vcpu1;
		memset(&vcpu0, 0, sizeof(vcpu0));
		static struct trace_vcpu tv0b;
		memset(&tv0b, 0, sizeof(tv0b));
		vcpu0.trace = &tv0b;
		memset(&hv, 0, sizeof(hv));
		hv.ops = &ops;
		hv.boot.rec = cfg;
		hv.boot.rec.flight.mode = HVTRACE_RING_OVERWRITE;
		hv.boot.tsc_hz = 1000000000;
		hv.vcpus[0] = &vcpu0;
		hv.vcpus[1] = saved;
		hv.nr_vcpus = 2;
		arena_used = 0;
		CHECK(rec_init() == HV_OK, "rec_init, 2 vCPUs");
		struct rec_ring *r0 = &vcpu0.trace->rec.ring[0], *r1 = &vcpu1.trace->rec.ring[0];
		CHECK(r0->g->vcpu == 0 && r1->g->vcpu == 1 && r0->recs != r1->recs, "a ring each");
		CHECK(rec_take_changed(&vcpu0) && rec_take_changed(&vcpu1) && !rec_take_changed(&vcpu0),
		      "each vCPU sees a change once");
		/* records:7 counts the records of both */
		for (int i = 0; i < 4; i++) {
			rec_emit(&vcpu0, HVTRACE_REC_BRANCH, 0x10 + i, 0x20, 0, HVTRACE_BR_JMP);
			rec_emit(&vcpu1, HVTRACE_REC_BRANCH, 0x30 + i, 0x40, 0, HVTRACE_BR_JMP);
		}
		CHECK(!rec_tracing() && r0->head + r1->head == 7 + 1 && rec_take_changed(&vcpu1),
		      "records:7 over two vCPUs stops once: heads %llu %llu",
		      (unsigned long long)r0->head, (unsigned long long)r1->head);
		/* a freeze on vCPU 1: its marker now, vCPU 0's at its next exit */
		u64 h0 = r0->head, h1 = r1->head;
		vcpu1.rip = 0xdead;
		vcpu0.rip = 0xbeef;
		rec_take_changed(&vcpu0);
		rec_freeze(&vcpu1, HVTRACE_FREEZE_TRIPLE_FAULT);
		CHECK(r1->head == h1 + 1 && r1->recs[h1 & r1->mask].aux == HVTRACE_MARK_CRASH &&
		      r1->recs[h1 & r1->mask].from == 0xdead && r0->head == h0,
		      "the crashing vCPU's marker only");
		CHECK(rec_take_changed(&vcpu0) && r0->head == h0 + 1 &&
		      r0->recs[h0 & r0->mask].aux == HVTRACE_MARK_CRASH && r0->recs[h0 & r0->mask].from == 0xbeef &&
		      r0->recs[h0 & r0->mask].vcpu == 0,
		      "the other's marker at its next exit");
		CHECK(!rec_take_changed(&vcpu0) && r0->head == h0 + 1, "once");
		CHECK(rec_take_changed(&vcpu1) && r1->head == h1 + 1, "not twice on the crashing vCPU");
	}
	/* --- host control requests (docs/channel.md "Control") ------------ */
	{
		static u8 bar2[16384] __attribute__((aligned(4096)));
		memset(&cfg, 0, sizeof(cfg));
		cfg.flight.size = 4096;
		cfg.start = REC_START_BOOT;
		cfg.control = HVTRACE_CTL_POLL;
		setup(&cfg);
		CHECK(chan->ctl_mode == HVTRACE_CTL_OFF, "a channel in reserved RAM takes no requests");
		chan->ctl.op = HVTRACE_TRACE_STOP;
		chan->ctl.seq = 1;
		rec_ctl_poll(&vcpu0);
		CHECK(chan->ctl_done == 0 && rec_tracing(), "... and reads none");

		setup_in(&cfg, bar2, sizeof(bar2));
		struct hvtrace_chan *c = (struct hvtrace_chan *)bar2;
		struct rec_ring *r = &vcpu0.trace->rec.ring[0];
		CHECK(c->ctl_mode == HVTRACE_CTL_POLL && c->ctl_poll_us == REC_CTL_POLL_US && c->ctl.seq == 0 &&
		      c->ctl_done == 0, "ivshmem: poll, the request area cleared");
		CHECK(rec_ctl_polled() && !rec_ctl_watcher(&vcpu0), "polled; no watcher without take_pending");

		/* a stop, applied once */
		c->ctl.op = HVTRACE_TRACE_STOP;
		c->ctl.reserved = 0;
		c->ctl.seq = 1;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_done == 1 && c->ctl_result == 0 && c->ctl_applied == 1 && !rec_tracing() &&
		      c->state == HVTRACE_STATE_STOPPED, "stop applied: done %llu result %lld",
		      (unsigned long long)c->ctl_done, (long long)c->ctl_result);
		u64 h = r->head;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_applied == 1 && r->head == h, "not twice");
		/* a seq that is not one past the last: no request */
		c->ctl.op = HVTRACE_TRACE_START;
		c->ctl.seq = 7;
		rec_ctl_poll(&vcpu0);
		c->ctl.seq = 0;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_done == 1 && !rec_tracing() && c->ctl_rejected == 0, "seq 7 and 0 ignored");
		/* refused, counted, nothing else */
		struct { u32 op, reserved, consumer, cpl; } badr[] = {
			{ 99, 0, 0, 0 }, { HVTRACE_TRACE_START, 1, 0, 0 },
			{ HVTRACE_TRACE_FILTER, 0, HVTRACE_CONSUMER_FLIGHT, 9 }, { HVTRACE_TRACE_FILTER, 0, 3, 0 },
			{ HVTRACE_TRACE_WATCHDOG, 0, 0, 0 },
		};
		u64 seq = 1;
		for (u32 i = 0; i < ARRAY_SIZE(badr); i++) {
			memset((void *)&c->ctl, 0, sizeof(c->ctl));
			c->ctl.op = badr[i].op;
			c->ctl.reserved = badr[i].reserved;
			c->ctl.filter.consumer = badr[i].consumer;
			c->ctl.filter.cpl = badr[i].cpl;
			if (badr[i].op == HVTRACE_TRACE_WATCHDOG)
				c->ctl.arg0 = REC_WATCHDOG_MAX_US + 1;
			c->ctl.seq = ++seq;
			rec_ctl_poll(&vcpu0);
			CHECK(c->ctl_done == seq && c->ctl_result == -HVTRACE_EINVAL && c->ctl_rejected == i + 1 &&
			      !rec_tracing() && r->f->cpl == HVTRACE_CPL_ALL,
			      "bad request %u refused: result %lld", i, (long long)c->ctl_result);
		}
		/* a host marker, a filter, a start */
		memset((void *)&c->ctl, 0, sizeof(c->ctl));
		c->ctl.op = HVTRACE_TRACE_MARK;
		c->ctl.arg0 = 0x4242;
		vcpu0.rip = 0x777;
		c->ctl.seq = ++seq;
		h = r->head;
		rec_ctl_poll(&vcpu0);
		CHECK(r->head == h + 1 && r->recs[h & r->mask].aux == HVTRACE_MARK_HOST &&
		      r->recs[h & r->mask].from == 0x4242 && r->recs[h & r->mask].to == 0x777, "host marker");
		c->ctl.op = HVTRACE_TRACE_FILTER;
		c->ctl.filter.consumer = HVTRACE_CONSUMER_FLIGHT;
		c->ctl.filter.cpl = HVTRACE_CPL_KERNEL;
		c->ctl.seq = ++seq;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_result == 0 && r->f->cpl == HVTRACE_CPL_KERNEL && r->g->cpl_filter == HVTRACE_CPL_KERNEL,
		      "filter from the host");
		c->ctl.op = HVTRACE_TRACE_START;
		c->ctl.seq = ++seq;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_result == 0 && rec_tracing(), "start from the host");
		/* the watchdog: armed, it runs out, the recorder freezes; a
		 * request after that is refused */
		c->ctl.op = HVTRACE_TRACE_WATCHDOG;
		c->ctl.arg0 = 1;	/* 1 us */
		c->ctl.seq = ++seq;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_result == 0 && c->watchdog_us == 1, "watchdog armed");
		for (u64 t0 = __builtin_ia32_rdtsc(); __builtin_ia32_rdtsc() - t0 < 100000;)
			;
		rec_ctl_poll(&vcpu0);
		CHECK(c->state == HVTRACE_STATE_FROZEN && c->freeze == HVTRACE_FREEZE_WATCHDOG && c->watchdog_us == 0,
		      "the watchdog ran out: state %u freeze %u", c->state, c->freeze);
		c->ctl.op = HVTRACE_TRACE_START;
		c->ctl.seq = ++seq;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_done == seq && c->ctl_result == -HVTRACE_EPERM, "frozen: EPERM");
		/* the hypervisor's own counts, not the header's */
		c->ctl_done = 12345;
		c->ctl_rejected = 0;
		c->ctl.op = 99;
		c->ctl.seq = ++seq;
		rec_ctl_poll(&vcpu0);
		CHECK(c->ctl_done == seq && c->ctl_rejected == ARRAY_SIZE(badr) + 2,
		      "a scribbled ctl_done and count change nothing: done %llu rejected %llu",
		      (unsigned long long)c->ctl_done, (unsigned long long)c->ctl_rejected);
	}
	test_dbg();
	test_dbg_traced();
	test_dbg_watch();
	test_hstep();
	return unit_done("test_rec");
}
