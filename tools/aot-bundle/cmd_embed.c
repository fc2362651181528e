/* cmd_embed.c : write the bundle into an ELF relocatable object with libelf (no assembler,
 * no .incbin). Section .aiter_aot_bundle holds the bundle, zero padding to 8, then its size as
 * a little-endian u64; two hidden symbols name the two. The section's own name survives static
 * linking as an orphan section, which is how `list` finds the bundle in an executable. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot_bundle_cli.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#error "aot-bundle embed: add this host's e_machine"
#endif

static const char shstrtab[] = "\0.aiter_aot_bundle\0.note.GNU-stack\0.symtab\0.strtab\0.shstrtab";
static const char strtab[] = "\0aot_embedded_bundle\0aot_embedded_bundle_size";
enum { N_BUNDLE = 1, N_STACK = 19, N_SYMTAB = 35, N_STRTAB = 43, N_SHSTRTAB = 51 };
enum { S_BUNDLE = 1, S_SIZE = 21 };

static Elf_Scn *add_section(Elf *e, unsigned name, unsigned type, unsigned long flags,
                            const void *buf, size_t size, size_t align, Elf_Type dtype)
{
    Elf_Scn *s = elf_newscn(e);
    Elf_Data *d = s ? elf_newdata(s) : NULL;
    GElf_Shdr sh;
    if (d == NULL || !gelf_getshdr(s, &sh)) return NULL;
    d->d_buf = (void *)buf, d->d_size = size, d->d_align = align, d->d_type = dtype;
    d->d_version = EV_CURRENT;
    sh.sh_name = name, sh.sh_type = type, sh.sh_flags = flags, sh.sh_addralign = align;
    return gelf_update_shdr(s, &sh) ? s : NULL;
}

static int write_object(int fd, const unsigned char *payload, size_t psize, size_t bundle_size)
{
    Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
    Elf64_Ehdr *eh = e ? elf64_newehdr(e) : NULL;
    if (eh == NULL) return -1;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_type = ET_REL, eh->e_machine = HOST_MACHINE, eh->e_version = EV_CURRENT;
    Elf64_Sym syms[4];
    memset(syms, 0, sizeof syms);
    syms[1].st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION), syms[1].st_shndx = 1;
    syms[2] = (Elf64_Sym){S_BUNDLE, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), STV_HIDDEN, 1, 0, bundle_size};
    syms[3] = (Elf64_Sym){S_SIZE, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), STV_HIDDEN, 1,
                          psize - 8, 8};
    Elf_Scn *sym;
    GElf_Shdr sh;
    int ok = add_section(e, N_BUNDLE, SHT_PROGBITS, SHF_ALLOC, payload, psize, 64, ELF_T_BYTE) &&
             add_section(e, N_STACK, SHT_PROGBITS, 0, NULL, 0, 1, ELF_T_BYTE) &&
             (sym = add_section(e, N_SYMTAB, SHT_SYMTAB, 0, syms, sizeof syms, 8, ELF_T_SYM)) &&
             add_section(e, N_STRTAB, SHT_STRTAB, 0, strtab, sizeof strtab, 1, ELF_T_BYTE) &&
             add_section(e, N_SHSTRTAB, SHT_STRTAB, 0, shstrtab, sizeof shstrtab, 1, ELF_T_BYTE) &&
             gelf_getshdr(sym, &sh);
    if (ok) {
        sh.sh_link = 4, sh.sh_info = 2, sh.sh_entsize = sizeof(Elf64_Sym);
        eh->e_shstrndx = 5;
        ok = gelf_update_shdr(sym, &sh) && elf_update(e, ELF_C_WRITE) >= 0;
    }
    elf_end(e);
    return ok ? 0 : -1;
}

/* The build runs pack then embed with nothing between: decompress every frame and check
 * every entry's hash here, so that a damaged bundle never reaches a library. */
static int verify_payload(const aot_bundle *b, const char *path)
{
    for (uint32_t f = 0; f < b->frames; f++) {
        unsigned char *bytes;
        aot_diag d = {""};
        if (aot_bundle_decompress_frame(b, f, &bytes, &d)) return cli_error(EXIT_FRAME, "%s: %s", path, d.msg);
        for (uint32_t e = 0; e < b->entries; e++)
            if (aot_bundle_entry(b, e).frame == f && aot_bundle_check_entry(b, e, bytes, &d)) {
                free(bytes);
                return cli_error(EXIT_HASH, "%s: %s", path, d.msg);
            }
        free(bytes);
    }
    return EXIT_OK;
}

static int embed_to(const aot_bundle *b, const char *out)
{
    size_t psize = ((b->size + 7) & ~(size_t)7) + 8;
    const char *base;
    char tmp[256];
    int dirfd = cli_open_parent(out, &base), fd = -1;
    if (dirfd < 0) return cli_error(EXIT_OUTPUT, "%s: %s", out, strerror(errno));
    int rc = cli_output_check(dirfd, base, out);
    unsigned char *payload = rc ? NULL : calloc(psize, 1);
    if (payload && elf_version(EV_CURRENT) != EV_NONE) fd = cli_temp_open(dirfd, base, tmp, sizeof tmp);
    if (fd >= 0) {
        memcpy(payload, b->base, b->size);
        for (int i = 0; i < 8; i++) payload[psize - 8 + i] = (unsigned char)((uint64_t)b->size >> (8 * i));
        int bad = write_object(fd, payload, psize, b->size);
        bad |= close(fd);
        if (bad || renameat(dirfd, tmp, dirfd, base) != 0) unlinkat(dirfd, tmp, 0), fd = -1;
    }
    if (rc == 0 && fd < 0) rc = cli_error(EXIT_OUTPUT, "%s: cannot write ELF object (%s)", out, elf_errmsg(-1));
    free(payload);
    close(dirfd);
    return rc;
}

int cmd_embed(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, OPT_OUT, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "embed: need exactly one BUNDLE");
    aot_bundle b;
    unsigned char *data;
    int rc = cli_open_bundle(o.files[0], &data, &b);
    if (rc == 0) rc = verify_payload(&b, o.files[0]);
    if (rc == 0) rc = embed_to(&b, o.out);
    free(data);
    cli_opts_free(&o);
    return rc;
}
