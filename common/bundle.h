/* bundle.h : reading (and encoding the records of) an aiter-aot bundle. One reader serves the
 * runtime and aot-bundle. Input is untrusted: aot_bundle_open checks everything the index says
 * before anything else may use it. */
#ifndef AOT_BUNDLE_H
#define AOT_BUNDLE_H

#include <stddef.h> /* size_t */
#include <stdint.h>

#include "bundle_format.h"
#include "diag.h"

/* A checked, read-only view of a bundle in memory; it allocates nothing and owns nothing. */
typedef struct {
    const unsigned char *base;
    size_t size;          /* total_size */
    uint32_t version, flags;
    uint32_t entries, kernels, args, frames, strings_size, dict_size;
    size_t entries_off, kernels_off, args_off, frames_off, strings_off, dict_off, meta_end;
    uint64_t meta_hash;
} aot_bundle;

/* Checks `size` bytes at `data` (docs/bundle-format.md, "Rules a reader enforces").
 * @return AITER_AOT_STATUS_OK or AITER_AOT_STATUS_CORRUPT_BUNDLE with the reason in d. */
aiter_aot_status aot_bundle_open(aot_bundle *b, const void *data, size_t size, aot_diag *d);

/* Finds the first valid bundle inside `size` bytes (an ELF object, archive or executable that
 * embeds one). @return OK with b set, or CORRUPT_BUNDLE naming why the last candidate failed. */
aiter_aot_status aot_bundle_find(aot_bundle *b, const void *data, size_t size, aot_diag *d);

/* @return 1 if `name` may name a module: [A-Za-z0-9_.-]{1,63}, not starting with '.' (it
 * becomes a file name). The reader refuses other names, the writer refuses to write them. */
int aot_bundle_module_name_ok(const char *name);

/* Record access; i must be below the matching count (checked by the caller). */
aot_entry_rec aot_bundle_entry(const aot_bundle *b, uint32_t i);
aot_kernel_rec aot_bundle_kernel(const aot_bundle *b, uint32_t i);
aot_arg_rec aot_bundle_arg(const aot_bundle *b, uint32_t i);
aot_frame_rec aot_bundle_frame(const aot_bundle *b, uint32_t i);
const char *aot_bundle_string(const aot_bundle *b, uint32_t offset); /* validated by open */

/* Decompresses frame `i` into a new malloc'ed buffer of exactly usize bytes (*out, free()
 * it); a chained frame decompresses its base frame first, as its prefix.
 * @return OK, OUT_OF_MEMORY, or CORRUPT_BUNDLE when zstd fails or the size differs. */
aiter_aot_status aot_bundle_decompress_frame(const aot_bundle *b, uint32_t i, unsigned char **out,
                                             aot_diag *d);

/* Checks entry `i`'s bytes inside its decompressed frame against the recorded hash. */
aiter_aot_status aot_bundle_check_entry(const aot_bundle *b, uint32_t i,
                                        const unsigned char *frame_bytes, aot_diag *d);

/* Record encoders for the writer: each writes exactly its record size. */
void aot_encode_header(unsigned char *p, const aot_bundle *b);
void aot_encode_entry(unsigned char *p, const aot_entry_rec *r);
void aot_encode_kernel(unsigned char *p, const aot_kernel_rec *r);
void aot_encode_arg(unsigned char *p, const aot_arg_rec *r);
void aot_encode_frame(unsigned char *p, const aot_frame_rec *r);

/* meta_end for the given table sizes. */
size_t aot_bundle_meta_end(uint32_t entries, uint32_t kernels, uint32_t args, uint32_t frames,
                           uint32_t strings_size, uint32_t dict_size);

/* Sets the table offsets and meta_end from the counts and sizes in b (the layout of
 * docs/bundle-format.md, in one place). */
void aot_bundle_place_tables(aot_bundle *b);

/* XXH64 of [0, meta_end) with the hash field taken as zero. */
uint64_t aot_bundle_meta_hash(const unsigned char *base, size_t meta_end);

#endif
