/* msgpack.c : see msgpack.h. Format per the MessagePack specification (type bytes 0x00-0xff). */
#include "msgpack.h"

#include <string.h> /* strlen, memcmp */

#define MP_MAX_DEPTH 32

static int fail(mp_reader *r) { r->bad = 1; return -1; }

static int need(mp_reader *r, size_t n) { return !r->bad && (size_t)(r->end - r->p) >= n; }

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* Reads a length of n bytes after the type byte. */
static int read_len(mp_reader *r, int n, uint32_t *len)
{
    if (!need(r, (size_t)n + 1)) return fail(r);
    *len = (uint32_t)be(r->p + 1, n);
    r->p += 1 + n;
    return 0;
}

mp_type mp_peek(const mp_reader *r)
{
    if (r->bad || r->p >= r->end) return MP_BAD;
    unsigned c = *r->p;
    if (c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3)) return MP_INT;
    if ((c & 0xf0) == 0x80 || c == 0xde || c == 0xdf) return MP_MAP;
    if ((c & 0xf0) == 0x90 || c == 0xdc || c == 0xdd) return MP_ARRAY;
    if ((c & 0xe0) == 0xa0 || (c >= 0xd9 && c <= 0xdb)) return MP_STR;
    if (c == 0xc0) return MP_NIL;
    if (c == 0xc2 || c == 0xc3) return MP_BOOL;
    if (c == 0xca || c == 0xcb) return MP_FLOAT;
    if (c >= 0xc4 && c <= 0xc6) return MP_BIN;
    if ((c >= 0xc7 && c <= 0xc9) || (c >= 0xd4 && c <= 0xd8)) return MP_EXT;
    return MP_BAD;
}

static int read_container(mp_reader *r, uint32_t *n, unsigned fix, unsigned c16, unsigned c32)
{
    if (!need(r, 1)) return fail(r);
    unsigned c = *r->p;
    if ((c & 0xf0) == fix) {
        *n = c & 0x0f;
        r->p++;
        return 0;
    }
    if (c == c16) return read_len(r, 2, n);
    if (c == c32) return read_len(r, 4, n);
    return fail(r);
}

int mp_read_map(mp_reader *r, uint32_t *n) { return read_container(r, n, 0x80, 0xde, 0xdf); }
int mp_read_array(mp_reader *r, uint32_t *n) { return read_container(r, n, 0x90, 0xdc, 0xdd); }

int mp_read_str(mp_reader *r, const char **s, uint32_t *n)
{
    if (!need(r, 1)) return fail(r);
    unsigned c = *r->p;
    if ((c & 0xe0) == 0xa0) {
        *n = c & 0x1f;
        r->p++;
    } else if (c >= 0xd9 && c <= 0xdb) {
        if (read_len(r, 1 << (c - 0xd9), n)) return -1;
    } else {
        return fail(r);
    }
    if (!need(r, *n)) return fail(r);
    *s = (const char *)r->p;
    r->p += *n;
    return 0;
}

int mp_read_uint(mp_reader *r, uint64_t *v)
{
    if (!need(r, 1)) return fail(r);
    unsigned c = *r->p;
    if (c <= 0x7f) {
        *v = c;
        r->p++;
        return 0;
    }
    int n = 0, is_signed = 0;
    if (c >= 0xcc && c <= 0xcf) n = 1 << (c - 0xcc);
    else if (c >= 0xd0 && c <= 0xd3) n = 1 << (c - 0xd0), is_signed = 1;
    else return fail(r);
    if (!need(r, (size_t)n + 1)) return fail(r);
    uint64_t x = be(r->p + 1, n);
    if (is_signed && (r->p[1] & 0x80)) return fail(r); /* negative */
    *v = x;
    r->p += 1 + n;
    return 0;
}

int mp_read_bool(mp_reader *r, int *v)
{
    if (!need(r, 1) || (*r->p != 0xc2 && *r->p != 0xc3)) return fail(r);
    *v = *r->p == 0xc3;
    r->p++;
    return 0;
}

static int skip_bytes(mp_reader *r, size_t n)
{
    if (!need(r, n)) return fail(r);
    r->p += n;
    return 0;
}

/* Size in bytes of a fixed-size value starting with c (after the type byte), or -1. */
static int scalar_payload(unsigned c)
{
    if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) return 0;
    if (c >= 0xcc && c <= 0xcf) return 1 << (c - 0xcc);
    if (c >= 0xd0 && c <= 0xd3) return 1 << (c - 0xd0);
    if (c == 0xca) return 4;
    if (c == 0xcb) return 8;
    if (c >= 0xd4 && c <= 0xd8) return 1 + (1 << (c - 0xd4)); /* fixext: type + data */
    return -1;
}

static int skip_depth(mp_reader *r, int depth)
{
    if (depth > MP_MAX_DEPTH || !need(r, 1)) return fail(r);
    unsigned c = *r->p;
    int fixed = scalar_payload(c);
    if (fixed >= 0) return skip_bytes(r, (size_t)fixed + 1);
    uint32_t n;
    switch (mp_peek(r)) {
    case MP_STR: {
        const char *s;
        return mp_read_str(r, &s, &n);
    }
    case MP_BIN:
        if (read_len(r, 1 << (c - 0xc4), &n)) return -1;
        return skip_bytes(r, n);
    case MP_EXT:
        if (read_len(r, 1 << (c - 0xc7), &n)) return -1;
        return skip_bytes(r, (size_t)n + 1);
    case MP_ARRAY:
    case MP_MAP: {
        int is_map = mp_peek(r) == MP_MAP;
        if ((is_map ? mp_read_map(r, &n) : mp_read_array(r, &n))) return -1;
        uint64_t items = is_map ? 2ull * n : n;
        if (items > (uint64_t)(r->end - r->p)) return fail(r); /* each item needs >= 1 byte */
        for (uint64_t i = 0; i < items; i++)
            if (skip_depth(r, depth + 1)) return -1;
        return 0;
    }
    default:
        return fail(r);
    }
}

int mp_skip(mp_reader *r) { return skip_depth(r, 0); }

int mp_str_eq(const char *s, uint32_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}
