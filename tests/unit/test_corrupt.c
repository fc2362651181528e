/* test_corrupt.c : a damaged bundle gives a clean error, never a crash, a hang, an
 * out-of-bounds read (this test also runs built with ASan and UBSan) or a wrong code object.
 * Usage: test_corrupt BUNDLE. Every bit of the header and index is flipped, the bundle is
 * truncated at every length, and payload bytes are flipped at sampled positions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"

static int passed, failed;

/* Opens, decompresses and checks everything. @return 1 if some check failed; 0 if every entry's
 * bytes came out identical to the original's. Anything else (different bytes passing every
 * check) is a wrong code object, counted as a failure of the test. */
static int consume(const unsigned char *data, size_t size, const unsigned char *orig, size_t orig_size)
{
    aot_bundle b, ob;
    aot_diag d;
    if (aot_bundle_open(&b, data, size, &d) != AITER_AOT_STATUS_OK) return 1;
    aot_bundle_open(&ob, orig, orig_size, &d);
    for (uint32_t f = 0; f < b.frames; f++) {
        unsigned char *bytes, *obytes;
        if (aot_bundle_decompress_frame(&b, f, &bytes, &d) != AITER_AOT_STATUS_OK) return 1;
        aot_bundle_decompress_frame(&ob, f, &obytes, &d);
        for (uint32_t e = 0; e < b.entries; e++) {
            aot_entry_rec r = aot_bundle_entry(&b, e);
            if (r.frame != f) continue;
            if (aot_bundle_check_entry(&b, e, bytes, &d) != AITER_AOT_STATUS_OK) {
                free(bytes), free(obytes);
                return 1;
            }
            aot_entry_rec o = aot_bundle_entry(&ob, e);
            if (o.size != r.size || memcmp(obytes + o.offset, bytes + r.offset, r.size) != 0) {
                printf("FAIL: a damaged bundle produced different bytes for entry %u\n", e);
                failed++;
            }
        }
        free(bytes), free(obytes);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_corrupt BUNDLE\n"), 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 2;
    static unsigned char orig[1 << 22];
    size_t n = fread(orig, 1, sizeof orig, f);
    fclose(f);
    aot_bundle b;
    aot_diag d;
    if (aot_bundle_open(&b, orig, n, &d) != AITER_AOT_STATUS_OK) return printf("FAIL: %s\n", d.msg), 1;
    unsigned char *copy = malloc(n);
    const size_t meta_end = b.meta_end; /* b is the intact bundle's; each probe opens its own */
    /* every bit of header + index + strings + dictionary: the meta hash must catch each one */
    int caught = 0, flips = 0;
    for (size_t bit = 0; bit < meta_end * 8; bit++) {
        aot_bundle probe;
        memcpy(copy, orig, n);
        copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        caught += aot_bundle_open(&probe, copy, n, &d) != AITER_AOT_STATUS_OK;
        flips++;
    }
    if (caught == flips) passed++;
    else failed++, printf("FAIL: %d of %d index bit flips went unnoticed\n", flips - caught, flips);
    /* every truncation: exact-size buffers so ASan sees any read past the end */
    int trunc_ok = 1;
    for (size_t len = 0; len < n; len++) {
        unsigned char *t = malloc(len ? len : 1);
        memcpy(t, orig, len);
        trunc_ok &= consume(t, len, orig, n) == 1;
        free(t);
    }
    if (trunc_ok) passed++;
    else failed++, printf("FAIL: a truncated bundle was accepted\n");
    /* payload: flip bytes at sampled offsets (every 7th byte): error, or identical results */
    int before = failed, noticed = 0, samples = 0;
    for (size_t at = meta_end; at < n; at += 7) {
        memcpy(copy, orig, n);
        copy[at] ^= 0x5a;
        noticed += consume(copy, n, orig, n);
        samples++;
    }
    if (failed == before) passed++;
    printf("corruption: %d/%d index bit flips caught, %zu truncations refused, %d/%d payload flips caught "
           "(the rest changed nothing)\n", caught, flips, n, noticed, samples);
    free(copy);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
