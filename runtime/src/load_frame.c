/* load_frame.c : choosing a bundle frame for a device and loading its code objects. Kept
 * apart from loader.c's per-device cache so that it runs on the CPU with a stub GPU table
 * (tests/unit/test_loader, tests/fuzz/fuzz_bundle). */
#include "loader.h"

#include <stdlib.h> /* calloc, free */
#include <string.h> /* strlen, strchr, strstr */
#include <time.h>   /* clock_gettime */

#include "target_id.h"

/* The short form a message shows for target string t: what follows "--". */
static const char *short_target(const char *t)
{
    const char *s = strstr(t, "--");
    return s ? s + 2 : t;
}

/* Appends ", item" to the list in have (cap bytes) if the whole item fits. */
static void list_append(char *have, size_t cap, const char *item)
{
    size_t n = strlen(have), add = strlen(item) + (n ? 2 : 0);
    if (n + add >= cap) return; /* the message lists what fits */
    if (n) memcpy(have + n, ", ", 2), n += 2;
    memcpy(have + n, item, strlen(item) + 1);
}

static aiter_aot_status pick_frame(const aot_bundle *b, const char *device_target, uint32_t *frame,
                                   aot_diag *d)
{
    aot_target dev, code;
    int best = -1;
    if (aot_target_parse(&dev, device_target) != 0)
        return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "device target \"%s\" is not a target ID",
                        device_target);
    char have[512] = "";
    for (uint32_t f = 0; f < b->frames; f++) {
        const char *t = aot_bundle_string(b, aot_bundle_frame(b, f).target);
        if (aot_target_parse(&code, t) != 0) continue;
        list_append(have, sizeof have, short_target(t));
        if (aot_target_compatible(&code, &dev) && aot_target_specificity(&code) > best)
            best = aot_target_specificity(&code), *frame = f;
    }
    if (best < 0)
        return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "no code object for %s; this library has %s",
                        short_target(device_target), have[0] ? have : "no targets");
    return AITER_AOT_STATUS_OK;
}

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static aiter_aot_status load_entry(const aot_bundle *b, uint32_t e, const unsigned char *bytes,
                                   const aot_gpu *gpu, int device, aot_loaded *out, aot_diag *d)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    void *module;
    /* the reader guarantees disjoint kernel ranges; this keeps the table safe regardless */
    if (r.kernel_count > b->kernels - out->nfns)
        return aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE, "entry %u: more kernels than the bundle has", e);
    AOT_FORWARD(aot_bundle_check_entry(b, e, bytes, d));
    unsigned long long t0 = now_ns();
    AOT_FORWARD(gpu->load_module(device, bytes + r.offset, &module, d));
    unsigned long long t1 = now_ns();
    out->module_load_ns += t1 - t0;
    out->modules++;
    for (uint32_t k = 0; k < r.kernel_count; k++) {
        aot_kernel_rec kr = aot_bundle_kernel(b, r.kernel_first + k);
        aot_kernel_fn *f = &out->fns[out->nfns];
        f->name = aot_bundle_string(b, kr.name);
        f->explicit_args = kr.explicit_args_size;
        f->wave_size = kr.wave_size;
        AOT_FORWARD(gpu->get_function(module, f->name, &f->fn, d));
        out->nfns++;
    }
    out->lookup_ns += now_ns() - t1;
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_load_frame(const aot_bundle *b, const char *device_target, const aot_gpu *gpu,
                                int device, aot_loaded *out, aot_diag *d)
{
    uint32_t frame = 0;
    unsigned char *bytes;
    memset(out, 0, sizeof *out);
    AOT_FORWARD(pick_frame(b, device_target, &frame, d));
    out->fns = calloc(b->kernels ? b->kernels : 1, sizeof *out->fns);
    if (out->fns == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    unsigned long long t0 = now_ns();
    aiter_aot_status s = aot_bundle_decompress_frame(b, frame, &bytes, d);
    out->decompress_ns = now_ns() - t0;
    if (s == AITER_AOT_STATUS_OK) out->frames++;
    for (uint32_t e = 0; e < b->entries && s == AITER_AOT_STATUS_OK; e++)
        if (aot_bundle_entry(b, e).frame == frame) s = load_entry(b, e, bytes, gpu, device, out, d);
    if (out->frames) free(bytes); /* the GPU runtime holds its own copy now */
    if (s != AITER_AOT_STATUS_OK) free(out->fns), out->fns = NULL, out->nfns = 0;
    return s;
}
