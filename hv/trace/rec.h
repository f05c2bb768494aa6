/* The trace recorder's interface to the rest of the hypervisor (stub until
 * the recorder lands: see hv/trace/rec.c). */
#ifndef HV_TRACE_REC_H
#define HV_TRACE_REC_H

#include "core/types.h"

/* Keeps the rings as they are (enum hvtrace_freeze says why). */
void rec_freeze(u32 why);

#endif
