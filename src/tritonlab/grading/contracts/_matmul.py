"""Shared by matmul, matmul-bias and autotune: case shapes, the float64 reference and its error bound.

Error bound (Higham): an fp32-accumulated dot product of length K satisfies
|ĉ − c| ≤ γ·(|A||B|) with γ ≈ K·u32, whatever the summation order (tiles, split K, FMA). Inputs are exact in
their dtype, and fp16/bf16 products are exact in fp32. On a GPU, tl.dot with fp32 inputs uses tf32 by default
(10-bit mantissa; the tensor cores drop the low 13 bits): each product then carries a relative error ≤ 2·2⁻¹⁰,
so fp32 cases on the gpu backend also allow 2⁻⁹·(|A||B|) — unless the inputs are exact in tf32 (the GELU
cases of matmul-bias use such inputs, so that a tanh-approximated GELU fails on the GPU too). The output's own rounding adds 2·u_out·|c|, plus one rounding of the accumulator to the
output dtype before an epilogue (2·u_out·|acc|).
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Tensor, random_values
from tritonlab.grading.contracts._layout import actual_values

U32 = UNIT_ROUNDOFF["float32"]
TF32_PRODUCT = 2.0**-9

# (M, N, K, a layout, b layout, dtype, label)
Shape = tuple[int, int, int, str, str, str, str]


def shape_plan(rng: np.random.Generator, backend: str, small: bool = False) -> list[Shape]:
    plan: list[Shape] = [
        (1, 1, 1, "contiguous", "contiguous", "float32", ""),
        (7, 5, 3, "contiguous", "contiguous", "float32", "small primes: "),
        (31, 33, 17, "contiguous", "contiguous", "float32", "BLOCK±1: "),
        (64, 64, 64, "contiguous", "contiguous", "float32", "whole blocks: "),
        (65, 63, 129, "contiguous", "contiguous", "float32", "BLOCK±1: "),
        (20, 24, 300, "contiguous", "contiguous", "float32", "long K: "),
        (
            int(rng.integers(20, 80)),
            int(rng.integers(20, 80)),
            int(rng.integers(20, 150)),
            "contiguous",
            "contiguous",
            "float32",
            "random: ",
        ),
        (40, 24, 50, "transposed", "contiguous", "float32", "a transposed: "),
        (24, 40, 50, "contiguous", "transposed", "float32", "b transposed: "),
        (33, 20, 45, "strided", "padded", "float32", "a strided, b padded: "),
        (70, 50, 90, "contiguous", "contiguous", "float16", ""),
        (17, 45, 33, "transposed", "transposed", "float16", "both transposed: "),
        (130, 100, 16, "contiguous", "contiguous", "float32", "many programs: "),
        (45, 37, 70, "contiguous", "contiguous", "bfloat16", ""),
    ]
    if small:
        keep = {"", "small primes: ", "BLOCK±1: ", "long K: ", "a transposed: ", "both transposed: "}
        plan = [p for p in plan if p[6] in keep]
    if backend == "gpu":
        plan += [
            (1000, 1000, 1000, "contiguous", "contiguous", "float16", "large: "),
            (4097, 1023, 515, "contiguous", "transposed", "float32", "large: "),
            (2048, 2048, 4096, "contiguous", "contiguous", "bfloat16", "large: "),
            (1, 4096, 4096, "contiguous", "contiguous", "float16", "one row: "),
        ]
    return plan


def operands(rng: np.random.Generator, shape: Shape, scale: float = 1.0) -> tuple[Tensor, Tensor]:
    m, n, k, la, lb, dtype, _ = shape
    a = Tensor(random_values(rng, (m, k), dtype, scale), dtype, la)
    b = Tensor(random_values(rng, (k, n), dtype, scale), dtype, lb)
    return a, b


def name_of(shape: Shape) -> str:
    m, n, k, la, lb, dtype, label = shape
    return f"{label}M={m} N={n} K={k} {dtype}"


def extra_for(dtype: str) -> dict:
    # tl.dot on bf16 needs real bf16 arithmetic (this Triton's interpreter returns garbage for it).
    return {"bf16_arithmetic": True} if dtype == "bfloat16" else {}


def tf32_exact(values: np.ndarray) -> bool:
    """Are these values representable in tf32 (fp32 with a 10-bit mantissa)?"""
    mantissa, _ = np.frexp(values[np.isfinite(values)])
    scaled = mantissa * 2.0**11
    return bool(np.all(scaled == np.round(scaled)))


def dot_bound(a: Tensor, b: Tensor, backend: str) -> np.ndarray:
    """Absolute error bound of a correct fp32-accumulated a @ b, per output element."""
    k = a.values.shape[1]
    magnitude = np.abs(a.values) @ np.abs(b.values)
    gamma = (k + 2) * U32
    if a.dtype == "float32" and backend == "gpu" and not (tf32_exact(a.values) and tf32_exact(b.values)):
        gamma += TF32_PRODUCT
    return gamma * magnitude + TINY.get(a.dtype, 0.0)


def one_tile_hint(
    a: Tensor, b: Tensor, actual_c: np.ndarray | None, bound: np.ndarray, epilogue: callable = lambda c: c
) -> str:  # type: ignore[valid-type]
    """Does the output look like a @ b over the first BLOCK_K columns of K only?"""
    k = a.values.shape[1]
    if actual_c is None or actual_c.shape != (a.values.shape[0], b.values.shape[1]):
        return ""
    for block in (8, 16, 32, 64, 128, 256):
        if block >= k:
            break
        candidate = epilogue(a.values[:, :block] @ b.values[:block, :])
        with np.errstate(invalid="ignore"):
            close = np.abs(actual_c - candidate) <= 2 * bound + 1e-3 * np.abs(candidate)
        if np.all(close):
            return i18n.t("grader.matmul_only_first_block_entries", block=block)
    return ""


def k_mask_hint(actual_c: np.ndarray | None, k: int) -> str:
    """Every output element non-finite: the K loop read past K in every row and column."""
    if actual_c is None or actual_c.size == 0 or np.isfinite(actual_c).any():
        return ""
    return i18n.t("grader.matmul_every_output_element_read", k=k)


def accumulator_hint(a: Tensor, b: Tensor, actual_c: np.ndarray | None, expected: np.ndarray) -> str:
    """fp16/bf16 inputs: do the errors look like accumulation in the input dtype?"""
    if a.dtype not in ("float16", "bfloat16") or actual_c is None or actual_c.shape != expected.shape:
        return ""
    k = a.values.shape[1]
    loose = (k + 2) * UNIT_ROUNDOFF[a.dtype] * (np.abs(a.values) @ np.abs(b.values))
    loose += 2 * UNIT_ROUNDOFF[a.dtype] * np.abs(expected)
    if np.all(np.abs(actual_c - expected) <= loose):
        return i18n.t("grader.matmul_errors_those_sum_kept", dtype=a.dtype)
    return ""


def actual(result: dict, dtype: str, index: int = 0) -> np.ndarray | None:
    return actual_values(result, dtype, index)
