/* multi_device.c : the runtime's per-device loading under concurrency, on every visible CUDA
 * device (issue 8). Prints one line per check, then "N passed, N failed".
 *  1. 16 threads per device make their first call at the same moment, each on its own stream
 *     and its own device; every output is checked against the fp64 reference, and the
 *     runtime's counters must say: one load per device, the device's modules loaded once each.
 *  2. One thread alternates devices call by call (mHC post and topk_softmax), checked.
 *  3. A poisoned buffer on each device is still all poison afterwards: no kernel launched for
 *     one device wrote another's memory.
 * It also prints each ordinal's PCI bus id, so that a run under CUDA_VISIBLE_DEVICES=1,0 can be
 * compared with a plain run (tests/gpu/run-on-device.sh does). */
#define _GNU_SOURCE /* pthread_barrier_t */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "harness.h"

#define THREADS_PER_DEVICE 16
#define MAX_DEVICES 8
#define SENTINEL_BYTES (1 << 20)

static int devices;
static pthread_barrier_t start_line;
static harness_tally tallies[MAX_DEVICES * THREADS_PER_DEVICE];

static void *first_call(void *arg)
{
    const int i = (int)(intptr_t)arg, dev = i / THREADS_PER_DEVICE;
    void *stream = NULL;
    int ok = cuda_use_device(dev) == 0 && cu.stream_create(&stream, 1 /* non-blocking */) == 0;
    harness_mem m = cuda_mem(stream);
    pthread_barrier_wait(&start_line);
    if (!ok) return tallies[i].failed++, NULL;
    if (i % 2) {
        topk_case c = {200 + i, 64 + 32 * (i % 4), 1 + i % 8, i & 2, (aiter_aot_dtype)(i % 3), 0, 0};
        harness_topk(&m, &c, 700 + (uint64_t)i, &tallies[i]);
    } else {
        mhc_case c = {MHC_POST, 3 + i, 4096, 0, 0, 0, 0};
        harness_mhc(&m, &c, 900 + (uint64_t)i, &tallies[i]);
    }
    cu.stream_destroy(stream);
    return NULL;
}

static void check(harness_tally *t, int ok, const char *what) { harness_report(t, ok, what, ""); }

static void concurrent_first_calls(harness_tally *t)
{
    const int n = devices * THREADS_PER_DEVICE;
    pthread_t th[MAX_DEVICES * THREADS_PER_DEVICE];
    pthread_barrier_init(&start_line, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, first_call, (void *)(intptr_t)i);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= tallies[i].passed == 1 && tallies[i].failed == 0;
    char what[160];
    snprintf(what, sizeof what, "%d threads (%d per device) first calls at once: every output correct", n,
             THREADS_PER_DEVICE);
    check(t, ok, what);
    aiter_aot_stats st = {.size = sizeof st};
    aiter_aot_get_stats(&st);
    const char *mods[32];
    size_t per_device = aiter_aot_kernels("sm_90a", mods, 32);
    snprintf(what, sizeof what, "runtime counters: %llu device loads, %llu modules loaded (%d devices x %zu), %llu frames",
             (unsigned long long)st.device_loads, (unsigned long long)st.modules_loaded, devices, per_device,
             (unsigned long long)st.frames_decompressed);
    check(t, st.device_loads == (unsigned long long)devices && st.modules_loaded == devices * per_device &&
                 st.frames_decompressed == (unsigned long long)devices, what);
}

static void alternate(harness_tally *t)
{
    harness_tally mine = {0, 0, 0};
    for (int i = 0; i < 4 * devices; i++) {
        if (cuda_use_device(i % devices)) {
            mine.failed++;
            continue;
        }
        harness_mem m = cuda_mem(NULL);
        topk_case c = {129 + i, 256, 8, 1, AITER_AOT_DTYPE_BF16, 0, 0};
        mhc_case p = {MHC_POST, 5 + i, 7168, 0, 0, 0, 0};
        harness_topk(&m, &c, 1300 + (uint64_t)i, &mine);
        harness_mhc(&m, &p, 1400 + (uint64_t)i, &mine);
    }
    char what[96];
    snprintf(what, sizeof what, "one thread alternating devices call by call: %d calls correct", mine.passed);
    check(t, mine.failed == 0 && mine.passed == 8 * devices, what);
}

int main(void)
{
    if (cuda_bind() || cu.device_count(&devices) || devices < 1) return 2;
    devices = devices > MAX_DEVICES ? MAX_DEVICES : devices;
    harness_tally t = {0, 0, 1};
    void *sentinel[MAX_DEVICES];
    for (int d = 0; d < devices; d++) {
        int bus = -1;
        cuda_use_device(d);
        cu.device_pci_bus(&bus, 33 /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID */, d);
        printf("ordinal %d: PCI bus %d\n", d, bus);
        sentinel[d] = cuda_mem(NULL).alloc(SENTINEL_BYTES);
    }
    concurrent_first_calls(&t);
    alternate(&t);
    unsigned char *host = malloc(SENTINEL_BYTES);
    for (int d = 0; d < devices; d++) {
        harness_mem m = (cuda_use_device(d), cuda_mem(NULL));
        int ok = m.sync() == 0 && m.download(host, sentinel[d], SENTINEL_BYTES) == 0;
        for (size_t i = 0; ok && i < SENTINEL_BYTES; i++) ok = host[i] == 0xff;
        char what[96];
        snprintf(what, sizeof what, "device %d: its poisoned sentinel buffer is untouched", d);
        check(&t, ok, what);
        m.release(sentinel[d]);
    }
    free(host);
    printf("%d device(s)\n", devices);
    return harness_finish(&t);
}
