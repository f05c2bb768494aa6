/* The intercepted ports and their handlers (root mode: io_bitmap_fill at
 * the backends' setup, io_exit on exits). An access exits when any port it
 * covers has its bit set (APM Vol. 2 15.10.1, SDM Vol. 3 26.1.3), so an
 * access that touches the hidden UART's ports at all is the UART's, even
 * where it starts below them. */
#include "base/vcpu.h"
#include "dispatch/dispatch.h"
#include "dispatch/pcihide.h"
#include "dispatch/uarthide.h"

static void set_range(u8 *bm, u16 first, u32 n)
{
	for (u32 p = first; n && p <= 0xffff; n--, p++)
		bm[p / 8] |= (u8)(1u << (p % 8));
}

void io_bitmap_fill(u8 *bm)
{
	u16 first;
	u32 n = pcihide_io_ports(&first);
	set_range(bm, first, n);
	n = uarthide_io_ports(&first);
	set_range(bm, first, n);
}

void io_exit(struct vcpu *v, const struct hv_event *ev)
{
	u16 first;
	u32 n = uarthide_io_ports(&first);
	if (n && ev->io_port < first + n && ev->io_port + ev->io_size > first)
		uarthide_io(v, ev);
	else
		pcihide_io(v, ev);
}
