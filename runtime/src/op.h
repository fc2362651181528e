/* op.h : what every op's code (op_moe.c, op_mhc.c) shares: kernel lookup and launch. */
#ifndef AOT_OP_H
#define AOT_OP_H

#include <stdint.h>

#include "loader.h"

static inline int aot_misaligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) != 0; }

/* Lanes per wave of kernel `name` on the current device (loading its code object if needed). */
aiter_aot_status aot_op_wave(const char *name, unsigned kargs_size, unsigned *wave, aot_diag *d);

/* Multiprocessors (CUs / SMs) of the current device. */
aiter_aot_status aot_op_multiprocessors(int *count, aot_diag *d);

/* Looks kernel `name` up for the current device and launches it with a 1-D grid; its argument
 * size is checked against the bundle's record. */
aiter_aot_status aot_op_launch(const char *name, void *kargs, unsigned kargs_size, unsigned grid,
                               unsigned block, void *stream, aot_diag *d);

#endif
