"""Would the pre kernel find the residual in L2 if it ran right after the projection of the same
tokens? pre_full at T = 4096, C = 4096 cut into R rounds (each round: prenorm_gemm with R times
pre_full's splits, so each launch has as many blocks as the whole one, then pre of those tokens),
against the same rounds whose pre reads another round's tokens (the same work, from DRAM).
CUDA-graph replays, µs, twice. Usage: python3 bench/mhc_rounds.py LIBAITER_AOT_SO [R ...]
(default 4 8 16). Results: docs/performance.md (issue 7, "What the numbers leave")."""
import ctypes as C
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
rounds_argv = sys.argv[2:]
sys.argv = sys.argv[:2]  # bench_mhc loads argv[1] on import
import aiter_aot_ctypes as A  # noqa: E402
import bench_mhc as B  # noqa: E402
from bench_moe import bench_graph  # noqa: E402

lib, dev, stream = B.lib, B.dev, B.stream
T, HID = 4096, 4096
S = B.pre_set(T, HID)
res, fn, scale, base, post, comb, li = (S[n] for n in ("res", "fn", "scale", "base", "post", "comb", "li"))


def launches(t0, n, splits):
    """The gemm and pre args of tokens t0 .. t0 + n with their own partials."""
    mix, sq = torch.empty(splits, n, 24, device=dev), torch.empty(splits, n, device=dev)
    g = A.MhcPrenormGemmArgs(C.sizeof(A.MhcPrenormGemmArgs), 4, res[t0].data_ptr(), fn.data_ptr(), mix.data_ptr(),
                             sq.data_ptr(), n, HID, splits, 0)
    p = A.MhcPreArgs(C.sizeof(A.MhcPreArgs), 4, mix.data_ptr(), sq.data_ptr(), scale.data_ptr(), base.data_ptr(),
                     res[t0].data_ptr(), None, post[t0].data_ptr(), comb[t0].data_ptr(), li[t0].data_ptr(), None,
                     n, HID, splits, 0, B.PARAMS)
    return g, p, (mix, sq)


def gemm(a):
    A.check(lib, lib.aiter_aot_mhc_prenorm_gemm(a, stream()), "mhc_prenorm_gemm")


def pre(a):
    A.check(lib, lib.aiter_aot_mhc_pre(a, stream()), "mhc_pre")


def main():
    s = C.c_int32()
    A.check(lib, lib.aiter_aot_mhc_splits(T, HID, C.byref(s)), "mhc_splits")
    whole = launches(0, T, s.value)
    print(f"{torch.cuda.get_device_name()}: T {T}, C {HID}, pre_full's splits {s.value}")
    for r in [int(x) for x in rounds_argv] or [4, 8, 16]:
        n = T // r
        rounds = [launches(i * n, n, s.value * r) for i in range(r)]
        cases = {
            "two passes": lambda _: (gemm(whole[0]), pre(whole[1])),
            "rounds, pre of the same tokens": lambda _: [(gemm(g), pre(p)) for g, p, _ in rounds],
            "rounds, pre of other tokens": lambda _: [(gemm(g), pre(rounds[(i + r // 2) % r][1]))
                                                      for i, (g, _, _) in enumerate(rounds)],
            "round gemms only": lambda _: [gemm(g) for g, _, _ in rounds],
            "round pres only": lambda _: [pre(p) for _, p, _ in rounds],
        }
        for rep in range(2):
            print(f"R {r} ({n} tokens, {n * 4 * HID * 2 / 1e6:.0f} MB of residual a round), rep {rep}: " +
                  ", ".join(f"{k} {bench_graph(f, [0]):.2f}" for k, f in cases.items()), flush=True)


main()
