/* aot_tile_map.h : a tensor's description for the copy engine, in the argument structs of the
 * kernels that take tiles by tensor copies (aot_copy_tile in aot_device.h). CUDA's CUtensorMap:
 * 128 opaque bytes, 64-byte aligned, made by the runtime (runtime/src/gpu.h, tile_map). Plain C:
 * included by host and device code alike. */
#ifndef AOT_TILE_MAP_H
#define AOT_TILE_MAP_H

#include <stdint.h>

typedef struct {
    __attribute__((aligned(64))) uint64_t opaque[16];
} aot_tile_map;

#endif
