/* codeobj.c : see codeobj.h. Facts come from the ELF header, the AMDGPU metadata note
 * (AMDGPUUsage, "Code Object V3-V6 Metadata") and, for cubins, the .nv.info attribute
 * records (format byte, attribute byte, then a value whose size the format gives). */
#include "codeobj.h"

#include <gelf.h>   /* libelf */
#include <stdlib.h> /* calloc, free */
#include <string.h>
#include <stdio.h>  /* snprintf */

#include "bundle.h" /* aot_elf_extent_fault */
#include "msgpack.h"
#include "target_id.h"

#define EM_AMDGPU_ 224
#define EM_CUDA_ 190
#define ELFOSABI_AMDGPU_HSA_ 64
#define NT_AMDGPU_METADATA_ 32

#define BAD(...) aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

/* EF_AMDGPU_MACH values (AMDGPUUsage, "ELF Header"). */
static const struct { const char *name; unsigned mach; } amd_machs[] = {
    {"gfx90a", 0x03f}, {"gfx942", 0x04c}, {"gfx950", 0x04f}, {"gfx1100", 0x041},
    {"gfx1200", 0x048}, {"gfx1201", 0x04e}, {"gfx9-4-generic", 0x05f}, {NULL, 0}};

static const char *amd_mach_name(unsigned mach)
{
    for (int i = 0; amd_machs[i].name; i++)
        if (amd_machs[i].mach == mach) return amd_machs[i].name;
    return NULL;
}

/* e_flags xnack (0x300) and sramecc (0xc00) fields, V4+: 0 unsupported, 1 any, 2 off, 3 on. */
static aot_feature amd_feature(unsigned field)
{
    return field == 2 ? AOT_FEATURE_OFF : field == 3 ? AOT_FEATURE_ON : AOT_FEATURE_ANY;
}

static void target_from_flags(aot_target *t, const char *mach, unsigned e_flags)
{
    memset(t, 0, sizeof *t);
    t->vendor = AOT_VENDOR_AMD;
    snprintf(t->processor, sizeof t->processor, "%s", mach);
    t->xnack = amd_feature((e_flags >> 8) & 3);
    t->sramecc = amd_feature((e_flags >> 10) & 3);
}

static int same_target(const aot_target *a, const aot_target *b)
{
    return a->vendor == b->vendor && strcmp(a->processor, b->processor) == 0 &&
           a->xnack == b->xnack && a->sramecc == b->sramecc;
}

/* ---- AMDGPU metadata ---- */

typedef struct {
    aot_codeobj *co;
    char meta_target[96];
    const char *what;
    aot_diag *d;
} amd_ctx;

static void copy_str(char *dst, size_t cap, const char *s, uint32_t n)
{
    size_t m = n < cap - 1 ? n : cap - 1;
    memcpy(dst, s, m);
    dst[m] = 0;
}

static int read_arg(mp_reader *r, aot_co_arg *a)
{
    uint32_t n;
    if (mp_read_map(r, &n)) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *k, *s;
        uint32_t kn, sn;
        uint64_t v;
        if (mp_read_str(r, &k, &kn)) return -1;
        if (mp_str_eq(k, kn, ".offset") || mp_str_eq(k, kn, ".size")) {
            if (mp_read_uint(r, &v) || v > 0xffffffffu) return -1;
            *(k[1] == 'o' ? &a->offset : &a->size) = (unsigned)v;
        } else if (mp_str_eq(k, kn, ".value_kind") || mp_str_eq(k, kn, ".name")) {
            char *dst = k[1] == 'v' ? a->kind : a->name;
            const size_t cap = k[1] == 'v' ? sizeof a->kind : sizeof a->name;
            if (mp_read_str(r, &s, &sn) || sn >= cap) return -1; /* refused, never cut */
            copy_str(dst, cap, s, sn);
        } else if (mp_skip(r)) {
            return -1;
        }
    }
    return 0;
}

static int read_args(mp_reader *r, aot_co_kernel *k)
{
    uint32_t n;
    /* a second .args key would replace (and leak) the first array */
    if (k->args != NULL || mp_read_array(r, &n) || n > 4096) return -1;
    k->args = calloc(n ? n : 1, sizeof *k->args);
    if (k->args == NULL) return -1;
    k->nargs = n;
    for (uint32_t i = 0; i < n; i++)
        if (read_arg(r, &k->args[i])) return -1;
    return 0;
}

/* Integer kernel fields: key, and where it goes. */
static int read_kernel_uint(aot_co_kernel *k, const char *key, uint32_t kn, uint64_t v)
{
    static const struct { const char *key; size_t off; int u16; } fields[] = {
        {".kernarg_segment_size", offsetof(aot_kernel_rec, kernarg_size), 0},
        {".group_segment_fixed_size", offsetof(aot_kernel_rec, group_segment), 0},
        {".private_segment_fixed_size", offsetof(aot_kernel_rec, private_segment), 0},
        {".max_flat_workgroup_size", offsetof(aot_kernel_rec, max_workgroup), 0},
        {".wavefront_size", offsetof(aot_kernel_rec, wave_size), 1},
        {".sgpr_count", offsetof(aot_kernel_rec, sgpr), 1},
        {".vgpr_count", offsetof(aot_kernel_rec, vgpr), 1},
        {".agpr_count", offsetof(aot_kernel_rec, agpr), 1},
        {".sgpr_spill_count", offsetof(aot_kernel_rec, sgpr_spill), 1},
        {".vgpr_spill_count", offsetof(aot_kernel_rec, vgpr_spill), 1}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!mp_str_eq(key, kn, fields[i].key)) continue;
        char *p = (char *)&k->rec + fields[i].off;
        if (fields[i].u16) {
            uint16_t x = v > 0xffff ? 0xffff : (uint16_t)v;
            memcpy(p, &x, 2);
        } else {
            uint32_t x = v > 0xffffffffu ? 0xffffffffu : (uint32_t)v;
            memcpy(p, &x, 4);
        }
        return 1;
    }
    return 0;
}

/* A MessagePack string where it lies (not NUL-terminated). */
typedef struct {
    const char *s;
    uint32_t n;
} mp_span;

static int read_kernel(mp_reader *r, aot_co_kernel *k, mp_span *name, mp_span *symbol)
{
    uint32_t n;
    if (mp_read_map(r, &n)) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *key;
        uint32_t kn;
        uint64_t v;
        int b;
        if (mp_read_str(r, &key, &kn)) return -1;
        if (mp_str_eq(key, kn, ".name") || mp_str_eq(key, kn, ".symbol")) {
            mp_span *to = key[1] == 'n' ? name : symbol;
            if (mp_read_str(r, &to->s, &to->n)) return -1;
        } else if (mp_str_eq(key, kn, ".args")) {
            if (read_args(r, k)) return -1;
        } else if (mp_str_eq(key, kn, ".uses_dynamic_stack")) {
            if (mp_read_bool(r, &b)) return -1;
            if (b) k->rec.flags |= AOT_KERNEL_FLAG_DYNAMIC_STACK;
        } else if (mp_peek(r) == MP_INT) {
            if (mp_read_uint(r, &v)) return -1;
            read_kernel_uint(k, key, kn, v);
        } else if (mp_skip(r)) {
            return -1;
        }
    }
    return 0;
}

static int has_symbol(Elf *elf, mp_span name, int want_object)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; data && i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym)) break;
            const char *s = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (s && strncmp(s, name.s, name.n) == 0 && s[name.n] == 0 &&
                (!want_object || GELF_ST_TYPE(sym.st_info) == STT_OBJECT))
                return 1;
        }
    }
    return 0;
}

/* A kernel name is recorded whole or refused: cut to fit, it would name a kernel the code object
 * lacks (or two kernels one name), and the runtime's lookup by that name would fail. */
static aiter_aot_status name_too_long(const char *what, const char *name, size_t n, aot_diag *d)
{
    return BAD("%s: kernel %.40s...: its name is %zu bytes, over the %zu a bundle records "
               "(shorten it: extern \"C\", fewer template arguments)",
               what, name, n, sizeof ((aot_co_kernel *)NULL)->name - 1);
}

/* Checks the kernel's .name and .symbol (<name>.kd, present in the symbol table) and keeps the name. */
static aiter_aot_status take_name(amd_ctx *c, unsigned i, mp_span name, mp_span symbol, aot_co_kernel *k,
                                  Elf *elf)
{
    aot_diag *d = c->d;
    if (name.n == 0 || symbol.n < 4 || memcmp(symbol.s + symbol.n - 3, ".kd", 3) != 0)
        return BAD("%s: kernel %u has no name or no .kd symbol in its metadata", c->what, i);
    if (memchr(name.s, 0, name.n) || memchr(symbol.s, 0, symbol.n))
        return BAD("%s: kernel %u: a NUL byte inside its name or symbol", c->what, i);
    if (name.n >= sizeof k->name) return name_too_long(c->what, name.s, name.n, d);
    copy_str(k->name, sizeof k->name, name.s, name.n);
    if (!has_symbol(elf, symbol, 1))
        return BAD("%s: kernel %s: descriptor symbol %.*s is missing", c->what, k->name, (int)symbol.n, symbol.s);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status read_kernels(amd_ctx *c, mp_reader *r, Elf *elf)
{
    aot_diag *d = c->d;
    uint32_t n;
    /* A second amdhsa.kernels key must not get a fresh array while nkernels keeps counting. */
    if (c->co->kernels != NULL) return BAD("%s: metadata has amdhsa.kernels twice", c->what);
    if (mp_read_array(r, &n) || n > 4096) return BAD("%s: amdhsa.kernels is malformed", c->what);
    c->co->kernels = calloc(n ? n : 1, sizeof *c->co->kernels);
    if (c->co->kernels == NULL) return BAD("%s: out of memory", c->what);
    for (uint32_t i = 0; i < n; i++) {
        aot_co_kernel *k = &c->co->kernels[c->co->nkernels++];
        mp_span name = {"", 0}, symbol = {"", 0};
        if (read_kernel(r, k, &name, &symbol))
            return BAD("%s: kernel %u metadata is malformed (or an argument's .name is over %zu bytes or its "
                       ".value_kind over %zu)", c->what, i, sizeof k->args->name - 1, sizeof k->args->kind - 1);
        AOT_FORWARD(take_name(c, i, name, symbol, k, elf));
        for (unsigned a = 0; a < k->nargs; a++)
            if (strncmp(k->args[a].kind, "hidden_", 7) != 0 &&
                k->args[a].offset + k->args[a].size > k->rec.explicit_args_size)
                k->rec.explicit_args_size = k->args[a].offset + k->args[a].size;
    }
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status parse_metadata(amd_ctx *c, const unsigned char *p, size_t n, Elf *elf)
{
    aot_diag *d = c->d;
    mp_reader r = {p, p + n, 0};
    uint32_t keys;
    int saw_kernels = 0;
    if (mp_read_map(&r, &keys)) return BAD("%s: metadata note is not a MessagePack map", c->what);
    for (uint32_t i = 0; i < keys; i++) {
        const char *k, *s;
        uint32_t kn, sn;
        if (mp_read_str(&r, &k, &kn)) return BAD("%s: metadata note is malformed", c->what);
        if (mp_str_eq(k, kn, "amdhsa.target")) {
            if (mp_read_str(&r, &s, &sn)) return BAD("%s: amdhsa.target is not a string", c->what);
            copy_str(c->meta_target, sizeof c->meta_target, s, sn);
        } else if (mp_str_eq(k, kn, "amdhsa.kernels")) {
            AOT_FORWARD(read_kernels(c, &r, elf));
            saw_kernels = 1;
        } else if (mp_skip(&r)) {
            return BAD("%s: metadata note is malformed", c->what);
        }
    }
    if (!saw_kernels) return BAD("%s: metadata has no amdhsa.kernels", c->what);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status find_metadata(amd_ctx *c, Elf *elf)
{
    aot_diag *d = c->d;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off;
        while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            const char *name = (const char *)data->d_buf + name_off;
            if (nh.n_type == NT_AMDGPU_METADATA_ && nh.n_namesz == 7 && memcmp(name, "AMDGPU", 7) == 0)
                return parse_metadata(c, (const unsigned char *)data->d_buf + desc_off, nh.n_descsz, elf);
        }
    }
    return BAD("%s: no NT_AMDGPU_METADATA note", c->what);
}

static aiter_aot_status check_amd_target(amd_ctx *c, unsigned e_flags, const char *declared)
{
    aot_diag *d = c->d;
    const char *mach = amd_mach_name(e_flags & 0xff);
    if (mach == NULL) return BAD("%s: unknown EF_AMDGPU_MACH 0x%03x", c->what, e_flags & 0xff);
    aot_target from_flags, meta, decl;
    target_from_flags(&from_flags, mach, e_flags);
    if (aot_target_parse(&meta, c->meta_target) != 0)
        return BAD("%s: amdhsa.target \"%s\" is not a target ID", c->what, c->meta_target);
    if (!same_target(&from_flags, &meta))
        return BAD("%s: e_flags 0x%x say %s but amdhsa.target says %s", c->what, e_flags, mach,
                   c->meta_target);
    if (declared && (aot_target_parse(&decl, declared) != 0 || !same_target(&decl, &meta)))
        return BAD("%s: built for %s, but declared as %s", c->what, c->meta_target, declared);
    aot_target_format(&meta, c->co->target, sizeof c->co->target);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status inspect_amd(Elf *elf, const GElf_Ehdr *eh, const char *what,
                                    const char *declared, aot_codeobj *co, aot_diag *d)
{
    if (eh->e_ident[EI_OSABI] != ELFOSABI_AMDGPU_HSA_)
        return BAD("%s: EI_OSABI %u is not ELFOSABI_AMDGPU_HSA (64)", what, eh->e_ident[EI_OSABI]);
    if (eh->e_type != ET_DYN)
        return BAD("%s: not ET_DYN (a relocatable object? link it with ld.lld -shared)", what);
    unsigned abi = eh->e_ident[EI_ABIVERSION];
    if (abi < 2 || abi > 4) return BAD("%s: code-object ABI version %u; need V4..V6 (2..4)", what, abi);
    co->kind = AOT_KIND_AMDGPU;
    co->abi = abi + 2;
    co->e_flags = (unsigned)eh->e_flags;
    amd_ctx c = {co, "", what, d};
    AOT_FORWARD(find_metadata(&c, elf));
    return check_amd_target(&c, co->e_flags, declared);
}

/* ---- cubins ---- */

enum { EIFMT_NVAL = 1, EIFMT_BVAL = 2, EIFMT_HVAL = 3, EIFMT_SVAL = 4 };
enum { EIATTR_MAX_THREADS = 0x05, EIATTR_FRAME_SIZE = 0x11, EIATTR_KPARAM_INFO = 0x17,
       EIATTR_CBANK_PARAM_SIZE = 0x19, EIATTR_REGCOUNT = 0x2f };

typedef void (*attr_fn)(aot_codeobj *co, aot_co_kernel *k, unsigned attr,
                        const unsigned char *v, unsigned size, Elf *elf, size_t symtab);

static unsigned le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (unsigned)p[3] << 24; }

static int walk_attrs(const unsigned char *p, size_t n, attr_fn fn, aot_codeobj *co,
                      aot_co_kernel *k, Elf *elf, size_t symtab)
{
    size_t i = 0;
    while (i + 2 <= n) {
        unsigned fmt = p[i], attr = p[i + 1], size;
        const unsigned char *v = p + i + 2;
        /* Every record is 4-byte aligned: NVAL and BVAL carry a 2-byte (zero-padded) value too,
         * as nvcc 13.0 output shows. */
        if (fmt == EIFMT_NVAL || fmt == EIFMT_BVAL || fmt == EIFMT_HVAL) size = 2;
        else if (fmt == EIFMT_SVAL && i + 4 <= n) size = p[i + 2] | p[i + 3] << 8, v += 2;
        else return -1;
        if ((size_t)(v - p) + size > n) return -1;
        fn(co, k, attr, v, size, elf, symtab);
        i = (size_t)(v - p) + size;
    }
    return i == n ? 0 : -1;
}

static void kernel_attr(aot_codeobj *co, aot_co_kernel *k, unsigned attr, const unsigned char *v,
                        unsigned size, Elf *elf, size_t symtab)
{
    (void)co, (void)elf, (void)symtab;
    if (attr == EIATTR_CBANK_PARAM_SIZE && size == 2) {
        k->rec.kernarg_size = k->rec.explicit_args_size = v[0] | v[1] << 8;
    } else if (attr == EIATTR_MAX_THREADS && size == 12) {
        k->rec.max_workgroup = le32(v) * le32(v + 4) * le32(v + 8);
    } else if (attr == EIATTR_KPARAM_INFO && size == 12) {
        aot_co_arg *grown = realloc(k->args, (k->nargs + 1) * sizeof *k->args);
        if (grown == NULL) return;
        k->args = grown;
        aot_co_arg *a = &k->args[k->nargs++];
        memset(a, 0, sizeof *a);
        a->offset = v[6] | v[7] << 8;
        a->size = (le32(v + 8) >> 18) & 0x3fff;
        strcpy(a->kind, "param");
    }
}

static aot_co_kernel *kernel_by_symbol(aot_codeobj *co, Elf *elf, size_t symtab, unsigned index)
{
    Elf_Data *data = elf_getdata(elf_getscn(elf, symtab), NULL);
    GElf_Shdr sh;
    GElf_Sym sym;
    if (!data || !gelf_getshdr(elf_getscn(elf, symtab), &sh) || !gelf_getsym(data, (int)index, &sym))
        return NULL;
    const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
    for (unsigned i = 0; name && i < co->nkernels; i++)
        if (strcmp(co->kernels[i].name, name) == 0) return &co->kernels[i];
    return NULL;
}

static void global_attr(aot_codeobj *co, aot_co_kernel *unused, unsigned attr,
                        const unsigned char *v, unsigned size, Elf *elf, size_t symtab)
{
    (void)unused;
    if ((attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE) || size != 8) return;
    aot_co_kernel *k = kernel_by_symbol(co, elf, symtab, le32(v));
    if (k == NULL) return;
    if (attr == EIATTR_REGCOUNT) k->rec.vgpr = (uint16_t)le32(v + 4);
    else k->rec.private_segment = le32(v + 4);
}

/* A NOBITS section (or an empty one) has no bytes: libelf gives d_buf == NULL with the
 * section's size, so only a section with file data may be walked. nvcc types .nv.info* as
 * SHT_LOPROC (CUDA's own section type), not PROGBITS, so only NOBITS is refused by type. */
static int info_data_ok(const GElf_Shdr *sh, const Elf_Data *data)
{
    return sh->sh_type != SHT_NOBITS && data != NULL && data->d_buf != NULL && data->d_size > 0;
}

static aiter_aot_status cubin_kernels(Elf *elf, const char *what, aot_codeobj *co, aot_diag *d)
{
    size_t shstrndx, symtab = 0, count = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return BAD("%s: no section names", what);
    for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s)) != NULL;) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name))) continue;
        if (sh.sh_type == SHT_SYMTAB) symtab = elf_ndxscn(s);
        count += strncmp(nm, ".nv.info.", 9) == 0;
    }
    co->kernels = calloc(count ? count : 1, sizeof *co->kernels);
    if (co->kernels == NULL || symtab == 0) return BAD("%s: no symbol table or out of memory", what);
    for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s)) != NULL;) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name))) continue;
        if (strncmp(nm, ".nv.info.", 9) != 0) continue;
        aot_co_kernel *k = &co->kernels[co->nkernels++];
        if (strlen(nm + 9) >= sizeof k->name) return name_too_long(what, nm + 9, strlen(nm + 9), d);
        snprintf(k->name, sizeof k->name, "%s", nm + 9);
        k->rec.wave_size = 32;
        Elf_Data *data = elf_getdata(s, NULL);
        if (!info_data_ok(&sh, data) || walk_attrs(data->d_buf, data->d_size, kernel_attr, co, k, elf, symtab))
            return BAD("%s: section %s is malformed", what, nm);
        /* A parameter aligned beyond 16 bytes (a tensor map's 64) starts past the bank's start;
         * the bytes before it are padding the driver places, not the caller's arguments. */
        unsigned first = k->nargs ? k->args[0].offset : 0;
        for (unsigned a = 1; a < k->nargs; a++) first = k->args[a].offset < first ? k->args[a].offset : first;
        if (first <= k->rec.explicit_args_size) k->rec.explicit_args_size -= first;
    }
    for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s)) != NULL;) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(elf, shstrndx, sh.sh_name))) continue;
        Elf_Data *data = elf_getdata(s, NULL);
        if (strcmp(nm, ".nv.info") == 0 &&
            (!info_data_ok(&sh, data) || walk_attrs(data->d_buf, data->d_size, global_attr, co, NULL, elf, symtab)))
            return BAD("%s: section .nv.info is malformed", what);
        for (unsigned i = 0; strncmp(nm, ".nv.shared.", 11) == 0 && i < co->nkernels; i++)
            if (strcmp(nm + 11, co->kernels[i].name) == 0)
                co->kernels[i].rec.group_segment = (uint32_t)sh.sh_size;
    }
    return co->nkernels ? AITER_AOT_STATUS_OK : BAD("%s: cubin has no kernels", what);
}

static aiter_aot_status inspect_cubin(Elf *elf, const GElf_Ehdr *eh, const char *what,
                                      const char *declared, aot_codeobj *co, aot_diag *d)
{
    unsigned abi = eh->e_ident[EI_ABIVERSION];
    /* ELF ABI 8 and later keep the SM in bits 8..15 of e_flags; earlier ones in bits 0..7. */
    unsigned sm = abi >= 8 ? ((unsigned)eh->e_flags >> 8) & 0xff : (unsigned)eh->e_flags & 0xff;
    co->kind = AOT_KIND_CUBIN;
    co->abi = abi;
    co->e_flags = (unsigned)eh->e_flags;
    aot_target t = {AOT_VENDOR_NVIDIA, "", 0, 0};
    snprintf(t.processor, sizeof t.processor, "sm_%u", sm);
    if (declared) {
        aot_target decl;
        unsigned dsm = 0;
        if (aot_target_parse(&decl, declared) != 0 || decl.vendor != AOT_VENDOR_NVIDIA ||
            sscanf(decl.processor, "sm_%u", &dsm) != 1 || dsm != sm)
            return BAD("%s: cubin is for sm_%u, but declared as %s", what, sm, declared);
        t = decl;
    }
    aot_target_format(&t, co->target, sizeof co->target);
    return cubin_kernels(elf, what, co, d);
}

aiter_aot_status aot_codeobj_inspect(const void *data, size_t size, const char *what,
                                     const char *declared, aot_codeobj *co, aot_diag *d)
{
    memset(co, 0, sizeof *co);
    if (elf_version(EV_CURRENT) == EV_NONE) return BAD("libelf is unusable");
    if (size < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG) != 0) return BAD("%s: not an ELF file", what);
    Elf *elf = elf_memory((char *)data, size);
    GElf_Ehdr eh;
    aiter_aot_status s;
    const char *fault;
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        s = BAD("%s: unreadable ELF (%s)", what, elf_errmsg(-1));
    else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
        s = BAD("%s: not a little-endian ELF64 object", what);
    else if ((fault = aot_elf_extent_fault(data, size)) != NULL) /* libelf reads only what it is asked */
        s = BAD("%s: %s (%zu bytes): truncated, or its headers do not describe this file", what, fault, size);
    else if (eh.e_machine == EM_AMDGPU_)
        s = inspect_amd(elf, &eh, what, declared, co, d);
    else if (eh.e_machine == EM_CUDA_)
        s = inspect_cubin(elf, &eh, what, declared, co, d);
    else
        s = BAD("%s: e_machine %u is neither EM_AMDGPU (224) nor EM_CUDA (190)", what, eh.e_machine);
    if (elf) elf_end(elf);
    if (s != AITER_AOT_STATUS_OK) aot_codeobj_free(co);
    return s;
}

void aot_codeobj_free(aot_codeobj *co)
{
    if (co == NULL) return;
    for (unsigned i = 0; co->kernels && i < co->nkernels; i++) free(co->kernels[i].args);
    free(co->kernels);
    memset(co, 0, sizeof *co);
}
