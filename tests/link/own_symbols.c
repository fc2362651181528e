/* own_symbols.c : an application with its own ZSTD_* and hip* functions (as if it linked its
 * own, different libzstd and a HIP shim) links against libaiter_aot.a without clashes, and the
 * library never calls the application's versions. */
#include <stddef.h>
#include <stdio.h>

#include "aiter_aot.h"

static int app_calls;
size_t ZSTD_decompress(void *d, size_t dc, const void *s, size_t sc) { (void)d, (void)dc, (void)s, (void)sc; app_calls++; return 0; }
size_t ZSTD_decompress_usingDict(void *a, void *d, size_t dc, const void *s, size_t sc, const void *k, size_t ks)
{ (void)a, (void)d, (void)dc, (void)s, (void)sc, (void)k, (void)ks; app_calls++; return 0; }
void *ZSTD_createDCtx(void) { app_calls++; return NULL; }
unsigned long long ZSTD_getFrameContentSize(const void *s, size_t n) { (void)s, (void)n; app_calls++; return 0; }
/* zstd's tracing hooks: weak references in libzstd.a that must not bind to these */
unsigned long long ZSTD_trace_decompress_begin(const void *dctx) { (void)dctx; app_calls++; return 1; }
void ZSTD_trace_decompress_end(unsigned long long c, const void *t) { (void)c, (void)t; app_calls++; }
int hipModuleLoadData(void **m, const void *img) { (void)m, (void)img; app_calls++; return 0; }
int hipInit(unsigned f) { (void)f; app_calls++; return 0; }
int hipGetDeviceCount(int *n) { app_calls++; *n = 1; return 0; }
int elf_version(int v) { (void)v; app_calls++; return 0; }

int main(void)
{
    const char *t[8];
    size_t n = aiter_aot_targets(t, 8);
    aiter_aot_status s = aiter_aot_init();
    printf("targets %zu, init: %s (%s), application's own functions called %d times\n", n,
           aiter_aot_status_string(s), aiter_aot_last_error(), app_calls);
    int ok = n > 0 && app_calls == 0;
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}
