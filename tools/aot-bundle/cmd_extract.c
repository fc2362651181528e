/* cmd_extract.c : extract code objects, byte-identical, back out of a bundle. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aot_bundle_cli.h"
#include "target_id.h"

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

static int write_entry(const aot_bundle *b, uint32_t e, const unsigned char *bytes, const char *dir)
{
    aot_entry_rec r = aot_bundle_entry(b, e);
    aot_target t;
    char sub[2048], path[4096];
    aot_target_parse(&t, aot_bundle_string(b, r.target));
    const char *features = strchr(aot_bundle_string(b, r.target) + 20, ':');
    snprintf(sub, sizeof sub, "%s/%s%s", dir, t.processor, features ? features : "");
    snprintf(path, sizeof path, "%s/%s.%s", sub, aot_bundle_string(b, r.name),
             r.kind == AOT_KIND_CUBIN ? "cubin" : "co");
    if (make_dir(sub)) return cli_error(EXIT_OUTPUT, "%s: cannot create directory", sub);
    if (cli_write_file(path, bytes + r.offset, (size_t)r.size)) return EXIT_OUTPUT;
    printf("%s\n", path);
    return 0;
}

int cmd_extract(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse(argc, argv, OPT_OUT | OPT_TARGET | OPT_KERNEL, &o)) return EXIT_USAGE;
    if (o.nfiles != 1) return cli_error(EXIT_USAGE, "extract: need exactly one FILE");
    aot_bundle b;
    unsigned char *data;
    int rc = cli_open_bundle(o.files[0], &data, &b), found = 0;
    for (uint32_t f = 0; rc == 0 && f < b.frames; f++) {
        unsigned char *bytes = NULL;
        aot_diag d = {""};
        for (uint32_t e = 0; rc == 0 && e < b.entries; e++) {
            if (aot_bundle_entry(&b, e).frame != f || !cli_entry_matches(&b, e, o.target, o.kernel))
                continue;
            if (bytes == NULL && aot_bundle_decompress_frame(&b, f, &bytes, &d))
                rc = cli_error(EXIT_FRAME, "%s: %s", o.files[0], d.msg);
            else if (aot_bundle_check_entry(&b, e, bytes, &d))
                rc = cli_error(EXIT_HASH, "%s: %s", o.files[0], d.msg);
            else
                rc = write_entry(&b, e, bytes, o.out), found++;
        }
        free(bytes);
    }
    if (rc == 0 && found == 0)
        rc = cli_error(EXIT_INPUT, "%s: no entry matches%s%s%s%s", o.files[0], o.target ? " --target " : "",
                       o.target ? o.target : "", o.kernel ? " --kernel " : "", o.kernel ? o.kernel : "");
    free(data);
    cli_opts_free(&o);
    return rc;
}
