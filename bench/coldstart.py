"""Cold start to the first completed launch, in fresh processes: aiter-aot's embedded bundle
(tests/gpu/gpu_test --coldstart: CUDA init, bundle decompress, cuModuleLoadData, launch, sync)
against the JIT path users know, NVRTC compile of the same kernel source + cuModuleLoadData +
launch + sync (cuda-python bindings). Both clocks start at the top of the program, after the
process and its libraries are loaded; whole-process wall times are reported too.
Usage: python3 bench/coldstart.py BUILDDIR [RUNS]"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NVRTC_CHILD = r'''
import ctypes, os, sys, time
t0 = time.perf_counter()
from cuda.bindings import driver as cu, nvrtc
root, shim = sys.argv[1], sys.argv[2]
cu.cuInit(0)
_, dev = cu.cuDeviceGet(0)
_, ctx = cu.cuDevicePrimaryCtxRetain(dev)
cu.cuCtxSetCurrent(ctx)
t_init = time.perf_counter()
src = open(os.path.join(root, "kernels/moe/topk_softmax.hip"), "rb").read()
err, prog = nvrtc.nvrtcCreateProgram(src, b"topk_softmax.cu", 0, [], [])
opts = [b"-arch=sm_90a", b"-std=c++17", b"-I" + os.path.join(root, "kernels/include").encode(),
        b"-I" + os.path.join(root, "kernels/moe").encode(), b"-I" + shim.encode()]
err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
    _, n = nvrtc.nvrtcGetProgramLogSize(prog); log = b" " * n; nvrtc.nvrtcGetProgramLog(prog, log); print(log.decode()); sys.exit(1)
_, n = nvrtc.nvrtcGetCUBINSize(prog)
cubin = b" " * n
nvrtc.nvrtcGetCUBIN(prog, cubin)
err, mod = cu.cuModuleLoadData(cubin)
err, fn = cu.cuModuleGetFunction(mod, b"topk_softmax_v8")
T, E, K = 64, 128, 8
_, g = cu.cuMemAlloc(T * E * 2); _, w = cu.cuMemAlloc(T * K * 4); _, i = cu.cuMemAlloc(T * K * 4)
# aot_topk_kargs: 4 pointers, int64 stride, 6 int32
import struct
kargs = struct.pack("<QQQQqiiiiii", int(g), int(w), int(i), 0, E, T, E, K, 1, 2, 0)
buf = ctypes.create_string_buffer(kargs)
params = (ctypes.c_void_p * 1)(ctypes.addressof(buf))
err, = cu.cuLaunchKernel(fn, (T + 7) // 8, 1, 1, 256, 1, 1, 0, 0, ctypes.addressof(params), 0)
err2, = cu.cuCtxSynchronize()
print("coldstart_ms %.3f cuda_init_ms %.3f launch %s sync %s" % ((time.perf_counter() - t0) * 1e3,
      (t_init - t0) * 1e3, err, err2))
'''


def run(cmd):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1e3
    m = re.search(r"coldstart_ms ([0-9.]+) cuda_init_ms ([0-9.]+)", out.stdout)
    if not m or out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {out.stdout} {out.stderr}")
    total, init = float(m.group(1)), float(m.group(2))
    return total, wall, total - init


def main():
    shim = tempfile.mkdtemp()
    with open(os.path.join(shim, "stdint.h"), "w") as f:  # NVRTC has no system headers
        f.write("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
                "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
                "typedef unsigned long long uint64_t;\n")
    child = os.path.join(shim, "nvrtc_child.py")
    with open(child, "w") as f:
        f.write(NVRTC_CHILD)
    ours = [run([os.path.join(build, "tests/gpu/gpu_test"), "--coldstart"]) for _ in range(runs)]
    jit = [run([sys.executable, child, root, shim]) for _ in range(runs)]
    med = lambda xs, j: statistics.median(x[j] for x in xs)  # noqa: E731
    print(f"cold start to first completed launch, median of {runs} fresh processes:")
    print(f"  aiter-aot embedded bundle: {med(ours, 0):8.1f} ms in-process, {med(ours, 1):8.1f} ms whole process")
    print(f"  NVRTC compile + load:      {med(jit, 0):8.1f} ms in-process, {med(jit, 1):8.1f} ms whole process")
    print(f"  after CUDA init (context exists): aiter-aot {med(ours, 2):.2f} ms, NVRTC {med(jit, 2):.2f} ms")
    print(f"  ratio (in-process): NVRTC / aiter-aot = {med(jit, 0) / med(ours, 0):.1f}x; "
          f"after CUDA init: {med(jit, 2) / med(ours, 2):.1f}x")


main()
