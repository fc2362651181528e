/* openspy.c : LD_PRELOAD shim that reports every file the main program's own code opens (the
 * statically linked library is part of it), and nothing the vendor library or the dynamic
 * loader opens on its behalf. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct probe { void *addr; int hit; };

static int in_first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct probe *p = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, a = (uintptr_t)p->addr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz) p->hit = 1;
    }
    return 1; /* the first object dl_iterate_phdr reports is the main program */
}

static int from_main_program(void *caller)
{
    struct probe p = {caller, 0};
    dl_iterate_phdr(in_first_object, &p);
    return p.hit;
}

static void note(const char *what, const char *path, void *caller)
{
    if (!from_main_program(caller)) return;
    char msg[512];
    int n = snprintf(msg, sizeof msg, "openspy: main program opened %s (%s)\n", path, what);
    if (write(2, msg, (size_t)n) < 0) _exit(3);
}

#define SPY(ret, name, params, args, pathvar)                                   \
    ret name params                                                             \
    {                                                                           \
        note(#name, pathvar, __builtin_return_address(0));                      \
        ret(*real) params = (ret(*) params)dlsym(RTLD_NEXT, #name);             \
        return real args;                                                       \
    }

SPY(FILE *, fopen, (const char *p, const char *m), (p, m), p)
SPY(FILE *, fopen64, (const char *p, const char *m), (p, m), p)

int open(const char *p, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    note("open", p, __builtin_return_address(0));
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    return real(p, flags, mode);
}

int openat(int dir, const char *p, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    note("openat", p, __builtin_return_address(0));
    int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    return real(dir, p, flags, mode);
}
