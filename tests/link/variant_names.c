/* variant_names.c : prints every kernel of the families' variant lists, one a line, as
 * "all NAME" (built for every target), "wave32 NAME" (only for 32-lane waves: sm_90a) or
 * "pipelines NAME" (only where AOT_PIPELINES is: sm_90a), for tests/link/variants-in-bundle.sh. */
#include <stdio.h>

#include "kernel_ids.h"

#define PRINT_ALL(name, ...) puts("all " #name);
#define PRINT_WAVE32(name, ...) puts("wave32 " #name);
#define PRINT_PIPELINES(name, ...) puts("pipelines " #name);

int main(void)
{
    AOT_TOPK_VARIANTS(PRINT_ALL)
    AOT_MOE_SORT_VARIANTS(PRINT_ALL)
    AOT_ROUTE_VARIANTS(PRINT_ALL)
    AOT_MOE_ALIGN_VARIANTS(PRINT_ALL)
    AOT_MHC_VARIANTS(PRINT_ALL)
    AOT_FMHA_VARIANTS(PRINT_ALL)
    AOT_TOPK_WAVE32_VARIANTS(PRINT_WAVE32)
    AOT_ROUTE_WAVE32_VARIANTS(PRINT_WAVE32)
    AOT_MHC_PIPELINE_VARIANTS(PRINT_PIPELINES)
    AOT_FMHA_PIPELINE_VARIANTS(PRINT_PIPELINES)
    return 0;
}
