/* fuzz_bundle.c : the bundle reader, the runtime's and the tool's one parser, and then the
 * runtime's frame choice and loading (aot_load_frame with a stub GPU) over what it accepts.
 * The index hash is unkeyed, so the target writes the right one before parsing: otherwise
 * nearly every mutation stops at the hash check. The last input byte picks the device.
 * Any input must be refused cleanly or be fully usable. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const devices[] = {"gfx942:sramecc+:xnack-", "gfx950:sramecc+:xnack-", "gfx90a:xnack+",
                                      "sm_90a", "sm_100", "gfx1100"};

static aiter_aot_status stub_load(int device, const void *image, void **module, aot_diag *d)
{
    (void)device, (void)d;
    *module = (void *)image;
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status stub_function(void *module, const char *name, void **fn, aot_diag *d)
{
    (void)d;
    *fn = (char *)module + strlen(name); /* reads the whole name */
    return AITER_AOT_STATUS_OK;
}

/* Writes the index hash a bundle at p (n bytes, a private copy) would need. */
static void fix_hash(unsigned char *p, size_t n)
{
    aot_bundle h;
    if (n < AOT_HEADER_SIZE) return;
    memset(&h, 0, sizeof h);
    uint32_t c[6]; /* entries, kernels, args, frames, strings, dictionary */
    for (int i = 0; i < 6; i++) {
        const unsigned char *q = p + AOT_H_ENTRIES + 4 * i;
        c[i] = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    }
    for (int i = 0; i < 4; i++) if (c[i] > AOT_MAX_COUNT) return;
    if (c[4] > (1u << 24) || c[5] > (1u << 24)) return;
    size_t end = aot_bundle_meta_end(c[0], c[1], c[2], c[3], c[4], c[5]);
    if (end > n) return;
    uint64_t v = aot_bundle_meta_hash(p, end);
    for (int i = 0; i < 8; i++) p[AOT_H_HASH + i] = (unsigned char)(v >> 8 * i);
}

static void load_all(const aot_bundle *b, const char *device)
{
    aot_gpu gpu = {0};
    gpu.load_module = stub_load, gpu.get_function = stub_function;
    aot_loaded got;
    aot_diag d;
    uint64_t total = 0;
    for (uint32_t f = 0; f < b->frames; f++) total += aot_bundle_frame(b, f).usize;
    if (total > (64u << 20)) return; /* keep the fuzzer's memory small; the reader bounds it at 1 GiB */
    if (aot_load_frame(b, device, &gpu, 0, &got, &d) == AITER_AOT_STATUS_OK) free(got.fns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > (4u << 20)) return 0;
    unsigned char *copy = malloc(size);
    memcpy(copy, data, size);
    const char *device = devices[data[size - 1] % (sizeof devices / sizeof devices[0])];
    fix_hash(copy, size);
    aot_bundle b;
    aot_diag d;
    if (aot_bundle_open(&b, copy, size, &d) == AITER_AOT_STATUS_OK) {
        for (uint32_t e = 0; e < b.entries; e++) {
            aot_entry_rec r = aot_bundle_entry(&b, e);
            for (uint32_t k = 0; k < r.kernel_count; k++) {
                aot_kernel_rec kr = aot_bundle_kernel(&b, r.kernel_first + k);
                for (uint32_t a = 0; a < kr.arg_count; a++)
                    if (strlen(aot_bundle_string(&b, aot_bundle_arg(&b, kr.arg_first + a).kind)) > size) abort();
            }
        }
        load_all(&b, device);
    }
    aot_bundle_find(&b, data, size, &d); /* the search over unmodified bytes */
    free(copy);
    return 0;
}
