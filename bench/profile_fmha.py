"""One FMHA launch at the headline shape (bf16, d = 128, 8 x 4096, 32 heads, causal), for ncu:
ncu --clock-control none -k regex:fmha -c 1 --section SpeedOfLight --section Occupancy \\
    --section WarpStateStats python3 bench/profile_fmha.py build/lib/libaiter_aot.so"""
import sys

import torch

sys.argv = sys.argv[:2] + ["."]
import bench_fmha as F  # noqa: E402

b, s, h, d = 8, 4096, 32, 128
q, k, v = (torch.randn(b * s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
out = torch.empty_like(q)
cu = torch.arange(0, (b + 1) * s, s, device="cuda", dtype=torch.int32)
args = F.FmhaArgs(F.C.sizeof(F.FmhaArgs), q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), None,
                  cu.data_ptr(), cu.data_ptr(), 2, b, b * s, h, h, d, d, s, 0, 0, 0, 0, d ** -0.5, 0.0, 1, -1, -1, b * s)
F.A.check(F.lib, F.lib.aiter_aot_fmha_varlen_fwd(args, torch.cuda.current_stream().cuda_stream), "fmha")
torch.cuda.synchronize()
