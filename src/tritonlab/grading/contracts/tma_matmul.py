"""tma-matmul (lesson 14): `tma_matmul(a, b, num_sms)` returns `a[M, K] @ b[K, N]` for fp16/bf16 inputs (fp32
accumulation, output dtype = input dtype, new contiguous tensor), any M ≥ 1, K and N multiples of 8 (so that
every row starts 16 bytes after the previous one, as a tensor descriptor requires), rows with unit stride or
not (the host may copy a and b with `.contiguous()`; a note gives the cost) — computed by one persistent launch
(contracts/_persistent.py, the same rule as persistent-matmul) whose tiles move through tensor descriptors.

The TMA path is graded from a TRUSTED compile (grading/check/trusted_compile.py, as for occupancy): the parent hands the
kernel `tma_matmul_kernel`'s source text to a sandboxed child that never imports the learner's file; it
compiles that one function for sm_90 with the signature and constexprs below, and the parent reads the
instruction counts kernel_inspect.features found in its PTX and TTGIR: the loads of the tiles must be TMA
copies (`cp.async.bulk.tensor` from global), no tile may be loaded through pointers (`tt.load`, or the
`cp.async` copies of the software pipeliner), the output must be stored by TMA too, and the product must be
a warpgroup MMA (`wgmma`). Values are judged like matmul, on the interpreter (which runs descriptors) and on a
GPU.

Cost model: 2·M·N·K FLOPs; reads (M·K + K·N)·s bytes at least, writes M·N·s. Tolerance: see _matmul.py.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, cached, random_values
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts import _persistent as ps
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "tma_matmul"
ARG_NAMES = ["a", "b", "num_sms"]
GRID_FROM_RECORD = True  # the grid is judged from the launch record the replay runs (grader)
KERNEL = "tma_matmul_kernel"
COMPILE_CASE = "TMA path on sm_90 (trusted compile)"
TARGET = "cuda:90"
SIGNATURE = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
    "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "BLOCK_M": "constexpr",
    "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "UPCAST": "constexpr",
}  # fmt: skip
CONSTEXPRS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "UPCAST": False}

# (M, N, K, a layout, b layout, dtype, label, num_sms or None for the stated count)
PLAN = [
    (1, 8, 8, "contiguous", "contiguous", "float16", "M=1: ", None),
    (37, 24, 40, "contiguous", "contiguous", "float16", "ragged tiles: ", None),
    (64, 64, 64, "contiguous", "contiguous", "float16", "whole tiles: ", None),
    (130, 72, 200, "contiguous", "contiguous", "float16", "ragged tiles, long K: ", None),
    (300, 264, 32, "contiguous", "contiguous", "float16", "more tiles than SMs: ", None),
    (200, 336, 24, "contiguous", "contiguous", "bfloat16", "more tiles than SMs: ", ps.ODD_SMS[0]),
    (150, 104, 48, "contiguous", "contiguous", "float16", "many programs: ", ps.ODD_SMS[1]),
    (45, 40, 56, "row-padded", "row-padded", "float16", "rows padded: ", None),
    (40, 24, 48, "transposed", "contiguous", "float16", "a transposed: ", None),
    (24, 40, 48, "contiguous", "transposed", "bfloat16", "b transposed: ", None),
    (45, 32, 72, "contiguous", "contiguous", "bfloat16", "", None),
]
GPU_PLAN = [
    (1000, 1024, 1000, "contiguous", "contiguous", "float16", "large: ", None),
    (4097, 1024, 512, "contiguous", "contiguous", "bfloat16", "large: ", None),
    (16, 4096, 4096, "contiguous", "contiguous", "bfloat16", "decode: ", None),
]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    plan = list(PLAN)
    plan.append((int(rng.integers(20, 90)), 8 * int(rng.integers(3, 12)), 8 * int(rng.integers(2, 12)),
                 "contiguous", "contiguous", "float16", "random: ", None))  # fmt: skip
    if backend == "gpu":
        plan += GPU_PLAN
    out = []
    for m, n, k, la, lb, dtype, label, sms in plan:
        sms = sms or ps.stated_sms(backend)
        a = Tensor(random_values(rng, (m, k), dtype), dtype, la)
        b = Tensor(random_values(rng, (k, n), dtype), dtype, lb)
        name = f"{label}M={m} N={n} K={k} {dtype}, num_sms={sms}"
        out.append(Case(name, (a, b, sms), extra=mm.extra_for(dtype) | {"backend": backend}))
    return out


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    a, b, _sms = case.args
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")
    return expected, cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))


def check(case: Case, result: dict) -> list[Failure]:
    a, b, sms = case.args
    expected, bound = prepare(case)
    failures = judge(case, result, expected, a.dtype, 2 * UNIT_ROUNDOFF[a.dtype], bound)
    failures = add_hint(
        failures,
        lambda: (
            mm.one_tile_hint(a, b, mm.actual(result, a.dtype), bound)
            or mm.accumulator_hint(a, b, mm.actual(result, a.dtype), expected)
        ),
    )
    return failures + ps.persistence_failures(case, result, a.values.shape[0], b.values.shape[1], sms)


# ---- the trusted compile ------------------------------------------------------------------------------


def compile_items(source: str) -> tuple[list[dict], list[Failure]]:
    """(what the trusted child compiles, failures found already from the text)."""
    if f"def {KERNEL}(" not in source:
        return [], [
            Failure(
                COMPILE_CASE,
                "exception",
                i18n.t("grader.tma_matmul_no_def_kernel_file", KERNEL=KERNEL),
                i18n.t("grader.tma_matmul_keep_kernel_s_name_2", SIGNATURE=", ".join(SIGNATURE)),
            )
        ]
    item = {
        "label": "yours",
        "source": source,
        "kernel": KERNEL,
        "signature": SIGNATURE,
        "constexprs": CONSTEXPRS,
        "aligned": ["a_ptr", "b_ptr", "c_ptr", "stride_am", "stride_bk", "stride_cm"],
        "options": {"num_warps": 8, "num_stages": 3},
        "target": TARGET,
    }
    return [item], []


def judge_compile(results: list[dict]) -> list[Failure]:
    (mine,) = results
    if "error" in mine:
        return [
            Failure(
                COMPILE_CASE,
                "exception",
                i18n.t("grader.tma_matmul_kernel_did_not_compile", KERNEL=KERNEL, error=mine["error"]),
                i18n.t("grader.tma_matmul_keep_kernel_s_name", SIGNATURE=", ".join(SIGNATURE)),
            )
        ]
    f = mine.get("features", {})
    missing = []
    if not f.get("tma_loads"):
        missing.append(i18n.t("grader.tma_matmul_tiles_b_not_loaded"))
    if f.get("pointer_loads"):
        missing.append(i18n.t("grader.tma_matmul_some_data_still_loaded"))
    if not f.get("tma_stores"):
        missing.append(i18n.t("grader.tma_matmul_output_tile_not_stored"))
    if not f.get("wgmma"):
        missing.append(i18n.t("grader.tma_matmul_product_not_warpgroup_mma"))
    if not missing:
        return []
    return [
        Failure(
            COMPILE_CASE,
            "no-tma",
            i18n.t(
                "grader.tma_matmul_compiled_for_sm_90",
                tma_loads=f.get("tma_loads", 0),
                tma_stores=f.get("tma_stores", 0),
                pointer_loads=f.get("pointer_loads", 0),
                wgmma=f.get("wgmma", 0),
                missing="; ".join(missing),
            ),
            i18n.t("grader.tma_matmul_build_descriptor_per_matrix"),
        )
    ]
