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

/* A frame decoded a piece at a time into one buffer, so that a caller can use each code
 * object as soon as its bytes are out (the runtime decodes in one thread while another loads
 * modules). Bytes [0, ready) of `bytes` are final; done is set once all `size` are and the
 * zstd frame ended exactly at csize. */
typedef struct {
    unsigned char *bytes;
    size_t ready, size;
    int done;
    /* private */
    const aot_bundle *bundle;
    uint32_t frame;
    void *dctx;
    unsigned char *prefix; /* a chained frame's base frame, decoded by open */
    size_t prefix_size;
    const unsigned char *src;
    size_t src_size, src_pos;
} aot_frame_decoder;

/* Opens frame i for decoding (a chained frame's base frame is decoded here, in one go).
 * @return OK, OUT_OF_MEMORY or CORRUPT_BUNDLE; on failure fd holds nothing to close. */
aiter_aot_status aot_frame_decoder_open(aot_frame_decoder *fd, const aot_bundle *b, uint32_t i,
                                        aot_diag *d);

/* Decodes up to `chunk` more compressed bytes (SIZE_MAX: the rest). @return OK (check done) or
 * CORRUPT_BUNDLE (zstd failed, the frame ended early or late, or it is truncated). */
aiter_aot_status aot_frame_decoder_step(aot_frame_decoder *fd, size_t chunk, aot_diag *d);

/* Frees everything fd holds, bytes included (take them first by setting fd->bytes = NULL). */
void aot_frame_decoder_close(aot_frame_decoder *fd);

/* Checks entry `i`'s bytes inside its decompressed frame against the recorded hash, and that
 * they are an ELF64 image whose headers describe only bytes inside the entry (a GPU driver is
 * handed a pointer and reads as far as those headers say). */
aiter_aot_status aot_bundle_check_entry(const aot_bundle *b, uint32_t i,
                                        const unsigned char *frame_bytes, aot_diag *d);
/* The hash half of aot_bundle_check_entry alone (verify tells a hash mismatch from an invalid
 * code object). */
aiter_aot_status aot_bundle_check_entry_hash(const aot_bundle *b, uint32_t i,
                                             const unsigned char *frame_bytes, aot_diag *d);

/* What an ELF64 little-endian image's headers make a reader touch lies inside its `size` bytes:
 * the section and program header tables, every section's bytes (SHT_NOBITS has none), every
 * segment's file bytes. @return NULL, or what is out of place ("a section past its end"). The
 * reader checks every entry with it; pack checks every code object, so it never writes one
 * the reader refuses. */
const char *aot_elf_extent_fault(const unsigned char *p, uint64_t size);

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
