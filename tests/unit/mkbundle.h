/* mkbundle.h : hand-made bundles for tests and fuzz seeds. The caller states every record,
 * hostile or not; this lays out the tables, compresses each frame's bytes with zstd and
 * writes the index hash, so that only what the caller chose is wrong. */
#ifndef AOT_TEST_MKBUNDLE_H
#define AOT_TEST_MKBUNDLE_H

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bundle.h"
#include "hash.h"

typedef struct { const char *target; const void *bytes; size_t size; } mkb_frame;
typedef struct { const char *name, *target; uint32_t frame, kernel_first, kernel_count, offset, size; } mkb_entry;

typedef struct {
    const mkb_frame *frames; uint32_t nframes;
    const mkb_entry *entries; uint32_t nentries;
    const char *const *kernels; uint32_t nkernels;
} mkb_spec;

static uint32_t mkb_str(char *tab, size_t *len, const char *s)
{
    for (size_t at = 0; at < *len; at += strlen(tab + at) + 1)
        if (strcmp(tab + at, s) == 0) return (uint32_t)at;
    uint32_t at = (uint32_t)*len;
    memcpy(tab + at, s, strlen(s) + 1), *len += strlen(s) + 1;
    return at;
}

/* @return a malloc'ed bundle of *size bytes, or NULL (strings over 8 KiB, out of memory). */
static unsigned char *mkb_build(const mkb_spec *s, size_t *size)
{
    char tab[8192] = "";
    size_t len = 1, zcap = 0;
    for (uint32_t i = 0; i < s->nentries; i++)
        if (strlen(s->entries[i].name) + strlen(s->entries[i].target) + len + 2 > sizeof tab) return NULL;
    for (uint32_t i = 0; i < s->nframes; i++) zcap += ZSTD_compressBound(s->frames[i].size) + 8;
    aot_bundle h = {0};
    h.version = AOT_BUNDLE_VERSION, h.entries = s->nentries, h.kernels = s->nkernels, h.frames = s->nframes;
    uint32_t *fs = calloc(s->nframes + 1, sizeof *fs), *es = calloc(2 * s->nentries + 1, sizeof *es);
    uint32_t *ks = calloc(s->nkernels + 1, sizeof *ks);
    for (uint32_t i = 0; i < s->nframes; i++) fs[i] = mkb_str(tab, &len, s->frames[i].target);
    for (uint32_t i = 0; i < s->nentries; i++)
        es[2 * i] = mkb_str(tab, &len, s->entries[i].name), es[2 * i + 1] = mkb_str(tab, &len, s->entries[i].target);
    for (uint32_t i = 0; i < s->nkernels; i++) ks[i] = mkb_str(tab, &len, s->kernels[i]);
    h.strings_size = (uint32_t)len;
    aot_bundle_place_tables(&h);
    unsigned char *b = calloc(h.meta_end + zcap + 8, 1);
    size_t at = h.meta_end;
    for (uint32_t i = 0; i < s->nframes; i++) {
        size_t z = ZSTD_compress(b + at, zcap - (at - h.meta_end), s->frames[i].bytes, s->frames[i].size, 3);
        aot_frame_rec f = {at, z, s->frames[i].size, 0, fs[i]};
        aot_encode_frame(b + h.frames_off + (size_t)i * AOT_FRAME_SIZE, &f);
        at += (z + 7) & ~(size_t)7;
    }
    for (uint32_t i = 0; i < s->nentries; i++) {
        const mkb_entry *e = &s->entries[i];
        const unsigned char *fb = s->frames[e->frame < s->nframes ? e->frame : 0].bytes;
        aot_entry_rec r = {es[2 * i], es[2 * i + 1], AOT_KIND_AMDGPU, 5, 0, e->frame, e->kernel_first,
                           e->kernel_count, e->offset, e->size, aot_xxh64(fb + e->offset, e->size, 0)};
        aot_encode_entry(b + h.entries_off + (size_t)i * AOT_ENTRY_SIZE, &r);
    }
    for (uint32_t i = 0; i < s->nkernels; i++) {
        aot_kernel_rec k = {0};
        k.name = ks[i], k.wave_size = 64;
        aot_encode_kernel(b + h.kernels_off + (size_t)i * AOT_KERNEL_SIZE, &k);
    }
    memcpy(b + h.strings_off, tab, len);
    h.size = at;
    aot_encode_header(b, &h);
    h.meta_hash = aot_bundle_meta_hash(b, h.meta_end);
    aot_encode_header(b, &h);
    free(fs), free(es), free(ks);
    *size = at;
    return b;
}

#endif
