"""One FMHA launch for ncu, ours or cuDNN's (PyTorch's CUDNN_ATTENTION backend) on the same
inputs; bf16, dense rows. Default shape: the headline one, b8 s4096 h32 d128 causal.
Usage: python3 bench/profile_fmha.py LIBAITER_AOT_SO [B S H D CAUSAL] [cudnn]
  ncu --clock-control none -k regex:fmha -c 1 --section SpeedOfLight --section Occupancy \\
      --section WarpStateStats python3 bench/profile_fmha.py build/lib/libaiter_aot.so 8 4096 32 128 1"""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

lib_path, rest = sys.argv[1], sys.argv[2:]
use_cudnn = rest[-1:] == ["cudnn"]
shape = [int(x) for x in rest[:5]] if len(rest) >= 5 else [8, 4096, 32, 128, 1]
sys.argv = sys.argv[:2] + ["."]
import bench_fmha as F  # noqa: E402

b, s, h, d, causal = shape
q, k, v = (torch.randn(b * s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
if use_cudnn:
    q4, k4, v4 = (t.view(b, s, h, d).transpose(1, 2) for t in (q, k, v))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=bool(causal))
else:
    out, lse = torch.empty_like(q), torch.empty(h, b * s, device="cuda", dtype=torch.float32)
    cu = torch.arange(0, (b + 1) * s, s, device="cuda", dtype=torch.int32)
    F.run_ours(F.lib, q, k, v, out, lse, cu, b, s, h, d, d, causal)(None)
torch.cuda.synchronize()
