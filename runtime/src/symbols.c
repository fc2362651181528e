/* symbols.c : taking GPU-runtime entry points from the vendor library itself. dlsym and
 * dlvsym on the library's own handle search only that library and its dependencies, never the
 * global scope where an earlier RTLD_GLOBAL or LD_PRELOAD library could have put its own
 * hip* or cu* names; dladdr then confirms each address lies in the vendor library. */
#define _GNU_SOURCE /* dlvsym, dladdr, RTLD_NOLOAD, dlinfo */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"

aiter_aot_status aot_vendor_open(const char *const *sonames, int may_load, void **handle,
                                 char *path, size_t cap, aot_diag *d)
{
    *handle = NULL;
    for (int pass = 0; pass < (may_load ? 2 : 1) && *handle == NULL; pass++)
        for (int i = 0; sonames[i] && *handle == NULL; i++)
            *handle = dlopen(sonames[i], pass == 0 ? RTLD_NOW | RTLD_NOLOAD : RTLD_NOW | RTLD_LOCAL);
    if (*handle == NULL)
        return aot_fail(d, AITER_AOT_STATUS_GPU_RUNTIME, "cannot load %s%s", sonames[0],
                        may_load ? " (is the GPU driver/runtime installed?)" : " (not loaded)");
    struct link_map *map = NULL;
    if (dlinfo(*handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL)
        return aot_fail(d, AITER_AOT_STATUS_GPU_RUNTIME, "%s: no link map", sonames[0]);
    snprintf(path, cap, "%s", map->l_name);
    return AITER_AOT_STATUS_OK;
}

static void *lookup(void *handle, const aot_symbol *s, int global)
{
    if (global) return dlsym(RTLD_DEFAULT, s->name);
    return s->version ? dlvsym(handle, s->name, s->version) : dlsym(handle, s->name);
}

aiter_aot_status aot_vendor_resolve(void *handle, const char *path, const aot_symbol *syms,
                                    int global, aot_diag *d)
{
    for (const aot_symbol *s = syms; s->name; s++) {
        void *p = lookup(handle, s, global);
        *s->slot = p;
        if (p == NULL) {
            if (s->optional) continue;
            return aot_fail(d, AITER_AOT_STATUS_GPU_RUNTIME, "%s: %s%s%s not found", path, s->name,
                            s->version ? "@" : "", s->version ? s->version : "");
        }
        Dl_info info;
        if (global) continue; /* asked for interposition on purpose */
        if (dladdr(p, &info) == 0 || info.dli_fname == NULL || strcmp(info.dli_fname, path) != 0)
            return aot_fail(d, AITER_AOT_STATUS_INTERPOSED,
                            "%s resolved into %s, not %s; refusing to run (set "
                            "AITER_AOT_GLOBAL_SYMBOLS=1 to allow interposition)",
                            s->name, info.dli_fname ? info.dli_fname : "an unknown object", path);
    }
    return AITER_AOT_STATUS_OK;
}
