/* The flat hypervisor image (build/hv/hv.bin), embedded in hvtrace.efi. */
	.section .rodata
	.balign 4096
	.globl hv_image_start, hv_image_end
	.hidden hv_image_start, hv_image_end
hv_image_start:
	.incbin HV_BIN
hv_image_end:
	.section .note.GNU-stack,"",@progbits
