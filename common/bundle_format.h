/* bundle_format.h : the on-disk records of bundle format version 2. The specification, with
 * every field's meaning and every rule a reader enforces, is docs/bundle-format.md. These
 * structs are never overlaid on bundle bytes (which may be unaligned); bundle.c decodes each
 * field from little-endian bytes at the offsets given here. */
#ifndef AOT_BUNDLE_FORMAT_H
#define AOT_BUNDLE_FORMAT_H

#include <stdint.h> /* uint32_t, uint64_t */

#define AOT_BUNDLE_MAGIC "AITERAOT"
#define AOT_BUNDLE_VERSION 2
#define AOT_BUNDLE_FLAG_DICT 0x1u
#define AOT_BUNDLE_KNOWN_FLAGS AOT_BUNDLE_FLAG_DICT

#define AOT_HEADER_SIZE 64
#define AOT_ENTRY_SIZE 48
#define AOT_KERNEL_SIZE 48
#define AOT_ARG_SIZE 16
#define AOT_FRAME_SIZE 32

#define AOT_MAX_COUNT 65536u               /* per table */
#define AOT_MAX_STRINGS (1u << 24)         /* string table bytes (and at least 1, the "") */
#define AOT_MAX_DICT (1u << 24)            /* dictionary bytes */
#define AOT_MAX_FRAME_USIZE (1ull << 30)   /* 1 GiB decompressed per frame */
#define AOT_MAX_TOTAL_USIZE (1ull << 30)   /* and 1 GiB for all frames together */
#define AOT_MAX_FIND_CANDIDATES 16        /* magic strings aot_bundle_find tries */
#define AOT_MAX_MODULE_NAME 63             /* module names: [A-Za-z0-9_.-]{1,63}, no leading '.' */
#define AOT_FRAME_FLAG_DICT 0x1u
#define AOT_FRAME_FLAG_PREFIX 0x2u        /* bits 16..31: base frame, whose bytes are the prefix */
#define AOT_FRAME_BASE(flags) ((flags) >> 16)
#define AOT_KERNEL_FLAG_DYNAMIC_STACK 0x1u

typedef enum { AOT_KIND_AMDGPU = 1, AOT_KIND_CUBIN = 2 } aot_kind;

/* Header field offsets. */
enum {
    AOT_H_MAGIC = 0, AOT_H_VERSION = 8, AOT_H_FLAGS = 10, AOT_H_HEADER_SIZE = 12,
    AOT_H_ENTRIES = 16, AOT_H_KERNELS = 20, AOT_H_ARGS = 24, AOT_H_FRAMES = 28,
    AOT_H_STRINGS = 32, AOT_H_DICT = 36, AOT_H_TOTAL = 40, AOT_H_HASH = 48
};

/* Decoded records. */
typedef struct {
    uint32_t name, target;
    uint16_t kind, abi;
    uint32_t e_flags, frame, kernel_first, kernel_count;
    uint64_t offset, size, hash;
} aot_entry_rec;

typedef struct {
    uint32_t name, arg_first, arg_count, kernarg_size, explicit_args_size;
    uint32_t group_segment, private_segment, max_workgroup;
    uint16_t wave_size, sgpr, vgpr, agpr, sgpr_spill, vgpr_spill;
    uint32_t flags;
} aot_kernel_rec;

typedef struct {
    uint32_t offset, size, kind, name;
} aot_arg_rec;

typedef struct {
    uint64_t offset, csize, usize;
    uint32_t flags, target;
} aot_frame_rec;

#endif
