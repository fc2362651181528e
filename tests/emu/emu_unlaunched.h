/* emu_unlaunched.h : the check both emulator suites end with. Every kernel of this wave's table
 * (loader_emu.c) must have run: a case list that misses a variant fails here instead of shipping
 * it untested. The routers' kernels (topk_route*, moe_align_scatter) are test_emu_route.c's,
 * the others test_emu.c's. */
#ifndef EMU_UNLAUNCHED_H
#define EMU_UNLAUNCHED_H

#include <string.h>

#include "emu.h"
#include "harness.h"

static void report_unlaunched(harness_tally *t, int routers)
{
    const char *names[128];
    const size_t cap = sizeof names / sizeof names[0], n = emu_unlaunched(names, cap);
    for (size_t i = 0; i < n && i < cap; i++) {
        const int router = strncmp(names[i], "topk_route", 10) == 0 || strcmp(names[i], "moe_align_scatter") == 0;
        if (router == routers) harness_report(t, 0, names[i], "no case ran this kernel");
    }
}

#endif
