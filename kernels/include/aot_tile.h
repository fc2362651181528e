/* aot_tile.h : the layout of the layer's swizzled tiles in block-shared memory (pure arithmetic:
 * included by aot_device.h and by the vendor headers that read tiles with matrix loads). A
 * tile holds `rows` rows (a multiple of 8) of 16-bit values in panels of 64 columns: panel p
 * holds columns 64p..64p+63 of every row, 128 bytes a row, and each row's eight 16-byte chunks
 * are permuted by xor with row % 8. So the same chunk of 8 consecutive rows lies in 8 different
 * bank groups (fragment loads read 8 rows at once) without padding, and each 8-row group of a
 * panel is one 1024-byte atom of the "128-byte swizzle" that sm_90a's wgmma reads through
 * descriptors (where the tile starts 1024-byte aligned). The offset of element (row, col): */
#ifndef AOT_TILE_H
#define AOT_TILE_H

AOT_DEV int aot_swz(int row, int col, int rows)
{
    return ((col >> 6) * rows + row) * 64 + (((col >> 3) & 7) ^ (row & 7)) * 8 + (col & 7);
}

#endif
