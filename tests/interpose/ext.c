/* ext.c : a shared object that contains libaiter_aot.a, like a Python extension module. */
#include <stdio.h>

#include "aiter_aot.h"

int ext_run(char *lib, size_t cap);

int ext_run(char *lib, size_t cap)
{
    aiter_aot_status s = aiter_aot_init();
    snprintf(lib, cap, "%s", aiter_aot_gpu_library());
    return (int)s;
}
