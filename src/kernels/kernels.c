// kernels/kernels.c — choosing the active kernel table (see kernels.h).
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const Kernels *active, *base;

void kernels_set_profiling(int on) {
    kernels();  // resolve the base table first
    active = on ? kernels_profiled(base) : base;
}

const Kernels *kernels(void) {
    if (!active) {
        const char *want = getenv("FRONTIER_KERNELS");
        if (want && *want && strcmp(want, "ref") != 0 && strcmp(want, "auto") != 0)
            fprintf(stderr, "frontier: FRONTIER_KERNELS=%s is unknown (have: ref, auto); using ref\n", want);
        active = base = &KERNELS_REF;  // the fast tables arrive with the kernels work
    }
    return active;
}
