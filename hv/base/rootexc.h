/* Root-mode exceptions (base/rootexc.c). */
#pragma once
#include "arch/x86/desc.h"

/* Set by a backend whose emulator can raise a #DB of the guest's in root
 * mode, at the first instruction after the world switch (svm/svm.c): true
 * when it took this one (the frame's RIP is that instruction). Runs with
 * the guest's GS base and GPRs: no logging, no per-processor block. */
extern bool (*root_db_after_exit)(struct exc_frame *f);
