/* fuzz_codeobj.c : the code-object validator (libelf, the AMDGPU metadata note's MessagePack,
 * cubin .nv.info records) over raw bytes, for AMD and CUDA objects alike. A validated object
 * must be fully readable: every kernel and argument name a terminated string. The first
 * input byte picks the declared target (none, or one of each vendor). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const declared[] = {NULL, "gfx942", "sm_90a", "gfx950:xnack-"};
    if (size < 1) return 0;
    const char *want = declared[data[0] & 3];
    aot_codeobj co;
    aot_diag d;
    if (aot_codeobj_inspect(data + 1, size - 1, "fuzz", want, &co, &d) != AITER_AOT_STATUS_OK) return 0;
    for (unsigned k = 0; k < co.nkernels; k++) {
        if (memchr(co.kernels[k].name, 0, sizeof co.kernels[k].name) == NULL) abort();
        for (unsigned a = 0; a < co.kernels[k].nargs; a++)
            if (memchr(co.kernels[k].args[a].kind, 0, sizeof co.kernels[k].args[a].kind) == NULL) abort();
    }
    aot_codeobj_free(&co);
    return 0;
}
