/* cmd_pack.c : pack, add, remove and repack; every path ends in aot_bundle_write. */
#define _POSIX_C_SOURCE 200809L /* strtok_r, renameat, unlinkat */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot_bundle_cli.h"

typedef struct {
    aot_pack_item *items;
    size_t n;
    unsigned char **owned; /* file and frame buffers to free */
    size_t nowned;
} pack_list;

static int own(pack_list *l, unsigned char *p)
{
    unsigned char **g = realloc(l->owned, (l->nowned + 1) * sizeof *g);
    if (g == NULL) return -1;
    l->owned = g;
    l->owned[l->nowned++] = p;
    return 0;
}

static aot_pack_item *grow(pack_list *l)
{
    aot_pack_item *g = realloc(l->items, (l->n + 1) * sizeof *g);
    if (g == NULL) return NULL;
    l->items = g;
    memset(&g[l->n], 0, sizeof g[l->n]);
    return &g[l->n++];
}

/* The module is the file name up to its first '.'; a name the reader would refuse (too long,
 * other characters) is an error here, never truncated into another module's name. */
static int module_name(char *dst, size_t cap, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strcspn(base, ".");
    if (n >= cap) return cli_error(EXIT_INPUT, "%s: module name is over %d characters", path, AOT_MAX_MODULE_NAME);
    snprintf(dst, cap, "%.*s", (int)n, base);
    if (!aot_bundle_module_name_ok(dst))
        return cli_error(EXIT_INPUT, "%s: module name \"%s\" is not [A-Za-z0-9_.-]{1,63}", path, dst);
    return 0;
}

static int add_file(pack_list *l, const char *path, const char *declared)
{
    unsigned char *data;
    size_t size;
    aot_diag d = {""};
    if (cli_read_file(path, &data, &size) || own(l, data)) return EXIT_INPUT;
    aot_pack_item *it = grow(l);
    if (it == NULL) return cli_error(EXIT_INPUT, "out of memory");
    it->path = path;
    it->bytes = data;
    it->size = size;
    if (module_name(it->module, sizeof it->module, path)) {
        l->n--;
        return EXIT_INPUT;
    }
    if (aot_codeobj_inspect(data, size, path, declared, &it->co, &d) != AITER_AOT_STATUS_OK) {
        l->n--;
        return cli_error(EXIT_INPUT, "%s", d.msg);
    }
    return 0;
}

typedef int (*keep_fn)(const aot_bundle *b, unsigned e, const cli_opts *o);

/* Keeps a copy of entry e's bytes (frame_bytes is freed once its frame is done) as a new item. */
static int add_entry(pack_list *l, const char *path, const aot_bundle *b, uint32_t e,
                     const unsigned char *frame_bytes)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    aot_diag d = {""};
    if (aot_bundle_check_entry(b, e, frame_bytes, &d)) return cli_error(EXIT_HASH, "%s: %s", path, d.msg);
    unsigned char *copy = malloc(r.size ? (size_t)r.size : 1);
    aot_pack_item *it = copy && own(l, copy) == 0 ? grow(l) : (free(copy), NULL);
    if (it == NULL) return cli_error(EXIT_INPUT, "out of memory");
    memcpy(copy, frame_bytes + r.offset, (size_t)r.size);
    it->path = path;
    it->bytes = copy;
    it->size = (size_t)r.size;
    snprintf(it->module, sizeof it->module, "%s", aot_bundle_string(b, r.name));
    if (aot_codeobj_inspect(it->bytes, it->size, it->module, aot_bundle_string(b, r.target), &it->co, &d)) {
        l->n--;
        return cli_error(EXIT_INVALID_CO, "%s: %s", path, d.msg);
    }
    return 0;
}

/* One frame at a time: only the kept code objects and the current frame are in memory (a
 * bundle's frames together may declare up to 1 GiB). */
static int add_bundle(pack_list *l, const char *path, keep_fn keep, const cli_opts *o)
{
    aot_bundle b;
    unsigned char *data;
    int rc = cli_open_bundle(path, &data, &b);
    if (rc || own(l, data)) return rc ? rc : EXIT_INPUT;
    for (uint32_t f = 0; rc == 0 && f < b.frames; f++) {
        unsigned char *bytes;
        aot_diag d = {""};
        if (aot_bundle_decompress_frame(&b, f, &bytes, &d)) return cli_error(EXIT_FRAME, "%s: %s", path, d.msg);
        for (uint32_t e = 0; rc == 0 && e < b.entries; e++)
            if (aot_bundle_entry(&b, e).frame == f && (!keep || keep(&b, e, o))) rc = add_entry(l, path, &b, e, bytes);
        free(bytes);
    }
    return rc;
}

/* The cache file of --cache: a missing or unreadable one is an empty cache (it only saves
 * time); NULL when out of memory. */
static aot_pack_cache *load_cache(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return aot_pack_cache_parse(NULL, 0);
    fclose(f);
    unsigned char *data;
    size_t size;
    if (cli_read_file(path, &data, &size)) return aot_pack_cache_parse(NULL, 0);
    aot_pack_cache *c = aot_pack_cache_parse(data, size);
    free(data);
    return c;
}

/* The new cache, written to a temporary beside its path but not yet renamed over it. */
typedef struct {
    int dir;
    const char *base;
    char tmp[256];
} staged_cache;

/* Writes the cache's temporary before -o is touched, so that a cache path that cannot be
 * written (a directory, a read-only folder) fails the pack with the old bundle in place. */
static int stage_cache(const char *path, const aot_pack_cache *c, staged_cache *sc)
{
    unsigned char *data;
    size_t size;
    aot_diag d = {""};
    if ((sc->dir = cli_open_parent(path, &sc->base)) < 0)
        return cli_error(EXIT_OUTPUT, "--cache %s: %s", path, strerror(errno));
    if (aot_pack_cache_serialize(c, &data, &size, &d)) return cli_error(EXIT_OUTPUT, "--cache %s: %s", path, d.msg);
    int rc = cli_write_temp(sc->dir, sc->base, path, data, size, sc->tmp, sizeof sc->tmp);
    free(data);
    if (rc) sc->tmp[0] = 0;
    return rc;
}

/* Puts the staged cache in place once the bundle is written (rc 0), else drops it. */
static int finish_cache(const char *path, staged_cache *sc, int rc)
{
    if (sc->tmp[0] && rc == 0 && renameat(sc->dir, sc->tmp, sc->dir, sc->base) != 0)
        rc = cli_error(EXIT_OUTPUT, "--cache %s: cannot write (%s); the bundle was written", path, strerror(errno));
    if (sc->tmp[0] && rc != 0) unlinkat(sc->dir, sc->tmp, 0);
    if (sc->dir >= 0) close(sc->dir);
    return rc;
}

static int write_out(pack_list *l, cli_opts *o)
{
    unsigned char *out = NULL;
    size_t size;
    aot_diag d = {""};
    staged_cache sc = {-1, NULL, ""};
    if (o->cache && (o->pack.cache = load_cache(o->cache)) == NULL) return cli_error(EXIT_INPUT, "out of memory");
    int rc = EXIT_OK;
    if (aot_bundle_write(l->items, l->n, &o->pack, &out, &size, &d) != AITER_AOT_STATUS_OK)
        rc = cli_error(EXIT_INPUT, "%s", d.msg);
    if (rc == 0 && o->cache) rc = stage_cache(o->cache, o->pack.cache, &sc);
    if (rc == 0) rc = cli_write_file(o->out, out, size);
    rc = finish_cache(o->cache, &sc, rc);
    free(out);
    aot_pack_cache_free(o->pack.cache);
    return rc;
}

static int finish(pack_list *l, cli_opts *o, int rc)
{
    if (rc == 0) rc = write_out(l, o);
    for (size_t i = 0; i < l->n; i++) aot_codeobj_free(&l->items[i].co);
    for (size_t i = 0; i < l->nowned; i++) free(l->owned[i]);
    free(l->items);
    free(l->owned);
    cli_opts_free(o);
    return rc;
}

int cmd_pack(int argc, char **argv)
{
    cli_opts o;
    pack_list l = {0};
    if (cli_parse(argc, argv, OPT_OUT | OPT_LEVEL | OPT_DICT | OPT_TARGET | OPT_CACHE, &o)) return EXIT_USAGE;
    if (o.nfiles == 0) {
        cli_opts_free(&o);
        return cli_error(EXIT_USAGE, "pack: no code objects given (an empty bundle is never wanted)");
    }
    int rc = 0;
    for (int i = 0; i < o.nfiles && rc == 0; i++) rc = add_file(&l, o.files[i], o.file_target[i]);
    return finish(&l, &o, rc);
}

int cmd_add(int argc, char **argv)
{
    cli_opts o;
    pack_list l = {0};
    if (cli_parse(argc, argv, OPT_OUT | OPT_LEVEL | OPT_DICT | OPT_TARGET, &o)) return EXIT_USAGE;
    if (o.nfiles < 2) return cli_error(EXIT_USAGE, "add: need a bundle and at least one code object");
    int rc = add_bundle(&l, o.files[0], NULL, &o);
    for (int i = 1; i < o.nfiles && rc == 0; i++) rc = add_file(&l, o.files[i], o.file_target[i]);
    return finish(&l, &o, rc);
}

static int keep_unmatched(const aot_bundle *b, unsigned e, const cli_opts *o)
{
    return !cli_entry_matches(b, e, o->target, o->kernel);
}

int cmd_remove(int argc, char **argv)
{
    cli_opts o;
    pack_list l = {0};
    if (cli_parse(argc, argv, OPT_OUT | OPT_LEVEL | OPT_DICT | OPT_TARGET | OPT_KERNEL, &o))
        return EXIT_USAGE;
    if (o.nfiles != 1 || (!o.target && !o.kernel))
        return cli_error(EXIT_USAGE, "remove: need one bundle and --target and/or --kernel");
    int rc = add_bundle(&l, o.files[0], keep_unmatched, &o);
    /* an empty bundle is never wanted (pack refuses one): removing everything is a mistake */
    if (rc == 0 && l.n == 0)
        rc = cli_error(EXIT_USAGE, "remove: every code object of %s matches%s%s%s%s; nothing would be left "
                       "(to drop the bundle, delete it)", o.files[0], o.target ? " --target " : "",
                       o.target ? o.target : "", o.kernel ? " --kernel " : "", o.kernel ? o.kernel : "");
    return finish(&l, &o, rc);
}

static int keep_listed(const aot_bundle *b, unsigned e, const cli_opts *o)
{
    if (o->targets == NULL) return 1;
    char list[1024];
    snprintf(list, sizeof list, "%s", o->targets);
    for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (cli_entry_matches(b, e, t, NULL)) return 1;
    return 0;
}

int cmd_repack(int argc, char **argv)
{
    cli_opts o;
    pack_list l = {0};
    if (cli_parse(argc, argv, OPT_OUT | OPT_LEVEL | OPT_DICT | OPT_TARGETS, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "repack: need exactly one bundle");
    int rc = add_bundle(&l, o.files[0], keep_listed, &o);
    if (rc == 0 && l.n == 0) /* a misspelt --targets: an empty bundle is never wanted */
        rc = cli_error(EXIT_USAGE, "repack: --targets %s matches no target of %s (see aot-bundle list %s)",
                       o.targets, o.files[0], o.files[0]);
    return finish(&l, &o, rc);
}
