/* regression_driver.c : a main() that replays corpus files (or every file in corpus
 * directories) through LLVMFuzzerTestOneInput, so the fuzz target runs as a plain test. Build
 * fuzz_bundle.c with clang -fsanitize=fuzzer instead to fuzz for real. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *dir = opendir(argv[i]);
            for (struct dirent *e; dir && (e = readdir(dir));) {
                if (e->d_name[0] == '.') continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                errors += run_file(p), files++;
            }
            if (dir) closedir(dir);
        } else {
            errors += run_file(argv[i]), files++;
        }
    }
    printf("fuzz corpus: %d inputs replayed\n%d passed, %d failed\n", files, files - errors, errors);
    return errors != 0;
}
