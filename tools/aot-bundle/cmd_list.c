/* cmd_list.c : list and verify. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "aot_bundle_cli.h"

static const char *kind_name(unsigned kind)
{
    return kind == AOT_KIND_AMDGPU ? "amdgpu" : kind == AOT_KIND_CUBIN ? "cubin" : "unknown";
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if the bytes there are not one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
            : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
        (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* A JSON string: names come from files and bundles, so bytes that are not UTF-8 become
 * U+FFFD (one per byte) rather than making the output invalid JSON. */
static void json_str(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    putchar('"');
    while (*s) {
        int n = utf8_len(s);
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if (*s < 0x20) printf("\\u%04x", *s);
        else if (n == 0) fputs("\\ufffd", stdout);
        else fwrite(s, 1, (size_t)n, stdout);
        s += n ? n : 1;
    }
    putchar('"');
}

/* One kernel, from a code object or rebuilt from bundle records. A cubin records registers and
 * its stack frame, not spills (ptxas's spills live in that frame), so its line says so in
 * NVIDIA's words; the JSON keeps one set of fields (docs/bundle-format.md). */
static void print_kernel(const aot_co_kernel *k, unsigned kind, int json, int last)
{
    const aot_kernel_rec *r = &k->rec;
    if (!json) {
        if (kind == AOT_KIND_CUBIN)
            printf("    kernel %s\n      kernarg %u (explicit %u), static shared %u, stack %u (where spills go), "
                   "registers %u, warp %u, max threads %u\n",
                   k->name, r->kernarg_size, r->explicit_args_size, r->group_segment, r->private_segment, r->vgpr,
                   r->wave_size, r->max_workgroup);
        else
            printf("    kernel %s\n      kernarg %u (explicit %u), lds %u, scratch %u, vgpr %u, agpr %u, "
                   "sgpr %u, spills vgpr %u sgpr %u, wave %u, max workgroup %u%s\n",
                   k->name, r->kernarg_size, r->explicit_args_size, r->group_segment,
                   r->private_segment, r->vgpr, r->agpr, r->sgpr, r->vgpr_spill, r->sgpr_spill,
                   r->wave_size, r->max_workgroup,
                   (r->flags & AOT_KERNEL_FLAG_DYNAMIC_STACK) ? ", dynamic stack" : "");
        for (unsigned a = 0; a < k->nargs; a++)
            printf("      arg %u: offset %u size %u %s%s%s\n", a, k->args[a].offset, k->args[a].size,
                   k->args[a].kind, k->args[a].name[0] ? " " : "", k->args[a].name);
        return;
    }
    printf("        {\"name\": ");
    json_str(k->name);
    printf(", \"kernarg_size\": %u, \"explicit_args_size\": %u, \"lds\": %u, \"scratch\": %u, "
           "\"vgpr\": %u, \"agpr\": %u, \"sgpr\": %u, \"vgpr_spill\": %u, \"sgpr_spill\": %u, "
           "\"wave_size\": %u, \"max_workgroup\": %u, \"dynamic_stack\": %s, \"args\": [",
           r->kernarg_size, r->explicit_args_size, r->group_segment, r->private_segment, r->vgpr,
           r->agpr, r->sgpr, r->vgpr_spill, r->sgpr_spill, r->wave_size, r->max_workgroup,
           (r->flags & AOT_KERNEL_FLAG_DYNAMIC_STACK) ? "true" : "false");
    for (unsigned a = 0; a < k->nargs; a++) {
        printf("%s{\"offset\": %u, \"size\": %u, \"kind\": ", a ? ", " : "", k->args[a].offset,
               k->args[a].size);
        json_str(k->args[a].kind);
        printf(", \"name\": ");
        json_str(k->args[a].name);
        putchar('}');
    }
    printf("]}%s\n", last ? "" : ",");
}

static void print_module(const char *module, const aot_codeobj *co, unsigned long long size,
                         unsigned long long hash, int json, int last)
{
    if (!json) {
        printf("  module %s: %s v%u, %llu bytes, e_flags 0x%x, hash %016llx\n", module,
               kind_name(co->kind), co->abi, size, co->e_flags, hash);
    } else {
        printf("    {\"module\": ");
        json_str(module);
        printf(", \"target\": ");
        json_str(co->target);
        printf(", \"kind\": \"%s\", \"abi\": %u, \"size\": %llu, \"e_flags\": %u, "
               "\"hash\": \"%016llx\", \"kernels\": [\n", kind_name(co->kind), co->abi, size,
               co->e_flags, hash);
    }
    for (unsigned k = 0; k < co->nkernels; k++) print_kernel(&co->kernels[k], co->kind, json, k + 1 == co->nkernels);
    if (json) printf("    ]}%s\n", last ? "" : ",");
}

/* Rebuilds an aot_codeobj view of entry e from the index (no decompression). */
static void entry_view(const aot_bundle *b, unsigned e, aot_codeobj *co)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    memset(co, 0, sizeof *co);
    co->kind = (aot_kind)r.kind, co->abi = r.abi, co->e_flags = r.e_flags;
    snprintf(co->target, sizeof co->target, "%s", aot_bundle_string(b, r.target));
    co->kernels = calloc(r.kernel_count + 1, sizeof *co->kernels);
    for (uint32_t k = 0; co->kernels && k < r.kernel_count; k++) {
        aot_co_kernel *ck = &co->kernels[co->nkernels++];
        ck->rec = aot_bundle_kernel(b, r.kernel_first + k);
        snprintf(ck->name, sizeof ck->name, "%s", aot_bundle_string(b, ck->rec.name));
        ck->args = calloc(ck->rec.arg_count + 1, sizeof *ck->args);
        for (uint32_t a = 0; ck->args && a < ck->rec.arg_count; a++) {
            aot_arg_rec ar = aot_bundle_arg(b, ck->rec.arg_first + a);
            aot_co_arg *ca = &ck->args[ck->nargs++];
            ca->offset = ar.offset, ca->size = ar.size;
            snprintf(ca->kind, sizeof ca->kind, "%s", aot_bundle_string(b, ar.kind));
            snprintf(ca->name, sizeof ca->name, "%s", aot_bundle_string(b, ar.name));
        }
    }
}

static void list_bundle(const aot_bundle *b, const char *path, int json)
{
    if (json) printf("{\"bundle\": ");
    if (json) json_str(path);
    if (json) printf(", \"version\": %u, \"size\": %zu, \"dictionary\": %u, \"frames\": [\n",
                     b->version, b->size, b->dict_size);
    else printf("bundle %s: format %u, %zu bytes, %u code objects in %u frames, dictionary %u bytes\n",
                path, b->version, b->size, b->entries, b->frames, b->dict_size);
    for (uint32_t f = 0; f < b->frames; f++) {
        aot_frame_rec fr = aot_bundle_frame(b, f);
        if (json) {
            printf("  {\"target\": ");
            json_str(aot_bundle_string(b, fr.target));
            printf(", \"compressed\": %llu, \"size\": %llu, \"modules\": [\n",
                   (unsigned long long)fr.csize, (unsigned long long)fr.usize);
        } else {
            printf("target %s: %llu bytes, %llu compressed\n", aot_bundle_string(b, fr.target),
                   (unsigned long long)fr.usize, (unsigned long long)fr.csize);
        }
        uint32_t last = 0;
        for (uint32_t e = 0; e < b->entries; e++) last = aot_bundle_entry(b, e).frame == f ? e : last;
        for (uint32_t e = 0; e < b->entries; e++) {
            aot_entry_rec r = aot_bundle_entry(b, e);
            if (r.frame != f) continue;
            aot_codeobj co;
            entry_view(b, e, &co);
            print_module(aot_bundle_string(b, r.name), &co, (unsigned long long)r.size,
                         (unsigned long long)r.hash, json, e == last);
            aot_codeobj_free(&co);
        }
        if (json) printf("  ]}%s\n", f + 1 == b->frames ? "" : ",");
    }
    if (json) printf("]}\n");
}

int cmd_list(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, OPT_JSON, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "list: need exactly one FILE");
    const char *path = o.files[0];
    unsigned char *data;
    size_t size;
    int rc = EXIT_OK, json = o.json;
    cli_opts_free(&o);
    if (cli_read_file(path, &data, &size)) return EXIT_INPUT;
    aot_codeobj co;
    aot_diag d = {""}, why_not_co = {""};
    aot_bundle b;
    int elf = size > 18 && memcmp(data, "\177ELF", 4) == 0;
    if (elf && aot_codeobj_inspect(data, size, path, NULL, &co, &why_not_co) == AITER_AOT_STATUS_OK) {
        if (json) printf("{\"object\": [\n");
        else printf("code object %s: target %s\n", path, co.target);
        print_module(path, &co, (unsigned long long)size, 0, json, 1);
        if (json) printf("]}\n");
        aot_codeobj_free(&co);
    } else if (aot_bundle_find(&b, data, size, &d) == AITER_AOT_STATUS_OK) {
        list_bundle(&b, path, json); /* an object, archive or executable that embeds a bundle */
    } else if (elf) { /* an ELF file that is neither: why it is no code object is what helps */
        rc = cli_error(EXIT_INVALID_CO, "%s; nor does it embed a bundle", why_not_co.msg);
    } else {
        rc = cli_error(EXIT_CORRUPT, "%s: neither a valid code object nor a valid bundle (%s)", path, d.msg);
    }
    free(data);
    return rc;
}

/* Do a kernel's index record and the one inspection makes agree? The bundle's own fields
 * (name, argument range) are left out; the rest is compared in its encoded form. */
static int same_kernel(const aot_co_kernel *index, const aot_co_kernel *co)
{
    unsigned char a[AOT_KERNEL_SIZE], b[AOT_KERNEL_SIZE];
    aot_kernel_rec r = index->rec;
    r.name = r.arg_first = r.arg_count = 0;
    aot_encode_kernel(a, &r), aot_encode_kernel(b, &co->rec);
    if (strcmp(index->name, co->name) != 0 || memcmp(a, b, sizeof a) != 0 || index->nargs != co->nargs) return 0;
    for (unsigned i = 0; i < co->nargs; i++)
        if (index->args[i].offset != co->args[i].offset || index->args[i].size != co->args[i].size ||
            strcmp(index->args[i].kind, co->args[i].kind) != 0 || strcmp(index->args[i].name, co->args[i].name) != 0)
            return 0;
    return 1;
}

/* What the index says of entry e against what its code object says (the runtime trusts the
 * index: explicit_args_size guards every launch). @return NULL, or what differs. */
static const char *index_disagrees(const aot_bundle *b, unsigned e, const aot_codeobj *co, char *why, size_t cap)
{
    aot_codeobj view;
    entry_view(b, e, &view);
    const char *diff = NULL;
    if (view.kind != co->kind || view.abi != co->abi || view.e_flags != co->e_flags || strcmp(view.target, co->target))
        diff = "its kind, ABI, e_flags or target";
    else if (view.nkernels != co->nkernels)
        diff = "its kernel count";
    for (unsigned k = 0; diff == NULL && k < co->nkernels; k++)
        if (!same_kernel(&view.kernels[k], &co->kernels[k]))
            snprintf(why, cap, "kernel %u (%s): its name, resources or arguments", k, co->kernels[k].name), diff = why;
    aot_codeobj_free(&view);
    return diff;
}

/* verify: reports every failure and exits with the code of the first kind found. */
int cmd_verify(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, 0, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "verify: need exactly one FILE");
    const char *path = o.files[0];
    cli_opts_free(&o);
    aot_bundle b;
    unsigned char *data;
    int rc = cli_open_bundle(path, &data, &b);
    if (rc) return rc;
    for (uint32_t f = 0; f < b.frames; f++) {
        unsigned char *bytes;
        aot_diag d = {""};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        aiter_aot_status ds = aot_bundle_decompress_frame(&b, f, &bytes, &d);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (ds == AITER_AOT_STATUS_OK)
            printf("frame %u (%s): %llu bytes decompressed in %.3f ms\n", f,
                   aot_bundle_string(&b, aot_bundle_frame(&b, f).target),
                   (unsigned long long)aot_bundle_frame(&b, f).usize,
                   (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
        if (ds) {
            cli_error(0, "%s: %s", path, d.msg);
            rc = rc ? rc : EXIT_FRAME;
            continue;
        }
        for (uint32_t e = 0; e < b.entries; e++) {
            aot_entry_rec r = aot_bundle_entry(&b, e);
            aot_codeobj co;
            if (r.frame != f) continue;
            /* the ELF extents are inspect's to check: a fault there is an invalid code object */
            if (aot_bundle_check_entry_hash(&b, e, bytes, &d)) {
                cli_error(0, "%s: %s", path, d.msg);
                rc = rc ? rc : EXIT_HASH;
            } else if (aot_codeobj_inspect(bytes + r.offset, (size_t)r.size, aot_bundle_string(&b, r.name),
                                           aot_bundle_string(&b, r.target), &co, &d)) {
                cli_error(0, "%s: entry %u: %s", path, e, d.msg);
                rc = rc ? rc : EXIT_INVALID_CO;
            } else {
                char why[256];
                const char *diff = index_disagrees(&b, e, &co, why, sizeof why);
                if (diff) cli_error(0, "%s: entry %u (%s for %s): the index and the code object disagree on %s",
                                    path, e, aot_bundle_string(&b, r.name), aot_bundle_string(&b, r.target), diff);
                rc = rc ? rc : diff ? EXIT_CORRUPT : 0;
                aot_codeobj_free(&co);
            }
        }
        free(bytes);
    }
    free(data);
    if (rc == 0) printf("%s: ok (%u code objects, %u targets)\n", path, b.entries, b.frames);
    return rc;
}
