"""A few topk_softmax launches at tokens=16384 (or TOKENS), experts=256, k=8 (bf16), for ncu
(EXPERTS=128 DTYPE=float16 in the environment for other rows):
ncu --clock-control none --kernel-name regex:topk --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    python3 bench/profile_topk.py build/lib/libaiter_aot.so [TOKENS]"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402

lib = A.load(sys.argv[1])
tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 16384
experts = int(os.environ.get("EXPERTS", "256"))
dtype = getattr(torch, os.environ.get("DTYPE", "bfloat16"))
g = torch.randn(tokens, experts, device="cuda", dtype=dtype)
w = torch.empty(tokens, 8, device="cuda")
i = torch.empty(tokens, 8, device="cuda", dtype=torch.int32)
args = A.topk_args(g, w, i, None, 8, True)
for _ in range(4):
    A.check(lib, lib.aiter_aot_topk_softmax(args, torch.cuda.current_stream().cuda_stream), "topk")
torch.cuda.synchronize()
print("done")
