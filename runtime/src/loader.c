/* loader.c : loading code objects from the embedded bundle, once per device. The first call
 * for a device takes that device's lock and loads the frame whose target ID the device can run
 * (load_frame.c: decoded in a second thread while each code object goes to the GPU loader as
 * its bytes come out, every kernel resolved), then publishes the table with a release store;
 * later calls read it with an acquire load and take no lock. */
#include "loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

extern const unsigned char aot_embedded_bundle[];
extern const unsigned long long aot_embedded_bundle_size;

enum { SLOT_EMPTY = 0, SLOT_READY = 1, SLOT_FAILED = 2 };

typedef struct {
    atomic_int state;
    pthread_mutex_t lock;
    aiter_aot_status fail_status;
    aot_diag fail;
    aot_kernel_fn *fns;
    unsigned nfns;
} device_slot;

static device_slot slots[AOT_MAX_DEVICES];
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static atomic_ullong n_modules, n_frames, n_launches, n_devices, ns_decompress, ns_module_load, ns_lookup;

static void init_slots(void)
{
    for (int i = 0; i < AOT_MAX_DEVICES; i++) pthread_mutex_init(&slots[i].lock, NULL);
}

/* ---- the embedded bundle ---- */

static struct {
    pthread_once_t once;
    aot_bundle bundle;
    aiter_aot_status status;
    aot_diag diag;
} EB = {PTHREAD_ONCE_INIT};

static void open_embedded(void)
{
    EB.status = aot_bundle_open(&EB.bundle, aot_embedded_bundle, (size_t)aot_embedded_bundle_size, &EB.diag);
}

aiter_aot_status aot_embedded(const aot_bundle **b, aot_diag *d)
{
    pthread_once(&EB.once, open_embedded);
    *b = &EB.bundle;
    if (EB.status != AITER_AOT_STATUS_OK && d)
        aot_fail(d, EB.status, "embedded bundle: %s", EB.diag.msg);
    return EB.status;
}

static aiter_aot_status load_device(const aot_gpu *gpu, int device, device_slot *slot, aot_diag *d)
{
    const aot_bundle *b;
    char target[96];
    aot_loaded got = {0};
    AOT_FORWARD(aot_embedded(&b, d));
    AOT_FORWARD(gpu->device_target(device, target, sizeof target, d));
    aiter_aot_status s = aot_load_frame(b, target, gpu, device, &got, d);
    atomic_fetch_add(&n_modules, got.modules);
    atomic_fetch_add(&n_frames, got.frames);
    atomic_fetch_add(&ns_decompress, got.decompress_ns);
    atomic_fetch_add(&ns_module_load, got.module_load_ns);
    atomic_fetch_add(&ns_lookup, got.lookup_ns);
    if (s != AITER_AOT_STATUS_OK) return s;
    slot->fns = got.fns, slot->nfns = got.nfns;
    atomic_fetch_add(&n_devices, 1);
    return s;
}

static aiter_aot_status ready_slot(const aot_gpu *gpu, int device, device_slot **out, aot_diag *d)
{
    if (device < 0 || device >= AOT_MAX_DEVICES)
        return aot_fail(d, AITER_AOT_STATUS_UNSUPPORTED, "device %d: at most %d devices", device, AOT_MAX_DEVICES);
    pthread_once(&slots_once, init_slots);
    device_slot *slot = &slots[device];
    *out = slot;
    int st = atomic_load_explicit(&slot->state, memory_order_acquire);
    if (st == SLOT_EMPTY) {
        pthread_mutex_lock(&slot->lock);
        if (atomic_load_explicit(&slot->state, memory_order_relaxed) == SLOT_EMPTY) {
            slot->fail_status = load_device(gpu, device, slot, &slot->fail);
            atomic_store_explicit(&slot->state, slot->fail_status ? SLOT_FAILED : SLOT_READY,
                                  memory_order_release);
        }
        pthread_mutex_unlock(&slot->lock);
        st = atomic_load_explicit(&slot->state, memory_order_acquire);
    }
    if (st == SLOT_FAILED) {
        if (d) *d = slot->fail;
        return slot->fail_status;
    }
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_kernel(const char *name, unsigned args_size, const aot_kernel_fn **fn,
                            const aot_gpu **gpu, int *device, aot_diag *d)
{
    device_slot *slot = NULL;
    AOT_FORWARD(aot_gpu_bind(gpu, d));
    AOT_FORWARD((*gpu)->current_device(device, d));
    AOT_FORWARD(ready_slot(*gpu, *device, &slot, d));
    for (unsigned i = 0; i < slot->nfns; i++) {
        if (strcmp(slot->fns[i].name, name) != 0) continue;
        if (slot->fns[i].explicit_args != args_size)
            return aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE,
                            "kernel %s takes %u bytes of arguments, the runtime passes %u "
                            "(bundle and runtime do not match)", name, slot->fns[i].explicit_args, args_size);
        *fn = &slot->fns[i];
        return AITER_AOT_STATUS_OK;
    }
    return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "kernel %s is not in the code objects for device %d",
                    name, *device);
}

/* The same load aot_kernel does on a device's first op, for a named device and without a
 * kernel: a serving engine calls it before it captures graphs, so that no capture contains the
 * load (module loads are not allowed while a stream captures). */
aiter_aot_status aiter_aot_preload(int device)
{
    aot_diag d;
    const aot_gpu *gpu;
    device_slot *slot;
    int count = 0;
    aiter_aot_status s = aot_gpu_bind(&gpu, &d);
    if (s == AITER_AOT_STATUS_OK) s = gpu->device_count(&count, &d);
    if (s == AITER_AOT_STATUS_OK && (device < 0 || device >= count))
        s = aot_fail(&d, AITER_AOT_STATUS_INVALID_ARGUMENT, "aiter_aot_preload: device = %d; this process sees %d device%s",
                     device, count, count == 1 ? "" : "s");
    if (s == AITER_AOT_STATUS_OK) s = ready_slot(gpu, device, &slot, &d);
    return aot_api_return(s, &d);
}

void aot_counters_read(aot_counters *c)
{
    c->modules_loaded = atomic_load(&n_modules);
    c->frames_decompressed = atomic_load(&n_frames);
    c->launches = atomic_load(&n_launches);
    c->device_loads = atomic_load(&n_devices);
    c->decompress_ns = atomic_load(&ns_decompress);
    c->module_load_ns = atomic_load(&ns_module_load);
    c->lookup_ns = atomic_load(&ns_lookup);
}

void aot_count_launch(void) { atomic_fetch_add(&n_launches, 1); }
