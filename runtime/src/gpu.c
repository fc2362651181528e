/* gpu.c : picking and binding the vendor table once per process. A vendor library already in
 * the process wins (the application chose it); otherwise HIP, then CUDA, is loaded
 * RTLD_LOCAL. An INTERPOSED answer stops the search: it must reach the caller, not be hidden
 * behind "try the other vendor". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

static struct {
    pthread_once_t once;
    aot_gpu gpu;
    aiter_aot_status status;
    aot_diag diag;
} B = {PTHREAD_ONCE_INIT};

typedef aiter_aot_status (*bind_fn)(aot_gpu *, int, int, aot_diag *);

static int better(aiter_aot_status candidate, aiter_aot_status current)
{
    /* INTERPOSED > NO_DEVICE > GPU_RUNTIME: the most specific explanation wins */
    static const int rank[] = {[AITER_AOT_STATUS_GPU_RUNTIME] = 1, [AITER_AOT_STATUS_NO_DEVICE] = 2,
                               [AITER_AOT_STATUS_INTERPOSED] = 3};
    int c = candidate < 7 ? rank[candidate] : 0, k = current < 7 ? rank[current] : 0;
    return c > k;
}

static void bind_once(void)
{
    const char *env = getenv("AITER_AOT_GLOBAL_SYMBOLS");
    int global = env != NULL && strcmp(env, "1") == 0;
    static const struct { bind_fn fn; int may_load; } order[] = {
        {aot_gpu_bind_cuda, 0}, {aot_gpu_bind_hip, 0}, {aot_gpu_bind_hip, 1}, {aot_gpu_bind_cuda, 1}};
    B.status = AITER_AOT_STATUS_GPU_RUNTIME;
    aot_fail(&B.diag, B.status, "no GPU runtime: neither libamdhip64 nor libcuda.so.1 could be loaded");
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        aot_gpu g;
        aot_diag d;
        memset(&g, 0, sizeof g);
        g.global_symbols = global;
        aiter_aot_status s = order[i].fn(&g, order[i].may_load, global, &d);
        if (s == AITER_AOT_STATUS_OK) {
            B.gpu = g;
            B.status = s;
            return;
        }
        /* keep the library of the most specific failure: it was bound, the device is missing */
        int opened = g.library[0] && !B.gpu.library[0]; /* its own error says more than "not found" */
        if ((order[i].may_load && better(s, B.status)) || opened || s == AITER_AOT_STATUS_INTERPOSED)
            B.status = s, B.diag = d, memcpy(B.gpu.library, g.library, sizeof g.library);
        if (s == AITER_AOT_STATUS_INTERPOSED) return;
    }
}

aiter_aot_status aot_gpu_bind(const aot_gpu **gpu, aot_diag *d)
{
    pthread_once(&B.once, bind_once);
    *gpu = &B.gpu;
    if (B.status != AITER_AOT_STATUS_OK && d) *d = B.diag;
    return B.status;
}
