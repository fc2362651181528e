/* cmd_extract.c : extract code objects, byte-identical, back out of a bundle. All or nothing:
 * every selected entry is decoded and checked before anything is written; then each output goes
 * to a temporary beside its place, and only once all are written are they renamed into place (a
 * file they replace is kept aside until the end). A failure at any step removes the temporaries
 * and every directory this run created, and puts the replaced files back.
 * Every output is created relative to the opened -o directory: one subdirectory per target (made
 * with mkdirat, opened without following a link), one file per module (never through a link).
 * Names come from the bundle, whose reader allows [A-Za-z0-9_.-] module names and canonical
 * targets only. */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, mkdirat, unlinkat, strdup */
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
    char **name;
    size_t n;
} name_list;

/* One file to write: DIR/sub/name. tmp names the new bytes until they are renamed into place,
 * backup the file they replaced (both "" when there is none). */
typedef struct {
    char sub[96], name[96];
    const unsigned char *bytes;
    size_t size;
    char tmp[256], backup[256];
    int placed;
} output;

typedef struct {
    int root;           /* the -o directory */
    const char *shown;  /* its name in messages */
    name_list made_dirs; /* -o and its parents that this run created, as paths */
    name_list made_subs; /* target subdirectories this run created, relative to root */
    output *out;
    size_t nout;
} out_dir;

static int remember(name_list *l, const char *name)
{
    char **g = realloc(l->name, (l->n + 1) * sizeof *g);
    if (g) l->name = g;
    char *copy = g ? strdup(name) : NULL;
    if (copy == NULL) return -1;
    l->name[l->n++] = copy;
    return 0;
}

static void forget(name_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->name[i]);
    free(l->name);
}

/* Creates the -o directory and its missing parents, remembering each one it made. */
static int make_out_dir(out_dir *o, const char *path)
{
    char buf[4096];
    if (*path == 0) return errno = ENOENT, -1;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0755) == 0) {
            if (remember(&o->made_dirs, buf)) return errno = ENOMEM, -1;
        } else if (errno != EEXIST) {
            return -1;
        }
        if (c == 0) return 0;
        *p = c;
    }
}

/* Opens the target's subdirectory, creating it first when `create`; a link there is refused. */
static int open_sub(out_dir *o, const char *sub, int create)
{
    if (create && mkdirat(o->root, sub, 0755) == 0) {
        if (remember(&o->made_subs, sub)) return errno = ENOMEM, -1;
    } else if (create && errno != EEXIST) {
        return -1;
    }
    return openat(o->root, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Decodes every frame that holds a selected entry and checks those entries (the reader keeps
 * entries in frame order, and all frames together under 1 GiB). frames[f] stays NULL for a
 * frame with nothing selected. */
static int decode_selected(const aot_bundle *b, const cli_opts *opt, unsigned char **frames, size_t *found)
{
    for (uint32_t e = 0; e < b->entries; e++) {
        aot_entry_rec r = aot_bundle_entry(b, e);
        aot_diag d = {""};
        if (!cli_entry_matches(b, e, opt->target, opt->kernel)) continue;
        if (frames[r.frame] == NULL && aot_bundle_decompress_frame(b, r.frame, &frames[r.frame], &d))
            return cli_error(EXIT_FRAME, "%s: %s", opt->files[0], d.msg);
        if (aot_bundle_check_entry(b, e, frames[r.frame], &d))
            return cli_error(EXIT_HASH, "%s: %s", opt->files[0], d.msg);
        (*found)++;
    }
    return EXIT_OK;
}

static void describe(const aot_bundle *b, uint32_t e, const unsigned char *frame, output *w)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    aot_target t;
    const char *target = aot_bundle_string(b, r.target);
    aot_target_parse(&t, target);
    const char *features = strchr(target + 20, ':');
    memset(w, 0, sizeof *w);
    snprintf(w->sub, sizeof w->sub, "%s%s", t.processor, features ? features : "");
    snprintf(w->name, sizeof w->name, "%s.%s", aot_bundle_string(b, r.name), r.kind == AOT_KIND_CUBIN ? "cubin" : "co");
    w->bytes = frame + r.offset;
    w->size = (size_t)r.size;
}

/* Writes w's bytes to a temporary in its subdirectory (created if need be). */
static int stage(out_dir *o, output *w)
{
    char shown[4096];
    snprintf(shown, sizeof shown, "%s/%s/%s", o->shown, w->sub, w->name);
    int fd = open_sub(o, w->sub, 1);
    if (fd < 0)
        return cli_error(EXIT_OUTPUT, "%s/%s: cannot create or open directory (%s)", o->shown, w->sub, strerror(errno));
    int rc = cli_write_temp(fd, w->name, shown, w->bytes, w->size, w->tmp, sizeof w->tmp);
    close(fd);
    return rc;
}

/* Renames w's temporary into place; a file already there is first renamed aside, over an
 * empty placeholder made with O_EXCL, so that no other file is ever replaced. */
static int place(out_dir *o, output *w)
{
    int fd = open_sub(o, w->sub, 0), ok = fd >= 0;
    struct stat st;
    if (ok && fstatat(fd, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        char backup[256];
        int b = cli_temp_open(fd, w->name, backup, sizeof backup);
        ok = b >= 0 && close(b) == 0 && renameat(fd, w->name, fd, backup) == 0;
        if (ok) memcpy(w->backup, backup, sizeof backup);
        else if (b >= 0) unlinkat(fd, backup, 0);
    }
    if (ok && renameat(fd, w->tmp, fd, w->name) == 0) w->tmp[0] = 0, w->placed = 1;
    else ok = 0;
    if (fd >= 0) close(fd);
    return ok ? EXIT_OK : cli_error(EXIT_OUTPUT, "%s/%s/%s: cannot write (%s)", o->shown, w->sub, w->name, strerror(errno));
}

/* Success: the replaced files are dropped. Failure: everything goes back as it was. */
static void finish_output(out_dir *o, output *w, int success)
{
    int fd = open_sub(o, w->sub, 0);
    if (fd < 0) return;
    if (w->tmp[0]) unlinkat(fd, w->tmp, 0);
    if (success && w->backup[0]) unlinkat(fd, w->backup, 0);
    else if (w->backup[0]) renameat(fd, w->backup, fd, w->name);
    else if (!success && w->placed) unlinkat(fd, w->name, 0);
    close(fd);
}

/* Undoes a failed run: outputs newest first, then the directories it created, newest first. */
static void undo(out_dir *o)
{
    for (size_t i = o->nout; i-- > 0;) finish_output(o, &o->out[i], 0);
    for (size_t i = o->made_subs.n; i-- > 0;) unlinkat(o->root, o->made_subs.name[i], AT_REMOVEDIR);
    for (size_t i = o->made_dirs.n; i-- > 0;) rmdir(o->made_dirs.name[i]);
}

static int write_all(const aot_bundle *b, const cli_opts *opt, unsigned char **frames, out_dir *o)
{
    for (uint32_t e = 0; e < b->entries; e++)
        if (cli_entry_matches(b, e, opt->target, opt->kernel)) {
            aot_entry_rec r = aot_bundle_entry(b, e);
            output *w = &o->out[o->nout++];
            describe(b, e, frames[r.frame], w);
            int rc = stage(o, w);
            if (rc) return rc;
        }
    for (size_t i = 0; i < o->nout; i++) {
        int rc = place(o, &o->out[i]);
        if (rc) return rc;
    }
    for (size_t i = 0; i < o->nout; i++) {
        finish_output(o, &o->out[i], 1);
        printf("%s/%s/%s\n", o->shown, o->out[i].sub, o->out[i].name);
    }
    return EXIT_OK;
}

static int extract(const aot_bundle *b, const cli_opts *opt, unsigned char **frames, out_dir *o)
{
    size_t found = 0;
    int rc = decode_selected(b, opt, frames, &found);
    if (rc == 0 && found == 0)
        return cli_error(EXIT_INPUT, "%s: no entry matches%s%s%s%s", opt->files[0], opt->target ? " --target " : "",
                         opt->target ? opt->target : "", opt->kernel ? " --kernel " : "", opt->kernel ? opt->kernel : "");
    if (rc == 0 && (o->out = calloc(found, sizeof *o->out)) == NULL) rc = cli_error(EXIT_OUTPUT, "out of memory");
    if (rc == 0 && (make_out_dir(o, opt->out) || (o->root = open(opt->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0))
        rc = cli_error(EXIT_OUTPUT, "%s: cannot create or open directory (%s)", opt->out, strerror(errno));
    if (rc == 0) rc = write_all(b, opt, frames, o);
    if (rc != 0) undo(o);
    return rc;
}

int cmd_extract(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, OPT_OUT | OPT_TARGET | OPT_KERNEL, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "extract: need exactly one FILE");
    aot_bundle b;
    unsigned char *data = NULL, **frames = NULL;
    out_dir out = {-1, o.out, {NULL, 0}, {NULL, 0}, NULL, 0};
    int rc = cli_open_bundle(o.files[0], &data, &b);
    if (rc == 0 && (frames = calloc(b.frames ? b.frames : 1, sizeof *frames)) == NULL)
        rc = cli_error(EXIT_OUTPUT, "out of memory");
    if (rc == 0) rc = extract(&b, &o, frames, &out);
    if (out.root >= 0) close(out.root);
    for (uint32_t f = 0; frames && f < b.frames; f++) free(frames[f]);
    free(frames), free(out.out), free(data);
    forget(&out.made_dirs), forget(&out.made_subs);
    cli_opts_free(&o);
    return rc;
}
