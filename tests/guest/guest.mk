# Guest test programs: EFI applications chain-loaded by hvtrace.efi.
GUEST_TESTS := t_basic t_triple t_mmio t_bts t_workload t_rec t_chan t_hostile t_smp t_debug t_unusual t_irq t_pmu t_fidel t_gdb t_uart bootvmlinux
guest-lib-y := guest.o faults.o
GUEST_LIB := $(addprefix $(BUILD)/tests/guest/,$(guest-lib-y)) $(BUILD)/efi-loader/shared/base/fmt.o
GUEST_EFIS := $(addprefix $(BUILD)/tests/guest/,$(addsuffix .efi,$(GUEST_TESTS)))

$(BUILD)/tests/guest/%.o: tests/guest/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -Itests/guest -c $< -o $@

$(BUILD)/tests/guest/%.o: tests/guest/%.S
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -c $< -o $@

$(BUILD)/tests/guest/%.so: $(BUILD)/tests/guest/%.o $(GUEST_LIB)
	$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $^ -o $@ -lefi -lgnuefi

$(BUILD)/tests/guest/t_bts.so: $(BUILD)/tests/guest/bts_seq.o $(BUILD)/tests/guest/pmi.o
$(BUILD)/tests/guest/t_rec.so: $(BUILD)/tests/guest/rec_seq.o
$(BUILD)/tests/guest/t_gdb.so: $(BUILD)/tests/guest/gdb_seq.o
$(BUILD)/tests/guest/t_debug.so: $(BUILD)/tests/guest/debug_seq.o
$(BUILD)/tests/guest/t_unusual.so: $(BUILD)/tests/guest/unusual_seq.o
$(BUILD)/tests/guest/t_hostile.so: $(BUILD)/tests/guest/pmi.o
$(BUILD)/tests/guest/t_pmu.so: $(BUILD)/tests/guest/pmu_seq.o $(BUILD)/tests/guest/pmi.o

# The hypervisor's code addresses t_hostile aims its attacks at, from the
# ELF (linked at a fixed address: an attacker knows them as well).
HV_ATTACK_SYMS := svm_vmexit_rip vmx_exit_entry hv_handle_event hv_prepare_entry \
	trace_before_entry __hv_ro_start hv
$(BUILD)/tests/guest/hv_syms.h: $(BUILD)/hv/hv.elf tests/guest/guest.mk
	@mkdir -p $(dir $@)
	nm $< | awk -v want="$(HV_ATTACK_SYMS)" 'BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) need[w[i]] = 1 } \
		($$3 in need) { printf "#define HV_SYM_%s 0x%sull\n", $$3, $$1; found[$$3] = 1 } \
		END { for (s in need) if (!found[s]) { print "hv_syms.h: no symbol " s > "/dev/stderr"; exit 1 } }' >$@.tmp
	mv $@.tmp $@
$(BUILD)/tests/guest/t_hostile.o: $(BUILD)/tests/guest/hv_syms.h
$(BUILD)/tests/guest/t_hostile.o: EFI_CFLAGS += -I$(BUILD)/tests/guest
$(BUILD)/tests/guest/t_chan.so: $(BUILD)/efi-loader/acpi.o $(BUILD)/efi-loader/shared/base/pcicfg.o

.PRECIOUS: $(BUILD)/tests/guest/%.so $(BUILD)/tests/guest/%.o
-include $(wildcard $(BUILD)/tests/guest/*.d)
