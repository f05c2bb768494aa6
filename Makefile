# hvtrace: top-level build. `make` builds everything (warnings are errors);
# `make test` runs every test tier; `make demo` boots Linux under hvtrace;
# `make bench` measures. See README.md.
BUILD ?= build
CC ?= cc
HOSTCC ?= cc
LD ?= ld
OBJCOPY ?= objcopy
KERNEL_DIR ?= $(BUILD)/cache/linux

.PHONY: all deps test test-unit test-guest test-linux demo bench clean help
all: $(BUILD)/hvtrace.efi

include hv/hv.mk
include efi-loader/loader.mk
include guest-agent/agent.mk

help:
	@echo "make          build the hypervisor, loader, guest tests, host tools"
	@echo "make test     all tests (unit, EFI guest programs, Linux boots)"
	@echo "make demo     boot Debian's Linux under hvtrace in QEMU"
	@echo "make bench    benchmarks, results in bench/results/"

deps:
	@scripts/setup-deps.sh

clean:
	rm -rf $(BUILD)
