/* aot_variants.h : the helpers that expand a family's variant list (kernels/moe/moe_variants.h,
 * kernels/mhc/mhc_variants.h, kernels/fmha/fmha_variants.h). A list is an X-macro,
 * FAMILY_VARIANTS(X), calling X(name, kargs, ...) once per kernel with the kernel's own
 * parameters after its argument struct; the kernel source
 * instantiates each kernel from it, the op code names kernels through the ids below, and the
 * emulator's loader builds its table from it, so a name is spelled in the list only. */
#ifndef AOT_VARIANTS_H
#define AOT_VARIANTS_H

/* The kernel's id (AOT_K_topk_softmax_v1) and its name as a string. */
#define AOT_VARIANT_ID(name, ...) AOT_K_##name,
#define AOT_VARIANT_STRING(name, ...) #name,

#endif
