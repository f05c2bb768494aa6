/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: host -> hypervisor control requests through a shared-memory
 * channel (record.h "Host -> hypervisor control", docs/channel.md). The
 * request area is written only while no request is pending, seq last;
 * the answer is trusted only as far as it goes: ctl_done must reach this
 * request's seq, and the result is one of the codes the ABI names.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "libhvtrace.h"

const char *hvt_ctl_mode_name(unsigned mode)
{
	static const char *const n[] = {
		[HVTRACE_CTL_OFF] = "off", [HVTRACE_CTL_EXITS] = "exits", [HVTRACE_CTL_POLL] = "poll",
	};
	return mode < sizeof(n) / sizeof(n[0]) ? n[mode] : NULL;
}

const char *hvt_result_name(int64_t result)
{
	switch (result) {
	case 0: return "ok";
	case -HVTRACE_EPERM: return "EPERM (not now: the recorder is frozen)";
	case -HVTRACE_EFAULT: return "EFAULT (a buffer outside guest RAM)";
	case -HVTRACE_EINVAL: return "EINVAL (an operation or argument the hypervisor does not take)";
	case -HVTRACE_ENOSYS: return "ENOSYS (no recorder)";
	case -HVTRACE_EAGAIN: return "EAGAIN (that vCPU is not stopped yet)";
	}
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap(void)
{
	struct timespec ts = { 0, 50000 };	/* 50 us */

	nanosleep(&ts, NULL);
}

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

int hvt_ctl_send(struct hvt_chan *ch, const struct hvt_ctl_req *rq, uint64_t timeout_ms, int64_t *result,
		 uint64_t *latency_ns, struct hvt_err *err)
{
	struct hvtrace_chan *h = ch->hdr;
	uint64_t t0 = mono_ns(), deadline = t0 + timeout_ms * 1000000u, done, seq, sent;
	uint32_t mode;

	if (ch->source != HVT_SRC_SHM) {
		hvt_seterr(err, "control requests go through a live channel (--shm), not a dump");
		return -1;
	}
	mode = __atomic_load_n(&h->ctl_mode, __ATOMIC_ACQUIRE);
	if (mode == HVTRACE_CTL_OFF || !hvt_ctl_mode_name(mode)) {
		hvt_seterr(err, "the hypervisor takes no host requests on this channel (ctl_mode %u: "
			   "channel.control = off in hvtrace.cfg, or a hypervisor older than ABI 1.5)", mode);
		return -1;
	}
	/* a request still pending (a writer that gave up waiting) is
	 * answered first: its fields are never rewritten while it waits */
	for (;;) {
		done = ld(&h->ctl_done);
		seq = ld(&h->ctl.seq);
		if (seq != done + 1)
			break;
		if (mono_ns() >= deadline) {
			hvt_seterr(err, "an earlier request (seq %llu) is still waiting for the hypervisor after "
				   "%llu ms: is the guest running?", (unsigned long long)seq,
				   (unsigned long long)timeout_ms);
			return -1;
		}
		nap();
	}
	h->ctl.op = rq->op;
	h->ctl.reserved = 0;
	h->ctl.arg0 = rq->arg0;
	h->ctl.arg1 = rq->arg1;
	memcpy(&h->ctl.filter, &rq->filter, sizeof(h->ctl.filter));
	sent = done + 1;
	__atomic_store_n(&h->ctl.seq, sent, __ATOMIC_RELEASE);	/* last: the request is complete */
	t0 = mono_ns();
	for (;;) {
		done = ld(&h->ctl_done);
		if (done == sent)
			break;
		if (mono_ns() >= deadline) {
			hvt_seterr(err, "no answer from the hypervisor within %llu ms (ctl_mode %s: %s); the "
				   "request stays pending and is applied when the hypervisor reads it",
				   (unsigned long long)timeout_ms, hvt_ctl_mode_name(mode),
				   mode == HVTRACE_CTL_POLL ? "is the guest paused or stopped?"
							    : "requests wait for the guest's next VM exit");
			return -1;
		}
		nap();
	}
	*latency_ns = mono_ns() - t0;
	*result = (int64_t)ld((const uint64_t *)&h->ctl_result);
	if (!hvt_result_name(*result)) {
		hvt_seterr(err, "the hypervisor answered with result %lld, which the ABI does not name",
			   (long long)*result);
		return -1;
	}
	return 0;
}
