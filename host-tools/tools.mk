# host-tools: libhvtrace (static) and the hvtrace command, their tests
# (make test-host-tools: unit tests and the CLI script, both under ASan and
# UBSan) and fuzzers (make fuzz). See docs/host-tools.md.
HT_DIR := $(BUILD)/host-tools
HT_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -Ihost-tools/lib -Ihost-tools/src
HT_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
HT_LIBS := -lelf -lz

HT_LIB_SRCS := $(addprefix host-tools/lib/,rec.c chan.c ctl.c dbg.c dump.c guest.c gdbrsp.c producer.c file.c sym.c)
# report.c, print.c and the exporters are the part of the command the fuzzers link too
HT_OUT_SRCS := $(addprefix host-tools/src/,report.c print.c export_perf.c export_uftrace.c)
HT_CLI_SRCS := $(addprefix host-tools/src/,hvtrace.c cmd_chan.c cmd_file.c cmd_gdb.c synth.c) $(HT_OUT_SRCS)
HT_HDRS := host-tools/lib/libhvtrace.h host-tools/src/cli.h include/hvtrace/abi.h \
	include/hvtrace/record.h

HT_LIB := $(HT_DIR)/libhvtrace.a
HT_BIN := $(HT_DIR)/hvtrace
HT_LIB_OBJS := $(patsubst host-tools/lib/%.c,$(HT_DIR)/obj/%.o,$(HT_LIB_SRCS))

# sanitized builds for the tests
HT_ASAN_BIN := $(HT_DIR)/asan/hvtrace
HT_TEST := $(HT_DIR)/asan/test_libhvtrace

.PHONY: host-tools test-host-tools fuzz
all: $(HT_BIN) $(HT_LIB)
host-tools: $(HT_BIN) $(HT_LIB)

$(HT_DIR)/obj/%.o: host-tools/lib/%.c $(HT_HDRS)
	@mkdir -p $(@D)
	$(HOSTCC) $(HT_CFLAGS) -c $< -o $@

$(HT_LIB): $(HT_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(HT_BIN): $(HT_CLI_SRCS) $(HT_LIB) $(HT_HDRS)
	$(HOSTCC) $(HT_CFLAGS) -o $@ $(HT_CLI_SRCS) $(HT_LIB) $(HT_LIBS)

$(HT_ASAN_BIN): $(HT_CLI_SRCS) $(HT_LIB_SRCS) $(HT_HDRS)
	@mkdir -p $(@D)
	$(HOSTCC) $(HT_CFLAGS) -O1 $(HT_SAN) -o $@ $(HT_CLI_SRCS) $(HT_LIB_SRCS) $(HT_LIBS)

$(HT_TEST): host-tools/tests/test_libhvtrace.c $(HT_LIB_SRCS) $(HT_HDRS) tests/unit/unit.h
	@mkdir -p $(@D)
	$(HOSTCC) $(HT_CFLAGS) -O1 $(HT_SAN) -Itests/unit -o $@ $< $(HT_LIB_SRCS) $(HT_LIBS) -lpthread

# The crafted inputs of hostile.sh, made at test time.
HT_GEN := $(HT_DIR)/gen_hostile
$(HT_GEN): host-tools/tests/gen_hostile.c $(HT_LIB) $(HT_HDRS)
	$(HOSTCC) $(HT_CFLAGS) -o $@ $< $(HT_LIB) $(HT_LIBS)

# Each prints "NAME: N passed, M failed" (tests/run-all.sh sums them).
# hostile.sh times the optimized build: the sanitizers would slow it.
test-host-tools: $(HT_TEST) $(HT_ASAN_BIN) $(HT_BIN) $(HT_GEN)
	@fail=0; $(HT_TEST) || fail=1; \
	HVTRACE=$(HT_ASAN_BIN) host-tools/tests/cli.sh || fail=1; \
	HVTRACE=$(HT_ASAN_BIN) host-tools/tests/export.sh || fail=1; \
	HVTRACE=$(HT_ASAN_BIN) host-tools/tests/gdb.sh || fail=1; \
	HVTRACE=$(HT_BIN) GEN=$(HT_GEN) host-tools/tests/hostile.sh || fail=1; exit $$fail

# libFuzzer harnesses, FUZZ_SECONDS each (not part of make test).
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
HT_FUZZ_TARGETS := chan dump file sym report gdb
HT_FUZZ_BINS := $(addprefix $(HT_DIR)/fuzz/fuzz_,$(HT_FUZZ_TARGETS))

$(HT_DIR)/fuzz/fuzz_%: host-tools/fuzz/fuzz_%.c $(HT_LIB_SRCS) $(HT_OUT_SRCS) $(HT_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Iinclude -Ihost-tools/lib -Ihost-tools/src \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $< $(HT_LIB_SRCS) $(HT_OUT_SRCS) $(HT_LIBS)

fuzz: $(HT_FUZZ_BINS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) host-tools/fuzz/run.sh $(HT_DIR)/fuzz $(HT_FUZZ_TARGETS)

# The host benchmark's drain program (bench/host.sh runs it).
HT_BENCH := $(HT_DIR)/hvtrace-bench-drain
$(HT_BENCH): host-tools/bench/bench_drain.c $(HT_LIB) $(HT_HDRS)
	$(HOSTCC) $(HT_CFLAGS) -o $@ $< $(HT_LIB) $(HT_LIBS) -lpthread

.PHONY: bench-host
bench-host: $(HT_BIN) $(HT_BENCH)
	@bench/host.sh
