"""The Hopper claims of the compute-bound reference kernels, held without a GPU: each default launch compiles for
``cuda:90`` (Triton's bundled ptxas, `perf/kernels/lowering.py`), its products are tensor-core ``wgmma`` (fp8
``wgmma`` with e4m3 operands for the fp8 GEMM; ``mma.sync`` for the 16-row decode tile, which is too short for a
64-row warpgroup product), its descriptor loads are TMA copies, no register spills, shared memory under the
sm_90 limit. The GPU (Triton 3.6) may allocate differently from this Triton: the tuning run on the H200 is
what measures; this catches a default that no longer lowers to the path its docstring describes.

The launches are recorded and compiled in a process of their own without ``TRITON_INTERPRET``: Triton decides
at import time whether ``@triton.jit`` makes a compilable kernel or an interpreted one, and another test of
this session may have imported the kernels with the interpreter on (the full run once failed on that)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SMEM_LIMIT = 232448  # bytes of shared memory one sm_90 program may use (227 KiB)

LOWER_ALL = r"""
import json, re, sys, torch
from tritonlab.perf.kernels.lowering import compile_launch, lower, record_launches
from tritonlab.perf.kernels import attention, attention_backward as ab, matmul_tma as mt, matmul_fp8 as mf

def named(call):
    return {f["name"]: f for f in lower(call, resources=True)}

out = {}
for causal in (False, True):
    q, k, v = (torch.randn(1, 2, 256, 128, dtype=torch.bfloat16) for _ in range(3))
    cfg = {"kernel": "tma", "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2}
    out[f"attention-tma-{causal}"] = named(lambda: attention.attention(q, k, v, causal, config=cfg))
q, k, v = (torch.randn(1, 2, 256, 128, dtype=torch.bfloat16) for _ in range(3))
fwd = attention.CONFIGS[128]
out["attention-forms"] = {
    "default": named(lambda: attention.attention(q, k, v, False, config=fwd)),
    "pipe": named(lambda: attention.attention(q, k, v, False, config={**fwd, "num_stages": 2, "pipe": True})),
    "ws": named(lambda: attention.attention(q, k, v, False, config={**fwd, "ws": True})),
}
for d in (64, 128):
    q, k, v, o, do = (torch.randn(1, 2, 256, d, dtype=torch.bfloat16) for _ in range(5))
    lse = torch.randn(1, 2, 256)
    out[f"backward-{d}"] = named(lambda: ab.attention_backward(q, k, v, o, lse, do, True, config=ab.CONFIGS[d]))
    out[f"backward-{d}-fused"] = bool(ab.CONFIGS[d].get("fused"))
tma_dq = {"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 64, "num_warps": 8, "num_stages": 2,
          "atomic_dq": True, "tma_dq": True}
q, k, v, o, do = (torch.randn(1, 2, 256, 128, dtype=torch.bfloat16) for _ in range(5))
lse = torch.randn(1, 2, 256)
out["backward-tma-dq"] = named(lambda: ab.attention_backward(q, k, v, o, lse, do, True, config=tma_dq))
from tritonlab.perf.kernels import attention_ws
for d in (64, 128):
    for causal in (False, True):
        q, k, v = (torch.randn(1, 2, 256, d, dtype=torch.bfloat16) for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(1, 2, 256)
        out[f"attention-ws-{d}-{causal}"] = named(lambda: attention_ws.launch(q, k, v, o, lse, causal, 0.125))
q, k, v = (torch.randn(1, 2, 256, 64, dtype=torch.bfloat16) for _ in range(3))
o, lse = torch.empty_like(q), torch.empty(1, 2, 256)
two = attention_ws.CONFIGS[128]
out["attention-ws-64-2wg"] = named(lambda: attention_ws.launch(q, k, v, o, lse, True, 0.125, two))
a = torch.randn(512, 256, dtype=torch.bfloat16)
b = torch.randn(256, 512, dtype=torch.bfloat16)
out["tma-large"] = named(lambda: mt.matmul_tma(a, b, config=mt.CONFIGS["large"]))
out["tma-decode"] = named(lambda: mt.matmul_tma(a[:16], b, config=mt.CONFIGS["decode"]))
# the same two kernels with their descriptors built in the kernel (tl.make_tensor_descriptor, lesson 14's form)
out["tma-large-dev"] = named(lambda: mt.matmul_tma(a, b, config={**mt.CONFIGS["large"], "host_desc": False}))
dev_decode = {**mt.CONFIGS["decode"], "host_desc": False}
out["tma-decode-dev"] = named(lambda: mt.matmul_tma(a[:16], b, config=dev_decode))
one_pass = {**mt.CONFIGS["decode"], "BN": 64, "SPLIT_K": 1, "host_desc": False}  # the single-pass kernel with a 16-row tile
out["tma-decode-1pass"] = named(lambda: mt.matmul_tma(a[:16], b, config=one_pass))
(launch,) = record_launches(lambda: mt.matmul_tma(a[:16], b, config=mt.CONFIGS["decode"]))
ptx = compile_launch(launch).asm["ptx"]
out["tma-decode-sync"] = {
    "acq_rel_atomic": len(re.findall(r"atom\.global\.gpu\.acq_rel\.add", ptx)),
    "cg_loads": len(re.findall(r"ld\.global\.cg", ptx)),
}
a8, sa = mf.quantize(torch.randn(256, 512), 1)
w8, sw = mf.quantize(torch.randn(256, 512), 128)
out["fp8-large"] = named(lambda: mf.matmul_fp8(a8, sa, w8, sw, config=mf.CONFIGS["large"]))
from tritonlab.perf.kernels import attention_backward_ws as abw
for d in (64, 128):
    for causal in (False, True):
        q = torch.randn(1, 2, 256, d, dtype=torch.bfloat16)
        lse = torch.randn(1, 2, 256)
        out[f"backward-ws-{d}-{causal}"] = named(
            lambda: abw.launch(q, q, q, q, lse, lse, q, q, q, causal, 0.125))
from tritonlab.perf.kernels import matmul_fp8_ws
c8 = torch.empty(256, 256, dtype=torch.bfloat16)
for pipe in (True, False):
    out[f"fp8-ws-{pipe}"] = named(lambda: matmul_fp8_ws.launch(a8, sa, w8, sw, c8, {"PIPE": pipe}))
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def lowered() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", LOWER_ALL], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


def _sound(facts: dict) -> None:
    assert facts.get("spill_stores", 0) == 0, facts
    assert facts["shared"] <= SMEM_LIMIT, facts


@pytest.mark.parametrize("causal", [False, True])
def test_tma_attention_lowers_to_wgmma_with_tma_copies(causal: bool, lowered: dict) -> None:
    facts = lowered[f"attention-tma-{causal}"]["_attn_fwd_tma_kernel"]
    assert facts["wgmma"] > 0 and facts["mma_sync"] == 0 and facts["tma_load"] > 0, facts
    _sound(facts)


@pytest.mark.parametrize("d", [64, 128])
def test_attention_backward_defaults_lower_without_spills(d: int, lowered: dict) -> None:
    facts = lowered[f"backward-{d}"]
    products = ("_fused_kernel",) if lowered[f"backward-{d}-fused"] else ("_dkdv_kernel", "_dq_kernel")
    assert set(facts) == {"_delta_kernel", *products}
    for name in products:
        assert facts[name]["wgmma"] > 0 and facts[name]["mma_sync"] == 0, (d, facts[name])
        _sound(facts[name])


def test_attention_forward_waits_for_every_product(lowered: dict) -> None:
    """What perf/targets.toml gives as part of the forward's cause (issue 38): compiled for sm_90, every wgmma
    wait in the attention forward is `wait_group 0` (each block's q·kᵀ is complete before its exponentials start,
    also when the next block's product is issued first, `pipe`), where the GEMM's K loop keeps one product in
    flight (`wait_group 1`); `ws` (warp_specialize=True) adds no register reallocation (`setmaxnreg`), i.e. no
    producer/consumer split. If a Triton changes this, re-time the forward and rewrite that cause."""
    for form, kernels in lowered["attention-forms"].items():
        facts = kernels["_attn_fwd_tma_kernel"]
        assert facts["wgmma_waits"] == [0] and facts["setmaxnreg"] == 0, (form, facts)
    gemm = lowered["tma-large"]["_persistent_tma_host_kernel"]
    assert 1 in gemm["wgmma_waits"], gemm


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_attention_forward_is_warp_specialised(d: int, causal: bool, lowered: dict) -> None:
    """The Gluon forward (perf/kernels/attention_ws.py) lowers to what its docstring says, and at head dim 128 to
    what the fastest peers launch (perf/targets.toml): 12 warps (a loader warpgroup and two computing ones) whose
    registers are reallocated, 24 for the loader and 240 for each computing warpgroup (`setmaxnreg`), TMA copies
    for q, K and V, and a wgmma wait that keeps one product in flight (`wait_group 1`: the next block's scores
    run under this block's softmax), where the Triton forward above waits for all of them. At head dim 64 the
    default is three computing warpgroups at 160 registers (16 warps) without the early score product."""
    facts = lowered[f"attention-ws-{d}-{causal}"]["_attn_fwd_ws_kernel"]
    warps, regs, waits = (12, 240, [0, 1]) if d == 128 else (16, 160, [0])
    assert facts["num_warps"] == warps and facts["mma_sync"] == 0 and facts["tma_load"] >= 3, facts
    assert {24, regs} <= set(facts["setmaxnreg_values"]), facts
    assert facts["wgmma_waits"] == waits, facts
    assert not facts["wgmma_serialized"], facts  # ptxas keeps the products asynchronous
    _sound(facts)  # no spills, shared memory under the limit


def test_gluon_attention_forward_two_warpgroups_at_head_dim_64(lowered: dict) -> None:
    """The two-warpgroup launch (head dim 128's default, a benchmark candidate at 64) also lowers at head dim 64:
    12 warps, 240 registers, the next scores in flight (`wait_group 1`), no spills."""
    facts = lowered["attention-ws-64-2wg"]["_attn_fwd_ws_kernel"]
    assert facts["num_warps"] == 12 and {24, 240} <= set(facts["setmaxnreg_values"]), facts
    assert 1 in facts["wgmma_waits"] and facts["tma_load"] >= 3, facts
    _sound(facts)


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_attention_backward_is_warp_specialised(d: int, causal: bool, lowered: dict) -> None:
    """The Gluon backward (perf/kernels/attention_backward_ws.py) lowers to what its docstring says and the
    fastest peer's backward launches (perf/targets.toml): each of its dk/dv and dq kernels 12 warps, 24
    registers for the loader and 240 for each computing warpgroup, TMA copies, one product kept in flight while
    the exponentials run (`wait_group 1`), no spills (at head dim 128 the dk/dv pass spilled with 64-query
    blocks: its CONFIGS take 32), and ptxas keeps the products asynchronous."""
    facts = lowered[f"backward-ws-{d}-{causal}"]
    assert set(facts) == {"_dkdv_kernel", "_dq_kernel"}, facts
    for name, kernel in facts.items():
        assert kernel["num_warps"] == 12 and {24, 240} <= set(kernel["setmaxnreg_values"]), (name, kernel)
        assert kernel["wgmma"] > 0 and kernel["mma_sync"] == 0 and kernel["tma_load"] >= 4, (name, kernel)
        assert kernel["wgmma_waits"] == [0, 1], (name, kernel)
        assert not kernel["wgmma_serialized"], (name, kernel)
        _sound(kernel)


def test_atomic_dq_by_tma_lowers_to_bulk_reductions(lowered: dict) -> None:
    """With `tma_dq` the dk/dv programs add their dq tiles through the TMA unit (one bulk reduction per tile:
    one call site for the masked diagonal, one for the rest), never element by element."""
    facts = lowered["backward-tma-dq"]["_dkdv_kernel"]
    assert facts["tma_reduce"] == 2 and facts["atomics"] == 0 and facts["wgmma"] > 0, facts
    _sound(facts)


def test_persistent_tma_gemm_lowers_with_host_and_device_descriptors(lowered: dict) -> None:
    """The shipped configuration passes host-built descriptors; built in the kernel, the same loop lowers alike."""
    assert set(lowered["tma-large"]) == {"_persistent_tma_host_kernel"}
    assert set(lowered["tma-large-dev"]) == {"_persistent_tma_kernel"}
    for large in (
        lowered["tma-large"]["_persistent_tma_host_kernel"],
        lowered["tma-large-dev"]["_persistent_tma_kernel"],
    ):
        assert large["wgmma"] > 0 and large["tma_load"] > 0 and large["tma_store"] > 0, large
        _sound(large)
    one_pass = lowered["tma-decode-1pass"]["_persistent_tma_kernel"]
    assert one_pass["mma_sync"] > 0 and one_pass["tma_load"] > 0, one_pass
    _sound(one_pass)


def test_split_k_decode_gemm_lowers_with_tma_loads_and_an_acq_rel_counter(lowered: dict) -> None:
    """The shipped decode configuration (split-K): 16-row mma.sync products on TMA copies of B, the per-tile
    counter an acq_rel atomic at GPU scope, the partials read back through L2 (ld.global.cg)."""
    assert set(lowered["tma-decode"]) == {"_splitk_tma_host_kernel"}
    assert set(lowered["tma-decode-dev"]) == {"_splitk_tma_kernel"}
    for decode in (
        lowered["tma-decode"]["_splitk_tma_host_kernel"],
        lowered["tma-decode-dev"]["_splitk_tma_kernel"],
    ):
        assert decode["mma_sync"] > 0 and decode["wgmma"] == 0 and decode["tma_load"] > 0, decode
        _sound(decode)
    sync = lowered["tma-decode-sync"]
    assert sync["acq_rel_atomic"] == 1 and sync["cg_loads"] > 0, sync


def test_fp8_gemm_lowers_to_fp8_wgmma(lowered: dict) -> None:
    facts = lowered["fp8-large"]["_fp8_kernel"]
    assert facts["wgmma_fp8"] > 0 and facts["tma_load"] > 0, facts
    _sound(facts)


def test_fp8_gemm_promotes_with_one_fma_per_element(lowered: dict) -> None:
    """The large tile (128×128 fp32 over 256 threads: 64 accumulator elements a thread) is one weight scale
    block wide, so each K block's product is promoted with one fused multiply-add per element and the tile's
    weight scale is one load: not a multiply per element and a scale load per column the thread holds (what
    the kernel first did: 64 multiplies, 34 loads; it spent about a third of its time there)."""
    facts = lowered["fp8-large"]["_fp8_kernel"]
    assert facts["f32_fma"] == 64, facts
    assert facts["f32_mul"] <= 4 and facts["ld_global"] == 3, facts
    assert facts["registers"] <= 170, facts  # lesson 14 says 165 (the per-column form: 246)


@pytest.mark.parametrize("pipe", [True, False])
def test_gluon_fp8_gemm_is_warp_specialised(pipe: bool, lowered: dict) -> None:
    """The Gluon fp8 GEMM (perf/kernels/matmul_fp8_ws.py) lowers to what its docstring says and cuBLAS's
    `_scaled_mm` launches (perf/targets.toml): 12 warps, 24 registers for the loader and 240 for each computing
    warpgroup, TMA loads and stores, fp8 wgmma, one fused multiply-add per accumulator element and K block (64 a
    thread per product site), and with PIPE two products in flight (`wait_group 1`). ptxas must not serialise
    the products: carrying an in-flight product across the K loop's back edge made it do so (a copy of the
    accumulator's registers there), which is why PIPE issues its two products inside one iteration."""
    facts = lowered[f"fp8-ws-{pipe}"]["_fp8_ws_kernel"]
    assert facts["num_warps"] == 12 and {24, 240} <= set(facts["setmaxnreg_values"]), facts
    assert facts["wgmma_fp8"] > 0 and facts["mma_sync"] == 0, facts
    assert facts["tma_load"] >= 2 and facts["tma_store"] >= 1, facts
    assert facts["wgmma_waits"] == ([0, 1] if pipe else [0]), facts
    # a 64×128×128 fp8 product is 4 wgmma instructions, in each of 2 warpgroups
    sites = facts["wgmma_fp8"] // 8
    assert facts["f32_fma"] == 64 * 2 * sites, facts
    assert not facts["wgmma_serialized"], facts
    _sound(facts)
