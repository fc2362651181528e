/* test_loader.c : the runtime's frame choice and loading (aot_load_frame) over hand-made
 * bundles with a stub GPU table, built with ASan and UBSan. A bundle the reader accepts must
 * load without writing or reading outside any buffer; the hostile ones here must be refused
 * by the reader or by the loader, never overrun its kernel table or its message buffer. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_sigmask: declared without relying on -pthread */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "loader.h"
#include "mkbundle.h"
#include "mkelf.h"

static int passed, failed;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static aiter_aot_status stub_load(int device, const void *image, void **module, aot_diag *d)
{
    (void)device, (void)d;
    *module = (void *)image;
    return AITER_AOT_STATUS_OK;
}

static int unloads;

static void stub_unload(int device, void *module)
{
    (void)device, (void)module;
    unloads++;
}

static aiter_aot_status stub_function(void *module, const char *name, void **fn, aot_diag *d)
{
    (void)d, (void)name;
    *fn = module;
    return AITER_AOT_STATUS_OK;
}

/* Builds the bundle of s, opens it and, if the reader accepts it, loads it for `device` through
 * gpu (ASan sees overruns). @return the first error, or OK with *got filled (the caller frees
 * got->fns; the kernels' names pointed into the bundle, which is freed here). */
static aiter_aot_status load_spec(const mkb_spec *s, const char *device, const aot_gpu *gpu, aot_loaded *got,
                                  aot_diag *d)
{
    size_t n;
    unsigned char *data = mkb_build(s, &n);
    aot_bundle b;
    aiter_aot_status st = aot_bundle_open(&b, data, n, d);
    if (st == AITER_AOT_STATUS_OK) st = aot_load_frame(&b, device, gpu, 0, got, d);
    free(data);
    return st;
}

/* load_spec through the stub GPU table. @return the first error, or OK with *nfns kernels loaded. */
static aiter_aot_status open_and_load(const mkb_spec *s, const char *device, unsigned *nfns, aot_diag *d)
{
    aot_gpu gpu = {0};
    gpu.load_module = stub_load, gpu.get_function = stub_function;
    aot_loaded got;
    aiter_aot_status st = load_spec(s, device, &gpu, &got, d);
    if (st == AITER_AOT_STATUS_OK) *nfns = got.nfns, free(got.fns);
    return st;
}

/* Two small ELF code objects at 0 and CO (mkelf.h), made by main(): the loader checks that an
 * entry's ELF headers stay inside it before any GPU loader sees it. */
enum { CO = 512 };
static unsigned char code[2 * CO];
static const char *const kernels[] = {"k0", "k1"};

static size_t make_code_object(unsigned char *out, size_t cap)
{
    static const unsigned char note[24] = "note bytes of a test";
    mkelf_spec e = {224, 64, 3, 3, 0x54c, ".note", 7, note, sizeof note, "k.kd"};
    return mkelf_build(&e, out, cap);
}

static void put64le(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> 8 * i); }

static uint64_t get64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A GPU loader that takes 25 ms a module, so the loader's timings have something to see: long
 * beside the decoding thread's few microseconds, even when a busy machine delays that thread
 * (under ASan, with the rest of make check on two cores, it once took 7.8 ms). */
static aiter_aot_status slow_load(int device, const void *image, void **module, aot_diag *d)
{
    double until = now_us() + 25000;
    while (now_us() < until) {}
    return stub_load(device, image, module, d);
}

/* The step times behind aiter_aot_get_stats: module loads summed over entries, the frame's
 * decompression measured once. */
static void test_step_times(void)
{
    mkb_frame f[] = {{"amdgcn-amd-amdhsa--gfx942", code, sizeof code}};
    mkb_entry e[] = {{"a", f[0].target, 0, 0, 1, 0, CO}, {"b", f[0].target, 0, 1, 1, CO, CO}};
    mkb_spec s = {f, 1, e, 2, kernels, 2};
    aot_gpu gpu = {0};
    gpu.load_module = slow_load, gpu.get_function = stub_function;
    aot_loaded got;
    aot_diag d = {""};
    aiter_aot_status st = load_spec(&s, "gfx942", &gpu, &got, &d);
    CHECK(st == AITER_AOT_STATUS_OK, "step-time bundle loads: %s", d.msg);
    if (st == AITER_AOT_STATUS_OK) {
        CHECK(got.module_load_ns >= 50000000 && got.module_load_ns < 4000000000,
              "module load time sums both modules: %llu ns", got.module_load_ns);
        CHECK(got.decompress_ns > 0 && got.decompress_ns < got.module_load_ns,
              "decompression timed apart from module loads: %llu ns", got.decompress_ns);
        CHECK(got.lookup_ns < got.module_load_ns, "lookups timed apart from module loads: %llu ns", got.lookup_ns);
        free(got.fns);
    }
}

/* A frame large enough to be decoded in many pieces while its modules load: every image the
 * loader hands over must already hold its final bytes, and damage to the last module's bytes
 * must fail the load after the good ones. */
static const unsigned char *big_frame;
static int big_loads, big_bad_images;

static aiter_aot_status checking_load(int device, const void *image, void **module, aot_diag *d)
{
    /* entries load in order, module i being bytes [i MB, (i + 1) MB) of the frame */
    if (memcmp(image, big_frame + (size_t)(big_loads++ % 3) * (1u << 20), 1u << 20) != 0) big_bad_images++;
    return stub_load(device, image, module, d);
}

static void test_pipelined_load(void)
{
    enum { MB = 1 << 20 };
    unsigned char *bytes = malloc(3 * MB);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < 3 * MB; i++) { /* half random, half runs: ~1.5 MB compressed */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bytes[i] = (i / 4096) % 2 ? (unsigned char)x : (unsigned char)(i / 4096);
    }
    for (int i = 0; i < 3; i++) make_code_object(bytes + (size_t)i * MB, CO); /* then padding */
    big_frame = bytes;
    const char *t942 = "amdgcn-amd-amdhsa--gfx942";
    static const char *const three[] = {"k0", "k1", "k2"};
    mkb_frame f[] = {{t942, bytes, 3 * MB}};
    mkb_entry e[] = {{"a", t942, 0, 0, 1, 0, MB}, {"b", t942, 0, 1, 1, MB, MB}, {"c", t942, 0, 2, 1, 2 * MB, MB}};
    mkb_spec s = {f, 1, e, 3, three, 3};
    size_t n;
    unsigned char *data = mkb_build(&s, &n);
    aot_bundle b;
    aot_gpu gpu = {0};
    gpu.load_module = checking_load, gpu.get_function = stub_function, gpu.unload_module = stub_unload;
    aot_loaded got;
    aot_diag d = {""};
    aiter_aot_status st = aot_bundle_open(&b, data, n, &d);
    if (st == AITER_AOT_STATUS_OK) st = aot_load_frame(&b, "gfx942", &gpu, 0, &got, &d);
    unloads = 0;
    CHECK(st == AITER_AOT_STATUS_OK && got.modules == 3 && got.frames == 1 && big_bad_images == 0 && unloads == 0,
          "a 3 MB frame loads in pieces: %s, %u modules, %d wrong images", d.msg, st ? 0 : got.modules, big_bad_images);
    if (st == AITER_AOT_STATUS_OK) free(got.fns);
    aot_frame_rec fr = aot_bundle_frame(&b, 0);
    /* 8 bytes after the zstd frame, inside its csize: the last entry's bytes are all out before
     * the decoder meets them, and the load must still fail */
    unsigned char *tail = calloc(n + 8, 1);
    memcpy(tail, data, n);
    memset(tail + fr.offset + fr.csize, 0xa5, 8);
    aot_bundle tb = b;
    put64le(tail + tb.frames_off + 8, fr.csize + 8);
    tb.size = (size_t)(fr.offset + fr.csize + 8), tb.meta_hash = 0;
    aot_encode_header(tail, &tb);
    tb.meta_hash = aot_bundle_meta_hash(tail, tb.meta_end);
    aot_encode_header(tail, &tb);
    st = aot_bundle_open(&tb, tail, tb.size, &d);
    big_loads = 0, unloads = 0;
    if (st == AITER_AOT_STATUS_OK) st = aot_load_frame(&tb, "gfx942", &gpu, 0, &got, &d);
    CHECK(st == AITER_AOT_STATUS_CORRUPT_BUNDLE && big_loads == 3 && unloads == 3 && got.fns == NULL,
          "bytes after the zstd frame fail the load once every module is out, and unload them: %s", d.msg);
    if (st == AITER_AOT_STATUS_OK) free(got.fns);
    free(tail);
    data[fr.offset + fr.csize - 1000] ^= 0x55; /* inside the last module's compressed bytes */
    big_loads = 0, unloads = 0;
    st = aot_load_frame(&b, "gfx942", &gpu, 0, &got, &d);
    CHECK(st == AITER_AOT_STATUS_CORRUPT_BUNDLE && big_bad_images == 0 && big_loads == 2 && unloads == 2 &&
          got.fns == NULL, "damage in the last module fails the load after the 2 good ones, which are unloaded "
          "(%d loads, %d unloads): %s", big_loads, unloads, d.msg);
    free(data);
    free(bytes);
}

/* An entry whose ELF headers reach past its bytes (its hash recorded as it is, as a hostile
 * bundle would) or that is no ELF image: refused before the GPU loader sees it. */
static int extent_loads;

static aiter_aot_status counting_load(int device, const void *image, void **module, aot_diag *d)
{
    extent_loads++;
    return stub_load(device, image, module, d);
}

static aiter_aot_status load_patched_code(size_t at, uint64_t value, int bytes, uint32_t second_size, aot_diag *d)
{
    unsigned char img[2 * CO];
    memcpy(img, code, sizeof img);
    for (int i = 0; i < bytes; i++) img[CO + at + i] = (unsigned char)(value >> (8 * i));
    const char *t942 = "amdgcn-amd-amdhsa--gfx942";
    mkb_frame f[] = {{t942, img, sizeof img}};
    mkb_entry e[] = {{"a", t942, 0, 0, 1, 0, CO}, {"b", t942, 0, 1, 1, CO, second_size}};
    mkb_spec s = {f, 1, e, 2, kernels, 2};
    aot_gpu gpu = {0};
    gpu.load_module = counting_load, gpu.get_function = stub_function, gpu.unload_module = stub_unload;
    aot_loaded got;
    extent_loads = 0, unloads = 0;
    aiter_aot_status st = load_spec(&s, "gfx942", &gpu, &got, d);
    if (st == AITER_AOT_STATUS_OK) free(got.fns);
    return st;
}

static void test_elf_extent(void)
{
    aot_diag d = {""};
    uint64_t shoff = get64le(code + 40);
    CHECK(load_patched_code(0, 0x7f, 1, CO, &d) == AITER_AOT_STATUS_OK && extent_loads == 2, "unpatched: %s", d.msg);
    struct { size_t at; uint64_t value; int bytes; uint32_t size; const char *what; } cases[] = {
        {0, 0, 1, CO, "no ELF magic"},
        {4, 1, 1, CO, "ELF32"},
        {0, 0x7f, 1, 32, "32 bytes: shorter than an ELF header"},
        {40, CO - 64, 8, CO, "section headers past the end"},
        {60, 0xffff, 2, CO, "65535 section headers"},
        {58, 40, 2, CO, "section header size 40"},
        {shoff + 64 * 4 + 32, 1ull << 20, 8, CO, "a 1 MiB section in 512 bytes"},
        {shoff + 64 * 4 + 24, ~0ull - 4, 8, CO, "a section offset that wraps"},
        {56, 1, 2, CO, "a program header table with no size for it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d.msg[0] = 0;
        aiter_aot_status st = load_patched_code(cases[i].at, cases[i].value, cases[i].bytes, cases[i].size, &d);
        CHECK(st == AITER_AOT_STATUS_CORRUPT_BUNDLE && extent_loads == 1 && unloads == 1,
              "%s refused before loading, the first module unloaded: %s", cases[i].what, d.msg);
    }
}

static void test_good(void)
{
    mkb_frame f[] = {{"amdgcn-amd-amdhsa--gfx942", code, sizeof code}};
    mkb_entry e[] = {{"a", f[0].target, 0, 0, 1, 0, CO}, {"b", f[0].target, 0, 1, 1, CO, CO}};
    mkb_spec s = {f, 1, e, 2, kernels, 2};
    unsigned nfns = 0;
    aot_diag d = {""};
    CHECK(open_and_load(&s, "gfx942:sramecc+:xnack-", &nfns, &d) == 0 && nfns == 2, "good bundle loads: %s", d.msg);
}

/* Two entries of one frame both claiming kernel 0 of a one-kernel table: each range is in
 * bounds, their sum is not; the loader's table has one slot. */
static void test_overlapping_kernels(void)
{
    mkb_frame f[] = {{"amdgcn-amd-amdhsa--gfx942", code, sizeof code}};
    mkb_entry e[] = {{"a", f[0].target, 0, 0, 1, 0, CO}, {"b", f[0].target, 0, 0, 1, CO, CO}};
    mkb_spec s = {f, 1, e, 2, kernels, 1};
    unsigned nfns = 0;
    aot_diag d = {""};
    CHECK(open_and_load(&s, "gfx942", &nfns, &d) == AITER_AOT_STATUS_CORRUPT_BUNDLE,
          "overlapping kernel ranges refused (got %u kernels)", nfns);
}

/* Canonical targets of five processors, none for the device: the "this library has" list
 * once counted the processor but appended processor and features. Leaving out the four
 * skipped here brings the list to 497 bytes just before a 22-character item (old: 519 bytes
 * written into char have[512]). */
static void test_long_target_list(void)
{
    static const char *const procs[] = {"gfx1100", "gfx1201", "gfx90a", "gfx942", "gfx950"};
    static const char *const feats[] = {"", ":sramecc+", ":sramecc+:xnack+", ":sramecc+:xnack-", ":sramecc-",
                                        ":sramecc-:xnack+", ":sramecc-:xnack-", ":xnack+", ":xnack-"};
    static char names[45][64];
    mkb_frame f[45];
    uint32_t n = 0;
    for (int i = 0; i < 45; i++) {
        if (i == 7 || i == 19 || i == 22 || i == 35) continue;
        snprintf(names[n], sizeof names[n], "amdgcn-amd-amdhsa--%s%s", procs[i / 9], feats[i % 9]);
        f[n] = (mkb_frame){names[n], code, sizeof code}, n++;
    }
    mkb_spec s = {f, n, NULL, 0, NULL, 0};
    unsigned nfns = 0;
    aot_diag d = {""};
    CHECK(open_and_load(&s, "gfx1200", &nfns, &d) == AITER_AOT_STATUS_NO_CODE_OBJECT,
          "no frame for gfx1200: %s", d.msg);
}

/* Builds s, lets `patch` change index bytes (frame i's record at frames_off + 32 i), rehashes
 * and opens it. @return the reader's status. */
static aiter_aot_status open_patched(const mkb_spec *s, void (*patch)(unsigned char *, const aot_bundle *))
{
    size_t n;
    unsigned char *data = mkb_build(s, &n);
    aot_bundle b;
    aot_diag d;
    if (aot_bundle_open(&b, data, n, &d) != AITER_AOT_STATUS_OK) return free(data), AITER_AOT_STATUS_UNSUPPORTED;
    if (patch) {
        patch(data, &b);
        b.meta_hash = aot_bundle_meta_hash(data, b.meta_end);
        aot_encode_header(data, &b);
    }
    aiter_aot_status st = aot_bundle_open(&b, data, n, &d);
    free(data);
    return st;
}


static void frame1_onto_frame0(unsigned char *p, const aot_bundle *b)
{
    memcpy(p + b->frames_off + AOT_FRAME_SIZE, p + b->frames_off, 16); /* offset, csize */
}

static void frames_declare_2gib(unsigned char *p, const aot_bundle *b)
{
    put64le(p + b->frames_off + 16, 1ull << 30), put64le(p + b->frames_off + AOT_FRAME_SIZE + 16, 1ull << 30);
}

static void swap_frame_targets(unsigned char *p, const aot_bundle *b)
{
    unsigned char t[4];
    memcpy(t, p + b->frames_off + 28, 4);
    memcpy(p + b->frames_off + 28, p + b->frames_off + AOT_FRAME_SIZE + 28, 4);
    memcpy(p + b->frames_off + AOT_FRAME_SIZE + 28, t, 4);
}

/* What the loader and extract rely on is checked by the reader: each case differs from an
 * accepted bundle in one property only. */
static void test_reader_refuses(void)
{
    static const char *const bad_names[] = {"../../../escaped", ".hidden", "a/b", "", "sp ace",
        "x123456789012345678901234567890123456789012345678901234567890123"};
    const char *t942 = "amdgcn-amd-amdhsa--gfx942", *t950 = "amdgcn-amd-amdhsa--gfx950";
    mkb_frame f[] = {{t942, code, sizeof code}, {t950, code, sizeof code}};
    mkb_entry e[] = {{"a", t942, 0, 0, 1, 0, CO}, {"b", t942, 0, 1, 1, CO, CO}};
    mkb_spec s = {f, 2, e, 2, kernels, 2};
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_OK, "the unpatched bundle opens");
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        e[1].name = bad_names[i];
        CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "module name \"%s\" refused", bad_names[i]);
    }
    e[1].name = "b";
    e[0].name = "c";
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "entries out of module order refused");
    e[0].name = "b";
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "a module twice in one frame refused");
    e[0].name = "a";
    f[1].target = t942;
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "two frames for one target refused");
    f[1].target = "gfx950";
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "a short-form frame target refused");
    f[1].target = "amdgcn-amd-amdhsa--gfx950:xnack-:sramecc+";
    CHECK(open_patched(&s, NULL) == AITER_AOT_STATUS_UNSUPPORTED, "a non-canonical frame target refused");
    f[1].target = t950;
    CHECK(open_patched(&s, frame1_onto_frame0) == AITER_AOT_STATUS_CORRUPT_BUNDLE, "overlapping frames refused");
    CHECK(open_patched(&s, frames_declare_2gib) == AITER_AOT_STATUS_CORRUPT_BUNDLE, "2 GiB of declared frames refused");
    mkb_spec frames_only = {f, 2, NULL, 0, NULL, 0};
    CHECK(open_patched(&frames_only, swap_frame_targets) == AITER_AOT_STATUS_CORRUPT_BUNDLE, "frames out of target order refused");
}

/* aot_bundle_find hashes each candidate whose header reads: at most AOT_MAX_FIND_CANDIDATES
 * of them (a file of many such headers took quadratic time). Candidates are copies of a
 * bundle with a damaged index (hash mismatch), then the intact bundle. */
static aiter_aot_status find_after(int bad_copies)
{
    const char *t942 = "amdgcn-amd-amdhsa--gfx942";
    mkb_frame f[] = {{t942, code, sizeof code}};
    mkb_entry e[] = {{"a", t942, 0, 0, 1, 0, CO}};
    mkb_spec s = {f, 1, e, 1, kernels, 1};
    size_t n;
    unsigned char *one = mkb_build(&s, &n), *all = malloc(n * (size_t)(bad_copies + 1));
    for (int i = 0; i <= bad_copies; i++) {
        memcpy(all + n * (size_t)i, one, n);
        if (i < bad_copies) all[n * (size_t)i + AOT_HEADER_SIZE] ^= 1; /* the first entry's name */
    }
    aot_bundle b;
    aot_diag d;
    aiter_aot_status st = aot_bundle_find(&b, all, n * (size_t)(bad_copies + 1), &d);
    free(one), free(all);
    return st;
}

static void test_find_bounded(void)
{
    CHECK(find_after(AOT_MAX_FIND_CANDIDATES - 1) == AITER_AOT_STATUS_OK, "bundle found after 15 bad candidates");
    CHECK(find_after(AOT_MAX_FIND_CANDIDATES) == AITER_AOT_STATUS_CORRUPT_BUNDLE, "search stops after 16 bad candidates");
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n < sizeof buf - 64; n += 7)
        CHECK(aot_xxh64_split(buf, 64, buf + 64, n, 5) == aot_xxh64(buf, 64 + n, 5), "split hash, %zu bytes", 64 + n);
}

int main(void)
{
    if (!make_code_object(code, CO) || !make_code_object(code + CO, CO)) return printf("mkelf failed\n"), 1;
    test_find_bounded();
    test_reader_refuses();
    test_good();
    test_step_times();
    test_pipelined_load();
    test_elf_extent();
    test_overlapping_kernels();
    test_long_target_list();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
