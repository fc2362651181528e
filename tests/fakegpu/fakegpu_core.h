/* fakegpu_core.h : the recorder and ELF checks both fake devices share (fakegpu_core.c). */
#ifndef FAKEGPU_CORE_H
#define FAKEGPU_CORE_H

#include <stdint.h>

#include "fakegpu.h"

#define FG_EXPORT __attribute__((visibility("default")))

typedef struct fg_module {
    uint32_t magic;            /* FG_MODULE */
    unsigned char *image;      /* the double's own copy: the caller may free its buffer */
    size_t size;
} fg_module;

typedef struct {
    uint32_t magic;            /* FG_FUNCTION */
    const fg_module *module;
    char name[128];
    unsigned max_shared;       /* opted-in dynamic shared memory (CUDA) */
    int wide_clusters;         /* opted in to clusters beyond 8 blocks (CUDA) */
} fg_function;

enum { FG_MODULE = 0x4d6f4447, FG_FUNCTION = 0x466e4447 };

/* Counts one call of the entry point `name` (a string literal). */
void fg_count(const char *name);

/* The size of the ELF image at `image`, checked: 64-bit little-endian, machine `machine`, every
 * header and section inside the image. 0 when it is not such an image. */
size_t fg_elf_size(const void *image, unsigned machine);

/* Whether the ELF image has a defined symbol `name` of type `type` (STT_FUNC, STT_OBJECT). */
int fg_elf_has_symbol(const fg_module *m, const char *name, unsigned type);

/* A module holding a copy of the checked image; NULL when out of memory. */
fg_module *fg_module_new(const void *image, size_t size);

/* A function of module m; NULL when out of memory. */
fg_function *fg_function_new(const fg_module *m, const char *name);

/* fn when it is a function this double handed out, else NULL. */
fg_function *fg_function_of(void *fn);

void fg_record_launch(const fg_function *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                      const unsigned cluster[3], void *stream, void **params);

#endif
