/* For the guest tests' assembly: G name defines a global label, hidden
 * (the EFI image links it, nothing exports it). */
	.macro G name
	.globl \name
	.hidden \name
\name:
	.endm
