# The Linux guest's perf test program (tests/perf/work.S): static, not PIE,
# its text at 0x10000000 (docs/pmu.md "Linux's perf in the guest").
$(BUILD)/tests/perf/perf-work: tests/perf/work.S
	@mkdir -p $(dir $@)
	$(HOSTCC) -nostdlib -static -no-pie -Wl,-Ttext-segment=0x10000000 -Wl,--build-id=none -o $@ $<
