/*
 * _native.c : the CPython extension of the aiter_aot package. Limited API (abi3, CPython 3.9
 * and later), libaiter_aot.a linked in statically, nothing imported but the standard library.
 *
 * A tensor argument is one of
 *  - an object with __dlpack__ / __dlpack_device__ (PyTorch, CuPy, JAX, NumPy): the general
 *    path; both capsule kinds are read, the versioned one first;
 *  - a tuple (data_ptr, shape, strides, dtype_code, device), the torch layer's fast path
 *    (a DLPack export costs PyTorch far more than the launch; see docs/python.md); device is
 *    the CUDA/ROCm ordinal, -1 for the CPU;
 *  - None, where the op's argument is optional.
 * Every tensor is checked (dtype, shape, strides, alignment, device) before the op is called;
 * a failed check raises TypeError (wrong dtype or object) or ValueError (the rest) naming the
 * argument, what it got and what the op needs. The op's own status becomes aiter_aot.Error
 * (ArgumentError, also a ValueError, for an invalid argument) with .status and the library's
 * message. The extension never synchronises and never allocates device memory.
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aiter_aot.h"
#include "dlpack.h"

/* ---- dtypes: 0..2 are aiter_aot_dtype's numbers ---- */

enum { DT_F32, DT_F16, DT_BF16, DT_I32, DT_I64, DT_U8, DT_I8, DT_I16, DT_F64, DT_BOOL, DT_COUNT, DT_OTHER = 99 };
static const char *const dt_name[DT_COUNT] = {"float32", "float16", "bfloat16", "int32", "int64",
                                              "uint8", "int8", "int16", "float64", "bool"};
static const int dt_bytes[DT_COUNT] = {4, 2, 2, 4, 8, 1, 1, 2, 8, 1};
#define M(d) (1u << (d))
#define FLOATS (M(DT_F32) | M(DT_F16) | M(DT_BF16))
#define ANY 0xffffffffu

#define MAXDIM 8
enum { DENSE_NO, DENSE_ALL, DENSE_INNER }; /* DENSE_INNER: all but the first dimension */

typedef struct {
    const char *name;          /* the argument, for messages */
    int present;
    char *data;
    int ndim, dtype;
    char dtype_text[48];       /* for a DLPack dtype outside dt_name */
    int64_t shape[MAXDIM], strides[MAXDIM]; /* strides in elements */
    int dev_type, dev_id, readonly;
    int null_data;             /* the data pointer before any byte offset was NULL */
    void *managed;             /* DLPack: the managed tensor, deleted after the call */
    int versioned;
} pt;

typedef struct {
    const char *op;
    pt t[20];
    int n;
    long long stream;
} call;

static PyObject *Error, *ArgumentError;
static int cpu_ok; /* tests only (_allow_cpu): CPU tensors pass the device check */

/* ---- errors ---- */

static int type_error(const call *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "%s: ", c->op);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    PyErr_SetString(PyExc_TypeError, msg);
    return -1;
}

static int value_error(const call *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "%s: ", c->op);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    PyErr_SetString(PyExc_ValueError, msg);
    return -1;
}

/* Raises aiter_aot.Error (ArgumentError for an invalid argument) carrying the status. */
static PyObject *status_error(aiter_aot_status s, const char *op)
{
    char msg[700];
    const char *detail = aiter_aot_last_error();
    snprintf(msg, sizeof msg, "%s: %s (%s)", op, detail[0] ? detail : aiter_aot_status_string(s),
             aiter_aot_status_string(s));
    PyObject *type = s == AITER_AOT_STATUS_INVALID_ARGUMENT ? ArgumentError : Error;
    PyObject *e = PyObject_CallFunction(type, "s", msg);
    if (e == NULL) return NULL;
    PyObject *st = PyLong_FromLong((long)s);
    PyObject *name = PyUnicode_FromString(aiter_aot_status_string(s));
    PyObject *text = PyUnicode_FromString(detail);
    if (st && name && text && PyObject_SetAttrString(e, "status", st) == 0 &&
        PyObject_SetAttrString(e, "status_name", name) == 0 && PyObject_SetAttrString(e, "message", text) == 0)
        PyErr_SetObject(type, e);
    Py_XDECREF(st), Py_XDECREF(name), Py_XDECREF(text), Py_DECREF(e);
    return NULL;
}

static PyObject *done_status(call *c, aiter_aot_status s);

/* ---- scalar arguments ----
 * Each op takes its scalars as "O" and converts them here, so that a wrong type or a value out
 * of range is refused naming the op and the argument. An absent optional argument (NULL) leaves
 * *out as it is (the default). */

/* o's type name, for messages. */
static const char *type_name(PyObject *o, char *buf, size_t cap)
{
    PyObject *tn = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__name__");
    PyObject *b = tn ? PyUnicode_AsUTF8String(tn) : NULL;
    PyErr_Clear();
    snprintf(buf, cap, "%s", b ? PyBytes_AsString(b) : "?");
    Py_XDECREF(b), Py_XDECREF(tn);
    return buf;
}

static int need_type(const call *c, const char *name, PyObject *o, const char *want)
{
    char tn[64];
    return type_error(c, "%s is a %s; the op needs %s", name, type_name(o, tn, sizeof tn), want);
}

/* ValueError "NAME = V does not fit FITS", V being str(v) (its head, where long). */
static int range_error(const call *c, const char *name, PyObject *v, const char *fits)
{
    PyObject *s = PyObject_Str(v);
    PyObject *b = s ? PyUnicode_AsUTF8String(s) : NULL;
    PyErr_Clear();
    char text[48];
    snprintf(text, sizeof text, "%s", b ? PyBytes_AsString(b) : "?");
    if (b && strlen(PyBytes_AsString(b)) >= sizeof text) strcpy(text + sizeof text - 4, "...");
    Py_XDECREF(b), Py_XDECREF(s);
    return value_error(c, "%s = %s does not fit %s", name, text, fits);
}

/* An int (anything with __index__: a bool, a NumPy integer) in [lo, hi]. */
static int arg_int(const call *c, const char *name, PyObject *o, long long lo, long long hi, const char *fits,
                   long long *out)
{
    if (o == NULL) return 0;
    if (!PyIndex_Check(o)) return need_type(c, name, o, "an int");
    PyObject *v = PyNumber_Index(o);
    if (v == NULL) return -1;
    int over;
    long long x = PyLong_AsLongLongAndOverflow(v, &over); /* v is an int: it cannot fail otherwise */
    int r = over || x < lo || x > hi ? range_error(c, name, v, fits) : 0;
    Py_DECREF(v);
    if (r == 0) *out = x;
    return r;
}

static int arg_i32(const call *c, const char *name, PyObject *o, int *out)
{
    long long x;
    if (o == NULL) return 0;
    if (arg_int(c, name, o, INT32_MIN, INT32_MAX, "int32", &x)) return -1;
    *out = (int)x;
    return 0;
}

/* The stream: a CUstream / hipStream_t as an int (int64, as it always was). */
static int arg_stream(call *c, PyObject *o)
{
    return arg_int(c, "stream", o, INT64_MIN, INT64_MAX, "int64 (a stream handle)", &c->stream);
}

/* A data pointer: an int in [0, 2^64). */
static int arg_ptr(const call *c, const char *name, PyObject *o, unsigned long long *out)
{
    if (!PyIndex_Check(o)) return need_type(c, name, o, "an int");
    PyObject *v = PyNumber_Index(o);
    if (v == NULL) return -1;
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    int r = x == (unsigned long long)-1 && PyErr_Occurred()
                ? (PyErr_Clear(), range_error(c, name, v, "a data pointer (0 .. 2^64 - 1)")) : 0;
    Py_DECREF(v);
    if (r == 0) *out = x;
    return r;
}

/* A float (or an int); a finite value beyond float32's range is refused, not made inf. */
static int arg_f32(const call *c, const char *name, PyObject *o, float *out)
{
    if (o == NULL) return 0;
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) return PyErr_Clear(), need_type(c, name, o, "a float");
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) return PyErr_Clear(), range_error(c, name, o, "float32");
        return -1;
    }
    if (isfinite(d) && isinf((float)d)) return range_error(c, name, o, "float32");
    *out = (float)d;
    return 0;
}

/* A truth value, as "p" reads it (bool(o)). */
static int arg_bool(const call *c, const char *name, PyObject *o, int *out)
{
    if (o == NULL) return 0;
    int r = PyObject_IsTrue(o);
    if (r < 0) return PyErr_Clear(), need_type(c, name, o, "a bool (bool() of it failed)");
    *out = r;
    return 0;
}

/* ---- describing what was passed ---- */

static const char *dtype_str(const pt *t) { return t->dtype < DT_COUNT ? dt_name[t->dtype] : t->dtype_text; }

static void dims_str(char *buf, size_t cap, const int64_t *v, int n)
{
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, v[i] < 0 ? "%s*" : "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < cap) snprintf(buf + k, cap - k, n == 1 ? ",)" : ")");
}

static void device_str(char *buf, size_t cap, const pt *t)
{
    switch (t->dev_type) {
    case kDLCPU: snprintf(buf, cap, "cpu"); break;
    case kDLCUDA: snprintf(buf, cap, "cuda:%d", t->dev_id); break;
    case kDLROCM: snprintf(buf, cap, "rocm:%d", t->dev_id); break;
    default: snprintf(buf, cap, "DLPack device type %d:%d", t->dev_type, t->dev_id);
    }
}

/* ---- reading a tensor ---- */

static void compact_strides(pt *t)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) t->strides[i] = s, s *= t->shape[i];
}

/* "NAME's WHAT": a part of a tuple-form tensor, for messages; buf holds 96 chars. */
static const char *part(char *buf, const pt *t, const char *what)
{
    snprintf(buf, 96, "%s's %s", t->name, what);
    return buf;
}

static int read_ints(const call *c, const pt *t, PyObject *seq, int64_t *out, int n, const char *what)
{
    if (!PyTuple_Check(seq) || PyTuple_Size(seq) != n)
        return type_error(c, "%s: the tuple form needs %s as a tuple of %d ints", t->name, what, n);
    for (int i = 0; i < n; i++) {
        char name[96], item[24];
        long long v;
        snprintf(item, sizeof item, "%s[%d]", what, i);
        if (arg_int(c, part(name, t, item), PyTuple_GetItem(seq, i), INT64_MIN, INT64_MAX, "int64", &v)) return -1;
        out[i] = v;
    }
    return 0;
}

/* The torch layer's tuple (data_ptr, shape, strides, dtype_code, device). */
static int from_tuple(const call *c, pt *t, PyObject *o)
{
    if (PyTuple_Size(o) != 5)
        return type_error(c, "%s is a tuple of %zd; the tuple form is (data_ptr, shape, strides, dtype_code, device)",
                          t->name, PyTuple_Size(o));
    PyObject *shape = PyTuple_GetItem(o, 1), *strides = PyTuple_GetItem(o, 2);
    unsigned long long ptr;
    int dtype, device;
    char name[96];
    if (arg_ptr(c, part(name, t, "data_ptr"), PyTuple_GetItem(o, 0), &ptr) ||
        arg_i32(c, part(name, t, "dtype_code"), PyTuple_GetItem(o, 3), &dtype) ||
        arg_i32(c, part(name, t, "device"), PyTuple_GetItem(o, 4), &device))
        return -1;
    if (!PyTuple_Check(shape) || PyTuple_Size(shape) > MAXDIM)
        return type_error(c, "%s: the tuple form needs a shape tuple of at most %d dims", t->name, MAXDIM);
    t->ndim = (int)PyTuple_Size(shape);
    if (read_ints(c, t, shape, t->shape, t->ndim, "shape") || read_ints(c, t, strides, t->strides, t->ndim, "strides"))
        return -1;
    t->data = (char *)(uintptr_t)ptr;
    t->null_data = ptr == 0;
    t->dtype = dtype >= 0 && dtype < DT_COUNT ? dtype : DT_OTHER;
    if (t->dtype == DT_OTHER) snprintf(t->dtype_text, sizeof t->dtype_text, "dtype code %d", dtype);
    t->dev_type = device < 0 ? kDLCPU : kDLCUDA; /* torch names ROCm devices cuda as well */
    t->dev_id = device < 0 ? 0 : device;
    return 0;
}

static int dl_dtype(pt *t, DLDataType d)
{
    static const struct { uint8_t code, bits; int dt; } map[] = {
        {kDLFloat, 32, DT_F32}, {kDLFloat, 16, DT_F16}, {kDLBfloat, 16, DT_BF16}, {kDLInt, 32, DT_I32},
        {kDLInt, 64, DT_I64}, {kDLUInt, 8, DT_U8}, {kDLInt, 8, DT_I8}, {kDLInt, 16, DT_I16},
        {kDLFloat, 64, DT_F64}, {kDLBool, 8, DT_BOOL}};
    t->dtype = DT_OTHER;
    snprintf(t->dtype_text, sizeof t->dtype_text, "DLPack dtype (code %u, %u bits, %u lanes)", d.code, d.bits, d.lanes);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (d.lanes == 1 && d.code == map[i].code && d.bits == map[i].bits) t->dtype = map[i].dt;
    return 0;
}

static int from_dltensor(const call *c, pt *t, const DLTensor *d)
{
    if (d->ndim < 0 || d->ndim > MAXDIM)
        return value_error(c, "%s has %d dimensions; at most %d are read", t->name, d->ndim, MAXDIM);
    if (d->ndim > 0 && d->shape == NULL) return value_error(c, "%s: the DLPack tensor has no shape", t->name);
    t->ndim = d->ndim;
    t->null_data = d->data == NULL;
    t->data = (char *)d->data + d->byte_offset;
    t->dev_type = d->device.device_type;
    t->dev_id = d->device.device_id;
    dl_dtype(t, d->dtype);
    for (int i = 0; i < t->ndim; i++) t->shape[i] = d->shape[i];
    if (d->strides) for (int i = 0; i < t->ndim; i++) t->strides[i] = d->strides[i];
    else compact_strides(t);
    return 0;
}

/* Calls o.__dlpack__(max_version=(1, 0)[, stream=...]), and without max_version for a
 * producer from before DLPack 1.0 (which raises TypeError on the keyword). The stream is the
 * op's, so that a producer that wants to order its work before ours can (spec: the consumer's
 * stream); 0 passes none (CUDA forbids 0 there: it is ambiguous). */
static PyObject *export_capsule(PyObject *o, int gpu, long long stream)
{
    PyObject *fn = PyObject_GetAttrString(o, "__dlpack__");
    if (fn == NULL) return NULL;
    PyObject *args = PyTuple_New(0), *kw = PyDict_New(), *cap = NULL;
    if (args && kw && gpu && stream != 0) {
        PyObject *s = PyLong_FromLongLong(stream);
        if (s) PyDict_SetItemString(kw, "stream", s), Py_DECREF(s);
    }
    PyObject *ver = Py_BuildValue("(ii)", 1, 0);
    if (args && kw && ver && PyDict_SetItemString(kw, "max_version", ver) == 0) {
        cap = PyObject_Call(fn, args, kw);
        if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyDict_DelItemString(kw, "max_version");
            cap = PyObject_Call(fn, args, kw);
        }
    }
    Py_XDECREF(ver), Py_XDECREF(args), Py_XDECREF(kw), Py_DECREF(fn);
    return cap;
}

static int device_of(const call *c, pt *t, PyObject *o)
{
    PyObject *dev = PyObject_CallMethod(o, "__dlpack_device__", NULL);
    if (dev == NULL) return -1;
    int ok = PyArg_ParseTuple(dev, "ii", &t->dev_type, &t->dev_id);
    Py_DECREF(dev);
    if (!ok) return type_error(c, "%s: __dlpack_device__() did not return (device_type, device_id)", t->name);
    return 0;
}

/* Takes the managed tensor out of a capsule, renames the capsule "used_..." so that nobody
 * consumes or deletes it again, and keeps the tensor until release(). */
static int from_capsule(const call *c, pt *t, PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major != 1) {
            return value_error(c, "%s: DLPack version %u.%u; this extension reads 1.x", t->name,
                               m->version.major, m->version.minor);
        }
        if (PyCapsule_SetName(cap, "used_dltensor_versioned")) return -1;
        t->managed = m, t->versioned = 1;
        t->readonly = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
        return from_dltensor(c, t, &m->dl_tensor);
    }
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (PyCapsule_SetName(cap, "used_dltensor")) return -1;
        t->managed = m;
        return from_dltensor(c, t, &m->dl_tensor);
    }
    const char *name = PyCapsule_CheckExact(cap) ? PyCapsule_GetName(cap) : NULL;
    PyErr_Clear();
    if (name && strncmp(name, "used_", 5) == 0)
        return value_error(c, "%s: the DLPack capsule was already consumed (\"%s\")", t->name, name);
    return type_error(c, "%s: __dlpack__() returned %s, not a \"dltensor\" or \"dltensor_versioned\" capsule",
                      t->name, name ? name : "something else");
}

static int from_dlpack(const call *c, pt *t, PyObject *o)
{
    if (PyCapsule_CheckExact(o)) return from_capsule(c, t, o);
    if (!PyObject_HasAttrString(o, "__dlpack__") || !PyObject_HasAttrString(o, "__dlpack_device__")) {
        return need_type(c, t->name, o, "a tensor (an object with __dlpack__, or a torch.Tensor)");
    }
    if (device_of(c, t, o)) return -1;
    PyObject *cap = export_capsule(o, t->dev_type != kDLCPU, c->stream);
    if (cap == NULL) return -1;
    int r = from_capsule(c, t, cap);
    Py_DECREF(cap);
    return r;
}

static void release(pt *t)
{
    if (t->managed == NULL) return;
    if (t->versioned) {
        DLManagedTensorVersioned *m = t->managed;
        if (m->deleter) m->deleter(m);
    } else {
        DLManagedTensor *m = t->managed;
        if (m->deleter) m->deleter(m);
    }
    t->managed = NULL;
}

/* What every tensor must be before any op looks at it: no negative dimension, an element count
 * whose bytes fit int64 (numel() and the byte sizes below are then exact), and a data pointer
 * unless it holds no element (an empty tensor's may be NULL). */
static int check_extent(const call *c, const pt *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return value_error(c, "%s has dimension %d of size %lld; sizes must be >= 0", t->name, i,
                                                (long long)t->shape[i]);
        if (__builtin_mul_overflow(n, t->shape[i], &n) || n > INT64_MAX / 16)
            return value_error(c, "%s has more elements than a 64-bit byte count holds", t->name);
    }
    if (n > 0 && t->null_data) return value_error(c, "%s has a NULL data pointer and %lld elements", t->name, (long long)n);
    return 0;
}

/* Reads argument `o` into the call's next slot. @return the slot, or NULL with an exception. */
static pt *take(call *c, const char *name, PyObject *o, int optional)
{
    pt *t = &c->t[c->n++];
    memset(t, 0, sizeof *t);
    t->name = name;
    if (o == Py_None) {
        if (optional) return t;
        type_error(c, "%s is None; the op needs a tensor", name);
        return NULL;
    }
    t->present = 1;
    if ((PyTuple_Check(o) ? from_tuple(c, t, o) : from_dlpack(c, t, o)) != 0 || check_extent(c, t) != 0) return NULL;
    return t;
}

/* ---- checks ---- */

static int need_dtype(const call *c, const pt *t, unsigned mask)
{
    if (t->dtype < DT_COUNT && (mask & M(t->dtype))) return 0;
    char want[128] = "";
    int n = 0, k = 0;
    for (int d = 0; d < DT_COUNT; d++) n += (mask & M(d)) != 0;
    for (int d = 0; d < DT_COUNT; d++) {
        if (!(mask & M(d))) continue;
        size_t l = strlen(want);
        snprintf(want + l, sizeof want - l, "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ", dt_name[d]);
        k++;
    }
    return type_error(c, "%s has dtype %s; the op needs %s", t->name, dtype_str(t), want);
}

/* Shape: `want` holds ndim sizes, -1 for any; `what` names them ("[tokens, k]"). */
static int need_shape(const call *c, const pt *t, int ndim, const int64_t *want, const char *what)
{
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = want[i] < 0 || want[i] == t->shape[i];
    if (ok) return 0;
    char got[160], need[160];
    dims_str(got, sizeof got, t->shape, t->ndim);
    dims_str(need, sizeof need, want, ndim);
    return value_error(c, "%s has shape %s; the op needs %s = %s", t->name, got, what, need);
}

static int need_dense(const call *c, const pt *t, int dense)
{
    if (dense == DENSE_NO) return 0;
    int64_t s = 1;
    int ok = 1;
    for (int i = t->ndim - 1; i >= (dense == DENSE_INNER ? 1 : 0); i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) ok = 0;
        s *= t->shape[i];
    }
    if (ok) return 0;
    pt want = *t;
    compact_strides(&want);
    if (dense == DENSE_INNER) want.strides[0] = -1; /* any */
    char got[160], need[160];
    dims_str(got, sizeof got, t->strides, t->ndim);
    dims_str(need, sizeof need, want.strides, t->ndim);
    return value_error(c, "%s has strides %s; the op needs %s (elements%s)", t->name, got, need,
                       dense == DENSE_INNER ? "; the first dimension may be strided" : ", a contiguous tensor");
}

static int need_align(const call *c, const pt *t, unsigned bytes)
{
    if (((uintptr_t)t->data & (bytes - 1)) == 0) return 0;
    return value_error(c, "%s: data pointer %p is not %u-byte aligned; the op needs %u-byte alignment",
                       t->name, (void *)t->data, bytes, bytes);
}

/* dtype, shape, strides and alignment of one argument; absent optional arguments pass. */
static int spec(const call *c, const pt *t, unsigned dtypes, int ndim, const int64_t *dims, const char *what,
                int dense, unsigned align)
{
    if (t == NULL || !t->present) return 0;
    if (need_dtype(c, t, dtypes) || need_shape(c, t, ndim, dims, what) || need_dense(c, t, dense)) return -1;
    return need_align(c, t, align ? align : (unsigned)dt_bytes[t->dtype]);
}

/* Every tensor on one GPU; the outputs, arguments first_output .. end_output - 1, writable. */
static int need_devices(const call *c, int first_output, int end_output)
{
    const pt *ref = NULL;
    for (int i = 0; i < c->n; i++) {
        const pt *t = &c->t[i];
        if (!t->present) continue;
        char dev[64], other[64];
        device_str(dev, sizeof dev, t);
        if (t->dev_type == kDLCPU && !cpu_ok)
            return value_error(c, "%s is a CPU tensor (%s); the op needs GPU tensors (CUDA or ROCm): move it "
                               "with .cuda() / .to(device)", t->name, dev);
        if (t->dev_type != kDLCPU && t->dev_type != kDLCUDA && t->dev_type != kDLROCM)
            return value_error(c, "%s is on %s; the op needs a CUDA or ROCm device", t->name, dev);
        if (ref && (ref->dev_type != t->dev_type || ref->dev_id != t->dev_id)) {
            device_str(other, sizeof other, ref);
            return value_error(c, "%s is on %s, %s on %s; the op needs every tensor on one device",
                               t->name, dev, ref->name, other);
        }
        if (i >= first_output && i < end_output && t->readonly)
            return value_error(c, "%s is read-only (DLPack flag); the op writes it", t->name);
        ref = t;
    }
    return 0;
}

static int64_t numel(const pt *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Bytes of t's elements (0 for a dtype outside the table); exact, as check_extent bounded them. */
static size_t bytes_of(const pt *t) { return t->dtype < DT_COUNT ? (size_t)(numel(t) * dt_bytes[t->dtype]) : 0; }

static int as_i32(const call *c, const char *what, int64_t v, int32_t *out)
{
    if (v < 0 || v > INT32_MAX) return value_error(c, "%s = %lld does not fit the op's int32", what, (long long)v);
    *out = (int32_t)v;
    return 0;
}

/* Deletes the DLPack tensors. A deleter may run Python code (a producer written with
 * ctypes), so a pending exception is set aside meanwhile. */
static void finish(call *c)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int i = 0; i < c->n; i++) release(&c->t[i]);
    PyErr_Restore(type, value, tb);
}

static PyObject *fail_call(call *c)
{
    finish(c);
    return NULL;
}

static PyObject *done_status(call *c, aiter_aot_status s)
{
    finish(c);
    if (s != AITER_AOT_STATUS_OK) return status_error(s, c->op);
    Py_RETURN_NONE;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define TAKE(var, name, obj, opt) pt *var = take(&c, name, obj, opt); if (var == NULL) return fail_call(&c)
#define CHECK(x) if ((x) != 0) return fail_call(&c)
/* The GIL is let go while the op runs: a device's first op loads its code objects. */
#define LAUNCH(status, fn, args)                                                       \
    do {                                                                               \
        Py_BEGIN_ALLOW_THREADS status = fn(&(args), (void *)(intptr_t)c.stream);       \
        Py_END_ALLOW_THREADS                                                           \
    } while (0)

/* ---- MoE ---- */

static PyObject *py_topk_softmax(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[6] = {NULL};
    int renorm;
    call c = {.op = "topk_softmax"};
    if (!PyArg_ParseTuple(a, "OOOOO|O:topk_softmax", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]) ||
        arg_bool(&c, "renormalize", o[4], &renorm) || arg_stream(&c, o[5]))
        return NULL;
    TAKE(g, "gating_output", o[0], 0);
    TAKE(w, "topk_weights", o[1], 0);
    TAKE(ids, "topk_ids", o[2], 0);
    TAKE(tei, "token_expert_indices", o[3], 1);
    CHECK(spec(&c, g, FLOATS, 2, D(-1, -1), "[tokens, experts]", DENSE_INNER, 0));
    int64_t T = g->shape[0], E = g->shape[1];
    CHECK(spec(&c, w, M(DT_F32), 2, D(T, -1), "[tokens, k]", DENSE_ALL, 0));
    int64_t k = w->shape[1];
    CHECK(spec(&c, ids, M(DT_I32), 2, D(T, k), "[tokens, k]", DENSE_ALL, 0));
    CHECK(spec(&c, tei, M(DT_I32), 2, D(T, k), "[tokens, k]", DENSE_ALL, 0));
    CHECK(need_devices(&c, 1, c.n));
    aiter_aot_topk_softmax_args args = {
        .size = sizeof args, .gating = g->data, .gating_dtype = (aiter_aot_dtype)g->dtype,
        .gating_row_stride = T > 1 ? g->strides[0] : E, .renormalize = renorm, .topk_weights = (float *)w->data,
        .topk_ids = (int32_t *)ids->data, .token_expert_indices = (int32_t *)tei->data};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "experts", E, &args.experts) ||
          as_i32(&c, "k", k, &args.k));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_topk_softmax, args);
    return done_status(&c, s);
}

static PyObject *py_moe_sorting(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[12] = {NULL};
    int experts, block;
    call c = {.op = "moe_sorting"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOO|O:moe_sorting", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11]) ||
        arg_i32(&c, "num_experts", o[9], &experts) || arg_i32(&c, "block_size", o[10], &block) ||
        arg_stream(&c, o[11]))
        return NULL;
    /* named before the outputs are sized from it */
    CHECK(experts < 1 || experts > 1024 ? value_error(&c, "num_experts = %d; supported 1..1024", experts) : 0);
    TAKE(ids, "topk_ids", o[0], 0);
    TAKE(w, "topk_weights", o[1], 0);
    TAKE(mask, "expert_mask", o[2], 1);
    TAKE(sid, "sorted_token_ids", o[3], 0);
    TAKE(sw, "sorted_weights", o[4], 0);
    TAKE(se, "sorted_expert_ids", o[5], 0);
    TAKE(nv, "num_valid_ids", o[6], 0);
    TAKE(buf, "moe_buf", o[7], 1);
    TAKE(ws, "workspace", o[8], 0);
    CHECK(spec(&c, ids, M(DT_I32), 2, D(-1, -1), "[tokens, k]", DENSE_ALL, 0));
    int64_t T = ids->shape[0], k = ids->shape[1];
    CHECK(spec(&c, w, M(DT_F32), 2, D(T, k), "[tokens, k]", DENSE_ALL, 0));
    CHECK(spec(&c, mask, M(DT_I32), 1, D(experts), "[num_experts]", DENSE_ALL, 0));
    int bs = block > 0 ? block : 32;
    int64_t P = T > 0 && T <= INT32_MAX && k <= INT32_MAX
                    ? (int64_t)aiter_aot_moe_sorting_max_padded((int32_t)T, (int32_t)k, experts, block) : 0;
    CHECK(spec(&c, sid, M(DT_I32), 1, D(P), "[max_num_tokens_padded]", DENSE_ALL, 0));
    CHECK(spec(&c, sw, M(DT_F32), 1, D(P), "[max_num_tokens_padded]", DENSE_ALL, 0));
    CHECK(spec(&c, se, M(DT_I32), 1, D(bs > 0 ? (P + bs - 1) / bs : 0), "[max_num_m_blocks]", DENSE_ALL, 0));
    CHECK(spec(&c, nv, M(DT_I32), 1, D(2), "[2]", DENSE_ALL, 0));
    if (buf->present) CHECK(need_dense(&c, buf, DENSE_ALL) || need_align(&c, buf, 16));
    if (ws->present) CHECK(need_dense(&c, ws, DENSE_ALL) || need_align(&c, ws, 16));
    CHECK(need_devices(&c, 3, c.n));
    aiter_aot_moe_sorting_args args = {
        .size = sizeof args, .topk_ids = (int32_t *)ids->data, .topk_weights = (float *)w->data,
        .experts = experts, .block_size = block, .expert_mask = (int32_t *)mask->data,
        .sorted_token_ids = (int32_t *)sid->data, .sorted_weights = (float *)sw->data,
        .sorted_expert_ids = (int32_t *)se->data, .num_valid_ids = (int32_t *)nv->data, .moe_buf = buf->data,
        .moe_buf_bytes = buf->present ? bytes_of(buf) : 0,
        .workspace = ws->data, .workspace_size = bytes_of(ws)};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "k", k, &args.k));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_moe_sorting, args);
    return done_status(&c, s);
}

static PyObject *py_moe_sorting_sizes(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[4] = {NULL};
    int tokens, k, experts, block = 0;
    call c = {.op = "moe_sorting_sizes"};
    if (!PyArg_ParseTuple(a, "OOO|O:moe_sorting_sizes", &o[0], &o[1], &o[2], &o[3]) ||
        arg_i32(&c, "tokens", o[0], &tokens) || arg_i32(&c, "k", o[1], &k) ||
        arg_i32(&c, "experts", o[2], &experts) || arg_i32(&c, "block_size", o[3], &block))
        return NULL;
    size_t p = aiter_aot_moe_sorting_max_padded(tokens, k, experts, block);
    int bs = block ? block : 32;
    return Py_BuildValue("(nnn)", (Py_ssize_t)p, (Py_ssize_t)((p + (size_t)bs - 1) / (size_t)bs),
                         (Py_ssize_t)aiter_aot_moe_sorting_workspace_size(tokens, k, experts));
}

/* Hash routing's pair: input_ids [tokens] and tid2eid [vocab, k], both int32 or both int64. */
static int route_hash(const call *c, const pt *in, const pt *tab, int64_t T, int64_t k)
{
    if (in->present && !tab->present)
        return value_error(c, "tid2eid is None; hash routing (input_ids) needs it ([vocab, k])");
    if (tab->present && !in->present)
        return value_error(c, "tid2eid is given without input_ids; pass both, or neither");
    if (!in->present) return 0;
    if (spec(c, in, M(DT_I32) | M(DT_I64), 1, D(T), "[tokens]", DENSE_ALL, 0)) return -1;
    return spec(c, tab, M(in->dtype), 2, D(-1, k), "[vocab, k], of input_ids' dtype", DENSE_ALL, 0);
}

static PyObject *py_topk_route(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[12] = {NULL};
    int scoring, n_group, topk_group, renorm;
    float scale;
    call c = {.op = "topk_route"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOO|O:topk_route", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10], &o[11]) ||
        arg_i32(&c, "scoring", o[6], &scoring) || arg_i32(&c, "n_group", o[7], &n_group) ||
        arg_i32(&c, "topk_group", o[8], &topk_group) || arg_bool(&c, "renormalize", o[9], &renorm) ||
        arg_f32(&c, "routed_scaling_factor", o[10], &scale) || arg_stream(&c, o[11]))
        return NULL;
    TAKE(g, "gating_output", o[0], 0);
    TAKE(bias, "bias", o[1], 1);
    TAKE(in, "input_ids", o[2], 1);
    TAKE(tab, "tid2eid", o[3], 1);
    TAKE(w, "topk_weights", o[4], 0);
    TAKE(ids, "topk_ids", o[5], 0);
    CHECK(spec(&c, g, FLOATS, 2, D(-1, -1), "[tokens, experts]", DENSE_INNER, 0));
    int64_t T = g->shape[0], E = g->shape[1];
    CHECK(spec(&c, w, M(DT_F32), 2, D(T, -1), "[tokens, k]", DENSE_ALL, 0));
    int64_t k = w->shape[1];
    CHECK(spec(&c, ids, M(DT_I32) | M(DT_I64), 2, D(T, k), "[tokens, k]", DENSE_ALL, 0));
    CHECK(spec(&c, bias, M(DT_F32), 1, D(E), "[experts]", DENSE_ALL, 0));
    CHECK(route_hash(&c, in, tab, T, k));
    CHECK(need_devices(&c, 4, c.n));
    aiter_aot_topk_route_args args = {
        .size = sizeof args, .gating = g->data, .gating_dtype = (aiter_aot_dtype)g->dtype,
        .gating_row_stride = T > 1 ? g->strides[0] : E, .scoring = (aiter_aot_route_scoring)scoring,
        .bias = (float *)bias->data, .n_group = n_group, .topk_group = topk_group, .renormalize = renorm,
        .routed_scaling_factor = scale, .input_ids = in->data, .tid2eid = tab->data,
        .vocab = tab->present ? tab->shape[0] : 0, .hash_ids_int64 = in->present && in->dtype == DT_I64,
        .topk_weights = (float *)w->data, .topk_ids = ids->data, .topk_ids_int64 = ids->dtype == DT_I64};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "experts", E, &args.experts) ||
          as_i32(&c, "k", k, &args.k));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_topk_route, args);
    return done_status(&c, s);
}

/* max_num_tokens_padded of moe_align_block_size, 0 where the library will refuse the shape
 * (then the outputs' sizes are not checked here and the library's message names the cause). */
static int64_t align_padded(int64_t T, int64_t k, int experts, int block)
{
    if (T < 1 || T > INT32_MAX || k > INT32_MAX) return 0;
    return (int64_t)aiter_aot_moe_align_max_padded((int32_t)T, (int32_t)k, experts, block);
}

static PyObject *py_moe_align_block_size(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[9] = {NULL};
    int experts, block;
    call c = {.op = "moe_align_block_size"};
    if (!PyArg_ParseTuple(a, "OOOOOOOO|O:moe_align_block_size", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8]) ||
        arg_i32(&c, "num_experts", o[6], &experts) || arg_i32(&c, "block_size", o[7], &block) || arg_stream(&c, o[8]))
        return NULL;
    TAKE(ids, "topk_ids", o[0], 0);
    TAKE(map, "expert_map", o[1], 1);
    TAKE(sid, "sorted_token_ids", o[2], 0);
    TAKE(eid, "expert_ids", o[3], 0);
    TAKE(post, "num_tokens_post_pad", o[4], 0);
    TAKE(ws, "workspace", o[5], 0);
    CHECK(spec(&c, ids, M(DT_I32), 2, D(-1, -1), "[tokens, k]", DENSE_ALL, 0));
    int64_t T = ids->shape[0], k = ids->shape[1], P = align_padded(T, k, experts, block);
    CHECK(spec(&c, map, M(DT_I32), 1, D(experts), "[num_experts]", DENSE_ALL, 0));
    CHECK(spec(&c, sid, M(DT_I32), 1, D(P ? P : -1), "[max_num_tokens_padded]", DENSE_ALL, 0));
    CHECK(spec(&c, eid, M(DT_I32), 1, D(P ? (P + block - 1) / block : -1), "[max_num_m_blocks]", DENSE_ALL, 0));
    CHECK(spec(&c, post, M(DT_I32), 1, D(1), "[1]", DENSE_ALL, 0));
    CHECK(need_dense(&c, ws, DENSE_ALL) || need_align(&c, ws, 16));
    CHECK(need_devices(&c, 2, c.n));
    aiter_aot_moe_align_block_size_args args = {
        .size = sizeof args, .topk_ids = (int32_t *)ids->data, .experts = experts, .block_size = block,
        .expert_map = (int32_t *)map->data, .sorted_token_ids = (int32_t *)sid->data,
        .expert_ids = (int32_t *)eid->data, .num_tokens_post_pad = (int32_t *)post->data, .workspace = ws->data,
        .workspace_size = bytes_of(ws)};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "k", k, &args.k));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_moe_align_block_size, args);
    return done_status(&c, s);
}

static PyObject *py_moe_align_sizes(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[4];
    int tokens, k, experts, block;
    call c = {.op = "moe_align_sizes"};
    if (!PyArg_ParseTuple(a, "OOOO:moe_align_sizes", &o[0], &o[1], &o[2], &o[3]) ||
        arg_i32(&c, "tokens", o[0], &tokens) || arg_i32(&c, "k", o[1], &k) ||
        arg_i32(&c, "experts", o[2], &experts) || arg_i32(&c, "block_size", o[3], &block))
        return NULL;
    size_t p = aiter_aot_moe_align_max_padded(tokens, k, experts, block);
    return Py_BuildValue("(nnn)", (Py_ssize_t)p, (Py_ssize_t)(block > 0 ? (p + (size_t)block - 1) / (size_t)block : 0),
                         (Py_ssize_t)aiter_aot_moe_align_workspace_size(tokens, k, experts));
}

/* ---- mHC ---- */

static int mhc_params(const call *c, PyObject *o, aiter_aot_mhc_params *p)
{
    if (!PyTuple_Check(o) || PyTuple_Size(o) != 6)
        return type_error(c, "params must be a tuple (rms_eps, pre_eps, sinkhorn_eps, post_mult, sinkhorn_iters: int, "
                          "norm_eps), as aiter_aot.MHC_PARAMS");
    float *const f[6] = {&p->rms_eps, &p->pre_eps, &p->sinkhorn_eps, &p->post_mult, NULL, &p->norm_eps};
    static const char *const name[6] = {"params' rms_eps", "params' pre_eps", "params' sinkhorn_eps",
                                        "params' post_mult", "params' sinkhorn_iters", "params' norm_eps"};
    for (int i = 0; i < 6; i++)
        if (f[i] ? arg_f32(c, name[i], PyTuple_GetItem(o, i), f[i])
                 : arg_i32(c, name[i], PyTuple_GetItem(o, i), &p->sinkhorn_iters))
            return -1;
    return 0;
}

/* residual: bf16 [T, 4, C], or [T, C] with broadcast; sets T and C. */
static int mhc_residual(const call *c, const pt *r, int broadcast, int64_t *T, int64_t *C)
{
    if (spec(c, r, M(DT_BF16), broadcast ? 2 : 3, broadcast ? D(-1, -1) : D(-1, 4, -1),
             broadcast ? "[tokens, hidden] (broadcast)" : "[tokens, 4, hidden]", DENSE_ALL, 16))
        return -1;
    *T = r->shape[0], *C = r->shape[r->ndim - 1];
    return 0;
}

static PyObject *py_mhc_prenorm_gemm(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[6] = {NULL};
    int bc;
    call c = {.op = "mhc_prenorm_gemm"};
    if (!PyArg_ParseTuple(a, "OOOOO|O:mhc_prenorm_gemm", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]) ||
        arg_bool(&c, "broadcast", o[4], &bc) || arg_stream(&c, o[5]))
        return NULL;
    TAKE(r, "residual", o[0], 0);
    TAKE(fn, "fn", o[1], 0);
    TAKE(mix, "mix", o[2], 0);
    TAKE(sq, "sqrsum", o[3], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, bc, &T, &C));
    CHECK(spec(&c, fn, M(DT_F32), 2, D(24, bc ? C : 4 * C), bc ? "[24, hidden]" : "[24, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, mix, M(DT_F32), 3, D(-1, T, 24), "[splits, tokens, 24]", DENSE_ALL, 0));
    CHECK(spec(&c, sq, M(DT_F32), 2, D(mix->shape[0], T), "[splits, tokens]", DENSE_ALL, 0));
    CHECK(need_devices(&c, 2, c.n));
    aiter_aot_mhc_prenorm_gemm_args args = {
        .size = sizeof args, .hc_mult = 4, .residual = r->data, .fn = (float *)fn->data, .mix = (float *)mix->data,
        .sqrsum = (float *)sq->data, .broadcast = bc};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden) ||
          as_i32(&c, "splits", mix->shape[0], &args.splits));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_prenorm_gemm, args);
    return done_status(&c, s);
}

/* The outputs pre and pre_full share: post, comb, layer_input, residual_out. */
static int mhc_pre_outputs(const call *c, const pt *const o[4], int64_t T, int64_t C, int bc)
{
    if (spec(c, o[0], M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0) ||
        spec(c, o[1], M(DT_F32), 3, D(T, 4, 4), "[tokens, 4, 4]", DENSE_ALL, 0) ||
        spec(c, o[2], M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16) ||
        spec(c, o[3], M(DT_BF16), 3, D(T, 4, C), "[tokens, 4, hidden]", DENSE_ALL, 16))
        return -1;
    if (bc && !o[3]->present) return value_error(c, "residual_out is None; broadcast needs it ([tokens, 4, hidden])");
    if (!bc && o[3]->present) return value_error(c, "residual_out is given without broadcast; pass None");
    return 0;
}

static PyObject *py_mhc_pre(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[13] = {NULL};
    int bc;
    call c = {.op = "mhc_pre"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOOO|O:mhc_pre", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12]) ||
        arg_bool(&c, "broadcast", o[11], &bc) || arg_stream(&c, o[12]))
        return NULL;
    aiter_aot_mhc_pre_args args = {.size = sizeof args, .hc_mult = 4, .broadcast = bc};
    if (mhc_params(&c, o[10], &args.params)) return NULL;
    TAKE(mix, "mix", o[0], 0);
    TAKE(sq, "sqrsum", o[1], 0);
    TAKE(scale, "scale", o[2], 0);
    TAKE(base, "base", o[3], 0);
    TAKE(r, "residual", o[4], 0);
    TAKE(nw, "norm_weight", o[5], 1);
    TAKE(post, "post", o[6], 0);
    TAKE(comb, "comb", o[7], 0);
    TAKE(li, "layer_input", o[8], 0);
    TAKE(ro, "residual_out", o[9], 1);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, bc, &T, &C));
    CHECK(spec(&c, mix, M(DT_F32), 3, D(-1, T, 24), "[splits, tokens, 24]", DENSE_ALL, 0));
    CHECK(spec(&c, sq, M(DT_F32), 2, D(mix->shape[0], T), "[splits, tokens]", DENSE_ALL, 0));
    CHECK(spec(&c, scale, M(DT_F32), 1, D(3), "[3]", DENSE_ALL, 0));
    CHECK(spec(&c, base, M(DT_F32), 1, D(24), "[24]", DENSE_ALL, 0));
    CHECK(spec(&c, nw, M(DT_BF16), 1, D(C), "[hidden]", DENSE_ALL, 16));
    CHECK(mhc_pre_outputs(&c, (const pt *const[]){post, comb, li, ro}, T, C, bc));
    CHECK(need_devices(&c, 6, c.n));
    args.mix = (float *)mix->data, args.sqrsum = (float *)sq->data, args.scale = (float *)scale->data;
    args.base = (float *)base->data, args.residual = r->data, args.norm_weight = nw->data;
    args.post = (float *)post->data, args.comb = (float *)comb->data, args.layer_input = li->data;
    args.residual_out = ro->data;
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden) ||
          as_i32(&c, "splits", mix->shape[0], &args.splits));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_pre, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_pre_full(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[13] = {NULL};
    int bc;
    call c = {.op = "mhc_pre_full"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOOO|O:mhc_pre_full", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12]) ||
        arg_bool(&c, "broadcast", o[11], &bc) || arg_stream(&c, o[12]))
        return NULL;
    aiter_aot_mhc_pre_full_args args = {.size = sizeof args, .hc_mult = 4, .broadcast = bc};
    if (mhc_params(&c, o[10], &args.params)) return NULL;
    TAKE(r, "residual", o[0], 0);
    TAKE(fn, "fn", o[1], 0);
    TAKE(scale, "scale", o[2], 0);
    TAKE(base, "base", o[3], 0);
    TAKE(nw, "norm_weight", o[4], 1);
    TAKE(post, "post", o[5], 0);
    TAKE(comb, "comb", o[6], 0);
    TAKE(li, "layer_input", o[7], 0);
    TAKE(ro, "residual_out", o[8], 1);
    TAKE(ws, "workspace", o[9], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, bc, &T, &C));
    CHECK(spec(&c, fn, M(DT_F32), 2, D(24, bc ? C : 4 * C), bc ? "[24, hidden]" : "[24, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, scale, M(DT_F32), 1, D(3), "[3]", DENSE_ALL, 0));
    CHECK(spec(&c, base, M(DT_F32), 1, D(24), "[24]", DENSE_ALL, 0));
    CHECK(spec(&c, nw, M(DT_BF16), 1, D(C), "[hidden]", DENSE_ALL, 16));
    CHECK(mhc_pre_outputs(&c, (const pt *const[]){post, comb, li, ro}, T, C, bc));
    CHECK(need_dense(&c, ws, DENSE_ALL) || need_align(&c, ws, 16));
    CHECK(need_devices(&c, 5, c.n));
    args.residual = r->data, args.fn = (float *)fn->data, args.scale = (float *)scale->data;
    args.base = (float *)base->data, args.norm_weight = nw->data, args.post = (float *)post->data;
    args.comb = (float *)comb->data, args.layer_input = li->data, args.residual_out = ro->data;
    args.workspace = ws->data;
    args.workspace_size = bytes_of(ws);
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_pre_full, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_post(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[6] = {NULL};
    call c = {.op = "mhc_post"};
    if (!PyArg_ParseTuple(a, "OOOOO|O:mhc_post", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]) || arg_stream(&c, o[5]))
        return NULL;
    TAKE(comb, "comb", o[0], 0);
    TAKE(post, "post", o[1], 0);
    TAKE(r, "residual", o[2], 0);
    TAKE(x, "x", o[3], 0);
    TAKE(out, "out", o[4], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, 0, &T, &C));
    CHECK(spec(&c, comb, M(DT_F32), 3, D(T, 4, 4), "[tokens, 4, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, post, M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, x, M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16));
    CHECK(spec(&c, out, M(DT_BF16), 3, D(T, 4, C), "[tokens, 4, hidden]", DENSE_ALL, 16));
    CHECK(need_devices(&c, 4, c.n));
    aiter_aot_mhc_post_args args = {.size = sizeof args, .hc_mult = 4, .comb = (float *)comb->data,
                                    .post = (float *)post->data, .residual = r->data, .x = x->data, .out = out->data};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_post, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_fused_post_pre(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[9] = {NULL};
    call c = {.op = "mhc_fused_post_pre"};
    if (!PyArg_ParseTuple(a, "OOOOOOOO|O:mhc_fused_post_pre", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8]) ||
        arg_stream(&c, o[8]))
        return NULL;
    TAKE(comb, "comb", o[0], 0);
    TAKE(post, "post", o[1], 0);
    TAKE(r, "residual", o[2], 0);
    TAKE(x, "x", o[3], 0);
    TAKE(fn, "fn", o[4], 0);
    TAKE(ro, "residual_out", o[5], 0);
    TAKE(mix, "mix", o[6], 0);
    TAKE(sq, "sqrsum", o[7], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, 0, &T, &C));
    CHECK(spec(&c, comb, M(DT_F32), 3, D(T, 4, 4), "[tokens, 4, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, post, M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, x, M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16));
    CHECK(spec(&c, fn, M(DT_F32), 2, D(24, 4 * C), "[24, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, ro, M(DT_BF16), 3, D(T, 4, C), "[tokens, 4, hidden]", DENSE_ALL, 16));
    CHECK(spec(&c, mix, M(DT_F32), 3, D(-1, T, 24), "[splits, tokens, 24]", DENSE_ALL, 0));
    CHECK(spec(&c, sq, M(DT_F32), 2, D(mix->shape[0], T), "[splits, tokens]", DENSE_ALL, 0));
    CHECK(need_devices(&c, 5, c.n));
    aiter_aot_mhc_fused_post_pre_args args = {
        .size = sizeof args, .hc_mult = 4, .comb = (float *)comb->data, .post = (float *)post->data,
        .residual = r->data, .x = x->data, .fn = (float *)fn->data, .residual_out = ro->data,
        .mix = (float *)mix->data, .sqrsum = (float *)sq->data};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden) ||
          as_i32(&c, "splits", mix->shape[0], &args.splits));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_fused_post_pre, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_head(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[8] = {NULL};
    float rms_eps, eps;
    call c = {.op = "mhc_head"};
    if (!PyArg_ParseTuple(a, "OOOOOOO|O:mhc_head", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]) ||
        arg_f32(&c, "rms_eps", o[5], &rms_eps) || arg_f32(&c, "eps", o[6], &eps) || arg_stream(&c, o[7]))
        return NULL;
    TAKE(r, "residual", o[0], 0);
    TAKE(fn, "fn", o[1], 0);
    TAKE(scale, "scale", o[2], 0);
    TAKE(base, "base", o[3], 0);
    TAKE(out, "out", o[4], 0);
    if (spec(&c, r, M(DT_BF16), 3, D(-1, 4, -1), "[tokens, 4, hidden]", DENSE_ALL, 2)) return fail_call(&c);
    int64_t T = r->shape[0], C = r->shape[2];
    CHECK(spec(&c, fn, M(DT_F32), 2, D(4, 4 * C), "[4, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, scale, M(DT_F32), 1, D(1), "[1]", DENSE_ALL, 0));
    CHECK(spec(&c, base, M(DT_F32), 1, D(4), "[4]", DENSE_ALL, 0));
    CHECK(spec(&c, out, M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 2));
    CHECK(need_devices(&c, 4, c.n));
    aiter_aot_mhc_head_args args = {.size = sizeof args, .hc_mult = 4, .residual = r->data, .fn = (float *)fn->data,
                                    .scale = (float *)scale->data, .base = (float *)base->data, .out = out->data,
                                    .rms_eps = rms_eps, .eps = eps};
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_head, args);
    return done_status(&c, s);
}

/* The delayed ops' coefficients and outputs: pre_mix (optional), norm_weight (optional), post,
 * comb, layer_input, next_pre_mix; the workspace's bytes. */
static int mhc_delayed_common(const call *c, const pt *const o[6], const pt *ws, int64_t T, int64_t C)
{
    if (spec(c, o[0], M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0) ||
        spec(c, o[1], M(DT_BF16), 1, D(C), "[hidden]", DENSE_ALL, 16) ||
        spec(c, o[2], M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0) ||
        spec(c, o[3], M(DT_F32), 3, D(T, 4, 4), "[tokens, 4, 4]", DENSE_ALL, 0) ||
        spec(c, o[4], M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16) ||
        spec(c, o[5], M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0))
        return -1;
    return need_dense(c, ws, DENSE_ALL) || need_align(c, ws, 16);
}


static PyObject *py_mhc_pre_delayed(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[14] = {NULL};
    call c = {.op = "mhc_pre_delayed"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOOOO|O:mhc_pre_delayed", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13]) ||
        arg_stream(&c, o[13]))
        return NULL;
    aiter_aot_mhc_pre_delayed_args args = {.size = sizeof args, .hc_mult = 4};
    if (mhc_params(&c, o[12], &args.params)) return NULL;
    TAKE(r, "residual", o[0], 0);
    TAKE(x, "x", o[1], 1);
    TAKE(fn, "fn", o[2], 0);
    TAKE(scale, "scale", o[3], 0);
    TAKE(base, "base", o[4], 0);
    TAKE(pm, "pre_mix", o[5], 1);
    TAKE(nw, "norm_weight", o[6], 1);
    TAKE(post, "post", o[7], 0);
    TAKE(comb, "comb", o[8], 0);
    TAKE(li, "layer_input", o[9], 0);
    TAKE(next, "next_pre_mix", o[10], 0);
    TAKE(ws, "workspace", o[11], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, 0, &T, &C));
    CHECK(spec(&c, x, M(DT_BF16), 2, D(T, -1), "[tokens, hidden or 4 * hidden]", DENSE_ALL, 16));
    const int64_t K = x->present ? x->shape[1] : 4 * C;
    CHECK(x->present && K != C && K != 4 * C
              ? value_error(&c, "x has %lld values a token; the op needs hidden (%lld) or 4 * hidden", (long long)K,
                            (long long)C)
              : 0);
    CHECK(spec(&c, fn, M(DT_F32), 2, D(24, K), x->present ? "[24, x's width]" : "[24, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, scale, M(DT_F32), 1, D(3), "[3]", DENSE_ALL, 0));
    CHECK(spec(&c, base, M(DT_F32), 1, D(24), "[24]", DENSE_ALL, 0));
    CHECK(mhc_delayed_common(&c, (const pt *const[]){pm, nw, post, comb, li, next}, ws, T, C));
    CHECK(need_devices(&c, 7, c.n));
    args.residual = r->data, args.x = x->data, args.fn = (float *)fn->data, args.scale = (float *)scale->data;
    args.base = (float *)base->data, args.pre_mix = (float *)pm->data, args.norm_weight = nw->data;
    args.post = (float *)post->data, args.comb = (float *)comb->data, args.layer_input = li->data;
    args.next_pre_mix = (float *)next->data, args.workspace = ws->data, args.workspace_size = bytes_of(ws);
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden) ||
          as_i32(&c, "x's width", x->present ? K : 0, &args.x_width));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_pre_delayed, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_fused_post_pre_delayed(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[18] = {NULL};
    call c = {.op = "mhc_fused_post_pre_delayed"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOOOOOOOO|O:mhc_fused_post_pre_delayed", &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16],
                          &o[17]) ||
        arg_stream(&c, o[17]))
        return NULL;
    aiter_aot_mhc_fused_post_pre_delayed_args args = {.size = sizeof args, .hc_mult = 4};
    if (mhc_params(&c, o[16], &args.params)) return NULL;
    TAKE(x, "x", o[0], 0);
    TAKE(r, "residual", o[1], 0);
    TAKE(pin, "post_in", o[2], 0);
    TAKE(cin, "comb_in", o[3], 0);
    TAKE(fn, "fn", o[4], 0);
    TAKE(scale, "scale", o[5], 0);
    TAKE(base, "base", o[6], 0);
    TAKE(pm, "pre_mix", o[7], 1);
    TAKE(nw, "norm_weight", o[8], 1);
    TAKE(ro, "residual_out", o[9], 0);
    TAKE(post, "post", o[10], 0);
    TAKE(comb, "comb", o[11], 0);
    TAKE(li, "layer_input", o[12], 0);
    TAKE(next, "next_pre_mix", o[13], 0);
    TAKE(aux, "aux", o[14], 1);
    TAKE(ws, "workspace", o[15], 0);
    int64_t T, C;
    CHECK(mhc_residual(&c, r, 0, &T, &C));
    CHECK(spec(&c, x, M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16));
    CHECK(spec(&c, pin, M(DT_F32), 2, D(T, 4), "[tokens, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, cin, M(DT_F32), 3, D(T, 4, 4), "[tokens, 4, 4]", DENSE_ALL, 0));
    CHECK(spec(&c, fn, M(DT_F32), 2, D(24, 4 * C), "[24, 4 * hidden]", DENSE_ALL, 0));
    CHECK(spec(&c, scale, M(DT_F32), 1, D(3), "[3]", DENSE_ALL, 0));
    CHECK(spec(&c, base, M(DT_F32), 1, D(24), "[24]", DENSE_ALL, 0));
    CHECK(spec(&c, ro, M(DT_BF16), 3, D(T, 4, C), "[tokens, 4, hidden]", DENSE_ALL, 16));
    CHECK(spec(&c, aux, M(DT_BF16), 2, D(T, C), "[tokens, hidden]", DENSE_ALL, 16));
    CHECK(mhc_delayed_common(&c, (const pt *const[]){pm, nw, post, comb, li, next}, ws, T, C));
    CHECK(need_devices(&c, 9, c.n));
    args.x = x->data, args.residual = r->data, args.post_in = (float *)pin->data, args.comb_in = (float *)cin->data;
    args.fn = (float *)fn->data, args.scale = (float *)scale->data, args.base = (float *)base->data;
    args.pre_mix = (float *)pm->data, args.norm_weight = nw->data, args.residual_out = ro->data;
    args.post = (float *)post->data, args.comb = (float *)comb->data, args.layer_input = li->data;
    args.next_pre_mix = (float *)next->data, args.aux = aux->data, args.workspace = ws->data;
    args.workspace_size = bytes_of(ws);
    CHECK(as_i32(&c, "tokens", T, &args.tokens) || as_i32(&c, "hidden", C, &args.hidden));
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_mhc_fused_post_pre_delayed, args);
    return done_status(&c, s);
}

static PyObject *py_mhc_workspace_size(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[2];
    int tokens, hidden;
    call c = {.op = "mhc_workspace_size"};
    if (!PyArg_ParseTuple(a, "OO:mhc_workspace_size", &o[0], &o[1]) || arg_i32(&c, "tokens", o[0], &tokens) ||
        arg_i32(&c, "hidden", o[1], &hidden))
        return NULL;
    return PyLong_FromSize_t(aiter_aot_mhc_workspace_size(tokens, hidden));
}

static PyObject *py_mhc_splits(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[2];
    int tokens, hidden;
    int32_t splits = 0;
    call c = {.op = "mhc_splits"};
    if (!PyArg_ParseTuple(a, "OO:mhc_splits", &o[0], &o[1]) || arg_i32(&c, "tokens", o[0], &tokens) ||
        arg_i32(&c, "hidden", o[1], &hidden))
        return NULL;
    aiter_aot_status s = aiter_aot_mhc_splits(tokens, hidden, &splits);
    if (s != AITER_AOT_STATUS_OK) return status_error(s, "mhc_splits");
    return PyLong_FromLong(splits);
}

/* ---- FMHA ---- */

/* q, k, v, out: [rows, heads, dim], heads and dim packed, rows strided. */
static int fmha_tensor(const call *c, const pt *t, unsigned dt, int64_t rows, int64_t heads, int64_t dim,
                       const char *what, unsigned align)
{
    return spec(c, t, dt, 3, D(rows, heads, dim), what, DENSE_INNER, align);
}

/* The row stride the op gets for t: its own, or 0 (packed) where t has at most one row. Rows 0
 * elements apart (an expanded tensor) are refused: the op reads 0 as packed. */
static int fmha_row_stride(const call *c, const pt *t, int64_t *stride)
{
    *stride = t->shape[0] > 1 ? t->strides[0] : 0;
    if (t->shape[0] > 1 && t->strides[0] == 0)
        return value_error(c, "%s: its rows are 0 elements apart (an expanded tensor); the op needs a row a token", t->name);
    return 0;
}

static PyObject *py_fmha_varlen_fwd(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o[14] = {NULL};
    int max_sq, causal, wl, wr;
    float scale, cap;
    call c = {.op = "fmha_varlen_fwd"};
    if (!PyArg_ParseTuple(a, "OOOOOOOOOOOOO|O:fmha_varlen_fwd", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13]) ||
        arg_i32(&c, "max_seqlen_q", o[7], &max_sq) || arg_f32(&c, "softmax_scale", o[8], &scale) ||
        arg_f32(&c, "logits_soft_cap", o[9], &cap) || arg_bool(&c, "causal", o[10], &causal) ||
        arg_i32(&c, "window_left", o[11], &wl) || arg_i32(&c, "window_right", o[12], &wr) || arg_stream(&c, o[13]))
        return NULL;
    TAKE(q, "q", o[0], 0);
    TAKE(k, "k", o[1], 0);
    TAKE(v, "v", o[2], 0);
    TAKE(out, "out", o[3], 0);
    TAKE(lse, "softmax_lse", o[4], 1);
    TAKE(cq, "cu_seqlens_q", o[5], 0);
    TAKE(ck, "cu_seqlens_k", o[6], 0);
    CHECK(fmha_tensor(&c, q, M(DT_BF16) | M(DT_F16), -1, -1, -1, "[total_q, hq, d]", 16));
    unsigned dt = M(q->dtype);
    int64_t Tq = q->shape[0], hq = q->shape[1], d = q->shape[2];
    CHECK(fmha_tensor(&c, k, dt, -1, -1, d, "[total_k, hk, d]", 16));
    int64_t Tk = k->shape[0], hk = k->shape[1];
    CHECK(fmha_tensor(&c, v, dt, Tk, hk, -1, "[total_k, hk, d_v]", 16));
    int64_t dv = v->shape[2];
    CHECK(fmha_tensor(&c, out, dt, Tq, hq, dv, "[total_q, hq, d_v]", 4));
    CHECK(spec(&c, lse, M(DT_F32), 2, D(hq, Tq), "[hq, total_q]", DENSE_ALL, 0));
    CHECK(spec(&c, cq, M(DT_I32), 1, D(-1), "[batch + 1]", DENSE_ALL, 0));
    CHECK(spec(&c, ck, M(DT_I32), 1, D(cq->shape[0]), "[batch + 1] (as cu_seqlens_q)", DENSE_ALL, 0));
    if (cq->shape[0] < 2) CHECK(value_error(&c, "cu_seqlens_q has %lld entries; the op needs batch + 1 >= 2",
                                            (long long)cq->shape[0]));
    CHECK(need_devices(&c, 3, 5)); /* out, softmax_lse */
    int64_t rs[4];
    CHECK(fmha_row_stride(&c, q, &rs[0]) || fmha_row_stride(&c, k, &rs[1]) || fmha_row_stride(&c, v, &rs[2]) ||
          fmha_row_stride(&c, out, &rs[3]));
    aiter_aot_fmha_varlen_fwd_args args = {
        .size = sizeof args, .q = q->data, .k = k->data, .v = v->data, .out = out->data,
        .softmax_lse = (float *)lse->data, .cu_seqlens_q = (int32_t *)cq->data, .cu_seqlens_k = (int32_t *)ck->data,
        .dtype = (aiter_aot_dtype)q->dtype, .max_seqlen_q = max_sq, .q_row_stride = rs[0],
        .k_row_stride = rs[1], .v_row_stride = rs[2], .out_row_stride = rs[3],
        .softmax_scale = scale, .logits_soft_cap = cap, .causal = causal, .window_left = wl, .window_right = wr};
    CHECK(as_i32(&c, "batch", cq->shape[0] - 1, &args.batch) || as_i32(&c, "total_q", Tq, &args.total_q) ||
          as_i32(&c, "hq", hq, &args.hq) || as_i32(&c, "hk", hk, &args.hk) ||
          as_i32(&c, "head_dim", d, &args.head_dim) || as_i32(&c, "head_dim_v", dv, &args.head_dim_v));
    args.total_k = Tk; /* the op names it if it passes 2^31 - 1 */
    aiter_aot_status s;
    LAUNCH(s, aiter_aot_fmha_varlen_fwd, args);
    return done_status(&c, s);
}

/* ---- the library ---- */

static PyObject *py_init(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    aiter_aot_status s = aiter_aot_init();
    if (s != AITER_AOT_STATUS_OK) return status_error(s, "init");
    Py_RETURN_NONE;
}

static PyObject *py_preload(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o;
    int device;
    call c = {.op = "preload"};
    if (!PyArg_ParseTuple(a, "O:preload", &o) || arg_i32(&c, "device", o, &device)) return NULL;
    aiter_aot_status s;
    Py_BEGIN_ALLOW_THREADS s = aiter_aot_preload(device);
    Py_END_ALLOW_THREADS
    if (s != AITER_AOT_STATUS_OK) return status_error(s, "preload");
    Py_RETURN_NONE;
}

static PyObject *string_list(const char **v, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(v[i]);
        if (s == NULL || PyList_SetItem(l, (Py_ssize_t)i, s)) {
            Py_DECREF(l);
            return NULL;
        }
    }
    return l;
}

static PyObject *py_targets(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    const char *v[64];
    size_t n = aiter_aot_targets(v, 64);
    if (n == 0 && aiter_aot_last_error()[0]) return status_error(AITER_AOT_STATUS_CORRUPT_BUNDLE, "targets");
    return string_list(v, n < 64 ? n : 64);
}

static PyObject *py_kernels(PyObject *self, PyObject *a)
{
    (void)self;
    const char *target = NULL, *v[1024];
    if (!PyArg_ParseTuple(a, "|z:kernels", &target)) return NULL;
    size_t n = aiter_aot_kernels(target, v, 1024);
    return string_list(v, n < 1024 ? n : 1024);
}

static PyObject *py_gpu_library(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    return PyUnicode_FromString(aiter_aot_gpu_library());
}

static PyObject *py_device_target(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    char buf[128];
    aiter_aot_status s = aiter_aot_device_target(buf, sizeof buf);
    if (s != AITER_AOT_STATUS_OK) return status_error(s, "device_target");
    return PyUnicode_FromString(buf);
}

static PyObject *py_stats(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    aiter_aot_stats st = {.size = sizeof st};
    aiter_aot_status s = aiter_aot_get_stats(&st);
    if (s != AITER_AOT_STATUS_OK) return status_error(s, "stats");
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "modules_loaded", (unsigned long long)st.modules_loaded,
                         "frames_decompressed", (unsigned long long)st.frames_decompressed, "launches",
                         (unsigned long long)st.launches, "device_loads", (unsigned long long)st.device_loads,
                         "decompress_ns", (unsigned long long)st.decompress_ns, "module_load_ns",
                         (unsigned long long)st.module_load_ns, "function_lookup_ns",
                         (unsigned long long)st.function_lookup_ns);
}

static PyObject *py_version(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    return PyUnicode_FromString(aiter_aot_version_string());
}

static PyObject *py_last_error(PyObject *self, PyObject *a)
{
    (void)self, (void)a;
    return PyUnicode_FromString(aiter_aot_last_error());
}

/* Tests: what the extension reads from a tensor argument, as a dict. */
static PyObject *py_describe(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o;
    call c = {.op = "_describe"};
    if (!PyArg_ParseTuple(a, "O:_describe", &o)) return NULL;
    TAKE(t, "tensor", o, 0);
    PyObject *shape = PyTuple_New(t->ndim), *strides = PyTuple_New(t->ndim);
    for (int i = 0; shape && strides && i < t->ndim; i++) {
        PyTuple_SetItem(shape, i, PyLong_FromLongLong(t->shape[i]));
        PyTuple_SetItem(strides, i, PyLong_FromLongLong(t->strides[i]));
    }
    char dev[64];
    device_str(dev, sizeof dev, t);
    PyObject *r = Py_BuildValue("{sKsNsNsssssisi}", "data", (unsigned long long)(uintptr_t)t->data, "shape", shape,
                                "strides", strides, "dtype", dtype_str(t), "device", dev, "versioned", t->versioned,
                                "readonly", t->readonly);
    finish(&c);
    return r;
}

static PyObject *py_allow_cpu(PyObject *self, PyObject *a)
{
    (void)self;
    PyObject *o;
    call c = {.op = "_allow_cpu"};
    if (!PyArg_ParseTuple(a, "O:_allow_cpu", &o) || arg_bool(&c, "allow", o, &cpu_ok)) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"topk_softmax", py_topk_softmax, METH_VARARGS,
     "topk_softmax(gating_output, topk_weights, topk_ids, token_expert_indices|None, renormalize, stream=0)"},
    {"moe_sorting", py_moe_sorting, METH_VARARGS,
     "moe_sorting(topk_ids, topk_weights, expert_mask|None, sorted_token_ids, sorted_weights, sorted_expert_ids, "
     "num_valid_ids, moe_buf|None, workspace, num_experts, block_size, stream=0)"},
    {"moe_sorting_sizes", py_moe_sorting_sizes, METH_VARARGS,
     "moe_sorting_sizes(tokens, k, experts, block_size=0) -> (max_num_tokens_padded, max_num_m_blocks, "
     "workspace_bytes)"},
    {"topk_route", py_topk_route, METH_VARARGS,
     "topk_route(gating_output, bias|None, input_ids|None, tid2eid|None, topk_weights, topk_ids, scoring, n_group, "
     "topk_group, renormalize, routed_scaling_factor, stream=0)"},
    {"moe_align_block_size", py_moe_align_block_size, METH_VARARGS,
     "moe_align_block_size(topk_ids, expert_map|None, sorted_token_ids, expert_ids, num_tokens_post_pad, workspace, "
     "num_experts, block_size, stream=0)"},
    {"moe_align_sizes", py_moe_align_sizes, METH_VARARGS,
     "moe_align_sizes(tokens, k, experts, block_size) -> (max_num_tokens_padded, max_num_m_blocks, workspace_bytes)"},
    {"mhc_prenorm_gemm", py_mhc_prenorm_gemm, METH_VARARGS,
     "mhc_prenorm_gemm(residual, fn, mix, sqrsum, broadcast, stream=0)"},
    {"mhc_pre", py_mhc_pre, METH_VARARGS,
     "mhc_pre(mix, sqrsum, scale, base, residual, norm_weight|None, post, comb, layer_input, residual_out|None, "
     "params, broadcast, stream=0)"},
    {"mhc_pre_full", py_mhc_pre_full, METH_VARARGS,
     "mhc_pre_full(residual, fn, scale, base, norm_weight|None, post, comb, layer_input, residual_out|None, "
     "workspace, params, broadcast, stream=0)"},
    {"mhc_post", py_mhc_post, METH_VARARGS, "mhc_post(comb, post, residual, x, out, stream=0)"},
    {"mhc_fused_post_pre", py_mhc_fused_post_pre, METH_VARARGS,
     "mhc_fused_post_pre(comb, post, residual, x, fn, residual_out, mix, sqrsum, stream=0)"},
    {"mhc_head", py_mhc_head, METH_VARARGS, "mhc_head(residual, fn, scale, base, out, rms_eps, eps, stream=0)"},
    {"mhc_pre_delayed", py_mhc_pre_delayed, METH_VARARGS,
     "mhc_pre_delayed(residual, x|None, fn, scale, base, pre_mix|None, norm_weight|None, post, comb, layer_input, "
     "next_pre_mix, workspace, params, stream=0)"},
    {"mhc_fused_post_pre_delayed", py_mhc_fused_post_pre_delayed, METH_VARARGS,
     "mhc_fused_post_pre_delayed(x, residual, post_in, comb_in, fn, scale, base, pre_mix|None, norm_weight|None, "
     "residual_out, post, comb, layer_input, next_pre_mix, aux|None, workspace, params, stream=0)"},
    {"mhc_workspace_size", py_mhc_workspace_size, METH_VARARGS, "mhc_workspace_size(tokens, hidden) -> bytes"},
    {"mhc_splits", py_mhc_splits, METH_VARARGS, "mhc_splits(tokens, hidden) -> splits pre_full uses here"},
    {"fmha_varlen_fwd", py_fmha_varlen_fwd, METH_VARARGS,
     "fmha_varlen_fwd(q, k, v, out, softmax_lse|None, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, "
     "logits_soft_cap, causal, window_left, window_right, stream=0)"},
    {"init", py_init, METH_NOARGS, "init(): binds the GPU runtime and checks the bundle now"},
    {"preload", py_preload, METH_VARARGS, "preload(device): loads the device's code objects now"},
    {"targets", py_targets, METH_NOARGS, "targets() -> the target IDs embedded"},
    {"kernels", py_kernels, METH_VARARGS, "kernels(target=None) -> the module names embedded"},
    {"gpu_library", py_gpu_library, METH_NOARGS, "gpu_library() -> path of the vendor library bound"},
    {"device_target", py_device_target, METH_NOARGS, "device_target() -> the current device's target ID"},
    {"stats", py_stats, METH_NOARGS, "stats() -> the library's counters"},
    {"version", py_version, METH_NOARGS, "version() -> the linked library's version"},
    {"last_error", py_last_error, METH_NOARGS, "last_error() -> the thread's last library error"},
    {"_describe", py_describe, METH_VARARGS, "tests: what the extension reads from a tensor"},
    {"_allow_cpu", py_allow_cpu, METH_VARARGS, "tests: let CPU tensors through the device check"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "aiter_aot._native",
                                    "libaiter_aot, statically linked (see aiter_aot)", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Error = PyErr_NewExceptionWithDoc("aiter_aot.Error",
                                      "A libaiter_aot call failed: .status (int), .status_name, .message",
                                      PyExc_RuntimeError, NULL);
    PyObject *bases = Error ? PyTuple_Pack(2, Error, PyExc_ValueError) : NULL;
    ArgumentError = bases ? PyErr_NewExceptionWithDoc("aiter_aot.ArgumentError",
                                                      "The library rejected an argument (status 1)", bases, NULL)
                          : NULL;
    Py_XDECREF(bases);
    if (ArgumentError == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(Error), Py_INCREF(ArgumentError); /* AddObject takes one reference; the statics keep theirs */
    if (PyModule_AddObject(m, "Error", Error) || PyModule_AddObject(m, "ArgumentError", ArgumentError)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
