"""Builds the aiter_aot wheel: one abi3 extension (CPython 3.9+) with libaiter_aot.a linked in.

The library comes from a built dist/ (make dist): AITER_AOT_DIST names it, default ../dist
next to this folder. `make python` runs this through tools/make-python-wheel."""
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

here = os.path.dirname(os.path.abspath(__file__))
dist = os.path.abspath(os.environ.get("AITER_AOT_DIST", os.path.join(here, "..", "dist")))
archive = os.path.join(dist, "lib", "libaiter_aot.a")


class BuildExt(build_ext):
    def run(self):
        if not os.path.exists(archive):
            raise SystemExit(f"aiter_aot: {archive} not found; run `make dist` first (or set AITER_AOT_DIST)")
        super().run()


native = Extension(
    "aiter_aot._native",
    sources=["aiter_aot/_native.c"],
    include_dirs=[os.path.join(dist, "include"), "aiter_aot"],
    define_macros=[("Py_LIMITED_API", "0x03090000")],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-fvisibility=hidden"],
    # the archive's own symbols stay inside the extension (--exclude-libs), so a libaiter_aot.so
    # elsewhere in the process and this copy never bind to each other
    extra_objects=[archive],
    extra_link_args=["-Wl,--exclude-libs,ALL", "-Wl,-Bsymbolic", "-Wl,--as-needed"],
    libraries=["dl", "pthread"],
    py_limited_api=True,
)

setup(
    name="aiter_aot",
    version="0.1.0",
    description="Ahead-of-time compiled GPU kernels (MoE routing, mHC, FMHA varlen) for PyTorch users",
    packages=["aiter_aot", "aiter_aot.aiter", "aiter_aot.vllm"],
    ext_modules=[native],
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.9",
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
    zip_safe=False,
)
