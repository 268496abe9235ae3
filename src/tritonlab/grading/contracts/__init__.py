"""Exercise contracts: what each exercise's function must do, the cases that test it, and the reference.

One module per exercise id (`vector-copy` -> `contracts/vector_copy.py`). A contract module defines:

    FUNCTION: str                    the learner's host function
    def cases(rng, backend) -> list[Case]          (parent) the cases of one check
    def check(case, result) -> list[Failure]       (parent) judge one case from the child's raw result
    def run_case(fn, case_spec, tools) -> dict     (child, optional) custom way to call the learner

Beside them: `compare.py`, the judgement every contract shares (`judge`, `compare_values` from `_values.py`,
`host_checks`, ...), and helpers shared by a few contracts, named with a leading underscore (`_layout.py`,
`_matmul.py`, `_tiles.py`, ...).

Parent-side code here uses numpy only: the parent never imports torch or triton.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TypeVar

import numpy as np

FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
# The launches the fresh replay ran, read by the parent from the launch record (check/read.py: replayed_launches):
# a case entry's field that the grader sets itself, after removing whatever the check child wrote there.
REPLAYED_LAUNCHES = "replayed_launches"
FP8 = "float8_e4m3fn"  # inputs only (lesson 14): e4m3, no infinities, one NaN pattern per sign, max 448


class _Device:
    """Placeholder for 'the backend's device' in a case's arguments."""

    def __repr__(self) -> str:
        return "DEVICE"


DEVICE = _Device()


@dataclass(frozen=True)
class Tensor:
    """An input tensor: its logical values (float64, already representable in `dtype`) and memory layout."""

    values: np.ndarray
    dtype: str
    layout: str = "contiguous"  # contiguous | transposed | strided | padded | offset


@dataclass
class Case:
    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    expect_error: str | None = None  # e.g. "ValueError": the learner must raise it
    extra: dict = field(default_factory=dict)  # contract-specific data (travels to the child as JSON)
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # parent-side: see cached()


T = TypeVar("T")


def cached(case: Case, key: str, compute: Callable[[], T]) -> T:
    """`compute()` once per case (float64 references, error bounds): a check that replays cached cases
    (grading/case_cache.py, same exercise + backend + seed) judges against the very same arrays for free."""
    if key not in case.memo:
        case.memo[key] = compute()
    return case.memo[key]


def get(exercise_id: str) -> ModuleType:
    name = exercise_id.replace("-", "_")
    try:
        return importlib.import_module(f"tritonlab.grading.contracts.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"tritonlab.grading.contracts.{name}":
            raise KeyError(exercise_id) from None
        raise


# ---- layouts: where a tensor's elements sit in its storage (shared by the child and the parent) -------


def contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return strides


def layout_geometry(shape: tuple[int, ...], layout: str) -> tuple[tuple[int, ...], int, int]:
    """(strides, storage_offset, storage elements needed) for a named layout of `shape`.

    contiguous: row-major; offset: row-major starting 7 elements into the storage; transposed: column-major
    (the transpose of a contiguous tensor); strided: every second element of the last dim, rows padded by one;
    padded: rows 5 elements longer than the logical row (a slice of a wider tensor); row-padded: rows 16
    elements longer (a slice whose rows stay 16-byte aligned when the row length is a multiple of 8).
    """
    ndim = len(shape)
    if layout in ("contiguous", "offset") or ndim == 0:
        strides = contiguous_strides(shape)
        offset = 7 if layout == "offset" else 0
    elif layout == "transposed":
        strides = list(reversed(contiguous_strides(tuple(reversed(shape)))))
        offset = 0
    elif layout == "strided":
        strides, acc = [0] * ndim, 2
        for i in range(ndim - 1, -1, -1):
            strides[i] = acc
            acc = acc * max(shape[i], 1) + 1
        offset = 1
    elif layout == "row-padded":  # rows 16 elements longer: still unit stride and 16-byte aligned (TMA)
        strides = contiguous_strides(shape[:-1] + (shape[-1] + 16,))
        offset = 0
    elif layout == "padded":
        strides = contiguous_strides(shape[:-1] + (shape[-1] + 5,))
        strides[-1] = 1
        offset = 0
    else:
        raise ValueError(f"unknown layout {layout!r}")
    extent = offset + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if d > 0) + 1
    if any(d == 0 for d in shape):
        extent = offset + 1
    return tuple(strides), offset, extent


# ---- values <-> storage encodings (numpy only) ------------------------------------------------------------


def quantize(values: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 values that `dtype` actually represents (round to nearest even)."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == "float64":
        return v.copy()
    if dtype == "float32":
        return v.astype(np.float32).astype(np.float64)
    if dtype == "float16":
        return v.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return bf16_bits_to_f64(f64_to_bf16_bits(v))
    if dtype == FP8:
        return e4m3_bits_to_f64(f64_to_e4m3_bits(v))
    if dtype in ("int32", "int64", "int16", "int8", "uint8"):
        return np.rint(v).astype(np.int64).astype(np.float64)
    if dtype == "bool":
        return (v != 0).astype(np.float64)
    raise ValueError(f"unsupported dtype {dtype}")


def f64_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """float64 -> bfloat16 bits through float32 (round to nearest even; NaN -> 0x7FC0). In uint32 and in place:
    a GPU check's cases reach 2²⁴ elements, made by the server for every check."""
    f32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    nan = np.isnan(f32)
    bits = f32.view(np.uint32)  # f32 is our own copy: rounded in place
    odd = bits >> 16
    odd &= 1
    bits += 0x7FFF  # no finite pattern wraps (0xFF7FFFFF + 0x8000 < 2³²); NaN is replaced below
    bits += odd
    bits >>= 16
    rounded = bits.astype(np.uint16)
    rounded[nan] = 0x7FC0
    return rounded


def bf16_bits_to_f64(bits: np.ndarray) -> np.ndarray:
    u = np.asarray(bits).astype(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


def _e4m3_values(b: np.ndarray) -> np.ndarray:
    exp, man = (b >> 3) & 15, b & 7
    magnitude = np.where(exp == 0, man / 8.0 * 2.0**-6, (1 + man / 8.0) * 2.0 ** (exp - 7))
    out = np.where(b & 0x80, -magnitude, magnitude)
    return np.where((b & 0x7F) == 0x7F, np.nan, out)


_E4M3_TABLE = _e4m3_values(np.arange(256, dtype=np.int64))  # every one of the 256 bit patterns
_CHUNK = 1 << 15  # elements f64_to_e4m3_bits rounds at a time


def e4m3_bits_to_f64(bits: np.ndarray) -> np.ndarray:
    """fp8 e4m3 (the `fn` variant: no infinities; 0x7F and 0xFF are NaN) bits -> float64."""
    return _E4M3_TABLE[np.asarray(bits).astype(np.uint8)]


def f64_to_e4m3_bits(values: np.ndarray) -> np.ndarray:
    """float64 -> fp8 e4m3 bits, rounding to nearest (ties to even), saturating at ±448; NaN -> 0x7F.

    On float64's own bits (an fp8 check's cases hold millions of elements, made by the server for every check):
    from 2⁻⁶ up, keeping 3 of the 52 mantissa bits rounds half to even and a carry moves the exponent, so
    the top bits are fp8's exponent and mantissa once the bias differs; below 2⁻⁶ the steps are 2⁻⁹ apart and
    `rint` counts them half to even."""
    v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    out = np.empty(v.size, dtype=np.uint8)
    for start in range(0, v.size, _CHUNK):  # a chunk's dozen passes stay in the CPU's cache
        out[start : start + _CHUNK] = _e4m3_chunk(v[start : start + _CHUNK])
    return out.reshape(np.shape(values))


def _e4m3_chunk(v: np.ndarray) -> np.ndarray:
    bits = v.view(np.uint64) & np.uint64(0x7FFF_FFFF_FFFF_FFFF)  # |v|'s bits
    odd = (bits >> np.uint64(49)) & np.uint64(1)
    code = ((bits + (np.uint64((1 << 48) - 1) + odd)) >> np.uint64(49)).astype(np.int64)
    code -= (1023 - 7) << 3  # float64's exponent bias to e4m3's, in units of the 3-bit mantissa
    small = bits < np.uint64(0x3F90_0000_0000_0000)  # |v| < 2⁻⁶ (zero and fp8's subnormals)
    code[small] = np.rint(np.abs(v[small]) * 512.0).astype(np.int64)
    np.clip(code, 0, 0x7E, out=code)  # saturate at 448 (infinities too)
    out = code.astype(np.uint8)
    out[np.signbit(v)] |= 0x80
    out[np.isnan(v)] = 0x7F
    return out


def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """How an input travels to the child: native numpy dtypes, bf16 as uint16 bits, fp8 as uint8 bits."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == "bfloat16":
        return f64_to_bf16_bits(v)
    if dtype == FP8:
        return f64_to_e4m3_bits(v)
    if dtype == "bool":
        return v != 0
    return v.astype(np.dtype(dtype))


_BITS = {
    "float32": np.uint32,
    "float16": np.uint16,
    "bfloat16": np.uint16,
    "float64": np.uint64,
    FP8: np.uint8,
}


def unsigned_bits(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw output bits as unsigned integers (for comparison with the guard patterns)."""
    if dtype in _BITS:
        return np.asarray(raw).view(_BITS[dtype])
    width = np.asarray(raw).dtype.itemsize
    return np.asarray(raw).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width])


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """An output's raw bits (as the child sent them) -> float64 values."""
    raw = np.asarray(raw)
    with np.errstate(invalid="ignore", over="ignore"):
        return _decode(raw, dtype)


def _decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return raw.view(np.float32).astype(np.float64)
    if dtype == "float16":
        return raw.view(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return bf16_bits_to_f64(raw.view(np.uint16))
    if dtype == "float64":
        return raw.view(np.float64).copy()
    if dtype == FP8:
        return e4m3_bits_to_f64(raw.view(np.uint8))
    return raw.astype(np.float64)


def random_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale: float = 1.0
) -> np.ndarray:
    """Fresh, never-all-zero values representable in `dtype` (ints: small signed integers)."""
    if dtype.startswith("int") or dtype == "uint8":
        v = rng.integers(-1000, 1000, size=shape).astype(np.float64)
        if v.size:
            v.flat[0] = v.flat[0] or 1
        return v
    # A GPU check's cases reach 2²⁴ elements, made by the server for every check. A dtype of float32 or less is
    # drawn in float32 (the rounding such a case needs anyway), float64 in float64; from LARGE elements on, the
    # draws are uniform on [-2, 2) instead of normal: eight times cheaper for 2²⁴ values (0.05 s against 0.44 s
    # on the CI machine's core, where making cases was a quarter of the server's sampled time under a class's
    # load, H100-80GB-HBM3 run 2026-12-07 (82c912d)), and a large case tests indexing and masks, which any
    # fresh values do. In place where it can be.
    narrow = dtype != "float64"
    kind = np.float32 if narrow else np.float64
    if narrow and math.prod(shape) >= LARGE:
        v = rng.random(size=shape, dtype=np.float32)
        v -= np.float32(0.5)
        v *= np.float32(4.0 * scale)
    else:
        v = rng.standard_normal(size=shape, dtype=kind)
        if scale != 1.0:
            v *= kind(scale)
    # No exact zeros: an unwritten output must never look right by accident.
    zero = v == 0
    if zero.any():
        v[zero] = kind(0.5 * scale)
    if dtype in ("float32", "float64"):
        return v.astype(np.float64, copy=narrow)
    return quantize(v.astype(np.float64), dtype)


LARGE = 1 << 20  # elements: a case this large draws uniform values (random_values)


# ---- tolerances derived from the output's rounding --------------------------------------------------------

UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
UNIT_ROUNDOFF[FP8] = 2.0**-4  # 3 mantissa bits
# About one step of a dtype's spacing near zero: a relative tolerance cannot cover a result rounded into the
# subnormal range, where the steps are fixed (float16: 2**-24 ≈ 6e-8), so an absolute tolerance adds a few of these.
TINY = {"float64": 1e-300, "float32": 1e-37, "float16": 6e-8, "bfloat16": 1e-37, FP8: 2.0**-9}


def rounding_tol(dtype: str, ulps: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) allowing `ulps` units of rounding in `dtype` (ints: exact)."""
    if dtype not in UNIT_ROUNDOFF:
        return 0.0, 0.0
    u = UNIT_ROUNDOFF[dtype]
    return 2 * u * ulps, TINY[dtype] * ulps


def describe_case(case: Case) -> str:
    parts = []
    for a in case.args:
        if isinstance(a, Tensor):
            shape = "×".join(str(d) for d in a.values.shape) or "scalar"
            parts.append(f"{a.dtype}[{shape}]" + ("" if a.layout == "contiguous" else f" {a.layout}"))
        elif a is DEVICE:
            parts.append("device")
        else:
            parts.append(repr(a))
    parts += [f"{k}={v!r}" for k, v in case.kwargs.items()]
    return ", ".join(parts)


def result_error(result: dict) -> dict | None:
    return result.get("exception") if result.get("status") == "raised" else None


def any_tensor_numel(case: Case) -> int:
    return sum(int(a.values.size) for a in case.args if isinstance(a, Tensor))
