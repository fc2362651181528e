/* diag.c : aot_fail. */
#include "diag.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */

aiter_aot_status aot_fail(aot_diag *d, aiter_aot_status status, const char *fmt, ...)
{
    if (d != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}
