/* decompress_rate.c : how fast the bundle reader decompresses one target's frame, through
 * aot_bundle_decompress_frame as the runtime's loader calls it (a chained frame decompresses
 * its base frame first). Prints one tab-separated line: the target, its bytes, whether it is
 * chained, then
 *   first   the first call of this process, as the loader pays it once: the fresh memory it
 *           writes is faulted in page by page
 *   median  the median of RUNS calls after it, with malloc told to keep freed memory
 *           (mallopt), so that the figure is the decoding and not the page faults
 *   fault   what touching one fresh 4 KiB page costs on this machine, for reading "first"
 *   zstd    the median of RUNS one-shot decodings of the same frame by zstd's fastest call
 *           (ZSTD_decompressDCtx into a buffer of the right size, dictionary and base frame
 *           given alike): what this machine's libzstd does with these bytes at best
 * Usage: decompress_rate BUNDLE FRAME [RUNS]; built and run by bench/builder/run.sh, one
 * process per frame. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <zstd.h>

#include "bundle.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)size)) != NULL &&
        fread(data, 1, (size_t)size, f) != (size_t)size)
        free(data), data = NULL;
    if (f) fclose(f);
    *n = size > 0 ? (size_t)size : 0;
    return data;
}

/* Seconds of one decompression of frame f, or a negative value when it fails. */
static double once(const aot_bundle *b, uint32_t f, aot_diag *d)
{
    unsigned char *bytes;
    double t0 = now();
    if (aot_bundle_decompress_frame(b, f, &bytes, d) != AITER_AOT_STATUS_OK) return -1;
    double t = now() - t0;
    free(bytes);
    return t;
}

/* Seconds of one one-shot decompression of frame f by libzstd alone, into `into` (usize
 * bytes), the base frame's bytes `prefix` given for a chained frame; negative on failure. */
static double zstd_once(const aot_bundle *b, uint32_t f, const unsigned char *prefix, size_t prefix_size,
                        unsigned char *into)
{
    aot_frame_rec fr = aot_bundle_frame(b, f);
    double t0 = now();
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t r = dctx ? 0 : (size_t)-1;
    if (!ZSTD_isError(r) && (fr.flags & AOT_FRAME_FLAG_DICT))
        r = ZSTD_DCtx_loadDictionary(dctx, b->base + b->dict_off, b->dict_size);
    if (!ZSTD_isError(r) && prefix) r = ZSTD_DCtx_refPrefix(dctx, prefix, prefix_size);
    if (!ZSTD_isError(r)) r = ZSTD_decompressDCtx(dctx, into, (size_t)fr.usize, b->base + fr.offset, (size_t)fr.csize);
    ZSTD_freeDCtx(dctx);
    double t = now() - t0;
    return ZSTD_isError(r) || r != fr.usize ? -1 : t;
}

/* The median of `runs` zstd_once calls (a chained frame: its base frame's decoding included, as
 * in ours), or a negative value. */
static double zstd_median(const aot_bundle *b, uint32_t f, int runs, double *t)
{
    aot_frame_rec fr = aot_bundle_frame(b, f);
    int chained = (fr.flags & AOT_FRAME_FLAG_PREFIX) != 0;
    uint32_t bi = chained ? AOT_FRAME_BASE(fr.flags) : f;
    size_t base_size = chained ? (size_t)aot_bundle_frame(b, bi).usize : 0;
    unsigned char *base = malloc(base_size + 1), *into = malloc((size_t)fr.usize + 1);
    double result = base && into ? 0 : -1;
    for (int r = 0; r < runs && result == 0; r++) {
        double tb = chained ? zstd_once(b, bi, NULL, 0, base) : 0, tf = zstd_once(b, f, chained ? base : NULL, base_size, into);
        if (tb < 0 || tf < 0) result = -1;
        t[r] = tb + tf;
    }
    if (result == 0) qsort(t, (size_t)runs, sizeof *t, by_value), result = t[runs / 2];
    free(base);
    free(into);
    return result;
}

/* Microseconds to write one byte into each page of fresh anonymous memory, per page. */
static double fault_us(void)
{
    enum { PAGES = 1024, PAGE = 4096 };
    volatile unsigned char *p = mmap(NULL, (size_t)PAGES * PAGE, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    double t0 = now();
    for (size_t i = 0; i < PAGES; i++) p[i * PAGE] = 1;
    double t = now() - t0;
    munmap((void *)p, (size_t)PAGES * PAGE);
    return t * 1e6 / PAGES;
}

int main(int argc, char **argv)
{
    if (argc < 3) return fprintf(stderr, "usage: decompress_rate BUNDLE FRAME [RUNS]\n"), 2;
    uint32_t f = (uint32_t)atoi(argv[2]);
    int runs = argc > 3 ? atoi(argv[3]) : 21;
    size_t n;
    unsigned char *data = slurp(argv[1], &n);
    aot_bundle b;
    aot_diag d = {""};
    if (data == NULL || runs < 1 || aot_bundle_open(&b, data, n, &d) != AITER_AOT_STATUS_OK)
        return fprintf(stderr, "%s: %s\n", argv[1], data ? d.msg : "cannot read"), 1;
    if (f >= b.frames) return fprintf(stderr, "%s: no frame %u\n", argv[1], f), 1;
    double first = once(&b, f, &d), *t = malloc((size_t)runs * sizeof *t);
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    for (int r = 0; r < runs && t && first >= 0; r++)
        if ((t[r] = once(&b, f, &d)) < 0) first = -1;
    if (t == NULL || first < 0) return fprintf(stderr, "frame %u: %s\n", f, d.msg), 1;
    qsort(t, (size_t)runs, sizeof *t, by_value);
    double ours = t[runs / 2], zstd = zstd_median(&b, f, runs, t);
    if (zstd < 0) return fprintf(stderr, "frame %u: libzstd alone failed to decode it\n", f), 1;
    aot_frame_rec fr = aot_bundle_frame(&b, f);
    printf("%s\t%llu\t%s\t%.3f\t%.3f\t%.1f\t%.3f\n", aot_bundle_string(&b, fr.target), (unsigned long long)fr.usize,
           fr.flags & AOT_FRAME_FLAG_PREFIX ? "chained" : "-", first * 1e3, ours * 1e3, fault_us(), zstd * 1e3);
    free(t);
    free(data);
    return 0;
}
