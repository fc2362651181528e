/* zstd_trace.c : the prelinked libzstd.a is built with tracing, and calls
 * ZSTD_trace_decompress_begin/_end when they are defined. Left weak and undefined, an
 * application's definitions would be bound and called by this library (docs/runtime.md:
 * nothing of ours reaches the application's symbols). Defined here, tracing is off: begin
 * returns 0, so end is never called; the prelink makes both local. */
#include <stddef.h> /* size_t */

struct ZSTD_DCtx_s;
typedef unsigned long long aot_zstd_trace_ctx; /* ZSTD_TraceCtx in zstd's zstd_trace.h */

aot_zstd_trace_ctx ZSTD_trace_decompress_begin(struct ZSTD_DCtx_s const *dctx);
void ZSTD_trace_decompress_end(aot_zstd_trace_ctx ctx, const void *trace);

aot_zstd_trace_ctx ZSTD_trace_decompress_begin(struct ZSTD_DCtx_s const *dctx)
{
    (void)dctx;
    return 0;
}

void ZSTD_trace_decompress_end(aot_zstd_trace_ctx ctx, const void *trace)
{
    (void)ctx, (void)trace;
}
