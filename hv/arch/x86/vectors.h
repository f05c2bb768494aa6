/* Exception vectors (Intel SDM Vol. 3 Table 6-1, AMD APM Vol. 2 8.2).
 * Plain numbers: usable from assembly too. */
#ifndef HV_X86_VECTORS_H
#define HV_X86_VECTORS_H
#define X86_DE	0
#define X86_DB	1
#define X86_NMI	2
#define X86_BP	3
#define X86_OF	4
#define X86_UD	6
#define X86_DF	8
#define X86_TS	10
#define X86_NP	11
#define X86_SS	12
#define X86_GP	13
#define X86_PF	14
#define X86_AC	17
#define X86_MC	18
#define X86_CP	21
#define X86_VC	29	/* AMD: VMM communication */
#define X86_SX	30	/* AMD: security */
#endif
