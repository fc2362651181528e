"""topk_softmax and moe_sorting: aiter-aot (libaiter_aot.so through ctypes, on PyTorch tensors and
the current stream) side by side with the PyTorch composite a user would write, in one process.
CUDA events, median of many runs, inputs rotated among several sets so no run hits a warm cache
of the previous one. Usage: python3 bench/bench_moe.py LIBAITER_AOT_SO OUT_DIR
BENCH_MOE_DTYPE=float32 (or float16) times topk_softmax on those logits instead of bf16, and
skips moe_sorting (it does not read logits). BENCH_MOE_ROUTE=0 skips the routers (topk_route and
moe_align_block_size, after moe_sorting); BENCH_MOE_ROUTE=only runs just them."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402
from aot_bench import bench, bench_graph, bench_stream, copy_bandwidth  # noqa: E402

lib = A.load(sys.argv[1])
out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
dev = torch.device("cuda")
stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
logits = getattr(torch, os.environ.get("BENCH_MOE_DTYPE", "bfloat16"))


def stream_calls(tokens):
    """Calls per graph for bench_stream: fewer where one call is already long."""
    return 40 if tokens <= 16384 else 8


# ---- topk_softmax ----

def ours_topk(s, k=8, renorm=True):
    g, w, i, t = s[:4]
    args = s[4] if len(s) > 4 else A.topk_args(g, w, i, t, k, renorm)
    A.check(lib, lib.aiter_aot_topk_softmax(args, stream()), "topk_softmax")


def torch_topk(s, k=8, renorm=True):
    g = s[0]
    w, i = torch.topk(torch.softmax(g.float(), dim=-1), k, dim=-1)
    if renorm:
        w = w / w.sum(-1, keepdim=True)
    return w, i


def topk_agrees(g, w, ids, ref_w):
    """Weights match, and our experts carry the same probabilities as torch's (bf16 logits tie
    often; torch.topk orders ties arbitrarily, we take the lower id)."""
    p = torch.softmax(g.float(), -1)
    chosen = torch.gather(p, -1, ids.long())
    return bool(torch.allclose(w, ref_w, rtol=1e-5, atol=1e-6) and
                torch.allclose(chosen / chosen.sum(-1, keepdim=True), ref_w, rtol=1e-5, atol=1e-6))


def topk_sets(tokens, experts, k, n, dtype=torch.bfloat16, renorm=True):
    sets = []
    for _ in range(n):
        g = torch.randn(tokens, experts, device=dev, dtype=dtype)
        w, i = torch.empty(tokens, k, device=dev), torch.empty(tokens, k, device=dev, dtype=torch.int32)
        t = torch.empty(tokens, k, device=dev, dtype=torch.int32)
        sets.append((g, w, i, t, A.topk_args(g, w, i, t, k, renorm)))  # args built once, as a caller would
    return sets


# ---- moe_sorting ----

def torch_sort(ids, w, experts, bs):
    t, k = ids.shape
    flat = ids.flatten().long()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    padded = (counts + bs - 1) // bs * bs
    starts = torch.cumsum(padded, 0) - padded
    cstarts = torch.cumsum(counts, 0) - counts
    se = flat[order]
    pos = starts[se] + torch.arange(flat.numel(), device=dev) - cstarts[se]
    maxp = t * k + experts * bs - k
    sid = torch.full((maxp,), (k << 24) | t, dtype=torch.int32, device=dev)
    sid[pos] = ((order % k) << 24 | (order // k)).int()
    sw = torch.zeros(maxp, device=dev)
    sw[pos] = w.flatten()[order]
    eids = torch.full(((maxp + bs - 1) // bs,), -1, dtype=torch.int32, device=dev)
    blocks = torch.repeat_interleave(torch.arange(experts, device=dev, dtype=torch.int32), padded // bs)
    eids[:blocks.numel()] = blocks
    return sid, sw, eids


def sort_sets(tokens, experts, k, bs, n):
    sets = []
    maxp = tokens * k + experts * bs - k
    for _ in range(n):
        ids = torch.rand(tokens, experts, device=dev).topk(k, dim=-1).indices.int().contiguous()
        w = torch.rand(tokens, k, device=dev)
        ws = torch.empty(lib.aiter_aot_moe_sorting_workspace_size(tokens, k, experts), dtype=torch.uint8, device=dev)
        sets.append((ids.contiguous(), w, torch.empty(maxp, dtype=torch.int32, device=dev),
                     torch.empty(maxp, device=dev), torch.empty((maxp + bs - 1) // bs, dtype=torch.int32, device=dev),
                     torch.empty(2, dtype=torch.int32, device=dev), ws))
    return sets


def sort_args(s, experts, bs):
    ids, w, sid, sw, se, nv, ws = s[:7]
    return A.SortArgs(A.C.sizeof(A.SortArgs), ids.data_ptr(), w.data_ptr(), ids.shape[0], ids.shape[1], experts, bs,
                   None, sid.data_ptr(), sw.data_ptr(), se.data_ptr(), nv.data_ptr(), None, 0, ws.data_ptr(), ws.numel())


def ours_sort(s, experts, bs):
    a = s[7] if len(s) > 7 else sort_args(s, experts, bs)
    A.check(lib, lib.aiter_aot_moe_sorting(a, stream()), "moe_sorting")


# ---- topk_route and moe_align_block_size (runtime/include/aiter_aot_moe.h) ----

class RouteArgs(A.C.Structure):
    _fields_ = [("size", A.C.c_size_t), ("gating", A.P), ("gating_dtype", A.C.c_int),
                ("gating_row_stride", A.C.c_int64), ("tokens", A.I32), ("experts", A.I32), ("k", A.I32),
                ("scoring", A.C.c_int), ("bias", A.P), ("n_group", A.I32), ("topk_group", A.I32),
                ("renormalize", A.I32), ("routed_scaling_factor", A.F32), ("input_ids", A.P),
                ("tid2eid", A.P), ("vocab", A.C.c_int64), ("hash_ids_int64", A.I32),
                ("topk_weights", A.P), ("topk_ids", A.P), ("topk_ids_int64", A.I32)]


class AlignArgs(A.C.Structure):
    _fields_ = [("size", A.C.c_size_t), ("topk_ids", A.P), ("tokens", A.I32), ("k", A.I32),
                ("experts", A.I32), ("block_size", A.I32), ("expert_map", A.P), ("sorted_token_ids", A.P),
                ("expert_ids", A.P), ("num_tokens_post_pad", A.P), ("workspace", A.P),
                ("workspace_size", A.C.c_size_t)]


SCORING = {"softmax": 0, "sigmoid": 1, "sqrtsoftplus": 2}
# name, experts, k, scoring, bias, n_group, topk_group, renormalize, scale, hash
ROUTERS = [("deepseek-v3", 256, 8, "sigmoid", True, 8, 4, True, 2.5, False),
           ("deepseek-v4", 384, 6, "sqrtsoftplus", True, 0, 0, True, 1.5, False),
           ("deepseek-v4-hash", 384, 6, "sqrtsoftplus", False, 0, 0, True, 1.5, True),
           ("llama-4", 128, 1, "sigmoid", False, 0, 0, False, 1.0, False)]
VOCAB = 129280


def route_sets(r, tokens, n):
    name, e, k, scoring, bias, ng, tg, renorm, scale, hashed = r
    sets = []
    for _ in range(n):
        g = torch.randn(tokens, e, device=dev, dtype=torch.bfloat16)
        b = (8.0 if scoring == "sqrtsoftplus" else 0.0) + 0.1 * torch.randn(e, device=dev) if bias else None
        ids = torch.randint(0, VOCAB, (tokens,), device=dev, dtype=torch.int32) if hashed else None
        table = torch.randint(0, e, (VOCAB, k), device=dev, dtype=torch.int32) if hashed else None
        w, i = torch.empty(tokens, k, device=dev), torch.empty(tokens, k, device=dev, dtype=torch.int32)
        a = RouteArgs(A.C.sizeof(RouteArgs), g.data_ptr(), 2, e, tokens, e, k, SCORING[scoring],
                      b.data_ptr() if bias else None, ng, tg, int(renorm), scale,
                      ids.data_ptr() if hashed else None, table.data_ptr() if hashed else None, VOCAB, 0,
                      w.data_ptr(), i.data_ptr(), 0)
        sets.append((g, b, ids, table, w, i, a))
    return sets


def ours_route(s):
    A.check(lib, lib.aiter_aot_topk_route(s[6], stream()), "topk_route")


def torch_route(r, s):
    """The composite a user writes: vLLM's native grouped_topk (groups), its torch fallback of
    topk_softplus_sqrt (sqrt-softplus, hash), or sigmoid and torch.topk (Llama-4)."""
    name, e, k, scoring, bias, ng, tg, renorm, scale, hashed = r
    g, b, ids, table = s[:4]
    x = g.float()
    scores = x.sigmoid() if scoring == "sigmoid" else torch.sqrt(torch.nn.functional.softplus(x))
    choice = scores + b if b is not None else scores
    if hashed:
        topk_ids = table[ids.long()].long()
    elif ng > 1:
        n = x.shape[0]
        gs = choice.view(n, ng, -1).topk(2, dim=-1)[0].sum(dim=-1)
        gidx = torch.topk(gs, k=tg, dim=-1, sorted=False)[1]
        gmask = torch.zeros_like(gs).scatter_(1, gidx, 1)
        smask = gmask.unsqueeze(-1).expand(n, ng, e // ng).reshape(n, -1)
        topk_ids = torch.topk(choice.masked_fill(~smask.bool(), float("-inf")), k=k, dim=-1, sorted=False)[1]
    else:
        topk_ids = torch.topk(choice, k=k, dim=-1, sorted=False)[1]
    w = scores.gather(1, topk_ids)
    if renorm:
        w = w / w.sum(-1, keepdim=True).clamp(min=1e-20)
    return w * scale, topk_ids.int()


def route_agrees(r, s):
    """Same expert sets as the composite (rows with fp32 near ties aside: at most 0.1 %), and the
    same weights for them."""
    w, i = torch_route(r, s)
    ours_i, ri = s[5].long().sort(-1), i.long().sort(-1)
    same = (ours_i.values == ri.values).all(-1)
    ow = torch.gather(s[4], 1, ours_i.indices)[same]
    tw = torch.gather(w, 1, ri.indices)[same]
    return same.float().mean().item() >= 0.999 and bool(torch.allclose(ow, tw, rtol=1e-5, atol=1e-6))


def torch_align(ids, experts, bs):
    """vLLM's layout by torch ops: stable sort of the flat ids, padded segments (syncs: eager only)."""
    flat = ids.flatten().long()
    numel = flat.numel()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    padded = (counts + bs - 1) // bs * bs
    starts = torch.cumsum(padded, 0) - padded
    cstarts = torch.cumsum(counts, 0) - counts
    se = flat[order]
    pos = starts[se] + torch.arange(numel, device=dev) - cstarts[se]
    maxp = numel + experts * (bs - 1)
    sid = torch.full((maxp,), numel, dtype=torch.int32, device=dev)
    sid[pos] = order.int()
    eids = torch.zeros(((maxp + bs - 1) // bs,), dtype=torch.int32, device=dev)
    blocks = torch.repeat_interleave(torch.arange(experts, device=dev, dtype=torch.int32), padded // bs)
    eids[:blocks.numel()] = blocks
    return sid, eids, padded.sum().int()


def align_sets(tokens, experts, k, bs, n):
    sets = []
    maxp = tokens * k + experts * (bs - 1)
    for _ in range(n):
        ids = torch.rand(tokens, experts, device=dev).topk(k, dim=-1).indices.int().contiguous()
        sid = torch.empty(maxp, dtype=torch.int32, device=dev)
        eid = torch.empty((maxp + bs - 1) // bs, dtype=torch.int32, device=dev)
        npp = torch.empty(1, dtype=torch.int32, device=dev)
        ws = torch.empty(lib.aiter_aot_moe_align_workspace_size(tokens, k, experts), dtype=torch.uint8, device=dev)
        a = AlignArgs(A.C.sizeof(AlignArgs), ids.data_ptr(), tokens, k, experts, bs, None, sid.data_ptr(),
                      eid.data_ptr(), npp.data_ptr(), ws.data_ptr(), ws.numel())
        sets.append((ids, sid, eid, npp, ws, a))
    return sets


def ours_align(s):
    A.check(lib, lib.aiter_aot_moe_align_block_size(s[5], stream()), "moe_align_block_size")


def route_rows(rows):
    lib.aiter_aot_topk_route.argtypes = [A.C.POINTER(RouteArgs), A.P]
    lib.aiter_aot_moe_align_block_size.argtypes = [A.C.POINTER(AlignArgs), A.P]
    lib.aiter_aot_moe_align_workspace_size.restype = A.C.c_size_t
    lib.aiter_aot_moe_align_workspace_size.argtypes = [A.I32, A.I32, A.I32]
    tiny = torch.zeros(1, device=dev)
    empty = bench_stream(lambda _: tiny.zero_(), [0], 40)  # a one-element kernel: the launch floor
    print(f"\ntopk_route, bf16 logits; stream: per call in a graph of 40 (16384 and below); "
          f"a one-element kernel there: {empty:.2f} us")
    print(f"{'router':>18} {'tokens':>7} {'ours eager':>10} {'torch eager':>11} {'ours stream':>11} "
          f"{'torch stream':>12} {'speedup(stream)':>15}")
    for r in ROUTERS:
        s = route_sets(r, 4096, 1)[0]
        ours_route(s)
        torch.cuda.synchronize()
        assert route_agrees(r, s), f"topk_route {r[0]} differs from the composite"
        for t in [1, 16, 64, 1024, 4096, 16384, 65536]:
            sets = route_sets(r, t, 4 if t >= 65536 else 8)
            o = bench(ours_route, sets)
            p = bench(lambda x: torch_route(r, x), sets)
            os_ = bench_stream(ours_route, sets, stream_calls(t))
            ps = bench_stream(lambda x: torch_route(r, x), sets, stream_calls(t))
            rows.append({"op": "topk_route", "router": r[0], "tokens": t, "experts": r[1], "k": r[2],
                         "ours_us": o, "torch_us": p, "ours_stream_us": os_, "torch_stream_us": ps,
                         "speedup_stream": ps / os_, "empty_kernel_stream_us": empty})
            print(f"{r[0]:>18} {t:>7} {o:>10.2f} {p:>11.2f} {os_:>11.2f} {ps:>12.2f} {ps / os_:>15.1f}")
    s = align_sets(16384, 256, 8, 64, 1)[0]
    ours_align(s)
    sid, eid, npp = torch_align(s[0], 256, 64)
    torch.cuda.synchronize()
    assert torch.equal(s[1], sid) and torch.equal(s[2], eid) and int(s[3][0]) == int(npp), \
        "moe_align_block_size differs from torch"
    print("\nmoe_align_block_size, experts=256, k=8, block_size=64 (the torch composite syncs: eager only)")
    print(f"{'tokens':>8} {'ours eager':>10} {'ours stream':>11} {'torch eager':>11} {'speedup(eager)':>14}")
    for t in [1, 16, 128, 1024, 4096, 16384, 65536]:
        sets = align_sets(t, 256, 8, 64, 8)
        o = bench(ours_align, sets)
        os_ = bench_stream(ours_align, sets, stream_calls(t))
        p = bench(lambda x: torch_align(x[0], 256, 64), sets, reps=100)
        rows.append({"op": "moe_align_block_size", "tokens": t, "experts": 256, "k": 8, "block_size": 64,
                     "ours_us": o, "ours_stream_us": os_, "torch_us": p, "speedup": p / o})
        print(f"{t:>8} {o:>10.2f} {os_:>11.2f} {p:>11.2f} {p / o:>14.1f}")


def main():
    name = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    rows = []
    print(f"device {name}, date {time.strftime('%Y-%m-%d')}, copy bandwidth {bw:.2f} TB/s (read+write)")
    if os.environ.get("BENCH_MOE_ROUTE") == "only":
        route_rows(rows)
        return save(name, bw, rows)
    # correctness against the composite before timing
    s = topk_sets(4096, 256, 8, 1, logits)[0]
    ours_topk(s)
    w, i = torch_topk(s)
    torch.cuda.synchronize()
    assert topk_agrees(s[0], s[1], s[2], w), "topk differs from torch"
    print(f"\ntopk_softmax, experts=256, k=8, {str(logits).split('.')[1]}, renormalize")
    print("  eager: one call per timed region (host overhead included); graph: one call per CUDA-graph")
    print("  replay (GPU time plus the replay's launch); stream: per call in a graph of 40 calls")
    print(f"{'tokens':>8} {'ours eager':>10} {'torch eager':>11} {'ours graph':>10} {'torch graph':>11} "
          f"{'ours stream':>11} {'torch stream':>12} {'speedup(stream)':>15} {'GB/s':>6} {'% copy bw':>9}")
    for t in [1, 16, 128, 1024, 4096, 16384, 65536, 262144]:
        sets = topk_sets(t, 256, 8, 4 if t >= 65536 else 8, logits)
        o = bench(ours_topk, sets)
        p = bench(torch_topk, sets)
        og = bench_graph(ours_topk, sets)
        pg = bench_graph(torch_topk, sets)
        os_ = bench_stream(ours_topk, sets, stream_calls(t))
        ps = bench_stream(torch_topk, sets, stream_calls(t))
        byts = t * 256 * (torch.finfo(logits).bits // 8) + t * 8 * 12
        gbs = byts / (os_ * 1e-6) / 1e9
        rows.append({"op": "topk_softmax", "tokens": t, "experts": 256, "k": 8, "ours_us": o, "torch_us": p,
                     "ours_graph_us": og, "torch_graph_us": pg, "speedup_graph": pg / og,
                     "ours_stream_us": os_, "torch_stream_us": ps, "speedup_stream": ps / os_, "GBps": gbs,
                     "pct_copy_bw": 100 * gbs / (bw * 1e3)})
        print(f"{t:>8} {o:>10.2f} {p:>11.2f} {og:>10.2f} {pg:>11.2f} {os_:>11.2f} {ps:>12.2f} {ps / os_:>15.1f} "
              f"{gbs:>6.0f} {100 * gbs / (bw * 1e3):>8.1f}%")
    if logits != torch.bfloat16:
        return save(name, bw, rows)
    # moe_sorting correctness against the composite
    s = sort_sets(16384, 256, 8, 32, 1)[0]
    ours_sort(s, 256, 32)
    sid, sw, se = torch_sort(s[0], s[1], 256, 32)
    torch.cuda.synchronize()
    assert torch.equal(s[2], sid) and torch.equal(s[3], sw) and torch.equal(s[4], se), "moe_sorting differs from torch"
    print("\nmoe_sorting, experts=256, k=8, block_size=32")
    print("  the torch composite syncs (repeat_interleave), so it cannot be graph-captured: eager only")
    print(f"{'tokens':>8} {'ours eager':>10} {'ours graph':>10} {'ours stream':>11} {'torch eager':>11} "
          f"{'speedup(eager)':>14}")
    for t in [1, 16, 128, 1024, 4096, 16384, 65536]:
        sets = [x + (sort_args(x, 256, 32),) for x in sort_sets(t, 256, 8, 32, 8)]
        o = bench(lambda x: ours_sort(x, 256, 32), sets)
        og = bench_graph(lambda x: ours_sort(x, 256, 32), sets)
        os_ = bench_stream(lambda x: ours_sort(x, 256, 32), sets, stream_calls(t))
        p = bench(lambda x: torch_sort(x[0], x[1], 256, 32), sets, reps=100)
        rows.append({"op": "moe_sorting", "tokens": t, "experts": 256, "k": 8, "ours_us": o, "ours_graph_us": og,
                     "ours_stream_us": os_, "torch_us": p, "speedup": p / o})
        print(f"{t:>8} {o:>10.2f} {og:>10.2f} {os_:>11.2f} {p:>11.2f} {p / o:>14.1f}")
    if os.environ.get("BENCH_MOE_ROUTE", "1") != "0":
        route_rows(rows)
    save(name, bw, rows)


def save(name, bw, rows):
    with open(os.path.join(out_dir, "bench_moe.json"), "w") as f:
        json.dump({"device": name, "date": time.strftime("%Y-%m-%d"), "copy_TBps": bw,
                   "logits": str(logits).split(".")[1], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
