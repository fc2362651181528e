/* hash.h : XXH64, the 64-bit content hash of the bundle format (docs/bundle-format.md). */
#ifndef AOT_HASH_H
#define AOT_HASH_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

/* XXH64 of `size` bytes at `data` with `seed`, as specified by the xxHash format. */
uint64_t aot_xxh64(const void *data, size_t size, uint64_t seed);

#endif
