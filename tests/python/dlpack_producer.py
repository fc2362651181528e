"""A small pure-Python DLPack producer for the extension's tests: hands out hand-made capsules,
versioned ("dltensor_versioned", DLPack 1.0) or not ("dltensor"), with any dtype code, shape,
strides (or NULL), byte offset, device and flags, and counts the deleter's calls."""
import ctypes as C


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32), ("dtype", DLDataType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class DLManaged(C.Structure):
    pass


DELETER = C.CFUNCTYPE(None, C.c_void_p)
DLManaged._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p), ("deleter", DELETER)]


class DLVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


class DLManagedVersioned(C.Structure):
    _fields_ = [("version", DLVersion), ("manager_ctx", C.c_void_p), ("deleter", DELETER), ("flags", C.c_uint64),
                ("dl_tensor", DLTensor)]


_new_capsule = C.pythonapi.PyCapsule_New
_new_capsule.restype = C.py_object
_new_capsule.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
_capsule_name = C.pythonapi.PyCapsule_GetName
_capsule_name.restype = C.c_char_p
_capsule_name.argtypes = [C.py_object]

# dtype codes
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6
CPU, CUDA, ROCM = 1, 2, 10
DTYPES = {"float32": (FLOAT, 32), "float16": (FLOAT, 16), "bfloat16": (BFLOAT, 16), "int32": (INT, 32),
          "int64": (INT, 64), "uint8": (UINT, 8)}


def capsule_name(cap):
    return _capsule_name(cap).decode()


class Producer:
    """An object with __dlpack__ / __dlpack_device__. `dtype` is a name of DTYPES or a
    (code, bits, lanes) tuple; strides=None hands out NULL strides; version=None makes an old
    producer whose __dlpack__ takes no max_version (so only unversioned capsules come)."""

    def __init__(self, shape, dtype="float32", strides=None, device=(CUDA, 0), data=0x10000, byte_offset=0,
                 version=(1, 0), readonly=False, null_shape=False):
        self.shape, self.strides, self.device = tuple(shape), strides, device
        self.dtype = dtype if isinstance(dtype, tuple) else DTYPES[dtype] + (1,)
        self.data, self.byte_offset, self.version, self.readonly = data, byte_offset, version, readonly
        self.null_shape = null_shape
        self.deleted = 0
        self.calls = []
        self._keep = []

    def __dlpack_device__(self):
        return self.device

    def _fill(self, t):
        n = len(self.shape)
        shape = (C.c_int64 * max(n, 1))(*self.shape)
        strides = None if self.strides is None else (C.c_int64 * max(n, 1))(*self.strides)
        self._keep += [shape, strides]
        t.data, t.device, t.ndim = self.data, DLDevice(*self.device), n
        t.dtype = DLDataType(*self.dtype)
        t.shape = None if self.null_shape else C.cast(shape, C.POINTER(C.c_int64))
        t.strides = C.cast(strides, C.POINTER(C.c_int64)) if strides is not None else None
        t.byte_offset = self.byte_offset

    def _deleter(self):
        def deleter(_):
            self.deleted += 1
        d = DELETER(deleter)
        self._keep.append(d)
        return d

    def capsule(self, versioned):
        if versioned:
            m = DLManagedVersioned()
            m.version = DLVersion(*self.version)
            m.flags = 1 if self.readonly else 0
            self._fill(m.dl_tensor)
        else:
            m = DLManaged()
            self._fill(m.dl_tensor)
        m.deleter = self._deleter()
        self._keep.append(m)
        return _new_capsule(C.addressof(m), b"dltensor_versioned" if versioned else b"dltensor", None)

    def __dlpack__(self, **kw):
        self.calls.append(kw)
        if self.version is None:
            if "max_version" in kw:
                raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
            return self.capsule(False)
        mv = kw.get("max_version")
        return self.capsule(mv is not None and mv[0] >= 1)
