/* Levelled logging to the serial port; works before and after the guest
 * OS's ExitBootServices (no firmware services are used). */
#ifndef HV_BASE_LOG_H
#define HV_BASE_LOG_H

#include "arch/x86/types.h"

enum log_level { LOG_LEVEL_ERR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* own: the port is the hypervisor's alone (serial.hide), set up here */
void log_init(u16 serial_port, bool own, int level);
void log_printf(int level, const char *func, const char *fmt, ...) __printf(3, 4);
void log_raw(const char *s);

#define LOG_ERR(...)	log_printf(LOG_LEVEL_ERR, __func__, __VA_ARGS__)
#define LOG_WARN(...)	log_printf(LOG_LEVEL_WARN, __func__, __VA_ARGS__)
#define LOG_INFO(...)	log_printf(LOG_LEVEL_INFO, __func__, __VA_ARGS__)
#define LOG_DEBUG(...)	log_printf(LOG_LEVEL_DEBUG, __func__, __VA_ARGS__)

/* A state that cannot happen: log, then stop this processor. */
void __noreturn hv_panic(const char *func, const char *fmt, ...) __printf(2, 3);
#define HV_PANIC(...)	hv_panic(__func__, __VA_ARGS__)

#endif
