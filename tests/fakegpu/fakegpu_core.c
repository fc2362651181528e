/* fakegpu_core.c : the part of the fake devices that records calls, modules and launches, and
 * checks code objects as an ELF loader would (bounds first, then the machine and the symbols).
 * Everything is kept for the life of the process behind one mutex: a test double, not a
 * runtime, so simplicity wins over speed. */
#define _GNU_SOURCE
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakegpu_core.h"

#define MAX_ENTRIES 64
#define MAX_LAUNCHES 4096
#define MAX_MODULES 256
#define MAX_IMAGE ((size_t)1 << 30)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *name; unsigned long n; } calls[MAX_ENTRIES];
static fakegpu_launch_rec launches[MAX_LAUNCHES];
static unsigned long n_launches;
static fg_module *modules[MAX_MODULES];
static unsigned long n_modules;

void fg_count(const char *name)
{
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_ENTRIES && calls[i].name && strcmp(calls[i].name, name) != 0) i++;
    if (i < MAX_ENTRIES) calls[i].name = name, calls[i].n++;
    pthread_mutex_unlock(&lock);
}

FG_EXPORT unsigned long fakegpu_calls(const char *name)
{
    unsigned long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ENTRIES && calls[i].name; i++)
        if (strcmp(calls[i].name, name) == 0) n = calls[i].n;
    pthread_mutex_unlock(&lock);
    return n;
}

FG_EXPORT unsigned long fakegpu_launches(unsigned long i, fakegpu_launch_rec *out)
{
    pthread_mutex_lock(&lock);
    unsigned long n = n_launches;
    if (out && i < n && i < MAX_LAUNCHES) *out = launches[i];
    pthread_mutex_unlock(&lock);
    return n;
}

FG_EXPORT unsigned long fakegpu_modules(unsigned long *most_of_one)
{
    pthread_mutex_lock(&lock);
    unsigned long n = n_modules, most = 0;
    for (unsigned long i = 0; i < n && i < MAX_MODULES; i++) {
        unsigned long same = 0;
        for (unsigned long j = 0; j < n && j < MAX_MODULES; j++)
            same += modules[i]->size == modules[j]->size && memcmp(modules[i]->image, modules[j]->image, modules[i]->size) == 0;
        if (same > most) most = same;
    }
    pthread_mutex_unlock(&lock);
    if (most_of_one) *most_of_one = most;
    return n;
}

FG_EXPORT void fakegpu_report(void)
{
    unsigned long most, n = fakegpu_modules(&most);
    pthread_mutex_lock(&lock);
    fprintf(stderr, "fakegpu: %lu modules loaded (at most %lu of one image), %lu launches\n", n, most, n_launches);
    for (int i = 0; i < MAX_ENTRIES && calls[i].name; i++) fprintf(stderr, "fakegpu:   %-32s %lu\n", calls[i].name, calls[i].n);
    for (unsigned long i = 0; i < n_launches && i < MAX_LAUNCHES; i++) {
        const fakegpu_launch_rec *l = &launches[i];
        fprintf(stderr, "fakegpu:   launch %s grid %u,%u,%u block %u,%u,%u shared %u cluster %u,%u,%u\n", l->kernel,
                l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->shared, l->cluster[0],
                l->cluster[1], l->cluster[2]);
    }
    pthread_mutex_unlock(&lock);
}

__attribute__((destructor)) static void report_at_exit(void)
{
    const char *e = getenv("FAKEGPU_REPORT");
    if (e && strcmp(e, "1") == 0) fakegpu_report();
}

static int inside(size_t off, size_t len, size_t size) { return off <= size && len <= size - off; }

size_t fg_elf_size(const void *image, unsigned machine)
{
    const Elf64_Ehdr *h = image;
    if (h == NULL || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_machine != machine || h->e_shentsize != sizeof(Elf64_Shdr) ||
        h->e_shnum == 0 || h->e_shstrndx >= h->e_shnum || h->e_shoff > MAX_IMAGE)
        return 0;
    /* no size comes with the image: it ends where the last of its headers and sections ends
     * (cubins put the program headers after the section headers) */
    size_t size = h->e_shoff + (size_t)h->e_shnum * sizeof(Elf64_Shdr);
    if (h->e_shoff < sizeof *h || h->e_phoff > MAX_IMAGE || h->e_phnum > 4096) return 0;
    if (h->e_phnum && h->e_phoff + (size_t)h->e_phnum * sizeof(Elf64_Phdr) > size)
        size = h->e_phoff + (size_t)h->e_phnum * sizeof(Elf64_Phdr);
    const Elf64_Shdr *s = (const Elf64_Shdr *)((const char *)image + h->e_shoff);
    for (unsigned i = 0; i < h->e_shnum; i++) {
        if (s[i].sh_type == SHT_NOBITS) continue;
        if (!inside(s[i].sh_offset, s[i].sh_size, MAX_IMAGE)) return 0;
        if (s[i].sh_offset + s[i].sh_size > size) size = s[i].sh_offset + s[i].sh_size;
    }
    return size;
}

int fg_elf_has_symbol(const fg_module *m, const char *name, unsigned type)
{
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)m->image;
    const Elf64_Shdr *s = (const Elf64_Shdr *)(m->image + h->e_shoff);
    for (unsigned i = 0; i < h->e_shnum; i++) {
        if ((s[i].sh_type != SHT_SYMTAB && s[i].sh_type != SHT_DYNSYM) || s[i].sh_link >= h->e_shnum) continue;
        const Elf64_Shdr *str = &s[s[i].sh_link];
        const Elf64_Sym *sym = (const Elf64_Sym *)(m->image + s[i].sh_offset);
        for (size_t k = 0; k < s[i].sh_size / sizeof *sym; k++) {
            if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[k].st_info) != type) continue;
            if (sym[k].st_name >= str->sh_size) continue;
            const char *n = (const char *)m->image + str->sh_offset + sym[k].st_name;
            if (strnlen(n, str->sh_size - sym[k].st_name) < str->sh_size - sym[k].st_name && strcmp(n, name) == 0)
                return 1;
        }
    }
    return 0;
}

fg_module *fg_module_new(const void *image, size_t size)
{
    fg_module *m = calloc(1, sizeof *m);
    if (m == NULL || (m->image = malloc(size)) == NULL) return free(m), NULL;
    memcpy(m->image, image, size);
    m->size = size;
    m->magic = FG_MODULE;
    pthread_mutex_lock(&lock);
    if (n_modules < MAX_MODULES) modules[n_modules] = m;
    n_modules++;
    pthread_mutex_unlock(&lock);
    return m;
}

fg_function *fg_function_new(const fg_module *m, const char *name)
{
    fg_function *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    f->magic = FG_FUNCTION;
    f->module = m;
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

fg_function *fg_function_of(void *fn)
{
    fg_function *f = fn;
    return f && f->magic == FG_FUNCTION ? f : NULL;
}

void fg_record_launch(const fg_function *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                      const unsigned cluster[3], void *stream, void **params)
{
    pthread_mutex_lock(&lock);
    if (n_launches < MAX_LAUNCHES) {
        fakegpu_launch_rec *l = &launches[n_launches];
        snprintf(l->kernel, sizeof l->kernel, "%s", f->name);
        memcpy(l->grid, grid, sizeof l->grid);
        memcpy(l->block, block, sizeof l->block);
        memcpy(l->cluster, cluster, sizeof l->cluster);
        l->shared = shared;
        l->stream = stream;
        l->args_nonnull = params && params[0];
    }
    n_launches++;
    pthread_mutex_unlock(&lock);
}
