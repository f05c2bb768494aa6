/* Serial (16550 UART) logger: every line carries the "hvtrace: " prefix so
 * it can be told apart from the firmware's and the guest's output on the
 * same port (serial = 0x3f8), or on a port of its own that the guest never
 * sees (serial.hide: dispatch/uarthide.c). Runs in VMX/SVM root with
 * interrupts off. */
#include <stdarg.h>
#include "arch/x86/cpu.h"
#include "arch/x86/uart.h"
#include "base/lib.h"
#include "base/log.h"

static u16 log_port;
static int log_level = LOG_LEVEL_INFO;
/* one line at a time from every processor; a processor that stopped while
 * holding it (a panic in the middle of a line) is waited for only so long */
static struct spinlock log_lock;

void log_init(u16 serial_port, bool own, int level)
{
	log_port = serial_port;
	log_level = level;
	if (!serial_port || !own)
		return;
	/* A port of the hypervisor's own, which no firmware console set up:
	 * 115200 baud, 8N1, FIFOs on, no interrupts, not in loopback (the
	 * guest, which cannot reach it, never changes this again) */
	outb(serial_port + UART_IER, 0);
	outb(serial_port + UART_LCR, UART_LCR_DLAB);
	outb(serial_port + UART_DLL, UART_DIV_115200);
	outb(serial_port + UART_DLM, 0);
	outb(serial_port + UART_LCR, UART_LCR_8N1);
	outb(serial_port + UART_FCR, UART_FCR_ENABLE | UART_FCR_CLEAR);
	outb(serial_port + UART_MCR, UART_MCR_DTR | UART_MCR_RTS);
}

static void serial_putc(char c)
{
	if (!log_port)
		return;
	for (int spin = 0; spin < 100000 && !(inb(log_port + UART_LSR) & UART_LSR_THRE); spin++)
		cpu_relax();
	outb(log_port + UART_THR, (u8)c);
}

void log_raw(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			serial_putc('\r');
		serial_putc(*s);
	}
}

static const char *const level_tag[] = { "error: ", "warning: ", "", "debug: " };

static void log_vprintf(int level, const char *func, const char *fmt, va_list ap)
{
	char line[256];
	int n = hv_snprintf(line, sizeof(line), "hvtrace: %s", level_tag[level]);
	if (level <= LOG_LEVEL_WARN || level == LOG_LEVEL_DEBUG)
		n += hv_snprintf(line + n, sizeof(line) - n, "%s: ", func);
	if (n < (int)sizeof(line))
		hv_vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	bool locked = false;
	for (u32 spin = 0; spin < (1u << 24) && !(locked = spin_trylock(&log_lock)); spin++)
		cpu_relax();
	log_raw(line);
	log_raw("\n");
	if (locked)
		spin_unlock(&log_lock);
}

void log_printf(int level, const char *func, const char *fmt, ...)
{
	if (level > log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vprintf(level, func, fmt, ap);
	va_end(ap);
}

void hv_panic(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vprintf(LOG_LEVEL_ERR, func, fmt, ap);
	va_end(ap);
	log_raw("hvtrace: stopped this processor\n");
	cpu_halt_forever();
}
