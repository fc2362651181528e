"""Host cost of an eager call of each Python form of the ops, against a ctypes call of
libaiter_aot.so with a prebuilt args struct (the floor: what any Python caller pays to launch),
and the PyTorch composite a user would write instead, in one process on one GPU.

usage: PYTHONPATH=<installed wheel> python3 bench/bench_python.py build/lib/libaiter_aot.so

Host cost: wall time of 1000 back-to-back calls on small shapes (the GPU finishes each kernel
before the host issues the next, so the loop measures the host), no synchronisation inside the
loop, warm-up before it; the median of 7 loops. GPU time (the composite rows): aot_bench's CUDA
graph replay, warm-up outside the timed region."""
import ctypes as C
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aot_bench as ab  # noqa: E402

import aiter_aot  # noqa: E402
import aiter_aot.aiter as aiter  # noqa: E402
import aiter_aot.torch as T  # noqa: E402
import aiter_aot.vllm as vllm  # noqa: E402
from aiter_aot import _native as N  # noqa: E402
from aiter_aot.torch import _t  # noqa: E402


def host_us(fn, calls=1000, loops=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2]


def table(title, rows, floor):
    print(f"\n{title}")
    print(f"  {'form':58s} {'us/call':>8s} {'vs floor':>9s}")
    for name, us in rows:
        print(f"  {name:58s} {us:8.2f} {us - floor:+9.2f}")


def topk_rows(lib, s):
    Tn, E, k = 16, 128, 8
    g = torch.randn(Tn, E, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(Tn, k, device="cuda")
    i = torch.empty(Tn, k, device="cuda", dtype=torch.int32)
    e = torch.empty_like(i)
    args = ab.topk_args(g, w, i, e, k, True)
    ref, fnc, stream = C.byref(args), lib.aiter_aot_topk_softmax, C.c_void_p(s)
    tg, tw, ti, te = _t(g), _t(w), _t(i), _t(e)
    rows = [
        ("ctypes: aiter_aot_topk_softmax(&args, stream) [floor]", host_us(lambda: fnc(ref, stream))),
        ("aiter_aot._native.topk_softmax, prebuilt tuples", host_us(lambda: N.topk_softmax(tg, tw, ti, te, True, s))),
        ("aiter_aot.topk_softmax, torch tensors by DLPack", host_us(lambda: N.topk_softmax(g, w, i, e, True, s))),
        ("aiter_aot.torch.topk_softmax(out=...)", host_us(lambda: T.topk_softmax(g, k, True, out=(w, i, e)))),
        ("aiter_aot.torch.topk_softmax (allocates 3 outputs)", host_us(lambda: T.topk_softmax(g, k, True))),
        ("aiter_aot.aiter.topk_softmax (AITER drop-in)", host_us(lambda: aiter.topk_softmax(w, i, e, g, True))),
        ("aiter_aot.vllm.topk_softmax (vLLM drop-in)", host_us(lambda: vllm.topk_softmax(w, i, e, g, True))),
        ("torch.ops.aiter_aot.topk_softmax_out (the dispatcher)",
         host_us(lambda: torch.ops.aiter_aot.topk_softmax_out(g, w, i, e, True, None))),
        ("torch composite: softmax(float) + topk + renormalize",
         host_us(lambda: _composite(g, k))),
    ]
    table(f"topk_softmax, {Tn} tokens, {E} experts, k = {k}, bf16: host cost per eager call", rows, rows[0][1])
    ours = ab.bench_graph(lambda _: T.topk_softmax(g, k, True, out=(w, i, e)), [0])
    comp = ab.bench_graph(lambda _: _composite(g, k), [0])
    print(f"  GPU time per call (graph replay): ours {ours:.2f} us, torch composite {comp:.2f} us")
    return rows


def _composite(g, k):
    w, i = torch.softmax(g.float(), -1).topk(k, -1)
    return w / w.sum(-1, keepdim=True), i


def fmha_rows(lib, s):
    q = torch.randn(128, 8, 128, dtype=torch.bfloat16, device="cuda")
    cu = torch.tensor([0, 128], dtype=torch.int32, device="cuda")
    out = torch.empty_like(q)
    a = ab.FmhaArgs(C.sizeof(ab.FmhaArgs), q.data_ptr(), q.data_ptr(), q.data_ptr(), out.data_ptr(), None,
                    cu.data_ptr(), cu.data_ptr(), 2, 1, 128, 8, 8, 128, 128, 128, 0, 0, 0, 0, 128 ** -0.5, 0.0, 0,
                    -1, -1, 128)
    ref, fnc, stream = C.byref(a), lib.aiter_aot_fmha_varlen_fwd, C.c_void_p(s)
    sc = 128 ** -0.5
    rows = [
        ("ctypes: aiter_aot_fmha_varlen_fwd(&args, stream) [floor]", host_us(lambda: fnc(ref, stream))),
        ("aiter_aot.torch.fmha_varlen_fwd(out=...)",
         host_us(lambda: T.fmha_varlen_fwd(q, q, q, cu, cu, 128, sc, out=out))),
        ("aiter_aot.torch.fmha_varlen_fwd (allocates out)",
         host_us(lambda: T.fmha_varlen_fwd(q, q, q, cu, cu, 128, sc))),
        ("aiter_aot.aiter.fmha_v3_varlen_fwd, 18 args (allocates out)",
         host_us(lambda: aiter.fmha_v3_varlen_fwd(q, q, q, cu, cu, 128, 128, 0, 0.0, sc, 0.0, False, False, -1, -1,
                                                  False, False, 1))),
        ("aiter_aot.aiter.fmha_v3_varlen_fwd, 18 args, out=",
         host_us(lambda: aiter.fmha_v3_varlen_fwd(q, q, q, cu, cu, 128, 128, 0, 0.0, sc, 0.0, False, False, -1, -1,
                                                  False, False, 1, out=out))),
        ("torch SDPA on [1, 8, 128, 128] (a composite's own launch)",
         host_us(lambda: torch.nn.functional.scaled_dot_product_attention(q[None], q[None], q[None]))),
    ]
    table("fmha varlen fwd, 1 x 128 tokens, 8 heads, d = 128, bf16: host cost per eager call", rows, rows[0][1])
    return rows


def sort_rows(lib, s):
    Tn, k, E = 16, 8, 128
    ids = torch.stack([torch.randperm(E)[:k] for _ in range(Tn)]).int().cuda()
    w = torch.rand(Tn, k, device="cuda")
    outs = T.moe_sorting(ids, w, E, 32)
    ws = torch.empty(aiter_aot.moe_sorting_sizes(Tn, k, E, 32)[2], dtype=torch.uint8, device="cuda")
    a = ab.SortArgs(C.sizeof(ab.SortArgs), ids.data_ptr(), w.data_ptr(), Tn, k, E, 32, None, outs[0].data_ptr(),
                    outs[1].data_ptr(), outs[2].data_ptr(), outs[3].data_ptr(), None, 0, ws.data_ptr(), ws.numel())
    ref, fnc, stream = C.byref(a), lib.aiter_aot_moe_sorting, C.c_void_p(s)
    rows = [
        ("ctypes: aiter_aot_moe_sorting(&args, stream) [floor]", host_us(lambda: fnc(ref, stream))),
        ("aiter_aot.torch.moe_sorting(out=...) (allocates the workspace)",
         host_us(lambda: T.moe_sorting(ids, w, E, 32, out=outs))),
        ("aiter_aot.aiter.moe_sorting_fwd", host_us(lambda: aiter.moe_sorting_fwd(ids, w, *outs, None, E, 32))),
    ]
    table(f"moe_sorting, {Tn} tokens, k = {k}, {E} experts (3 kernels): host cost per eager call", rows, rows[0][1])
    return rows


def main():
    lib = ab.load(sys.argv[1] if len(sys.argv) > 1 else "build/lib/libaiter_aot.so")
    s = torch.cuda.current_stream().cuda_stream
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, python {sys.version.split()[0]}, "
          f"aiter_aot {aiter_aot.version()}, {time.strftime('%Y-%m-%d')}")
    topk_rows(lib, s)
    sort_rows(lib, s)
    fmha_rows(lib, s)


if __name__ == "__main__":
    main()
