# hvtrace: top-level build. `make` builds everything (warnings are errors);
# `make test` runs every test tier; `make demo` boots Linux under hvtrace and traces it;
# `make bench` measures. See README.md.
BUILD ?= build
CC ?= cc
HOSTCC ?= cc
LD ?= ld
OBJCOPY ?= objcopy
KERNEL_DIR ?= $(BUILD)/cache/linux

.PHONY: all guest-tests deps test test-run test-unit test-integration test-perf test-perf-suite test-nested test-boot test-vmx-linux test-gdb-live demo demo-run bench bench-run clean help
all: $(BUILD)/hvtrace.efi $(BUILD)/guest-agent/hvtrace-agent guest-tests

include hv/hv.mk
include efi-loader/loader.mk
include guest-agent/agent.mk
include tests/guest/guest.mk
include tests/unit/unit.mk
include tests/unit/decode.mk
include host-tools/tools.mk
include tests/perf/perf.mk

guest-tests: $(GUEST_EFIS)

help:
	@echo "make             build the hypervisor, loader, guest agent and guest tests"
	@echo "make test        every test tier (unit, EFI guest programs, Linux boots)"
	@echo "make test-perf   Linux's perf in the Debian guest on the virtual PMU and BTS"
	@echo "make test-perf-suite  Linux's perf test suite in the guest, all but one test (make test runs a part)"
	@echo "make test-nested the tests under real KVM with nested SVM (inside QEMU 10's TCG, fetched; not in make test)"
	@echo "make test-boot   a whole boot traced, firmware to Linux's /init: the small kernel (fast, then interp engine), then Debian's (over an hour)"
	@echo "make test-vmx-linux  the small Linux to /init under the VMX backend in Bochs, on one and two processors, without and with the hypervisor (3.5 min idle)"
	@echo "make test-gdb-live  GDB on a running guest alone, EFI program (untraced, traced) and Debian kernel (all in make test too)"
	@echo "make demo        boot Debian's Linux under hvtrace in QEMU, trace it from start_kernel, show the report"
	@echo "make bench       benchmarks, results in bench/results/"
	@echo "make deps        install the Debian packages needed (as root)"
	@echo "HVTRACE_ACCEL=tcg|kvm|auto selects QEMU's accelerator (default auto)"

deps:
	@scripts/setup-deps.sh

# The guest's kernel (Debian's own, unpacked into the build cache) and its
# busybox initramfs with the guest agent.
$(KERNEL_DIR)/vmlinuz $(KERNEL_DIR)/modules/order &:
	scripts/fetch-kernel.sh $(KERNEL_DIR)

$(BUILD)/initrd.gz: scripts/mkinitramfs.sh $(BUILD)/guest-agent/hvtrace-agent
	scripts/mkinitramfs.sh $(BUILD)/guest-agent/hvtrace-agent $@

GUEST_IMAGES := $(KERNEL_DIR)/vmlinuz $(BUILD)/initrd.gz

# Debian's kernel as its uncompressed ELF and the test initramfs
# uncompressed, booted by tests/guest/bootvmlinux.efi (linux-bootvmlinux in
# make test; the whole-boot trace, make test-boot, tests/integration-boot.sh)
BOOT_IMAGES := $(KERNEL_DIR)/vmlinux $(BUILD)/initrd.cpio
$(KERNEL_DIR)/vmlinux: $(KERNEL_DIR)/vmlinuz scripts/extract-vmlinux.sh
	scripts/extract-vmlinux.sh $< $@
$(BUILD)/initrd.cpio: $(BUILD)/initrd.gz
	gzip -dc $< >$@.tmp && mv $@.tmp $@

# The small Linux of make test's whole-boot trace (linux-rec-boot-tiny):
# Debian's linux-source-6.1, tinyconfig and tests/linux/tiny.config
TINY_DIR ?= $(BUILD)/cache/tiny-linux
TINY_IMAGES := $(TINY_DIR)/vmlinux
$(TINY_DIR)/vmlinux: scripts/build-tiny-kernel.sh tests/linux/tiny.config
	scripts/build-tiny-kernel.sh $(TINY_DIR)
# the same with SMP and ACPI, for two processors under VMX (make test-vmx-linux)
TINY_SMP_DIR ?= $(BUILD)/cache/tiny-linux-smp
TINY_SMP_IMAGES := $(TINY_SMP_DIR)/vmlinux
$(TINY_SMP_DIR)/vmlinux: scripts/build-tiny-kernel.sh tests/linux/tiny.config tests/linux/tiny-smp.config
	scripts/build-tiny-kernel.sh $(TINY_SMP_DIR) tests/linux/tiny-smp.config

# Linux's perf in the guest (tests/integration-perf.sh): Debian's linux-perf
# and gdb (gdb-minimal) and their libraries in the build cache, and a second
# initramfs that adds them and the test program to the first.
PERF_DIR ?= $(BUILD)/cache/perf
GDB_DIR ?= $(BUILD)/cache/gdb
PERF_TESTS_DIR ?= $(BUILD)/cache/perf-tests
$(PERF_DIR)/version:
	scripts/fetch-perf.sh $(PERF_DIR)
$(PERF_TESTS_DIR)/version:
	scripts/fetch-perf-tests.sh $(PERF_TESTS_DIR)
$(GDB_DIR)/version:
	scripts/fetch-gdb.sh $(GDB_DIR)

$(BUILD)/initrd-perf.gz: scripts/mkinitramfs.sh tests/perf/hvtrace-perf.sh $(PERF_DIR)/version \
		$(GDB_DIR)/version $(PERF_TESTS_DIR)/version $(BUILD)/tests/perf/perf-work $(BUILD)/initrd.gz
	scripts/mkinitramfs.sh --perf $(PERF_DIR)/root $(BUILD)/tests/perf/perf-work $(BUILD)/initrd.gz $@ \
		$(GDB_DIR)/root $(PERF_TESTS_DIR)/root

PERF_IMAGES := $(BUILD)/initrd-perf.gz $(BUILD)/tests/perf/perf-work

# `make test`, `make demo` and `make bench` first install what is missing
# (as root; otherwise they print the apt-get line and stop).
test: deps
	@$(MAKE) --no-print-directory test-run
test-run: all $(GUEST_IMAGES) $(PERF_IMAGES) $(BOOT_IMAGES) $(TINY_IMAGES) $(KERNEL_DIR)/modules/order $(UNIT_BINS)
	@UNIT_BINS="$(UNIT_BINS)" tests/run-all.sh

test-integration: all $(GUEST_IMAGES) $(BOOT_IMAGES)
	@tests/integration.sh

test-perf: all $(GUEST_IMAGES) $(PERF_IMAGES)
	@tests/integration-perf.sh

# Linux's whole perf test suite in the guest but test 97 (docs/pmu.md "Linux's
# perf test suite"); make test runs a named part of it (linux-perf-suite)
test-perf-suite: all $(PERF_IMAGES)
	@PERF_SUITE_ALL=1 tests/integration-perf.sh

# hvtrace under Linux's real KVM with nested SVM, inside QEMU TCG
# (tests/integration-nested.sh, docs/testing.md "Under KVM"); not in make test: the emulated
# nested machine itself fails now and then (docs/testing.md item 7). The
# outer QEMU is QEMU 10 from bookworm-backports, unpacked into the build
# cache (never installed; the inner QEMU stays the system's 7.2)
QEMU10_DIR ?= $(BUILD)/cache/qemu10
$(QEMU10_DIR)/version:
	scripts/fetch-qemu10.sh $(QEMU10_DIR)

test-nested: deps
	@$(MAKE) --no-print-directory all $(GUEST_IMAGES) $(KERNEL_DIR)/modules/order $(QEMU10_DIR)/version
	@tests/integration-nested.sh --all

# GDB on a running guest alone (tests/integration-rec.sh svm-gdb-live,
# svm-gdb-live-traced, svm-gdb-live-traced-bp-interp and -fast,
# svm-gdb-live-traced-watch-interp and -fast,
# svm-gdb-live-pair and -traced, linux-gdb-live, linux-gdb-live-pagebp,
# linux-gdb-live-traced; all in make test too)
test-gdb-live: deps
	@$(MAKE) --no-print-directory all $(GUEST_IMAGES) $(BOOT_IMAGES) $(KERNEL_DIR)/modules/order
	@tests/integration-rec.sh gdb-live

# The small Linux under the VMX backend in Bochs, to /init, without and with
# the hypervisor (tests/integration-vmx-linux.sh; not in make test: its
# time, docs/testing.md item 6)
test-vmx-linux: deps
	@$(MAKE) --no-print-directory all $(BUILD)/initrd.cpio $(TINY_IMAGES) $(TINY_SMP_IMAGES)
	@TINY_DIR=$(TINY_DIR) TINY_SMP_DIR=$(TINY_SMP_DIR) tests/integration-vmx-linux.sh

# A whole boot traced, firmware to /init: the small Linux (also in make
# test) and Debian's kernel (over an hour here)
test-boot: deps
	@$(MAKE) --no-print-directory all $(GUEST_IMAGES) $(BOOT_IMAGES) $(TINY_IMAGES)
	@tests/integration-boot.sh

demo: deps
	@$(MAKE) --no-print-directory demo-run
demo-run: all $(GUEST_IMAGES)
	@scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory bench-run
bench-run: all $(GUEST_IMAGES) $(KERNEL_DIR)/modules/order
	@bench/run.sh
	@bench/boot-branches.sh
	@bench/engine.sh
	@bench/boot-interp.sh
	@bench/nested.sh
	@$(MAKE) --no-print-directory bench-host

clean:
	rm -rf $(BUILD)

# Unit tests of pure logic, on the host.
test-unit: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do $$t || fail=1; done; \
	python3 tests/lib/serialmerge.py --self-test || fail=1; exit $$fail
