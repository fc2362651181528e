/* bundle_write.h : building a bundle (docs/bundle-format.md) from validated code objects. */
#ifndef AOT_BUNDLE_WRITE_H
#define AOT_BUNDLE_WRITE_H

#include "codeobj.h"
#include "pack_cache.h"

typedef struct {
    const char *path;          /* for messages */
    char module[64];           /* entry name */
    const unsigned char *bytes; /* not owned */
    size_t size;
    aot_codeobj co;            /* from aot_codeobj_inspect */
} aot_pack_item;

typedef enum { AOT_DICT_AUTO = 0, AOT_DICT_NONE = 1, AOT_DICT_ALWAYS = 2 } aot_dict_mode;

typedef struct {
    int level;           /* zstd level, 1..22 */
    aot_dict_mode dict;  /* AUTO keeps a trained dictionary only when the bundle gets smaller */
    aot_pack_cache *cache; /* NULL, or frames and dictionaries of earlier packs to reuse; what
                              this pack computes is added (the bytes written do not change) */
} aot_pack_options;

#define AOT_PACK_DEFAULT_LEVEL 19

/* Sorts `items` by (target, module), refuses duplicates, compresses one frame per target and
 * writes the bundle to a new malloc'ed buffer. The same inputs always give the same bytes,
 * with or without a cache, however many cores compress. */
aiter_aot_status aot_bundle_write(aot_pack_item *items, size_t n, const aot_pack_options *opt,
                                  unsigned char **out, size_t *out_size, aot_diag *d);

#endif
