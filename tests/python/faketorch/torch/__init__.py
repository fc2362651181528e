"""A stand-in for the small part of PyTorch that aiter_aot.torch, .aiter and .vllm use, for the
CPU tests (torch cannot be installed here). Tensors are NumPy arrays that claim to live on
cuda:0; with tests/fakegpu's HIP double the ops "launch" on them (recorded, never run), which
is enough to check that each wrapper hands the library the right tensors in the right places.
custom_op records what is registered instead of registering it."""
import numpy as np


class dtype:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, np_dtype

    def __repr__(self):
        return "torch." + self.name


float32, float16, bfloat16 = dtype("float32", np.float32), dtype("float16", np.float16), dtype("bfloat16", np.uint16)
int32, int64, uint8 = dtype("int32", np.int32), dtype("int64", np.int64), dtype("uint8", np.uint8)
int8, int16, float64, bool = dtype("int8", np.int8), dtype("int16", np.int16), dtype("float64", np.float64), \
    dtype("bool", np.bool_)


class device:
    def __init__(self, spec="cuda:0"):
        self.type, _, idx = str(spec).partition(":")
        self.index = int(idx) if idx else 0

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __str__(self):
        return f"{self.type}:{self.index}"


class Tensor:
    def __init__(self, array, dt, dev="cuda:0"):
        self.a, self.dtype, self.device = array, dt, device(dev)

    shape = property(lambda self: self.a.shape)

    def stride(self):
        return tuple(s // self.a.itemsize for s in self.a.strides)

    def data_ptr(self):
        return self.a.ctypes.data

    def get_device(self):
        return -1 if self.device.type == "cpu" else self.device.index

    def dim(self):
        return self.a.ndim

    def numel(self):
        return self.a.size

    def view(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return Tensor(self.a.reshape(shape), self.dtype, self.device)

    def unsqueeze(self, d):
        return Tensor(np.expand_dims(self.a, d), self.dtype, self.device)

    def new_empty(self, shape):
        return empty(shape, dtype=self.dtype, device=self.device)

    def copy_(self, other):
        self.a[...] = other.a.astype(self.a.dtype)
        return self

    def zero_(self):
        self.a[...] = 0
        return self

    def __getitem__(self, i):
        return Tensor(self.a[i], self.dtype, self.device)

    def fill_(self, value):
        self.a[...] = value
        return self

    def t(self):
        return Tensor(self.a.T, self.dtype, self.device)

    def flatten(self):
        return Tensor(self.a.reshape(-1), self.dtype, self.device)

    def float(self):
        return Tensor(self.a.astype(np.float32), float32, self.device)

    def int(self):
        return Tensor(self.a.astype(np.int32), int32, self.device)

    def clamp(self, lo, hi):
        return Tensor(np.clip(self.a, lo, hi), self.dtype, self.device)

    def index_select(self, dim, index):
        return Tensor(np.take(self.a, index.a, axis=dim), self.dtype, self.device)

    def masked_fill(self, mask, value):
        return Tensor(np.where(mask.a, value, self.a).astype(self.a.dtype), self.dtype, self.device)

    def _cmp(self, other, op):
        return Tensor(op(self.a, other.a if isinstance(other, Tensor) else other), bool, self.device)

    __ge__ = lambda self, o: self._cmp(o, np.greater_equal)
    __lt__ = lambda self, o: self._cmp(o, np.less)
    __and__ = lambda self, o: self._cmp(o, np.logical_and)
    __invert__ = lambda self: Tensor(~self.a, bool, self.device)


def _aligned(shape, dt):
    """NumPy memory 256-byte aligned, as a caching allocator's."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    n = int(np.prod(shape)) * np.dtype(dt.np).itemsize
    raw = np.zeros(n + 256, np.uint8)
    off = (-raw.ctypes.data) % 256
    return raw[off:off + n].view(dt.np).reshape(shape)


def empty(shape, dtype=float32, device="cuda:0"):
    return Tensor(_aligned(shape, dtype), dtype, device)


zeros = empty


def empty_like(t):
    return empty(t.shape, dtype=t.dtype, device=t.device)


def arange(n, dtype=int64, device="cuda:0"):
    t = empty((n,), dtype=dtype, device=device)
    t.a[...] = np.arange(n)
    return t


def tensor(values, dtype=float32, device="cuda:0"):
    t = empty(np.shape(values), dtype=dtype, device=device)
    t.a[...] = values
    return t


class _Stream:
    cuda_stream = 0


class cuda:
    @staticmethod
    def current_stream(dev=None):
        return _Stream()

    @staticmethod
    def current_device():
        return 0


class _Namespace:
    pass


class ops:
    aiter_aot = _Namespace()


class library:
    registered = {}

    @staticmethod
    def custom_op(name, mutates_args=(), **kw):
        def wrap(fn):
            rec = library.registered[name] = {"fn": fn, "mutates_args": tuple(mutates_args), "fake": None}

            def register_fake(fake):
                rec["fake"] = fake
                return fake
            fn.register_fake = register_fake
            setattr(ops.aiter_aot, name.split("::")[1], fn)
            return fn
        return wrap


class compiler:
    @staticmethod
    def is_compiling():
        return False


class _dynamo:
    is_compiling = compiler.is_compiling


class _C:
    pass
