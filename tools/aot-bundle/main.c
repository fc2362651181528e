/* main.c : aot-bundle, the bundler: dispatch, usage and the helpers every subcommand uses. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>    /* openat, O_* */
#include <sys/random.h> /* getrandom */
#include <sys/stat.h> /* fstatat */
#include <unistd.h>   /* write, close, unlinkat */

#include "aot_bundle_cli.h"
#include "target_id.h"

#ifndef AOT_VERSION
#define AOT_VERSION "0.1.0"
#endif

const char *prog = "aot-bundle";

static const char usage[] =
    "usage: aot-bundle COMMAND [OPTIONS] ...\n"
    "\n"
    "Builds, inspects and checks aiter-aot kernel bundles (docs/bundle-format.md).\n"
    "\n"
    "commands:\n"
    "  pack -o OUT [--level N] [--dict auto|none|always] [--cache FILE] [--target T] CO...\n"
    "        validate code objects (.co AMDGPU, .cubin CUDA) and pack them; --target T\n"
    "        declares the target of the files after it (checked against each object);\n"
    "        --cache FILE keeps the compressed frames between packs, so that only the\n"
    "        targets whose code objects changed are compressed again (same bytes out)\n"
    "  list [--json] FILE          targets, modules, kernels and their resources; FILE is a\n"
    "                              bundle, a code object, or an object/archive/executable\n"
    "                              that embeds a bundle\n"
    "  verify FILE                 check every hash, frame and code object, and that the\n"
    "                              index says of each code object what the object says\n"
    "  extract FILE [--target T] [--kernel K] -o DIR\n"
    "                              write the code objects back, byte-identical, as\n"
    "                              DIR/<processor>/<module>.co|.cubin\n"
    "  embed BUNDLE -o OBJ         write an ELF relocatable object holding the bundle in section\n"
    "                              .aiter_aot_bundle (hidden symbols aot_embedded_bundle,\n"
    "                              aot_embedded_bundle_size)\n"
    "  add -o OUT FILE CO...       FILE's entries plus new code objects\n"
    "  remove -o OUT FILE [--target T] [--kernel K]\n"
    "                              FILE's entries less those matching\n"
    "  repack -o OUT [--level N] [--dict MODE] [--targets LIST] FILE\n"
    "                              recompress, optionally keeping only the targets in LIST\n"
    "\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 bad input file or code object, 4 corrupt bundle index,\n"
    "  5 frame does not decompress, 6 code-object hash mismatch, 7 a code object does not\n"
    "  validate (verify, list), 8 cannot write output, 9 an output (-o, or a file extract would write)\n"
    "  exists and is not a regular file.\n";

int cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int cli_read_file(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return cli_error(-1, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            unsigned char *g = realloc(buf, cap *= 2);
            if (g == NULL) free(buf);
            buf = g;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (buf == NULL || err) {
        free(buf);
        return cli_error(-1, "%s: read error", path);
    }
    *data = buf;
    *size = n;
    return 0;
}

int cli_open_parent(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    *base = slash ? slash + 1 : path;
    if (slash == NULL) return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if ((size_t)(slash - path) >= sizeof dir) return errno = ENAMETOOLONG, -1;
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int cli_output_check(int dirfd, const char *name, const char *shown)
{
    struct stat st;
    if (*name == 0) return cli_error(EXIT_OUTPUT, "%s: not a file name", shown);
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? EXIT_OK : EXIT_OUTPUT;
    /* replacing a device node, FIFO, directory or link by rename is never what -o meant */
    return S_ISREG(st.st_mode) ? EXIT_OK : cli_error(EXIT_NOT_REGULAR, "%s: exists and is not a regular file", shown);
}

int cli_temp_open(int dirfd, const char *name, char *tmp, size_t cap)
{
    /* an unpredictable name, created only if nothing (not even a dangling link) is there */
    for (int tries = 0; tries < 16; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) return -1;
        snprintf(tmp, cap, ".%.200s.%016llx.tmp", name, (unsigned long long)r);
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

int cli_write_temp(int dirfd, const char *name, const char *shown, const void *data, size_t size,
                   char *tmp, size_t cap)
{
    int rc = cli_output_check(dirfd, name, shown);
    if (rc) return rc;
    int fd = cli_temp_open(dirfd, name, tmp, cap);
    if (fd < 0) return cli_error(EXIT_OUTPUT, "%s: cannot create a temporary file (%s)", shown, strerror(errno));
    const unsigned char *p = data;
    int ok = 1;
    for (size_t done = 0; ok && done < size;) {
        ssize_t n = write(fd, p + done, size - done);
        ok = n > 0, done += ok ? (size_t)n : 0;
    }
    ok &= close(fd) == 0;
    if (ok) return EXIT_OK;
    unlinkat(dirfd, tmp, 0);
    return cli_error(EXIT_OUTPUT, "%s: cannot write", shown);
}

int cli_write_at(int dirfd, const char *name, const char *shown, const void *data, size_t size)
{
    char tmp[256];
    int rc = cli_write_temp(dirfd, name, shown, data, size, tmp, sizeof tmp);
    if (rc) return rc;
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        unlinkat(dirfd, tmp, 0);
        return cli_error(EXIT_OUTPUT, "%s: cannot write", shown);
    }
    return EXIT_OK;
}

int cli_write_file(const char *path, const void *data, size_t size)
{
    const char *base;
    int dirfd = cli_open_parent(path, &base);
    if (dirfd < 0) return cli_error(EXIT_OUTPUT, "%s: %s", path, strerror(errno));
    int rc = cli_write_at(dirfd, base, path, data, size);
    close(dirfd);
    return rc;
}

int cli_open_bundle(const char *path, unsigned char **data, aot_bundle *b)
{
    size_t size;
    aot_diag d = {""};
    if (cli_read_file(path, data, &size)) return EXIT_INPUT;
    aiter_aot_status s = size >= 8 && memcmp(*data, AOT_BUNDLE_MAGIC, 8) == 0
                             ? aot_bundle_open(b, *data, size, &d)
                             : aot_bundle_find(b, *data, size, &d);
    if (s == AITER_AOT_STATUS_OK) return EXIT_OK;
    free(*data);
    *data = NULL;
    return cli_error(EXIT_CORRUPT, "%s: %s", path, d.msg);
}

int cli_entry_matches(const aot_bundle *b, unsigned e, const char *target, const char *kernel)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    if (target) {
        aot_target want, have;
        if (aot_target_parse(&want, target) || aot_target_parse(&have, aot_bundle_string(b, r.target)))
            return 0;
        if (strcmp(want.processor, have.processor) != 0) return 0;
        if (strchr(target, ':') && strcmp(aot_bundle_string(b, r.target), target) != 0) {
            char canon[96];
            aot_target_format(&want, canon, sizeof canon);
            if (strcmp(canon, aot_bundle_string(b, r.target)) != 0) return 0;
        }
    }
    if (kernel == NULL || strcmp(kernel, aot_bundle_string(b, r.name)) == 0) return 1;
    for (uint32_t k = 0; k < r.kernel_count; k++)
        if (strcmp(kernel, aot_bundle_string(b, aot_bundle_kernel(b, r.kernel_first + k).name)) == 0)
            return 1;
    return 0;
}

static const struct { const char *name; int (*fn)(int, char **); } commands[] = {
    {"pack", cmd_pack}, {"add", cmd_add}, {"remove", cmd_remove}, {"repack", cmd_repack},
    {"list", cmd_list}, {"verify", cmd_verify}, {"extract", cmd_extract}, {"embed", cmd_embed}};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("aot-bundle %s (bundle format %d)\n", AOT_VERSION, AOT_BUNDLE_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    return cli_error(EXIT_USAGE, "unknown command '%s' (try --help)", argv[1]);
}
