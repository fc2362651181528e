/* diag.h : errors as values. A function that can fail returns an aiter_aot_status and, on
 * failure, leaves one line in an aot_diag saying what failed and why. */
#ifndef AOT_DIAG_H
#define AOT_DIAG_H

#include "aiter_aot_status.h" /* aiter_aot_status */

typedef struct {
    char msg[384];
} aot_diag;

/* Formats the message into d (when d is not NULL) and returns `status`, so that a failing path
 * reads `return aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE, "entry %u: ...", i);`. */
aiter_aot_status aot_fail(aot_diag *d, aiter_aot_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define AOT_FORWARD(expr)                                   \
    do {                                                    \
        aiter_aot_status aot_forward_s_ = (expr);           \
        if (aot_forward_s_ != AITER_AOT_STATUS_OK) return aot_forward_s_; \
    } while (0)

#endif
