"""Cold start to the first completed launch of the full sm_90a kernel set, in fresh processes
(BUILDDIR/bench/coldstart, see bench/coldstart.c): aiter-aot's embedded bundle against the same
cubins read from files and against NVRTC compiling the same sources. Prints the median of each
step and the peak resident memory loading added.
Usage: python3 bench/coldstart.py BUILDDIR [RUNS [NVRTC_RUNS]]   (defaults 20 and 3)"""
import os
import statistics
import subprocess
import sys
import time

build = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
nvrtc_runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
exe = os.path.join(build, "bench/coldstart")


def once(args):
    t = time.perf_counter()
    out = subprocess.run([exe] + args, capture_output=True, text=True, errors="replace")
    wall = (time.perf_counter() - t) * 1e3
    if out.returncode != 0:
        raise SystemExit(f"coldstart {' '.join(args)} failed: {out.stderr.strip()}")
    fields = dict(kv.split("=", 1) for kv in out.stdout.split())
    row = {k: float(v) for k, v in fields.items() if k != "mode"}
    row["process"] = wall
    return row


def medians(args, n):
    rows = [once(args) for _ in range(n)]
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}, n


paths = [("aiter-aot embedded bundle", *medians(["aot"], runs)),
         ("cubin files + cuModuleLoadData", *medians(["files", os.path.join(build, "co/sm_90a")], runs)),
         ("NVRTC compile + cuModuleLoadData", *medians(["nvrtc", root], nvrtc_runs))]
print("cold start to the first completed launch, every sm_90a module loaded and every kernel looked up; "
      "median ms of fresh processes")
print(f"{'path':34} {'runs':>4} {'CUDA init':>9} {'prepare':>9} {'mod load':>9} {'lookup':>8} {'1st launch':>10} "
      f"{'after init':>10} {'in-proc':>8} {'process':>8} {'peak RSS+':>9}")
for name, m, n in paths:
    prep = m.get("decompress", m.get("read", m.get("compile")))
    after = m["total"] - m["cuda_init"]
    print(f"{name:34} {n:4d} {m['cuda_init']:9.2f} {prep:9.2f} {m['module_load']:9.2f} {m['lookup']:8.3f} "
          f"{m['first_launch']:10.3f} {after:10.2f} {m['total']:8.1f} {m['process']:8.1f} "
          f"{(m['rss_peak'] - m['rss_before']) / 1024:7.1f}MB")
a = paths[0][1]
print(f"aiter-aot after CUDA init: aiter_aot_init {a['bind']:.2f}, preload {a['preload']:.2f} (module loads "
      f"{a['module_load']:.2f} and kernel lookups {a['lookup']:.2f} in this thread, the rest "
      f"{a['preload'] - a['module_load'] - a['lookup']:.2f}: waits for decoded bytes, content hashes, device "
      f"query; the frame decodes beside them in {a['decompress']:.2f}), first launch {a['first_launch']:.2f}")
ours = a["total"] - a["cuda_init"]
for name, m, _ in paths[1:]:
    print(f"after CUDA init, {name} / aiter-aot = {(m['total'] - m['cuda_init']) / ours:.2f}x")
print("prepare: decompress the frame (aot), read the files, or compile (NVRTC); lookup: every kernel looked "
      "up and loaded onto the device; peak RSS+: the resident set's peak while loading minus before it")
