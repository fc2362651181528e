"""One pre_full and one post at T=4096 (or TOKENS), C=4096, for ncu:
ncu --clock-control none -k regex:mhc python3 bench/profile_mhc.py build/lib/libaiter_aot.so [TOKENS]"""
import sys

import torch

tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
sys.argv = sys.argv[:2] + ["."]
import bench_mhc as B  # noqa: E402

s, p = B.pre_set(tokens, 4096), B.post_set(tokens, 4096)
for _ in range(2):
    B.ours_pre(s)
    B.ours_post(p)
torch.cuda.synchronize()
