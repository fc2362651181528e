/* cmd_extract.c : extract code objects, byte-identical, back out of a bundle. Every output is
 * created relative to the opened -o directory: one subdirectory per target (made with mkdirat,
 * opened without following a link), one file per module (cli_write_at, never through a link).
 * Names come from the bundle, whose reader allows [A-Za-z0-9_.-] module names and canonical
 * targets only; a failed run removes what it wrote. */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, mkdirat, unlinkat */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aot_bundle_cli.h"
#include "target_id.h"

typedef struct {
    int root;              /* the -o directory */
    const char *shown;     /* its name in messages */
    char (*made)[200];     /* "sub/name" files and "sub" directories this run created */
    int *is_dir;
    size_t nmade;
} out_dir;

static int make_dir(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int remember(out_dir *o, const char *rel, int is_dir)
{
    char (*m)[200] = realloc(o->made, (o->nmade + 1) * sizeof *m);
    if (m) o->made = m;
    int *d = m ? realloc(o->is_dir, (o->nmade + 1) * sizeof *d) : NULL;
    if (d == NULL) return -1;
    o->is_dir = d;
    snprintf(o->made[o->nmade], sizeof o->made[0], "%s", rel);
    o->is_dir[o->nmade++] = is_dir;
    return 0;
}

/* Removes, newest first, what this run created. */
static void undo(out_dir *o)
{
    while (o->nmade > 0) {
        o->nmade--;
        unlinkat(o->root, o->made[o->nmade], o->is_dir[o->nmade] ? AT_REMOVEDIR : 0);
    }
}

/* Opens (creating it if need be) the target's subdirectory; a link there is refused. */
static int open_sub(out_dir *o, const char *sub)
{
    if (mkdirat(o->root, sub, 0755) == 0) {
        if (remember(o, sub, 1)) return -1;
    } else if (errno != EEXIST) {
        return -1;
    }
    return openat(o->root, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int write_entry(const aot_bundle *b, uint32_t e, const unsigned char *bytes, out_dir *o)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    aot_target t;
    char sub[96], name[96], rel[200], shown[4096];
    aot_target_parse(&t, aot_bundle_string(b, r.target));
    const char *features = strchr(aot_bundle_string(b, r.target) + 20, ':');
    snprintf(sub, sizeof sub, "%s%s", t.processor, features ? features : "");
    snprintf(name, sizeof name, "%s.%s", aot_bundle_string(b, r.name), r.kind == AOT_KIND_CUBIN ? "cubin" : "co");
    snprintf(rel, sizeof rel, "%s/%s", sub, name);
    snprintf(shown, sizeof shown, "%s/%s", o->shown, rel);
    int subfd = open_sub(o, sub);
    if (subfd < 0) return cli_error(EXIT_OUTPUT, "%s/%s: cannot create or open directory (%s)", o->shown, sub, strerror(errno));
    struct stat st;
    int existed = fstatat(subfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    int rc = cli_write_at(subfd, name, shown, bytes + r.offset, (size_t)r.size);
    close(subfd);
    if (rc == 0 && !existed && remember(o, rel, 0)) rc = cli_error(EXIT_OUTPUT, "out of memory");
    if (rc == 0) printf("%s\n", shown);
    return rc;
}

static int extract_all(const aot_bundle *b, const cli_opts *opt, out_dir *o, int *found)
{
    int rc = 0;
    for (uint32_t f = 0; rc == 0 && f < b->frames; f++) {
        unsigned char *bytes = NULL;
        aot_diag d = {""};
        for (uint32_t e = 0; rc == 0 && e < b->entries; e++) {
            if (aot_bundle_entry(b, e).frame != f || !cli_entry_matches(b, e, opt->target, opt->kernel))
                continue;
            if (bytes == NULL && aot_bundle_decompress_frame(b, f, &bytes, &d))
                rc = cli_error(EXIT_FRAME, "%s: %s", opt->files[0], d.msg);
            else if (aot_bundle_check_entry(b, e, bytes, &d))
                rc = cli_error(EXIT_HASH, "%s: %s", opt->files[0], d.msg);
            else
                rc = write_entry(b, e, bytes, o), (*found)++;
        }
        free(bytes);
    }
    return rc;
}

int cmd_extract(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, OPT_OUT | OPT_TARGET | OPT_KERNEL, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "extract: need exactly one FILE");
    aot_bundle b;
    unsigned char *data;
    out_dir out = {-1, o.out, NULL, NULL, 0};
    int rc = cli_open_bundle(o.files[0], &data, &b), found = 0;
    if (rc == 0 && (make_dir(o.out) || (out.root = open(o.out, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0))
        rc = cli_error(EXIT_OUTPUT, "%s: cannot create or open directory (%s)", o.out, strerror(errno));
    if (rc == 0) rc = extract_all(&b, &o, &out, &found);
    if (rc == 0 && found == 0)
        rc = cli_error(EXIT_INPUT, "%s: no entry matches%s%s%s%s", o.files[0], o.target ? " --target " : "",
                       o.target ? o.target : "", o.kernel ? " --kernel " : "", o.kernel ? o.kernel : "");
    if (rc != 0 && out.root >= 0) undo(&out);
    if (out.root >= 0) close(out.root);
    free(out.made), free(out.is_dir);
    free(data);
    cli_opts_free(&o);
    return rc;
}
