"""A few moe_sorting calls at tokens=16384, experts=256, k=8, block_size=32, for ncu (the time of
each of the three kernels of one call):
ncu --clock-control none --kernel-name regex:moe_sort --launch-skip 3 --launch-count 3 \
    --section SpeedOfLight python3 bench/profile_sort.py build/lib/libaiter_aot.so"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.argv = sys.argv[:2] + ["."]
import bench_moe as M  # noqa: E402

s = M.sort_sets(16384, 256, 8, 32, 1)[0]
for _ in range(3):
    M.ours_sort(s, 256, 32)
torch.cuda.synchronize()
print("done")
