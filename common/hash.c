/* hash.c : XXH64, written from the algorithm's description (four 64-bit lanes over 32-byte
 * stripes, then a tail and an avalanche). Reads bytes one at a time through memcpy so that any
 * alignment and any host byte order give the little-endian result. */
#include "hash.h"

#include <string.h> /* memcpy */

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P4 9650029242287828579ULL
#define P5 2870177450012600261ULL

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t read64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t read32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t lane_round(uint64_t acc, uint64_t input)
{
    acc += input * P2;
    return rotl64(acc, 31) * P1;
}

static uint64_t merge_lane(uint64_t h, uint64_t lane)
{
    h ^= lane_round(0, lane);
    return h * P1 + P4;
}

static uint64_t stripes(const unsigned char **pp, const unsigned char *end, uint64_t seed)
{
    const unsigned char *p = *pp;
    uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    for (; end - p >= 32; p += 32) {
        v1 = lane_round(v1, read64(p));
        v2 = lane_round(v2, read64(p + 8));
        v3 = lane_round(v3, read64(p + 16));
        v4 = lane_round(v4, read64(p + 24));
    }
    *pp = p;
    uint64_t h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = merge_lane(h, v1);
    h = merge_lane(h, v2);
    h = merge_lane(h, v3);
    return merge_lane(h, v4);
}

uint64_t aot_xxh64(const void *data, size_t size, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data, *end = p + size;
    uint64_t h = size >= 32 ? stripes(&p, end, seed) : seed + P5;
    h += (uint64_t)size;
    for (; end - p >= 8; p += 8) h = rotl64(h ^ lane_round(0, read64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        h = rotl64(h ^ ((uint64_t)read32(p) * P1), 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) h = rotl64(h ^ (*p * P5), 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}
