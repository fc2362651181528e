/* load_frame.c : choosing a bundle frame for a device and loading its code objects. Kept
 * apart from loader.c's per-device cache so that it runs on the CPU with a stub GPU table
 * (tests/unit/test_loader, tests/fuzz/fuzz_bundle).
 *
 * The frame is decoded in a thread of its own while this one hands each code object to the GPU
 * as soon as its bytes are out: zstd's decoding (about 5 ms for the 3.5 MB sm_90a frame on an
 * H100's host) overlaps the GPU runtime's module loads and lookups (about 7 ms). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_sigmask: declared without relying on -pthread */
#include "loader.h"

#include <pthread.h>
#include <signal.h> /* sigfillset, pthread_sigmask */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strlen, strchr, strstr */
#include <time.h>   /* clock_gettime */

#include "target_id.h"

/* The short form a message shows for target string t: what follows "--". */
static const char *short_target(const char *t)
{
    const char *s = strstr(t, "--");
    return s ? s + 2 : t;
}

/* Appends ", item" to the list in have (cap bytes) if the whole item fits. */
static void list_append(char *have, size_t cap, const char *item)
{
    size_t n = strlen(have), add = strlen(item) + (n ? 2 : 0);
    if (n + add >= cap) return; /* the message lists what fits */
    if (n) memcpy(have + n, ", ", 2), n += 2;
    memcpy(have + n, item, strlen(item) + 1);
}

static aiter_aot_status pick_frame(const aot_bundle *b, const char *device_target, uint32_t *frame,
                                   aot_diag *d)
{
    aot_target dev, code;
    int best = -1;
    if (aot_target_parse(&dev, device_target) != 0)
        return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "device target \"%s\" is not a target ID",
                        device_target);
    char have[512] = "";
    for (uint32_t f = 0; f < b->frames; f++) {
        const char *t = aot_bundle_string(b, aot_bundle_frame(b, f).target);
        if (aot_target_parse(&code, t) != 0) continue;
        list_append(have, sizeof have, short_target(t));
        if (aot_target_compatible(&code, &dev) && aot_target_specificity(&code) > best)
            best = aot_target_specificity(&code), *frame = f;
    }
    if (best < 0)
        return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "no code object for %s; this library has %s",
                        short_target(device_target), have[0] ? have : "no targets");
    return AITER_AOT_STATUS_OK;
}

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The decoding thread and what it publishes; the lock orders its writes of the frame's bytes
 * before the loader's reads of them. */
typedef struct {
    aot_frame_decoder dec;
    pthread_mutex_t lock;
    pthread_cond_t more;
    size_t ready; /* bytes of dec.bytes that are final */
    int finished, stop;
    aiter_aot_status status;
    aot_diag diag;
    unsigned long long ns;
} decode_job;

enum { DECODE_CHUNK = 64 << 10 }; /* compressed bytes between two publications (~0.5 MB out) */

static void *decode_frame(void *arg)
{
    decode_job *j = arg;
    unsigned long long t0 = now_ns();
    for (int last = 0; !last;) {
        aot_diag d;
        aiter_aot_status s = aot_frame_decoder_step(&j->dec, DECODE_CHUNK, &d);
        pthread_mutex_lock(&j->lock);
        j->ready = j->dec.ready;
        if (s != AITER_AOT_STATUS_OK) j->status = s, j->diag = d;
        j->finished = s != AITER_AOT_STATUS_OK || j->dec.done;
        last = j->finished || j->stop;
        pthread_cond_broadcast(&j->more);
        pthread_mutex_unlock(&j->lock);
    }
    j->ns = now_ns() - t0; /* read after the join */
    return NULL;
}

/* Waits until bytes [0, end) of the frame are decoded. UINT64_MAX waits for the decoder to
 * stop: OK only if the zstd frame ended cleanly at csize (bytes after the last entry's, a second
 * frame or a bad checksum fail there). */
static aiter_aot_status wait_for(decode_job *j, uint64_t end, aot_diag *d)
{
    pthread_mutex_lock(&j->lock);
    while (j->ready < end && !j->finished) pthread_cond_wait(&j->more, &j->lock);
    aiter_aot_status s = j->ready >= end ? AITER_AOT_STATUS_OK : j->status;
    if (s != AITER_AOT_STATUS_OK && d) *d = j->diag;
    pthread_mutex_unlock(&j->lock);
    return s; /* finished short of end without an error cannot happen: open checked the entries */
}

/* Starts decode_frame in a thread that takes none of the program's signals but the ones a
 * fault raises (so that a crash there reaches the program's handlers); decodes in this thread
 * if no thread can be made. */
static int start_decoding(decode_job *j, pthread_t *thread)
{
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV), sigdelset(&all, SIGBUS), sigdelset(&all, SIGFPE), sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int threaded = pthread_create(thread, NULL, decode_frame, j) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!threaded) decode_frame(j);
    return threaded;
}

static aiter_aot_status load_entry(const aot_bundle *b, uint32_t e, decode_job *j, const aot_gpu *gpu,
                                   int device, aot_loaded *out, void **modules, aot_diag *d)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    void *module;
    /* the reader guarantees disjoint kernel ranges; this keeps the table safe regardless */
    if (r.kernel_count > b->kernels - out->nfns)
        return aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE, "entry %u: more kernels than the bundle has", e);
    AOT_FORWARD(wait_for(j, r.offset + r.size, d));
    AOT_FORWARD(aot_bundle_check_entry(b, e, j->dec.bytes, d));
    unsigned long long t0 = now_ns();
    AOT_FORWARD(gpu->load_module(device, j->dec.bytes + r.offset, &module, d));
    unsigned long long t1 = now_ns();
    out->module_load_ns += t1 - t0;
    modules[out->modules++] = module;
    for (uint32_t k = 0; k < r.kernel_count; k++) {
        aot_kernel_rec kr = aot_bundle_kernel(b, r.kernel_first + k);
        aot_kernel_fn *f = &out->fns[out->nfns];
        f->name = aot_bundle_string(b, kr.name);
        f->explicit_args = kr.explicit_args_size;
        f->wave_size = kr.wave_size;
        AOT_FORWARD(gpu->get_function(module, f->name, &f->fn, d));
        out->nfns++;
    }
    out->lookup_ns += now_ns() - t1;
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_load_frame(const aot_bundle *b, const char *device_target, const aot_gpu *gpu,
                                int device, aot_loaded *out, aot_diag *d)
{
    uint32_t frame = 0;
    decode_job j = {.lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER};
    pthread_t thread;
    memset(out, 0, sizeof *out);
    AOT_FORWARD(pick_frame(b, device_target, &frame, d));
    out->fns = calloc(b->kernels ? b->kernels : 1, sizeof *out->fns);
    void **modules = calloc(b->entries ? b->entries : 1, sizeof *modules); /* to give back on failure */
    if (out->fns == NULL || modules == NULL) {
        free(out->fns), free(modules), out->fns = NULL;
        return aot_fail(d, AITER_AOT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    unsigned long long t0 = now_ns();
    aiter_aot_status s = aot_frame_decoder_open(&j.dec, b, frame, d);
    unsigned long long open_ns = now_ns() - t0;
    if (s == AITER_AOT_STATUS_OK) {
        int cancel; /* the decoder writes into this frame's job: no cancellation until it is joined */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
        int threaded = start_decoding(&j, &thread);
        for (uint32_t e = 0; e < b->entries && s == AITER_AOT_STATUS_OK; e++)
            if (aot_bundle_entry(b, e).frame == frame) s = load_entry(b, e, &j, gpu, device, out, modules, d);
        if (s == AITER_AOT_STATUS_OK) s = wait_for(&j, UINT64_MAX, d);
        pthread_mutex_lock(&j.lock);
        j.stop = 1;
        pthread_mutex_unlock(&j.lock);
        if (threaded) pthread_join(thread, NULL);
        pthread_setcancelstate(cancel, NULL);
        out->frames = j.dec.done;
        out->decompress_ns = open_ns + j.ns;
    }
    aot_frame_decoder_close(&j.dec); /* the GPU runtime holds its own copies now */
    if (s != AITER_AOT_STATUS_OK) { /* a failed load changes nothing on the device */
        for (unsigned m = 0; m < out->modules && gpu->unload_module; m++) gpu->unload_module(device, modules[m]);
        free(out->fns), out->fns = NULL, out->nfns = 0;
    }
    free(modules);
    return s;
}
