# Guest test programs: EFI applications chain-loaded by hvtrace.efi.
GUEST_TESTS := t_basic t_triple t_mmio t_bts t_workload t_rec t_chan
guest-lib-y := guest.o faults.o
GUEST_LIB := $(addprefix $(BUILD)/tests/guest/,$(guest-lib-y)) $(BUILD)/efi-loader/shared/core/fmt.o
GUEST_EFIS := $(addprefix $(BUILD)/tests/guest/,$(addsuffix .efi,$(GUEST_TESTS)))

$(BUILD)/tests/guest/%.o: tests/guest/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -Itests/guest -c $< -o $@

$(BUILD)/tests/guest/%.o: tests/guest/%.S
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -c $< -o $@

$(BUILD)/tests/guest/%.so: $(BUILD)/tests/guest/%.o $(GUEST_LIB)
	$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $^ -o $@ -lefi -lgnuefi

$(BUILD)/tests/guest/t_bts.so: $(BUILD)/tests/guest/bts_seq.o
$(BUILD)/tests/guest/t_rec.so: $(BUILD)/tests/guest/rec_seq.o
$(BUILD)/tests/guest/t_chan.so: $(BUILD)/efi-loader/acpi.o $(BUILD)/efi-loader/shared/core/pcicfg.o

.PRECIOUS: $(BUILD)/tests/guest/%.so $(BUILD)/tests/guest/%.o
-include $(wildcard $(BUILD)/tests/guest/*.d)
