/* api_smoke.c : the static library links into a plain C program and its API answers on a
 * machine without a GPU: what is embedded, version, and the statuses a user gets. Usage:
 * api_smoke TARGET... (the targets configure built). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aiter_aot.h"

static int passed, failed;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* Issue 41's API defects: each case failed before its fix. */
static void api_defects(void)
{
    /* the count does not depend on cap (duplicates past cap were counted again) */
    const char *all[64], *one[1];
    size_t n = aiter_aot_kernels(NULL, all, 64), n1 = aiter_aot_kernels(NULL, one, 1);
    CHECK(n == n1 && n >= 1 && n <= 64, "aiter_aot_kernels: %zu modules with cap 64, %zu with cap 1", n, n1);
    /* no tokens: 0, not tokens*k + experts*block_size - k wrapped around */
    CHECK(aiter_aot_moe_sorting_max_padded(0, 2, 1, 1) == 0, "moe_sorting_max_padded(0, 2, 1, 1) = %zu",
          aiter_aot_moe_sorting_max_padded(0, 2, 1, 1));
    /* bad arguments are INVALID_ARGUMENT before any device query, here where there is no device */
    static float ws[1 << 16]; /* 256 KiB */
    aiter_aot_mhc_pre_full_args pf = {.size = sizeof pf, .hc_mult = 4, .tokens = 4, .hidden = 256, .workspace = ws,
                                      .workspace_size = aiter_aot_mhc_workspace_size(4, 256)};
    CHECK(pf.workspace_size <= sizeof ws, "mhc workspace for 4 tokens: %zu bytes", pf.workspace_size);
    aiter_aot_status s = aiter_aot_mhc_pre_full(&pf, NULL);
    CHECK(s == AITER_AOT_STATUS_INVALID_ARGUMENT, "mhc_pre_full with NULL tensors: %s (%s)", aiter_aot_status_string(s),
          aiter_aot_last_error());
    /* the row stride is bounded in bytes: stride * tokens elements fit int64, their bytes do not */
    static float buf[64];
    aiter_aot_topk_softmax_args tk = {.size = sizeof tk, .gating = buf, .gating_dtype = AITER_AOT_DTYPE_F32,
                                      .gating_row_stride = INT64_MAX / 4, .tokens = 2, .experts = 8, .k = 2,
                                      .topk_weights = buf + 16, .topk_ids = (int32_t *)(buf + 32)};
    s = aiter_aot_topk_softmax(&tk, NULL);
    CHECK(s == AITER_AOT_STATUS_INVALID_ARGUMENT, "topk_softmax with a row stride of 2^61 elements: %s (%s)",
          aiter_aot_status_string(s), aiter_aot_last_error());
    /* a size smaller than the struct of this version is refused, as the header says */
    tk.size = sizeof tk - 8;
    tk.gating_row_stride = 8;
    s = aiter_aot_topk_softmax(&tk, NULL);
    CHECK(s == AITER_AOT_STATUS_INVALID_ARGUMENT, "args.size = sizeof - 8 refused: %s", aiter_aot_status_string(s));
}

int main(int argc, char **argv)
{
    const char *targets[16], *mods[16];
    size_t nt = aiter_aot_targets(targets, 16);
    CHECK(nt == (size_t)(argc - 1), "%zu targets embedded, configure built %d", nt, argc - 1);
    for (int i = 1; i < argc; i++) {
        int found = 0;
        for (size_t j = 0; j < nt && j < 16; j++) found |= strstr(targets[j], argv[i]) != NULL;
        CHECK(found, "target %s is embedded", argv[i]);
        size_t nm = aiter_aot_kernels(argv[i], mods, 16);
        int topk = 0, sort = 0;
        for (size_t j = 0; j < nm && j < 16; j++) topk |= !strcmp(mods[j], "topk_softmax"), sort |= !strcmp(mods[j], "moe_sorting");
        CHECK(topk && sort, "%s has topk_softmax and moe_sorting (%zu modules)", argv[i], nm);
    }
    CHECK(strcmp(aiter_aot_version_string(), "0.1.0") == 0 && aiter_aot_version_number() == AITER_AOT_VERSION_NUMBER, "version");
    aiter_aot_status s = aiter_aot_init();
    printf("aiter_aot_init: %s: %s\n", aiter_aot_status_string(s), aiter_aot_last_error());
    CHECK(s == AITER_AOT_STATUS_OK || s == AITER_AOT_STATUS_NO_DEVICE || s == AITER_AOT_STATUS_GPU_RUNTIME,
          "init gives ok, no device or no GPU runtime (%d)", s);
    CHECK(s == AITER_AOT_STATUS_OK || aiter_aot_last_error()[0], "a failure explains itself");
    aiter_aot_topk_softmax_args bad = {.size = sizeof bad, .experts = 8, .k = 9};
    CHECK(aiter_aot_topk_softmax(&bad, NULL) == AITER_AOT_STATUS_INVALID_ARGUMENT, "bad args checked before any device use");
    CHECK(aiter_aot_topk_softmax(NULL, NULL) == AITER_AOT_STATUS_INVALID_ARGUMENT, "NULL args");
    CHECK(strcmp(aiter_aot_status_string((aiter_aot_status)99), "unknown status") == 0, "unknown status string");
    aiter_aot_stats st = {.size = sizeof st};
    CHECK(aiter_aot_get_stats(&st) == AITER_AOT_STATUS_OK && st.launches == 0, "stats");
    aiter_aot_stats v1 = {.size = offsetof(aiter_aot_stats, decompress_ns), .decompress_ns = 77};
    CHECK(aiter_aot_get_stats(&v1) == AITER_AOT_STATUS_OK && v1.decompress_ns == 77,
          "stats of the first version's size: only its fields written");
    aiter_aot_stats small = {.size = offsetof(aiter_aot_stats, device_loads)};
    CHECK(aiter_aot_get_stats(&small) == AITER_AOT_STATUS_INVALID_ARGUMENT, "stats size too small");
    api_defects();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
