/* codeobj.h : validating a code object and reading its per-kernel facts, with libelf.
 * AMDGPU: ELF64 LE, EM_AMDGPU, ELFOSABI_AMDGPU_HSA, ET_DYN, code-object version 4..6, e_flags
 * agreeing with the metadata's amdhsa.target (and with a declared target), a parseable
 * NT_AMDGPU_METADATA note, and a <name>.kd symbol for every kernel it lists.
 * CUDA: ELF64 LE, EM_CUDA, the SM in e_flags agreeing with the declared target.
 * Both: section and program headers describing only bytes inside the file (the reader's
 * aot_elf_extent_fault: what pack accepts, every reader accepts). */
#ifndef AOT_CODEOBJ_H
#define AOT_CODEOBJ_H

#include <stddef.h>

#include "bundle_format.h"
#include "diag.h"

typedef struct {
    unsigned offset, size;
    char kind[40];
    char name[64];
} aot_co_arg;

typedef struct {
    char name[128];
    aot_kernel_rec rec; /* name/arg_first/arg_count are filled by the bundle writer */
    unsigned nargs;
    aot_co_arg *args;
} aot_co_kernel;

typedef struct {
    aot_kind kind;
    char target[64];   /* canonical target ID */
    unsigned abi;      /* AMD code-object version; CUDA ELF ABI version */
    unsigned e_flags;
    unsigned nkernels;
    aot_co_kernel *kernels;
} aot_codeobj;

/* Validates `size` bytes at `data` (`what` names it in messages: a path). `declared` is the
 * target the build meant (full or short form), or NULL to accept what the object says.
 * @return OK with *co filled (free with aot_codeobj_free), or INVALID_ARGUMENT with the reason. */
aiter_aot_status aot_codeobj_inspect(const void *data, size_t size, const char *what,
                                     const char *declared, aot_codeobj *co, aot_diag *d);
void aot_codeobj_free(aot_codeobj *co);

#endif
