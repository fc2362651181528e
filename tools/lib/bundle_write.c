/* bundle_write.c : see bundle_write.h. The only code that lays out a bundle. */
#include "bundle_write.h"

#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

#include "bundle.h"
#include "hash.h"

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---- string table ---- */

typedef struct {
    char *buf;
    size_t len, cap;
} strtab;

static uint32_t strtab_add(strtab *t, const char *s)
{
    size_t n = strlen(s) + 1;
    for (size_t off = 0; off < t->len; off += strlen(t->buf + off) + 1)
        if (strcmp(t->buf + off, s) == 0) return (uint32_t)off;
    if (t->len + n > t->cap) {
        size_t cap = (t->cap + n) * 2;
        char *b = realloc(t->buf, cap);
        if (b == NULL) return UINT32_MAX;
        t->buf = b, t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return (uint32_t)(t->len - n);
}

/* ---- grouping ---- */

static int item_order(const void *a, const void *b)
{
    const aot_pack_item *x = a, *y = b;
    int c = strcmp(x->co.target, y->co.target);
    return c ? c : strcmp(x->module, y->module);
}

typedef struct {
    size_t first, count;   /* items */
    unsigned char *blob;   /* concatenated code objects */
    size_t usize;
    unsigned char *z;      /* compressed */
    size_t csize;
    const char *target;
    int base;              /* frame whose bytes were the zstd prefix, or -1 */
} frame_build;

static aiter_aot_status build_blobs(aot_pack_item *items, size_t n, frame_build *fr, size_t *nf,
                                    uint64_t *offsets, aot_diag *d)
{
    size_t f = 0, all = 0;
    for (size_t i = 0; i < n; f++) {
        *nf = f; /* the frames built so far, for the caller to free on an error */
        size_t j = i, total = 0;
        while (j < n && strcmp(items[j].co.target, items[i].co.target) == 0) {
            offsets[j] = total;
            total += pad8(items[j].size);
            j++;
        }
        all += total; /* the reader refuses more than AOT_MAX_TOTAL_USIZE over all frames */
        if (total > AOT_MAX_FRAME_USIZE || all > AOT_MAX_TOTAL_USIZE)
            return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                            "target %s: %zu bytes of code objects (%zu so far); a bundle holds at most 1 GiB "
                            "(split the modules into several bundles)", items[i].co.target, total, all);
        fr[f] = (frame_build){i, j - i, calloc(total ? total : 1, 1), total, NULL, 0, items[i].co.target, -1};
        if (fr[f].blob == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (size_t k = i; k < j; k++) memcpy(fr[f].blob + offsets[k], items[k].bytes, items[k].size);
        i = j;
    }
    *nf = f;
    return AITER_AOT_STATUS_OK;
}

static unsigned window_log(size_t usize)
{
    unsigned w = 10;
    while (w < 27 && ((size_t)1 << w) < usize) w++;
    return w;
}

/* One zstd frame of `src`, with an optional dictionary or raw prefix. @return its size, 0 on error. */
static size_t compress_one(ZSTD_CCtx *cctx, int level, const unsigned char *src, size_t n, const void *dict,
                           size_t dict_size, const unsigned char *prefix, size_t prefix_size, unsigned char **out)
{
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, (int)window_log(n + prefix_size));
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    if (dict) ZSTD_CCtx_loadDictionary(cctx, dict, dict_size);
    if (prefix) ZSTD_CCtx_refPrefix(cctx, prefix, prefix_size);
    size_t cap = ZSTD_compressBound(n);
    *out = malloc(cap);
    size_t r = *out ? ZSTD_compress2(cctx, *out, cap, src, n) : 0;
    if (*out == NULL || ZSTD_isError(r)) return free(*out), *out = NULL, 0;
    return r;
}

/* Same vendor (the triple before "--"), so their code objects look alike. */
static int same_vendor(const char *a, const char *b)
{
    size_t n = strcspn(a, "-");
    return strncmp(a, b, n) == 0 && b[n] == '-';
}

/* Compresses every frame; a frame whose vendor matches an earlier unchained frame is also
 * tried with that frame's bytes as prefix (gfx950 after gfx942), and the smaller kept. */
static aiter_aot_status compress_frames(frame_build *fr, size_t nf, int level, const void *dict,
                                        size_t dict_size, size_t *total, aot_diag *d)
{
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (cctx == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    *total = 0;
    for (size_t f = 0; f < nf; f++) {
        free(fr[f].z);
        fr[f].base = -1;
        fr[f].csize = compress_one(cctx, level, fr[f].blob, fr[f].usize, dict, dict_size, NULL, 0, &fr[f].z);
        for (size_t b = 0; b < f && fr[f].z; b++) {
            if (fr[b].base >= 0 || !same_vendor(fr[b].target, fr[f].target)) continue;
            unsigned char *z;
            size_t n = compress_one(cctx, level, fr[f].blob, fr[f].usize, NULL, 0, fr[b].blob, fr[b].usize, &z);
            if (n && n < fr[f].csize) free(fr[f].z), fr[f].z = z, fr[f].csize = n, fr[f].base = (int)b;
            else free(z);
            break;
        }
        if (fr[f].z == NULL) {
            ZSTD_freeCCtx(cctx);
            return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "compression failed");
        }
        *total += pad8(fr[f].csize);
    }
    ZSTD_freeCCtx(cctx);
    return AITER_AOT_STATUS_OK;
}

/* Trains a dictionary on 4 KiB pieces of every code object. @return its size, 0 if none. */
static size_t train_dict(const aot_pack_item *items, size_t n, unsigned char **dict)
{
    enum { PIECE = 4096 };
    size_t total = 0, pieces = 0;
    for (size_t i = 0; i < n; i++) total += items[i].size, pieces += (items[i].size + PIECE - 1) / PIECE;
    *dict = NULL;
    if (pieces < 16 || total < 64 * 1024) return 0;
    unsigned char *samples = malloc(total);
    size_t *sizes = malloc(pieces * sizeof *sizes), cap = total / 8 < 112640 ? total / 8 : 112640;
    *dict = malloc(cap);
    size_t k = 0, off = 0, r = 0;
    if (samples && sizes && *dict) {
        for (size_t i = 0; i < n; i++) {
            memcpy(samples + off, items[i].bytes, items[i].size);
            for (size_t p = 0; p < items[i].size; p += PIECE)
                sizes[k++] = items[i].size - p < PIECE ? items[i].size - p : PIECE;
            off += items[i].size;
        }
        r = ZDICT_trainFromBuffer(*dict, cap, samples, sizes, (unsigned)k);
    }
    free(samples);
    free(sizes);
    if (!*dict || ZDICT_isError(r)) r = 0;
    if (r == 0) free(*dict), *dict = NULL;
    return r;
}

/* ---- layout ---- */

typedef struct {
    aot_bundle h;
    strtab st;
    unsigned char *dict;
    size_t nf;
    frame_build *fr;
    uint64_t *item_offset;
} pack_state;

static uint32_t count_kernels(const aot_pack_item *items, size_t n, uint32_t *args)
{
    uint32_t k = 0;
    *args = 0;
    for (size_t i = 0; i < n; i++) {
        k += items[i].co.nkernels;
        for (unsigned j = 0; j < items[i].co.nkernels; j++) *args += items[i].co.kernels[j].nargs;
    }
    return k;
}

static void write_tables(pack_state *s, aot_pack_item *items, unsigned char *out)
{
    unsigned char *ep = out + s->h.entries_off, *kp = out + s->h.kernels_off;
    unsigned char *ap = out + s->h.args_off;
    uint32_t kernel = 0, arg = 0;
    for (size_t f = 0; f < s->nf; f++) {
        for (size_t i = s->fr[f].first; i < s->fr[f].first + s->fr[f].count; i++) {
            const aot_codeobj *co = &items[i].co;
            aot_entry_rec e = {strtab_add(&s->st, items[i].module), strtab_add(&s->st, co->target),
                               (uint16_t)co->kind, (uint16_t)co->abi, co->e_flags, (uint32_t)f,
                               kernel, co->nkernels, s->item_offset[i], items[i].size,
                               aot_xxh64(items[i].bytes, items[i].size, 0)};
            aot_encode_entry(ep, &e), ep += AOT_ENTRY_SIZE;
            for (unsigned k = 0; k < co->nkernels; k++, kernel++) {
                aot_kernel_rec r = co->kernels[k].rec;
                r.name = strtab_add(&s->st, co->kernels[k].name);
                r.arg_first = arg, r.arg_count = co->kernels[k].nargs;
                aot_encode_kernel(kp, &r), kp += AOT_KERNEL_SIZE;
                for (unsigned a = 0; a < r.arg_count; a++, arg++) {
                    const aot_co_arg *ca = &co->kernels[k].args[a];
                    aot_arg_rec ar = {ca->offset, ca->size, strtab_add(&s->st, ca->kind),
                                      strtab_add(&s->st, ca->name)};
                    aot_encode_arg(ap, &ar), ap += AOT_ARG_SIZE;
                }
            }
        }
    }
}

static void intern_strings(pack_state *s, aot_pack_item *items, size_t n)
{
    strtab_add(&s->st, "");
    for (size_t i = 0; i < n; i++) {
        strtab_add(&s->st, items[i].module);
        strtab_add(&s->st, items[i].co.target);
        for (unsigned k = 0; k < items[i].co.nkernels; k++) {
            strtab_add(&s->st, items[i].co.kernels[k].name);
            for (unsigned a = 0; a < items[i].co.kernels[k].nargs; a++) {
                strtab_add(&s->st, items[i].co.kernels[k].args[a].kind);
                strtab_add(&s->st, items[i].co.kernels[k].args[a].name);
            }
        }
    }
}

static aiter_aot_status emit(pack_state *s, aot_pack_item *items, size_t n, size_t payload,
                             unsigned char **out, size_t *out_size, aot_diag *d)
{
    aot_bundle *h = &s->h;
    intern_strings(s, items, n);
    h->version = AOT_BUNDLE_VERSION;
    h->entries = (uint32_t)n;
    h->kernels = count_kernels(items, n, &h->args);
    h->frames = (uint32_t)s->nf;
    h->strings_size = (uint32_t)s->st.len;
    h->flags = h->dict_size ? AOT_BUNDLE_FLAG_DICT : 0;
    aot_bundle_place_tables(h);
    h->size = h->meta_end + payload;
    unsigned char *b = calloc(h->size, 1);
    if (b == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    write_tables(s, items, b);
    size_t at = h->meta_end;
    for (size_t f = 0; f < s->nf; f++) {
        uint32_t flags = s->fr[f].base >= 0 ? AOT_FRAME_FLAG_PREFIX | (uint32_t)s->fr[f].base << 16
                         : h->dict_size ? AOT_FRAME_FLAG_DICT : 0;
        aot_frame_rec fr = {at, s->fr[f].csize, s->fr[f].usize, flags,
                            strtab_add(&s->st, items[s->fr[f].first].co.target)};
        aot_encode_frame(b + h->frames_off + f * AOT_FRAME_SIZE, &fr);
        memcpy(b + at, s->fr[f].z, s->fr[f].csize);
        at += pad8(s->fr[f].csize);
    }
    memcpy(b + h->strings_off, s->st.buf, s->st.len);
    if (h->dict_size) memcpy(b + h->dict_off, s->dict, h->dict_size);
    aot_encode_header(b, h);
    h->meta_hash = aot_bundle_meta_hash(b, h->meta_end);
    aot_encode_header(b, h);
    *out = b;
    *out_size = h->size;
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status check_duplicates(const aot_pack_item *items, size_t n, aot_diag *d)
{
    for (size_t i = 0; i < n; i++) /* what the reader would refuse is not written */
        if (!aot_bundle_module_name_ok(items[i].module))
            return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                            "%s: module name \"%s\" is not [A-Za-z0-9_.-]{1,63}", items[i].path, items[i].module);
    for (size_t i = 1; i < n; i++)
        if (item_order(&items[i - 1], &items[i]) == 0)
            return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                            "duplicate: module %s for %s is given twice (%s and %s)",
                            items[i].module, items[i].co.target, items[i - 1].path, items[i].path);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status choose_compression(pack_state *s, aot_pack_item *items, size_t n,
                                           const aot_pack_options *o, size_t *payload, aot_diag *d)
{
    size_t plain = 0, with_dict = 0;
    if (o->dict != AOT_DICT_ALWAYS) AOT_FORWARD(compress_frames(s->fr, s->nf, o->level, NULL, 0, &plain, d));
    if (o->dict == AOT_DICT_NONE) {
        *payload = plain;
        return AITER_AOT_STATUS_OK;
    }
    size_t ds = train_dict(items, n, &s->dict);
    if (ds == 0) {
        if (o->dict == AOT_DICT_ALWAYS)
            return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                            "too little input to train a dictionary (need 64 KiB of code objects)");
        *payload = plain;
        return AITER_AOT_STATUS_OK;
    }
    AOT_FORWARD(compress_frames(s->fr, s->nf, o->level, s->dict, ds, &with_dict, d));
    if (o->dict == AOT_DICT_ALWAYS || with_dict + pad8(ds) < plain) {
        s->h.dict_size = (uint32_t)ds;
        *payload = with_dict;
        return AITER_AOT_STATUS_OK;
    }
    free(s->dict), s->dict = NULL;
    return compress_frames(s->fr, s->nf, o->level, NULL, 0, payload, d);
}

aiter_aot_status aot_bundle_write(aot_pack_item *items, size_t n, const aot_pack_options *opt,
                                  unsigned char **out, size_t *out_size, aot_diag *d)
{
    aot_pack_options o = opt ? *opt : (aot_pack_options){AOT_PACK_DEFAULT_LEVEL, AOT_DICT_AUTO};
    if (o.level < 1 || o.level > 22)
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "zstd level %d is not in 1..22", o.level);
    qsort(items, n, sizeof *items, item_order);
    AOT_FORWARD(check_duplicates(items, n, d));
    pack_state s;
    memset(&s, 0, sizeof s);
    s.fr = calloc(n ? n : 1, sizeof *s.fr);
    s.item_offset = calloc(n ? n : 1, sizeof *s.item_offset);
    size_t payload = 0;
    aiter_aot_status st = s.fr && s.item_offset
                              ? build_blobs(items, n, s.fr, &s.nf, s.item_offset, d)
                              : aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st == AITER_AOT_STATUS_OK) st = choose_compression(&s, items, n, &o, &payload, d);
    if (st == AITER_AOT_STATUS_OK) st = emit(&s, items, n, payload, out, out_size, d);
    for (size_t f = 0; s.fr && f < s.nf; f++) free(s.fr[f].blob), free(s.fr[f].z);
    free(s.fr), free(s.item_offset), free(s.st.buf), free(s.dict);
    return st;
}
