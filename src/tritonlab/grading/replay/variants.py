"""A launch's specialization as plain data, and back (issue 40: the replay's compile taken off the critical path).

Triton compiles one binary per (kernel source, specialization, options): each pointer's dtype and whether its
address is a multiple of 16, each integer's value class (== 1, a multiple of 16, 32 or 64 bits), every
constexpr's value, num_warps/num_stages. The replay child writes each distinct launch it ran as a *variant*
(`describe`): the kernel's name, its arguments and its launch options, where a tensor is only
`["ptr", dtype, aligned]` and every other argument its exact value. The parent keeps the last check's variants
per learner and exercise (grading/check/precompile.py), and on the next check a trusted child (mode
`precompile`, grading/replay/precompile.py) compiles them into the replay's cache while the check child runs:
it rebuilds the kernels from the graded text alone (source.py, as the replay does) and calls each kernel's
`warmup` with `arguments(variant)`: a small real tensor of the same dtype and alignment for each pointer and
the exact values for the rest. Triton's own launch path specializes them exactly as it specializes the replay's
arguments, so the replay's launch finds the entry the precompile left (tests/test_precompile.py proves the key
match on this machine for `GPUTarget("cuda", 90, 32)`).

A variant that came from a process that ran learner code, or from a file on disk, is hostile data: `validate`
bounds every field (count, names, types, magnitudes, lengths) and refuses the rest with ValueError. At worst a
variant costs one bounded compile of the learner's own kernel text in a trusted child: it can never put a
binary under a key that its source does not produce.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_VARIANTS = 32
MAX_ARGS = 64
MAX_STR = 64
MAX_BYTES = 64 << 10  # a stored set of variants, as JSON
INT_BOUND = 1 << 64
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# torch dtype names a pointer may have (grading/guards.py's), and Triton's names a `tl.dtype` argument may have
POINTER_DTYPES = frozenset(
    {"float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "int8", "uint8", "bool"}
    | {"float8_e4m3fn", "float8_e5m2"}
)
TL_DTYPES = frozenset({"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}) | {
    "fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64",
}  # fmt: skip
OPTIONS = {"num_warps": (1, 64), "num_stages": (0, 16), "num_ctas": (1, 16), "maxnreg": (0, 65536)}
FLAG_OPTIONS = {"enable_fp_fusion", "launch_cooperative_grid"}


def describe_value(value: Any) -> list:
    """One argument as data: a tensor by dtype and 16-byte alignment, anything else by value."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return ["ptr", str(value.dtype).removeprefix("torch."), value.data_ptr() % 16 == 0]
    if isinstance(getattr(value, "aligned", None), bool) and isinstance(getattr(value, "dtype", None), str):
        return ["ptr", value.dtype, value.aligned]  # the replay's lowering pass: replay/lower.py `Pointer`
    if value is None:
        return ["none"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, str):
        return ["str", value]
    if type(value).__name__ == "dtype" and hasattr(value, "primitive_bitwidth"):  # a tl.dtype
        return ["dtype", str(value)]
    raise ValueError(f"an argument of type {type(value).__name__} has no variant form")


def describe(kernel: str, args: list, kwargs: dict, options: dict) -> dict:
    """One launch as a variant (see the module docstring)."""
    return {
        "kernel": kernel,
        "args": [describe_value(a) for a in args],
        "kwargs": {k: describe_value(v) for k, v in kwargs.items()},
        "options": dict(options),
    }


def _value(raw: Any) -> list:
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
        raise ValueError("an argument is not [kind, ...]")
    kind, rest = raw[0], raw[1:]
    ok = False
    if kind == "ptr" and len(rest) == 2:
        ok = rest[0] in POINTER_DTYPES and isinstance(rest[1], bool)
    elif kind == "none":
        ok = not rest
    elif kind == "bool" and len(rest) == 1:
        ok = isinstance(rest[0], bool)
    elif kind == "int" and len(rest) == 1:
        v = rest[0]
        ok = isinstance(v, int) and not isinstance(v, bool) and -INT_BOUND <= v < INT_BOUND
    elif kind == "float" and len(rest) == 1 and isinstance(rest[0], str) and len(rest[0]) <= MAX_STR:
        try:
            float.fromhex(rest[0])
            ok = True
        except ValueError:
            ok = False
    elif kind == "str" and len(rest) == 1:
        ok = isinstance(rest[0], str) and len(rest[0]) <= MAX_STR
    elif kind == "dtype" and len(rest) == 1:
        ok = rest[0] in TL_DTYPES
    if not ok:
        raise ValueError(f"a malformed argument of kind {kind[:16]!r}")
    return list(raw)


def validate_one(raw: Any) -> dict:
    """One variant, checked field by field (ValueError names what is wrong)."""
    if not isinstance(raw, dict) or set(raw) != {"kernel", "args", "kwargs", "options"}:
        raise ValueError("a variant is not {kernel, args, kwargs, options}")
    kernel, args, kwargs, options = raw["kernel"], raw["args"], raw["kwargs"], raw["options"]
    if not isinstance(kernel, str) or not NAME.match(kernel):
        raise ValueError("a variant's kernel name is not an identifier")
    if not isinstance(args, list) or not isinstance(kwargs, dict) or len(args) + len(kwargs) > MAX_ARGS:
        raise ValueError("a variant's arguments are malformed or too many")
    if any(not isinstance(k, str) or not NAME.match(k) for k in kwargs):
        raise ValueError("a variant's keyword is not an identifier")
    if not isinstance(options, dict):
        raise ValueError("a variant's options are malformed")
    for key, value in options.items():
        if key in OPTIONS:
            low, high = OPTIONS[key]
            good = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        else:
            good = key in FLAG_OPTIONS and isinstance(value, bool)
        if not good:
            raise ValueError(f"a variant's launch option {str(key)[:32]!r} is not allowed")
    return {
        "kernel": kernel,
        "args": [_value(a) for a in args],
        "kwargs": {k: _value(v) for k, v in kwargs.items()},
        "options": dict(options),
    }


def validate(raw: Any) -> list[dict]:
    """A list of variants, each checked, duplicates dropped; ValueError when it is not one or is too big."""
    if not isinstance(raw, list) or len(raw) > MAX_VARIANTS:
        raise ValueError(f"variants must be a list of at most {MAX_VARIANTS}")
    if len(json.dumps(raw)) > MAX_BYTES:
        raise ValueError(f"variants take more than {MAX_BYTES} bytes")
    return unique([validate_one(v) for v in raw])


def unique(variants: list[dict]) -> list[dict]:
    seen, out = set(), []
    for v in variants:
        key = json.dumps(v, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def argument(raw: list, device: str) -> Any:
    """The value a variant's argument stands for; a pointer becomes a small real tensor of its dtype, at an
    address that is a multiple of 16 exactly when the recorded one was (torch's allocations are)."""
    kind = raw[0]
    if kind == "ptr":
        import torch

        dtype = getattr(torch, raw[1])
        base = torch.empty(4, dtype=dtype, device=device)
        view = base if raw[2] else base[1:]  # one element in: itemsize ≤ 8 bytes, never a multiple of 16
        assert (view.data_ptr() % 16 == 0) == raw[2]
        return view
    if kind == "none":
        return None
    if kind in ("bool", "int", "str"):
        return raw[1]
    if kind == "float":
        return float.fromhex(raw[1])
    if kind == "dtype":
        import triton.language as tl

        return tl.dtype(raw[1])
    raise ValueError(f"unknown argument kind {kind!r}")


def arguments(variant: dict, device: str) -> tuple[list, dict]:
    """(positional, keyword) arguments that specialize as the variant's launch did."""
    args = [argument(a, device) for a in variant["args"]]
    kwargs = {k: argument(v, device) for k, v in variant["kwargs"].items()}
    return args, kwargs | dict(variant["options"])
