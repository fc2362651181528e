"""A few topk_route launches of one of bench_moe.py's routers (ROUTER, default deepseek-v3) at
tokens=16384 (or TOKENS), bf16 logits, for ncu:
ncu --clock-control none --kernel-name regex:topk_route --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section InstructionStats python3 bench/profile_route.py build/lib/libaiter_aot.so [TOKENS]"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
lib_path, tokens = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16384
sys.argv = [sys.argv[0], lib_path, "/tmp"]  # bench_moe loads argv[1] on import
import aot_bench as A  # noqa: E402
import bench_moe as M  # noqa: E402

M.lib.aiter_aot_topk_route.argtypes = [A.C.POINTER(M.RouteArgs), A.P]
router = next(r for r in M.ROUTERS if r[0] == os.environ.get("ROUTER", "deepseek-v3"))
s = M.route_sets(router, tokens, 1)[0]
for _ in range(4):
    M.ours_route(s)
torch.cuda.synchronize()
print("done")
