/* pack_cache.h : what one pack computed, kept for the next. Every compressed frame and trained
 * dictionary of aot_bundle_write is a pure function of its inputs, so a pack can take the
 * results of the previous one for the targets whose code objects did not change and still
 * write the bytes a pack without the cache writes. The cache only holds bytes under 64-bit
 * keys; the writer checks a frame it takes from here by decompressing it (bundle_write.c).
 * No file I/O here: aot-bundle reads and writes the serialized form. */
#ifndef AOT_PACK_CACHE_H
#define AOT_PACK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

typedef struct aot_pack_cache aot_pack_cache;

/* A cache holding the records of `size` bytes written by aot_pack_cache_serialize (size 0:
 * empty). Records that do not parse or whose checksum fails are dropped, never an error: the
 * cache can only make a pack faster. Only as many records are read as one pack can use (a
 * file of more was not written by a pack). @return NULL when out of memory. */
aot_pack_cache *aot_pack_cache_parse(const unsigned char *data, size_t size);
void aot_pack_cache_free(aot_pack_cache *c);

/* The bytes under key (valid until the cache is freed), marking the record used. @return 0 if
 * found, -1 if not. */
int aot_pack_cache_get(aot_pack_cache *c, uint64_t key, const unsigned char **bytes, size_t *size);
/* Stores a copy of the bytes under key, used. @return OK or OUT_OF_MEMORY. */
aiter_aot_status aot_pack_cache_put(aot_pack_cache *c, uint64_t key, const void *bytes, size_t size,
                                    aot_diag *d);
/* The used records, serialized into a new malloc'ed buffer: a cache holds what the last pack
 * needed and nothing older. @return OK or OUT_OF_MEMORY. */
aiter_aot_status aot_pack_cache_serialize(const aot_pack_cache *c, unsigned char **out, size_t *size,
                                          aot_diag *d);

#endif
