"""The Python package on the GPU (tests/gpu/run-python.sh runs it with the wheel installed):
every op of aiter_aot.torch and of the drop-in modules against fp64 references on fresh
random inputs (mHC's delayed pre against a torch port of docs/semantics.md's definition), outputs poisoned first (the routers: DeepSeek-V3, sqrt-softplus and hash
routing, Llama-4, softmax-scored forms, vLLM's align layout with and without an expert map); a CPU tensor; torch.compile(fullgraph=True); a CUDA graph
whose capture holds the package's first call (fresh process); preload() then capture; a side
stream; and the AITER report's reproducer with a cu* stub loaded RTLD_GLOBAL first.

usage: python3 tests/gpu/test_python.py CUSTUB.so ; the last line is "N passed, N failed"."""
import itertools
import math
import os
import subprocess
import sys
import traceback

import torch
import torch.nn.functional as F

import aiter_aot
import aiter_aot.aiter as aiter
import aiter_aot.aiter.fused_moe as fused_moe
import aiter_aot.torch as T
import aiter_aot.vllm as vllm
import aiter_aot.vllm.fused_moe as vfm

STUB = sys.argv[1] if len(sys.argv) > 1 else "build/tests/interpose/libcustub.so"
dev = "cuda"
results = []


def case(fn):
    try:
        fn()
        results.append((fn.__name__, None))
        print(f"ok   {fn.__name__}", flush=True)
    except Exception:
        results.append((fn.__name__, traceback.format_exc()))
        print(f"FAIL {fn.__name__}\n{traceback.format_exc()}", flush=True)
    return fn


def close(name, got, ref, rtol, atol=0.0):
    got, ref = got.double().cpu(), ref.double().cpu()
    assert got.shape == ref.shape, f"{name}: shape {tuple(got.shape)} vs {tuple(ref.shape)}"
    err = (got - ref).abs() - (rtol * ref.abs() + atol)
    bad = int((err > 0).sum()) + int(torch.isnan(got).sum())
    assert bad == 0, f"{name}: {bad} of {got.numel()} elements off (worst excess {err.max().item():.3g})"


def child(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


# ---- references -------------------------------------------------------------------------------

def topk_ref(g, k, renorm):
    """Ties (frequent among bf16 logits) go to the lower expert id, as the op defines: a stable
    descending sort keeps equal values in index order."""
    p = torch.softmax(g.double().cpu(), -1)
    w, i = torch.sort(p, dim=-1, descending=True, stable=True)
    w, i = w[:, :k], i[:, :k]
    if renorm:
        w = w / w.sum(-1, keepdim=True)
    return w, i


def sort_ref(ids, w, E, bs, mask=None):
    ids, w = ids.cpu().tolist(), w.cpu().tolist()
    Tn, k = len(ids), len(ids[0])
    P = Tn * k + E * bs - k
    local = [e for e in range(E) if mask is None or mask[e]]
    sid, sw, se = [], [], []
    for le, e in enumerate(local):
        pairs = [(t, s) for t in range(Tn) for s in range(k) if ids[t][s] == e]
        n = -(-len(pairs) // bs) * bs
        for j in range(n):
            t, s = pairs[j] if j < len(pairs) else (None, None)
            sid.append((s << 24) | t if t is not None else (k << 24) | Tn)
            sw.append(w[t][s] if t is not None else 0.0)
        se += [le] * (n // bs)
    total = len(sid)
    sid += [(k << 24) | Tn] * (P - total)
    sw += [0.0] * (P - total)
    se += [-1] * (-(-P // bs) - len(se))
    return [torch.tensor(sid), torch.tensor(sw), torch.tensor(se), torch.tensor([total, Tn])]


P6 = aiter_aot.MHC_PARAMS


def sinkhorn(c, eps, iters):
    c = torch.softmax(c, -1) + eps
    c = c / (c.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        c = c / (c.sum(-1, keepdim=True) + eps)
        c = c / (c.sum(-2, keepdim=True) + eps)
    return c


def mhc_ref(x, fn, scale, base, norm_weight=None, p=P6, broadcast=False):
    """x fp64 [T, 4, C] (or [T, C] with broadcast): (post, comb, layer_input, magnitude)."""
    rms_eps, pre_eps, eps, mult, iters, norm_eps = p
    flat = x.reshape(x.shape[0], -1)
    mix = flat @ fn.double().T * torch.rsqrt((flat ** 2).mean(-1, keepdim=True) + rms_eps)
    sc, b = scale.double().cpu(), base.double().cpu()
    pre = torch.sigmoid(mix[:, :4] * sc[0] + b[:4]) + pre_eps
    post = torch.sigmoid(mix[:, 4:8] * sc[1] + b[4:8]) * mult
    comb = sinkhorn((mix[:, 8:] * sc[2] + b[8:]).view(-1, 4, 4), eps, iters)
    xs = x[:, None, :].expand(-1, 4, -1) if broadcast else x
    u = (pre[:, :, None] * xs).sum(1)
    mag = (pre[:, :, None] * xs.abs()).sum(1)
    if norm_weight is not None:
        r = torch.rsqrt((u ** 2).mean(-1, keepdim=True) + norm_eps)
        w = norm_weight.double().cpu()
        u = u.to(torch.bfloat16).double() * r * w
        mag = mag * r * w.abs()
    return post, comb, u, mag


def bf16_check(name, got, ref, mag, ulps=1.0):
    got, ref, mag = got.double().cpu(), ref.double().cpu(), mag.double().cpu()
    excess = (got - ref).abs() - (ulps * 2.0 ** -7 * ref.abs() + 1e-5 * mag + 1e-30)
    bad = int((excess > 0).sum()) + int(torch.isnan(got).sum())
    assert bad == 0, f"{name}: {bad} of {got.numel()} bf16 elements beyond {ulps} ulp (worst {excess.max():.3g})"


def fmha_ref(q, k, v, cu_q, cu_k, scale, causal=False, wl=-1, wr=-1, cap=0.0):
    Tq, hq, _ = q.shape
    hk, dv = k.shape[1], v.shape[2]
    out = torch.zeros(Tq, hq, dv, dtype=torch.float64)
    lse = torch.full((hq, Tq), -math.inf, dtype=torch.float64)
    cq, ck = cu_q.cpu().tolist(), cu_k.cpu().tolist()
    for b in range(len(cq) - 1):
        sq, sk = cq[b + 1] - cq[b], ck[b + 1] - ck[b]
        if sq == 0:
            continue
        qs = q[cq[b]:cq[b + 1]].double().cpu()
        ks = k[ck[b]:ck[b + 1]].double().cpu().repeat_interleave(hq // hk, 1)
        vs = v[ck[b]:ck[b + 1]].double().cpu().repeat_interleave(hq // hk, 1)
        s = torch.einsum("ihd,jhd->hij", qs, ks) * scale
        if cap > 0:
            s = cap * torch.tanh(s / cap)
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        d = i + sk - sq
        vis = torch.ones(sq, sk, dtype=torch.bool)
        if causal:
            vis &= j <= d
        if wl >= 0:
            vis &= j >= d - wl
        if wr >= 0:
            vis &= j <= d + wr
        s = s.masked_fill(~vis, -math.inf)
        l = torch.logsumexp(s, -1)
        pr = torch.nan_to_num(torch.exp(s - l[..., None]), nan=0.0)
        out[cq[b]:cq[b + 1]] = torch.einsum("hij,jhd->ihd", pr, vs)
        lse[:, cq[b]:cq[b + 1]] = l
    return out, lse


def fmha_check(name, out, lse, ref_out, ref_lse):
    out = out.double().cpu()
    err = (out - ref_out).norm(dim=-1)
    norm = ref_out.norm(dim=-1)
    bad = int((err > 1e-2 * norm.clamp(min=1e-2)).sum())
    assert bad == 0, f"{name}: {bad} (row, head) pairs off by more than 1e-2 in 2-norm (worst {err.max():.3g})"
    if lse is not None:
        lse = lse.double().cpu()
        inf = torch.isinf(ref_lse)
        # a query that sees no key: -inf in both (compared by equality, not tolerance)
        assert torch.equal(torch.isinf(lse), inf) and bool((lse[inf] == ref_lse[inf]).all()), f"{name}: lse infinities"
        assert bool((out[inf.T.nonzero()[:, 0], inf.T.nonzero()[:, 1]] == 0).all()), f"{name}: unseen rows not 0"
        close(name + " lse", lse[~inf], ref_lse[~inf], 1e-4, 1e-5)


def poison(*ts):
    for t in ts:
        t.fill_(float("nan") if t.is_floating_point() else -7)


# ---- MoE --------------------------------------------------------------------------------------

@case
def topk_softmax_torch():
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for Tn, E, k in ((333, 256, 8), (5, 64, 6), (1, 1000, 32)):
            g = torch.randn(Tn, E, device=dev).to(dt)
            for renorm in (False, True):
                w, i, e = T.topk_softmax(g, k, renorm)
                rw, ri = topk_ref(g, k, renorm)
                assert torch.equal(i.cpu().long(), ri), f"ids {dt} {Tn} {E} {k}"
                close(f"weights {dt}", w, rw, 2e-6, 1e-9)
                assert torch.equal(e.cpu(), (torch.arange(k)[None, :] * Tn + torch.arange(Tn)[:, None]).int())
                ow, oi, oe = (torch.empty_like(w), torch.empty_like(i), torch.empty_like(e))
                poison(ow, oi, oe)
                T.topk_softmax(g, k, renorm, out=(ow, oi, oe))
                assert torch.equal(ow, w) and torch.equal(oi, i) and torch.equal(oe, e)
    # strided rows (a slice of a wider router output)
    g = torch.randn(40, 300, device=dev)[:, :256]
    w, i, _ = T.topk_softmax(g, 8, False)
    assert torch.equal(i.cpu().long(), topk_ref(g, 8, False)[1])


@case
def topk_softmax_drop_ins():
    g = torch.randn(77, 128, device=dev, dtype=torch.bfloat16)
    rw, ri = topk_ref(g, 8, True)
    w = torch.empty(77, 8, device=dev)
    i = torch.empty(77, 8, device=dev, dtype=torch.int32)
    e = torch.empty_like(i)
    poison(w, i, e)
    assert aiter.topk_softmax(w, i, e, g, True) is None
    assert torch.equal(i.cpu().long(), ri)
    close("aiter weights", w, rw, 2e-6, 1e-9)
    for idt in (torch.int32, torch.int64):
        i2 = torch.empty(77, 8, device=dev, dtype=idt)
        poison(w, i2, e)
        vllm.topk_softmax(w, i2, e, g, True)
        assert torch.equal(i2.cpu().long(), ri), idt
        close("vllm weights", w, rw, 2e-6, 1e-9)


@case
def moe_sorting_all_forms():
    for Tn, k, E, bs, masked in ((300, 8, 64, 32, False), (17, 4, 256, 16, True), (1, 1, 8, 64, False)):
        ids = torch.stack([torch.randperm(E)[:k] for _ in range(Tn)]).int().to(dev)
        w = torch.rand(Tn, k, device=dev)
        mask = (torch.rand(E) > 0.3).int().to(dev) if masked else None
        ref = sort_ref(ids, w, E, bs, mask.cpu().tolist() if masked else None)
        got = T.moe_sorting(ids, w, E, bs, mask)
        for n, a, b in zip(("ids", "weights", "experts", "num_valid"), got, ref):
            assert torch.equal(a.cpu().to(b.dtype), b), f"torch {n} {Tn} {k} {E} {bs}"
        out = [torch.empty_like(x) for x in got]
        poison(*out)
        buf = torch.full((Tn, 128), 3.0, device=dev, dtype=torch.bfloat16)
        aiter.moe_sorting_fwd(ids, w, *out, buf, E, bs, mask)
        for n, a, b in zip(("ids", "weights", "experts", "num_valid"), out, ref):
            assert torch.equal(a.cpu().to(b.dtype), b), f"aiter {n}"
        assert int(buf.abs().sum()) == 0, "moe_buf not zeroed"
        r = fused_moe.moe_sorting(ids, w, E, 128, torch.bfloat16, bs, mask)
        assert len(r) == 5 and r[4].shape == (Tn, 128) and int(r[4].abs().sum()) == 0
        for n, a, b in zip(("ids", "weights", "experts", "num_valid"), r[:4], ref):
            assert torch.equal(a.cpu().to(b.dtype), b), f"fused_moe {n}"


# ---- routers ----------------------------------------------------------------------------------

def route_ref(g, k, scoring, bias=None, n_group=0, topk_group=0, renorm=False, scale=1.0, input_ids=None,
              tid2eid=None):
    """docs/routing.md's steps in fp64 on the CPU: (weights [T, k], ids [T, k], selection scores
    c [T, E], scores s [T, E], groups: None or (group size, group scores [T, n_group], the
    topk_group-th best group score [T])). NaN logits read as -inf; exact ties go to the lower
    group and the lower expert (stable descending sorts); hash slots out of range get id -1 and
    weight 0."""
    x = g.double().cpu()
    x = torch.where(torch.isnan(x), torch.full_like(x, -math.inf), x)
    if scoring == "softmax":
        s = torch.softmax(x, -1)
    elif scoring == "sigmoid":
        s = torch.sigmoid(x)
    else:
        s = torch.sqrt(F.softplus(x))  # PyTorch's softplus: x itself above 20, as the op's
    Tn, E = s.shape
    c = s + bias.double().cpu() if bias is not None and input_ids is None else s
    groups = None
    if input_ids is not None:
        tok, table = input_ids.cpu().long(), tid2eid.cpu().long()
        ok = ((tok >= 0) & (tok < table.shape[0]))[:, None]
        ids = table[tok.clamp(0, table.shape[0] - 1)]
        ids = torch.where(ok & (ids >= 0) & (ids < E), ids, torch.full_like(ids, -1))
        w = torch.where(ids >= 0, s.gather(1, ids.clamp(min=0)), torch.zeros_like(s[:, :k]))
    else:
        cand, groups = c, None
        if n_group > 1:
            G = E // n_group
            cg = c.view(Tn, n_group, G)
            gs = cg.topk(2, -1).values.sum(-1) if bias is not None and G > 1 else cg.max(-1).values
            kept = torch.sort(gs, dim=-1, descending=True, stable=True).indices[:, :topk_group]
            groups = (G, gs, gs.gather(1, kept[:, -1:]).squeeze(1))
            mask = torch.zeros(Tn, n_group, dtype=torch.bool).scatter_(1, kept, True)
            cand = c.masked_fill(~mask.repeat_interleave(G, 1), -math.inf)
        ids = torch.sort(cand, dim=-1, descending=True, stable=True).indices[:, :k]
        w = s.gather(1, ids)
    if renorm:
        w = w / w.sum(-1, keepdim=True).clamp(min=1e-20)
    return w * scale, ids, c, s, groups


def near(a, b):
    """a and b differ by fp32 rounding at most (relative 1e-5) but are not equal."""
    return a != b and abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-3)


def route_check(name, w, ids, ref, renorm, scale, hashed=False):
    """ids: the reference's, except that a slot may hold another expert whose selection score
    differs from the reference expert's by a near tie (relative 1e-5, the fp32 rounding of the
    scores and the bias; an exact tie must go to the lower id), and no expert twice in a row.
    Weights: within 1e-5 relative of the fp64 weights of the ids the op chose. With groups, a
    row whose kept groups are decided by such a near tie of group scores (a group within 1e-5
    of the last kept one's score) may keep the other group: its slots then need only come from
    groups at or near the kept ones' scores."""
    _, rid, c, s, groups = ref
    got = ids.cpu().long()
    assert got.shape == rid.shape, f"{name}: ids shape {tuple(got.shape)} vs {tuple(rid.shape)}"
    for t, j in (got != rid).nonzero().tolist():
        a, b = int(got[t, j]), int(rid[t, j])
        ok = 0 <= a < c.shape[1] and b >= 0 and a not in got[t, :j].tolist()
        if ok and groups is not None:
            G, gs, last = groups
            row, edge = gs[t].tolist(), float(last[t])
            if any(near(x, edge) for x in row) and (row[a // G] >= edge or near(row[a // G], edge)):
                continue  # the group flip of a near tie
        assert ok and near(float(c[t, a]), float(c[t, b])), f"{name}: id[{t}, {j}] = {a}, want {b}" + \
            (f" (selection scores {float(c[t, a])!r} and {float(c[t, b])!r})" if ok else "")
    if not hashed:
        srt = got.sort(-1).values
        assert bool((srt[:, 1:] != srt[:, :-1]).all()), f"{name}: an expert twice in a row"
    rw = torch.where(got >= 0, s.gather(1, got.clamp(min=0)), torch.zeros_like(s[:, :got.shape[1]]))
    if renorm:
        rw = rw / rw.sum(-1, keepdim=True).clamp(min=1e-20)
    close(name + " weights", w, rw * scale, 1e-5, 1e-12)


def new_outputs(Tn, k, ids_dtype=torch.int32):
    w = torch.empty(Tn, k, device=dev)
    i = torch.empty(Tn, k, device=dev, dtype=ids_dtype)
    poison(w, i)
    return w, i


@case
def route_deepseek_v3():
    """256 experts, 8 groups, 4 kept, k 8, biased sigmoid, renormalized, x2.5: every form."""
    E, k, ng, kg, sc = 256, 8, 8, 4, 2.5
    for dt in (torch.bfloat16, torch.float32):
        for Tn in (1, 7, 333, 4096):
            g = torch.randn(Tn, E, device=dev).to(dt)
            if Tn == 333:
                g[::5, ::7] = float("nan")  # NaN reads as -inf: score 0, only its bias left
            b = 0.3 * torch.randn(E, device=dev)
            ref = route_ref(g, k, "sigmoid", b, ng, kg, True, sc)
            name = f"DeepSeek-V3 {dt} {Tn}"
            w, i = T.topk_route(g, k, "sigmoid", True, bias=b, n_group=ng, topk_group=kg, routed_scaling_factor=sc)
            assert w.dtype == torch.float32 and i.dtype == torch.int32
            route_check(name + " T", w, i, ref, True, sc)
            w, i = new_outputs(Tn, k, torch.int64)
            T.topk_route(g, k, "sigmoid", True, bias=b, n_group=ng, topk_group=kg, routed_scaling_factor=sc,
                         out=(w, i))
            route_check(name + " T out= int64", w, i, ref, True, sc)
            w, i = new_outputs(Tn, k)
            assert aiter.biased_grouped_topk(g, b, w, i, ng, kg, True, sc) is None
            route_check(name + " aiter", w, i, ref, True, sc)
            w, i = vllm.grouped_topk(g, ng, kg, k, True, sc, b.to(dt), 1)
            assert w.dtype == torch.float32 and i.dtype == torch.int32
            route_check(name + " vllm op", w, i, route_ref(g, k, "sigmoid", b.to(dt), ng, kg, True, sc), True, sc)
            w, i = vfm.grouped_topk(g, g, k, True, ng, kg, "sigmoid", sc, b)
            route_check(name + " vllm fused_moe", w, i, ref, True, sc)


@case
def route_sqrt_softplus_and_hash():
    """DeepSeek-V4-style: 384 experts, k 6, sqrt(softplus), bias near 8 for every expert, x1.5;
    then hash routing by a [vocab, 6] table, int32 and int64, with ids and entries out of
    range."""
    E, k, sc, V = 384, 6, 1.5, 1000
    for Tn in (1, 64, 2048):
        g = (2 * torch.randn(Tn, E, device=dev)).bfloat16()
        g[::9] *= 20  # rows in softplus's linear branch (x > 20)
        b = 8 + 0.01 * torch.randn(E, device=dev)
        ref = route_ref(g, k, "sqrtsoftplus", b, renorm=True, scale=sc)
        w, i = T.topk_route(g, k, "sqrtsoftplus", True, bias=b, routed_scaling_factor=sc)
        route_check(f"sqrt-softplus {Tn} T", w, i, ref, True, sc)
        w, i = new_outputs(Tn, k)
        aiter.topk_gating(w, i, g, b, True, sc)
        route_check(f"sqrt-softplus {Tn} aiter", w, i, ref, True, sc)
        w, i = new_outputs(Tn, k)
        tei = torch.full((Tn, k), -7, device=dev, dtype=torch.int32)
        assert vllm.topk_softplus_sqrt(w, i, tei, g, True, sc, b) is None
        route_check(f"sqrt-softplus {Tn} vllm", w, i, ref, True, sc)
        assert torch.equal(tei.cpu(), torch.arange(Tn * k, dtype=torch.int32).view(k, Tn).t()), "token_expert_indices"
        for idt in (torch.int32, torch.int64):
            tok = torch.randint(0, V, (Tn,), device=dev)
            tok[3::7] = V  # a token id out of range: ids -1, weight 0
            table = torch.randint(0, E, (V, k), device=dev)
            table[5::11, 2] = E
            table[7::13, 4] = -2
            tok, table = tok.to(idt), table.to(idt)
            href = route_ref(g, k, "sqrtsoftplus", b, renorm=True, scale=sc, input_ids=tok, tid2eid=table)
            w, i = T.topk_route(g, k, "sqrtsoftplus", True, bias=b, routed_scaling_factor=sc, input_ids=tok,
                                tid2eid=table, ids_dtype=idt)
            assert i.dtype == idt
            assert torch.equal(i.cpu().long(), href[1]), f"hash {Tn} {idt}: ids"
            route_check(f"hash {Tn} {idt}", w, i, href, True, sc, hashed=True)
            w, i = new_outputs(Tn, k, idt)
            vllm.topk_softplus_sqrt(w, i, torch.empty((Tn, k), device=dev, dtype=torch.int32), g, True, sc, b, tok,
                                    table)
            assert torch.equal(i.cpu().long(), href[1]), f"hash {Tn} {idt}: vllm ids"
            route_check(f"hash {Tn} {idt} vllm", w, i, href, True, sc, hashed=True)


@case
def route_llama4():
    """Llama-4: 128 experts, sigmoid top-1, no renormalization."""
    E = 128
    for Tn in (1, 77, 4096):
        g = torch.randn(Tn, E, device=dev, dtype=torch.bfloat16)
        ref = route_ref(g, 1, "sigmoid")
        w, i = T.topk_route(g, 1, "sigmoid")
        route_check(f"Llama-4 {Tn} T", w, i, ref, False, 1.0)
        for idt in (torch.int32, torch.int64):
            w, i = new_outputs(Tn, 1, idt)
            tei = torch.full((Tn, 1), -7, device=dev, dtype=torch.int32)
            assert vllm.topk_sigmoid(w, i, tei, g, False) is None
            route_check(f"Llama-4 {Tn} vllm {idt}", w, i, ref, False, 1.0)
            assert torch.equal(tei.cpu(), torch.arange(Tn, dtype=torch.int32)[:, None]), "token_expert_indices"
        w, i = new_outputs(Tn, 1)
        aiter.topk_gating(w, i, g, None, False, 1.0, "sigmoid")
        route_check(f"Llama-4 {Tn} aiter", w, i, ref, False, 1.0)


@case
def route_softmax_forms():
    """Softmax-scored routers: AITER's and vLLM's grouped top-k without a bias (groups scored by
    their best), and vLLM's topk_softmax with a correction bias."""
    for Tn, E, k, ng, kg in ((5, 64, 6, 8, 3), (600, 160, 6, 8, 3), (300, 256, 8, 8, 4)):
        g = torch.randn(Tn, E, device=dev, dtype=torch.bfloat16)
        ref = route_ref(g, k, "softmax", None, ng, kg, True)
        w, i = new_outputs(Tn, k)
        aiter.grouped_topk(g, w, i, ng, kg, True)
        route_check(f"softmax grouped {Tn} {E} aiter", w, i, ref, True, 1.0)
        w, i = vfm.grouped_topk(g, g, k, True, ng, kg)
        route_check(f"softmax grouped {Tn} {E} vllm", w, i, ref, True, 1.0)
        w, i = new_outputs(Tn, k)
        aiter.grouped_topk(g, w, i, ng, kg, False, False, 2.0)  # sigmoid, not renormalized
        route_check(f"sigmoid grouped {Tn} {E} aiter", w, i, route_ref(g, k, "sigmoid", None, ng, kg, False, 2.0),
                    False, 2.0)
        b = 0.01 * torch.randn(E, device=dev)
        tei = torch.full((Tn, k), -7, device=dev, dtype=torch.int32)
        w, i = new_outputs(Tn, k)
        vllm.topk_softmax(w, i, tei, g, True, b)
        route_check(f"softmax biased {Tn} {E} vllm", w, i, route_ref(g, k, "softmax", b, renorm=True), True, 1.0)
        assert torch.equal(tei.cpu(), (torch.arange(k)[None, :] * Tn + torch.arange(Tn)[:, None]).int())


def align_ref(ids, E, bs, expert_map=None):
    """vLLM's layout (docs/routing.md): (sorted_token_ids [P], expert_ids [ceil(P / bs)], total)
    with P = numel + E * (bs - 1); pairs in ascending flat index; ids outside [0, E) dropped;
    blocks past the last hold 0, or expert_map[0]."""
    flat = ids.cpu().long().flatten()
    numel = flat.numel()
    P = numel + E * (bs - 1)
    emap = expert_map.cpu().long() if expert_map is not None else None
    sid = torch.full((P,), numel, dtype=torch.long)
    eid = torch.full((-(-P // bs),), int(emap[0]) if emap is not None else 0, dtype=torch.long)
    at = 0
    for e in range(E):
        idx = (flat == e).nonzero().flatten()
        n = idx.numel()
        if n == 0:
            continue
        padded = -(-n // bs) * bs
        sid[at:at + n] = idx
        eid[at // bs:(at + padded) // bs] = int(emap[e]) if emap is not None else e
        at += padded
    return sid, eid, at


def align_equal(name, got, ref, L=None, bs=None, numel=None):
    """got (sorted_ids, expert_ids, num_tokens_post_pad) against align_ref's, cut to vLLM's
    length L or, past max_num_tokens_padded, filled with numel as vLLM fills it."""
    sid, eid, total = ref
    if L is not None:
        sid = sid[:L] if L <= sid.numel() else torch.cat([sid, torch.full((L - sid.numel(),), numel)])
        eid = eid[:-(-L // bs)]
    assert torch.equal(got[0].cpu().long(), sid), f"{name}: sorted_token_ids"
    assert torch.equal(got[1].cpu().long(), eid), f"{name}: expert_ids"
    assert got[2].shape == (1,) and int(got[2]) == total, f"{name}: num_tokens_post_pad {int(got[2])}, want {total}"


def local_ids(ids, emap, E):
    """What vLLM's op does with an expert map: the local expert, -1 (dropped) off this rank."""
    flat = ids.cpu().long()
    return torch.where((flat >= 0) & (flat < E), emap.cpu().long()[flat.clamp(0, E - 1)], torch.full_like(flat, -1))


@case
def moe_align_forms():
    for Tn, k, E, bs, skew in ((1, 8, 256, 64, False), (300, 8, 256, 64, False), (4096, 8, 256, 16, False),
                               (17, 4, 64, 1, False), (5, 2, 8, 256, False), (1000, 6, 384, 32, True)):
        ids = torch.stack([torch.randperm(E)[:k] for _ in range(Tn)]).int().to(dev)
        if skew:  # most pairs on a few experts, and some ids out of range (dropped)
            ids = torch.where(torch.rand(Tn, k, device=dev) < 0.8, ids % 5, ids).int()
            ids[::37, 0] = E
        emap = torch.full((E,), -1, dtype=torch.int32)
        emap[::3] = torch.arange(len(range(0, E, 3)), dtype=torch.int32)
        emap = emap.to(dev)
        name = f"align {Tn}x{k} E{E} bs{bs}"
        ref, mref = align_ref(ids, E, bs), align_ref(ids, E, bs, emap)
        align_equal(name + " T", T.moe_align_block_size(ids, E, bs), ref)
        P, B, _ = aiter_aot.moe_align_sizes(Tn, k, E, bs)
        out = (torch.empty(P, device=dev, dtype=torch.int32), torch.empty(B, device=dev, dtype=torch.int32),
               torch.empty(1, device=dev, dtype=torch.int32))
        poison(*out)
        align_equal(name + " T out= map", T.moe_align_block_size(ids, E, bs, emap, out=out), mref)
        lref = align_ref(local_ids(ids, emap, E), E, bs)
        for pad in (False, True):
            L, n = vfm._vllm_length(Tn * k, E, bs, pad), Tn * k
            align_equal(f"{name} vllm pad={pad}", vfm.moe_align_block_size(ids, bs, E, None, pad), ref, L, bs, n)
            align_equal(f"{name} vllm map pad={pad}", vfm.moe_align_block_size(ids.long(), bs, E, emap, pad), mref,
                        L, bs, n)
            align_equal(f"{name} vllm ignore pad={pad}", vfm.moe_align_block_size(ids, bs, E, emap, pad, True), lref,
                        L, bs, n)
            for emap_op, r in ((None, ref), (emap, lref)):  # the op's buffers of vLLM's length
                bufs = (torch.empty(L, device=dev, dtype=torch.int32),
                        torch.empty(-(-L // bs), device=dev, dtype=torch.int32),
                        torch.empty(1, device=dev, dtype=torch.int32))
                poison(*bufs)
                assert vllm.moe_align_block_size(ids.long(), E, bs, *bufs, emap_op) is None
                align_equal(f"{name} vllm op map={emap_op is not None} pad={pad}", bufs, r, L, bs, n)


@case
def compile_and_graph_routers():
    """The routers under torch.compile(fullgraph=True) and in a CUDA graph, against eager."""
    E, k = 256, 8
    g = torch.randn(64, E, device=dev, dtype=torch.bfloat16)
    b = 0.3 * torch.randn(E, device=dev)

    def step(g, b):
        w, i = T.topk_route(g, k, "sigmoid", True, bias=b, n_group=8, topk_group=4, routed_scaling_factor=2.5)
        s, e, n = T.moe_align_block_size(i, E, 64)
        w2, i2 = torch.empty(g.shape[0], 1, device=g.device), torch.empty(g.shape[0], 1, device=g.device,
                                                                            dtype=torch.int32)
        tei = torch.empty_like(i2)
        vllm.topk_sigmoid(w2, i2, tei, g, False)
        return w, i, s, e, n, w2, i2, tei

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(g, b)
    want = step(g, b)
    for n, a, x in zip(("w", "i", "sorted", "experts", "post_pad", "w2", "i2", "tei"), got, want):
        assert torch.equal(a, x), f"compiled {n} differs from eager"
    aiter_aot.preload(torch.cuda.current_device())
    w, i = new_outputs(64, k)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        T.topk_route(g, k, "sigmoid", True, bias=b, n_group=8, topk_group=4, routed_scaling_factor=2.5, out=(w, i))
        s, e, n = T.moe_align_block_size(i, E, 64)
    g.copy_(torch.randn_like(g))
    poison(w, i, s, e, n)
    graph.replay()
    torch.cuda.synchronize()
    route_check("graph route", w, i, route_ref(g, k, "sigmoid", b, 8, 4, True, 2.5), True, 2.5)
    align_equal("graph align", (s, e, n), align_ref(i, E, 64))


# ---- mHC --------------------------------------------------------------------------------------

def mhc_inputs(Tn, C, broadcast=False):
    r = torch.randn((Tn, C) if broadcast else (Tn, 4, C), device=dev).bfloat16()
    fn = 1e-4 * torch.randn(24, C if broadcast else 4 * C, device=dev)
    return r, fn, 0.1 * torch.randn(3, device=dev), torch.randn(24, device=dev)


def check_pre(name, got, ref):
    post, comb, li = got[:3]
    rpost, rcomb, rli, mag = ref
    close(name + " post", post.reshape(-1, 4), rpost, 1e-4, 1e-6)
    close(name + " comb", comb, rcomb, 1e-4, 1e-6)
    bf16_check(name + " layer_input", li, rli, mag, 2.0)


@case
def mhc_pre_forms():
    for Tn, C in ((7, 4096), (300, 1024), (5, 7168)):
        r, fn, sc, base = mhc_inputs(Tn, C)
        ref = mhc_ref(r.double().cpu(), fn.cpu(), sc, base)
        check_pre(f"T.mhc_pre {Tn} {C}", T.mhc_pre(r, fn, sc, base), ref)
        outs = (torch.empty(Tn, 4, device=dev), torch.empty(Tn, 4, 4, device=dev),
                torch.empty(Tn, C, device=dev, dtype=torch.bfloat16))
        poison(*outs)
        got = T.mhc_pre(r, fn, sc, base, out=outs)
        assert all(a is b for a, b in zip(got, outs))
        check_pre("T.mhc_pre out=", outs, ref)
        p, c, li = vllm.mhc_pre(r, fn, sc, base, *P6[:5])
        assert p.shape == (Tn, 4, 1)
        check_pre("vllm.mhc_pre", (p, c, li), ref)
        nw = (1 + 0.1 * torch.randn(C, device=dev)).bfloat16()
        check_pre("T.mhc_pre norm", T.mhc_pre(r, fn, sc, base, nw), mhc_ref(r.double().cpu(), fn.cpu(), sc, base, nw))
        s = 4
        mix, sq = T.mhc_prenorm_gemm(r, fn, s)
        check_pre("prenorm_gemm + pre", T.mhc_pre_partials(mix, sq, sc, base, r), ref)
    rb, fnb, sc, base = mhc_inputs(9, 1024, broadcast=True)
    nw = (1 + 0.1 * torch.randn(1024, device=dev)).bfloat16()
    ro, p, c, li = vllm.mhc_pre_broadcast(rb, fnb, sc, base, nw)
    check_pre("broadcast", (p, c, li), mhc_ref(rb.double().cpu(), fnb.cpu(), sc, base, nw, broadcast=True))
    assert torch.equal(ro, rb[:, None, :].expand(-1, 4, -1)), "residual_out is not the expanded input"


def post_ref(comb, post, r, x):
    v = post.double().cpu().reshape(-1, 4)[:, :, None] * x.double().cpu()[:, None, :] + \
        torch.einsum("tjk,tjh->tkh", comb.double().cpu(), r.double().cpu())
    mag = post.double().cpu().reshape(-1, 4).abs()[:, :, None] * x.double().cpu().abs()[:, None, :] + \
        torch.einsum("tjk,tjh->tkh", comb.double().cpu().abs(), r.double().cpu().abs())
    return v, mag


@case
def mhc_post_and_fused():
    for Tn, C in ((5, 4096), (40, 1024)):
        r, fn, sc, base = mhc_inputs(Tn, C)
        post, comb, _ = T.mhc_pre(r, fn, sc, base)
        x = torch.randn(Tn, C, device=dev).bfloat16()
        v, mag = post_ref(comb, post, r, x)
        out = torch.empty_like(r)
        poison(out)
        bf16_check("T.mhc_post", T.mhc_post(comb, post, r, x, out=out), v, mag)
        bf16_check("vllm.mhc_post", vllm.mhc_post(x, r, post.unsqueeze(-1), comb), v, mag)
        ro, p2, c2, li = vllm.mhc_fused_post_pre(x, r, post.unsqueeze(-1), comb, fn, sc, base)
        bf16_check("fused residual_out", ro, v, mag)
        # up to 16 tokens the projection reads the unrounded sum, beyond from the stored bf16
        basis = v if Tn <= 16 else ro.double().cpu()
        ref = mhc_ref(basis, fn.cpu(), sc, base)
        rp, rc, _, _ = ref
        close("fused post", p2.reshape(-1, 4), rp, 1e-4, 1e-6)
        close("fused comb", c2, rc, 1e-4, 1e-6)
        # layer_input collapses the stored residual with the coefficients of `basis`
        flat = basis.reshape(Tn, -1)
        mix = flat @ fn.double().cpu().T * torch.rsqrt((flat ** 2).mean(-1, keepdim=True) + P6[0])
        pre = torch.sigmoid(mix[:, :4] * sc.double().cpu()[0] + base.double().cpu()[:4]) + P6[1]
        rli = (pre[:, :, None] * ro.double().cpu()).sum(1)
        rmag = (pre[:, :, None] * ro.double().cpu().abs()).sum(1)
        bf16_check("fused layer_input", li, rli, rmag, 2.0)


# ---- mHC's delayed pre (DeepSeek-V4.1) ---------------------------------------------------------

def mhc_delayed_ref(residual, fn, scale, base, pre_mix=None, x=None, norm_weight=None, p=P6):
    """docs/semantics.md's delayed pre in fp64 on the CPU (written from the definition, as vLLM's
    mhc_pre_delayed_torch reads, plus the norm): (post, comb, layer_input, magnitude,
    next_pre_mix). The projection input is x when given, else the residual flattened."""
    rms_eps, pre_eps, eps, mult, iters, norm_eps = p
    r = residual.double().cpu()
    flat = (r if x is None else x.double().cpu()).reshape(r.shape[0], -1)
    mix = flat @ fn.double().cpu().T * torch.rsqrt((flat ** 2).mean(-1, keepdim=True) + rms_eps)
    sc, b = scale.double().cpu(), base.double().cpu()
    nxt = torch.sigmoid(mix[:, :4] * sc[0] + b[:4]) + pre_eps
    post = torch.sigmoid(mix[:, 4:8] * sc[1] + b[4:8]) * mult
    comb = sinkhorn((mix[:, 8:] * sc[2] + b[8:]).view(-1, 4, 4), eps, iters)
    if pre_mix is None:
        u, mag = r[:, 0], r[:, 0].abs()
    else:
        pm = pre_mix.double().cpu()[:, :, None]
        u, mag = (pm * r).sum(1), (pm * r.abs()).sum(1)
    if norm_weight is not None:  # the squares of the bf16 collapse
        ub = u.to(torch.bfloat16).double()
        rs = torch.rsqrt((ub ** 2).mean(-1, keepdim=True) + norm_eps)
        w = norm_weight.double().cpu()
        u, mag = ub * rs * w, mag * rs * w.abs()
    return post, comb, u, mag, nxt


def check_delayed(name, got, ref):
    post, comb, li, nxt = got[:4]
    rpost, rcomb, rli, mag, rnxt = ref
    close(name + " next_pre_mix", nxt, rnxt, 1e-4, 1e-6)
    close(name + " post", post.reshape(-1, 4), rpost, 1e-4, 1e-6)
    close(name + " comb", comb, rcomb, 1e-4, 1e-6)
    bf16_check(name + " layer_input", li, rli, mag, 2.0)


def wide(fn, sc):
    """fn and scale 100 and 10 times vLLM's draws: logits of order 1, where the projection's
    rounding shows in post, comb and next_pre_mix."""
    return 100 * fn, 10 * sc


@case
def mhc_pre_delayed():
    for Tn, C, w in ((1, 4096, False), (16, 7168, True), (300, 1024, False), (1030, 4096, True)):
        r, fn, sc, base = mhc_inputs(Tn, C)
        if w:
            fn, sc = wide(fn, sc)
        pm = torch.rand(Tn, 4, device=dev)
        nw = (1 + 0.1 * torch.randn(C, device=dev)).bfloat16()
        for pre_mix, norm in ((pm, None), (None, nw), (pm, nw), (None, None)):
            tag = f"T.mhc_pre_delayed {Tn} {C} pre_mix={pre_mix is not None} norm={norm is not None}"
            got = T.mhc_pre_delayed(r, fn, sc, base, pre_mix, norm_weight=norm)
            check_delayed(tag, got, mhc_delayed_ref(r, fn, sc, base, pre_mix, None, norm))
        assert torch.equal(got[2], r[:, 0]), "without pre_mix and norm, layer_input is not stream 0"
        outs = (torch.empty(Tn, 4, device=dev), torch.empty(Tn, 4, 4, device=dev),
                torch.empty(Tn, C, device=dev, dtype=torch.bfloat16), torch.empty(Tn, 4, device=dev))
        poison(*outs)
        got = T.mhc_pre_delayed(r, fn, sc, base, pm, norm_weight=nw, out=outs)
        assert all(a is b for a, b in zip(got, outs))
        ref = mhc_delayed_ref(r, fn, sc, base, pm, None, nw)
        check_delayed("T.mhc_pre_delayed out=", outs, ref)
        p, c, li, nxt = vllm.mhc_pre_delayed(r, fn, sc, base, *P6[:5], pm, None, nw, P6[5])
        assert p.shape == (Tn, 4, 1) and nxt.shape == (Tn, 4)
        check_delayed("vllm.mhc_pre_delayed", (p, c, li, nxt), ref)
        # the first layer: the [T, C] embedding projected against fn [24, C]
        x = torch.randn(Tn, C, device=dev).bfloat16()
        fnx = 1e-2 * torch.randn(24, C, device=dev)
        got = vllm.mhc_pre_delayed(r, fnx, sc, base, *P6[:5], pm, x, nw, P6[5])
        check_delayed("vllm.mhc_pre_delayed x", got, mhc_delayed_ref(r, fnx, sc, base, pm, x, nw))


@case
def mhc_fused_post_pre_delayed():
    for Tn, C, w in ((5, 4096, True), (16, 5120, False), (40, 1024, True), (1024, 7168, False)):
        r, fn, sc, base = mhc_inputs(Tn, C)
        post, comb, _ = T.mhc_pre(r, fn, sc, base)
        if w:
            fn, sc = wide(fn, sc)
        x = torch.randn(Tn, C, device=dev).bfloat16()
        pm = torch.rand(Tn, 4, device=dev)
        nw = (1 + 0.1 * torch.randn(C, device=dev)).bfloat16()
        v, mag = post_ref(comb, post, r, x)
        for pre_mix, norm, aux in ((pm, nw, True), (None, None, False), (pm, None, True), (None, nw, False)):
            tag = f"vllm.mhc_fused_post_pre_delayed {Tn} {C}"
            ro, p2, c2, li, nxt, ax = vllm.mhc_fused_post_pre_delayed(x, r, post.unsqueeze(-1), comb, fn, sc, base,
                                                                     *P6[:5], pre_mix, norm, P6[5], aux)
            bf16_check(tag + " residual_out", ro, v, mag)
            # the projection and the collapse read residual_out as stored, at every token count
            check_delayed(tag, (p2, c2, li, nxt), mhc_delayed_ref(ro, fn, sc, base, pre_mix, None, norm))
            if aux:
                rod = ro.double().cpu()
                bf16_check(tag + " aux", ax, rod.mean(1), rod.abs().mean(1))
            else:
                assert ax.shape == (0, C)
        outs = tuple(torch.empty_like(t) for t in (ro, post, comb, li, nxt, torch.empty(Tn, C, device=dev).bfloat16()))
        poison(*outs)
        got = T.mhc_fused_post_pre_delayed(x, r, post, comb, fn, sc, base, pm, nw, capture_aux=True, out=outs)
        assert all(a is b for a, b in zip(got, outs))
        bf16_check("T.mhc_fused_post_pre_delayed out= residual_out", outs[0], v, mag)
        check_delayed("T.mhc_fused_post_pre_delayed out=", outs[1:5],
                      mhc_delayed_ref(outs[0], fn, sc, base, pm, None, nw))


@case
def mhc_delayed_compile_and_graph():
    Tn, C = 12, 1024
    r, fn, sc, base = mhc_inputs(Tn, C)
    fn, sc = wide(fn, sc)
    post, comb, _ = T.mhc_pre(r, fn, sc, base)
    x, pm = torch.randn(Tn, C, device=dev).bfloat16(), torch.rand(Tn, 4, device=dev)

    def step(x, r, post, comb, fn, sc, base, pm):
        ro, p2, c2, li, nxt, _ = T.mhc_fused_post_pre_delayed(x, r, post, comb, fn, sc, base, pm)
        p3, c3, li3, nxt3 = T.mhc_pre_delayed(ro, fn, sc, base, nxt)
        return ro, p2, c2, li, nxt, p3, c3, li3, nxt3

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(x, r, post, comb, fn, sc, base, pm)
    want = step(x, r, post, comb, fn, sc, base, pm)
    for i, (a, b) in enumerate(zip(got, want)):
        close(f"compiled delayed output {i}", a, b, 1e-5, 1e-6)
    static = [t.clone() for t in (x, r, post, comb, fn, sc, base, pm)]
    step(*static)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = step(*static)
    for t in outs:
        poison(t)
    graph.replay()
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(zip(outs, want)):
        close(f"graph delayed output {i}", a, b, 1e-5, 1e-6)


@case
def mhc_head():
    Tn, C = 11, 2048
    r = torch.randn(Tn, 4, C, device=dev).bfloat16()
    fn = 1e-4 * torch.randn(4, 4 * C, device=dev)
    sc, base = 0.1 * torch.randn(1, device=dev), torch.randn(4, device=dev)
    x = r.double().cpu().reshape(Tn, -1)
    mix = x @ fn.double().cpu().T * torch.rsqrt((x ** 2).mean(-1, keepdim=True) + 1e-6)
    pre = torch.sigmoid(mix * sc.double().cpu()[0] + base.double().cpu()) + 1e-6
    ref = (pre[:, :, None] * r.double().cpu()).sum(1)
    mag = (pre[:, :, None] * r.double().cpu().abs()).sum(1)
    bf16_check("vllm.hc_head", vllm.hc_head(r, fn, sc, base), ref, mag)
    out = torch.empty(Tn, C, device=dev, dtype=torch.bfloat16)
    poison(out)
    bf16_check("T.mhc_head out=", T.mhc_head(r, fn, sc, base, out=out), ref, mag)


# ---- FMHA -------------------------------------------------------------------------------------

def fmha_inputs(seqs_q, seqs_k, hq, hk, d, dv, dt=torch.bfloat16):
    cu_q = torch.tensor([0] + list(itertools.accumulate(seqs_q)), dtype=torch.int32, device=dev)
    cu_k = torch.tensor([0] + list(itertools.accumulate(seqs_k)), dtype=torch.int32, device=dev)
    q = torch.randn(sum(seqs_q), hq, d, device=dev).to(dt)
    k = torch.randn(sum(seqs_k), hk, d, device=dev).to(dt)
    v = torch.randn(sum(seqs_k), hk, dv, device=dev).to(dt)
    return q, k, v, cu_q, cu_k, max(seqs_q)


@case
def fmha_torch_forms():
    for (sq, sk, hq, hk, d, dv, causal, wl, wr, cap, dt) in (
            ([37, 128, 5], [37, 128, 5], 8, 8, 128, 128, False, -1, -1, 0.0, torch.bfloat16),
            ([100, 3, 64], [20, 90, 64], 8, 2, 128, 128, True, -1, -1, 0.0, torch.bfloat16),   # GQA, sq > sk
            ([50, 70], [80, 70], 4, 1, 64, 64, False, 16, 4, 0.0, torch.float16),              # MQA, window
            ([33], [47], 4, 2, 192, 128, True, -1, -1, 30.0, torch.bfloat16),                 # soft cap
            ([20, 0, 9], [25, 4, 9], 2, 2, 256, 256, True, -1, -1, 0.0, torch.bfloat16)):     # empty sequence
        q, k, v, cu_q, cu_k, mq = fmha_inputs(sq, sk, hq, hk, d, dv, dt)
        scale = d ** -0.5
        ro, rl = fmha_ref(q, k, v, cu_q, cu_k, scale, causal, wl, 0 if causal else wr, cap)
        out = torch.empty(q.shape[0], hq, dv, device=dev, dtype=dt)
        lse = torch.empty(hq, q.shape[0], device=dev)
        poison(out, lse)
        T.fmha_varlen_fwd(q, k, v, cu_q, cu_k, mq, scale, causal=causal, window_left=wl,
                          window_right=wr, logits_soft_cap=cap, out=out, lse=lse)
        name = f"fmha {sq} {sk} {hq}/{hk} d{d}"
        # rows of zero-length sequences are not written: exclude none here (no zero-length q rows
        # exist in the packed layout), every row is checked
        fmha_check(name, out, lse, ro, rl)
        o2 = T.fmha_varlen_fwd(q, k, v, cu_q, cu_k, mq, causal=causal, window_left=wl, window_right=wr,
                               logits_soft_cap=cap)
        fmha_check(name + " allocating", o2, None, ro, rl)


@case
def fmha_aiter_drop_in():
    q, k, v, cu_q, cu_k, mq = fmha_inputs([64, 200], [64, 300], 16, 4, 128, 128)
    ro, rl = fmha_ref(q, k, v, cu_q, cu_k, 0.1, True, -1, 0)
    out, lse, p, rng = aiter.fmha_v3_varlen_fwd(q, k, v, cu_q, cu_k, mq, 300, 0, 0.0, 0.1, 0.0, False, True, -1, -1,
                                                True, False, 1)
    assert p.numel() == 0 and rng.shape == (2,) and rng.dtype == torch.int64 and lse.shape == (16, 264)
    fmha_check("aiter fmha", out, lse, ro, rl)
    out2 = torch.empty_like(out)
    poison(out2)
    o3, lse2, _, _ = aiter.fmha_v3_varlen_fwd(q, k, v, cu_q, cu_k, mq, 300, 0, 0.0, 0.1, 0.0, False, True, -1, -1,
                                              False, False, 1, out=out2)
    assert o3 is out2 and lse2.numel() == 0
    fmha_check("aiter fmha out=", out2, None, ro, rl)


# ---- errors, streams, compile, graphs ----------------------------------------------------------

@case
def cpu_tensor_refused():
    g = torch.randn(4, 8)
    try:
        T.topk_softmax(g, 2)
    except ValueError as e:
        assert "gating_output is a CPU tensor" in str(e), str(e)
    else:
        raise AssertionError("a CPU tensor was accepted")
    q = torch.randn(8, 2, 64, device=dev, dtype=torch.bfloat16)
    try:
        T.fmha_varlen_fwd(q, q, q, torch.tensor([0, 8], dtype=torch.int32), torch.tensor([0, 8], dtype=torch.int32), 8)
    except ValueError as e:
        assert "cu_seqlens_q is a CPU tensor" in str(e), str(e)
    else:
        raise AssertionError("a CPU cu_seqlens was accepted")


@case
def dlpack_path_with_torch():
    g = torch.randn(50, 64, device=dev)
    w = torch.empty(50, 4, device=dev)
    i = torch.empty(50, 4, device=dev, dtype=torch.int32)
    poison(w, i)
    aiter_aot.topk_softmax(g, w, i, None, False, torch.cuda.current_stream().cuda_stream)
    rw, ri = topk_ref(g, 4, False)
    assert torch.equal(i.cpu().long(), ri)
    close("dlpack weights", w, rw, 2e-6, 1e-9)


@case
def side_stream():
    g = torch.randn(300, 256, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        w, i, _ = T.topk_softmax(g, 8, True)
        w2 = torch.empty_like(w)
        i2 = torch.empty_like(i)
    T.topk_softmax(g, 8, True, out=(w2, i2, None), stream=s.cuda_stream)
    s.synchronize()
    rw, ri = topk_ref(g, 8, True)
    assert torch.equal(i.cpu().long(), ri) and torch.equal(i2.cpu().long(), ri)


@case
def compile_fullgraph():
    E = 64
    g = torch.randn(40, E, device=dev, dtype=torch.bfloat16)
    r, fn, sc, base = mhc_inputs(6, 1024)
    q, k, v, cu_q, cu_k, mq = fmha_inputs([30, 50], [40, 50], 8, 2, 128, 128)

    def step(g, r, fn, sc, base, q, k, v, cu_q, cu_k):
        w, i, _ = T.topk_softmax(g, 8, True)
        s = T.moe_sorting(i, w, E, 32)
        p, c, li = T.mhc_pre(r, fn, sc, base)
        o = T.fmha_varlen_fwd(q, k, v, cu_q, cu_k, mq, causal=True)
        return w, i, s[0], s[3], p, c, li, o

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True)
    got = compiled(g, r, fn, sc, base, q, k, v, cu_q, cu_k)
    want = step(g, r, fn, sc, base, q, k, v, cu_q, cu_k)
    for n, a, b in zip(("w", "i", "sorted", "num_valid", "post", "comb", "li", "o"), got, want):
        if n in ("post", "comb", "li"):  # split-K sums: allow a different summation order
            close("compiled " + n, a, b, 1e-5, 1e-6)
        else:
            assert torch.equal(a, b), f"compiled {n} differs from eager"


GRAPH_FIRST = """
import torch, aiter_aot, aiter_aot.torch as T
{pre}
g = torch.randn(64, 128, device="cuda")
w = torch.empty(64, 8, device="cuda"); i = torch.empty(64, 8, device="cuda", dtype=torch.int32)
before = aiter_aot.stats()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    T.topk_softmax(g, 8, True, out=(w, i, None))
w.fill_(float("nan")); i.fill_(-7)
graph.replay(); torch.cuda.synchronize()
rw, ri = torch.sort(torch.softmax(g.double().cpu(), -1), dim=-1, descending=True, stable=True)
rw, ri = rw[:, :8], ri[:, :8]; rw = rw / rw.sum(-1, keepdim=True)
assert torch.equal(i.cpu().long(), ri), "ids"
assert float((w.double().cpu() - rw).abs().max()) < 1e-6, "weights"
g.copy_(torch.randn_like(g)); graph.replay(); torch.cuda.synchronize()
ri = torch.sort(torch.softmax(g.double().cpu(), -1), dim=-1, descending=True, stable=True)[1][:, :8]
assert torch.equal(i.cpu().long(), ri), "replay on new input"
print("before", before["device_loads"], "after", aiter_aot.stats()["device_loads"])
"""


@case
def graph_capture_of_first_call():
    rc, out = child(GRAPH_FIRST.format(pre=""))
    assert rc == 0, out
    assert "before 0 after 1" in out, out


@case
def preload_then_capture():
    rc, out = child(GRAPH_FIRST.format(pre="aiter_aot.preload(torch.cuda.current_device())"))
    assert rc == 0, out
    assert "before 1 after 1" in out, out


REPRODUCER = """
import ctypes, math, os
stub = ctypes.CDLL({stub!r}, os.RTLD_NOW | os.RTLD_GLOBAL)  # cu* names that count and fail
import torch, torch.nn.functional as F
from aiter_aot.aiter import fmha_v3_varlen_fwd
import aiter_aot
q = torch.randn(128, 8, 128, dtype=torch.bfloat16, device="cuda")
cu = torch.tensor([0, 128], dtype=torch.int32, device="cuda")
out, lse, p, rng = fmha_v3_varlen_fwd(q, q, q, cu, cu, 128, 128, 0, 0.0, 1 / math.sqrt(128), 0.0, False, False,
                                      -1, -1, False, False, 1)
qh = q.transpose(0, 1)[None]
ref = F.scaled_dot_product_attention(qh.float(), qh.float(), qh.float())[0].transpose(0, 1)
err = float((out.float() - ref).abs().max())
print("max abs error vs SDPA", err)
print("library", aiter_aot.gpu_library())
print("stub calls", ctypes.c_int.in_dll(stub, "custub_calls").value)
assert err < 2e-2
"""


@case
def aiter_report_reproducer():
    rc, out = child(REPRODUCER.format(stub=os.path.abspath(STUB)))
    print(out.strip())
    assert rc == 0, out
    assert "stub calls 0" in out, out
    assert "libcuda" in out, out


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "aiter_aot", aiter_aot.version(),
          aiter_aot.targets(), aiter_aot.stats())
    bad = [n for n, e in results if e]
    print(f"{len(results) - len(bad)} passed, {len(bad)} failed" + (f": {', '.join(bad)}" if bad else ""))
    sys.exit(1 if bad else 0)
