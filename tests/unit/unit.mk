# Host unit tests of pure logic shared with the hypervisor and the loader.
UNIT_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	-fsanitize=address,undefined -fno-sanitize-recover=all -Ihv -Iinclude -Iefi-loader -Itests/unit
UNIT_TESTS := test_config test_pgbuild test_memmap test_vmx_ctls test_ept test_rec test_exc test_pcicfg \
	test_branch test_icr test_pace test_cpuid test_svm_check test_pmu test_lbr test_mtrr test_interp test_pgwalk test_pagebp

unit-src-test_config := efi-loader/config.c hv/base/fmt.c
unit-src-test_pgbuild := hv/base/pgbuild.c hv/base/memmap.c
unit-src-test_memmap := hv/base/memmap.c hv/dispatch/hc_check.c efi-loader/efimisc.c
unit-src-test_vmx_ctls := hv/vmx/ctls.c hv/base/fmt.c
unit-src-test_ept := hv/vmx/ept.c hv/base/pgbuild.c hv/base/memmap.c
unit-src-test_rec := hv/trace/rec.c hv/trace/dbg.c hv/trace/hstep.c hv/trace/pagebp.c hv/base/memmap.c
unit-src-test_exc := hv/base/exc.c
unit-src-test_pcicfg := hv/base/pcicfg.c
unit-src-test_icr := hv/dispatch/icr.c
unit-src-test_mtrr := hv/dispatch/mtrr.c
unit-src-test_pace := hv/trace/pace.c
unit-src-test_pagebp := hv/trace/pagebp.c
unit-src-test_cpuid := hv/dispatch/cpuid.c
unit-src-test_pmu := hv/trace/pmu.c
unit-src-test_lbr := hv/trace/lbr.c hv/trace/branch.c $(wildcard hv/arch/x86/decode/*.c)
unit-src-test_svm_check := hv/svm/check.c
unit-src-test_branch := hv/trace/branch.c $(wildcard hv/arch/x86/decode/*.c)
# the interpreter's core against the host processor (docs/branch-engine.md)
unit-src-test_interp := $(wildcard hv/arch/x86/interp/*.c hv/arch/x86/decode/*.c)
# the interpreting engine's page walk on fake guest memory
unit-src-test_pgwalk := hv/arch/x86/pgwalk.c

define unit_rule
$(BUILD)/host/$(1): tests/unit/$(1).c $$(unit-src-$(1)) tests/unit/unit.h tests/unit/fake_pages.h $$(wildcard hv/base/*.h hv/dispatch/*.h hv/vmx/*.h hv/svm/*.h hv/trace/*.h hv/arch/x86/*.h hv/arch/x86/decode/*.h hv/arch/x86/interp/*.h efi-loader/*.h include/hvtrace/*.h)
	@mkdir -p $$(dir $$@)
	$$(HOSTCC) $$(UNIT_CFLAGS) -o $$@ tests/unit/$(1).c $$(unit-src-$(1))
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_rule,$(t))))

UNIT_BINS := $(addprefix $(BUILD)/host/,$(UNIT_TESTS))

# The interpreter's core against the host processor, longer than the unit tier's run
# (test_interp's defaults): a new seed each run, printed (rerun with INTERP_LONG_SEED=...).
INTERP_LONG_CASES ?= 20000000
INTERP_LONG_SEED ?= $(shell date +%s)
.PHONY: test-interp-long
test-interp-long: $(BUILD)/host/test_interp
	@echo "test-interp-long: seed $(INTERP_LONG_SEED)"
	$(BUILD)/host/test_interp --seed $(INTERP_LONG_SEED) --cases $(INTERP_LONG_CASES) --kernel-windows 1000000 --verbose
