/* coldstart.c : one fresh process's cold start to its first completed launch, step by step, for
 * three ways of getting the same sm_90a kernels onto a GPU. bench/coldstart.py runs it in many
 * processes and prints the medians.
 *   coldstart aot              the embedded bundle: aiter_aot_init() binds the driver and
 *                              checks the bundle, aiter_aot_preload(0) loads every module (the
 *                              library's counters split it into decompression, module loads
 *                              and kernel lookups); then a topk_softmax through the API
 *   coldstart files DIR        every DIR/<name>.cubin read from disk, loaded and its kernels
 *                              looked up and loaded (cuFuncLoad) through the driver; then the
 *                              same topk_softmax kernel
 *   coldstart nvrtc ROOT       every kernel source under ROOT/kernels compiled by NVRTC
 *                              (libnvrtc.so, found by dlopen), then as `files`
 * Prints one line of name=value fields, milliseconds from the top of main() unless named
 * otherwise; rss_* are kB: the resident set before loading, its peak while loading (the peak is
 * reset first), and what stays after. Exits non-zero if a step or the launch's check fails. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aiter_aot.h"
#include "cuda_driver.h"
#include "moe_kargs.h"

enum { TOKENS = 64, EXPERTS = 128, K = 8, MAX_MODULES = 64 };
static const char *const families[][2] = {{"moe", "topk_softmax"}, {"moe", "topk_route"}, {"moe", "moe_sorting"},
                                          {"moe", "moe_align"},    {"mhc", "mhc"},          {"fmha", "fmha"}};

static double t0;
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 - t0;
}

static long status_kb(const char *field)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field))) kb = atol(line + strlen(field) + 1);
    if (f) fclose(f);
    return kb;
}

static void reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w"); /* "5": resets VmHWM to the current RSS */
    if (f) fputs("5", f), fclose(f);
}

/* ---- the driver's module path, shared by `files` and `nvrtc` ---- */

static CUresult (*fn_count)(unsigned *, void *);
static CUresult (*fn_enumerate)(void **, unsigned, void *);
static CUresult (*fn_load)(void *); /* cuFuncLoad */
static void *modules[MAX_MODULES];
static unsigned n_modules, n_functions;
static double module_ms, lookup_ms;

static int bind_enumeration(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    fn_count = h ? dlsym(h, "cuModuleGetFunctionCount") : NULL;
    fn_enumerate = h ? dlsym(h, "cuModuleEnumerateFunctions") : NULL;
    fn_load = h ? dlsym(h, "cuFuncLoad") : NULL;
    return fn_count && fn_enumerate && fn_load ? 0 : (fprintf(stderr, "coldstart: driver lacks cuFuncLoad\n"), -1);
}

/* Loads one image and looks up every kernel in it, each loaded onto the device as the
 * runtime's cuModuleGetFunction by name does under CUDA's default lazy loading (enumerating
 * alone leaves the kernels unloaded until their first launch). */
static int load_image(const void *image, const char *what)
{
    void *mod, *fns[512];
    unsigned n;
    double a = now_ms();
    if (n_modules == MAX_MODULES || cu.module_load(&mod, image))
        return fprintf(stderr, "coldstart: cuModuleLoadData(%s) failed\n", what), -1;
    double b = now_ms();
    if (fn_count(&n, mod) || n > 512 || fn_enumerate(fns, n, mod))
        return fprintf(stderr, "coldstart: enumerating the kernels of %s failed\n", what), -1;
    for (unsigned i = 0; i < n; i++)
        if (fn_load(fns[i])) return fprintf(stderr, "coldstart: cuFuncLoad in %s failed\n", what), -1;
    module_ms += b - a, lookup_ms += now_ms() - b;
    modules[n_modules++] = mod, n_functions += n;
    return 0;
}

static void *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = n > 0 ? malloc((size_t)n + 1) : NULL; /* NUL-terminated: NVRTC takes a C string */
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) free(p), p = NULL;
    if (p) p[n] = 0;
    fclose(f);
    return p;
}

static int load_files(const char *dir, double *read_ms)
{
    char path[4096];
    *read_ms = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.cubin", dir, families[i][1]);
        double a = now_ms();
        void *image = read_file(path);
        *read_ms += now_ms() - a;
        if (!image) return fprintf(stderr, "coldstart: cannot read %s\n", path), -1;
        int rc = load_image(image, path);
        free(image);
        if (rc) return rc;
    }
    return 0;
}

/* ---- NVRTC ---- */

typedef int (*nvrtc_create_fn)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtc_compile_fn)(void *, int, const char *const *);
typedef int (*nvrtc_size_fn)(void *, size_t *);
typedef int (*nvrtc_get_fn)(void *, char *);
typedef int (*nvrtc_destroy_fn)(void **);

static int compile_all(const char *root, double *compile_ms)
{
    static const char *const libs[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                       "/usr/local/cuda/lib64/libnvrtc.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0] && !h; i++) h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return fprintf(stderr, "coldstart: no libnvrtc.so\n"), -1;
    nvrtc_create_fn create = (nvrtc_create_fn)dlsym(h, "nvrtcCreateProgram");
    nvrtc_compile_fn compile = (nvrtc_compile_fn)dlsym(h, "nvrtcCompileProgram");
    nvrtc_size_fn cubin_size = (nvrtc_size_fn)dlsym(h, "nvrtcGetCUBINSize"), log_size = (nvrtc_size_fn)dlsym(h, "nvrtcGetProgramLogSize");
    nvrtc_get_fn get_cubin = (nvrtc_get_fn)dlsym(h, "nvrtcGetCUBIN"), get_log = (nvrtc_get_fn)dlsym(h, "nvrtcGetProgramLog");
    nvrtc_destroy_fn destroy = (nvrtc_destroy_fn)dlsym(h, "nvrtcDestroyProgram");
    if (!create || !compile || !cubin_size || !log_size || !get_cubin || !get_log || !destroy)
        return fprintf(stderr, "coldstart: libnvrtc.so lacks an entry point\n"), -1;
    /* NVRTC has no system headers: the kernels need only stdint.h's exact-width types */
    char shim[] = "/tmp/coldstart-XXXXXX", path[4096], inc[3][4200];
    if (!mkdtemp(shim)) return perror("mkdtemp"), -1;
    snprintf(path, sizeof path, "%s/stdint.h", shim);
    FILE *f = fopen(path, "w");
    if (!f) return perror(path), -1;
    fputs("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
          "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
          "typedef unsigned long long uint64_t;\n", f);
    fclose(f);
    *compile_ms = 0;
    int rc = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0] && !rc; i++) {
        snprintf(path, sizeof path, "%s/kernels/%s/%s.hip", root, families[i][0], families[i][1]);
        char *src = read_file(path);
        if (!src) {
            fprintf(stderr, "coldstart: cannot read %s\n", path);
            rc = -1;
            break;
        }
        snprintf(inc[0], sizeof inc[0], "-I%s/kernels/include", root);
        snprintf(inc[1], sizeof inc[1], "-I%s/kernels/%s", root, families[i][0]);
        snprintf(inc[2], sizeof inc[2], "-I%s", shim);
        const char *opts[] = {"-arch=sm_90a", "-std=c++17", inc[0], inc[1], inc[2]};
        void *prog = NULL;
        size_t n = 0;
        double a = now_ms();
        int err = create(&prog, src, families[i][1], 0, NULL, NULL) || compile(prog, 5, opts);
        char *cubin = !err && !cubin_size(prog, &n) ? malloc(n) : NULL;
        if (cubin && get_cubin(prog, cubin)) free(cubin), cubin = NULL;
        *compile_ms += now_ms() - a;
        if (!cubin) {
            size_t ln = 0;
            char *log = prog && !log_size(prog, &ln) ? calloc(1, ln + 1) : NULL;
            if (log) get_log(prog, log);
            fprintf(stderr, "coldstart: NVRTC failed on %s:\n%s\n", path, log ? log : "");
            rc = -1;
            free(log);
        } else {
            rc = load_image(cubin, path);
        }
        free(cubin), free(src);
        if (prog) destroy(&prog);
    }
    snprintf(path, sizeof path, "%s/stdint.h", shim);
    remove(path), remove(shim);
    return rc;
}

/* ---- the first launch ---- */

/* Distinct ids in range for every row: the launch ran and wrote real results. */
static int check_ids(const int32_t *ids)
{
    for (int t = 0; t < TOKENS; t++)
        for (int i = 0; i < K; i++) {
            int32_t e = ids[t * K + i];
            if (e < 0 || e >= EXPERTS) return -1;
            for (int j = 0; j < i; j++)
                if (ids[t * K + j] == e) return -1;
        }
    return 0;
}

static int first_launch(int through_api)
{
    uint16_t logits[TOKENS * EXPERTS];
    int32_t ids[TOKENS * K];
    unsigned long long g, w, i;
    for (int n = 0; n < TOKENS * EXPERTS; n++) logits[n] = (uint16_t)(0x3f80 + (rand() & 0x7f)); /* bf16 1..2 */
    if (cu.alloc(&g, sizeof logits) || cu.alloc(&w, sizeof(float) * TOKENS * K) || cu.alloc(&i, sizeof ids) ||
        cu.htod(g, logits, sizeof logits))
        return fprintf(stderr, "coldstart: device memory\n"), -1;
    if (through_api) {
        aiter_aot_topk_softmax_args a = {sizeof a, (void *)(uintptr_t)g, AITER_AOT_DTYPE_BF16, EXPERTS, TOKENS, EXPERTS, K,
                                         1, (float *)(uintptr_t)w, (int32_t *)(uintptr_t)i, NULL};
        if (aiter_aot_topk_softmax(&a, NULL)) return fprintf(stderr, "coldstart: %s\n", aiter_aot_last_error()), -1;
    } else {
        /* topk_softmax_v4: 128 experts, 4 a lane, a warp a row, 8 rows a block */
        void *fn;
        unsigned m = 0;
        while (m < n_modules && cu.get_function(&fn, modules[m], "topk_softmax_v4")) m++;
        if (m == n_modules) return fprintf(stderr, "coldstart: no topk_softmax_v4\n"), -1;
        aot_topk_kargs k = {(void *)(uintptr_t)g, (float *)(uintptr_t)w, (int32_t *)(uintptr_t)i, NULL, EXPERTS,
                            TOKENS, EXPERTS, K, 1, AOT_GATING_BF16, 0};
        void *params[] = {&k};
        if (cu.launch(fn, (TOKENS + 7) / 8, 1, 1, AOT_TOPK_BLOCK, 1, 1, 0, NULL, params, NULL))
            return fprintf(stderr, "coldstart: cuLaunchKernel failed\n"), -1;
    }
    if (cu.sync() || cu.dtoh(ids, i, sizeof ids)) return fprintf(stderr, "coldstart: the launch failed\n"), -1;
    return check_ids(ids) ? (fprintf(stderr, "coldstart: wrong ids\n"), -1) : 0;
}

int main(int argc, char **argv)
{
    t0 = 0, t0 = now_ms();
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "aot") && !(argc > 2 && (!strcmp(mode, "files") || !strcmp(mode, "nvrtc"))))
        return fprintf(stderr, "usage: coldstart aot | files CUBIN_DIR | nvrtc SOURCE_ROOT\n"), 2;
    if (cuda_bind()) return 1;
    double t_init = now_ms();
    long rss_before = status_kb("VmRSS:");
    reset_peak_rss();
    char steps[256];
    if (!strcmp(mode, "aot")) {
        double a = now_ms();
        if (aiter_aot_init()) return fprintf(stderr, "coldstart: %s\n", aiter_aot_last_error()), 1;
        double b = now_ms();
        if (aiter_aot_preload(0)) return fprintf(stderr, "coldstart: %s\n", aiter_aot_last_error()), 1;
        aiter_aot_stats s = {.size = sizeof s};
        aiter_aot_get_stats(&s);
        snprintf(steps, sizeof steps, "bind=%.3f preload=%.3f decompress=%.3f module_load=%.3f lookup=%.3f modules=%llu",
                 b - a, now_ms() - b, s.decompress_ns / 1e6, s.module_load_ns / 1e6, s.function_lookup_ns / 1e6,
                 (unsigned long long)s.modules_loaded);
    } else {
        double prep_ms;
        if (bind_enumeration()) return 1;
        if (!strcmp(mode, "files") ? load_files(argv[2], &prep_ms) : compile_all(argv[2], &prep_ms)) return 1;
        snprintf(steps, sizeof steps, "%s=%.3f module_load=%.3f lookup=%.3f modules=%u functions=%u",
                 !strcmp(mode, "files") ? "read" : "compile", prep_ms, module_ms, lookup_ms, n_modules, n_functions);
    }
    double t_loaded = now_ms();
    long rss_peak = status_kb("VmHWM:"), rss_after = status_kb("VmRSS:");
    if (first_launch(!strcmp(mode, "aot"))) return 1;
    double t_done = now_ms();
    printf("mode=%s cuda_init=%.3f load=%.3f %s first_launch=%.3f total=%.3f rss_before=%ld rss_peak=%ld "
           "rss_after=%ld\n", mode, t_init, t_loaded - t_init, steps, t_done - t_loaded, t_done, rss_before, rss_peak,
           rss_after);
    return 0;
}
