# The hypervisor: a freestanding flat image linked at HV_VA_BASE.
# Objects per directory and per backend (Kbuild's obj-y idea).
# Layers, each using only those below it (scripts/check-layers.sh):
# backends (svm, vmx) -> dispatch -> trace -> base -> arch/x86.
hv-dispatch-y := dispatch/entry.o dispatch/mp.o dispatch/icr.o dispatch/irq.o dispatch/event.o dispatch/cpuid.o dispatch/msr.o dispatch/mtrr.o \
	dispatch/hypercall.o dispatch/hc_check.o dispatch/pcihide.o dispatch/uarthide.o dispatch/ioport.o dispatch/image.o
hv-base-y := base/exc.o base/gmem.o base/mm.o base/memmap.o base/pgbuild.o base/integrity.o \
	base/log.o base/lib.o base/fmt.o base/status.o base/pcicfg.o base/lapic.o base/i8259.o base/insn.o base/rootexc.o base/hv.o
# the instruction decoder (docs/decoder.md), also built on its own by tests/unit/decode.mk
hv-decode-y := $(addprefix arch/x86/decode/,decode.o legacy.o vex.o tables.o vex_tables.o)
# the interpreter's pure core (docs/branch-engine.md), host-tested by tests/unit/test_interp.c
hv-interp-y := arch/x86/interp/interp.o arch/x86/interp/native.o
hv-x86-y := arch/x86/desc.o arch/x86/exc.o arch/x86/resume.o arch/x86/pgwalk.o $(hv-decode-y) $(hv-interp-y)
hv-svm-y := svm/svm.o svm/exit.o svm/npt.o svm/msr.o svm/run.o svm/check.o
hv-vmx-y := vmx/vmx.o vmx/exit.o vmx/ept.o vmx/msr.o vmx/ctls.o vmx/run.o
hv-trace-y := trace/ds.o trace/engine.o trace/branch.o trace/dr.o trace/follow.o \
	trace/rec.o trace/pace.o trace/pmu.o trace/lbr.o trace/lbr_engine.o trace/nmi.o trace/interp_engine.o trace/dbg.o \
	trace/hstep.o trace/pagebp.o

HV_OBJS := $(addprefix $(BUILD)/hv/,$(hv-dispatch-y) $(hv-base-y) $(hv-x86-y) $(hv-svm-y) $(hv-vmx-y) $(hv-trace-y))

HV_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mcmodel=kernel \
	-mno-red-zone -mgeneral-regs-only -fno-stack-protector -fno-asynchronous-unwind-tables \
	-fno-common -Wall -Wextra -Werror -Wno-unused-parameter -Ihv -Iinclude -MMD -MP

$(BUILD)/hv/%.o: hv/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HV_CFLAGS) -c $< -o $@

$(BUILD)/hv/%.o: hv/%.S
	@mkdir -p $(dir $@)
	$(CC) $(HV_CFLAGS) -c $< -o $@

$(BUILD)/hv/hv.elf: $(HV_OBJS) hv/hv.ld
	$(LD) -nostdlib -static -z max-page-size=4096 -z noexecstack -T hv/hv.ld -o $@ $(HV_OBJS)

$(BUILD)/hv/hv.bin: $(BUILD)/hv/hv.elf
	$(OBJCOPY) -O binary $< $@

-include $(HV_OBJS:.o=.d)
