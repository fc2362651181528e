/* test_fakegpu.c : the runtime's whole loader and launch path against a fake device
 * (tests/fakegpu/fakehip.c, fakecuda.c): binding, frame choice, decompression, module loads,
 * function lookups and launches of real ops, which the double checks and records.
 * Usage: test_fakegpu MODE VENDOR DOUBLE [STUB [EXT_SO]]
 *   MODE op        topk_softmax and moe_sorting, their launches, the counters
 *        threads   64 threads make their first calls at once
 *        global    the hip stub STUB dlopened RTLD_GLOBAL before the first call
 *        preload   STUB came through LD_PRELOAD
 *        between   a first call, then STUB dlopened RTLD_GLOBAL, then the op
 *        dlopen-so STUB dlopened RTLD_GLOBAL, then EXT_SO (libaiter_aot.a inside) dlopened
 * (between is not run with the opt-out: before the stub arrives the global scope has no hip*
 * names, so the first call cannot bind.)
 *   VENDOR hip or cuda; DOUBLE the double's path, which the runtime must report it bound
 *   (the run puts the double's folder on LD_LIBRARY_PATH; for cuda the test dlopens
 *   libcuda.so.1 first, as an application that uses the driver does).
 * The stub modes expect the double bound and the stub never called; with
 * AITER_AOT_GLOBAL_SYMBOLS=1 they expect the stub called and the double not. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aiter_aot.h"
#include "fakegpu.h"

static int passed, failed;
#define CHECK(cond, ...) do { int ok_ = (cond); printf("%-4s ", ok_ ? "ok" : "FAIL"); printf(__VA_ARGS__); \
                              putchar('\n'); ok_ ? passed++ : failed++; } while (0)

static struct {
    int cuda;
    const char *soname, *target, *short_target, *load, *get;
    unsigned wave;
    fakegpu_calls_fn calls;
    fakegpu_launches_fn launches;
    fakegpu_modules_fn modules;
} V;

static void *stream_mark = (void *)0x5ea1; /* any value: the double only records it */

/* The double's queries, from the copy the runtime loaded. */
static int find_double(void)
{
    void *h = dlopen(V.soname, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) return 0;
    V.calls = (fakegpu_calls_fn)dlsym(h, "fakegpu_calls");
    V.launches = (fakegpu_launches_fn)dlsym(h, "fakegpu_launches");
    V.modules = (fakegpu_modules_fn)dlsym(h, "fakegpu_modules");
    return V.calls && V.launches && V.modules;
}

static int same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return a && b && realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

static float gating[100 * 8], weights[100 * 2];
static int32_t ids[100 * 2];

static aiter_aot_status topk(int32_t tokens)
{
    aiter_aot_topk_softmax_args a = {.size = sizeof a, .gating = gating, .gating_dtype = AITER_AOT_DTYPE_F32,
                                     .gating_row_stride = 8, .tokens = tokens, .experts = 8, .k = 2,
                                     .topk_weights = weights, .topk_ids = ids};
    return aiter_aot_topk_softmax(&a, stream_mark);
}

static void check_launch(unsigned long i, const char *kernel, unsigned grid, unsigned block)
{
    fakegpu_launch_rec l;
    memset(&l, 0, sizeof l);
    unsigned long n = V.launches(i, &l);
    CHECK(i < n && strcmp(l.kernel, kernel) == 0 && l.grid[0] == grid && l.grid[1] == 1 && l.grid[2] == 1 &&
              l.block[0] == block && l.block[1] == 1 && l.block[2] == 1 && l.shared == 0 && l.stream == stream_mark &&
              l.args_nonnull,
          "launch %lu: %s grid %u block %u shared 0 on the caller's stream (recorded: %s grid %u,%u,%u block %u shared %u)",
          i, kernel, grid, block, l.kernel, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.shared);
}

static size_t modules_for_device(void) { return aiter_aot_kernels(V.short_target, NULL, 0); }

static void check_loaded_once(void)
{
    aiter_aot_stats st = {.size = sizeof st};
    unsigned long most = 0, n = V.modules(&most);
    CHECK(aiter_aot_get_stats(&st) == AITER_AOT_STATUS_OK && st.frames_decompressed == 1 && st.device_loads == 1,
          "one frame decompressed, one device loaded (%llu, %llu)", (unsigned long long)st.frames_decompressed,
          (unsigned long long)st.device_loads);
    CHECK(n == modules_for_device() && st.modules_loaded == n && most == 1 && V.calls(V.load) == n,
          "every module of %s loaded once: %lu loads of %zu modules, at most %lu of one image", V.short_target, n,
          modules_for_device(), most);
}

static int run_op(void)
{
    char target[96] = "";
    CHECK(aiter_aot_init() == AITER_AOT_STATUS_OK, "init: %s", aiter_aot_last_error());
    CHECK(find_double(), "the runtime loaded the double %s", V.soname);
    if (failed) return 1;
    CHECK(aiter_aot_device_target(target, sizeof target) == AITER_AOT_STATUS_OK && strcmp(target, V.target) == 0,
          "device target %s (want %s)", target, V.target);
    if (!V.cuda)
        CHECK(V.calls("hipGetDevicePropertiesR0600") >= 1 && V.calls("hipGetDeviceProperties") == 0,
              "the device was read through hipGetDevicePropertiesR0600@hip_6.0 (%lu calls, legacy %lu)",
              V.calls("hipGetDevicePropertiesR0600"), V.calls("hipGetDeviceProperties"));
    aiter_aot_status s = topk(100);
    CHECK(s == AITER_AOT_STATUS_OK, "topk_softmax: %s (%s)", aiter_aot_status_string(s), aiter_aot_last_error());
    /* a wave per row: 256 / wave rows a block */
    check_launch(0, "topk_softmax_v1", (100 + 256 / V.wave - 1) / (256 / V.wave), 256);
    check_loaded_once();
    CHECK(V.calls(V.get) >= V.calls(V.load), "%lu functions looked up", V.calls(V.get));

    static int32_t sorted_ids[100 * 2 + 8 * 32], sorted_experts[64], valid[2], ws[4096];
    static float sorted_w[100 * 2 + 8 * 32];
    aiter_aot_moe_sorting_args m = {.size = sizeof m, .topk_ids = ids, .topk_weights = weights, .tokens = 100, .k = 2,
                                    .experts = 8, .block_size = 32, .sorted_token_ids = sorted_ids,
                                    .sorted_weights = sorted_w, .sorted_expert_ids = sorted_experts,
                                    .num_valid_ids = valid, .workspace = ws, .workspace_size = sizeof ws};
    CHECK(aiter_aot_moe_sorting_workspace_size(100, 2, 8) <= sizeof ws, "workspace fits");
    s = aiter_aot_moe_sorting(&m, stream_mark);
    CHECK(s == AITER_AOT_STATUS_OK, "moe_sorting: %s (%s)", aiter_aot_status_string(s), aiter_aot_last_error());
    /* 64 tokens a counting block: 2 chunks; a scan block an expert; scatter max(chunks, 1) */
    check_launch(1, "moe_sort_count", 2, 256);
    check_launch(2, "moe_sort_chunk_scan", 8, 256);
    check_launch(3, "moe_sort_scatter", 2, 256);
    if (V.cuda)
        CHECK(V.calls("cuLaunchKernelEx") == 2, "the two launches that follow one of their op went through "
              "cuLaunchKernelEx (%lu)", V.calls("cuLaunchKernelEx"));
    s = topk(-1);
    CHECK(s == AITER_AOT_STATUS_INVALID_ARGUMENT && V.launches(0, NULL) == 4,
          "a bad call launches nothing: %s, %lu launches", aiter_aot_status_string(s), V.launches(0, NULL));
    aiter_aot_stats st = {.size = sizeof st};
    aiter_aot_get_stats(&st);
    CHECK(st.launches == 4 && V.calls(V.load) == modules_for_device(), "4 launches counted by both (%llu), no module "
          "loaded again", (unsigned long long)st.launches);
    return failed != 0;
}

static pthread_barrier_t start;

static void *first_call(void *out)
{
    pthread_barrier_wait(&start);
    *(aiter_aot_status *)out = topk(100);
    return NULL;
}

static int run_threads(void)
{
    enum { N = 64 };
    pthread_t t[N];
    aiter_aot_status s[N];
    pthread_barrier_init(&start, NULL, N);
    for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, first_call, &s[i]);
    int ok = 0;
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL), ok += s[i] == AITER_AOT_STATUS_OK;
    CHECK(ok == N, "%d of %d first calls at once returned OK (%s)", ok, N, aiter_aot_last_error());
    CHECK(find_double(), "the runtime loaded the double %s", V.soname);
    if (failed) return 1;
    check_loaded_once();
    CHECK(V.launches(0, NULL) == N, "%lu launches recorded", V.launches(0, NULL));
    for (unsigned long i = 0; i < N; i++) {
        fakegpu_launch_rec l;
        V.launches(i, &l);
        if (strcmp(l.kernel, "topk_softmax_v1") != 0) CHECK(0, "launch %lu: %s", i, l.kernel);
    }
    return failed != 0;
}

static int stub_calls(void *stub)
{
    int *n = stub ? dlsym(stub, "hipstub_calls") : dlsym(RTLD_DEFAULT, "hipstub_calls");
    return n ? *n : -1;
}

static int run_stub(const char *mode, const char *path, const char *stub_path, const char *ext_path)
{
    const char *g = getenv("AITER_AOT_GLOBAL_SYMBOLS");
    int global = g && strcmp(g, "1") == 0;
    void *stub = NULL;
    aiter_aot_status init = AITER_AOT_STATUS_OK, op;
    char lib[PATH_MAX] = "", why[512] = "";
    if (strcmp(mode, "global") == 0 || strcmp(mode, "dlopen-so") == 0)
        stub = dlopen(stub_path, RTLD_NOW | RTLD_GLOBAL);
    if (strcmp(mode, "between") == 0) {
        init = aiter_aot_init();
        stub = dlopen(stub_path, RTLD_NOW | RTLD_GLOBAL);
    }
    if (stub == NULL && strcmp(mode, "preload") != 0) return fprintf(stderr, "%s\n", dlerror()), 2;
    if (strcmp(mode, "dlopen-so") == 0) {
        void *ext = dlopen(ext_path, RTLD_NOW | RTLD_LOCAL);
        int (*ext_run)(char *, size_t) = ext ? (int (*)(char *, size_t))dlsym(ext, "ext_run") : NULL;
        if (ext_run == NULL) return fprintf(stderr, "%s\n", dlerror()), 2;
        op = (aiter_aot_status)ext_run(lib, sizeof lib);
        snprintf(why, sizeof why, "(the extension's thread-local error is its own)");
    } else {
        op = topk(100);
        snprintf(why, sizeof why, "%s", aiter_aot_last_error());
        snprintf(lib, sizeof lib, "%s", aiter_aot_gpu_library());
    }
    int calls = stub_calls(stub);
    int have_double = find_double();
    unsigned long double_calls = have_double ? V.calls("hipInit") + V.calls("hipGetDeviceCount") : 0;
    printf("mode %s%s: op %s (%s); bound %s; stub calls %d; double's hipInit+hipGetDeviceCount calls %lu\n", mode,
           global ? " +AITER_AOT_GLOBAL_SYMBOLS=1" : "", aiter_aot_status_string(op), why, lib,
           calls, double_calls);
    if (global) {
        CHECK(calls > 0 && double_calls == 0, "the opt-out reaches the stub, not the double");
    } else {
        CHECK(calls == 0, "the stub was never called");
        CHECK(init == AITER_AOT_STATUS_OK && op == AITER_AOT_STATUS_OK, "the op ran on the double");
        CHECK(same_file(lib, path), "the runtime bound the double (%s)", path);
        CHECK(have_double && double_calls >= 1, "the double answered");
        if (strcmp(mode, "dlopen-so") != 0) check_launch(0, "topk_softmax_v1", 25, 256);
    }
    return failed != 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) return fprintf(stderr, "usage: test_fakegpu MODE hip|cuda DOUBLE [STUB [EXT_SO]]\n"), 2;
    const char *mode = argv[1];
    if (strcmp(argv[2], "cuda") == 0) {
        V = (__typeof__(V)){1, "libcuda.so.1", "nvptx64-nvidia-cuda--sm_90", "sm_90a", "cuModuleLoadData",
                        "cuModuleGetFunction", 32, NULL, NULL, NULL};
        const char *t[16];
        size_t n = aiter_aot_targets(t, 16);
        int have = 0;
        for (size_t i = 0; i < n && i < 16; i++) have |= strstr(t[i], "--sm_90a") != NULL;
        if (!have) {
            printf("0 passed, 0 failed\nskipped: this build has no sm_90a code objects (configured without CUDA)\n");
            return 0;
        }
        if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == NULL) return fprintf(stderr, "%s\n", dlerror()), 2;
    } else {
        V = (__typeof__(V)){0, "libamdhip64.so.7", "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "gfx942",
                        "hipModuleLoadData", "hipModuleGetFunction", 64, NULL, NULL, NULL};
    }
    int r;
    if (strcmp(mode, "op") == 0) r = run_op();
    else if (strcmp(mode, "threads") == 0) r = run_threads();
    else if (argc >= 5 && !V.cuda) r = run_stub(mode, argv[3], argv[4], argc > 5 ? argv[5] : NULL);
    else return fprintf(stderr, "test_fakegpu: unknown mode %s\n", mode), 2;
    if (strcmp(mode, "op") == 0 || strcmp(mode, "threads") == 0)
        CHECK(same_file(aiter_aot_gpu_library(), argv[3]), "bound %s", aiter_aot_gpu_library());
    printf("%d passed, %d failed\n", passed, failed);
    return r || failed;
}
