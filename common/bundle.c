/* bundle.c : the bundle format's one reader, and its record encoders. The layout is
 * docs/bundle-format.md; field offsets are spelled out here once, in decode and encode pairs. */
#define _GNU_SOURCE /* memmem */
#include "bundle.h"

#include <stdlib.h> /* malloc, free */
#include <string.h> /* memcmp, memchr, memset */

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_stableOutBuffer: decode straight into the caller's buffer */
#include <zstd.h>

#include "hash.h"
#include "target_id.h"

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const unsigned char *p) { return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }
static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(unsigned char *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t aot_bundle_meta_end(uint32_t entries, uint32_t kernels, uint32_t args, uint32_t frames,
                           uint32_t strings_size, uint32_t dict_size)
{
    return AOT_HEADER_SIZE + (size_t)entries * AOT_ENTRY_SIZE + (size_t)kernels * AOT_KERNEL_SIZE +
           (size_t)args * AOT_ARG_SIZE + (size_t)frames * AOT_FRAME_SIZE + pad8(strings_size) +
           pad8(dict_size);
}

uint64_t aot_bundle_meta_hash(const unsigned char *base, size_t meta_end)
{
    /* The hash field counts as zero: hash a copy of the 64-byte header (two whole XXH64
     * stripes) and then the rest of the index in place, so nothing is allocated or copied. */
    unsigned char head[AOT_HEADER_SIZE];
    memcpy(head, base, AOT_HEADER_SIZE);
    memset(head + AOT_H_HASH, 0, 8);
    return aot_xxh64_split(head, AOT_HEADER_SIZE, base + AOT_HEADER_SIZE, meta_end - AOT_HEADER_SIZE, 0);
}

/* ---- decoding ---- */

aot_entry_rec aot_bundle_entry(const aot_bundle *b, uint32_t i)
{
    const unsigned char *p = b->base + b->entries_off + (size_t)i * AOT_ENTRY_SIZE;
    aot_entry_rec r = {get32(p), get32(p + 4), get16(p + 8), get16(p + 10), get32(p + 12),
                       get32(p + 16), get32(p + 20), get32(p + 24), get32(p + 28), get32(p + 32),
                       get64(p + 40)};
    return r;
}

aot_kernel_rec aot_bundle_kernel(const aot_bundle *b, uint32_t i)
{
    const unsigned char *p = b->base + b->kernels_off + (size_t)i * AOT_KERNEL_SIZE;
    aot_kernel_rec r = {get32(p), get32(p + 4), get32(p + 8), get32(p + 12), get32(p + 16),
                        get32(p + 20), get32(p + 24), get32(p + 28), get16(p + 32), get16(p + 34),
                        get16(p + 36), get16(p + 38), get16(p + 40), get16(p + 42), get32(p + 44)};
    return r;
}

aot_arg_rec aot_bundle_arg(const aot_bundle *b, uint32_t i)
{
    const unsigned char *p = b->base + b->args_off + (size_t)i * AOT_ARG_SIZE;
    aot_arg_rec r = {get32(p), get32(p + 4), get32(p + 8), get32(p + 12)};
    return r;
}

aot_frame_rec aot_bundle_frame(const aot_bundle *b, uint32_t i)
{
    const unsigned char *p = b->base + b->frames_off + (size_t)i * AOT_FRAME_SIZE;
    aot_frame_rec r = {get64(p), get64(p + 8), get64(p + 16), get32(p + 24), get32(p + 28)};
    return r;
}

const char *aot_bundle_string(const aot_bundle *b, uint32_t offset)
{
    return (const char *)b->base + b->strings_off + offset;
}

/* ---- encoding ---- */

void aot_encode_header(unsigned char *p, const aot_bundle *b)
{
    memset(p, 0, AOT_HEADER_SIZE);
    memcpy(p + AOT_H_MAGIC, AOT_BUNDLE_MAGIC, 8);
    put16(p + AOT_H_VERSION, (uint16_t)b->version);
    put16(p + AOT_H_FLAGS, (uint16_t)b->flags);
    put32(p + AOT_H_HEADER_SIZE, AOT_HEADER_SIZE);
    put32(p + AOT_H_ENTRIES, b->entries);
    put32(p + AOT_H_KERNELS, b->kernels);
    put32(p + AOT_H_ARGS, b->args);
    put32(p + AOT_H_FRAMES, b->frames);
    put32(p + AOT_H_STRINGS, b->strings_size);
    put32(p + AOT_H_DICT, b->dict_size);
    put64(p + AOT_H_TOTAL, b->size);
    put64(p + AOT_H_HASH, b->meta_hash);
}

void aot_encode_entry(unsigned char *p, const aot_entry_rec *r)
{
    memset(p, 0, AOT_ENTRY_SIZE);
    put32(p, r->name), put32(p + 4, r->target), put16(p + 8, r->kind), put16(p + 10, r->abi);
    put32(p + 12, r->e_flags), put32(p + 16, r->frame), put32(p + 20, r->kernel_first);
    put32(p + 24, r->kernel_count), put32(p + 28, (uint32_t)r->offset), put32(p + 32, (uint32_t)r->size);
    put64(p + 40, r->hash);
}

void aot_encode_kernel(unsigned char *p, const aot_kernel_rec *r)
{
    memset(p, 0, AOT_KERNEL_SIZE);
    put32(p, r->name), put32(p + 4, r->arg_first), put32(p + 8, r->arg_count);
    put32(p + 12, r->kernarg_size), put32(p + 16, r->explicit_args_size);
    put32(p + 20, r->group_segment), put32(p + 24, r->private_segment);
    put32(p + 28, r->max_workgroup), put16(p + 32, r->wave_size), put16(p + 34, r->sgpr);
    put16(p + 36, r->vgpr), put16(p + 38, r->agpr), put16(p + 40, r->sgpr_spill);
    put16(p + 42, r->vgpr_spill), put32(p + 44, r->flags);
}

void aot_encode_arg(unsigned char *p, const aot_arg_rec *r)
{
    put32(p, r->offset), put32(p + 4, r->size), put32(p + 8, r->kind), put32(p + 12, r->name);
}

void aot_encode_frame(unsigned char *p, const aot_frame_rec *r)
{
    put64(p, r->offset), put64(p + 8, r->csize), put64(p + 16, r->usize);
    put32(p + 24, r->flags), put32(p + 28, r->target);
}

/* ---- checking ---- */

#define CORRUPT(...) aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE, __VA_ARGS__)

static aiter_aot_status read_header(aot_bundle *b, const unsigned char *p, size_t size, aot_diag *d)
{
    if (size < AOT_HEADER_SIZE) return CORRUPT("truncated: %zu bytes, a header needs 64", size);
    if (memcmp(p, AOT_BUNDLE_MAGIC, 8) != 0) return CORRUPT("bad magic (not an aiter-aot bundle)");
    b->version = get16(p + AOT_H_VERSION);
    if (b->version != AOT_BUNDLE_VERSION)
        return CORRUPT("bundle format version %u; this reader knows version %u only", b->version,
                       AOT_BUNDLE_VERSION);
    b->flags = get16(p + AOT_H_FLAGS);
    if (b->flags & ~AOT_BUNDLE_KNOWN_FLAGS) return CORRUPT("unknown header flags 0x%x", b->flags);
    if (get32(p + AOT_H_HEADER_SIZE) != AOT_HEADER_SIZE) return CORRUPT("header size is not 64");
    b->entries = get32(p + AOT_H_ENTRIES), b->kernels = get32(p + AOT_H_KERNELS);
    b->args = get32(p + AOT_H_ARGS), b->frames = get32(p + AOT_H_FRAMES);
    b->strings_size = get32(p + AOT_H_STRINGS), b->dict_size = get32(p + AOT_H_DICT);
    if (b->entries > AOT_MAX_COUNT || b->kernels > AOT_MAX_COUNT || b->args > AOT_MAX_COUNT ||
        b->frames > AOT_MAX_COUNT)
        return CORRUPT("table counts out of range");
    if (b->strings_size == 0 || b->strings_size > AOT_MAX_STRINGS || b->dict_size > AOT_MAX_DICT)
        return CORRUPT("string table or dictionary size out of range");
    if (((b->flags & AOT_BUNDLE_FLAG_DICT) != 0) != (b->dict_size != 0))
        return CORRUPT("dictionary flag and size disagree");
    uint64_t total = get64(p + AOT_H_TOTAL);
    aot_bundle_place_tables(b);
    if (total > size) return CORRUPT("truncated: header says %llu bytes, have %zu",
                                     (unsigned long long)total, size);
    if (b->meta_end > total) return CORRUPT("index runs past the end of the bundle");
    b->size = (size_t)total;
    b->meta_hash = get64(p + AOT_H_HASH);
    return AITER_AOT_STATUS_OK;
}

void aot_bundle_place_tables(aot_bundle *b)
{
    b->meta_end = aot_bundle_meta_end(b->entries, b->kernels, b->args, b->frames, b->strings_size,
                                      b->dict_size);
    b->entries_off = AOT_HEADER_SIZE;
    b->kernels_off = b->entries_off + (size_t)b->entries * AOT_ENTRY_SIZE;
    b->args_off = b->kernels_off + (size_t)b->kernels * AOT_KERNEL_SIZE;
    b->frames_off = b->args_off + (size_t)b->args * AOT_ARG_SIZE;
    b->strings_off = b->frames_off + (size_t)b->frames * AOT_FRAME_SIZE;
    b->dict_off = b->strings_off + pad8(b->strings_size);
}

static int string_ok(const aot_bundle *b, uint32_t off)
{
    return off < b->strings_size &&
           memchr(b->base + b->strings_off + off, 0, b->strings_size - off) != NULL;
}

/* A target string that parses and is in canonical form: it names output files and is
 * compared byte for byte, so two spellings of one target must not both occur. */
static int target_ok(const aot_bundle *b, uint32_t off)
{
    aot_target t;
    char canon[96];
    const char *s = aot_bundle_string(b, off);
    if (!string_ok(b, off) || aot_target_parse(&t, s) != 0) return 0;
    aot_target_format(&t, canon, sizeof canon);
    return strcmp(canon, s) == 0;
}

int aot_bundle_module_name_ok(const char *name)
{
    /* it becomes a file name (extract, list): no separators, no "." or "..", no hidden file */
    size_t n = strlen(name);
    if (n == 0 || n > AOT_MAX_MODULE_NAME || name[0] == '.') return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Frames lie in the payload at increasing offsets without overlapping (so no byte is
 * decompressed twice), one per target in strictly increasing target order, and together
 * declare at most AOT_MAX_TOTAL_USIZE: what a reader may be made to allocate is bounded. */
static aiter_aot_status check_frame_order(const aot_bundle *b, uint32_t i, aot_frame_rec f,
                                          uint64_t *total, aot_diag *d)
{
    *total += f.usize;
    if (*total > AOT_MAX_TOTAL_USIZE) return CORRUPT("frames declare over 1 GiB in total");
    if (i == 0) return AITER_AOT_STATUS_OK;
    aot_frame_rec prev = aot_bundle_frame(b, i - 1);
    if (f.offset < prev.offset + prev.csize) return CORRUPT("frame %u overlaps frame %u", i, i - 1);
    if (strcmp(aot_bundle_string(b, prev.target), aot_bundle_string(b, f.target)) >= 0)
        return CORRUPT("frame %u: targets not in strictly increasing order", i);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status check_frames(const aot_bundle *b, aot_diag *d)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < b->frames; i++) {
        aot_frame_rec f = aot_bundle_frame(b, i);
        if (f.offset < b->meta_end || f.offset > b->size || f.csize > b->size - f.offset)
            return CORRUPT("frame %u lies outside the payload", i);
        if (f.usize > AOT_MAX_FRAME_USIZE) return CORRUPT("frame %u: size over 1 GiB", i);
        if (!target_ok(b, f.target)) return CORRUPT("frame %u: target is not a canonical target ID", i);
        AOT_FORWARD(check_frame_order(b, i, f, &total, d));
        uint32_t low = f.flags & 0xffffu;
        if ((low & ~(AOT_FRAME_FLAG_DICT | AOT_FRAME_FLAG_PREFIX)) || ((low & AOT_FRAME_FLAG_DICT) && !b->dict_size) ||
            ((low & AOT_FRAME_FLAG_DICT) && (low & AOT_FRAME_FLAG_PREFIX)) ||
            (!(low & AOT_FRAME_FLAG_PREFIX) && AOT_FRAME_BASE(f.flags)))
            return CORRUPT("frame %u: bad flags 0x%x", i, f.flags);
        if (low & AOT_FRAME_FLAG_PREFIX) {
            /* the base comes earlier and is not itself chained: decoding needs at most two frames */
            uint32_t base = AOT_FRAME_BASE(f.flags);
            if (base >= i || (aot_bundle_frame(b, base).flags & AOT_FRAME_FLAG_PREFIX))
                return CORRUPT("frame %u: prefix frame %u is not an earlier, unchained frame", i, base);
        }
    }
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status check_kernels(const aot_bundle *b, aot_diag *d)
{
    for (uint32_t i = 0; i < b->kernels; i++) {
        aot_kernel_rec k = aot_bundle_kernel(b, i);
        if (!string_ok(b, k.name)) return CORRUPT("kernel %u: bad name string", i);
        if (k.arg_first > b->args || k.arg_count > b->args - k.arg_first)
            return CORRUPT("kernel %u: argument range outside the table", i);
    }
    for (uint32_t i = 0; i < b->args; i++) {
        aot_arg_rec a = aot_bundle_arg(b, i);
        if (!string_ok(b, a.kind) || !string_ok(b, a.name))
            return CORRUPT("argument %u: bad string", i);
    }
    return AITER_AOT_STATUS_OK;
}

/* Entries come in (frame, module) order, each module once per frame, and their kernel ranges
 * follow one another without overlapping: the loader sizes its table by the kernel count and
 * fills it entry by entry, so overlapping ranges would write past it. */
static aiter_aot_status check_entry_order(const aot_bundle *b, uint32_t i, aot_entry_rec e, aot_diag *d)
{
    aot_entry_rec prev = aot_bundle_entry(b, i - 1);
    if (e.frame < prev.frame ||
        (e.frame == prev.frame && strcmp(aot_bundle_string(b, prev.name), aot_bundle_string(b, e.name)) >= 0))
        return CORRUPT("entry %u: entries not sorted by frame and module, or a module twice", i);
    if (e.kernel_first < prev.kernel_first + prev.kernel_count)
        return CORRUPT("entry %u: kernel range overlaps entry %u's", i, i - 1);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status check_entries(const aot_bundle *b, aot_diag *d)
{
    for (uint32_t i = 0; i < b->entries; i++) {
        aot_entry_rec e = aot_bundle_entry(b, i);
        if (!string_ok(b, e.name) || !aot_bundle_module_name_ok(aot_bundle_string(b, e.name)))
            return CORRUPT("entry %u: module name is not [A-Za-z0-9_.-]{1,63} (or starts with '.')", i);
        if (!target_ok(b, e.target)) return CORRUPT("entry %u: target is not a canonical target ID", i);
        if (e.kind != AOT_KIND_AMDGPU && e.kind != AOT_KIND_CUBIN)
            return CORRUPT("entry %u: unknown code-object kind %u", i, e.kind);
        if (e.frame >= b->frames) return CORRUPT("entry %u: frame %u does not exist", i, e.frame);
        aot_frame_rec f = aot_bundle_frame(b, e.frame);
        if (e.offset > f.usize || e.size > f.usize - e.offset)
            return CORRUPT("entry %u: bytes lie outside frame %u", i, e.frame);
        if (strcmp(aot_bundle_string(b, e.target), aot_bundle_string(b, f.target)) != 0)
            return CORRUPT("entry %u: target differs from its frame's", i);
        if (e.kernel_first > b->kernels || e.kernel_count > b->kernels - e.kernel_first)
            return CORRUPT("entry %u: kernel range outside the table", i);
        if (i > 0) AOT_FORWARD(check_entry_order(b, i, e, d));
    }
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_bundle_open(aot_bundle *b, const void *data, size_t size, aot_diag *d)
{
    memset(b, 0, sizeof *b);
    if (data == NULL) return CORRUPT("no bundle data");
    const unsigned char *p = data;
    AOT_FORWARD(read_header(b, p, size, d));
    b->base = p;
    uint64_t h = aot_bundle_meta_hash(p, b->meta_end);
    if (h != b->meta_hash) return CORRUPT("header/index hash mismatch (bundle is corrupt)");
    if (p[b->strings_off] != 0) return CORRUPT("string table does not start with \"\"");
    AOT_FORWARD(check_frames(b, d));
    AOT_FORWARD(check_kernels(b, d));
    return check_entries(b, d);
}

aiter_aot_status aot_bundle_find(aot_bundle *b, const void *data, size_t size, aot_diag *d)
{
    const unsigned char *p = data, *end = p + size;
    aiter_aot_status s = CORRUPT("no aiter-aot bundle found");
    /* A candidate whose header reads may hash up to 16 MiB of index: bounding those bounds
     * the work (a file of nothing but such headers was quadratic). Magic strings that are not
     * a header (the reader's own string literal) cost nothing and are not counted. */
    int hashed = 0;
    while (p != NULL && end - p >= AOT_HEADER_SIZE) {
        p = memmem(p, (size_t)(end - p), AOT_BUNDLE_MAGIC, 8);
        if (p == NULL) break;
        aot_bundle probe;
        if (read_header(&probe, p, (size_t)(end - p), d) == AITER_AOT_STATUS_OK && ++hashed > AOT_MAX_FIND_CANDIDATES)
            return CORRUPT("no valid bundle among the first %d candidate headers", AOT_MAX_FIND_CANDIDATES);
        s = aot_bundle_open(b, p, (size_t)(end - p), d);
        if (s == AITER_AOT_STATUS_OK) return s;
        p++;
    }
    return s;
}

/* Starts decoding frame i into a new buffer of usize bytes; `prefix` is the base frame's bytes
 * for a chained frame. Output goes straight into that buffer (ZSTD_d_stableOutBuffer): no
 * window buffer, whatever window the frame declares. */
static aiter_aot_status decoder_start(aot_frame_decoder *fd, const aot_bundle *b, uint32_t i,
                                      const unsigned char *prefix, size_t prefix_size, aot_diag *d)
{
    aot_frame_rec f = aot_bundle_frame(b, i);
    unsigned long long content = ZSTD_getFrameContentSize(b->base + f.offset, (size_t)f.csize);
    if (content != f.usize)
        return CORRUPT("frame %u: zstd content size %llu, index says %llu", i, content,
                       (unsigned long long)f.usize);
    fd->bundle = b, fd->frame = i, fd->size = (size_t)f.usize;
    fd->src = b->base + f.offset, fd->src_size = (size_t)f.csize;
    fd->bytes = malloc(fd->size ? fd->size : 1);
    ZSTD_DCtx *dctx = fd->bytes ? ZSTD_createDCtx() : NULL;
    if (dctx == NULL)
        return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "frame %u: cannot allocate %llu bytes",
                        i, (unsigned long long)f.usize);
    fd->dctx = dctx;
    size_t r = ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, 1);
    if (!ZSTD_isError(r)) r = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 30); /* usize <= 1 GiB */
    if (!ZSTD_isError(r) && (f.flags & AOT_FRAME_FLAG_DICT))
        r = ZSTD_DCtx_loadDictionary(dctx, b->base + b->dict_off, b->dict_size);
    if (!ZSTD_isError(r) && prefix) r = ZSTD_DCtx_refPrefix(dctx, prefix, prefix_size);
    if (ZSTD_isError(r))
        return CORRUPT("frame %u (%s): decompression failed: %s", i, aot_bundle_string(b, f.target),
                       ZSTD_getErrorName(r));
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_frame_decoder_open(aot_frame_decoder *fd, const aot_bundle *b, uint32_t i,
                                        aot_diag *d)
{
    memset(fd, 0, sizeof *fd);
    if (i >= b->frames) return CORRUPT("frame %u does not exist", i);
    aot_frame_rec f = aot_bundle_frame(b, i);
    aiter_aot_status s = AITER_AOT_STATUS_OK;
    if (f.flags & AOT_FRAME_FLAG_PREFIX) { /* the base frame is not chained (open checked) */
        aot_frame_decoder base;
        uint32_t bi = AOT_FRAME_BASE(f.flags);
        s = aot_frame_decoder_open(&base, b, bi, d);
        while (s == AITER_AOT_STATUS_OK && !base.done) s = aot_frame_decoder_step(&base, SIZE_MAX, d);
        fd->prefix = base.bytes, fd->prefix_size = base.size;
        base.bytes = NULL;
        aot_frame_decoder_close(&base);
    }
    if (s == AITER_AOT_STATUS_OK) s = decoder_start(fd, b, i, fd->prefix, fd->prefix_size, d);
    if (s != AITER_AOT_STATUS_OK) aot_frame_decoder_close(fd);
    return s;
}

aiter_aot_status aot_frame_decoder_step(aot_frame_decoder *fd, size_t chunk, aot_diag *d)
{
    if (fd->done) return AITER_AOT_STATUS_OK;
    const char *target = aot_bundle_string(fd->bundle, aot_bundle_frame(fd->bundle, fd->frame).target);
    size_t n = fd->src_size - fd->src_pos < chunk ? fd->src_size - fd->src_pos : chunk;
    ZSTD_inBuffer in = {fd->src, fd->src_pos + n, fd->src_pos};
    ZSTD_outBuffer out = {fd->bytes, fd->size, fd->ready};
    size_t r = ZSTD_decompressStream(fd->dctx, &out, &in);
    int progress = in.pos != fd->src_pos || out.pos != fd->ready;
    fd->src_pos = in.pos, fd->ready = out.pos;
    if (ZSTD_isError(r))
        return CORRUPT("frame %u (%s): decompression failed: %s", fd->frame, target, ZSTD_getErrorName(r));
    if (r == 0) { /* the zstd frame ended: it must fill the buffer and be all of csize */
        if (fd->ready != fd->size || fd->src_pos != fd->src_size)
            return CORRUPT("frame %u (%s): decompression failed: the zstd frame ends after %zu of %zu "
                           "bytes (%zu of %zu decoded)", fd->frame, target, fd->src_pos, fd->src_size,
                           fd->ready, fd->size);
        fd->done = 1;
    } else if (fd->src_pos == fd->src_size || !progress) {
        return CORRUPT("frame %u (%s): decompression failed: the zstd frame is truncated (%zu of %zu "
                       "bytes decoded)", fd->frame, target, fd->ready, fd->size);
    }
    return AITER_AOT_STATUS_OK;
}

void aot_frame_decoder_close(aot_frame_decoder *fd)
{
    ZSTD_freeDCtx(fd->dctx);
    free(fd->prefix);
    free(fd->bytes);
    memset(fd, 0, sizeof *fd);
}

aiter_aot_status aot_bundle_decompress_frame(const aot_bundle *b, uint32_t i, unsigned char **out,
                                             aot_diag *d)
{
    aot_frame_decoder fd;
    *out = NULL;
    aiter_aot_status s = aot_frame_decoder_open(&fd, b, i, d);
    while (s == AITER_AOT_STATUS_OK && !fd.done) s = aot_frame_decoder_step(&fd, SIZE_MAX, d);
    if (s == AITER_AOT_STATUS_OK) *out = fd.bytes, fd.bytes = NULL;
    aot_frame_decoder_close(&fd);
    return s;
}

/* [off, off + len) lies inside size bytes (no overflow). */
static int within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* See bundle.h. A GPU driver takes only a pointer and reads as far as those headers say, and a
 * hostile bundle writes the entry's hash too. */
const char *aot_elf_extent_fault(const unsigned char *p, uint64_t size)
{
    if (size < 64 || memcmp(p, "\177ELF\2\1", 6) != 0) return "not an ELF64 little-endian image";
    uint64_t phoff = get64(p + 32), shoff = get64(p + 40);
    unsigned phentsize = get16(p + 54), phnum = get16(p + 56), shentsize = get16(p + 58), shnum = get16(p + 60);
    if (shnum == 0 && shoff != 0) return "extended section numbering";
    if ((phnum && (phentsize != 56 || !within(phoff, 56ull * phnum, size))) ||
        (shnum && (shentsize != 64 || !within(shoff, 64ull * shnum, size))))
        return "header tables past its end";
    for (unsigned i = 0; i < phnum; i++)
        if (!within(get64(p + phoff + 56ull * i + 8), get64(p + phoff + 56ull * i + 32), size))
            return "a segment past its end";
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + 64ull * i;
        if (get32(sh + 4) != 8 /* SHT_NOBITS */ && !within(get64(sh + 24), get64(sh + 32), size))
            return "a section past its end";
    }
    return NULL;
}

aiter_aot_status aot_bundle_check_entry_hash(const aot_bundle *b, uint32_t i,
                                             const unsigned char *frame_bytes, aot_diag *d)
{
    aot_entry_rec e = aot_bundle_entry(b, i);
    if (aot_xxh64(frame_bytes + e.offset, (size_t)e.size, 0) != e.hash)
        return CORRUPT("entry %u (%s for %s): content hash mismatch", i,
                       aot_bundle_string(b, e.name), aot_bundle_string(b, e.target));
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_bundle_check_entry(const aot_bundle *b, uint32_t i,
                                        const unsigned char *frame_bytes, aot_diag *d)
{
    aot_entry_rec e = aot_bundle_entry(b, i);
    AOT_FORWARD(aot_bundle_check_entry_hash(b, i, frame_bytes, d));
    const char *fault = aot_elf_extent_fault(frame_bytes + e.offset, e.size);
    if (fault)
        return CORRUPT("entry %u (%s for %s): %s (%llu bytes)", i, aot_bundle_string(b, e.name),
                       aot_bundle_string(b, e.target), fault, (unsigned long long)e.size);
    return AITER_AOT_STATUS_OK;
}
