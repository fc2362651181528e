/* pack_cache.c : see pack_cache.h. Serialized form, little-endian: the magic "AOTPKC01", then
 * records of key (8 bytes), size (8), XXH64 of the payload (8) and the payload, zero-padded to
 * 8 bytes. Private to aot-bundle's builds: no compatibility is promised across versions (a
 * new magic simply starts an empty cache). */
#include "pack_cache.h"

#include <stdlib.h>
#include <string.h>

#include "bundle_format.h" /* AOT_MAX_COUNT */
#include "hash.h"

static const char MAGIC[8] = {'A', 'O', 'T', 'P', 'K', 'C', '0', '1'};
enum { RECORD_HEAD = 24 };
/* What one pack can need: three compressed forms of each of up to AOT_MAX_COUNT frames, and a
 * dictionary. A file with more records was not written by a pack; the rest is ignored. */
#define MAX_RECORDS (3 * (size_t)AOT_MAX_COUNT + 1)

typedef struct {
    uint64_t key;
    unsigned char *bytes;
    size_t size;
    int used;
} record;

struct aot_pack_cache {
    record *r;
    size_t n, cap;
    size_t sorted; /* r[0, sorted) is the parsed file, sorted by key; later puts follow */
};

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static int by_key(const void *a, const void *b)
{
    const record *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return memcmp(x->bytes, y->bytes, x->size); /* a repeated key: the order does not hang on malloc */
}

/* A binary search of the parsed records (a linear one per record made parsing quadratic),
 * then the few a pack added. */
static record *find(const aot_pack_cache *c, uint64_t key)
{
    size_t lo = 0, hi = c->sorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->r[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    if (lo < c->sorted && c->r[lo].key == key) return &c->r[lo];
    for (size_t i = c->sorted; i < c->n; i++)
        if (c->r[i].key == key) return &c->r[i];
    return NULL;
}

/* Sorts the parsed records by key and keeps one per key. */
static void index_parsed(aot_pack_cache *c)
{
    qsort(c->r, c->n, sizeof *c->r, by_key);
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (kept > 0 && c->r[kept - 1].key == c->r[i].key) free(c->r[i].bytes);
        else c->r[kept++] = c->r[i];
    }
    c->n = c->sorted = kept;
}

/* Appends a copy; `used` says whether serialize keeps it. @return 0, or -1 when out of memory. */
static int append(aot_pack_cache *c, uint64_t key, const void *bytes, size_t size, int used)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        record *g = realloc(c->r, cap * sizeof *g);
        if (g == NULL) return -1;
        c->r = g, c->cap = cap;
    }
    unsigned char *copy = malloc(size ? size : 1);
    if (copy == NULL) return -1;
    memcpy(copy, bytes, size);
    c->r[c->n++] = (record){key, copy, size, used};
    return 0;
}

aot_pack_cache *aot_pack_cache_parse(const unsigned char *data, size_t size)
{
    aot_pack_cache *c = calloc(1, sizeof *c);
    if (c == NULL || size < sizeof MAGIC || memcmp(data, MAGIC, sizeof MAGIC) != 0) return c;
    for (size_t at = sizeof MAGIC; size - at >= RECORD_HEAD && c->n < MAX_RECORDS;) {
        uint64_t key = get64(data + at), n = get64(data + at + 8), hash = get64(data + at + 16);
        if (n > size - at - RECORD_HEAD) break; /* truncated: keep what came before */
        const unsigned char *p = data + at + RECORD_HEAD;
        if (aot_xxh64(p, (size_t)n, 0) != hash) break;
        if (append(c, key, p, (size_t)n, 0) != 0) break;
        at += RECORD_HEAD + pad8((size_t)n);
        if (at > size) break;
    }
    index_parsed(c);
    return c;
}

void aot_pack_cache_free(aot_pack_cache *c)
{
    if (c == NULL) return;
    for (size_t i = 0; i < c->n; i++) free(c->r[i].bytes);
    free(c->r);
    free(c);
}

int aot_pack_cache_get(aot_pack_cache *c, uint64_t key, const unsigned char **bytes, size_t *size)
{
    record *r = find(c, key);
    if (r == NULL) return -1;
    r->used = 1;
    *bytes = r->bytes;
    *size = r->size;
    return 0;
}

aiter_aot_status aot_pack_cache_put(aot_pack_cache *c, uint64_t key, const void *bytes, size_t size,
                                    aot_diag *d)
{
    record *r = find(c, key);
    if (r != NULL) { /* a record that failed its check is replaced */
        unsigned char *copy = malloc(size ? size : 1);
        if (copy == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(copy, bytes, size);
        free(r->bytes);
        *r = (record){key, copy, size, 1};
        return AITER_AOT_STATUS_OK;
    }
    if (append(c, key, bytes, size, 1) != 0) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_pack_cache_serialize(const aot_pack_cache *c, unsigned char **out, size_t *size,
                                          aot_diag *d)
{
    size_t total = sizeof MAGIC;
    for (size_t i = 0; i < c->n; i++)
        if (c->r[i].used) total += RECORD_HEAD + pad8(c->r[i].size);
    unsigned char *b = calloc(total, 1);
    if (b == NULL) return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(b, MAGIC, sizeof MAGIC);
    size_t at = sizeof MAGIC;
    for (size_t i = 0; i < c->n; i++) {
        const record *r = &c->r[i];
        if (!r->used) continue;
        put64(b + at, r->key);
        put64(b + at + 8, r->size);
        put64(b + at + 16, aot_xxh64(r->bytes, r->size, 0));
        memcpy(b + at + RECORD_HEAD, r->bytes, r->size);
        at += RECORD_HEAD + pad8(r->size);
    }
    *out = b;
    *size = total;
    return AITER_AOT_STATUS_OK;
}
