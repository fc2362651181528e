"""pre_full once per token count through the library given, its outputs checked against
PyTorch's: a small target for compute-sanitizer (an experiment tool, not a benchmark).
Usage, from the repository root on the GPU:
  MC_TOKENS="240 8200" compute-sanitizer --tool racecheck --kernel-name kns=mhc_pre_cluster \\
      python3 bench/proto/mhc_once.py LIBAITER_AOT_SO"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
lib_path = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
sys.argv = [sys.argv[0], lib_path, "/tmp"]  # bench_mhc reads its library from argv
import bench_mhc as B  # noqa: E402

for t in [int(x) for x in os.environ.get("MC_TOKENS", "5 240 1030").split()]:
    s = B.pre_set(t, 4096)
    B.ours_pre(s)
    print("T", t, "ok" if B.pre_matches_torch(s) else "WRONG", flush=True)
