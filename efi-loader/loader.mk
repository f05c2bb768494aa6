# hvtrace.efi: a GNU-EFI application (PE subsystem 10) embedding hv.bin.
# Frame pointers kept: the next stage starts under the loader's frames, and
# a backtrace walker there (an assertion handler's) follows RBP through
# them to the firmware's, as when the firmware starts it directly; with
# RBP a general register the chain led into the loader's data (issue 25,
# t_fidel frame_chain_ends_cleanly).
EFI_INC := /usr/include/efi
EFI_LIB := /usr/lib
EFI_CFLAGS := -std=gnu11 -O2 -I$(EFI_INC) -I$(EFI_INC)/x86_64 -fpic -ffreestanding \
	-fno-stack-protector -fno-stack-check -fshort-wchar -mno-red-zone \
	-maccumulate-outgoing-args -mgeneral-regs-only -DEFI_FUNCTION_WRAPPER \
	-fno-omit-frame-pointer \
	-Wall -Wextra -Werror -Wno-unused-parameter -Ihv -Iinclude -Iefi-loader -MMD -MP
EFI_LDFLAGS := -nostdlib -shared -Bsymbolic -znocombreloc -L$(EFI_LIB) -T$(EFI_LIB)/elf_x86_64_efi.lds
EFI_CRT0 := $(EFI_LIB)/crt0-efi-x86_64.o
EFI_SECTIONS := -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel -j .rela \
	-j .rel.* -j .rela.* -j .reloc

loader-y := main.o config.o efimisc.o acpi.o pci.o mp.o enter.o hvimage.o
loader-shared-y := base/fmt.o base/memmap.o base/pgbuild.o base/status.o base/pcicfg.o
LOADER_OBJS := $(addprefix $(BUILD)/efi-loader/,$(loader-y)) \
	$(addprefix $(BUILD)/efi-loader/shared/,$(loader-shared-y))

$(BUILD)/efi-loader/%.o: efi-loader/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -c $< -o $@

$(BUILD)/efi-loader/%.o: efi-loader/%.S
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -c $< -o $@

$(BUILD)/efi-loader/hvimage.o: efi-loader/hvimage.S $(BUILD)/hv/hv.bin
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -DHV_BIN='"$(BUILD)/hv/hv.bin"' -c $< -o $@

$(BUILD)/efi-loader/shared/%.o: hv/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EFI_CFLAGS) -c $< -o $@

# Generic rules for EFI programs (the loader and the guest test programs).
%.so: | $(EFI_CRT0)
$(BUILD)/%.efi: $(BUILD)/%.so
	$(OBJCOPY) $(EFI_SECTIONS) --target efi-app-x86_64 --subsystem=10 $< $@

$(BUILD)/hvtrace.so: $(LOADER_OBJS)
	$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(LOADER_OBJS) -o $@ -lefi -lgnuefi

-include $(LOADER_OBJS:.o=.d)
