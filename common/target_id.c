/* target_id.c : parsing, printing and matching target IDs (see target_id.h). */
#include "target_id.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strncmp, strcspn, strlen, memcpy, memset */

#define AMD_TRIPLE "amdgcn-amd-amdhsa--"
#define NV_TRIPLE "nvptx64-nvidia-cuda--"

static int parse_feature(aot_target *t, const char *f, size_t n)
{
    if (n < 2 || (f[n - 1] != '+' && f[n - 1] != '-')) return -1;
    aot_feature v = f[n - 1] == '+' ? AOT_FEATURE_ON : AOT_FEATURE_OFF;
    aot_feature *slot = NULL;
    if (n - 1 == 7 && strncmp(f, "sramecc", 7) == 0) slot = &t->sramecc;
    if (n - 1 == 5 && strncmp(f, "xnack", 5) == 0) slot = &t->xnack;
    if (slot == NULL || *slot != AOT_FEATURE_ANY) return -1;
    *slot = v;
    return 0;
}

static int valid_processor(aot_vendor v, const char *p, size_t n)
{
    if (n == 0 || n >= sizeof(((aot_target *)0)->processor)) return 0;
    const char *prefix = v == AOT_VENDOR_AMD ? "gfx" : "sm_";
    if (n < 4 || strncmp(p, prefix, 3) != 0) return 0;
    for (size_t i = 3; i < n; i++) {
        char c = p[i];
        int ok = (c >= '0' && c <= '9') || (v == AOT_VENDOR_AMD && c >= 'a' && c <= 'f') ||
                 (v == AOT_VENDOR_NVIDIA && i == n - 1 && (c == 'a' || c == 'f'));
        if (!ok) return 0;
    }
    return 1;
}

int aot_target_parse(aot_target *t, const char *text)
{
    memset(t, 0, sizeof *t);
    if (text == NULL) return -1;
    if (strncmp(text, AMD_TRIPLE, strlen(AMD_TRIPLE)) == 0) text += strlen(AMD_TRIPLE);
    else if (strncmp(text, NV_TRIPLE, strlen(NV_TRIPLE)) == 0) text += strlen(NV_TRIPLE);
    t->vendor = strncmp(text, "sm_", 3) == 0 ? AOT_VENDOR_NVIDIA : AOT_VENDOR_AMD;
    size_t n = strcspn(text, ":");
    if (!valid_processor(t->vendor, text, n)) return -1;
    memcpy(t->processor, text, n);
    t->processor[n] = 0;
    for (const char *f = text + n; *f == ':';) {
        f++;
        size_t fn = strcspn(f, ":");
        if (t->vendor != AOT_VENDOR_AMD || parse_feature(t, f, fn) != 0) return -1;
        f += fn;
    }
    return 0;
}

static const char *feature_text(aot_feature f) { return f == AOT_FEATURE_ON ? "+" : "-"; }

void aot_target_format(const aot_target *t, char *buf, size_t cap)
{
    if (t->vendor == AOT_VENDOR_NVIDIA) {
        snprintf(buf, cap, NV_TRIPLE "%s", t->processor);
        return;
    }
    char sram[16] = "", xn[16] = "";
    if (t->sramecc) snprintf(sram, sizeof sram, ":sramecc%s", feature_text(t->sramecc));
    if (t->xnack) snprintf(xn, sizeof xn, ":xnack%s", feature_text(t->xnack));
    snprintf(buf, cap, AMD_TRIPLE "%s%s%s", t->processor, sram, xn);
}

static int feature_ok(aot_feature code, aot_feature device)
{
    return code == AOT_FEATURE_ANY || code == device;
}

/* sm_90a -> major 9, minor 0, arch-specific 1. @return 0 if malformed. */
static int sm_version(const char *p, int *major, int *minor, int *specific)
{
    int num = 0;
    const char *c = p + 3;
    for (; *c >= '0' && *c <= '9'; c++) num = num * 10 + (*c - '0');
    *specific = *c == 'a' || *c == 'f';
    *major = num / 10;
    *minor = num % 10;
    return num > 0;
}

int aot_target_compatible(const aot_target *code, const aot_target *device)
{
    if (code->vendor != device->vendor) return 0;
    if (code->vendor == AOT_VENDOR_AMD)
        return strcmp(code->processor, device->processor) == 0 &&
               feature_ok(code->sramecc, device->sramecc) && feature_ok(code->xnack, device->xnack);
    int cmaj, cmin, cspec, dmaj, dmin, dspec;
    if (!sm_version(code->processor, &cmaj, &cmin, &cspec) ||
        !sm_version(device->processor, &dmaj, &dmin, &dspec))
        return 0;
    if (cspec) return cmaj == dmaj && cmin == dmin;
    return cmaj == dmaj && dmin >= cmin;
}

int aot_target_specificity(const aot_target *code)
{
    int s = (code->sramecc != AOT_FEATURE_ANY) + (code->xnack != AOT_FEATURE_ANY);
    if (code->vendor == AOT_VENDOR_NVIDIA) {
        size_t n = strlen(code->processor);
        s = n > 0 && (code->processor[n - 1] == 'a' || code->processor[n - 1] == 'f');
    }
    return s;
}

int aot_target_is_known_processor(const char *processor)
{
    static const char *const known[] = {"gfx90a", "gfx942", "gfx950", "sm_90a", "sm_90", NULL};
    for (int i = 0; known[i]; i++)
        if (strcmp(known[i], processor) == 0) return 1;
    return 0;
}
