"""Prototype (an experiment, not product code; issue 7): a timeline of mhc_pre_cluster from
globaltimer stamps.

  python3 bench/proto/mhc_timeline.py stamp TREE/kernels/mhc/mhc.hip
      edits that copy of the kernel (never the checkout's) so that each block writes 64 stamps
      just past comb's T x 16 floats: start, after the cluster barrier, each role's first and
      last tile, the finisher's end, the kernel's end, and each tile's mix. Build that tree for
      sm_90a (./configure --targets=sm_90a && ninja -C build lib/libaiter_aot.so).
  python3 bench/proto/mhc_timeline.py run LIB [TOKENS ...]
      on the GPU, from the repository root: two calls alternate (comb allocated with room for
      the stamps), then the stamps of both are printed as us from the first block's start.
Stamps cost about 1-2 us of the kernel's time. docs/ab_mhc_fn_stage_h200_2026-12-04.txt has
the timelines this made."""
import os
import sys

STAMPS = [  # (text in mhc.hip, the same with a stamp)
    ("/* A cluster's tiles are cid",
     'AOT_DEV unsigned long long tr_now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }\n#define TR(a, r, i) (((unsigned long long *)((a).comb + (aot_i64)(a).tokens * 16))[(aot_cluster_id() * 16 + (r)) * 64 + (i)] = tr_now())\n/* A cluster\'s tiles are cid'),
    ('        aot_mbar_expect(&s.full[q], CL_SLOT * 2);\n',
     '        if (it == 0) TR(a, r, 3);\n        aot_mbar_expect(&s.full[q], CL_SLOT * 2);\n'),
    ('        aot_mbar_wait(&s.full[q], it / CL_NS & 1);\n        float acc[3][S::C] = {}',
     '        if (it == 0 && w == 0 && lane == 0) TR(a, r, 2);\n        aot_mbar_wait(&s.full[q], it / CL_NS & 1);\n        if (it == 0 && w == 0 && lane == 0) TR(a, r, 4);\n        float acc[3][S::C] = {}'),
    ('        aot_sync_named(1, CL_PW * 32); /* red is read before the next tile writes it */\n    }',
     '        aot_sync_named(1, CL_PW * 32); /* red is read before the next tile writes it */\n        if (it == 0 && w == 0 && lane == 0) TR(a, r, 5);\n        if (w == 0 && lane == 0) TR(a, r, 9);\n    }'),
    ('        if (lane < CL_B) aot_store_remote(&s.coef[q][r][0], &s.cf[q], lane, p);\n',
     '        if (lane < CL_B) aot_store_remote(&s.coef[q][r][0], &s.cf[q], lane, p);\n        if (it == 0 && lane == 0) TR(a, r, 6);\n'),
    ('        aot_sync_named(2, CL_MIX_THREADS);\n        if (m == 0) aot_mbar_arrive(&s.empty[q]);',
     '        aot_sync_named(2, CL_MIX_THREADS);\n        if (m == 0) aot_mbar_arrive(&s.empty[q]);\n        if (m == 0 && it < 48) TR(a, r, 16 + it);\n        if (m == 0 && it == 0) TR(a, r, 7);\n        if (m == 0) TR(a, r, 8);'),
    ('        aot_mbar_arrive(&s.zempty[b % 2]); /* every lane, after its reads */\n    }',
     '        aot_mbar_arrive(&s.zempty[b % 2]); /* every lane, after its reads */\n    }\n    if (aot_lane() == 0) TR(a, r, 10);'),
    ('    const int r = aot_cluster_rank(), wave = aot_thread_x() / 32;\n',
     '    const int r = aot_cluster_rank(), wave = aot_thread_x() / 32;\n    if (aot_thread_x() == 0) TR(a, r, 0);\n'),
    ('    aot_cluster_sync();\n    if (wave >= 4 && wave < 12) {',
     '    aot_cluster_sync();\n    if (aot_thread_x() == 0) TR(a, r, 1);\n    if (wave >= 4 && wave < 12) {'),
    ('    aot_cluster_sync(); /* no block leaves while another may still store into its shared memory */\n}',
     '    if (wave == 0 && aot_lane() == 0) TR(a, r, 12);\n    aot_cluster_sync(); /* no block leaves while another may still store into its shared memory */\n    if (aot_thread_x() == 0) TR(a, r, 11);\n}'),
]
NAMES = {0: "start", 1: "cluster barrier", 3: "first copy issued", 2: "products ready", 4: "first slot full",
         5: "first products", 6: "first owner", 7: "first mix", 9: "last products", 8: "last mix",
         12: "producer exit", 10: "finisher end", 11: "end"}
BLOCKS = 112  # 7 clusters of 16: what fits on the H200 (the stamps go by cluster id x 16 + rank)


def stamp(path):
    mine = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels", "mhc", "mhc.hip")
    if os.path.realpath(path) == os.path.realpath(mine):
        sys.exit(f"{path} is this checkout's kernel: stamp a copy of the tree instead")
    s = open(path).read()
    for before, after in STAMPS:
        if s.count(before) != 1:
            sys.exit(f"{path}: the kernel changed; no single '{before[:50]}...' to stamp")
        s = s.replace(before, after)
    open(path, "w").write(s)


def show(x, t):
    z = x[:, 0].min().item()
    us = lambda v: (v - z).double() / 1e3  # noqa: E731
    for e, n in NAMES.items():
        v = us(x[:, e])
        print(f"  {n:18s} min {v.min():7.2f} med {v.median():7.2f} max {v.max():7.2f}")
    tiles = min((t // 16 + 6) // 7, 48)
    print("  mix of tile i, median over blocks:", " ".join(f"{i}:{us(x[x[:, 16 + i] > 0, 16 + i]).median():.2f}" for i in range(tiles)))
    for e, n in ((8, "last mix"), (10, "finisher end"), (11, "end")):
        print(f"  {n} by cluster:", " ".join(f"{us(x[c * 16:(c + 1) * 16, e]).max():.2f}" for c in range(BLOCKS // 16)))


def run(lib, tokens):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    sys.argv = [sys.argv[0], lib, "/tmp"]
    import torch
    import bench_mhc as B
    for t in tokens:
        sets = []
        for _ in range(2):
            s = B.pre_set(t, 4096)
            room = torch.zeros(t * 16 + BLOCKS * 128, device="cuda")  # comb, then the stamps
            s["args"].comb = room.data_ptr()
            s["comb"], s["stamps"] = room[: t * 16].view(t, 4, 4), room[t * 16:].view(torch.int64).view(BLOCKS, 64)
            sets.append(s)
        for i in range(20):
            B.ours_pre(sets[i % 2])
        torch.cuda.synchronize()
        st = [s["stamps"].cpu() for s in sets]
        print(f"T {t} {'ok' if B.pre_matches_torch(sets[1]) else 'WRONG'}; call 1 {(st[0][:, 11].max() - st[0][:, 0].min()).item() / 1e3:.2f} us,"
              f" then {(st[1][:, 0].min() - st[0][:, 11].max()).item() / 1e3:.2f} us to call 2's start")
        for k in range(2):
            print(f"call {k + 1}")
            show(st[k], t)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "stamp":
        stamp(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(sys.argv[2], [int(x) for x in sys.argv[3:]] or [4096])
    else:
        sys.exit(__doc__)
