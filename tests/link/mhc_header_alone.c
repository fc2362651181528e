/* mhc_header_alone.c : aiter_aot_mhc.h is self-contained: this program includes it and nothing
 * else of the API (built with -Wall -Wextra -Werror), fills the delayed ops' structs and gets
 * INVALID_ARGUMENT for NULL tensors, here where there is no GPU. */
#include "aiter_aot_mhc.h"

#include <stdio.h>

int main(void)
{
    static float ws[1 << 16];
    aiter_aot_mhc_pre_delayed_args p = {.size = sizeof p, .hc_mult = 4, .workspace = ws,
                                        .workspace_size = aiter_aot_mhc_workspace_size(4, 256), .tokens = 4,
                                        .hidden = 256};
    aiter_aot_mhc_fused_post_pre_delayed_args f = {.size = sizeof f, .hc_mult = 4, .workspace = ws,
                                                   .workspace_size = p.workspace_size, .tokens = 4, .hidden = 256};
    int ok = aiter_aot_mhc_pre_delayed(&p, NULL) == AITER_AOT_STATUS_INVALID_ARGUMENT;
    ok += aiter_aot_mhc_fused_post_pre_delayed(&f, NULL) == AITER_AOT_STATUS_INVALID_ARGUMENT;
    printf("%d passed, %d failed\n", ok, 2 - ok);
    return ok == 2 ? 0 : 1;
}
