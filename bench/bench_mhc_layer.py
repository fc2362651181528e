"""mHC between two sublayers at many tokens: the previous sublayer's post and this one's pre,
as a model runs them, two ways on the same inputs in one process (libaiter_aot.so through
ctypes, PyTorch tensors, the current stream):
  post + pre_full        pre_full makes fn's bf16 terms once for its projection (from 1024 tokens)
  fused_post_pre + pre   beyond 16 tokens: post, then the projection of what it stored (each
                         token block splits fn itself), then pre on the partials
and each first part alone (post; fused_post_pre). The outputs are compared first (residual_out
exactly; post, comb and layer_input against post + pre_full). Times: CUDA graphs of 8 calls,
median µs per call ("stream", as in bench_mhc.py).
Usage: python3 bench/bench_mhc_layer.py LIBAITER_AOT_SO [OUT_DIR]"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402
from aot_bench import bench_stream, copy_bandwidth  # noqa: E402

lib = A.load(sys.argv[1])
out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
dev = torch.device("cuda")
stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
PARAMS = A.MhcParams(1e-6, 1e-6, 1e-6, 2.0, 20, 1e-6)
F32 = torch.float32


def layer_set(t, c):
    z = dict(res=torch.randn(t, 4, c, device=dev).bfloat16(), y=torch.randn(t, c, device=dev).bfloat16(),
             post_in=2 * torch.rand(t, 4, device=dev), comb_in=torch.rand(t, 4, 4, device=dev),
             fn=1e-4 * torch.randn(24, 4 * c, device=dev), scale=0.1 * torch.randn(3, device=dev),
             base=torch.randn(24, device=dev))
    n = A.C.c_int32()
    A.check(lib, lib.aiter_aot_mhc_splits(t, c, A.C.byref(n)), "mhc_splits")
    z["splits"] = s = n.value
    for way in ("_sep", "_fused"):  # the outputs of post + pre_full, and of fused_post_pre + pre
        z["new" + way] = torch.empty_like(z["res"])
        z["post" + way], z["comb" + way] = torch.empty(t, 4, device=dev), torch.empty(t, 4, 4, device=dev)
        z["li" + way] = torch.empty(t, c, device=dev, dtype=torch.bfloat16)
    z["ws"] = torch.empty(lib.aiter_aot_mhc_workspace_size(t, c), dtype=torch.uint8, device=dev)
    z["part"] = torch.empty(s * t * 25, device=dev, dtype=F32)
    P = lambda x: x.data_ptr()  # noqa: E731
    mix, sq = P(z["part"]), P(z["part"]) + s * t * 24 * 4
    z["post_args"] = A.MhcPostArgs(A.C.sizeof(A.MhcPostArgs), 4, P(z["comb_in"]), P(z["post_in"]), P(z["res"]),
                                   P(z["y"]), P(z["new_sep"]), t, c)
    z["full_args"] = A.MhcPreFullArgs(A.C.sizeof(A.MhcPreFullArgs), 4, P(z["new_sep"]), P(z["fn"]), P(z["scale"]),
                                      P(z["base"]), None, P(z["post_sep"]), P(z["comb_sep"]), P(z["li_sep"]), None,
                                      P(z["ws"]), z["ws"].numel(), t, c, 0, 0, PARAMS)
    z["fused_args"] = A.MhcFusedArgs(A.C.sizeof(A.MhcFusedArgs), 4, P(z["comb_in"]), P(z["post_in"]), P(z["res"]),
                                  P(z["y"]), P(z["fn"]), P(z["new_fused"]), mix, sq, t, c, s, 0)
    z["pre_args"] = A.MhcPreArgs(A.C.sizeof(A.MhcPreArgs), 4, mix, sq, P(z["scale"]), P(z["base"]), P(z["new_fused"]), None,
                              P(z["post_fused"]), P(z["comb_fused"]), P(z["li_fused"]), None, t, c, s, 0, PARAMS)
    return z


def post(z):
    A.check(lib, lib.aiter_aot_mhc_post(z["post_args"], stream()), "mhc_post")


def post_pre_full(z):
    post(z)
    A.check(lib, lib.aiter_aot_mhc_pre_full(z["full_args"], stream()), "mhc_pre_full")


def fused(z):
    A.check(lib, lib.aiter_aot_mhc_fused_post_pre(z["fused_args"], stream()), "mhc_fused_post_pre")


def fused_pre(z):
    fused(z)
    A.check(lib, lib.aiter_aot_mhc_pre(z["pre_args"], stream()), "mhc_pre")


def check(z, t, c):
    post_pre_full(z)
    fused_pre(z)
    torch.cuda.synchronize()
    assert torch.equal(z["new_fused"], z["new_sep"]), f"residual_out differs at T={t} C={c}"
    assert torch.allclose(z["post_fused"], z["post_sep"], rtol=1e-4, atol=1e-6), f"post differs at T={t} C={c}"
    assert torch.allclose(z["comb_fused"], z["comb_sep"], rtol=1e-4, atol=1e-6), f"comb differs at T={t} C={c}"
    d = (z["li_fused"].float() - z["li_sep"].float()).abs().max().item()
    assert d <= 0.02 * z["li_sep"].float().abs().max().item(), f"layer_input differs at T={t} C={c}: {d}"


def main():
    name, bw = torch.cuda.get_device_name(), copy_bandwidth()
    print(f"device {name}, date {time.strftime('%Y-%m-%d')}, copy bandwidth {bw:.2f} TB/s; µs per call, "
          f"graphs of 8 calls")
    ways = [("post", post), ("fused_post_pre", fused), ("post + pre_full", post_pre_full),
            ("fused_post_pre + pre", fused_pre)]
    print(f"{'T':>6} {'C':>5} {'S':>3} " + " ".join(f"{w:>22}" for w, _ in ways))
    rows = []
    for t, c in [(1024, 4096), (4096, 4096), (4096, 7168), (8192, 4096)]:
        sets = [layer_set(t, c) for _ in range(2)]
        check(sets[0], t, c)
        us = [bench_stream(f, sets, 8) for _, f in ways]
        rows.append({"tokens": t, "hidden": c, "splits": sets[0]["splits"], **{w: u for (w, _), u in zip(ways, us)}})
        print(f"{t:>6} {c:>5} {sets[0]['splits']:>3} " + " ".join(f"{u:>22.2f}" for u in us))
    with open(os.path.join(out_dir, "bench_mhc_layer.json"), "w") as f:
        json.dump({"device": name, "date": time.strftime("%Y-%m-%d"), "copy_TBps": bw, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
