/* fakegpu.h : what the fake devices (tests/fakegpu/fakehip.c: libamdhip64.so.7, fakecuda.c:
 * libcuda.so.1) record, for the tests that run the runtime against them. Each double exports
 * these under the version FAKEGPU_1; a test finds them with dlsym on the double's handle
 * (dlopen of its soname with RTLD_NOLOAD once the runtime has loaded it). With FAKEGPU_REPORT=1
 * in the environment a double prints fakegpu_report() to stderr at exit. */
#ifndef FAKEGPU_H
#define FAKEGPU_H

#include <stddef.h>

typedef struct {
    char kernel[128];       /* the function's name as hipModuleGetFunction/cuModuleGetFunction got it */
    unsigned grid[3], block[3], shared, cluster[3];
    void *stream;
    unsigned args_nonnull;  /* kernelParams[0] was a pointer */
} fakegpu_launch_rec;

/* How often the entry point `name` ("hipModuleLoadData") was called; 0 for one never called. */
typedef unsigned long (*fakegpu_calls_fn)(const char *name);
/* Launches recorded so far; with i < that count, copies the i-th (in launch order) to *out. */
typedef unsigned long (*fakegpu_launches_fn)(unsigned long i, fakegpu_launch_rec *out);
/* Code objects loaded; *most_of_one: the largest number of loads of byte-identical images. */
typedef unsigned long (*fakegpu_modules_fn)(unsigned long *most_of_one);
/* Writes every counter, module and launch to stderr. */
typedef void (*fakegpu_report_fn)(void);

#endif
