/* interpose_main.c : an executable that links libaiter_aot.a, with a hip* stub put in the
 * global scope first. Usage: interpose_exe MODE STUB REAL_LIB
 *   MODE global   dlopen STUB RTLD_GLOBAL before the first call
 *        preload  STUB came through LD_PRELOAD
 *        between  first call, then dlopen STUB RTLD_GLOBAL, then a second call
 *        none     no stub
 * Expects the real library (REAL_LIB) to be bound and the stub never called; with
 * AITER_AOT_GLOBAL_SYMBOLS=1 expects the opposite (the proof that the test can fail). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aiter_aot.h"

static int stub_calls(void *stub)
{
    int *n = stub ? dlsym(stub, "hipstub_calls") : dlsym(RTLD_DEFAULT, "hipstub_calls");
    return n ? *n : 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) return fprintf(stderr, "usage: interpose_exe MODE STUB REAL_LIB\n"), 2;
    const char *mode = argv[1];
    void *stub = NULL;
    const char *g = getenv("AITER_AOT_GLOBAL_SYMBOLS");
    int global = g && !strcmp(g, "1");
    if (!strcmp(mode, "global") && !(stub = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)))
        return fprintf(stderr, "%s\n", dlerror()), 2;
    aiter_aot_status s1 = aiter_aot_init();
    if (!strcmp(mode, "between") && !(stub = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)))
        return fprintf(stderr, "%s\n", dlerror()), 2;
    char target[96] = "";
    aiter_aot_status s2 = aiter_aot_device_target(target, sizeof target);
    const char *lib = aiter_aot_gpu_library();
    char real[PATH_MAX] = "", bound[PATH_MAX] = "";
    if (!realpath(argv[3], real) || !realpath(lib, bound)) bound[0] = 0;
    /* an op with valid arguments: reaches device selection (host buffers, never launched) */
    static float buf[64];
    aiter_aot_topk_softmax_args a = {.size = sizeof a, .gating = buf, .gating_dtype = AITER_AOT_DTYPE_F32,
                                     .gating_row_stride = 8, .tokens = 1, .experts = 8, .k = 2,
                                     .topk_weights = buf + 16, .topk_ids = (int32_t *)(buf + 32)};
    aiter_aot_status s3 = aiter_aot_topk_softmax(&a, NULL);
    printf("op: %s (%s)\n", aiter_aot_status_string(s3), aiter_aot_last_error());
    int calls = stub_calls(stub);
    printf("mode %s%s: init %s (%s); device target: %s (%s); bound %s; stub calls %d\n", mode,
           global ? " +AITER_AOT_GLOBAL_SYMBOLS=1" : "", aiter_aot_status_string(s1), aiter_aot_last_error(),
           aiter_aot_status_string(s2), target, lib, calls);
    int ok;
    /* the opt-out: the stub is reached, and the library names the global scope, not the vendor's */
    if (global && strcmp(mode, "none") != 0) ok = calls > 0 && strcmp(lib, "the global scope (AITER_AOT_GLOBAL_SYMBOLS=1)") == 0;
    else ok = calls == 0 && strcmp(real, bound) == 0 && s1 == AITER_AOT_STATUS_NO_DEVICE && s3 == AITER_AOT_STATUS_NO_DEVICE;
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}
