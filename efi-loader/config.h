/* hvtrace.cfg: `key = value` lines read by the loader from
 * \EFI\hvtrace\hvtrace.cfg on the boot volume. Pure logic (no firmware
 * calls), also built for the host unit tests. Keys: docs/config.md. */
#ifndef HVTRACE_LOADER_CONFIG_H
#define HVTRACE_LOADER_CONFIG_H

#include "arch/x86/types.h"
#include "base/boot.h"

#define CFG_PATH_MAX	256
#define CFG_CMDLINE_MAX	2048
#define CFG_MAX_ERRORS	8
#define CFG_MAX_SIZE	(64 * 1024)
#define CFG_DEFAULT_MEMORY	(32ull << 20)
/* trace.pace: guest branches between two external interrupts while the
 * engine traces (docs/branch-engine.md "Forward progress") */
#define CFG_DEFAULT_PACE	10000
#define CFG_PACE_MIN		100
#define CFG_PACE_MAX		100000000
/* trace.stop = time:T, at most a day; trace.freeze = ADDR+N, N at most */
#define CFG_STOP_TIME_MAX_US	(24ull * 3600 * 1000000)
#define CFG_FREEZE_AFTER_MAX	100000000u
/* trace.freeze = hang:T */
#define CFG_HANG_MIN_US		100000ull
#define CFG_HANG_MAX_US		(3600ull * 1000000)

struct cfg_error {
	u32 line;	/* 0: about the whole file */
	char msg[320];
};

struct hv_config {
	char next[CFG_PATH_MAX];	/* "\EFI\linux\vmlinuz"; empty when absent */
	char cmdline[CFG_CMDLINE_MAX];	/* the next stage's load options */
	u64 memory;			/* bytes reserved for the hypervisor */
	u16 serial_port;		/* 0 = no log */
	bool serial_hide;		/* serial.hide (default: yes unless serial is COM1's 0x3f8) */
	u8 log_level;			/* enum log_level */
	bool enable;			/* false: boot `next` without the hypervisor */
	u8 engine;			/* enum hvtrace_engine: fast (default), reference, lbr or interp */
	u32 pace;			/* trace.pace: branches between interrupts; 0: off */
	u16 triple_fault;		/* enum hv_triple_fault */
	bool interp_verify;		/* interp.verify: engine = interp checks each instruction against the processor */
	struct hv_rec_cfg rec;		/* flight.*, stream.*, trace.*, channel */
	u32 nr_errors;			/* errors beyond CFG_MAX_ERRORS are counted only */
	struct cfg_error errors[CFG_MAX_ERRORS];
};

/* Parses `len` bytes; fills defaults first. Returns the number of errors. */
u32 cfg_parse(const char *text, size_t len, struct hv_config *cfg);

/* Parses a size such as "64M", "1G", "65536", "512K". */
bool cfg_parse_size(const char *s, u64 *out);

#endif
