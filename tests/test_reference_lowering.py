"""The Hopper claims of the compute-bound reference kernels, held without a GPU: each default launch compiles for
``cuda:90`` (Triton's bundled ptxas, `perf/kernels/lowering.py`), its products are tensor-core ``wgmma`` (fp8
``wgmma`` with e4m3 operands for the fp8 GEMM; ``mma.sync`` for the 16-row decode tile, which is too short for a
64-row warpgroup product), its descriptor loads are TMA copies, no register spills, shared memory under the
sm_90 limit. The GPU (Triton 3.6) may allocate differently from this Triton: the tuning run on the H200 is
what measures; this catches a default that no longer lowers to the path its docstring describes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.slow

SMEM_LIMIT = 232448  # bytes of shared memory one sm_90 program may use (227 KiB)


def _lower(call):  # noqa: ANN001, ANN202
    from tritonlab.perf.kernels.lowering import lower

    return {f["name"]: f for f in lower(call, resources=True)}


def _sound(facts: dict) -> None:
    assert facts.get("spill_stores", 0) == 0, facts
    assert facts["shared"] <= SMEM_LIMIT, facts


@pytest.mark.parametrize("causal", [False, True])
def test_tma_attention_lowers_to_wgmma_with_tma_copies(causal: bool) -> None:
    from tritonlab.perf.kernels import attention

    q, k, v = (torch.randn(1, 2, 256, 128, dtype=torch.bfloat16) for _ in range(3))
    cfg = {"kernel": "tma", "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2}
    facts = _lower(lambda: attention.attention(q, k, v, causal, config=cfg))["_attn_fwd_tma_kernel"]
    assert facts["wgmma"] > 0 and facts["mma_sync"] == 0 and facts["tma_load"] > 0, facts
    _sound(facts)


@pytest.mark.parametrize("d", [64, 128])
def test_attention_backward_defaults_lower_without_spills(d: int) -> None:
    from tritonlab.perf.kernels import attention_backward as ab

    q, k, v, o, do = (torch.randn(1, 2, 256, d, dtype=torch.bfloat16) for _ in range(5))
    lse = torch.randn(1, 2, 256)
    facts = _lower(lambda: ab.attention_backward(q, k, v, o, lse, do, True, config=ab.CONFIGS[d]))
    assert set(facts) == {"_delta_kernel", "_dkdv_kernel", "_dq_kernel"}
    for name in ("_dkdv_kernel", "_dq_kernel"):
        assert facts[name]["wgmma"] > 0 and facts[name]["mma_sync"] == 0, (d, facts[name])
        _sound(facts[name])


def test_persistent_tma_gemm_lowers_with_device_descriptors() -> None:
    from tritonlab.perf.kernels import matmul_tma as mt

    a = torch.randn(512, 256, dtype=torch.bfloat16)
    b = torch.randn(256, 512, dtype=torch.bfloat16)
    large = _lower(lambda: mt.matmul_tma(a, b, config=mt.CONFIGS["large"]))["_persistent_tma_kernel"]
    assert large["wgmma"] > 0 and large["tma_load"] > 0 and large["tma_store"] > 0, large
    _sound(large)
    decode = _lower(lambda: mt.matmul_tma(a[:16], b, config=mt.CONFIGS["decode"]))["_persistent_tma_kernel"]
    assert decode["mma_sync"] > 0 and decode["tma_load"] > 0, decode
    _sound(decode)


def test_fp8_gemm_lowers_to_fp8_wgmma() -> None:
    from tritonlab.perf.kernels import matmul_fp8 as mf

    a, sa = mf.quantize(torch.randn(256, 512), 1)
    w, sw = mf.quantize(torch.randn(256, 512), 128)
    facts = _lower(lambda: mf.matmul_fp8(a, sa, w, sw, config=mf.CONFIGS["large"]))["_fp8_kernel"]
    assert facts["wgmma_fp8"] > 0 and facts["tma_load"] > 0, facts
    _sound(facts)
