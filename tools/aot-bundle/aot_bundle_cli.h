/* aot_bundle_cli.h : what the subcommands of aot-bundle share. */
#ifndef AOT_BUNDLE_CLI_H
#define AOT_BUNDLE_CLI_H

#include <stddef.h>

#include "bundle.h"
#include "bundle_write.h"

/* Exit codes, also listed by --help. */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 2,        /* bad command line */
    EXIT_INPUT = 3,        /* an input file is missing, unreadable or not a valid code object */
    EXIT_CORRUPT = 4,      /* the bundle's header or index fails its checks */
    EXIT_FRAME = 5,        /* verify: a frame does not decompress to its recorded size */
    EXIT_HASH = 6,         /* verify: a code object's bytes do not match their hash */
    EXIT_INVALID_CO = 7,   /* verify: a code object in the bundle no longer validates; list: an
                              ELF file that is no valid code object and embeds no bundle */
    EXIT_OUTPUT = 8,       /* an output could not be written */
    EXIT_NOT_REGULAR = 9   /* an output exists and is not a regular file (a device, a link) */
};

extern const char *prog;

/* Reads a whole file. @return 0, or -1 after printing an error naming the file. */
int cli_read_file(const char *path, unsigned char **data, size_t *size);
/* Writes through a temporary file and rename, so a failed run leaves no partial output. The
 * temporary has an unpredictable name in the same directory and is created O_EXCL|O_NOFOLLOW;
 * an existing target that is not a regular file is refused. @return EXIT_OK, EXIT_OUTPUT or
 * EXIT_NOT_REGULAR (after printing why). cli_write_at does the same for `name` in dirfd
 * (`shown` names it in messages). */
int cli_write_file(const char *path, const void *data, size_t size);
int cli_write_at(int dirfd, const char *name, const char *shown, const void *data, size_t size);
/* cli_write_at's first half: the bytes in a new temporary (its name in tmp), not yet renamed
 * over `name`, so that a caller can put several outputs in place only once all are written. */
int cli_write_temp(int dirfd, const char *name, const char *shown, const void *data, size_t size,
                   char *tmp, size_t cap);
/* The directory of path, opened (O_DIRECTORY), and *base its last component. @return fd or -1. */
int cli_open_parent(const char *path, const char **base);
/* EXIT_OK if name in dirfd is absent or a regular file; EXIT_NOT_REGULAR (printed) otherwise. */
int cli_output_check(int dirfd, const char *name, const char *shown);
/* Creates an unpredictably named temporary for `name` in dirfd (O_EXCL|O_NOFOLLOW), its name
 * in tmp. @return the fd, or -1 with errno. */
int cli_temp_open(int dirfd, const char *name, char *tmp, size_t cap);
int cli_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Opens a bundle file, or the bundle embedded in an ELF object, archive or executable. */
int cli_open_bundle(const char *path, unsigned char **data, aot_bundle *b);

/* Loads every entry of b as pack items (inspected again), appending to *items. */
int cli_items_from_bundle(const aot_bundle *b, const char *path, aot_pack_item **items,
                          size_t *n, unsigned char ***frames);

/* Does entry e match a --target (full or short ID) and --kernel (module or kernel) filter? */
int cli_entry_matches(const aot_bundle *b, unsigned e, const char *target, const char *kernel);

int cmd_pack(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_repack(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_embed(int argc, char **argv);

#endif

/* Command-line options shared by the subcommands; each accepts the subset in `allowed`. */
enum { OPT_OUT = 1, OPT_LEVEL = 2, OPT_DICT = 4, OPT_TARGET = 8, OPT_KERNEL = 16,
       OPT_TARGETS = 32, OPT_JSON = 64, OPT_CACHE = 128 };

typedef struct {
    const char *out, *target, *kernel, *targets;
    const char *cache; /* pack --cache FILE */
    aot_pack_options pack;
    int json;
    int nfiles;
    char **files;
    const char **file_target; /* the --target in force before each file (pack) */
} cli_opts;

/* @return 0, or EXIT_USAGE after printing why. Free with cli_opts_free. */
int cli_parse(int argc, char **argv, unsigned allowed, cli_opts *o);
void cli_opts_free(cli_opts *o);
