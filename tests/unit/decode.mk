# tests/unit/decode.mk — builds the decoder (hv/arch/x86/decode/) freestanding (to catch libc dependencies) and
# runs its differential test against Zydis on random byte strings and the kernel's text.
BUILD ?= build
HOSTCC ?= cc
KERNEL_DIR ?= build/cache/linux

# Do not steal the including Makefile's default goal (restored at the end of this file).
DECODE_SAVED_GOAL := $(.DEFAULT_GOAL)

DECODE_KCC ?= gcc
DECODE_KCFLAGS := -std=gnu11 -O2 -ffreestanding -fno-pic -mcmodel=kernel -mno-red-zone \
	-mgeneral-regs-only -fno-stack-protector -nostdlib -Wall -Wextra -Werror
DECODE_HOST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror
DECODE_HOST_LIBS := -lZydis -lZycore -lelf

DECODE_TEST := $(BUILD)/host/test_decode
DECODE_KOBJ := $(BUILD)/host/decode-freestanding.o
DECODE_VMLINUX := $(BUILD)/cache/vmlinux

# test-decode is deterministic (fixed seed); test-decode-full picks a new seed per run (it is
# printed, rerun with DECODE_FULL_SEED=... to reproduce).
DECODE_SEED ?= 0x5eed
DECODE_COUNT ?= 1000000
DECODE_FULL_SEED ?= $(shell date +%s)
DECODE_FULL_COUNT ?= 50000000

.PHONY: test-decode test-decode-full decode-fetch-kernel

# Freestanding compile of the decoder, exactly as the hypervisor builds it; it must not
# reference any external symbol (no libc, no compiler-inserted memset/memcpy).
DECODE_SRCS := $(wildcard hv/arch/x86/decode/*.c)
DECODE_HDRS := $(wildcard hv/arch/x86/decode/*.h)
$(DECODE_KOBJ): $(DECODE_SRCS) $(DECODE_HDRS)
	@mkdir -p $(@D)/decode-freestanding
	@for f in $(DECODE_SRCS); do \
		$(DECODE_KCC) $(DECODE_KCFLAGS) -c $$f -o $(@D)/decode-freestanding/$$(basename $$f .c).o || exit 1; done
	$(LD) -r -o $@ $(@D)/decode-freestanding/*.o
	@undef=$$(nm -u $@); if [ -n "$$undef" ]; then \
		echo "decoder: freestanding object references external symbols:"; echo "$$undef"; \
		rm -f $@; exit 1; fi

$(DECODE_TEST): tests/unit/test_decode.c $(DECODE_SRCS) $(DECODE_HDRS)
	@mkdir -p $(@D)
	$(HOSTCC) $(DECODE_HOST_CFLAGS) -o $@ tests/unit/test_decode.c $(DECODE_SRCS) $(DECODE_HOST_LIBS)

# Downloads the kernel if it is not there yet (fetch-kernel.sh is a no-op otherwise).
decode-fetch-kernel:
	@scripts/fetch-kernel.sh $(KERNEL_DIR)

$(DECODE_VMLINUX): $(wildcard $(KERNEL_DIR)/vmlinuz) scripts/extract-vmlinux.sh | decode-fetch-kernel
	@mkdir -p $(@D)
	scripts/extract-vmlinux.sh $(KERNEL_DIR)/vmlinuz $@

test-decode: $(DECODE_KOBJ) $(DECODE_TEST) $(DECODE_VMLINUX)
	$(DECODE_TEST) --seed $(DECODE_SEED) --count $(DECODE_COUNT) --mode all --kernel $(DECODE_VMLINUX)

test-decode-full: $(DECODE_KOBJ) $(DECODE_TEST) $(DECODE_VMLINUX)
	$(DECODE_TEST) --seed $(DECODE_FULL_SEED) --count $(DECODE_FULL_COUNT) --mode all --kernel $(DECODE_VMLINUX)

ifeq ($(firstword $(MAKEFILE_LIST)),$(lastword $(MAKEFILE_LIST)))
.DEFAULT_GOAL := test-decode
else
.DEFAULT_GOAL := $(DECODE_SAVED_GOAL)
endif
