/* fuzz_bundle.c : libFuzzer-style target for the bundle reader, the runtime's and the tool's
 * one parser. Any input must be either refused cleanly or fully usable: every record and
 * string readable, every frame decompressed to its recorded size or refused. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    aot_bundle b;
    aot_diag d;
    if (aot_bundle_find(&b, data, size, &d) != AITER_AOT_STATUS_OK) return 0;
    size_t touched = 0;
    for (uint32_t e = 0; e < b.entries; e++) {
        aot_entry_rec r = aot_bundle_entry(&b, e);
        touched += strlen(aot_bundle_string(&b, r.name)) + strlen(aot_bundle_string(&b, r.target));
        for (uint32_t k = 0; k < r.kernel_count; k++) {
            aot_kernel_rec kr = aot_bundle_kernel(&b, r.kernel_first + k);
            touched += strlen(aot_bundle_string(&b, kr.name));
            for (uint32_t a = 0; a < kr.arg_count; a++)
                touched += strlen(aot_bundle_string(&b, aot_bundle_arg(&b, kr.arg_first + a).kind));
        }
    }
    for (uint32_t f = 0; f < b.frames; f++) {
        if (aot_bundle_frame(&b, f).usize > (64u << 20)) continue; /* keep the fuzzer's memory small */
        unsigned char *bytes;
        if (aot_bundle_decompress_frame(&b, f, &bytes, &d) != AITER_AOT_STATUS_OK) continue;
        for (uint32_t e = 0; e < b.entries; e++)
            if (aot_bundle_entry(&b, e).frame == f) aot_bundle_check_entry(&b, e, bytes, &d);
        free(bytes);
    }
    return touched == (size_t)-1;
}
