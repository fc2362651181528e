#include <aiter_aot.h>
#include <stdio.h>

int main(void) {
    const char *t[8];
    size_t n = aiter_aot_targets(t, 8);               /* what is embedded */
    for (size_t i = 0; i < n && i < 8; i++) printf("embedded: %s\n", t[i]);
    aiter_aot_status s = aiter_aot_init();            /* optional; binds the GPU runtime */
    printf("init: %s (%s)\n", aiter_aot_status_string(s), aiter_aot_last_error());
    return s != AITER_AOT_STATUS_OK;
}
