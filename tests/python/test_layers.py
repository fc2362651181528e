"""CPU tests of the Python layers above the extension (make check), with a stand-in for torch
(tests/python/faketorch): the drop-in signatures against AITER's and vLLM's (names, order,
defaults), the unsupported arguments, the ops registered for torch.compile, that the package
imports without torch, and each wrapper's call reaching tests/fakegpu's HIP double with the
right tensors (a swapped or misshaped argument fails the extension's checks).

usage: PYTHONPATH=<installed wheel> python3 tests/python/test_layers.py BUILDDIR"""
import inspect
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
FAKE_HIP = os.path.join(BUILD, "tests/fakegpu/hip")


def child(code, fake_device=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "faketorch"), env.get("PYTHONPATH", "")])
    if fake_device:
        env["LD_LIBRARY_PATH"] = FAKE_HIP
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    return r.returncode, r.stdout + r.stderr


sys.path.insert(0, os.path.join(HERE, "faketorch"))
import torch  # noqa: E402  (the stand-in)
import aiter_aot.aiter as aiter  # noqa: E402
import aiter_aot.aiter.fused_moe as fused_moe  # noqa: E402
import aiter_aot.torch as T  # noqa: E402
import aiter_aot.vllm as vllm  # noqa: E402
import aiter_aot.vllm.fused_moe as vfm  # noqa: E402

# AITER's signatures (ROCm/aiter: aiter/ops/moe_op.py, aiter/ops/moe_sorting.py,
# aiter/fused_moe.py, aiter/ops/mha.py) and vLLM's (csrc/moe/torch_bindings.cpp)
WANT = {
    aiter.topk_softmax: "(topk_weights, topk_indices, token_expert_indices, gating_output, need_renorm, "
                        "num_shared_experts=0, shared_expert_scoring_func='')",
    aiter.moe_sorting_fwd: "(topk_ids, topk_weights, sorted_token_ids, sorted_weights, sorted_expert_ids, "
                           "num_valid_ids, moe_buf, num_experts, unit_size, local_expert_mask=None, "
                           "num_local_tokens=None, dispatch_policy=0)",
    fused_moe.moe_sorting: "(topk_ids, topk_weights, num_experts, model_dim, moebuf_dtype, block_size=32, "
                           "expert_mask=None, num_local_tokens=None, dispatch_policy=0)",
    aiter.fmha_v3_varlen_fwd: "(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q, "
                              "dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, "
                              "window_size_left, window_size_right, return_softmax_lse, return_dropout_randval, "
                              "how_v3_bf16_cvt, out=None, block_table=None, bias=None, alibi_slopes=None, "
                              "q_descale=None, k_descale=None, v_descale=None, gen=None, "
                              "cu_seqlens_q_padded=None, cu_seqlens_k_padded=None)",
    vllm.topk_softmax: "(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False, "
                       "bias=None)",
    # AITER's aiter/ops/topk.py
    aiter.biased_grouped_topk: "(gating_output, correction_bias, topk_weights, topk_ids, num_expert_group, "
                               "topk_group, need_renorm, routed_scaling_factor=1.0)",
    aiter.grouped_topk: "(gating_output, topk_weights, topk_ids, num_expert_group, topk_group, need_renorm, "
                        "is_softmax=True, routed_scaling_factor=1.0)",
    aiter.topk_gating: "(topk_weights, topk_indices, gating_output, correction_bias=None, need_renorm=True, "
                       "routed_scaling_factor=1.0, score_func='sqrtsoftplus')",
    # vLLM's ops (vllm/_custom_ops.py, csrc/moe/torch_bindings.cpp), named as topk_softmax is
    vllm.topk_sigmoid: "(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False, "
                       "bias=None, routed_scaling_factor=1.0, is_padding=None)",
    vllm.topk_softplus_sqrt: "(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize, "
                             "routed_scaling_factor, correction_bias=None, input_ids=None, tid2eid=None, "
                             "is_padding=None)",
    vllm.grouped_topk: "(scores, num_expert_group, topk_group, topk, renormalize, routed_scaling_factor, bias, "
                       "scoring_func=0)",
    vllm.moe_align_block_size: "(topk_ids, num_experts, block_size, sorted_token_ids, experts_ids, "
                               "num_tokens_post_pad, expert_map=None)",
    # vLLM's fused_moe functions (router/grouped_topk_router.py, moe_align_block_size.py)
    vfm.grouped_topk: "(hidden_states, gating_output, topk, renormalize, num_expert_group=0, topk_group=0, "
                      "scoring_func='softmax', routed_scaling_factor=1.0, e_score_correction_bias=None)",
    vfm.moe_align_block_size: "(topk_ids, block_size, num_experts, expert_map=None, pad_sorted_ids=False, "
                              "ignore_invalid_experts=False)",
    vllm.mhc_post: "(x, residual, post_layer_mix, comb_res_mix)",
    # vLLM's mHC wrappers (vllm/model_executor/kernels/mhc), whose eps arguments have no
    # defaults there; defaults here only add calls that vLLM's form cannot make
    vllm.mhc_pre: "(residual, fn, hc_scale, hc_base, rms_eps=1e-06, hc_pre_eps=1e-06, hc_sinkhorn_eps=1e-06, "
                  "hc_post_mult_value=2.0, sinkhorn_repeat=20, n_splits=1, norm_weight=None, norm_eps=0.0)",
    vllm.mhc_fused_post_pre: "(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps=1e-06, "
                             "hc_pre_eps=1e-06, hc_sinkhorn_eps=1e-06, hc_post_mult_value=2.0, sinkhorn_repeat=20, "
                             "n_splits=1, tile_n=1, norm_weight=None, norm_eps=0.0)",
    # DeepSeek-V4.1's delayed pre: vLLM's mhc_pre_delayed_tilelang (and mhc_pre_delayed_torch) and
    # mhc_fused_post_pre_delayed_tilelang (vllm/model_executor/kernels/mhc/tilelang.py)
    vllm.mhc_pre_delayed: "(residual, fn, hc_scale, hc_base, rms_eps=1e-06, hc_pre_eps=1e-06, "
                          "hc_sinkhorn_eps=1e-06, hc_post_mult_value=2.0, sinkhorn_repeat=20, pre_mix=None, x=None, "
                          "norm_weight=None, norm_eps=1e-06)",
    vllm.mhc_fused_post_pre_delayed: "(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, "
                                     "rms_eps=1e-06, hc_pre_eps=1e-06, hc_sinkhorn_eps=1e-06, "
                                     "hc_post_mult_value=2.0, sinkhorn_repeat=20, pre_mix=None, norm_weight=None, "
                                     "norm_eps=1e-06, capture_aux=False)",
}


class Signatures(unittest.TestCase):
    def test_drop_ins(self):
        for fn, want in WANT.items():
            self.assertEqual(str(inspect.signature(fn)), want, fn.__qualname__)

    def test_aliases(self):
        self.assertIs(aiter.topk_softplus, aiter.topk_gating)

    def test_mhc_order(self):
        names = list(inspect.signature(vllm.mhc_pre).parameters)
        self.assertEqual(names[:9], ["residual", "fn", "hc_scale", "hc_base", "rms_eps", "hc_pre_eps",
                                     "hc_sinkhorn_eps", "hc_post_mult_value", "sinkhorn_repeat"])
        names = list(inspect.signature(vllm.mhc_fused_post_pre).parameters)
        self.assertEqual(names[:7], ["x", "residual", "post_layer_mix", "comb_res_mix", "fn", "hc_scale", "hc_base"])

    def test_registered_ops(self):
        reg = torch.library.registered
        self.assertEqual(sorted(reg), sorted("aiter_aot::" + n for n in (
            "topk_softmax", "topk_softmax_out", "moe_sorting", "topk_route", "topk_route_out", "moe_align_block_size",
            "mhc_pre", "mhc_prenorm_gemm", "mhc_pre_partials", "mhc_post", "mhc_fused_post_pre", "mhc_head",
            "mhc_pre_delayed", "mhc_fused_post_pre_delayed", "fmha_varlen_fwd")))
        for name, rec in reg.items():
            self.assertIsNotNone(rec["fake"], name + " has no fake implementation")
        self.assertEqual(reg["aiter_aot::topk_softmax_out"]["mutates_args"],
                         ("topk_weights", "topk_ids", "token_expert_indices"))
        self.assertEqual(reg["aiter_aot::topk_route_out"]["mutates_args"], ("topk_weights", "topk_ids"))
        self.assertEqual(sorted(n for n, r in reg.items() if r["mutates_args"]),
                         ["aiter_aot::topk_route_out", "aiter_aot::topk_softmax_out"])

    def test_fakes_shapes(self):
        g = torch.empty((5, 16), dtype=torch.bfloat16)
        w, i, e = torch.library.registered["aiter_aot::topk_softmax"]["fake"](g, 3, True)
        self.assertEqual((w.shape, w.dtype, i.dtype, e.shape), ((5, 3), torch.float32, torch.int32, (5, 3)))
        q = torch.empty((10, 8, 192), dtype=torch.bfloat16)
        v = torch.empty((12, 2, 128), dtype=torch.bfloat16)
        o, lse = torch.library.registered["aiter_aot::fmha_varlen_fwd"]["fake"](q, v, v, None, None, 10, 0.1,
                                                                               False, -1, -1, 0.0, True)
        self.assertEqual((o.shape, o.dtype, lse.shape), ((10, 8, 128), torch.bfloat16, (8, 10)))
        w, i = torch.library.registered["aiter_aot::topk_route"]["fake"](g, 6, 2, True, None, 0, 0, 1.5, None, None,
                                                                         True)
        self.assertEqual((w.shape, w.dtype, i.shape, i.dtype), ((5, 6), torch.float32, (5, 6), torch.int64))
        ids = torch.empty((5, 8), dtype=torch.int32)
        sid, eid, post = torch.library.registered["aiter_aot::moe_align_block_size"]["fake"](ids, 256, 64)
        P = 5 * 8 + 256 * 63
        self.assertEqual((sid.shape, eid.shape, post.shape, sid.dtype), ((P,), ((P + 63) // 64,), (1,), torch.int32))
        r = torch.empty((3, 4, 256), dtype=torch.bfloat16)
        out = torch.library.registered["aiter_aot::mhc_pre"]["fake"](r, None, None, None, None, [], False)
        self.assertEqual([x.shape for x in out], [(3, 4), (3, 4, 4), (3, 256)])
        out = torch.library.registered["aiter_aot::mhc_pre"]["fake"](torch.empty((3, 256), dtype=torch.bfloat16),
                                                                    None, None, None, None, [], True)
        self.assertEqual([x.shape for x in out], [(3, 4), (3, 4, 4), (3, 256), (3, 4, 256)])
        out = torch.library.registered["aiter_aot::mhc_pre_delayed"]["fake"](r, None, None, None, None, None, None, [])
        self.assertEqual([(x.shape, x.dtype) for x in out], [((3, 4), torch.float32), ((3, 4, 4), torch.float32),
                                                             ((3, 256), torch.bfloat16), ((3, 4), torch.float32)])
        fake = torch.library.registered["aiter_aot::mhc_fused_post_pre_delayed"]["fake"]
        for aux, rows in ((False, 0), (True, 3)):
            out = fake(None, r, None, None, None, None, None, None, None, aux, [])
            self.assertEqual([x.shape for x in out], [(3, 4, 256), (3, 4), (3, 4, 4), (3, 256), (3, 4), (rows, 256)])
            self.assertEqual((out[0].dtype, out[5].dtype), (torch.bfloat16, torch.bfloat16))


class Unsupported(unittest.TestCase):
    def fmha(self, **kw):
        q = torch.empty((128, 8, 128), dtype=torch.bfloat16)
        cu = torch.tensor([0, 128], dtype=torch.int32)
        args = [q, q, q, cu, cu, 128, 128, 0, 0.0, 128 ** -0.5, 0.0, False, False, -1, -1, False, False, 1]
        for i, name in ((8, "dropout_p"), (16, "return_dropout_randval"), (17, "how_v3_bf16_cvt")):
            if name in kw:
                args[i] = kw.pop(name)
        return aiter.fmha_v3_varlen_fwd(*args, **kw)

    def test_fmha(self):
        for kw, name in (({"dropout_p": 0.1}, "dropout_p"),
                         ({"return_dropout_randval": True}, "return_dropout_randval"),
                         ({"block_table": 1}, "block_table"), ({"bias": 1}, "bias"), ({"alibi_slopes": 1}, "alibi"),
                         ({"q_descale": 1}, "q_descale"), ({"k_descale": 1}, "k_descale"),
                         ({"v_descale": 1}, "v_descale"), ({"cu_seqlens_q_padded": 1}, "cu_seqlens_q_padded"),
                         ({"cu_seqlens_k_padded": 1}, "cu_seqlens_k_padded")):
            with self.assertRaises(NotImplementedError) as e:
                self.fmha(**kw)
            self.assertIn(name, str(e.exception))
        with self.assertRaises(ValueError):
            self.fmha(how_v3_bf16_cvt=3)

    def test_moe(self):
        x = torch.empty((4, 2), dtype=torch.int32)
        with self.assertRaises(NotImplementedError) as e:
            aiter.topk_softmax(x, x, x, x, True, num_shared_experts=1)
        self.assertIn("num_shared_experts", str(e.exception))
        with self.assertRaises(NotImplementedError) as e:
            aiter.topk_softmax(x, x, x, x, True, 0, "sigmoid")
        self.assertIn("shared_expert_scoring_func", str(e.exception))
        with self.assertRaises(NotImplementedError) as e:
            aiter.moe_sorting_fwd(x, x, x, x, x, x, None, 8, 32, None, x)
        self.assertIn("num_local_tokens", str(e.exception))
        with self.assertRaises(NotImplementedError) as e:
            fused_moe.moe_sorting(x, x, 8, 64, torch.bfloat16, num_local_tokens=x)
        self.assertIn("num_local_tokens", str(e.exception))

    def test_routers(self):
        x = torch.empty((4, 64), dtype=torch.float32)
        with self.assertRaises(NotImplementedError) as e:
            vllm.grouped_topk(x, 8, 4, 8, True, 2.5, torch.empty((64,)), 0)
        self.assertIn("scoring_func=0", str(e.exception))
        for call in (lambda: vllm.topk_sigmoid(x, x, x, x, True, None, 1.0, x),
                     lambda: vllm.topk_softplus_sqrt(x, x, x, x, True, 1.5, is_padding=x)):
            with self.assertRaises(NotImplementedError) as e:
                call()
            self.assertIn("is_padding", str(e.exception))
        with self.assertRaises(ValueError) as e:
            aiter.topk_gating(x, x, x, score_func="relu")
        self.assertIn("score_func='relu'", str(e.exception))
        with self.assertRaises(ValueError) as e:
            T.topk_route(x, 2, "relu")
        self.assertIn("topk_route: scoring 'relu'", str(e.exception))
        with self.assertRaises(ValueError) as e:
            T.topk_route(x, 2, ids_dtype=torch.int16)
        self.assertIn("ids_dtype", str(e.exception))
        with self.assertRaises(ValueError) as e:
            vfm.grouped_topk(torch.empty((3, 16)), x, 2, True)
        self.assertIn("hidden_states has 3 tokens, gating_output 4", str(e.exception))
        i32 = lambda *shape: torch.empty(shape, dtype=torch.int32)
        with self.assertRaises(ValueError) as e:  # vLLM's experts_ids holds ceil(len(sorted_token_ids) / block_size)
            vllm.moe_align_block_size(i32(4, 2), 8, 4, i32(40), i32(9), i32(1))
        self.assertIn("experts_ids has 9 entries; sorted_token_ids of 40 needs ceil(40 / block_size) = 10",
                      str(e.exception))


class HostSide(unittest.TestCase):
    """What the drop-ins compute with torch around the library (here on the stand-in's NumPy)."""

    def test_local_ids(self):
        ids = torch.tensor([[0, 5, 7], [-1, 8, 3]], dtype=torch.int32)
        emap = torch.tensor([-1, 0, -1, 1, -1, 2, -1, 3], dtype=torch.int32)
        got = vllm._local_ids(ids, emap, 8)
        self.assertEqual(got.a.tolist(), [[-1, 2, 3], [-1, -1, 1]])  # -1 and 8 are outside [0, 8)

    def test_token_expert_indices(self):
        tei = torch.empty((5, 3), dtype=torch.int32)
        vllm._token_expert_indices(tei)
        self.assertEqual(tei.a.tolist(), [[j * 5 + t for j in range(3)] for t in range(5)])

    def test_vllm_lengths(self):
        # vllm/model_executor/layers/fused_moe/moe_align_block_size.py's max_num_tokens_padded
        self.assertEqual(vfm._vllm_length(6 * 8, 256, 16, False), 6 * 8 * 16)  # numel < num_experts
        self.assertEqual(vfm._vllm_length(64 * 8, 256, 16, False), 64 * 8 + 256 * 15)
        self.assertEqual(vfm._vllm_length(64 * 8, 256, 16, True), -(-(64 * 8 + 256 * 15) // 16) * 16)
        self.assertEqual(vfm._vllm_length(3, 2, 4, True), 12)


class Devices(unittest.TestCase):
    def test_other_device_refused(self):
        g = torch.empty((4, 8), device="cuda:1")
        with self.assertRaises(ValueError) as e:
            T.topk_softmax(g, 2)
        self.assertIn("the tensors are on cuda:1, the current device is cuda:0; call it under "
                      "torch.cuda.device(1)", str(e.exception))

    def test_cpu_reaches_the_extension_check(self):
        g = torch.empty((4, 8), device="cpu")
        with self.assertRaises(ValueError) as e:
            T.topk_softmax(g, 2)
        self.assertIn("topk_softmax: gating_output is a CPU tensor", str(e.exception))


class Import(unittest.TestCase):
    def test_without_torch(self):
        r = subprocess.run([sys.executable, "-c", "import sys, aiter_aot; print('torch' in sys.modules)"],
                           capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), "False", r.stderr)


# Each wrapper on the fake device: every call must pass the extension's checks (right tensor in
# each place, right shapes and dtypes) and launch; the stand-in's tensors are host memory the
# fake device never touches.
CALLS = """
import torch, aiter_aot as A
import aiter_aot.aiter as aiter, aiter_aot.aiter.fused_moe as fused_moe, aiter_aot.vllm as vllm, aiter_aot.torch as T
import aiter_aot.vllm.fused_moe as vfm
E = lambda *s, d=torch.float32: torch.empty(s, dtype=d)
n = lambda: A.stats()["launches"]
def run(name, f):
    before = n()
    try:
        f()
        print(name, "launches", n() - before)
    except Exception as e:
        print(name, "FAILED", type(e).__name__, e)
g = E(6, 64, d=torch.bfloat16)
run("aiter.topk_softmax", lambda: aiter.topk_softmax(E(6, 4), E(6, 4, d=torch.int32), E(6, 4, d=torch.int32), g, True))
run("vllm.topk_softmax", lambda: vllm.topk_softmax(E(6, 4), E(6, 4, d=torch.int32), E(6, 4, d=torch.int32), g, False))
run("vllm.topk_softmax int64", lambda: vllm.topk_softmax(E(6, 4), E(6, 4, d=torch.int64), E(6, 4, d=torch.int32), g))
run("T.topk_softmax", lambda: T.topk_softmax(g, 4, True))
ids, w = E(6, 4, d=torch.int32), E(6, 4)
P, B, _ = A.moe_sorting_sizes(6, 4, 64, 32)
run("aiter.moe_sorting_fwd", lambda: aiter.moe_sorting_fwd(ids, w, E(P, d=torch.int32), E(P), E(B, d=torch.int32),
                                                           E(2, d=torch.int32), E(6, 128, d=torch.bfloat16), 64, 32))
def fused():
    r = fused_moe.moe_sorting(ids, w, 64, 128, torch.bfloat16)
    assert len(r) == 5 and r[4].shape == (6, 128) and r[0].shape == (P,) and r[2].shape == (B,), [x.shape for x in r]
run("fused_moe.moe_sorting", fused)
run("T.moe_sorting", lambda: T.moe_sorting(ids, w, 64, 16, E(64, d=torch.int32)))
q = E(128, 8, 128, d=torch.bfloat16)
cu = torch.tensor([0, 128], dtype=torch.int32)
def reproducer():
    out, lse, p, rng = aiter.fmha_v3_varlen_fwd(q, q, q, cu, cu, 128, 128, 0, 0.0, 128 ** -0.5, 0.0, False, False,
                                                 -1, -1, False, False, 1)
    assert out.shape == (128, 8, 128) and lse.numel() == 0 and p.numel() == 0 and rng.shape == (2,), (out.shape,)
    out, lse, _, _ = aiter.fmha_v3_varlen_fwd(q, q, q, cu, cu, 128, 128, 0, 0.0, 0.1, 0.0, True, True, -1, -1,
                                              True, False, 0, out=out)
    assert lse.shape == (8, 128)
run("aiter.fmha_v3_varlen_fwd", reproducer)
run("T.fmha_varlen_fwd", lambda: T.fmha_varlen_fwd(q, E(64, 2, 128, d=torch.bfloat16), E(64, 2, 128, d=torch.bfloat16),
                                                   cu, torch.tensor([0, 64], dtype=torch.int32), 128, causal=True,
                                                   return_lse=True))
Tn, C = 3, 256
r, fn, sc, base = E(Tn, 4, C, d=torch.bfloat16), E(24, 4 * C), E(3), E(24)
post, comb, x = E(Tn, 4, 1), E(Tn, 4, 4), E(Tn, C, d=torch.bfloat16)
run("vllm.mhc_pre", lambda: vllm.mhc_pre(r, fn, sc, base, 1e-6, 1e-6, 1e-6, 2.0, 20))
run("vllm.mhc_pre norm", lambda: vllm.mhc_pre(r, fn, sc, base, norm_weight=E(C, d=torch.bfloat16)))
run("vllm.mhc_post", lambda: vllm.mhc_post(x, r, post, comb))
outs = (E(Tn, 4), E(Tn, 4, 4), E(Tn, C, d=torch.bfloat16))
run("T.mhc_pre out=", lambda: T.mhc_pre(r, fn, sc, base, out=outs)[2] is outs[2] or 1 / 0)
run("vllm.mhc_fused_post_pre", lambda: vllm.mhc_fused_post_pre(x, r, post, comb, fn, sc, base))
run("vllm.mhc_pre_broadcast", lambda: vllm.mhc_pre_broadcast(E(Tn, C, d=torch.bfloat16), E(24, C), sc, base,
                                                             E(C, d=torch.bfloat16)))
run("vllm.hc_head", lambda: vllm.hc_head(r, E(4, 4 * C), E(1), E(4)))
run("aiter.mhc_post", lambda: aiter.mhc_post(x, r, post, comb))
run("T.mhc_prenorm_gemm", lambda: T.mhc_prenorm_gemm(r, fn, 4))
run("T.mhc_pre_partials", lambda: T.mhc_pre_partials(E(4, Tn, 24), E(4, Tn), sc, base, r))
run("swapped", lambda: vllm.mhc_post(r, x, post, comb))
pm = E(Tn, 4)
def delayed(f, shapes):
    out = f()
    assert [tuple(o.shape) for o in out] == shapes, [o.shape for o in out]
run("vllm.mhc_pre_delayed", lambda: delayed(lambda: vllm.mhc_pre_delayed(r, fn, sc, base, 1e-6, 1e-6, 1e-6, 2.0, 20,
                                                                          pm),
                                            [(Tn, 4, 1), (Tn, 4, 4), (Tn, C), (Tn, 4)]))
run("vllm.mhc_pre_delayed first", lambda: vllm.mhc_pre_delayed(r, E(24, C), sc, base, x=x,
                                                               norm_weight=E(C, d=torch.bfloat16)))
run("vllm.mhc_fused_post_pre_delayed", lambda: delayed(
    lambda: vllm.mhc_fused_post_pre_delayed(x, r, post, comb, fn, sc, base, 1e-6, 1e-6, 1e-6, 2.0, 20, pm,
                                            E(C, d=torch.bfloat16), 1e-6, True),
    [(Tn, 4, C), (Tn, 4, 1), (Tn, 4, 4), (Tn, C), (Tn, 4), (Tn, C)]))
run("vllm.mhc_fused_post_pre_delayed plain", lambda: delayed(lambda: vllm.mhc_fused_post_pre_delayed(
    x, r, post, comb, fn, sc, base), [(Tn, 4, C), (Tn, 4, 1), (Tn, 4, 4), (Tn, C), (Tn, 4), (0, C)]))
douts = (E(Tn, 4), E(Tn, 4, 4), E(Tn, C, d=torch.bfloat16), E(Tn, 4))
run("T.mhc_pre_delayed out=", lambda: T.mhc_pre_delayed(r, fn, sc, base, pm, out=douts)[3] is douts[3] or 1 / 0)
run("swapped delayed", lambda: vllm.mhc_fused_post_pre_delayed(r, x, post, comb, fn, sc, base))
# the routers: DeepSeek-V3's shape, sqrt-softplus with hash routing, Llama-4's top-1
g = E(6, 256, d=torch.bfloat16)
I32, I64 = torch.int32, torch.int64
run("T.topk_route", lambda: T.topk_route(g, 8, "sigmoid", True, bias=E(256), n_group=8, topk_group=4,
                                         routed_scaling_factor=2.5))
run("T.topk_route hash", lambda: T.topk_route(g, 6, "sqrtsoftplus", True, input_ids=E(6, d=I64), tid2eid=E(9, 6, d=I64),
                                              ids_dtype=I64))
w8, i8 = E(6, 8), E(6, 8, d=I32)
run("T.topk_route out=", lambda: T.topk_route(g, 8, out=(w8, i8))[1] is i8 or 1 / 0)
run("aiter.biased_grouped_topk", lambda: aiter.biased_grouped_topk(g, E(256, d=torch.bfloat16), w8, i8, 8, 4, True,
                                                                   2.5))
run("aiter.grouped_topk", lambda: aiter.grouped_topk(g, w8, i8, 8, 4, True, False))
run("aiter.topk_gating", lambda: aiter.topk_gating(E(6, 6), E(6, 6, d=I32), g, E(256)))
def tei_check(f, k):
    tei = E(6, k, d=I32)
    f(tei)
    assert tei.a.tolist() == [[j * 6 + t for j in range(k)] for t in range(6)], tei.a
run("vllm.topk_sigmoid", lambda: tei_check(lambda tei: vllm.topk_sigmoid(E(6, 1), E(6, 1, d=I64), tei, g), 1))
run("vllm.topk_softplus_sqrt", lambda: tei_check(lambda tei: vllm.topk_softplus_sqrt(E(6, 6), E(6, 6, d=I32), tei, g,
                                                                                   True, 1.5, E(256)), 6))
run("vllm.topk_softplus_sqrt hash", lambda: tei_check(lambda tei: vllm.topk_softplus_sqrt(
    E(6, 6), E(6, 6, d=I64), tei, g, True, 1.5, None, E(6, d=I64), E(9, 6, d=I64)), 6))
run("vllm.topk_softmax bias", lambda: tei_check(lambda tei: vllm.topk_softmax(E(6, 4), E(6, 4, d=I32), tei, g, True,
                                                                              E(256)), 4))
def grouped(f):
    w, i = f()
    assert w.shape == (6, 8) and w.dtype == torch.float32 and i.dtype == I32, (w.shape, w.dtype, i.dtype)
run("vllm.grouped_topk", lambda: grouped(lambda: vllm.grouped_topk(g, 8, 4, 8, True, 2.5, E(256, d=torch.bfloat16), 1)))
run("vfm.grouped_topk", lambda: grouped(lambda: vfm.grouped_topk(E(6, 16), g, 8, True, 8, 4, "sigmoid", 2.5, E(256))))
ids = E(6, 8, d=I32)
P, B, _ = A.moe_align_sizes(6, 8, 256, 16)
def align_sizes(f, n_sorted, n_blocks):
    s, e, p = f()
    assert s.shape == (n_sorted,) and e.shape == (n_blocks,) and p.shape == (1,), (s.shape, e.shape, p.shape)
    return s
run("T.moe_align_block_size", lambda: align_sizes(lambda: T.moe_align_block_size(ids, 256, 16, E(256, d=I32)), P, B))
def vllm_buffers(L, **kw):
    s, e = E(L, d=I32).fill_(-5), E(-(-L // 16), d=I32).fill_(-5)
    vllm.moe_align_block_size(E(6, 8, d=I64), 256, 16, s, e, E(1, d=I32), **kw)
    assert L <= P or (s.a[P:] == 48).all(), "the tail past max_num_tokens_padded is not numel"
run("vllm.moe_align_block_size", lambda: vllm_buffers(P))
run("vllm.moe_align_block_size map", lambda: vllm_buffers(P, expert_map=E(256, d=I32)))
run("vllm.moe_align_block_size longer", lambda: vllm_buffers(P + 40))
run("vllm.moe_align_block_size shorter", lambda: vllm_buffers(6 * 8 * 16))
run("vfm.moe_align_block_size", lambda: align_sizes(lambda: vfm.moe_align_block_size(ids, 16, 256), 6 * 8 * 16, 48))
ids64 = E(64, 8, d=I32)
P64 = 64 * 8 + 256 * 15
def padded():
    s = align_sizes(lambda: vfm.moe_align_block_size(ids64, 16, 256, E(256, d=I32), True, True), -(-P64 // 16) * 16,
                    -(-P64 // 16))
    assert (s.a[P64:] == 64 * 8).all()
run("vfm.moe_align_block_size padded", padded)
run("swapped route", lambda: aiter.biased_grouped_topk(g, E(256), i8, w8, 8, 4, True))
"""

EXPECT = {"aiter.topk_softmax": 1, "vllm.topk_softmax": 1, "vllm.topk_softmax int64": 1, "T.topk_softmax": 1,
          "aiter.moe_sorting_fwd": 3, "fused_moe.moe_sorting": 3, "T.moe_sorting": 3,
          "aiter.fmha_v3_varlen_fwd": 2, "T.fmha_varlen_fwd": 1, "vllm.mhc_post": 1, "vllm.hc_head": 1,
          "aiter.mhc_post": 1, "T.mhc_pre out=": 2, "T.mhc_prenorm_gemm": 1, "T.mhc_pre_partials": 1,
          "vllm.mhc_pre_delayed": 2, "vllm.mhc_pre_delayed first": 2, "vllm.mhc_fused_post_pre_delayed": 2,
          "vllm.mhc_fused_post_pre_delayed plain": 2, "T.mhc_pre_delayed out=": 2,
          "T.topk_route": 1, "T.topk_route hash": 1, "T.topk_route out=": 1, "aiter.biased_grouped_topk": 1,
          "aiter.grouped_topk": 1, "aiter.topk_gating": 1, "vllm.topk_sigmoid": 1, "vllm.topk_softmax bias": 1,
          "vllm.topk_softplus_sqrt": 1, "vllm.topk_softplus_sqrt hash": 1,
          "vllm.grouped_topk": 1, "vfm.grouped_topk": 1, "T.moe_align_block_size": 3, "vllm.moe_align_block_size": 3,
          "vllm.moe_align_block_size map": 3, "vllm.moe_align_block_size longer": 3,
          "vllm.moe_align_block_size shorter": 3, "vfm.moe_align_block_size": 3, "vfm.moe_align_block_size padded": 3}


class FakeDeviceCalls(unittest.TestCase):
    def test_every_wrapper_launches(self):
        if not os.path.exists(os.path.join(FAKE_HIP, "libamdhip64.so.7")):
            self.skipTest("no fake HIP library in this build")
        rc, out = child(CALLS, fake_device=True)
        self.assertEqual(rc, 0, out)
        lines = dict(l.split(" launches ") if " launches " in l else (l, "") for l in out.splitlines())
        for name, n in EXPECT.items():
            self.assertEqual(lines.get(name, out), str(n), name)
        for name in ("vllm.mhc_pre", "vllm.mhc_pre norm", "vllm.mhc_fused_post_pre", "vllm.mhc_pre_broadcast"):
            self.assertIn(name, lines)
            self.assertGreaterEqual(int(lines[name] or 0), 1, out)
        self.assertIn("swapped FAILED ValueError mhc_post: residual has shape (3, 256); the op needs "
                      "[tokens, 4, hidden] = (*, 4, *)", out)
        self.assertIn("swapped route FAILED TypeError topk_route: topk_weights has dtype int32; the op needs float32",
                      out)
        self.assertIn("swapped delayed FAILED ValueError mhc_fused_post_pre_delayed: residual has shape (3, 256); the "
                      "op needs [tokens, 4, hidden] = (*, 4, *)", out)


if __name__ == "__main__":
    r = unittest.main(argv=sys.argv[:1], exit=False, verbosity=1).result
    bad = len(r.failures) + len(r.errors)
    print(f"{r.testsRun - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)
