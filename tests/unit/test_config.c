/* hvtrace.cfg parser: good files, every kind of bad line, and its message. */
#include <string.h>
#include "unit.h"
#include "config.h"
#include "hvtrace/abi.h"

static struct hv_config cfg;

static unsigned parse(const char *s)
{
	return cfg_parse(s, strlen(s), &cfg);
}

/* one error, on `line`, whose message contains `needle` */
static void bad(const char *text, unsigned line, const char *needle)
{
	unsigned n = parse(text);
	CHECK(n == 1, "%u errors for %s", n, text);
	CHECK(cfg.errors[0].line == line, "line %u, want %u for %s", cfg.errors[0].line, line, text);
	CHECK(strstr(cfg.errors[0].msg, needle), "message '%s' lacks '%s'", cfg.errors[0].msg, needle);
}

int main(void)
{
	const char *good =
		"\xef\xbb\xbf# hvtrace configuration\r\n"
		"next = \\EFI\\linux\\vmlinuz\r\n"
		"\n"
		"   cmdline=initrd=\\EFI\\linux\\initrd.gz console=ttyS0,115200 a=b#c  \n"
		"memory = 64M\n"
		"serial = 0x2f8\n"
		"log = debug\n"
		"enable = yes\n"
		"engine = reference";
	CHECK(parse(good) == 0, "errors: %s", cfg.errors[0].msg);
	CHECK(!strcmp(cfg.next, "\\EFI\\linux\\vmlinuz"), "next '%s'", cfg.next);
	CHECK(!strcmp(cfg.cmdline, "initrd=\\EFI\\linux\\initrd.gz console=ttyS0,115200 a=b#c"),
	      "cmdline '%s'", cfg.cmdline);
	CHECK(cfg.memory == 64ull << 20, "memory %llu", (unsigned long long)cfg.memory);
	CHECK(cfg.serial_port == 0x2f8, "serial %x", cfg.serial_port);
	CHECK(cfg.log_level == 3, "log %u", cfg.log_level);
	CHECK(cfg.enable, "enable");
	CHECK(cfg.engine == HVTRACE_ENGINE_REFERENCE, "engine %u", cfg.engine);

	/* defaults */
	CHECK(parse("next = \\a.efi\n") == 0, "minimal");
	CHECK(cfg.memory == CFG_DEFAULT_MEMORY && cfg.serial_port == 0x3f8 && cfg.enable &&
	      cfg.cmdline[0] == 0 && cfg.engine == HVTRACE_ENGINE_INTERP, "defaults");
	CHECK(parse("next = \\a.efi\nserial = none\nenable = no\nmemory = 1g\n") == 0, "none/no/1g");
	CHECK(cfg.serial_port == 0 && !cfg.enable && cfg.memory == 1ull << 30, "none/no/1g values");
	CHECK(parse("next = \\a.efi\ncmdline =\n") == 0 && cfg.cmdline[0] == 0, "empty cmdline");

	/* serial.hide: the log port is hidden from the guest unless it is
	 * COM1's (the guest's console); either way when asked */
	CHECK(parse("next = \\a.efi\n") == 0 && !cfg.serial_hide, "COM1 shared by default");
	CHECK(parse("next = \\a.efi\nserial = 0x2f8\n") == 0 && cfg.serial_hide, "0x2f8 hidden by default");
	CHECK(parse("next = \\a.efi\nserial = 0x2f8\nserial.hide = no\n") == 0 && !cfg.serial_hide,
	      "0x2f8 shown when asked");
	CHECK(parse("next = \\a.efi\nserial.hide = yes\n") == 0 && cfg.serial_hide && cfg.serial_port == 0x3f8,
	      "COM1 hidden when asked");
	CHECK(parse("next = \\a.efi\nserial = none\n") == 0 && !cfg.serial_hide, "none: nothing hidden");
	bad("next = \\a.efi\nserial = none\nserial.hide = yes\n", 0, "no port to hide");
	bad("next = \\a.efi\nserial = 0x2f8\nserial.hide = maybe\n", 3, "not yes or no");
	bad("next = \\a.efi\nserial = 0xcf1\n", 0, "PCI configuration ports");
	bad("next = \\a.efi\nserial = 0xcfc\n", 0, "PCI configuration ports");
	CHECK(parse("next = \\a.efi\nserial = 0xcf1\nserial.hide = no\n") == 0, "0xcf1 shown: no overlap check");
	CHECK(parse("next = \\a.efi\nserial = 0xcf0\n") == 0 && parse("next = \\a.efi\nserial = 0xd00\n") == 0,
	      "next to the PCI ports");

	/* trace.pace: a number of branches, 0 or off for none; default 10000 */
	CHECK(parse("next = \\a.efi\n") == 0 && cfg.pace == CFG_DEFAULT_PACE && cfg.pace == 10000,
	      "default pace %u", cfg.pace);
	CHECK(parse("next = \\a.efi\ntrace.pace = 5000\n") == 0 && cfg.pace == 5000, "pace %u", cfg.pace);
	CHECK(parse("next = \\a.efi\ntrace.pace = off\n") == 0 && cfg.pace == 0, "pace off");
	CHECK(parse("next = \\a.efi\ntrace.pace = 0\n") == 0 && cfg.pace == 0, "pace 0");
	CHECK(parse("next = \\a.efi\ntrace.pace = 100000000\n") == 0 && cfg.pace == 100000000, "pace max");

	/* each bad input gets its own message and line */
	bad("next = \\a.efi\nmemory = lots\n", 2, "memory: 'lots' is not a size");
	bad("next = \\a.efi\nmemory = 1M\n", 2, "out of range");
	bad("next = \\a.efi\nmemory = 2G\n", 2, "out of range");
	bad("next = \\a.efi\nmemory = 99999999999999999999999\n", 2, "not a size");
	bad("next = \\a.efi\nmemory = 5001K\n", 2, "multiple of 4K");
	bad("next = \\a.efi\nmemory = 64Q\n", 2, "not a size");
	bad("next = a.efi\n", 1, "not an absolute path");
	bad("next = \\EFI/linux\n", 1, "'\\' separators");
	bad("next =\n", 1, "not an absolute path");
	bad("next = \\a.efi\nfoo = 1\n", 2, "unknown key 'foo'");
	bad("next = \\a.efi\nnext = \\b.efi\n", 2, "given twice");
	bad("next = \\a.efi\njust words\n", 2, "expected 'key = value'");
	bad("next = \\a.efi\n= value\n", 2, "expected 'key = value'");
	bad("next = \\a.efi\nserial = com1\n", 2, "not an I/O port");
	bad("next = \\a.efi\nserial = 0x10000\n", 2, "not an I/O port");
	bad("next = \\a.efi\nlog = loud\n", 2, "not one of error");
	bad("next = \\a.efi\nenable = maybe\n", 2, "not yes or no");
	bad("next = \\a.efi\nengine = turbo\n", 2, "not fast, reference, lbr or interp");
	CHECK(parse("next = \\a.efi\nengine = lbr\n") == 0 && cfg.engine == HVTRACE_ENGINE_LBR, "engine lbr");
	CHECK(parse("next = \\a.efi\nengine = interp\n") == 0 && cfg.engine == HVTRACE_ENGINE_INTERP && !cfg.interp_verify,
	      "engine interp");
	CHECK(parse("next = \\a.efi\nengine = interp\ninterp.verify = yes\n") == 0 && cfg.interp_verify, "interp.verify");
	bad("next = \\a.efi\ninterp.verify = maybe\n", 2, "interp.verify: 'maybe' is not yes or no");
	bad("next = \\a.efi\nenable = maybe\n", 2, "enable: 'maybe' is not yes or no");
	bad("next = \\a.efi\ntrace.pace = 99\n", 2, "trace.pace: '99' is not off or a number of branches from 100 to 100000000");
	bad("next = \\a.efi\ntrace.pace = 100000001\n", 2, "from 100 to 100000000");
	bad("next = \\a.efi\ntrace.pace = fast\n", 2, "trace.pace: 'fast' is not off");
	bad("next = \\a.efi\ntrace.pace = -1\n", 2, "trace.pace: '-1'");
	bad("memory = 32M\n", 0, "no 'next' line");
	bad("", 0, "no 'next' line");
	bad("next = \\a.efi\ncmdline = caf\xc3\xa9\n", 2, "printable ASCII");

	/* the recorder's keys */
	{
		const char *rec =
			"next = \\a.efi\n"
			"flight.size = 1M\nflight.cpl = user\n"
			"flight.range = 0x1000-0x1fff\nflight.range = 0xffffffff81000000-0xffffffff81ffffff\n"
			"stream.size = 64K\nstream.cpl = kernel\nstream.cr3 = 0x1234000\nstream.wait = 2s\n"
			"trace.start = 0xffffffff81f0a5e0\ntrace.stop = records:5000\nchannel = ram\n";
		CHECK(parse(rec) == 0, "recorder keys: %s", cfg.errors[0].msg);
		CHECK(cfg.rec.flight.size == 1u << 20 && cfg.rec.stream.size == 64u << 10, "sizes");
		CHECK(cfg.rec.flight.filter.cpl == HVTRACE_CPL_USER && cfg.rec.stream.filter.cpl == HVTRACE_CPL_KERNEL, "cpl");
		CHECK(cfg.rec.flight.filter.nr_ranges == 2 && cfg.rec.flight.filter.ranges[1].lo == 0xffffffff81000000ull &&
		      cfg.rec.flight.filter.ranges[1].hi == 0xffffffff81ffffffull, "ranges");
		CHECK(cfg.rec.stream.filter.cr3 == 0x1234000 && cfg.rec.stream.wait_us == 2000000, "cr3, wait");
		CHECK(cfg.rec.start == REC_START_ADDR && cfg.rec.start_arg == 0xffffffff81f0a5e0ull, "start");
		CHECK(cfg.rec.stop == REC_STOP_RECORDS && cfg.rec.stop_arg == 5000, "stop");
		CHECK(cfg.rec.channel == REC_CHAN_RAM, "channel");
		CHECK(cfg.rec.flight.mode == HVTRACE_RING_OVERWRITE && cfg.rec.stream.mode == HVTRACE_RING_LOSSLESS,
		      "default modes");
		CHECK(parse("next = \\a.efi\nflight.size = 4K\nflight.mode = lossless\nflight.wait = 3ms\n"
			    "stream.size = 4K\nstream.mode = overwrite\n") == 0 &&
		      cfg.rec.flight.mode == HVTRACE_RING_LOSSLESS && cfg.rec.flight.wait_us == 3000 &&
		      cfg.rec.stream.mode == HVTRACE_RING_OVERWRITE, "modes swapped: %s", cfg.errors[0].msg);
		CHECK(parse("next = \\a.efi\n") == 0 && !cfg.rec.flight.size && !cfg.rec.stream.size &&
		      cfg.rec.start == REC_START_BOOT && cfg.rec.stream.wait_us == 100000, "recorder defaults");
		CHECK(parse("next = \\a.efi\nflight.size=4K\ntrace.start = branches:100\nstream.size=8K\n"
			    "stream.wait=250us\ntrace.start=hypercall\n") == 1, "trace.start twice");
		CHECK(parse("next = \\a.efi\nflight.size=4K\ntrace.start = branches:100\nstream.size=8K\n"
			    "stream.wait=250us\n") == 0 && cfg.rec.start == REC_START_BRANCHES &&
		      cfg.rec.start_arg == 100 && cfg.rec.stream.wait_us == 250, "branches, us");
	}
	bad("next = \\a.efi\nflight.size = 3K\n", 2, "power of two from 4K");
	bad("next = \\a.efi\nflight.size = 1G\n", 2, "power of two from 4K");
	bad("next = \\a.efi\nflight.size = big\n", 2, "not a size");
	bad("next = \\a.efi\nflight.size = 4K\nflight.cpl = root\n", 3, "not all, kernel or user");
	bad("next = \\a.efi\nflight.size = 4K\nflight.range = 0x10\n", 3, "is not a range");
	bad("next = \\a.efi\nflight.size = 4K\nflight.range = 0x20-0x10\n", 3, "ends before it starts");
	bad("next = \\a.efi\nflight.size = 4K\nflight.range = 0xzz-0x10\n", 3, "not a range of addresses");
	bad("next = \\a.efi\nflight.size = 4K\nflight.range=1-2\nflight.range=1-2\nflight.range=1-2\n"
	    "flight.range=1-2\nflight.range=1-2\n", 7, "more than 4 ranges");
	bad("next = \\a.efi\nflight.size = 4K\nflight.cr3 = 0x1001\n", 3, "not a page-table root");
	bad("next = \\a.efi\nstream.size = 4K\nstream.wait = 2h\n", 3, "not a time");
	bad("next = \\a.efi\nstream.size = 4K\nstream.wait = 61s\n", 3, "not a time");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.start = soon\n", 3, "not boot, hypercall");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.stop = records:0\n", 3, "not never, hypercall, records:N");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:0s\n", 3, "or time:T");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:25h\n", 3, "or time:T");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:1441min\n", 3, "at most 24 hours");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:\n", 3, "or time:T");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = panic\n", 3,
	    "trace.freeze: 'panic' is not nmi, hang:T or an address 0x...");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = 0x10+\n", 3, "optional +N");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = 0x10+x\n", 3, "optional +N");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = 0x10+100000001\n", 3, "at most 100000000");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze=0x1\ntrace.freeze=0x2\ntrace.freeze=0x3\n"
	    "trace.freeze=0x4\ntrace.freeze=0x5\n", 7, "more than 4 addresses");
	bad("next = \\a.efi\ntrace.freeze = nmi\n", 0, "trace.freeze, channel and channel.control need a recorder");
	bad("next = \\a.efi\nchannel.control = exits\n", 0, "channel.control need a recorder");

	/* triple_fault: reset by default, or halt */
	CHECK(parse("next = \\a.efi\n") == 0 && cfg.triple_fault == HV_TRIPLE_FAULT_RESET, "triple_fault reset");
	CHECK(parse("next = \\a.efi\ntriple_fault = halt\n") == 0 && cfg.triple_fault == HV_TRIPLE_FAULT_HALT,
	      "triple_fault = halt");
	bad("next = \\a.efi\ntriple_fault = ignore\n", 2, "triple_fault: 'ignore' is not reset or halt");

	/* channel.control: poll by default; exits, off; none for a channel in RAM */
	CHECK(parse("next = \\a.efi\nflight.size = 4K\n") == 0 && cfg.rec.control == HVTRACE_CTL_POLL,
	      "control %u by default", cfg.rec.control);
	CHECK(parse("next = \\a.efi\nflight.size = 4K\nchannel.control = exits\n") == 0 &&
		      cfg.rec.control == HVTRACE_CTL_EXITS, "channel.control = exits");
	CHECK(parse("next = \\a.efi\nflight.size = 4K\nchannel = ram\nchannel.control = off\n") == 0 &&
		      cfg.rec.control == HVTRACE_CTL_OFF, "channel.control = off with channel = ram");
	bad("next = \\a.efi\nflight.size = 4K\nchannel.control = sometimes\n", 3, "is not poll, exits or off");
	bad("next = \\a.efi\nflight.size = 4K\nchannel = ram\nchannel.control = poll\n", 0,
	    "a channel in reserved RAM");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = hang:99ms\n", 3, "hang:T takes a time from 100ms to 60min");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = hang:61min\n", 3, "hang:T takes a time");
	bad("next = \\a.efi\nflight.size = 4K\ntrace.freeze = hang:\n", 3, "hang:T takes a time");
	bad("next = \\a.efi\nflight.size = 4K\nchannel = pipe\n", 3, "not auto, ivshmem or ram");
	bad("next = \\a.efi\nflight.size = 4K\nflight.mode = ring\n", 3, "flight.mode: 'ring' is not overwrite or lossless");
	bad("next = \\a.efi\nstream.mode = lossless\n", 0, "'stream.mode' is set but 'stream.size' is not");
	bad("next = \\a.efi\nstream.cpl = user\n", 0, "'stream.cpl' is set but 'stream.size' is not");
	bad("next = \\a.efi\nflight.size = 0\nflight.range = 1-2\n", 0, "that consumer does not exist");
	bad("next = \\a.efi\ntrace.start = hypercall\n", 0, "need a recorder");

	/* trace.stop = time:T and trace.freeze */
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:30s\n") == 0 &&
		      cfg.rec.stop == REC_STOP_TIME && cfg.rec.stop_arg == 30000000,
	      "time:30s -> %llu us", (unsigned long long)cfg.rec.stop_arg);
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:500ms\n") == 0 &&
		      cfg.rec.stop_arg == 500000, "time:500ms");
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:10min\n") == 0 &&
		      cfg.rec.stop_arg == 600000000ull, "time:10min");
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.stop = time:1440min\n") == 0 &&
		      cfg.rec.stop_arg == 24ull * 3600 * 1000000, "time: a day");
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.freeze = 0xffffffff81000000+2000\n"
		    "trace.freeze = nmi\ntrace.freeze = 0x1234\n") == 0 &&
		      cfg.rec.nr_freeze_at == 2 && cfg.rec.freeze_at[0] == 0xffffffff81000000ull &&
		      cfg.rec.freeze_after[0] == 2000 && cfg.rec.freeze_at[1] == 0x1234 &&
		      cfg.rec.freeze_after[1] == 0 && cfg.rec.freeze_nmi,
	      "trace.freeze: %u addresses, nmi %u: %s", cfg.rec.nr_freeze_at, cfg.rec.freeze_nmi,
	      cfg.errors[0].msg);
	CHECK(parse("next = \\a.efi\nflight.size = 4K\n") == 0 && cfg.rec.nr_freeze_at == 0 &&
		      !cfg.rec.freeze_nmi && !cfg.rec.freeze_hang_us, "no freeze by default");
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.freeze = hang:10s\n") == 0 &&
		      cfg.rec.freeze_hang_us == 10000000, "hang:10s -> %llu us",
	      (unsigned long long)cfg.rec.freeze_hang_us);
	CHECK(parse("next = \\a.efi\nflight.size = 4K\ntrace.freeze = hang:100ms\n") == 0 &&
		      cfg.rec.freeze_hang_us == 100000, "hang:100ms");

	/* NUL byte inside a value */
	{
		const char t[] = "next = \\a.efi\ncmdline = a\0b\n";
		CHECK(cfg_parse(t, sizeof(t) - 1, &cfg) == 1 && strstr(cfg.errors[0].msg, "NUL"),
		      "NUL: %s", cfg.errors[0].msg);
	}
	/* a value too long for its key */
	{
		static char t[4096];
		strcpy(t, "next = \\");
		memset(t + 8, 'a', 300);
		CHECK(parse(t) == 1 && strstr(cfg.errors[0].msg, "longer than"), "long next: %s",
		      cfg.errors[0].msg);
		strcpy(t, "next = \\a\ncmdline = ");
		memset(t + strlen(t), 'b', 3000);
		CHECK(parse(t) == 1 && strstr(cfg.errors[0].msg, "longer than"), "long cmdline: %s",
		      cfg.errors[0].msg);
	}
	/* too large a file, and many errors (all counted, 8 kept) */
	{
		static char big[CFG_MAX_SIZE + 2];
		memset(big, '#', sizeof(big) - 1);
		CHECK(cfg_parse(big, sizeof(big) - 1, &cfg) == 1 && strstr(cfg.errors[0].msg, "64 KiB"),
		      "big: %s", cfg.errors[0].msg);
		CHECK(parse("a=1\nb=2\nc=3\nd=4\ne=5\nf=6\ng=7\nh=8\ni=9\nj=10\n") == 11,
		      "%u errors", cfg.nr_errors);
		CHECK(cfg.errors[7].line == 8, "8th error line %u", cfg.errors[7].line);
	}
	/* sizes */
	{
		unsigned long long v;
		CHECK(cfg_parse_size("4096", (uint64_t *)&v) && v == 4096, "plain");
		CHECK(cfg_parse_size("16MiB", (uint64_t *)&v) && v == 16ull << 20, "MiB");
		CHECK(cfg_parse_size("2k", (uint64_t *)&v) && v == 2048, "k");
		CHECK(!cfg_parse_size("", (uint64_t *)&v), "empty");
		CHECK(!cfg_parse_size("M", (uint64_t *)&v), "unit only");
		CHECK(!cfg_parse_size("1 M", (uint64_t *)&v), "space");
		CHECK(!cfg_parse_size("-1", (uint64_t *)&v), "negative");
		CHECK(!cfg_parse_size("17179869184G", (uint64_t *)&v), "overflow by shift");
	}
	return unit_done("test_config");
}
