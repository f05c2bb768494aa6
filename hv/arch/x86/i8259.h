/* The legacy 8259A interrupt controllers' ports and commands (Intel
 * 8259A data sheet, "Operation command words"; the PC/AT pair: master at
 * 0x20, slave at 0xa0 on the master's IR2). */
#ifndef HV_X86_I8259_H
#define HV_X86_I8259_H

#define I8259_MASTER_CMD	0x20
#define I8259_SLAVE_CMD		0xa0
#define I8259_CASCADE_IRQ	2	/* the master's input the slave drives */
#define I8259_OCW3_READ_IRR	0x0a	/* the next read of the command port: IRR */
#define I8259_OCW3_READ_ISR	0x0b	/* ... ISR */
#define I8259_OCW2_SPECIFIC_EOI	0x60	/* | the level: its in-service bit ends */

#endif
