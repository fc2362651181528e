/* api.c : the op-independent public API: status strings, the thread's last error, version,
 * init, what is embedded, counters. */
#include <stddef.h> /* offsetof */
#include <stdio.h>
#include <string.h>

#include "aiter_aot.h"
#include "api.h"
#include "loader.h"
#include "target_id.h"

static _Thread_local char last_error[sizeof(((aot_diag *)0)->msg)];

aiter_aot_status aot_api_return(aiter_aot_status s, const aot_diag *d)
{
    if (s == AITER_AOT_STATUS_OK) last_error[0] = 0;
    else snprintf(last_error, sizeof last_error, "%s", d ? d->msg : aiter_aot_status_string(s));
    return s;
}

aiter_aot_status aot_api_args(void *full, size_t full_size, const void *args, size_t min_size,
                              const char *op, aot_diag *d)
{
    if (args == NULL) return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "%s: args is NULL", op);
    size_t given;
    memcpy(&given, args, sizeof given);
    if (given < min_size)
        return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                        "%s: args.size is %zu; set it to sizeof the args struct (%zu)", op, given, full_size);
    memset(full, 0, full_size);
    memcpy(full, args, given < full_size ? given : full_size);
    return AITER_AOT_STATUS_OK;
}

const char *aiter_aot_status_string(aiter_aot_status status)
{
    static const char *const names[] = {
        "ok", "invalid argument", "no device", "no code object for this device",
        "corrupt bundle", "GPU runtime error", "GPU runtime entry point interposed",
        "out of memory", "launch failed", "unsupported"};
    unsigned i = (unsigned)status;
    return i < sizeof names / sizeof names[0] ? names[i] : "unknown status";
}

const char *aiter_aot_last_error(void) { return last_error; }

unsigned aiter_aot_version_number(void) { return AITER_AOT_VERSION_NUMBER; }

const char *aiter_aot_version_string(void)
{
#define AOT_STR2(x) #x
#define AOT_STR(x) AOT_STR2(x)
    return AOT_STR(AITER_AOT_VERSION_MAJOR) "." AOT_STR(AITER_AOT_VERSION_MINOR) "." AOT_STR(AITER_AOT_VERSION_PATCH);
}

aiter_aot_status aiter_aot_init(void)
{
    aot_diag d;
    const aot_bundle *b;
    const aot_gpu *gpu;
    aiter_aot_status s = aot_embedded(&b, &d);
    if (s == AITER_AOT_STATUS_OK) s = aot_gpu_bind(&gpu, &d);
    return aot_api_return(s, &d);
}

size_t aiter_aot_targets(const char **out, size_t cap)
{
    const aot_bundle *b;
    aot_diag d;
    if (aot_api_return(aot_embedded(&b, &d), &d) != AITER_AOT_STATUS_OK) return 0;
    for (uint32_t f = 0; f < b->frames && f < cap; f++) out[f] = aot_bundle_string(b, aot_bundle_frame(b, f).target);
    return b->frames;
}

static int target_matches(const char *want, const char *have)
{
    aot_target w, h;
    if (want == NULL) return 1;
    if (aot_target_parse(&w, want) != 0 || aot_target_parse(&h, have) != 0) return 0;
    return strcmp(w.processor, h.processor) == 0 && (!strchr(want, ':') || (w.xnack == h.xnack && w.sramecc == h.sramecc));
}

/* Whether an entry before `e` for a matching target has e's module name: each name counts once,
 * found in the bundle itself, so the count does not depend on how many names fit in out. */
static int named_before(const aot_bundle *b, const char *target, uint32_t e)
{
    const char *name = aot_bundle_string(b, aot_bundle_entry(b, e).name);
    for (uint32_t i = 0; i < e; i++) {
        aot_entry_rec r = aot_bundle_entry(b, i);
        if (target_matches(target, aot_bundle_string(b, r.target)) && strcmp(aot_bundle_string(b, r.name), name) == 0)
            return 1;
    }
    return 0;
}

size_t aiter_aot_kernels(const char *target, const char **out, size_t cap)
{
    const aot_bundle *b;
    aot_diag d;
    size_t n = 0;
    if (aot_api_return(aot_embedded(&b, &d), &d) != AITER_AOT_STATUS_OK) return 0;
    for (uint32_t e = 0; e < b->entries; e++) {
        aot_entry_rec r = aot_bundle_entry(b, e);
        if (!target_matches(target, aot_bundle_string(b, r.target)) || named_before(b, target, e)) continue;
        if (n < cap) out[n] = aot_bundle_string(b, r.name);
        n++;
    }
    return n;
}

aiter_aot_status aiter_aot_get_stats(aiter_aot_stats *stats)
{
    aot_diag d;
    const size_t first_version = offsetof(aiter_aot_stats, decompress_ns);
    if (stats == NULL || stats->size < first_version)
        return aot_api_return(aot_fail(&d, AITER_AOT_STATUS_INVALID_ARGUMENT,
                                       "aiter_aot_get_stats: stats is NULL or stats->size too small"), &d);
    aot_counters c;
    aot_counters_read(&c);
    stats->modules_loaded = c.modules_loaded;
    stats->frames_decompressed = c.frames_decompressed;
    stats->launches = c.launches;
    stats->device_loads = c.device_loads;
    if (stats->size >= sizeof *stats) {
        stats->decompress_ns = c.decompress_ns;
        stats->module_load_ns = c.module_load_ns;
        stats->function_lookup_ns = c.lookup_ns;
    }
    return aot_api_return(AITER_AOT_STATUS_OK, NULL);
}

aiter_aot_status aiter_aot_device_target(char *buf, size_t cap)
{
    aot_diag d;
    const aot_gpu *gpu;
    int dev = -1;
    if (buf == NULL || cap == 0)
        return aot_api_return(aot_fail(&d, AITER_AOT_STATUS_INVALID_ARGUMENT, "aiter_aot_device_target: no buffer"), &d);
    aiter_aot_status s = aot_gpu_bind(&gpu, &d);
    if (s == AITER_AOT_STATUS_OK) s = gpu->current_device(&dev, &d);
    if (s == AITER_AOT_STATUS_OK) s = gpu->device_target(dev, buf, cap, &d);
    return aot_api_return(s, &d);
}

const char *aiter_aot_gpu_library(void)
{
    aot_diag d;
    const aot_gpu *gpu;
    aot_api_return(aot_gpu_bind(&gpu, &d), &d);
    /* under the opt-out the entry points come from whichever object the global scope names */
    if (gpu->global_symbols && gpu->library[0]) return AOT_GLOBAL_SCOPE_LIBRARY;
    return gpu->library; /* bound even when the device is missing; "" if nothing was */
}
