/* options.c : the one command-line parser of aot-bundle's subcommands. */
#include <stdlib.h>
#include <string.h>

#include "aot_bundle_cli.h"

static int need_value(int i, int argc, char **argv)
{
    if (i + 1 < argc) return 0;
    return cli_error(EXIT_USAGE, "%s %s: option needs a value", argv[0], argv[i]);
}

static int parse_dict(const char *v, aot_dict_mode *m)
{
    if (strcmp(v, "auto") == 0) *m = AOT_DICT_AUTO;
    else if (strcmp(v, "none") == 0) *m = AOT_DICT_NONE;
    else if (strcmp(v, "always") == 0) *m = AOT_DICT_ALWAYS;
    else return cli_error(EXIT_USAGE, "--dict %s: expected auto, none or always", v);
    return 0;
}

static int parse_level(const char *v, int *level)
{
    char *end;
    long l = strtol(v, &end, 10);
    if (*v == 0 || *end != 0 || l < 1 || l > 22)
        return cli_error(EXIT_USAGE, "--level %s: expected a zstd level 1..22", v);
    *level = (int)l;
    return 0;
}

static int option(int *i, int argc, char **argv, unsigned allowed, cli_opts *o)
{
    const char *a = argv[*i];
    static const struct { const char *name; unsigned bit; } table[] = {
        {"-o", OPT_OUT}, {"--level", OPT_LEVEL}, {"--dict", OPT_DICT}, {"--target", OPT_TARGET},
        {"--kernel", OPT_KERNEL}, {"--targets", OPT_TARGETS}, {"--json", OPT_JSON},
        {"--cache", OPT_CACHE}};
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        if (strcmp(a, table[t].name) != 0) continue;
        if (!(allowed & table[t].bit))
            return cli_error(EXIT_USAGE, "%s: option %s does not apply here", argv[0], a);
        if (table[t].bit == OPT_JSON) return o->json = 1, 0;
        if (need_value(*i, argc, argv)) return EXIT_USAGE;
        const char *v = argv[++*i];
        switch (table[t].bit) {
        case OPT_OUT: o->out = v; return 0;
        case OPT_LEVEL: return parse_level(v, &o->pack.level) ? EXIT_USAGE : 0;
        case OPT_DICT: return parse_dict(v, &o->pack.dict) ? EXIT_USAGE : 0;
        case OPT_TARGET: o->target = v; return 0;
        case OPT_KERNEL: o->kernel = v; return 0;
        case OPT_CACHE: o->cache = v; return 0;
        default: o->targets = v; return 0;
        }
    }
    return cli_error(EXIT_USAGE, "%s: unknown option %s (try aot-bundle --help)", argv[0], a);
}

int cli_parse(int argc, char **argv, unsigned allowed, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pack.level = AOT_PACK_DEFAULT_LEVEL;
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    o->file_target = calloc((size_t)argc + 1, sizeof *o->file_target);
    if (o->files == NULL || o->file_target == NULL) return cli_error(EXIT_USAGE, "out of memory");
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != 0) {
            if (option(&i, argc, argv, allowed, o)) return EXIT_USAGE;
            continue;
        }
        o->file_target[o->nfiles] = o->target;
        o->files[o->nfiles++] = argv[i];
    }
    if ((allowed & OPT_OUT) && o->out == NULL)
        return cli_error(EXIT_USAGE, "%s: -o OUT is required", argv[0]);
    return 0;
}

void cli_opts_free(cli_opts *o)
{
    free(o->files);
    free(o->file_target);
}
