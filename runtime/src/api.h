/* api.h : what every public entry point does on the way out. */
#ifndef AOT_API_H
#define AOT_API_H

#include "diag.h"

/* Records the outcome for aiter_aot_last_error() (clears it on success) and returns s. */
aiter_aot_status aot_api_return(aiter_aot_status s, const aot_diag *d);

/* Copies a caller's args struct of `given` bytes into `full` (zero-filling fields the caller's
 * version did not have). @return OK, or INVALID_ARGUMENT for NULL or a too-small size. */
aiter_aot_status aot_api_args(void *full, size_t full_size, const void *args, size_t min_size,
                              const char *op, aot_diag *d);

#endif
