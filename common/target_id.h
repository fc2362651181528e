/* target_id.h : GPU target IDs in LLVM's form, and which code object a device may load.
 *
 * AMD:    amdgcn-amd-amdhsa--gfx942[:sramecc(+|-)][:xnack(+|-)]  (short form: gfx942:xnack-)
 * NVIDIA: nvptx64-nvidia-cuda--sm_90a                           (short form: sm_90a)
 * A feature left out means "any". The canonical form lists features in alphabetical order. */
#ifndef AOT_TARGET_ID_H
#define AOT_TARGET_ID_H

#include <stddef.h> /* size_t */

typedef enum { AOT_VENDOR_AMD = 1, AOT_VENDOR_NVIDIA = 2 } aot_vendor;

/* A feature's state: left out (any), off, on. */
typedef enum { AOT_FEATURE_ANY = 0, AOT_FEATURE_OFF = 1, AOT_FEATURE_ON = 2 } aot_feature;

typedef struct {
    aot_vendor vendor;
    char processor[24]; /* "gfx942", "sm_90a" */
    aot_feature sramecc; /* AMD only */
    aot_feature xnack;   /* AMD only */
} aot_target;

/* Parses a full or short target ID. @return 0 on success, -1 if `text` is not one. */
int aot_target_parse(aot_target *t, const char *text);

/* Writes the canonical full form into buf (at least 64 bytes is always enough). */
void aot_target_format(const aot_target *t, char *buf, size_t cap);

/* @return 1 if a code object built for `code` may run on a device whose ID is `device`,
 *         following LLVM's target-ID rules for AMD (same processor; every feature the code
 *         object names equals the device's) and SASS rules for NVIDIA (sm_XYa: exactly X.Y;
 *         sm_XY: same major X, device minor >= Y). */
int aot_target_compatible(const aot_target *code, const aot_target *device);

/* How specifically `code` matches: more features named scores higher, so that a device picks
 * an exact build over an "any" build. Only meaningful when compatible. */
int aot_target_specificity(const aot_target *code);

/* Processors whose code objects this project builds and validates. */
int aot_target_is_known_processor(const char *processor);

#endif
