"""FMHA varlen forward: aiter-aot (libaiter_aot.so through ctypes, on PyTorch tensors and the current
stream) side by side with PyTorch's scaled_dot_product_attention on its CUDNN_ATTENTION and
FLASH_ATTENTION backends, same inputs, one process. The rows are the shapes serving cares about
(ROWS: long prompts, a long context, many short prompts, GQA, d = 64 and 256, fp16); each
prints ours (and ours without total_k: the kernels that copy by threads), cuDNN and flash
in TFLOP/s (2 b h s^2 (d + d_v), halved for causal) and the ratios, after checking our output
against SDPA's. Then every head dim (64, 128, 192/128, 256) at 8 x 4096, 32 heads, ours (and
without total_k) against the flash backend where d = d_v. Other builds of the library named
with --compare NAME=PATH (an earlier commit's, say) are loaded into this process and timed
in turn with ours, a call each a round, in every row. CUDA events, median.
Usage: python3 bench/bench_fmha.py LIBAITER_AOT_SO OUT_DIR [--compare NAME=PATH ...]"""
import ctypes as C
import json
import os
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402
from aot_bench import FmhaArgs, bench, bench_interleaved  # noqa: E402

lib = A.load(sys.argv[1])
out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
others = []  # (name, library) from --compare NAME=PATH
for i, a in enumerate(sys.argv[3:-1], 3):
    if a == "--compare":
        name, path = sys.argv[i + 1].split("=", 1)
        others.append((name, A.load(path)))
dev = torch.device("cuda")


def run_ours(lib_, q, k, v, out, lse, cu, b, s, h, d, dv, causal, hk=None, dtype=2, total_k=True):
    """A callable that runs lib_'s fmha on the tensors (rows dense; k and v with hk heads). Without
    total_k the args end before it, as a caller built before it existed passes them: the
    library then takes the kernels that copy K and V by threads."""
    size = C.sizeof(FmhaArgs) if total_k else FmhaArgs.total_k.offset
    args = FmhaArgs(size, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
                    cu.data_ptr(), cu.data_ptr(), dtype, b, b * s, h, hk or h, d, dv, s, 0, 0, 0, 0, d ** -0.5, 0.0,
                    int(causal), -1, -1, b * s)
    return lambda _: A.check(lib_, lib_.aiter_aot_fmha_varlen_fwd(args, torch.cuda.current_stream().cuda_stream), "fmha")


# (label, batch, tokens a sequence, query heads, key/value heads, head dim, causal, dtype)
ROWS = [("b8 s4096 h32 d128", 8, 4096, 32, 32, 128, False, torch.bfloat16),
        ("b8 s4096 h32 d128 causal", 8, 4096, 32, 32, 128, True, torch.bfloat16),
        ("b2 s16384 h32 d128 causal", 2, 16384, 32, 32, 128, True, torch.bfloat16),
        ("b64 s512 h32 d128 causal", 64, 512, 32, 32, 128, True, torch.bfloat16),
        ("b8 s4096 h64/8 (GQA) d128 causal", 8, 4096, 64, 8, 128, True, torch.bfloat16),
        ("b8 s4096 h32 d64 causal", 8, 4096, 32, 32, 64, True, torch.bfloat16),
        ("b8 s4096 h16 d256 causal", 8, 4096, 16, 16, 256, True, torch.bfloat16),
        ("b8 s4096 h32 d128 causal fp16", 8, 4096, 32, 32, 128, True, torch.float16)]


def sdpa(q4, k4, v4, causal, backend=None):
    """SDPA on [b, h, s, d] views; GQA through enable_gqa. None: PyTorch's own choice."""
    gqa = k4.shape[1] != q4.shape[1]
    f = lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal, enable_gqa=gqa)  # noqa: E731
    if backend is None:
        return f()
    with sdpa_kernel(backend):
        return f()


def table_row(label, b, s, hq, hk, d, causal, dt):
    q = torch.randn(b * s, hq, d, device=dev, dtype=dt)
    k, v = (torch.randn(b * s, hk, d, device=dev, dtype=dt) for _ in range(2))
    out = torch.empty_like(q)
    lse = torch.empty(hq, b * s, device=dev)
    cu = torch.arange(0, (b + 1) * s, s, device=dev, dtype=torch.int32)
    q4, k4, v4 = (x.view(b, s, -1, d).transpose(1, 2) for x in (q, k, v))
    ours = run_ours(lib, q, k, v, out, lse, cu, b, s, hq, d, d, causal, hk, 1 if dt == torch.float16 else 2)
    ours(0)
    ref = sdpa(q4, k4, v4, causal)
    torch.cuda.synchronize()
    err = ((out.view(b, s, hq, d).transpose(1, 2).float() - ref.float()).norm() / ref.float().norm()).item()
    assert err < 2e-2, f"{label}: fmha differs from SDPA: relative error {err}"
    del ref
    flops = 4 * b * hq * s * s * d / (2 if causal else 1)
    threads = run_ours(lib, q, k, v, out, lse, cu, b, s, hq, d, d, causal, hk, 1 if dt == torch.float16 else 2, False)
    res = {"row": label, "rel_err_vs_sdpa": err, "ours_us": bench(ours, [0], reps=20), "threads_us": bench(threads, [0], reps=20)}
    for key, backend in (("cudnn_us", SDPBackend.CUDNN_ATTENTION), ("flash_us", SDPBackend.FLASH_ATTENTION)):
        try:
            res[key] = bench(lambda _: sdpa(q4, k4, v4, causal, backend), [0], reps=20)
        except Exception as ex:  # report, keep the rest
            res[key] = float("nan")
            print(f"  {label}: {key[:-3]}: {type(ex).__name__}: {ex}"[:200])
    res.update({k2.replace("_us", "_tflops"): flops / (v2 * 1e-6) / 1e12 for k2, v2 in res.items() if k2.endswith("_us")})
    print(f"| {label} | {res['ours_tflops']:.1f} | {res['threads_tflops']:.1f} | {res['cudnn_tflops']:.1f} | "
          f"{res['flash_tflops']:.1f} | {res['ours_tflops'] / res['cudnn_tflops']:.2f} | "
          f"{res['ours_tflops'] / res['flash_tflops']:.2f} | {err:.1e} |")
    if others:  # --compare builds on the same inputs, timed in turn with ours
        dtype = 1 if dt == torch.float16 else 2
        runs = [ours] + [run_ours(l, q, k, v, out, lse, cu, b, s, hq, d, d, causal, hk, dtype) for _, l in others]
        us = bench_interleaved(runs)
        res["ours_interleaved_tflops"] = flops / (us[0] * 1e-6) / 1e12
        line = []
        for (name, _), t in zip(others, us[1:]):
            res[name + "_tflops"] = flops / (t * 1e-6) / 1e12
            line.append(f"{name} {res[name + '_tflops']:.1f} ({us[0] / t:.3f} of ours)")
        print(f"  in turn: ours {res['ours_interleaved_tflops']:.1f}, " + ", ".join(line))
    return res


def head_dims(b, s, h):
    """Every head dim: ours (and each --compare build) and, where d = d_v, the flash backend."""
    rows = []
    for d, dv in ((64, 64), (128, 128), (192, 128), (256, 256)):
        q, k = (torch.randn(b * s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(2))
        v = torch.randn(b * s, h, dv, device=dev, dtype=torch.bfloat16)
        out = torch.empty(b * s, h, dv, device=dev, dtype=torch.bfloat16)
        lse = torch.empty(h, b * s, device=dev)
        cu = torch.arange(0, (b + 1) * s, s, device=dev, dtype=torch.int32)
        q4, k4, v4 = (x.view(b, s, h, -1).transpose(1, 2) for x in (q, k, v))
        for causal in (False, True):
            flops = 2 * b * h * s * s * (d + dv) / (2 if causal else 1)
            res = {"d": d, "dv": dv, "causal": causal}
            runs = [("ours", run_ours(lib, q, k, v, out, lse, cu, b, s, h, d, dv, causal)),
                    ("threads", run_ours(lib, q, k, v, out, lse, cu, b, s, h, d, dv, causal, total_k=False))]
            runs += [(name, run_ours(l, q, k, v, out, lse, cu, b, s, h, d, dv, causal)) for name, l in others]
            for (name, _), us in zip(runs, bench_interleaved([fn for _, fn in runs], reps=10)):
                res[name + "_tflops"] = flops / (us * 1e-6) / 1e12
            if d == dv:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    us = bench(lambda _: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal), [0], reps=10)
                res["flash_tflops"] = flops / (us * 1e-6) / 1e12
            rows.append(res)
            print("  d %3d/%3d causal=%-5s " % (d, dv, causal) + ", ".join(f"{key[:-7]} {val:.1f}" for key, val in res.items() if key.endswith("_tflops"))
                  + (f"; ours / flash = {res['ours_tflops'] / res['flash_tflops']:.2f}" if d == dv else ""))
    return rows


def main():
    name = torch.cuda.get_device_name()
    print(f"device {name}, torch {torch.__version__}, date {time.strftime('%Y-%m-%d')}; TFLOP/s")
    print("| shape | ours | ours, no total_k | cuDNN | flash | ours / cuDNN | ours / flash | rel. error vs SDPA |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = [table_row(*r) for r in ROWS]
    print("head dims (TFLOP/s = 2 b h s_q s_k (d + d_v), halved for causal; 8 x 4096 tokens, 32 heads, bf16):")
    dims = head_dims(8, 4096, 32)
    with open(os.path.join(out_dir, "bench_fmha.json"), "w") as f:
        json.dump({"device": name, "date": time.strftime("%Y-%m-%d"), "rows": rows, "head_dims": dims}, f, indent=1)


if __name__ == "__main__":
    main()
