"""The split-K decode path of the persistent TMA GEMM (``matmul_tma`` with ``SPLIT_K`` > 1) on the Triton
interpreter: values against float64 for M ≤ 64 (1, 16, 33, ...), N not a multiple of BN, K not a multiple of
BK × SPLIT_K (short and empty last splits), strided operands; the per-tile counters back at 0 after every call
(the next call needs no memset: a second call into a NaN-poisoned output gives the same bits); and the
reduction's fixed split order: grids of different sizes (so a different program arrives last at each tile) give
bitwise-equal results.

Run in a subprocess with ``TRITON_INTERPRET=1`` (Triton decides at decoration time whether a kernel is
interpreted, see tests/conftest.py). The Hopper lowering of the shipped decode configuration is held by
tests/test_reference_lowering.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys, torch
from tritonlab.perf.kernels import matmul_tma as mt

torch.manual_seed(0)
SMALL = {"BM": 16, "BN": 32, "BK": 32, "GROUP_M": 1, "num_warps": 4, "num_stages": 1, "SPLIT_K": 4}
CASES = [  # (M, N, K, dtype, config): k_tiles = ceil(K / BK) split into SPLIT_K runs of ceil(k_tiles / SPLIT_K)
    (1, 64, 200, "bf16", SMALL),  # 7 K tiles: 2, 2, 2, 1 (short last split)
    (16, 72, 72, "bf16", SMALL),  # 3 K tiles: 1, 1, 1, 0 (an empty split); N not a multiple of BN
    (33, 40, 40, "fp16", SMALL),  # 3 M tiles (33 rows), 2 K tiles: 1, 1, 0, 0
    (64, 96, 160, "fp16", {**SMALL, "BM": 32, "SPLIT_K": 2}),
    (5, 200, 1100, "bf16", mt.CONFIGS["decode"]),  # the shipped decode configuration: 5 K tiles: 2, 2, 1, 0
    (33, 40, 200, "bf16", {**SMALL, "host_desc": True}),  # descriptors built on the host: the same values
    (40, 72, 72, "fp16", {**mt.INTERPRETER_CONFIG, "host_desc": True}),  # the one-pass kernel, host descriptors
    (16, 128, 128, "fp16", {**SMALL, "cancel": True}),  # 1 K tile per split, partials 2 and 3 cancel
]
DT = {"bf16": torch.bfloat16, "fp16": torch.float16}


def run(a, b, cfg, sms, out_stride=None):
    mt.num_sms = lambda index=0: sms  # the grid: min(sms, items); fewer programs walk several items
    m, n = a.shape[0], b.shape[1]
    out = torch.full((m, out_stride or n), float("nan"), dtype=a.dtype)[:, :n]
    mt.matmul_tma(a, b, out=out, config=cfg)
    return out


results = []
for m, n, k, dt, cfg in CASES:
    # strided A (a column slice of a wider matrix) and B; rows stay 16-byte aligned
    a = torch.randn(m, -(-k // 8) * 8 + 8).to(DT[dt])[:, :k]
    b = (torch.randn(k, -(-n // 8) * 8 + 16) * k**-0.5).to(DT[dt])[:, :n]
    if cfg.get("cancel"):
        # splits 2 and 3 make partials p and -p about 100× the result: (r + p) - p ≠ (r - p) + p in fp32, so a
        # reduction in arrival order instead of split order changes output bits (the grid test below)
        a[:, 64:96] *= 256
        a[:, 96:128] = -a[:, 64:96]
        b[96:128] = b[64:96]
    ref = a.double() @ b.double()
    first = run(a, b, cfg, 4)
    ws, counters = mt._WORKSPACES[("cpu", 0)]
    after_first = int(counters.abs().sum())
    again = run(a, b, cfg, 4, out_stride=-(-n // 8) * 8 + 8)  # the same launch again: the counters must have been reset
    items = -(-m // cfg["BM"]) * -(-n // cfg["BN"]) * cfg.get("SPLIT_K", 1)
    wide = run(a, b, cfg, items)  # one item per program: other programs arrive last
    odd = run(a, b, cfg, 3)
    results.append({
        "case": [m, n, k, dt, cfg["BM"], cfg["BN"], cfg["BK"], cfg.get("SPLIT_K", 1), bool(cfg.get("host_desc"))],
        "rel_err": float((first.double() - ref).norm() / ref.norm()),
        "finite": bool(torch.isfinite(first).all()),
        "counters_after_first": after_first,
        "counters_at_end": int(counters.abs().sum()),
        "again_equal": torch.equal(first, again),
        "grid_equal": torch.equal(first, wide) and torch.equal(first, odd),
    })
json.dump(results, sys.stdout)
"""


@pytest.fixture(scope="module")
def results() -> list[dict]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


def test_split_k_values_match_float64(results: list[dict]) -> None:
    assert len(results) == 8 and 2 <= sum(r["case"][8] for r in results) < 8  # host and device descriptors
    for r in results:
        tol = 1e-2 if r["case"][3] == "bf16" else 2e-3
        assert r["finite"] and r["rel_err"] < tol, r


def test_split_k_counters_reset_so_the_next_call_needs_no_memset(results: list[dict]) -> None:
    for r in results:
        assert r["counters_after_first"] == 0 and r["counters_at_end"] == 0, r
        assert r["again_equal"], r


def test_split_k_reduction_is_bitwise_reproducible_whoever_arrives_last(results: list[dict]) -> None:
    for r in results:
        assert r["grid_equal"], r
    assert results[-1]["case"][:4] == [16, 128, 128, "fp16"] and results[-1]["rel_err"] > 0  # rounding shows


def test_decode_config_is_split_k_with_wide_boxes_and_large_is_single_pass() -> None:
    from tritonlab.perf.kernels import matmul_tma as mt

    decode = mt.CONFIGS["decode"]
    assert int(decode["SPLIT_K"]) > 1 and int(decode["BN"]) * 2 >= 256, decode  # bf16 TMA rows ≥ 256 bytes
    assert int(mt.CONFIGS["large"].get("SPLIT_K", 1)) == 1
    assert int(mt.INTERPRETER_CONFIG.get("SPLIT_K", 1)) == 1
