/* msgpack.h : a small, bounds-checked MessagePack reader, enough for the AMDGPU metadata note
 * (maps, arrays, strings, integers, booleans, floats, nil). Any malformed or truncated input
 * sets `bad` and every later read fails; nothing reads outside [p, end). */
#ifndef AOT_MSGPACK_H
#define AOT_MSGPACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const unsigned char *p, *end;
    int bad;
} mp_reader;

typedef enum { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT, MP_BAD } mp_type;

mp_type mp_peek(const mp_reader *r);
int mp_read_map(mp_reader *r, uint32_t *n);
int mp_read_array(mp_reader *r, uint32_t *n);
int mp_read_str(mp_reader *r, const char **s, uint32_t *n); /* not NUL-terminated */
int mp_read_uint(mp_reader *r, uint64_t *v);                 /* any non-negative integer */
int mp_read_bool(mp_reader *r, int *v);
int mp_skip(mp_reader *r);                                    /* one whole value */

/* 1 if the string (s, n) equals the NUL-terminated `lit`. */
int mp_str_eq(const char *s, uint32_t n, const char *lit);

#endif
