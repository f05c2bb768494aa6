/* The hypervisor's one global state (base/vcpu.h): every layer reads it,
 * dispatch/entry.c fills it at start-up. */
#include "base/vcpu.h"

struct hv hv;
