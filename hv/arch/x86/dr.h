/* Debug registers (Intel SDM Vol. 3 18.2 "Debug Registers", AMD APM Vol. 2
 * 13.1.1): the DR6 status and DR7 control bits the hypervisor uses. */
#ifndef HV_X86_DR_H
#define HV_X86_DR_H

#define DR6_B0		(1ull << 0)
#define DR6_B1		(1ull << 1)
#define DR6_B2		(1ull << 2)
#define DR6_B3		(1ull << 3)
#define DR6_BN		0xfull		/* B0-B3: replaced by each #DB's own (SDM Vol. 3 18.2.3) */
#define DR6_BD		(1ull << 13)
#define DR6_BS		(1ull << 14)
#define DR6_CLEAN	0xffff0ff0ull	/* no cause: bits 4-11 and 16-31 read as 1 */
#define DR6_CAUSES	0x600full	/* B0-B3, BD, BS */

/* DR7: local/global enable of breakpoint n in bits 2n/2n+1, its RW field
 * in bits 16+4n (00: instruction), its LEN field in bits 18+4n. */
#define DR7_L(n)	(1ull << (2 * (n)))
#define DR7_G(n)	(1ull << (2 * (n) + 1))
#define DR7_RWLEN(n)	(0xfull << (16 + 4 * (n)))
#define DR7_RW_SHIFT(n)	(16 + 4 * (n))
#define DR7_GD		(1ull << 13)
#define DR7_FIXED1	0x400ull	/* bit 10 reads as 1 */
/* Bits 63:32 of DR6 and DR7 are reserved: MOV to them with any set is
 * #GP(0) (SDM Vol. 2B MOV—Move to/from Debug Registers); VMRUN refuses a
 * VMCB holding them (APM Vol. 2 15.5.1). */
#define DR_RESERVED_HIGH	0xffffffff00000000ull

#endif
