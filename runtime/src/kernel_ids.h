/* kernel_ids.h : an id for every kernel of the bundle, made from the families' variant lists
 * (kernels/FAMILY/FAMILY_variants.h), so the op code names a kernel only through the list: a
 * kernel missing from it does not compile. */
#ifndef AOT_KERNEL_IDS_H
#define AOT_KERNEL_IDS_H

#include <stdbool.h> /* the lists' true and false */

#include "aot_variants.h"
#include "fmha_variants.h"
#include "mhc_variants.h"
#include "moe_variants.h"

#define AOT_ALL_KERNELS(X)                                                                      \
    AOT_TOPK_VARIANTS(X) AOT_TOPK_WAVE32_VARIANTS(X) AOT_MOE_SORT_VARIANTS(X) AOT_ROUTE_VARIANTS(X)   \
    AOT_ROUTE_WAVE32_VARIANTS(X) AOT_MOE_ALIGN_VARIANTS(X)                                              \
    AOT_MHC_VARIANTS(X) AOT_MHC_PIPELINE_VARIANTS(X) AOT_FMHA_VARIANTS(X) AOT_FMHA_PIPELINE_VARIANTS(X)

typedef enum { AOT_ALL_KERNELS(AOT_VARIANT_ID) AOT_KERNEL_COUNT } aot_kernel_id;

/* The kernel's name in the bundle. */
static inline const char *aot_kernel_name(aot_kernel_id id)
{
    static const char *const names[] = {AOT_ALL_KERNELS(AOT_VARIANT_STRING)};
    return names[id];
}

#endif
