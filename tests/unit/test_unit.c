/* test_unit.c : hash, target IDs, MessagePack, code-object validation (checked against
 * llvm-readelf), bundle round trips and the pack cache. Usage: test_unit READELF CO_OR_CUBIN...
 * (the code objects the build made for every target). */
#define _POSIX_C_SOURCE 200809L /* popen, clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "bundle.h"
#include "bundle_write.h"
#include "codeobj.h"
#include "hash.h"
#include "mkelf.h"
#include "msgpack.h"
#include "target_id.h"

static int passed, failed;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void test_hash(void)
{
    CHECK(aot_xxh64("", 0, 0) == 0xEF46DB3751D8E999ull, "XXH64 of the empty string");
    /* zstd's frame checksum is the low 32 bits of XXH64 (seed 0): an independent implementation */
    for (size_t n = 0; n < 200; n += 7) {
        unsigned char buf[256], z[512];
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 131 + n);
        ZSTD_CCtx *c = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        size_t zn = ZSTD_compress2(c, z, sizeof z, buf, n);
        ZSTD_freeCCtx(c);
        unsigned got = z[zn - 4] | z[zn - 3] << 8 | z[zn - 2] << 16 | (unsigned)z[zn - 1] << 24;
        CHECK(got == (unsigned)(aot_xxh64(buf, n, 0) & 0xffffffffu), "XXH64 vs zstd checksum, %zu bytes", n);
    }
}

static void test_targets(void)
{
    aot_target t, d;
    char buf[96];
    CHECK(aot_target_parse(&t, "gfx942:xnack-:sramecc+") == 0, "parse features in any order");
    aot_target_format(&t, buf, sizeof buf);
    CHECK(strcmp(buf, "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == 0, "canonical form: %s", buf);
    CHECK(aot_target_parse(&t, "nvptx64-nvidia-cuda--sm_90a") == 0 && strcmp(t.processor, "sm_90a") == 0, "cuda id");
    CHECK(aot_target_parse(&t, "gfx942:xnack") != 0, "feature without sign refused");
    CHECK(aot_target_parse(&t, "gfx942:xnack+:xnack-") != 0, "repeated feature refused");
    CHECK(aot_target_parse(&t, "sm_90:xnack+") != 0, "features on sm refused");
    CHECK(aot_target_parse(&t, "gfx9z9") != 0, "bad processor refused");
    aot_target_parse(&d, "gfx942:sramecc+:xnack-");
    aot_target_parse(&t, "gfx942");
    CHECK(aot_target_compatible(&t, &d), "any-feature code runs on gfx942:sramecc+:xnack-");
    aot_target_parse(&t, "gfx942:xnack+");
    CHECK(!aot_target_compatible(&t, &d), "xnack+ code does not run on xnack- device");
    aot_target_parse(&t, "gfx950");
    CHECK(!aot_target_compatible(&t, &d), "gfx950 code does not run on gfx942");
    aot_target_parse(&t, "sm_90a"), aot_target_parse(&d, "sm_90");
    CHECK(aot_target_compatible(&t, &d), "sm_90a code runs on CC 9.0");
    aot_target_parse(&d, "sm_100");
    CHECK(!aot_target_compatible(&t, &d), "sm_90a code does not run on CC 10.0");
    aot_target_parse(&t, "sm_80"), aot_target_parse(&d, "sm_86");
    CHECK(aot_target_compatible(&t, &d), "sm_80 SASS runs on sm_86");
}

static void test_msgpack(void)
{
    /* {"a": [1, 300, -1], "b": "xy", "c": {"d": true}} */
    static const unsigned char m[] = {0x83, 0xa1, 'a', 0x93, 0x01, 0xcd, 0x01, 0x2c, 0xff,
                                      0xa1, 'b', 0xa2, 'x', 'y', 0xa1, 'c', 0x81, 0xa1, 'd', 0xc3};
    mp_reader r = {m, m + sizeof m, 0};
    uint32_t n, an;
    const char *s;
    uint64_t v;
    CHECK(mp_read_map(&r, &n) == 0 && n == 3, "map of 3");
    CHECK(mp_read_str(&r, &s, &an) == 0 && mp_str_eq(s, an, "a"), "key a");
    CHECK(mp_read_array(&r, &an) == 0 && an == 3, "array of 3");
    CHECK(mp_read_uint(&r, &v) == 0 && v == 1, "fixint");
    CHECK(mp_read_uint(&r, &v) == 0 && v == 300, "uint16");
    CHECK(mp_read_uint(&r, &v) != 0, "negative fixint is not a uint");
    r.bad = 0, r.p++;
    CHECK(mp_skip(&r) == 0 && mp_skip(&r) == 0 && mp_skip(&r) == 0 && mp_skip(&r) == 0 && r.p == r.end, "skip the rest");
    for (size_t cut = 0; cut < sizeof m; cut++) {
        mp_reader t = {m, m + cut, 0};
        CHECK(mp_skip(&t) != 0, "truncated at %zu fails", cut);
    }
    static const unsigned char deep[40] = {0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91,
                                           0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91,
                                           0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91,
                                           0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x01};
    mp_reader t = {deep, deep + sizeof deep, 0};
    CHECK(mp_skip(&t) != 0, "nesting deeper than the limit refused");
}

/* ---- llvm-readelf comparison ---- */

static long note_value(const char *notes, const char *kernel, const char *key)
{
    /* find "- .agpr_count" blocks: the kernel's block contains ".name: <kernel>" */
    const char *p = notes;
    char want[200];
    snprintf(want, sizeof want, ".name:           %s\n", kernel);
    const char *name = strstr(p, want);
    if (!name) return -1;
    const char *start = name;
    while (start > notes + 3 && !(start[0] == '-' && start[-1] == ' ' && start[-2] == ' ' && start[-3] == '\n')) start--;
    const char *end = strstr(name, "\n  - ");
    if (!end) end = strstr(name, "\namdhsa.");
    char k[80];
    snprintf(k, sizeof k, "    %s:", key);
    for (const char *q = start; q && q < end; q = strchr(q + 1, '\n')) {
        if (strncmp(q + 1, k, strlen(k)) == 0) return strtol(q + 1 + strlen(k), NULL, 10);
        if (q == start && strncmp(start + 2, key, strlen(key)) == 0) return strtol(start + 2 + strlen(key) + 1, NULL, 10);
    }
    return -1;
}

static void compare_with_readelf(const char *readelf, const char *path, const aot_codeobj *co)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --notes '%s'", readelf, path);
    FILE *p = popen(cmd, "r");
    char *notes = calloc(1, 1 << 20);
    size_t n = p ? fread(notes, 1, (1 << 20) - 1, p) : 0;
    if (p) pclose(p);
    notes[n] = 0;
    for (unsigned i = 0; i < co->nkernels; i++) {
        const aot_co_kernel *k = &co->kernels[i];
        struct { const char *key; long ours; } f[] = {
            {".sgpr_count", k->rec.sgpr}, {".vgpr_count", k->rec.vgpr}, {".agpr_count", k->rec.agpr},
            {".kernarg_segment_size", (long)k->rec.kernarg_size},
            {".group_segment_fixed_size", (long)k->rec.group_segment},
            {".private_segment_fixed_size", (long)k->rec.private_segment},
            {".wavefront_size", k->rec.wave_size}, {".max_flat_workgroup_size", (long)k->rec.max_workgroup},
            {".vgpr_spill_count", k->rec.vgpr_spill}, {".sgpr_spill_count", k->rec.sgpr_spill}};
        for (size_t j = 0; j < sizeof f / sizeof f[0]; j++) {
            long theirs = note_value(notes, k->name, f[j].key);
            CHECK(theirs == f[j].ours, "%s %s %s: ours %ld, llvm-readelf %ld", path, k->name, f[j].key, f[j].ours, theirs);
        }
    }
    free(notes);
}

/* ---- code objects and bundles ---- */

static void test_codeobj_rejects(const unsigned char *co, size_t n, const char *path, const char *target)
{
    aot_codeobj c;
    aot_diag d;
    CHECK(aot_codeobj_inspect(co, n / 2, path, NULL, &c, &d) != 0, "%s: truncated object refused", path);
    CHECK(aot_codeobj_inspect(co, n, path, strncmp(target, "sm_", 3) ? "gfx90a" : "sm_80", &c, &d) != 0,
          "%s: wrong declared target refused", path);
    unsigned char *bad = malloc(n);
    memcpy(bad, co, n);
    bad[18] ^= 0xff; /* e_machine */
    CHECK(aot_codeobj_inspect(bad, n, path, NULL, &c, &d) != 0, "%s: wrong e_machine refused", path);
    if (strncmp(target, "sm_", 3) != 0) {
        memcpy(bad, co, n);
        bad[48] = 0x4f ^ bad[48] ^ 0x4c; /* e_flags mach gfx942 <-> gfx950 */
        CHECK(aot_codeobj_inspect(bad, n, path, NULL, &c, &d) != 0, "%s: e_flags disagreeing with amdhsa.target refused (%s)", path, d.msg);
    }
    free(bad);
}

static const char *target_of(const char *path)
{
    static char t[64];
    const char *s = strstr(path, "co/");
    snprintf(t, sizeof t, "%s", s ? s + 3 : "");
    char *slash = strchr(t, '/');
    if (slash) *slash = 0;
    for (char *c = t; *c; c++) if (*c == '_' && c[-1] != 'm') *c = ':'; /* gfx942_xnack- -> gfx942:xnack- */
    return t;
}

/* MessagePack writer for the hostile metadata below: fixstr, fixmap, fixarray only. */
static size_t mp_s(unsigned char *p, const char *str)
{
    size_t n = strlen(str);
    p[0] = (unsigned char)(0xa0 | n), memcpy(p + 1, str, n);
    return n + 1;
}

/* amdhsa.kernels = [{.name k, .symbol k.kd, then `extra` raw pairs}], `twice` times. */
static size_t amd_meta(unsigned char *p, int twice, const unsigned char *extra, size_t extra_n, int extra_pairs)
{
    size_t n = 0;
    p[n++] = (unsigned char)(0x80 | (1 + twice));
    n += mp_s(p + n, "amdhsa.target"), n += mp_s(p + n, "amdgcn-amd-amdhsa--gfx942");
    for (int t = 0; t < twice; t++) {
        n += mp_s(p + n, "amdhsa.kernels");
        p[n++] = 0x91, p[n++] = (unsigned char)(0x80 | (2 + extra_pairs));
        n += mp_s(p + n, ".name"), n += mp_s(p + n, "k"), n += mp_s(p + n, ".symbol"), n += mp_s(p + n, "k.kd");
        memcpy(p + n, extra, extra_n), n += extra_n;
    }
    return n;
}

static aiter_aot_status inspect_amd_meta(const unsigned char *meta, size_t mn, aot_diag *d)
{
    unsigned char note[512], elf[4096];
    mkelf_spec s = {224, 64, 3, 3, 0x4c, ".note", 7, note, mkelf_amd_note(meta, mn, note, sizeof note), "k.kd"};
    size_t n = mkelf_build(&s, elf, sizeof elf);
    aot_codeobj co;
    aiter_aot_status st = aot_codeobj_inspect(elf, n, "crafted", NULL, &co, d);
    aot_codeobj_free(&co);
    return st;
}

/* Duplicate keys: a second amdhsa.kernels used to get a fresh array while the count went on
 * (heap overflow), a second .args leaked the first. NOBITS .nv.info*: libelf gives no bytes. */
static void test_codeobj_hostile(void)
{
    unsigned char meta[512], args[64];
    aot_diag d;
    size_t an = 0;
    args[an++] = 0xa5, memcpy(args + an, ".args", 5), an += 5, args[an++] = 0x90;
    CHECK(inspect_amd_meta(meta, amd_meta(meta, 1, args, an, 1), &d) == 0, "crafted AMD object accepted: %s", d.msg);
    CHECK(inspect_amd_meta(meta, amd_meta(meta, 2, NULL, 0, 0), &d) != 0, "duplicate amdhsa.kernels refused");
    unsigned char two[64];
    memcpy(two, args, an), memcpy(two + an, args, an);
    CHECK(inspect_amd_meta(meta, amd_meta(meta, 1, two, 2 * an, 2), &d) != 0, "duplicate .args refused");
    static const unsigned char attr[4] = {0x04, 0x0a, 0x00, 0x00}; /* EIFMT_SVAL, an empty value */
    unsigned char elf[4096];
    aot_codeobj co;
    /* PROGBITS and SHT_LOPROC (the type nvcc gives .nv.info*) are read; NOBITS is refused */
    static const uint32_t types[] = {1, 0x70000000u, 8};
    for (size_t i = 0; i < 3; i++) {
        mkelf_spec s = {190, 0x33, 7, 2, 90, ".nv.info.k", types[i], attr, 4, "k"};
        size_t n = mkelf_build(&s, elf, sizeof elf);
        aiter_aot_status st = aot_codeobj_inspect(elf, n, "crafted", NULL, &co, &d);
        aot_codeobj_free(&co);
        if (types[i] != 8) CHECK(st == 0, "crafted cubin (.nv.info.k type %#x) accepted: %s", types[i], d.msg);
        else CHECK(st != 0, "NOBITS .nv.info.k refused");
    }
}

enum { CACHE_LEVEL = 3 }; /* the cache does not depend on the level; a low one is quick */

/* Packs with the cache serialized in *ser (replaced by the cache after the pack) and checks
 * the bytes against the bundle packed without one. */
static void pack_cached(aot_pack_item *items, size_t n, unsigned char **ser, size_t *ser_size,
                        const unsigned char *want, size_t want_size, const char *what)
{
    aot_diag d;
    aot_pack_options o = {CACHE_LEVEL, AOT_DICT_AUTO, aot_pack_cache_parse(*ser, *ser_size)};
    unsigned char *b;
    size_t s;
    CHECK(aot_bundle_write(items, n, &o, &b, &s, &d) == 0 && s == want_size && memcmp(b, want, s) == 0,
          "pack with %s: the bytes of a pack without cache", what);
    free(b);
    free(*ser);
    CHECK(aot_pack_cache_serialize(o.cache, ser, ser_size, &d) == 0, "serialize: %s", d.msg);
    aot_pack_cache_free(o.cache);
}

/* Offset of record i in a serialized cache (8-byte magic; key, size, hash, payload padded). */
static size_t cache_record(const unsigned char *ser, size_t i)
{
    size_t at = 8;
    for (; i > 0; i--) {
        size_t n = 0;
        memcpy(&n, ser + at + 8, sizeof n); /* little-endian host */
        at += 24 + ((n + 7) & ~(size_t)7);
    }
    return at;
}

/* The cache never changes what is written: cold, warm, truncated, with records swapped under
 * each other's keys (the writer decompresses what it takes), and it keeps only what the last
 * pack used. */
static void test_pack_cache(aot_pack_item *items, size_t n)
{
    aot_pack_options o = {CACHE_LEVEL, AOT_DICT_AUTO, NULL};
    unsigned char *want, *b;
    size_t want_size, s;
    aot_diag d;
    int packed = aot_bundle_write(items, n, &o, &want, &want_size, &d) == 0;
    CHECK(packed, "pack at level %d: %s", CACHE_LEVEL, d.msg);
    if (!packed) return;
    unsigned char *ser = NULL;
    size_t ser_size = 0;
    pack_cached(items, n, &ser, &ser_size, want, want_size, "an empty cache");
    size_t full = ser_size;
    pack_cached(items, n, &ser, &ser_size, want, want_size, "a warm cache");
    CHECK(ser_size == full, "a warm pack keeps the same records (%zu, %zu bytes)", ser_size, full);
    unsigned char key[8];
    size_t r1 = cache_record(ser, 1), r2 = cache_record(ser, 2); /* record 0 is the dictionary */
    memcpy(key, ser + r1, 8), memcpy(ser + r1, ser + r2, 8), memcpy(ser + r2, key, 8);
    pack_cached(items, n, &ser, &ser_size, want, want_size, "two frames under each other's keys");
    ser[ser_size / 2] ^= 0x40;
    pack_cached(items, n, &ser, &ser_size, want, want_size, "a flipped byte");
    pack_cached(items, n, &ser, &ser_size, want, want_size, "a cache refilled after the flip");
    size_t one = 0; /* the first target's items alone: the records of the others are dropped */
    while (one < n && strcmp(items[one].co.target, items[0].co.target) == 0) one++;
    if (one < n && aot_bundle_write(items, one, &o, &b, &s, &d) == 0) {
        pack_cached(items, one, &ser, &ser_size, b, s, "one target of the cached ones");
        CHECK(ser_size < full, "unused records dropped (%zu of %zu bytes kept)", ser_size, full);
        free(b);
    }
    free(ser);
    free(want);
}

/* The key bundle_write.c files a trained dictionary under: every code object, in pack order. */
static uint64_t dict_key(const aot_pack_item *items, size_t n)
{
    uint64_t key = aot_xxh64("DICT", 4, ZSTD_versionNumber());
    for (size_t i = 0; i < n; i++) key = aot_xxh64(items[i].bytes, items[i].size, key);
    return key;
}

/* A dictionary record a pack could not have written is retrained, never used: "none" for
 * input that trains one, zstd's magic before garbage, raw bytes, more than the reader takes. */
static void test_pack_cache_dict(aot_pack_item *items, size_t n)
{
    aot_pack_options o = {1, AOT_DICT_ALWAYS, NULL};
    unsigned char *want, *b, *raw = malloc(((size_t)1 << 24) + 8);
    size_t want_size, s;
    aot_diag d;
    int packed = raw && aot_bundle_write(items, n, &o, &want, &want_size, &d) == 0;
    CHECK(packed, "pack with a dictionary: %s", d.msg);
    if (!packed) return free(raw);
    memset(raw, 'x', ((size_t)1 << 24) + 8);
    memcpy(raw, "\x37\xa4\x30\xec", 4); /* ZSTD_MAGIC_DICTIONARY, then no valid tables */
    static const struct { size_t at, size; const char *what; } bad[] = {
        {4, 0, "a \"none\" record"}, {0, 200, "a zstd dictionary header before garbage"},
        {4, 4096, "4 KiB of raw content"}, {4, ((size_t)1 << 24) + 4, "16 MiB of raw content"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.cache = aot_pack_cache_parse(NULL, 0);
        CHECK(o.cache && aot_pack_cache_put(o.cache, dict_key(items, n), raw + bad[i].at, bad[i].size, &d) == 0, "put");
        int same = aot_bundle_write(items, n, &o, &b, &s, &d) == 0 && s == want_size && memcmp(b, want, s) == 0;
        CHECK(same, "a cached dictionary that is %s: retrained, the bytes of a pack without cache (%s)",
              bad[i].what, same ? "" : d.msg);
        if (same) free(b);
        aot_pack_cache_free(o.cache);
    }
    free(want);
    free(raw);
}

/* A cache of more records than a pack can use (3 per frame and a dictionary: 196609) is read
 * only up to that many, and a lookup is a binary search: 250000 empty records once took 35 s
 * to parse (a linear find per record). */
static void test_pack_cache_records(void)
{
    enum { N = 250000 };
    unsigned char *ser = calloc(8 + (size_t)N * 24, 1);
    if (ser == NULL) return;
    memcpy(ser, "AOTPKC01", 8);
    uint64_t empty = aot_xxh64("", 0, 0);
    for (size_t i = 0; i < N; i++) {
        uint64_t key = i + 1;
        memcpy(ser + 8 + 24 * i, &key, 8), memcpy(ser + 8 + 24 * i + 16, &empty, 8); /* little-endian host */
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    aot_pack_cache *c = aot_pack_cache_parse(ser, 8 + (size_t)N * 24);
    const unsigned char *bytes;
    size_t size;
    int found = c && aot_pack_cache_get(c, N / 2, &bytes, &size) == 0 && size == 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(found && secs < 2, "%d cache records parsed in %.2f s, a record found among them", N, secs);
    CHECK(c && aot_pack_cache_get(c, N, &bytes, &size) != 0, "records past what a pack can use are not read");
    aot_pack_cache_free(c);
    free(ser);
}

static void test_bundles(int n, char **paths, const char *readelf)
{
    aot_pack_item *items = calloc((size_t)n, sizeof *items);
    for (int i = 0; i < n; i++) {
        aot_diag d;
        items[i].path = paths[i];
        items[i].bytes = slurp(paths[i], &items[i].size);
        const char *base = strrchr(paths[i], '/') + 1;
        snprintf(items[i].module, sizeof items[i].module, "%.*s", (int)strcspn(base, "."), base);
        int ok = aot_codeobj_inspect(items[i].bytes, items[i].size, paths[i], target_of(paths[i]), &items[i].co, &d) == 0;
        CHECK(ok, "%s validates as %s: %s", paths[i], target_of(paths[i]), d.msg);
        if (ok && items[i].co.kind == AOT_KIND_AMDGPU) compare_with_readelf(readelf, paths[i], &items[i].co);
        test_codeobj_rejects(items[i].bytes, items[i].size, paths[i], target_of(paths[i]));
    }
    unsigned char *b1, *b2;
    size_t s1, s2;
    aot_diag d;
    aot_pack_options o = {AOT_PACK_DEFAULT_LEVEL, AOT_DICT_AUTO, NULL};
    CHECK(aot_bundle_write(items, (size_t)n, &o, &b1, &s1, &d) == 0, "pack: %s", d.msg);
    CHECK(aot_bundle_write(items, (size_t)n, &o, &b2, &s2, &d) == 0 && s1 == s2 && memcmp(b1, b2, s1) == 0,
          "packing twice gives identical bytes");
    aot_bundle b;
    CHECK(aot_bundle_open(&b, b1, s1, &d) == 0 && b.entries == (uint32_t)n, "open: %s", d.msg);
    for (uint32_t f = 0; f < b.frames; f++) {
        unsigned char *bytes;
        CHECK(aot_bundle_decompress_frame(&b, f, &bytes, &d) == 0, "frame %u: %s", f, d.msg);
        for (uint32_t e = 0; e < b.entries; e++) {
            aot_entry_rec r = aot_bundle_entry(&b, e);
            if (r.frame != f) continue;
            int found = 0;
            for (int i = 0; i < n; i++)
                if (strcmp(items[i].module, aot_bundle_string(&b, r.name)) == 0 &&
                    strcmp(items[i].co.target, aot_bundle_string(&b, r.target)) == 0)
                    found = items[i].size == r.size && memcmp(items[i].bytes, bytes + r.offset, r.size) == 0;
            CHECK(found, "entry %u round-trips byte-identical", e);
        }
        free(bytes);
    }
    test_pack_cache(items, (size_t)n);
    size_t one = 0; /* the first target's code objects: enough to train a dictionary on */
    while (one < (size_t)n && strcmp(items[one].co.target, items[0].co.target) == 0) one++;
    test_pack_cache_dict(items, one);
    test_pack_cache_records();
    aot_pack_item dup[2] = {items[0], items[0]};
    CHECK(aot_bundle_write(dup, 2, &o, &b2, &s2, &d) != 0 && strstr(d.msg, "duplicate"), "duplicates refused");
    aot_pack_item big = items[0];
    big.size = ((size_t)1 << 30) + 8; /* claimed only: the writer must refuse before it reads */
    CHECK(aot_bundle_write(&big, 1, &o, &b2, &s2, &d) != 0 && strstr(d.msg, "at most 1 GiB"),
          "a target over 1 GiB refused (format 2 stores 32-bit offsets): %s", d.msg);
    free(b1);
    for (int i = 0; i < n; i++) aot_codeobj_free(&items[i].co), free((void *)items[i].bytes);
    free(items);
}

int main(int argc, char **argv)
{
    if (argc < 3) return fprintf(stderr, "usage: test_unit READELF CO...\n"), 2;
    test_hash();
    test_targets();
    test_msgpack();
    test_codeobj_hostile();
    test_bundles(argc - 2, argv + 2, argv[1]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
