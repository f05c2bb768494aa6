# hvtrace-agent: static Linux binary for the guest's initramfs.
$(BUILD)/guest-agent/hvtrace-agent: guest-agent/hvtrace-agent.c include/hvtrace/abi.h
	@mkdir -p $(dir $@)
	$(HOSTCC) -std=gnu11 -O2 -static -Wall -Wextra -Werror -Iinclude -o $@ $< -lz
