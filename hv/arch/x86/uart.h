/* The 16550 UART's eight registers, as offsets from its base I/O port, and
 * the bits the hypervisor uses (PC16550D datasheet, "Register Summary";
 * the PC's COM ports). Shared by the logger (base/log.c) and the hiding of
 * its port from the guest (dispatch/uarthide.c). */
#ifndef HV_X86_UART_H
#define HV_X86_UART_H

#define UART_COM1	0x3f8	/* the firmware's and the OS's console */
#define UART_NR_PORTS	8	/* base + 0 .. base + 7 */

#define UART_THR	0	/* transmitter holding (write) */
#define UART_DLL	0	/* divisor latch low (LCR.DLAB = 1) */
#define UART_IER	1	/* interrupt enable */
#define UART_DLM	1	/* divisor latch high (LCR.DLAB = 1) */
#define UART_FCR	2	/* FIFO control (write) */
#define UART_LCR	3	/* line control */
#define UART_MCR	4	/* modem control */
#define UART_LSR	5	/* line status */
#define UART_SCR	7	/* scratch */

#define UART_FCR_ENABLE	0x01
#define UART_FCR_CLEAR	0x06	/* both FIFOs emptied */
#define UART_LCR_8N1	0x03	/* 8 data bits, no parity, 1 stop bit */
#define UART_LCR_DLAB	0x80
#define UART_MCR_DTR	0x01
#define UART_MCR_RTS	0x02
#define UART_LSR_THRE	0x20	/* the transmitter holding register is empty */
/* the divisor for 115200 baud from the PC's 1.8432 MHz clock (16 x 115200) */
#define UART_DIV_115200	1

#endif
