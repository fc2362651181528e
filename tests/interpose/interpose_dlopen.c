/* interpose_dlopen.c : the Python-extension case. The stub is loaded RTLD_GLOBAL first, then
 * a shared object containing libaiter_aot.a is dlopened and calls the API.
 * Usage: interpose_dlopen STUB EXT_SO REAL_LIB */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) return fprintf(stderr, "usage: interpose_dlopen STUB EXT_SO REAL_LIB\n"), 2;
    void *stub = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    void *ext = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!stub || !ext) return fprintf(stderr, "%s\n", dlerror()), 2;
    int (*run)(char *, size_t) = (int (*)(char *, size_t))dlsym(ext, "ext_run");
    char lib[PATH_MAX], real[PATH_MAX] = "", bound[PATH_MAX] = "";
    int status = run(lib, sizeof lib);
    int calls = *(int *)dlsym(stub, "hipstub_calls");
    if (!realpath(argv[3], real) || !realpath(lib, bound)) bound[0] = 0;
    const char *g = getenv("AITER_AOT_GLOBAL_SYMBOLS");
    int global = g && !strcmp(g, "1");
    printf("dlopened extension%s: status %d, bound %s, stub calls %d\n", global ? " +AITER_AOT_GLOBAL_SYMBOLS=1" : "",
           status, lib, calls);
    int ok = global ? calls > 0 : calls == 0 && !strcmp(real, bound) && status == 2 /* NO_DEVICE */;
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}
