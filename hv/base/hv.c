/* The hypervisor's one global state (base/vcpu.h): every layer reads it,
 * dispatch/entry.c fills it at start-up. And the kick: how one processor
 * makes another leave the guest soon. */
#include "base/lapic.h"
#include "base/vcpu.h"

struct hv hv;

void hv_kick(struct vcpu *w)
{
	/* one NMI in flight per vCPU: a second could merge with a guest's */
	if ((hv.caps & HV_CAP_KICK_POLL) || !w->boot ||
	    __atomic_exchange_n(&w->kick, 1, __ATOMIC_SEQ_CST))
		return;
	lapic_send_nmi(w->apic_id);
}

void hv_kick_others(struct vcpu *v)
{
	for (u32 i = 0; i < hv.nr_vcpus; i++)
		if (hv.vcpus[i] != v)
			hv_kick(hv.vcpus[i]);
}
