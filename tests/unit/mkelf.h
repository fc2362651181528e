/* mkelf.h : the smallest ELF64 code objects the validator reads, built byte by byte so that a
 * test (or a fuzz seed) can state exactly what is hostile about one: one data section of a
 * given type and name, a symbol table with one STT_OBJECT symbol, their string tables. */
#ifndef AOT_TEST_MKELF_H
#define AOT_TEST_MKELF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint16_t machine;       /* 224 EM_AMDGPU, 190 EM_CUDA */
    uint8_t osabi, abiversion;
    uint16_t type;          /* 3 ET_DYN */
    uint32_t flags;         /* e_flags */
    const char *sec_name;   /* ".note" or ".nv.info.k" */
    uint32_t sec_type;      /* 7 SHT_NOTE, 1 SHT_PROGBITS, 8 SHT_NOBITS */
    const void *sec_data;   /* bytes of that section (none in the file for NOBITS) */
    size_t sec_size;
    const char *symbol;     /* "k.kd" or "k" */
} mkelf_spec;

static void mkelf_put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void mkelf_shdr(unsigned char *p, uint32_t name, uint32_t type, uint64_t off, uint64_t size,
                       uint32_t link, uint32_t info, uint64_t entsize)
{
    mkelf_put(p, name, 4), mkelf_put(p + 4, type, 4), mkelf_put(p + 24, off, 8);
    mkelf_put(p + 32, size, 8), mkelf_put(p + 40, link, 4), mkelf_put(p + 44, info, 4);
    mkelf_put(p + 48, 1, 8), mkelf_put(p + 56, entsize, 8);
}

/* Writes the object into out (cap bytes, 4096 is plenty); @return its size, 0 if cap is short. */
static size_t mkelf_build(const mkelf_spec *s, unsigned char *out, size_t cap)
{
    char shstr[96] = "", str[64] = "";
    size_t shn = 1, sn = 1;
    size_t n_shstr = shn; memcpy(shstr + shn, ".shstrtab", 10), shn += 10;
    size_t n_str = shn; memcpy(shstr + shn, ".strtab", 8), shn += 8;
    size_t n_sym = shn; memcpy(shstr + shn, ".symtab", 8), shn += 8;
    size_t n_sec = shn, nl = strlen(s->sec_name);
    if (nl > 60 || strlen(s->symbol) > 60) return 0;
    memcpy(shstr + shn, s->sec_name, nl + 1), shn += nl + 1;
    memcpy(str + sn, s->symbol, strlen(s->symbol) + 1), sn += strlen(s->symbol) + 1;
    size_t data_bytes = s->sec_type == 8 ? 0 : s->sec_size;
    size_t off_shstr = 64, off_str = off_shstr + shn, off_sym = (off_str + sn + 7) & ~(size_t)7;
    size_t off_sec = off_sym + 48, off_sh = (off_sec + data_bytes + 7) & ~(size_t)7;
    size_t total = off_sh + 5 * 64;
    if (total > cap) return 0;
    memset(out, 0, total);
    memcpy(out, "\177ELF\2\1\1", 7);
    out[7] = s->osabi, out[8] = s->abiversion;
    mkelf_put(out + 16, s->type, 2), mkelf_put(out + 18, s->machine, 2), mkelf_put(out + 20, 1, 4);
    mkelf_put(out + 40, off_sh, 8), mkelf_put(out + 48, s->flags, 4), mkelf_put(out + 52, 64, 2);
    mkelf_put(out + 58, 64, 2), mkelf_put(out + 60, 5, 2), mkelf_put(out + 62, 1, 2);
    memcpy(out + off_shstr, shstr, shn), memcpy(out + off_str, str, sn);
    unsigned char *sym = out + off_sym + 24; /* symbol 1: name 1, STB_GLOBAL STT_OBJECT, section 4 */
    mkelf_put(sym, 1, 4), sym[4] = 0x11, mkelf_put(sym + 6, 4, 2), mkelf_put(sym + 16, 64, 8);
    if (data_bytes) memcpy(out + off_sec, s->sec_data, data_bytes);
    unsigned char *sh = out + off_sh;
    mkelf_shdr(sh + 64, (uint32_t)n_shstr, 3, off_shstr, shn, 0, 0, 0);
    mkelf_shdr(sh + 128, (uint32_t)n_str, 3, off_str, sn, 0, 0, 0);
    mkelf_shdr(sh + 192, (uint32_t)n_sym, 2, off_sym, 48, 2, 1, 24);
    mkelf_shdr(sh + 256, (uint32_t)n_sec, s->sec_type, off_sec, s->sec_size, 0, 0, 0);
    return total;
}

/* An NT_AMDGPU_METADATA note around `desc` (MessagePack); @return its size. */
static size_t mkelf_amd_note(const void *desc, size_t n, unsigned char *out, size_t cap)
{
    size_t total = 12 + 8 + ((n + 3) & ~(size_t)3);
    if (total > cap) return 0;
    memset(out, 0, total);
    mkelf_put(out, 7, 4), mkelf_put(out + 4, n, 4), mkelf_put(out + 8, 32, 4);
    memcpy(out + 12, "AMDGPU", 7), memcpy(out + 20, desc, n);
    return total;
}

#endif
