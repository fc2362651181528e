"""GPU interposition check: a cu* stub (tests/interpose/libcustub.so) is loaded RTLD_GLOBAL
first, then libaiter_aot.so (the Python-extension case) launches topk_softmax from its bundle
on PyTorch tensors. The output must match torch and the stub must see no call; with
AITER_AOT_GLOBAL_SYMBOLS=1 (a child process) the stub must be reached.
Usage: python3 bench/interpose_cuda.py BUILDDIR"""
import ctypes
import os
import subprocess
import sys

build = sys.argv[1]
stub = ctypes.CDLL(os.path.join(build, "tests/interpose/libcustub.so"), mode=ctypes.RTLD_GLOBAL)
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402

lib = A.load(os.path.join(build, "lib/libaiter_aot.so"))
g = torch.randn(1000, 256, device="cuda", dtype=torch.bfloat16)
w = torch.full((1000, 8), float("nan"), device="cuda")
i = torch.full((1000, 8), -1, device="cuda", dtype=torch.int32)
status = lib.aiter_aot_topk_softmax(A.topk_args(g, w, i, None, 8, True), torch.cuda.current_stream().cuda_stream)
torch.cuda.synchronize()
calls = ctypes.c_int.in_dll(stub, "custub_calls").value
global_mode = os.environ.get("AITER_AOT_GLOBAL_SYMBOLS") == "1"
rw, ri = torch.topk(torch.softmax(g.float(), -1), 8)
rw = rw / rw.sum(-1, keepdim=True)
chosen = torch.gather(torch.softmax(g.float(), -1), -1, i.long().clamp(0, 255))
ok_out = status == 0 and torch.allclose(w, rw, rtol=1e-5, atol=1e-6) and \
    torch.allclose(chosen / chosen.sum(-1, keepdim=True), rw, rtol=1e-5, atol=1e-6)  # bf16 ties: any order
print(f"{'global' if global_mode else 'default'}: status {status} ({lib.aiter_aot_last_error().decode()}), "
      f"bound {lib.aiter_aot_gpu_library().decode()}, stub calls {calls}, output matches torch: {ok_out}")
if global_mode:
    sys.exit(0 if calls > 0 else 1)
ok = ok_out and calls == 0
child = subprocess.run([sys.executable, __file__, build], env=dict(os.environ, AITER_AOT_GLOBAL_SYMBOLS="1"))
print(f"interposition on the GPU: {'PASS' if ok and child.returncode == 0 else 'FAIL'}")
sys.exit(0 if ok and child.returncode == 0 else 1)
