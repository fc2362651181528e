/* bind_probe.c : which hipGetDevicePropertiesR0600 the runtime binds while a hip stub sits in
 * the global scope. Usage: bind_probe STUB REAL_LIB
 * The stub is dlopened RTLD_GLOBAL first, so the plain name in the global scope is the stub's.
 * After aiter_aot_init the runtime names the library it bound; the name at version hip_6.0 in
 * that library (the lookup the runtime makes, runtime/src/vendor_hip.c) must lie in REAL_LIB
 * by dladdr, and the stub must have seen no call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aiter_aot.h"

static int passed, failed;
#define CHECK(cond, ...) do { int ok_ = (cond); printf("%-4s ", ok_ ? "ok" : "FAIL"); printf(__VA_ARGS__); \
                              putchar('\n'); ok_ ? passed++ : failed++; } while (0)

static int same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return a && b && realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

static const char *object_of(void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "(none)";
}

int main(int argc, char **argv)
{
    if (argc != 3) return fprintf(stderr, "usage: bind_probe STUB REAL_LIB\n"), 2;
    void *stub = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (stub == NULL) return fprintf(stderr, "%s\n", dlerror()), 2;
    void *global = dlsym(RTLD_DEFAULT, "hipGetDevicePropertiesR0600");
    CHECK(same_file(object_of(global), argv[1]), "the global scope's hipGetDevicePropertiesR0600 is the stub's (%s)",
          object_of(global));
    aiter_aot_status s = aiter_aot_init();
    const char *lib = aiter_aot_gpu_library();
    printf("init: %s (%s); bound %s\n", aiter_aot_status_string(s), aiter_aot_last_error(), lib);
    CHECK(s == AITER_AOT_STATUS_OK || s == AITER_AOT_STATUS_NO_DEVICE, "the runtime bound a HIP library");
    CHECK(same_file(lib, argv[2]), "it is %s", argv[2]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    void *p = h ? dlvsym(h, "hipGetDevicePropertiesR0600", "hip_6.0") : NULL;
    CHECK(p != NULL && p != global, "the library has hipGetDevicePropertiesR0600@hip_6.0");
    CHECK(same_file(object_of(p), argv[2]), "dladdr names %s", object_of(p));
    int *calls = dlsym(stub, "hipstub_calls");
    CHECK(calls && *calls == 0, "the stub saw %d calls", calls ? *calls : -1);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
