/* bundle_write.c : see bundle_write.h. The only code that lays out a bundle. */
#define _POSIX_C_SOURCE 200809L /* sysconf(_SC_NPROCESSORS_ONLN) */
#include "bundle_write.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

#include "bundle.h"
#include "hash.h"
#include "pack_cache.h"

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---- string table ---- */

/* The strings of a bundle, each once, in the order first added. An index of open addressing
 * finds a string already there (a scan of the table per string was quadratic: 65536 distinct
 * argument names took 34 s). */
typedef struct {
    char *buf;
    size_t len, cap;
    uint32_t *slot;    /* offset + 1 of a string, 0 for an empty slot */
    size_t nslots, nstrings;
    int out_of_memory; /* an add failed: the table lacks a string */
} strtab;

/* The slot holding s, or the empty slot where it goes. */
static size_t strtab_slot(const strtab *t, const char *s, size_t n)
{
    size_t i = (size_t)aot_xxh64(s, n, 0) & (t->nslots - 1);
    while (t->slot[i] && strcmp(t->buf + t->slot[i] - 1, s) != 0) i = (i + 1) & (t->nslots - 1);
    return i;
}

/* Doubles the index (at most half full, so probes stay short). @return 0, or -1 out of memory. */
static int strtab_grow_index(strtab *t)
{
    size_t n = t->nslots ? 2 * t->nslots : 1024;
    uint32_t *old = t->slot;
    size_t nold = t->nslots;
    if ((t->slot = calloc(n, sizeof *t->slot)) == NULL) return t->slot = old, -1;
    t->nslots = n;
    for (size_t i = 0; i < nold; i++)
        if (old[i]) t->slot[strtab_slot(t, t->buf + old[i] - 1, strlen(t->buf + old[i] - 1))] = old[i];
    free(old);
    return 0;
}

static uint32_t strtab_add(strtab *t, const char *s)
{
    size_t n = strlen(s) + 1;
    if (2 * (t->nstrings + 1) > t->nslots && strtab_grow_index(t)) return t->out_of_memory = 1, UINT32_MAX;
    size_t i = strtab_slot(t, s, n - 1);
    if (t->slot[i]) return t->slot[i] - 1;
    if (t->len + n > t->cap) {
        size_t cap = (t->cap + n) * 2;
        char *b = realloc(t->buf, cap);
        if (b == NULL) return t->out_of_memory = 1, UINT32_MAX;
        t->buf = b, t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->slot[i] = (uint32_t)(t->len + 1);
    t->nstrings++;
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
    const unsigned char *z; /* compressed: a job's result (pack_state.jobs owns it) */
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

/* ---- compression: every frame a pack may write is a job; jobs run on every core ---- */

/* One zstd frame of src, with an optional dictionary or raw prefix (the base frame's bytes).
 * z is the result, NULL until compressed; `owned` when z was malloc'ed here (not the cache's). */
typedef struct {
    const unsigned char *src, *prefix;
    size_t n, prefix_size;
    const void *dict;
    size_t dict_size;
    int level;
    const unsigned char *z;
    size_t zsize;
    int owned;
    size_t error; /* zstd's error code when compressing failed */
} zjob;

/* @return the frame's size, 0 on error (*out then NULL, *error zstd's code). */
static size_t compress_one(ZSTD_CCtx *cctx, const zjob *j, unsigned char **out, size_t *error)
{
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, j->level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, (int)window_log(j->n + j->prefix_size));
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    size_t r = j->dict ? ZSTD_CCtx_loadDictionary(cctx, j->dict, j->dict_size) : 0;
    if (!ZSTD_isError(r) && j->prefix) r = ZSTD_CCtx_refPrefix(cctx, j->prefix, j->prefix_size);
    size_t cap = ZSTD_compressBound(j->n);
    *out = ZSTD_isError(r) ? NULL : malloc(cap);
    if (*out) r = ZSTD_compress2(cctx, *out, cap, j->src, j->n);
    *error = ZSTD_isError(r) ? r : 0;
    if (*out == NULL || ZSTD_isError(r)) return free(*out), *out = NULL, 0;
    return r;
}

/* Does z decompress to exactly the job's source? Guards what the cache hands back. */
static int frame_matches(const zjob *j, const unsigned char *z, size_t zsize)
{
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    unsigned char *back = malloc(j->n ? j->n : 1);
    size_t r = dctx && back ? 0 : (size_t)-1;
    if (!ZSTD_isError(r) && j->dict) r = ZSTD_DCtx_loadDictionary(dctx, j->dict, j->dict_size);
    if (!ZSTD_isError(r) && j->prefix) r = ZSTD_DCtx_refPrefix(dctx, j->prefix, j->prefix_size);
    if (!ZSTD_isError(r)) r = ZSTD_decompressDCtx(dctx, back, j->n, z, zsize);
    int ok = !ZSTD_isError(r) && r == j->n && memcmp(back, j->src, j->n) == 0;
    ZSTD_freeDCtx(dctx);
    free(back);
    return ok;
}

/* The cache key of a job: everything the compressed bytes depend on, libzstd's version too. */
static uint64_t job_key(const zjob *j)
{
    uint64_t f[8] = {0x5a4a4f42u /* "ZJOB" */, ZSTD_versionNumber(), (uint64_t)j->level, j->n,
                     j->prefix_size, j->dict_size, aot_xxh64(j->src, j->n, 0),
                     aot_xxh64(j->prefix, j->prefix_size, 0) ^ aot_xxh64(j->dict, j->dict_size, 1)};
    return aot_xxh64(f, sizeof f, 0);
}

typedef struct {
    zjob *jobs;
    size_t *order; /* largest first, so that the longest job does not start last */
    size_t n;
    atomic_size_t next;
} zqueue;

typedef struct {
    size_t bytes, index; /* what a job compresses (with its prefix), and which job */
} job_size;

static int larger_first(const void *a, const void *b)
{
    const job_size *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Takes jobs off the queue until none is left; a failed job keeps z NULL. */
static void *compress_worker(void *arg)
{
    zqueue *q = arg;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    for (size_t i; cctx && (i = atomic_fetch_add(&q->next, 1)) < q->n;) {
        zjob *j = &q->jobs[q->order[i]];
        if (j->src == NULL || j->z != NULL) continue; /* not needed, or found in the cache */
        unsigned char *z;
        j->zsize = compress_one(cctx, j, &z, &j->error);
        j->z = z, j->owned = 1;
    }
    ZSTD_freeCCtx(cctx);
    return NULL;
}

/* The jobs in the order the workers take them: largest first (with its prefix), so that the
 * longest job does not start last. @return a malloc'ed permutation, NULL when out of memory. */
static size_t *job_order(const zjob *jobs, size_t n)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    job_size *by_size = malloc((n ? n : 1) * sizeof *by_size);
    for (size_t i = 0; order && by_size && i < n; i++) by_size[i] = (job_size){jobs[i].n + jobs[i].prefix_size, i};
    if (order && by_size) qsort(by_size, n, sizeof *by_size, larger_first);
    for (size_t i = 0; order && by_size && i < n; i++) order[i] = by_size[i].index;
    if (by_size == NULL) free(order), order = NULL;
    free(by_size);
    return order;
}

/* Compresses the jobs without a result on one thread per core, the calling one included. */
static aiter_aot_status compress_all(zjob *jobs, size_t n, aot_diag *d)
{
    zqueue q = {jobs, job_order(jobs, n), n, 0};
    if (q.order == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t helper[15];
    size_t helpers = 0;
    while ((long)helpers + 1 < cores && helpers + 1 < n && helpers < sizeof helper / sizeof helper[0] &&
           pthread_create(&helper[helpers], NULL, compress_worker, &q) == 0)
        helpers++;
    compress_worker(&q);
    for (size_t h = 0; h < helpers; h++) pthread_join(helper[h], NULL);
    free(q.order);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].src && jobs[i].z == NULL)
            return jobs[i].error ? aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "zstd compression of %zu bytes "
                                            "(level %d%s) failed: %s", jobs[i].n, jobs[i].level,
                                            jobs[i].dict ? ", with the dictionary" : "", ZSTD_getErrorName(jobs[i].error))
                                 : aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory compressing %zu bytes", jobs[i].n);
    return AITER_AOT_STATUS_OK;
}

/* Runs the jobs (those with a source): results from the cache where it has them and they
 * decompress to their source, the others compressed and then added to the cache. The bytes
 * do not depend on which. */
static aiter_aot_status run_jobs(zjob *jobs, size_t n, aot_pack_cache *cache, aot_diag *d)
{
    for (size_t i = 0; cache && i < n; i++) {
        const unsigned char *z;
        size_t zsize;
        if (jobs[i].src && aot_pack_cache_get(cache, job_key(&jobs[i]), &z, &zsize) == 0 &&
            frame_matches(&jobs[i], z, zsize))
            jobs[i].z = z, jobs[i].zsize = zsize, jobs[i].owned = 0;
    }
    AOT_FORWARD(compress_all(jobs, n, d));
    for (size_t i = 0; cache && i < n; i++)
        if (jobs[i].src && jobs[i].owned) AOT_FORWARD(aot_pack_cache_put(cache, job_key(&jobs[i]), jobs[i].z, jobs[i].zsize, d));
    return AITER_AOT_STATUS_OK;
}

/* Same vendor (the triple before "--"), so their code objects look alike. */
static int same_vendor(const char *a, const char *b)
{
    size_t n = strcspn(a, "-");
    return strncmp(a, b, n) == 0 && b[n] == '-';
}

/* The frame whose bytes frame f is also tried against as a zstd prefix: the first frame of the
 * same vendor (gfx942 for gfx950), or -1 when f is that frame. That first frame is never
 * chained itself (nothing of its vendor comes before it), as the format requires of a base. */
static int base_frame(const frame_build *fr, size_t f)
{
    for (size_t b = 0; b < f; b++)
        if (same_vendor(fr[b].target, fr[f].target)) return (int)b;
    return -1;
}

enum { PIECE = 4096, DICT_CAP = 112640 /* zstd's default dictionary size */ };

/* Is there too little input to train a dictionary on (train_dict makes none)? */
static int too_little_to_train(const aot_pack_item *items, size_t n, size_t *total, size_t *pieces)
{
    *total = 0, *pieces = 0;
    for (size_t i = 0; i < n; i++) *total += items[i].size, *pieces += (items[i].size + PIECE - 1) / PIECE;
    return *pieces < 16 || *total < 64 * 1024;
}

/* Trains a dictionary on 4 KiB pieces of every code object. @return its size, 0 if none. */
static size_t train_dict(const aot_pack_item *items, size_t n, unsigned char **dict)
{
    size_t total, pieces;
    *dict = NULL;
    if (too_little_to_train(items, n, &total, &pieces)) return 0;
    unsigned char *samples = malloc(total);
    size_t *sizes = malloc(pieces * sizeof *sizes), cap = total / 8 < DICT_CAP ? total / 8 : DICT_CAP;
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

/* Could train_dict have made this cache record? A trained dictionary is a zstd dictionary
 * (magic and entropy tables) of at most DICT_CAP bytes; "none" (size 0) is what too little
 * input gives. A record that could not be is retrained, as if absent: the cache must never
 * change what a pack writes, nor make it fail. */
static int cached_dict_ok(const aot_pack_item *items, size_t n, const unsigned char *dict, size_t size)
{
    size_t total, pieces;
    if (size == 0) return too_little_to_train(items, n, &total, &pieces);
    return size <= DICT_CAP && !ZDICT_isError(ZDICT_getDictHeaderSize(dict, size));
}

/* train_dict through the cache, keyed by every code object's bytes in order (a record of
 * size 0: too little input to train one). *size 0 and *dict NULL: no dictionary. */
static aiter_aot_status cached_dict(const aot_pack_item *items, size_t n, aot_pack_cache *cache,
                                    unsigned char **dict, size_t *size, aot_diag *d)
{
    uint64_t key = aot_xxh64("DICT", 4, ZSTD_versionNumber());
    for (size_t i = 0; i < n; i++) key = aot_xxh64(items[i].bytes, items[i].size, key);
    const unsigned char *hit;
    *dict = NULL;
    if (cache && aot_pack_cache_get(cache, key, &hit, size) == 0 && cached_dict_ok(items, n, hit, *size)) {
        if (*size == 0) return AITER_AOT_STATUS_OK;
        if ((*dict = malloc(*size)) == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(*dict, hit, *size);
        return AITER_AOT_STATUS_OK;
    }
    *size = train_dict(items, n, dict);
    return cache ? aot_pack_cache_put(cache, key, *dict ? (const void *)*dict : "", *size, d) : AITER_AOT_STATUS_OK;
}

/* ---- layout ---- */

typedef struct {
    aot_bundle h;
    strtab st;
    unsigned char *dict;
    size_t nf;
    frame_build *fr;
    zjob *jobs; /* 3 a frame: see frame_jobs */
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

/* The strings of every record, in the table before anything is compressed: a table the reader
 * would refuse stops the pack early. */
static aiter_aot_status check_strings(pack_state *s, aot_pack_item *items, size_t n, aot_diag *d)
{
    intern_strings(s, items, n);
    if (s->st.out_of_memory) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (s->st.len > AOT_MAX_STRINGS)
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                        "the names of modules, kernels and arguments take %zu bytes; a bundle's string table "
                        "holds at most %u (split the code objects into several bundles)", s->st.len, AOT_MAX_STRINGS);
    return AITER_AOT_STATUS_OK;
}

/* The reader refuses a table of more than AOT_MAX_COUNT records: so does the writer, naming the
 * code object that adds the most. */
static aiter_aot_status check_count(const char *what, size_t total, const aot_pack_item *most, size_t its,
                                    aot_diag *d)
{
    if (total <= AOT_MAX_COUNT) return AITER_AOT_STATUS_OK;
    return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                    "%zu %s in all (%zu of them from %s); a bundle holds at most %u (split the code objects "
                    "into several bundles)", total, what, its, most->path, AOT_MAX_COUNT);
}

static aiter_aot_status check_counts(const aot_pack_item *items, size_t n, aot_diag *d)
{
    size_t kernels = 0, args = 0, most_k = 0, most_a = 0, ik = 0, ia = 0;
    for (size_t i = 0; i < n; i++) {
        size_t a = 0;
        for (unsigned k = 0; k < items[i].co.nkernels; k++) a += items[i].co.kernels[k].nargs;
        kernels += items[i].co.nkernels, args += a;
        if (items[i].co.nkernels > most_k) most_k = items[i].co.nkernels, ik = i;
        if (a > most_a) most_a = a, ia = i;
    }
    if (n == 0) /* what a caller meant was never an empty bundle */
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "no code objects to pack");
    AOT_FORWARD(check_count("code objects", n, &items[n - 1], 1, d));
    AOT_FORWARD(check_count("kernels", kernels, &items[ik], most_k, d));
    return check_count("kernel arguments", args, &items[ia], most_a, d);
}

static aiter_aot_status emit(pack_state *s, aot_pack_item *items, size_t n, size_t payload,
                             unsigned char **out, size_t *out_size, aot_diag *d)
{
    aot_bundle *h = &s->h;
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

/* The jobs of frame f in s->jobs: [0] plain, [1] with the dictionary, [2] chained to its base
 * frame; a job a pack does not need has no source. */
static zjob *frame_jobs(pack_state *s, size_t f) { return &s->jobs[3 * f]; }

/* What frame f is written as: the smaller of its plain (or dictionary) form and its chained
 * form, the plain form on a tie. Sets z, csize and base. @return its padded size. */
static size_t pick(pack_state *s, size_t f, int with_dict)
{
    const zjob *j = frame_jobs(s, f), *own = &j[with_dict ? 1 : 0];
    frame_build *fr = &s->fr[f];
    int chain = j[2].src && j[2].zsize < own->zsize;
    fr->z = chain ? j[2].z : own->z;
    fr->csize = chain ? j[2].zsize : own->zsize;
    fr->base = chain ? base_frame(s->fr, f) : -1;
    return pad8(fr->csize);
}

/* Every frame compressed the ways the mode allows, all in one batch of jobs; then the
 * dictionary is kept when the mode says so, or (auto) when the bundle with it is smaller. */
static aiter_aot_status choose_compression(pack_state *s, aot_pack_item *items, size_t n,
                                           const aot_pack_options *o, size_t *payload, aot_diag *d)
{
    size_t ds = 0;
    if (o->dict != AOT_DICT_NONE) AOT_FORWARD(cached_dict(items, n, o->cache, &s->dict, &ds, d));
    if (ds == 0 && o->dict == AOT_DICT_ALWAYS)
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                        "too little input to train a dictionary (need 64 KiB of code objects)");
    if ((s->jobs = calloc(3 * s->nf, sizeof *s->jobs)) == NULL)
        return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t f = 0; f < s->nf; f++) {
        zjob *j = frame_jobs(s, f), plain = {s->fr[f].blob, NULL, s->fr[f].usize, 0, NULL, 0, o->level, NULL, 0, 0, 0};
        int b = base_frame(s->fr, f);
        if (o->dict != AOT_DICT_ALWAYS) j[0] = plain;
        if (ds) j[1] = plain, j[1].dict = s->dict, j[1].dict_size = ds;
        if (b >= 0) j[2] = plain, j[2].prefix = s->fr[b].blob, j[2].prefix_size = s->fr[b].usize;
    }
    AOT_FORWARD(run_jobs(s->jobs, 3 * s->nf, o->cache, d));
    size_t plain = 0, with_dict = 0;
    for (size_t f = 0; f < s->nf; f++) {
        if (o->dict != AOT_DICT_ALWAYS) plain += pick(s, f, 0);
        if (ds) with_dict += pick(s, f, 1);
    }
    int use_dict = ds && (o->dict == AOT_DICT_ALWAYS || with_dict + pad8(ds) < plain);
    *payload = 0;
    for (size_t f = 0; f < s->nf; f++) *payload += pick(s, f, use_dict);
    s->h.dict_size = use_dict ? (uint32_t)ds : 0;
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_bundle_write(aot_pack_item *items, size_t n, const aot_pack_options *opt,
                                  unsigned char **out, size_t *out_size, aot_diag *d)
{
    aot_pack_options o = opt ? *opt : (aot_pack_options){AOT_PACK_DEFAULT_LEVEL, AOT_DICT_AUTO, NULL};
    if (o.level < 1 || o.level > 22)
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "zstd level %d is not in 1..22", o.level);
    qsort(items, n, sizeof *items, item_order);
    AOT_FORWARD(check_duplicates(items, n, d));
    AOT_FORWARD(check_counts(items, n, d));
    pack_state s;
    memset(&s, 0, sizeof s);
    s.fr = calloc(n ? n : 1, sizeof *s.fr);
    s.item_offset = calloc(n ? n : 1, sizeof *s.item_offset);
    size_t payload = 0;
    aiter_aot_status st = s.fr && s.item_offset
                              ? build_blobs(items, n, s.fr, &s.nf, s.item_offset, d)
                              : aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st == AITER_AOT_STATUS_OK) st = check_strings(&s, items, n, d);
    if (st == AITER_AOT_STATUS_OK) st = choose_compression(&s, items, n, &o, &payload, d);
    if (st == AITER_AOT_STATUS_OK) st = emit(&s, items, n, payload, out, out_size, d);
    for (size_t f = 0; s.fr && f < s.nf; f++) free(s.fr[f].blob);
    for (size_t j = 0; s.jobs && j < 3 * s.nf; j++)
        if (s.jobs[j].owned) free((void *)s.jobs[j].z);
    free(s.fr), free(s.jobs), free(s.item_offset), free(s.st.buf), free(s.st.slot), free(s.dict);
    return st;
}
