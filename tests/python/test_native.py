"""CPU tests of the extension aiter_aot._native (make check): import, what is embedded, the
library's answers without a GPU, DLPack parsing (NumPy and hand-made capsules of both kinds),
every op's argument checks and messages, the interposition case of the AITER report, and the
whole path to a (fake) device.

usage: PYTHONPATH=<installed wheel> python3 tests/python/test_native.py BUILDDIR "TARGETS"
The last line is "N passed, N failed"."""
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aiter_aot as A  # noqa: E402
from aiter_aot import _native as N  # noqa: E402
from dlpack_producer import BFLOAT, COMPLEX, CPU, CUDA, FLOAT, ROCM, Producer, capsule_name  # noqa: E402

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
TARGETS = sys.argv[2].split() if len(sys.argv) > 2 else []
PARAMS = A.MHC_PARAMS


def child(code, env=None):
    """Runs `code` in a fresh interpreter with this one's path; returns (rc, stdout + stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)
    return r.returncode, r.stdout + r.stderr


def gpu(shape, dtype="float32", **kw):
    """A DLPack tensor on cuda:0 whose data pointer is 256-byte aligned (never dereferenced)."""
    return Producer(shape, dtype, **kw)


class Library(unittest.TestCase):
    def test_version(self):
        self.assertEqual(A.version(), "0.1.0")
        self.assertEqual(A.__version__, A.version())

    def test_targets(self):
        t = A.targets()
        self.assertTrue(t, "no target embedded")
        for want in TARGETS:
            short = want.split(":")[0]
            self.assertTrue(any(x.endswith("--" + short) or ("--" + short + ":") in x for x in t), (want, t))
        self.assertEqual(len(t), len(TARGETS) if TARGETS else len(t))

    def test_kernels(self):
        # the modules this build compiled (BUILDDIR/co/TARGET/NAME.co or .cubin), one per .hip
        built = {}
        for t in os.listdir(os.path.join(BUILD, "co")):
            built[t] = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(BUILD, "co", t)))
        every = sorted(set(sum(built.values(), [])))
        self.assertIn("topk_softmax", every)
        self.assertEqual(sorted(A.kernels()), every)
        if "gfx942" in built:
            self.assertEqual(sorted(A.kernels("gfx942")), built["gfx942"])
        self.assertEqual(A.kernels("gfx1201"), [])

    def test_stats_start_at_zero(self):
        rc, out = child("import aiter_aot as A; print(A.stats())")
        self.assertEqual(rc, 0, out)
        self.assertEqual(eval(out), {"modules_loaded": 0, "frames_decompressed": 0, "launches": 0,
                                     "device_loads": 0, "decompress_ns": 0, "module_load_ns": 0,
                                     "function_lookup_ns": 0})

    def test_no_device(self):
        # Debian's libamdhip64.so.5 is here and finds no GPU
        with self.assertRaises(A.Error) as e:
            A.init()
        self.assertIsInstance(e.exception, RuntimeError)
        self.assertEqual(e.exception.status, 2)
        self.assertEqual(e.exception.status_name, "no device")
        self.assertIn("no device", str(e.exception))
        self.assertEqual(e.exception.message, A.last_error())
        self.assertIn("libamdhip64", A.gpu_library())
        with self.assertRaises(A.Error) as e:
            A.device_target()
        self.assertEqual(e.exception.status, 2)

    def test_preload_no_device(self):
        for dev in (0, -1, 64):
            with self.assertRaises(A.Error) as e:
                A.preload(dev)
            self.assertEqual(e.exception.status, 2, dev)
        self.assertEqual(A.stats()["device_loads"], 0)

    def test_sizes(self):
        self.assertEqual(A.moe_sorting_sizes(4, 2, 8, 32), (4 * 2 + 8 * 32 - 2, (4 * 2 + 8 * 32 - 2 + 31) // 32,
                                                             A.moe_sorting_sizes(4, 2, 8, 32)[2]))
        self.assertGreater(A.moe_sorting_sizes(4, 2, 8)[2], 0)
        self.assertEqual(A.moe_sorting_sizes(4, 2, 8, 0)[0], 4 * 2 + 8 * 32 - 2)
        self.assertGreater(A.mhc_workspace_size(16, 4096), 0)
        self.assertEqual(A.mhc_workspace_size(16, 100), 0)
        # vLLM's size, numel + experts * (block_size - 1); moe_sorting's workspace and two ints
        self.assertEqual(A.moe_align_sizes(4, 2, 8, 16), (4 * 2 + 8 * 15, (4 * 2 + 8 * 15 + 15) // 16,
                                                          A.moe_sorting_sizes(4, 2, 8)[2] + 8))
        self.assertEqual(A.moe_align_sizes(5, 3, 7, 1)[:2], (15, 15))
        self.assertEqual(A.moe_align_sizes(4, 2, 8, 0)[:2], (0, 0))
        self.assertEqual(A.moe_align_sizes(4, 0, 8, 16), (0, 0, 0))


class Extension(unittest.TestCase):
    """What the shared object asks of the system and shows it."""

    so = N.__file__

    def test_needed(self):
        r = subprocess.run(["readelf", "-d", self.so], capture_output=True, text=True, check=True)
        needed = {l.split("[")[1].split("]")[0] for l in r.stdout.splitlines() if "(NEEDED)" in l}
        # glibc only: no libzstd, libelf, libamdhip64, libcuda, libpython or libtorch
        self.assertLessEqual(needed, {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
                                      "ld-linux-x86-64.so.2"}, needed)

    def test_exports_only_the_init(self):
        r = subprocess.run(["nm", "-D", "--defined-only", self.so], capture_output=True, text=True, check=True)
        self.assertEqual([l.split()[-1] for l in r.stdout.splitlines()], ["PyInit__native"])

    def test_abi3(self):
        self.assertTrue(self.so.endswith("_native.abi3.so"), self.so)


class DLPackNumPy(unittest.TestCase):
    def test_contiguous(self):
        a = np.zeros((3, 5), np.float32)
        d = N._describe(a)
        self.assertEqual((d["shape"], d["strides"], d["dtype"], d["device"]), ((3, 5), (5, 1), "float32", "cpu"))
        self.assertEqual(d["data"], a.ctypes.data)

    def test_views(self):
        a = np.zeros((4, 6), np.int32)
        v = a[1:, ::2]
        d = N._describe(v)
        self.assertEqual((d["shape"], d["strides"], d["dtype"]), ((3, 3), (6, 2), "int32"))
        self.assertEqual(d["data"], a.ctypes.data + 6 * 4)
        self.assertEqual(N._describe(a.T)["strides"], (1, 6))

    def test_dtypes(self):
        for dt, name in ((np.float16, "float16"), (np.float64, "float64"), (np.int64, "int64"), (np.uint8, "uint8"),
                         (np.int8, "int8"), (np.int16, "int16")):
            self.assertEqual(N._describe(np.zeros(2, dt))["dtype"], name)
        self.assertIn("code 5", N._describe(np.zeros(2, np.complex64))["dtype"])

    def test_cpu_refused(self):
        g = np.zeros((4, 8), np.float32)
        with self.assertRaises(ValueError) as e:
            A.topk_softmax(g, np.zeros((4, 2), np.float32), np.zeros((4, 2), np.int32), None, False)
        self.assertEqual(str(e.exception), "topk_softmax: gating_output is a CPU tensor (cpu); the op needs GPU "
                         "tensors (CUDA or ROCm): move it with .cuda() / .to(device)")

    def test_not_a_tensor(self):
        with self.assertRaises(TypeError) as e:
            A.topk_softmax([1.0, 2.0], None, None, None, False)
        self.assertIn("gating_output is a list; the op needs a tensor", str(e.exception))
        with self.assertRaises(TypeError) as e:
            A.topk_softmax(gpu((4, 8)), None, None, None, False)
        self.assertIn("topk_weights is None; the op needs a tensor", str(e.exception))


class DLPackCapsules(unittest.TestCase):
    def test_versioned_first(self):
        p = gpu((2, 3), "bfloat16", strides=(7, 1), byte_offset=64)
        d = N._describe(p)
        self.assertEqual((d["shape"], d["strides"], d["dtype"], d["device"], d["versioned"]),
                         ((2, 3), (7, 1), "bfloat16", "cuda:0", 1))
        self.assertEqual(d["data"], 0x10000 + 64)
        self.assertEqual(p.calls[0]["max_version"], (1, 0))
        self.assertEqual(p.deleted, 1)

    def test_unversioned_fallback(self):
        p = gpu((5,), "int64", version=None, device=(ROCM, 3))
        d = N._describe(p)
        self.assertEqual((d["shape"], d["strides"], d["dtype"], d["device"], d["versioned"]),
                         ((5,), (1,), "int64", "rocm:3", 0))
        self.assertEqual(len(p.calls), 2)  # max_version refused, then the plain call
        self.assertEqual(p.deleted, 1)

    def test_null_strides_are_compact(self):
        self.assertEqual(N._describe(gpu((2, 3, 4)))["strides"], (12, 4, 1))

    def test_capsule_renamed_and_not_reused(self):
        p = gpu((4,))
        for versioned in (True, False):
            cap = p.capsule(versioned)
            before = p.deleted
            N._describe(cap)
            self.assertEqual(capsule_name(cap), "used_dltensor_versioned" if versioned else "used_dltensor")
            self.assertEqual(p.deleted, before + 1)
            with self.assertRaises(ValueError) as e:
                N._describe(cap)
            self.assertIn("already consumed", str(e.exception))
            self.assertEqual(p.deleted, before + 1)  # no second delete

    def test_extent_refused(self):
        """Negative sizes, no shape, a NULL data pointer with elements (a byte offset on it too),
        more elements than a byte count holds: refused and deleted once; an empty tensor's NULL
        pointer is fine."""
        for p, text in ((gpu((4, -1)), "dimension 1 of size -1"), (gpu((4,), null_shape=True), "has no shape"),
                        (gpu((4,), data=0), "NULL data pointer"), (gpu((4,), data=0, byte_offset=256), "NULL data"),
                        (gpu((1 << 40, 1 << 40)), "more elements than a 64-bit byte count")):
            with self.assertRaises(ValueError) as e:
                N._describe(p)
            self.assertIn(text, str(e.exception))
            self.assertEqual(p.deleted, 1)
        self.assertEqual(N._describe(gpu((0, 4), data=0))["shape"], (0, 4))
        with self.assertRaises(ValueError) as e:
            N._describe((0x2000, (-1,), (1,), 5, 0))
        self.assertIn("dimension 0 of size -1", str(e.exception))

    def test_newer_major_refused(self):
        with self.assertRaises(ValueError) as e:
            N._describe(gpu((4,), version=(2, 1)))
        self.assertIn("DLPack version 2.1; this extension reads 1.x", str(e.exception))

    def test_odd_dtypes(self):
        self.assertIn("lanes", N._describe(gpu((4,), (FLOAT, 32, 4)))["dtype"])
        with self.assertRaises(TypeError) as e:
            A.topk_softmax(gpu((4, 8), (COMPLEX, 64, 1)), gpu((4, 2)), gpu((4, 2), "int32"), None, False)
        self.assertIn("gating_output has dtype DLPack dtype (code 5, 64 bits, 1 lanes); the op needs float32, "
                      "float16 or bfloat16", str(e.exception))
        self.assertEqual(N._describe(gpu((2,), (BFLOAT, 16, 1)))["dtype"], "bfloat16")

    def test_readonly_output(self):
        with self.assertRaises(ValueError) as e:
            A.topk_softmax(gpu((4, 8)), gpu((4, 2), readonly=True), gpu((4, 2), "int32"), None, False)
        self.assertIn("topk_weights is read-only", str(e.exception))

    def test_readonly_inputs_pass(self):
        # FMHA's outputs come before its cu_seqlens inputs: only out and softmax_lse must be writable
        q = lambda **kw: gpu((8, 2, 64), "bfloat16", **kw)
        cu = lambda **kw: gpu((2,), "int32", **kw)
        with self.assertRaises(A.Error) as e:
            A.fmha_varlen_fwd(q(readonly=True), q(), q(), q(), None, cu(readonly=True), cu(readonly=True), 8, 0.125)
        self.assertEqual(e.exception.status, 2)  # reached the library
        with self.assertRaises(ValueError) as e:
            A.fmha_varlen_fwd(q(), q(), q(), q(readonly=True), None, cu(), cu(), 8, 0.125)
        self.assertIn("out is read-only", str(e.exception))

    def test_devices(self):
        with self.assertRaises(ValueError) as e:
            A.topk_softmax(gpu((4, 8)), gpu((4, 2), device=(CUDA, 1)), gpu((4, 2), "int32"), None, False)
        self.assertIn("topk_weights is on cuda:1, gating_output on cuda:0", str(e.exception))
        with self.assertRaises(ValueError) as e:
            A.topk_softmax(gpu((4, 8), device=(CPU, 0)), gpu((4, 2)), gpu((4, 2), "int32"), None, False)
        self.assertIn("gating_output is a CPU tensor", str(e.exception))
        with self.assertRaises(ValueError) as e:
            A.topk_softmax(gpu((4, 8), device=(14, 0)), gpu((4, 2)), gpu((4, 2), "int32"), None, False)
        self.assertIn("needs a CUDA or ROCm device", str(e.exception))

    def test_deleted_on_error_too(self):
        ps = [gpu((4, 8)), gpu((4, 2)), gpu((4, 2), "int64")]
        with self.assertRaises(TypeError):
            A.topk_softmax(*ps, None, False)
        self.assertEqual([p.deleted for p in ps], [1, 1, 1])

    def test_stream_passed_to_producer(self):
        p = gpu((4, 8))
        with self.assertRaises(A.Error):
            A.topk_softmax(p, gpu((4, 2)), gpu((4, 2), "int32"), None, False, stream=12345)
        self.assertEqual(p.calls[0].get("stream"), 12345)
        q = gpu((4, 8))
        with self.assertRaises(A.Error):
            A.topk_softmax(q, gpu((4, 2)), gpu((4, 2), "int32"), None, False)
        self.assertNotIn("stream", q.calls[0])  # stream 0: none passed (CUDA forbids 0 there)


class Refusals(unittest.TestCase):
    def refused(self, exc, texts, fn, *args):
        """fn(*args) raises exc, the extension's own refusal (not aiter_aot.Error), whose message
        starts with "OP: " and holds each of texts."""
        with self.assertRaises(exc) as e:
            fn(*args)
        for text in (texts,) if isinstance(texts, str) else texts:
            self.assertIn(text, str(e.exception))
        self.assertTrue(str(e.exception).startswith(fn.__name__ + ": "), str(e.exception))
        self.assertNotIsInstance(e.exception, A.Error)


class TupleForm(Refusals):
    def test_describe(self):
        d = N._describe((0x2000, (3, 4), (8, 1), 2, 1))
        self.assertEqual((d["data"], d["shape"], d["strides"], d["dtype"], d["device"]),
                         (0x2000, (3, 4), (8, 1), "bfloat16", "cuda:1"))
        self.assertEqual(N._describe((0x2000, (3,), (1,), 0, -1))["device"], "cpu")
        self.assertEqual(N._describe((0x2000, (3,), (1,), 42, 0))["dtype"], "dtype code 42")

    def test_malformed(self):
        with self.assertRaises(TypeError):
            N._describe((0x2000, (3, 4), (1,), 0, 0))
        with self.assertRaises(TypeError):
            N._describe((0x2000, [3, 4], (4, 1), 0, 0))
        self.refused(TypeError, "tensor is a tuple of 4; the tuple form is (data_ptr, shape, strides, dtype_code, "
                     "device)", N._describe, (0x2000, (3,), (1,), 0))

    def test_data_ptr_range(self):
        """A data pointer is an int in [0, 2^64): anything else is refused, not wrapped around."""
        self.assertEqual(N._describe(((1 << 64) - 256, (3,), (1,), 0, 0))["data"], (1 << 64) - 256)
        for ptr in (-256, (1 << 64) + 0x100000):
            self.refused(ValueError, f"_describe: tensor's data_ptr = {ptr} does not fit a data pointer "
                         "(0 .. 2^64 - 1)", N._describe, (ptr, (3,), (1,), 0, 0))
        self.refused(TypeError, "tensor's data_ptr is a float; the op needs an int", N._describe,
                     (4096.0, (3,), (1,), 0, 0))
        # through an op: the argument's own name
        self.refused(ValueError, "topk_softmax: gating_output's data_ptr = -256 does not fit", A.topk_softmax,
                     (-256, (4, 8), (8, 1), 0, 0), t((4, 2)), t((4, 2), "int32"), None, True)

    def test_shape_and_strides_are_ints(self):
        self.refused(TypeError, "_describe: tensor's shape[1] is a float; the op needs an int", N._describe,
                     (0x2000, (3, 4.0), (4, 1), 0, 0))
        self.refused(TypeError, "_describe: tensor's strides[0] is a str; the op needs an int", N._describe,
                     (0x2000, (3, 4), ("4", 1), 0, 0))
        self.refused(ValueError, "_describe: tensor's shape[0] = 100000000000000000000 does not fit int64",
                     N._describe, (0x2000, (10 ** 20,), (1,), 0, 0))
        self.refused(ValueError, "_describe: tensor's device = 4294967296 does not fit int32", N._describe,
                     (0x2000, (3,), (1,), 0, 1 << 32))


_next = [0]


def t(shape, dtype="float32", align=256, strides=None):
    """A tuple-form tensor on cuda:0 at an address of its own, 256-byte aligned unless `align`
    says otherwise (never dereferenced)."""
    _next[0] += 1
    dt = {"float32": 0, "float16": 1, "bfloat16": 2, "int32": 3, "int64": 4, "uint8": 5}[dtype]
    if strides is None:
        strides, s = [], 1
        for n in reversed(shape):
            strides.insert(0, s)
            s *= n
    return (_next[0] << 20 | (align if align < 256 else 0), tuple(shape), tuple(strides), dt, 0)


class OpChecks(Refusals):
    """Every op: a valid call passes every check and reaches the library (which says "no device"
    here), and each kind of bad argument is refused with a message naming it."""

    def reaches_library(self, fn, *args):
        with self.assertRaises(A.Error) as e:
            fn(*args)
        self.assertEqual(e.exception.status, 2, str(e.exception))

    def test_topk_softmax(self):
        ok = [t((4, 8), "bfloat16"), t((4, 2)), t((4, 2), "int32"), t((4, 2), "int32"), True]
        self.reaches_library(A.topk_softmax, *ok)
        self.reaches_library(A.topk_softmax, *ok[:3], None, False)
        self.reaches_library(A.topk_softmax, t((4, 8), strides=(16, 1)), *ok[1:])  # strided rows
        bad = list(ok)
        bad[0] = t((4, 8), strides=(1, 4))
        self.refused(ValueError, "gating_output has strides (1, 4); the op needs (*, 1)", A.topk_softmax, *bad)
        bad = list(ok)
        bad[2] = t((4, 3), "int32")
        self.refused(ValueError, "topk_ids has shape (4, 3); the op needs [tokens, k] = (4, 2)", A.topk_softmax, *bad)
        bad = list(ok)
        bad[1] = t((4, 2), "float16")
        self.refused(TypeError, "topk_weights has dtype float16; the op needs float32", A.topk_softmax, *bad)
        bad = list(ok)
        bad[1] = t((4, 2), align=2)
        self.refused(ValueError, ("topk_weights: data pointer 0x", "is not 4-byte aligned; the op needs "
                     "4-byte alignment"), A.topk_softmax, *bad)
        bad = list(ok)
        bad[3] = t((4, 2), "int32", strides=(1, 4))
        self.refused(ValueError, "token_expert_indices has strides (1, 4); the op needs (2, 1)", A.topk_softmax, *bad)

    def test_topk_route(self):
        T_, E, k, V = 6, 256, 8, 100
        ok = [t((T_, E), "bfloat16"), t((E,)), None, None, t((T_, k)), t((T_, k), "int32"), "sigmoid", 8, 4, True, 2.5]
        self.reaches_library(A.topk_route, *ok)
        self.reaches_library(A.topk_route, t((T_, E), strides=(E + 8, 1)), None, None, None, *ok[4:6], "softmax")
        for dt in ("int32", "int64"):  # hash routing, int64 ids out
            self.reaches_library(A.topk_route, ok[0], None, t((T_,), dt), t((V, k), dt), t((T_, k)),
                                 t((T_, k), "int64"), "sqrtsoftplus", 0, 0, True, 1.5)
        # no rows: OK without a launch (nor a device)
        self.assertIsNone(A.topk_route(t((0, E)), None, None, None, t((0, k)), t((0, k), "int32")))
        bad = list(ok)
        bad[1] = t((E,), "bfloat16")
        self.refused(TypeError, "bias has dtype bfloat16; the op needs float32", A.topk_route, *bad)
        bad = list(ok)
        bad[1] = t((E - 1,))
        self.refused(ValueError, f"bias has shape ({E - 1},); the op needs [experts] = ({E},)", A.topk_route, *bad)
        bad = list(ok)
        bad[5] = t((T_, k), "float32")
        self.refused(TypeError, "topk_ids has dtype float32; the op needs int32 or int64", A.topk_route, *bad)
        bad = list(ok)
        bad[5] = t((T_, k + 1), "int32")
        self.refused(ValueError, f"topk_ids has shape ({T_}, {k + 1}); the op needs [tokens, k] = ({T_}, {k})",
                     A.topk_route, *bad)
        bad = list(ok)
        bad[0] = t((T_, E), "bfloat16", strides=(1, T_))
        self.refused(ValueError, f"gating_output has strides (1, {T_}); the op needs (*, 1)", A.topk_route, *bad)
        bad = list(ok)
        bad[5] = t((T_, k), "int64", align=4)
        self.refused(ValueError, ("topk_ids: data pointer 0x", "is not 8-byte aligned"), A.topk_route, *bad)
        bad = list(ok)
        bad[2] = t((T_,), "int64")
        self.refused(ValueError, "tid2eid is None; hash routing (input_ids) needs it ([vocab, k])", A.topk_route, *bad)
        bad = list(ok)
        bad[3] = t((V, k), "int64")
        self.refused(ValueError, "tid2eid is given without input_ids; pass both, or neither", A.topk_route, *bad)
        bad = list(ok)
        bad[2], bad[3] = t((T_,), "int64"), t((V, k), "int32")
        self.refused(TypeError, "tid2eid has dtype int32; the op needs int64", A.topk_route, *bad)
        bad[3] = t((V, k - 1), "int64")
        self.refused(ValueError, f"tid2eid has shape ({V}, {k - 1}); the op needs [vocab, k], of input_ids' dtype = "
                     f"(*, {k})", A.topk_route, *bad)
        bad[2], bad[3] = t((T_ + 1,), "int64"), t((V, k), "int64")
        self.refused(ValueError, f"input_ids has shape ({T_ + 1},); the op needs [tokens] = ({T_},)", A.topk_route,
                     *bad)
        with self.assertRaises(ValueError) as e:
            A.topk_route(*ok[:6], "relu")
        self.assertEqual(str(e.exception), "topk_route: scoring 'relu'; the op takes 'softmax', 'sigmoid' or "
                         "'sqrtsoftplus'")
        # what only the library checks: ArgumentError, nothing launched (the device is never asked)
        for args, text in ((ok[:6] + [7] + ok[7:], "scoring 7 is not SOFTMAX, SIGMOID or SQRT_SOFTPLUS"),
                           (ok[:7] + [6] + ok[8:], "n_group = 6 does not divide experts = 256"),
                           (ok[:8] + [0] + ok[9:], "topk_group = 0; need 1 <= topk_group <= n_group = 8"),
                           (ok[:10] + [float("inf")], "routed_scaling_factor is not finite")):
            with self.assertRaises(A.ArgumentError) as e:
                A.topk_route(*args)
            self.assertEqual(e.exception.status, 1)
            self.assertIn("topk_route: " + text, str(e.exception))

    def test_moe_align_block_size(self):
        T_, k, E, bs = 5, 4, 64, 16
        P, B, W = A.moe_align_sizes(T_, k, E, bs)
        ok = [t((T_, k), "int32"), None, t((P,), "int32"), t((B,), "int32"), t((1,), "int32"), t((W,), "uint8"), E, bs]
        self.reaches_library(A.moe_align_block_size, *ok)
        self.reaches_library(A.moe_align_block_size, ok[0], t((E,), "int32"), *ok[2:])
        bad = list(ok)
        bad[0] = t((T_, k), "int64")
        self.refused(TypeError, "topk_ids has dtype int64; the op needs int32", A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[1] = t((E // 2,), "int32")
        self.refused(ValueError, f"expert_map has shape ({E // 2},); the op needs [num_experts] = ({E},)",
                     A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[2] = t((P - 1,), "int32")
        self.refused(ValueError, f"sorted_token_ids has shape ({P - 1},); the op needs [max_num_tokens_padded] = "
                     f"({P},)", A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[3] = t((B + 1,), "int32")
        self.refused(ValueError, f"expert_ids has shape ({B + 1},); the op needs [max_num_m_blocks] = ({B},)",
                     A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[4] = t((2,), "int32")
        self.refused(ValueError, "num_tokens_post_pad has shape (2,); the op needs [1] = (1,)",
                     A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[3] = t((B,), "float32")
        self.refused(TypeError, "expert_ids has dtype float32; the op needs int32", A.moe_align_block_size, *bad)
        bad = list(ok)
        bad[5] = t((W,), "uint8", align=8)
        self.refused(ValueError, ("workspace: data pointer 0x", "is not 16-byte aligned"), A.moe_align_block_size,
                     *bad)
        # the library's own checks: block_size (whatever the outputs' sizes), a small workspace
        for args, text in ((ok[:7] + [0], "block_size = 0; supported 1..256"),
                           (ok[:5] + [t((W - 4,), "uint8")] + ok[6:], f"workspace_size {W - 4} < {W}"),
                           ([t((0, k), "int32")] + ok[1:], "tokens = 0; supported 1..2^24-1")):
            with self.assertRaises(A.ArgumentError) as e:
                A.moe_align_block_size(*args)
            self.assertEqual(e.exception.status, 1)
            self.assertIn("moe_align_block_size: " + text, str(e.exception))

    def test_moe_sorting(self):
        T_, k, E, bs = 5, 2, 8, 16
        P, B, W = A.moe_sorting_sizes(T_, k, E, bs)
        ok = [t((T_, k), "int32"), t((T_, k)), None, t((P,), "int32"), t((P,)), t((B,), "int32"), t((2,), "int32"),
              None, t((W,), "uint8"), E, bs]
        self.reaches_library(A.moe_sorting, *ok)
        ok2 = list(ok)
        ok2[2], ok2[7] = t((E,), "int32"), t((T_, 64), "bfloat16")
        self.reaches_library(A.moe_sorting, *ok2)
        bad = list(ok)
        bad[3] = t((P + 1,), "int32")
        self.refused(ValueError, f"sorted_token_ids has shape ({P + 1},); the op needs [max_num_tokens_padded] = "
                     f"({P},)", A.moe_sorting, *bad)
        bad = list(ok)
        bad[9] = -1  # named itself, not through the outputs sized from it
        self.refused(ValueError, "num_experts = -1; supported 1..1024", A.moe_sorting, *bad)
        bad = list(ok)
        bad[8] = t((-1,), "uint8")  # a negative size would have read as 2^64 - 1 bytes of workspace
        self.refused(ValueError, "workspace has dimension 0 of size -1", A.moe_sorting, *bad)
        bad = list(ok)
        bad[5] = t((B - 1,), "int32")
        self.refused(ValueError, "sorted_expert_ids has shape", A.moe_sorting, *bad)
        bad = list(ok)
        bad[2] = t((E + 1,), "int32")
        self.refused(ValueError, f"expert_mask has shape ({E + 1},); the op needs [num_experts] = ({E},)",
                     A.moe_sorting, *bad)
        bad = list(ok)
        bad[0] = t((T_, k), "int64")
        self.refused(TypeError, "topk_ids has dtype int64; the op needs int32", A.moe_sorting, *bad)
        bad = list(ok)
        bad[6] = t((3,), "int32")
        self.refused(ValueError, "num_valid_ids has shape (3,); the op needs [2] = (2,)", A.moe_sorting, *bad)
        bad = list(ok)
        bad[7] = t((T_, 64), "bfloat16", align=8)
        self.refused(ValueError, ("moe_buf: data pointer 0x", "is not 16-byte aligned; the op needs "
                     "16-byte alignment"), A.moe_sorting, *bad)

    def test_mhc_prenorm_gemm(self):
        T_, C, S = 3, 256, 4
        ok = [t((T_, 4, C), "bfloat16"), t((24, 4 * C)), t((S, T_, 24)), t((S, T_)), False]
        self.reaches_library(A.mhc_prenorm_gemm, *ok)
        self.reaches_library(A.mhc_prenorm_gemm, t((T_, C), "bfloat16"), t((24, C)), *ok[2:4], True)
        bad = list(ok)
        bad[1] = t((24, C))
        self.refused(ValueError, f"fn has shape (24, {C}); the op needs [24, 4 * hidden] = (24, {4 * C})",
                     A.mhc_prenorm_gemm, *bad)
        bad = list(ok)
        bad[0] = t((T_, 4, C), "bfloat16", align=2)
        self.refused(ValueError, ("residual: data pointer 0x", "is not 16-byte aligned; the op needs "
                     "16-byte alignment"), A.mhc_prenorm_gemm, *bad)
        bad = list(ok)
        bad[3] = t((S + 1, T_))
        self.refused(ValueError, f"sqrsum has shape ({S + 1}, {T_}); the op needs [splits, tokens] = ({S}, {T_})",
                     A.mhc_prenorm_gemm, *bad)

    def test_mhc_pre(self):
        T_, C, S = 3, 256, 2
        ok = [t((S, T_, 24)), t((S, T_)), t((3,)), t((24,)), t((T_, 4, C), "bfloat16"), t((C,), "bfloat16"),
              t((T_, 4)), t((T_, 4, 4)), t((T_, C), "bfloat16"), None, PARAMS, False]
        self.reaches_library(A.mhc_pre, *ok)
        bc = list(ok)
        bc[4], bc[9], bc[11] = t((T_, C), "bfloat16"), t((T_, 4, C), "bfloat16"), True
        self.reaches_library(A.mhc_pre, *bc)
        bad = list(bc)
        bad[9] = None
        self.refused(ValueError, "residual_out is None; broadcast needs it", A.mhc_pre, *bad)
        bad = list(ok)
        bad[9] = t((T_, 4, C), "bfloat16")
        self.refused(ValueError, "residual_out is given without broadcast", A.mhc_pre, *bad)
        bad = list(ok)
        bad[5] = t((C,))
        self.refused(TypeError, "norm_weight has dtype float32; the op needs bfloat16", A.mhc_pre, *bad)
        bad = list(ok)
        bad[10] = (1e-6, 1e-6, 1e-6, 2.0)
        self.refused(TypeError, "params must be a tuple (rms_eps, pre_eps", A.mhc_pre, *bad)
        bad = list(ok)
        bad[7] = t((T_, 16))
        self.refused(ValueError, f"comb has shape ({T_}, 16); the op needs [tokens, 4, 4] = ({T_}, 4, 4)",
                     A.mhc_pre, *bad)

    def test_mhc_pre_full(self):
        T_, C = 3, 256
        W = max(A.mhc_workspace_size(T_, C), 16)
        ok = [t((T_, 4, C), "bfloat16"), t((24, 4 * C)), t((3,)), t((24,)), None, t((T_, 4)), t((T_, 4, 4)),
              t((T_, C), "bfloat16"), None, t((W,), "uint8"), PARAMS, False]
        self.reaches_library(A.mhc_pre_full, *ok)
        bad = list(ok)
        bad[3] = t((23,))
        self.refused(ValueError, "base has shape (23,); the op needs [24] = (24,)", A.mhc_pre_full, *bad)
        bad = list(ok)
        bad[7] = t((T_, C + 256), "bfloat16")
        self.refused(ValueError, "layer_input has shape", A.mhc_pre_full, *bad)

    def test_mhc_post(self):
        T_, C = 3, 512
        ok = [t((T_, 4, 4)), t((T_, 4)), t((T_, 4, C), "bfloat16"), t((T_, C), "bfloat16"), t((T_, 4, C), "bfloat16")]
        self.reaches_library(A.mhc_post, *ok)
        bad = list(ok)
        bad[1] = t((T_, 4, 1))
        self.refused(ValueError, f"post has shape ({T_}, 4, 1); the op needs [tokens, 4] = ({T_}, 4)",
                     A.mhc_post, *bad)
        bad = list(ok)
        bad[2] = t((T_, 4, C), "bfloat16", strides=(4 * C, 1, 4))
        self.refused(ValueError, "residual has strides", A.mhc_post, *bad)

    def test_mhc_fused_post_pre(self):
        T_, C, S = 3, 256, 4
        ok = [t((T_, 4, 4)), t((T_, 4)), t((T_, 4, C), "bfloat16"), t((T_, C), "bfloat16"), t((24, 4 * C)),
              t((T_, 4, C), "bfloat16"), t((S, T_, 24)), t((S, T_))]
        self.reaches_library(A.mhc_fused_post_pre, *ok)
        bad = list(ok)
        bad[5] = t((T_ + 1, 4, C), "bfloat16")
        self.refused(ValueError, "residual_out has shape", A.mhc_fused_post_pre, *bad)

    def test_mhc_pre_delayed(self):
        T_, C = 3, 256
        W = max(A.mhc_workspace_size(T_, C), 16)
        ok = [t((T_, 4, C), "bfloat16"), None, t((24, 4 * C)), t((3,)), t((24,)), t((T_, 4)), t((C,), "bfloat16"),
              t((T_, 4)), t((T_, 4, 4)), t((T_, C), "bfloat16"), t((T_, 4)), t((W,), "uint8"), PARAMS]
        self.reaches_library(A.mhc_pre_delayed, *ok)
        first = list(ok)  # no pre_mix, no norm, the first layer's [T, C] projection input
        first[1], first[2], first[5], first[6] = t((T_, C), "bfloat16"), t((24, C)), None, None
        self.reaches_library(A.mhc_pre_delayed, *first)
        bad = list(ok)
        bad[1] = t((T_, 2 * C), "bfloat16")
        self.refused(ValueError, f"x has {2 * C} values a token; the op needs hidden ({C}) or 4 * hidden",
                     A.mhc_pre_delayed, *bad)
        bad = list(first)
        bad[2] = t((24, 4 * C))
        self.refused(ValueError, f"fn has shape (24, {4 * C}); the op needs [24, x's width] = (24, {C})",
                     A.mhc_pre_delayed, *bad)
        bad = list(ok)
        bad[5] = t((T_, 4, 1))
        self.refused(ValueError, f"pre_mix has shape ({T_}, 4, 1); the op needs [tokens, 4] = ({T_}, 4)",
                     A.mhc_pre_delayed, *bad)
        bad = list(ok)
        bad[10] = t((T_, 4), "bfloat16")
        self.refused(TypeError, "next_pre_mix has dtype bfloat16; the op needs float32", A.mhc_pre_delayed, *bad)
        bad = list(ok)
        bad[9] = t((T_, C), "bfloat16", align=8)
        self.refused(ValueError, ("layer_input: data pointer 0x", "is not 16-byte aligned"), A.mhc_pre_delayed, *bad)
        bad = list(ok)
        bad[11] = t((16,), "uint8")  # the library's own check: INVALID_ARGUMENT, naming the workspace
        with self.assertRaises(A.ArgumentError) as e:
            A.mhc_pre_delayed(*bad)
        self.assertIn("mhc_pre_delayed: workspace_size 16 <", str(e.exception))

    def test_mhc_fused_post_pre_delayed(self):
        T_, C = 3, 512
        W = max(A.mhc_workspace_size(T_, C), 16)
        ok = [t((T_, C), "bfloat16"), t((T_, 4, C), "bfloat16"), t((T_, 4)), t((T_, 4, 4)), t((24, 4 * C)), t((3,)),
              t((24,)), t((T_, 4)), t((C,), "bfloat16"), t((T_, 4, C), "bfloat16"), t((T_, 4)), t((T_, 4, 4)),
              t((T_, C), "bfloat16"), t((T_, 4)), t((T_, C), "bfloat16"), t((W,), "uint8"), PARAMS]
        self.reaches_library(A.mhc_fused_post_pre_delayed, *ok)
        plain = list(ok)
        plain[7], plain[8], plain[14] = None, None, None
        self.reaches_library(A.mhc_fused_post_pre_delayed, *plain)
        bad = list(ok)
        bad[14] = t((T_ + 1, C), "bfloat16")
        self.refused(ValueError, f"aux has shape ({T_ + 1}, {C}); the op needs [tokens, hidden] = ({T_}, {C})",
                     A.mhc_fused_post_pre_delayed, *bad)
        bad = list(ok)
        bad[0] = t((T_, 4, C), "bfloat16")
        self.refused(ValueError, "x has shape", A.mhc_fused_post_pre_delayed, *bad)
        bad = list(ok)
        bad[2] = t((T_, 4, 1))
        self.refused(ValueError, "post_in has shape", A.mhc_fused_post_pre_delayed, *bad)
        bad = list(ok)
        bad[16] = (1e-6,)
        self.refused(TypeError, "params must be a tuple", A.mhc_fused_post_pre_delayed, *bad)
        bad = list(ok)
        bad[9] = bad[1]  # the library's own check
        with self.assertRaises(A.ArgumentError) as e:
            A.mhc_fused_post_pre_delayed(*bad)
        self.assertIn("residual_out overlaps residual", str(e.exception))

    def test_mhc_head(self):
        T_, C = 3, 256
        ok = [t((T_, 4, C), "bfloat16"), t((4, 4 * C)), t((1,)), t((4,)), t((T_, C), "bfloat16"), 1e-6, 1e-6]
        self.reaches_library(A.mhc_head, *ok)
        bad = list(ok)
        bad[1] = t((24, 4 * C))
        self.refused(ValueError, f"fn has shape (24, {4 * C}); the op needs [4, 4 * hidden] = (4, {4 * C})",
                     A.mhc_head, *bad)

    def test_fmha(self):
        Tq, Tk, hq, hk, d = 10, 12, 8, 2, 128
        ok = [t((Tq, hq, d), "bfloat16"), t((Tk, hk, d), "bfloat16"), t((Tk, hk, d), "bfloat16"),
              t((Tq, hq, d), "bfloat16"), t((hq, Tq)), t((3,), "int32"), t((3,), "int32"), 8, 0.088, 0.0, True, -1,
              -1]
        self.reaches_library(A.fmha_varlen_fwd, *ok)
        self.reaches_library(A.fmha_varlen_fwd, *ok[:4], None, *ok[5:])
        # a strided token dimension (q sliced out of a packed qkv tensor) is fine
        self.reaches_library(A.fmha_varlen_fwd, t((Tq, hq, d), "bfloat16", strides=(3 * hq * d, d, 1)), *ok[1:])
        bad = list(ok)
        bad[1] = t((Tk, hk, d), "float16")
        self.refused(TypeError, "k has dtype float16; the op needs bfloat16", A.fmha_varlen_fwd, *bad)
        for i, name in ((0, "q"), (1, "k"), (3, "out")):  # expand()ed rows: the op would read 0 as packed
            bad = list(ok)
            bad[i] = t(ok[i][1], "bfloat16", strides=(0, d, 1))
            self.refused(ValueError, name + ": its rows are 0 elements apart", A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[0] = t((Tq, hq, d), "bfloat16", strides=(hq * d, 1, hq))
        self.refused(ValueError, "q has strides", A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[3] = t((Tq, hq, 64), "bfloat16")
        self.refused(ValueError, f"out has shape ({Tq}, {hq}, 64); the op needs [total_q, hq, d_v] = ({Tq}, {hq}, "
                     f"{d})", A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[6] = t((4,), "int32")
        self.refused(ValueError, "cu_seqlens_k has shape (4,)", A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[5], bad[6] = t((1,), "int32"), t((1,), "int32")
        self.refused(ValueError, "cu_seqlens_q has 1 entries; the op needs batch + 1 >= 2", A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[2] = t((Tk, hk, d), "bfloat16", align=8)
        self.refused(ValueError, ("v: data pointer 0x", "is not 16-byte aligned; the op needs "
                     "16-byte alignment"), A.fmha_varlen_fwd, *bad)
        bad = list(ok)
        bad[4] = t((Tq, hq))
        self.refused(ValueError, f"softmax_lse has shape ({Tq}, {hq}); the op needs [hq, total_q] = ({hq}, {Tq})",
                     A.fmha_varlen_fwd, *bad)

    def test_scalar_arguments(self):
        """An int, float or bool argument, and the stream, of the wrong type or out of range:
        refused naming the op and the argument (not Python's OverflowError / TypeError that name
        neither); valid values of any int-like type pass as before."""
        T_, k, E, bs = 5, 4, 64, 16
        P, B, W = A.moe_align_sizes(T_, k, E, bs)
        align = [t((T_, k), "int32"), None, t((P,), "int32"), t((B,), "int32"), t((1,), "int32"), t((W,), "uint8"), E,
                 bs]
        self.reaches_library(A.moe_align_block_size, *align, (1 << 63) - 1)
        self.reaches_library(A.moe_align_block_size, *align[:6], np.int64(E), np.int32(bs), np.uint64(7))
        self.refused(ValueError, "num_experts = 2147483648 does not fit int32", A.moe_align_block_size,
                     *align[:6], 1 << 31, bs)
        self.refused(TypeError, "num_experts is a float; the op needs an int", A.moe_align_block_size,
                     *align[:6], 64.0, bs)
        for stream in (1 << 64, 1 << 63):
            self.refused(ValueError, f"stream = {stream} does not fit int64", A.moe_align_block_size, *align, stream)
        self.refused(TypeError, "stream is a str; the op needs an int", A.moe_align_block_size, *align, "0")
        route = [t((6, 256), "bfloat16"), None, None, None, t((6, 8)), t((6, 8), "int32"), 1, 8, 4, True, 2.5]
        self.refused(ValueError, "topk_route: n_group = 2147483648 does not fit int32", A.topk_route,
                     *route[:7], 1 << 31, *route[8:])
        self.refused(ValueError, "routed_scaling_factor = 1e+300 does not fit float32", A.topk_route,
                     *route[:10], 1e300)
        self.refused(TypeError, "routed_scaling_factor is a str; the op needs a float", A.topk_route,
                     *route[:10], "2.5")
        self.refused(TypeError, "renormalize is a ndarray; the op needs a bool", A.topk_route, *route[:9],
                     np.ones(2), 2.5)
        fmha = [t((10, 8, 128), "bfloat16"), t((12, 2, 128), "bfloat16"), t((12, 2, 128), "bfloat16"),
                t((10, 8, 128), "bfloat16"), None, t((3,), "int32"), t((3,), "int32"), 8, 0.088]
        self.refused(TypeError, "fmha_varlen_fwd: max_seqlen_q is a float; the op needs an int", A.fmha_varlen_fwd,
                     *fmha[:7], 8.0, 0.088)
        self.refused(ValueError, "window_left = -2147483649 does not fit int32", A.fmha_varlen_fwd, *fmha, 0.0,
                     False, -(1 << 31) - 1)
        params = list(PARAMS)
        params[4] = 20.0
        self.refused(TypeError, "mhc_pre_delayed: params' sinkhorn_iters is a float; the op needs an int",
                     N.mhc_pre_delayed, *[None] * 12, tuple(params))
        self.refused(ValueError, "moe_sorting_sizes: experts = 2147483648 does not fit int32", A.moe_sorting_sizes,
                     4, 2, 1 << 31)
        self.refused(TypeError, "mhc_splits: hidden is a float; the op needs an int", A.mhc_splits, 4, 4096.0)
        self.refused(ValueError, "preload: device = 4294967296 does not fit int32", A.preload, 1 << 32)

    def test_argument_count(self):
        """Too few or too many arguments: Python's message, naming the op."""
        for name in ("topk_softmax", "moe_sorting", "moe_sorting_sizes", "topk_route", "moe_align_block_size",
                     "moe_align_sizes", "mhc_prenorm_gemm", "mhc_pre", "mhc_pre_full", "mhc_post",
                     "mhc_fused_post_pre", "mhc_head", "mhc_pre_delayed", "mhc_fused_post_pre_delayed",
                     "mhc_workspace_size", "mhc_splits", "fmha_varlen_fwd", "preload", "_describe", "_allow_cpu"):
            with self.assertRaises(TypeError) as e:
                getattr(N, name)()
            self.assertRegex(str(e.exception), "^" + name + r"\(\) takes (at least|exactly) \d+ arguments? \(0 given\)")
        with self.assertRaises(TypeError) as e:
            N.topk_softmax(t((4, 8)), t((4, 2)), t((4, 2), "int32"))
        self.assertEqual(str(e.exception), "topk_softmax() takes at least 5 arguments (3 given)")
        with self.assertRaises(TypeError) as e:
            N.mhc_post(*[None] * 7)
        self.assertEqual(str(e.exception), "mhc_post() takes at most 6 arguments (7 given)")


STUB_FIRST = """
import ctypes, os
stub = ctypes.CDLL({stub!r}, os.RTLD_NOW | os.RTLD_GLOBAL)   # as TileLang loads libhip_stub.so
import aiter_aot as A
try:
    A.init(); print("init ok")
except A.Error as e:
    print("init", e.status, e)
print("library", A.gpu_library())
print("stub calls", ctypes.c_int.in_dll(stub, "hipstub_calls").value)
"""


class Interposition(unittest.TestCase):
    """The AITER report's reproducer: a hip* stub loaded RTLD_GLOBAL before the package."""

    stub = os.path.join(BUILD, "tests/interpose/libhipstub.so")

    def test_stub_first(self):
        rc, out = child(STUB_FIRST.format(stub=self.stub))
        self.assertEqual(rc, 0, out)
        self.assertIn("init 2 init: HIP reports no device", out)  # the real library's answer
        self.assertRegex(out, r"library /\S*libamdhip64\.so\.5")
        self.assertIn("stub calls 0", out)

    def test_global_symbols_reach_the_stub(self):
        rc, out = child(STUB_FIRST.format(stub=self.stub), {"AITER_AOT_GLOBAL_SYMBOLS": "1"})
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"stub calls [1-9]")


FAKE_DEVICE = """
import aiter_aot as A, numpy as np
from aiter_aot import _native as N
A.preload(0)
s = A.stats()
print("preload", s["device_loads"], s["modules_loaded"] > 0)
A.preload(0)
print("again", A.stats()["device_loads"], A.stats()["modules_loaded"] == s["modules_loaded"])
try:
    A.preload(1)
except A.Error as e:
    print("preload(1)", e.status, e.message)
N._allow_cpu(True)   # the fake device records launches without running them
g = np.zeros((4, 8), np.float32); w = np.zeros((4, 2), np.float32); i = np.zeros((4, 2), np.int32)
A.topk_softmax(g, w, i, None, True)
print("launches", A.stats()["launches"], A.device_target())
A.topk_route(np.zeros((4, 64), np.float32), np.zeros(64, np.float32), None, None, w, i, "sigmoid", 8, 2, True, 2.5)
A.topk_route(g, None, np.zeros(4, np.int64), np.zeros((9, 2), np.int64), w, np.zeros((4, 2), np.int64),
             "sqrtsoftplus")
P, B, W = A.moe_align_sizes(4, 2, 8, 16)
A.moe_align_block_size(i, None, np.zeros(P, np.int32), np.zeros(B, np.int32), np.zeros(1, np.int32),
                       np.zeros(W, np.uint8), 8, 16)
print("routers", A.stats()["launches"])
try:   # what only the library checks: experts > 1024
    A.topk_softmax(np.zeros((4, 2000), np.float32), w, i, None, True)
except A.Error as e:
    print("library check", type(e).__name__, isinstance(e, ValueError), e.status, e)
"""


class FakeDevice(unittest.TestCase):
    """The whole path on tests/fakegpu's HIP double (one MI300X that records launches)."""

    def test_preload_and_launch(self):
        lib = os.path.join(BUILD, "tests/fakegpu/hip")
        if not os.path.exists(os.path.join(lib, "libamdhip64.so.7")):
            self.skipTest("no fake HIP library in this build")
        if not any("gfx942" in x for x in A.targets()):
            self.skipTest("gfx942 is not embedded")
        rc, out = child(FAKE_DEVICE, {"LD_LIBRARY_PATH": lib})
        self.assertEqual(rc, 0, out)
        self.assertIn("preload 1 True", out)
        self.assertIn("again 1 True", out)
        self.assertIn("preload(1) 1 aiter_aot_preload: device = 1; this process sees 1 device", out)
        self.assertIn("launches 1 amdgcn-amd-amdhsa--gfx942", out)
        self.assertIn("routers 6", out)  # topk_route twice, then moe_align_block_size's three kernels
        self.assertIn("library check ArgumentError True 1 topk_softmax: topk_softmax: experts = 2000", out)


if __name__ == "__main__":
    r = unittest.main(argv=sys.argv[:1], exit=False, verbosity=1).result
    bad = len(r.failures) + len(r.errors)
    print(f"{r.testsRun - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)
