"""Builds of libaiter_aot.so side by side in one process, for a change's before and after on the
same card (timings from different calls or cards are not comparable: docs/performance.md).

  python3 bench/ab_libs.py topk NAME=LIB [NAME=LIB ...]   topk_softmax, stream µs per call
  python3 bench/ab_libs.py mhc  NAME=LIB [NAME=LIB ...]   mhc pre_full (AB_MHC: or a delayed op), graph replay / stream µs
  python3 bench/ab_libs.py sort NAME=LIB [NAME=LIB ...]   moe_sorting, graph replay / stream µs
  python3 bench/ab_libs.py route NAME=LIB [NAME=LIB ...]  topk_route, stream µs per call

Each line of output is one shape and one repetition; the libraries run in turn, in reverse order
on odd repetitions, each after a check of its outputs against PyTorch's (WRONG marks a failure).
topk cases: AB_CASES="[(torch.bfloat16, True, 256, [16384, 262144]), ...]" (dtype, renormalize,
experts, token counts); the default is bf16, renormalized, 256 experts, 4096..262144 tokens.
mhc shapes: AB_SHAPES="[(4096, 4096), ...]" (tokens, hidden); AB_MHC=pre_delayed or
fused_delayed times those ops instead of pre_full. sort: 256 experts, k = 8, block 32,
AB_TOKENS="[16, 16384]" (the default 16..65536). route: bench_moe.py's routers (bf16 logits) at
AB_TOKENS (the default 1, 64, 16384, 65536), with a one-element kernel's stream time for scale."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
what, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
sys.argv = [sys.argv[0], pairs[0][1], "/tmp"]  # the bench modules load argv[1] on import
import aot_bench as A  # noqa: E402
import bench_moe as M  # noqa: E402
from aot_bench import bench_graph, bench_stream  # noqa: E402

libs = {name: A.load(path) for name, path in pairs}


def in_turn(rep):
    return list(libs.items()) if rep % 2 == 0 else list(libs.items())[::-1]


def topk():
    default = "[(torch.bfloat16, True, 256, [4096, 16384, 65536, 262144])]"
    for dt, renorm, experts, token_list in eval(os.environ.get("AB_CASES", default)):
        for tokens in token_list:
            sets = M.topk_sets(tokens, experts, 8, 4 if tokens >= 65536 else 8, dt, renorm)
            for rep in range(3):
                line = f"{dt} renorm {renorm} E {experts} tokens {tokens} rep {rep}:"
                for name, lib in in_turn(rep):
                    M.lib = lib
                    M.ours_topk(sets[0], renorm=renorm)
                    w, _ = M.torch_topk(sets[0], renorm=renorm)
                    ok = M.topk_agrees(sets[0][0], sets[0][1], sets[0][2], w) if renorm else \
                        torch.allclose(sets[0][1], w, rtol=1e-5, atol=1e-6)
                    us = bench_stream(M.ours_topk, sets, M.stream_calls(tokens))
                    line += f" {name} {us:.2f}{'' if ok else ' WRONG'}"
                print(line, flush=True)


def mhc():
    import bench_mhc as B
    op = os.environ.get("AB_MHC", "pre_full")
    make, run, check = {
        "pre_full": (B.pre_set, B.ours_pre, B.pre_matches_torch),
        "pre_delayed": (lambda t, c: B.delayed_set(t, c, False), B.ours_delayed, B.delayed_matches_torch),
        "fused_delayed": (lambda t, c: B.delayed_set(t, c, True), B.ours_delayed, B.delayed_matches_torch)}[op]
    print(op, "launch latency", B.launch_latency(), B.launch_latency(), flush=True)
    default = "[(1, 4096), (16, 7168), (1024, 4096), (4096, 4096), (4096, 7168)]"
    for t, c in eval(os.environ.get("AB_SHAPES", default)):
        for rep in range(2):
            line = f"T {t:5d} C {c} rep {rep}:"
            for name, lib in in_turn(rep):
                B.lib = lib
                sets = [make(t, c) for _ in range(3 if t >= 1024 else 6)]
                s = sets[0]
                run(s)
                ok = check(s)
                line += f" {name} {bench_graph(run, sets):7.2f} / " \
                        f"{bench_stream(run, sets, B.stream_calls(t)):7.2f}{'' if ok else ' WRONG'}"
                del sets, s
            print(line, flush=True)
    print("launch latency", B.launch_latency(), B.launch_latency(), flush=True)


def sort():
    for tokens in eval(os.environ.get("AB_TOKENS", "[16, 1024, 16384, 65536]")):
        sets = [x + (M.sort_args(x, 256, 32),) for x in M.sort_sets(tokens, 256, 8, 32, 8)]
        sid, sw, se = M.torch_sort(sets[0][0], sets[0][1], 256, 32)
        for rep in range(3):
            line = f"tokens {tokens} rep {rep} (graph / stream):"
            for name, lib in in_turn(rep):
                M.lib = lib
                sets[0][2].fill_(-7)
                M.ours_sort(sets[0], 256, 32)
                torch.cuda.synchronize()
                ok = torch.equal(sets[0][2], sid) and torch.equal(sets[0][3], sw) and torch.equal(sets[0][4], se)
                fn = lambda x: M.ours_sort(x, 256, 32)  # noqa: E731
                line += f" {name} {bench_graph(fn, sets):.2f} / {bench_stream(fn, sets, M.stream_calls(tokens)):.2f}" \
                        f"{'' if ok else ' WRONG'}"
            print(line, flush=True)


def route():
    for lib in libs.values():
        lib.aiter_aot_topk_route.argtypes = [A.C.POINTER(M.RouteArgs), A.P]
    tiny = torch.zeros(1, device=M.dev)
    print("one-element kernel, stream:", f"{bench_stream(lambda _: tiny.zero_(), [0], 40):.2f}", flush=True)
    for r in M.ROUTERS:
        for tokens in eval(os.environ.get("AB_TOKENS", "[1, 64, 16384, 65536]")):
            sets = M.route_sets(r, tokens, 4 if tokens >= 65536 else 8)
            for rep in range(3):
                line = f"{r[0]} tokens {tokens} rep {rep}:"
                for name, lib in in_turn(rep):
                    M.lib = lib
                    sets[0][4].fill_(-7.0), sets[0][5].fill_(-7)
                    M.ours_route(sets[0])
                    torch.cuda.synchronize()
                    ok = M.route_agrees(r, sets[0])
                    line += f" {name} {bench_stream(M.ours_route, sets, M.stream_calls(tokens)):.2f}{'' if ok else ' WRONG'}"
                print(line, flush=True)


{"topk": topk, "mhc": mhc, "sort": sort, "route": route}[what]()
