/* hash.h : XXH64, the 64-bit content hash of the bundle format (docs/bundle-format.md). */
#ifndef AOT_HASH_H
#define AOT_HASH_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint64_t */

/* XXH64 of `size` bytes at `data` with `seed`, as specified by the xxHash format. */
uint64_t aot_xxh64(const void *data, size_t size, uint64_t seed);

/* XXH64 of head followed by rest, without joining them (streamed; nothing allocated).
 * head_size must be a multiple of 32 (a whole number of stripes); 0 hashes rest alone. */
uint64_t aot_xxh64_split(const void *head, size_t head_size, const void *rest, size_t rest_size, uint64_t seed);

#endif
