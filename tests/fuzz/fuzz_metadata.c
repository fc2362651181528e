/* fuzz_metadata.c : the AMDGPU metadata reader alone. The input is the MessagePack of an
 * NT_AMDGPU_METADATA note; the target wraps it in the smallest valid gfx942 code object
 * (tests/unit/mkelf.h, with a k.kd symbol) so that every mutation reaches the reader. */
#include <stdint.h>
#include <stdlib.h>

#include "codeobj.h"
#include "mkelf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (64u << 10)) return 0;
    size_t cap = size + 64, elf_cap = size + 1024;
    unsigned char *note = malloc(cap), *elf = malloc(elf_cap);
    mkelf_spec s = {224, 64, 3, 3, 0x4c, ".note", 7, note, mkelf_amd_note(data, size, note, cap), "k.kd"};
    size_t n = mkelf_build(&s, elf, elf_cap);
    aot_codeobj co;
    aot_diag d;
    if (n && aot_codeobj_inspect(elf, n, "fuzz", NULL, &co, &d) == AITER_AOT_STATUS_OK) aot_codeobj_free(&co);
    free(note), free(elf);
    return 0;
}
