"""fp8-matmul (lesson 14): `fp8_matmul(a, b, a_scale, b_scale)` returns the bf16 tensor

    c[m, n] = Σ_g a_scale[m, g] · b_scale[n // 128, g] · Σ_{k in group g} a[m, k] · b[n, k]

for a[M, K] and b[N, K] in fp8 e4m3 (b stored like nn.Linear's weight), groups g of 128 along K (the last may
be shorter), a_scale[M, cdiv(K, 128)] (one fp32 scale per row and group: "1×128") and b_scale[cdiv(N, 128),
cdiv(K, 128)] (one per 128×128 block), any M, N, K ≥ 1 and any strides of all four. Graded on the interpreter
(Triton 3.9's interpreter runs tl.dot on fp8 blocks) and on a GPU, against a float64 reference.

Error bound: the fp8 values and the scales are exact inputs; fp8·fp8 products are exact in fp32 (4 + 4
significant bits), so a correct kernel's error comes from summing in fp32 — at most (K + 2·G + 4)·u32 times
Σ|a_scale·b_scale·a·b| (G groups: one scaling and one accumulation per group) — and from rounding the result
to bf16 (2·u_bf16·|c|). On a GPU the fp8 tensor cores of Hopper add into their accumulator with fewer
significant bits than fp32 (DeepSeek-V3's report; the reason to scale and add each group in fp32 in
registers): a GPU check allows 2⁻¹² times the same magnitude more. A kernel that drops the scales, applies
one scale per tile, or accumulates in bf16 is far outside these bounds.

Reads outside a or b: fp8's input guard is e4m3's NaN (0x7F) on a GPU, but Triton's interpreter converts
those bits to 480 (it does not model the `fn` variant's NaN), so there such a read shows as outputs larger
than any right answer: the hint says so.

Cost model: 2·M·N·K FLOPs; reads (M·K + N·K) bytes of fp8 + the scales, writes 2·M·N bytes.
"""

from __future__ import annotations

import math

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import FP8, UNIT_ROUNDOFF, Case, Tensor, cached, quantize
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "fp8_matmul"
ARG_NAMES = ["a", "b", "a_scale", "b_scale"]
GROUP = 128
E4M3_MAX = 448.0
U32 = UNIT_ROUNDOFF["float32"]
GPU_FP8_ACCUMULATION = 2.0**-12

# (M, N, K, a layout, b layout, scales layout, label)
PLAN = [
    (1, 1, 1, "contiguous", "contiguous", "contiguous", ""),
    (7, 5, 3, "contiguous", "contiguous", "contiguous", "small primes: "),
    (64, 128, 256, "contiguous", "contiguous", "contiguous", "whole groups: "),
    (33, 130, 200, "contiguous", "contiguous", "contiguous", "ragged N block, ragged K group: "),
    (20, 260, 129, "contiguous", "contiguous", "contiguous", "K = 129 (a one-wide last group): "),
    (40, 50, 300, "transposed", "contiguous", "contiguous", "a transposed: "),
    (30, 140, 150, "contiguous", "transposed", "contiguous", "b transposed: "),
    (50, 40, 260, "contiguous", "contiguous", "transposed", "scales column-major: "),
]
GPU_PLAN = [
    (1000, 1024, 1000, "contiguous", "contiguous", "contiguous", "large: "),
    (16, 4096, 4096, "contiguous", "contiguous", "transposed", "decode: "),
]


def quantize_groups(rng: np.random.Generator, rows: int, k: int, block_rows: int) -> tuple[np.ndarray, ...]:
    """Random data quantized as a real fp8 GEMM does: each (block of `block_rows` rows) × (128-wide group of
    K) gets the fp32 scale that maps its largest magnitude to 448. Returns (fp8 values, scales)."""
    groups = math.ceil(k / GROUP)
    blocks = math.ceil(rows / block_rows)
    # a spread of magnitudes across rows and groups, so that a scale applied to the wrong block shows
    x = rng.standard_normal((rows, k)) * np.exp(rng.uniform(-2, 2, size=(rows, 1)))
    x *= np.repeat(np.exp(rng.uniform(-1.5, 1.5, size=(1, groups))), GROUP, axis=1)[:, :k]
    # every tile at once: x zero-padded to whole (block × group) tiles, seen as (blocks, rows, groups, 128)
    padded = np.zeros((blocks * block_rows, groups * GROUP))
    padded[:rows, :k] = x
    tiles = padded.reshape(blocks, block_rows, groups, GROUP)
    amax = np.abs(tiles).max(axis=3).max(axis=1)  # a zero pad never wins a max; the last axis first is fast
    amax[amax == 0] = 1.0
    scales = quantize(amax / E4M3_MAX, "float32")
    tiles /= scales[:, None, :, None]
    q = quantize(padded[:rows, :k], FP8)
    q = np.where(q == 0, quantize(np.array([2.0**-9]), FP8)[0], q)  # no exact zeros (unwritten ≠ right)
    return q, scales


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    plan = list(PLAN)
    plan.append((int(rng.integers(10, 70)), int(rng.integers(10, 300)), int(rng.integers(100, 400)),
                 "contiguous", "contiguous", "contiguous", "random: "))  # fmt: skip
    if backend == "gpu":
        plan += GPU_PLAN
    out = []
    for m, n, k, la, lb, ls, label in plan:
        qa, sa = quantize_groups(rng, m, k, 1)
        qb, sb = quantize_groups(rng, n, k, GROUP)
        args = (
            Tensor(qa, FP8, la),
            Tensor(qb, FP8, lb),
            Tensor(sa, "float32", ls),
            Tensor(sb, "float32", ls),
        )
        name = f"{label}M={m} N={n} K={k}" + ("" if ls == "contiguous" else f", scales {ls}")
        out.append(Case(name, args, extra={"backend": backend}))
    return out


def expand(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """(a · its scales, b · its scales) in float64: the exact operands of the reference product."""
    a, b, sa, sb = (t.values for t in case.args)
    m, k = a.shape
    n = b.shape[0]
    sa_full = np.repeat(sa, GROUP, axis=1)[:, :k]
    sb_full = np.repeat(np.repeat(sb, GROUP, axis=0), GROUP, axis=1)[:n, :k]
    return a * sa_full, b * sb_full


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    def reference() -> np.ndarray:
        ea, eb = expand(case)
        return ea @ eb.T

    def bound() -> np.ndarray:
        ea, eb = expand(case)
        k = ea.shape[1]
        gamma = (k + 2 * math.ceil(k / GROUP) + 4) * U32
        if case.extra.get("backend") == "gpu":
            gamma += GPU_FP8_ACCUMULATION
        return gamma * (np.abs(ea) @ np.abs(eb).T) + 1e-37

    backend = case.extra.get("backend", "interpreter")
    return cached(case, "expected", reference), cached(case, f"bound-{backend}", bound)


def _scales_hint(case: Case, actual: np.ndarray | None, bound: np.ndarray) -> str:
    """Does the output match a common scaling mistake?"""
    if actual is None:
        return ""
    a, b, sa, sb = (t.values for t in case.args)
    if actual.shape != (a.shape[0], b.shape[0]):
        return ""
    ea, eb = expand(case)
    tries = [
        (
            a @ b.T,
            i18n.t("grader.fp8_matmul_scales_were_never_applied"),
        ),
        (
            ea @ b.T,
            i18n.t("grader.fp8_matmul_b_s_scales_were"),
        ),
        (
            a @ eb.T,
            i18n.t("grader.fp8_matmul_s_scales_were_never"),
        ),
    ]
    if sb.shape[0] > 1 and b.shape[0] > GROUP:
        nb = np.repeat(sb[:, :], 1, axis=0)
        cols = np.minimum(np.arange(b.shape[0]), nb.shape[0] - 1)  # scale row indexed by n, not n // 128
        wrong = b * np.repeat(nb[cols], GROUP, axis=1)[:, : a.shape[1]]
        tries.append(
            (
                ea @ wrong.T,
                i18n.t("grader.fp8_matmul_b_s_scale_row"),
            )
        )
    for candidate, hint in tries:
        with np.errstate(invalid="ignore"):
            if np.all(np.abs(actual - candidate) <= 4 * bound + 2**-7 * np.abs(candidate)):
                return hint
    reach = np.abs(ea) @ np.abs(eb).T  # no right answer is larger than this
    with np.errstate(invalid="ignore"):
        if np.any(~np.isfinite(actual) | (np.abs(actual) > 1.01 * reach + bound + 1.0)):
            return i18n.t("grader.fp8_matmul_some_outputs_larger_than")
    return ""


def check(case: Case, result: dict) -> list[Failure]:
    expected, bound = prepare(case)
    failures = judge(
        case, result, expected, "bfloat16", 2 * UNIT_ROUNDOFF["bfloat16"], bound, nan_is_oob_read=True
    )
    return add_hint(failures, lambda: _scales_hint(case, _actual(result), bound))


def _actual(result: dict) -> np.ndarray | None:
    from tritonlab.grading.contracts._layout import actual_values

    return actual_values(result, "bfloat16")
