"""The few Triton entry points `tritonlab inspect` and the trusted compile need, behind one adapter (CHILD side).

Public API only, the same on Triton 3.6 and 3.9:

* `target(name)`: `triton.backends.compiler.GPUTarget(backend, arch, warp_size)`.
* `compile_kernel(...)`: `triton.compile(triton.compiler.ASTSource(fn, signature, constexprs, attrs),
  target=..., options=...)` — needs no GPU and no driver.
* `bind_launch(jit_fn, args, kwargs)`: the signature, constexprs and alignment attributes of a launch, worked
  out here from `inspect.signature(jit_fn.fn)` and the argument values, by the rules Triton's launcher applies
  (a `tl.constexpr` parameter, `None` and an integer equal to 1 are compile-time constants; integers are `i32`
  when they fit, else `i64` (`u64` from 2**63); pointers and integers that are multiples of 16 get
  `tt.divisibility = 16`). tests/test_kernel_inspect.py holds it against Triton's own binding.
* `ptxas_path(arch)`: `triton.knobs.nvidia.ptxas` (or `ptxas_blackwell`, which Triton 3.9 uses from sm_90 on),
  the ptxas that Triton ships.

One private hook remains, `intercept_launches`: it replaces `JITFunction.run` (and `Autotuner.run`) with a
recorder. Triton has no public way to see a launch's arguments without launching: `JITFunction.run` first asks
the active driver for the current device, which fails on a machine without a GPU ("0 active drivers"), and the
public launch hooks (`triton.knobs.runtime.launch_enter_hook`) fire only once a compiled kernel really launches.
`run(self, *args, grid, warmup, **kwargs)` has had this signature from Triton 3.0 through 3.9.
"""

from __future__ import annotations

import inspect
from typing import Any

# torch dtype name -> Triton signature type of a pointer to it
POINTER_TYPES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
DIVISIBILITY = [["tt.divisibility", 16]]


def target(backend: str, arch: Any, warp_size: int) -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget(backend, arch, warp_size)


def compile_kernel(
    jit_fn: Any, signature: dict, constexprs: dict, attrs: dict, options: dict, gpu_target: Any
) -> Any:
    import triton
    from triton.compiler import ASTSource

    source = ASTSource(fn=jit_fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=gpu_target, options=options)


def _is_constexpr(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", "") == "constexpr"


def parameter_names(jit_fn: Any) -> list[str]:
    return list(inspect.signature(jit_fn.fn).parameters)


def _scalar_type(value: Any, name: str) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        return "u64" if value >= 2**63 else "i64"
    if isinstance(value, float):
        return "fp32"
    dtype = getattr(value, "dtype", None)
    if hasattr(value, "data_ptr") and dtype is not None:
        key = str(dtype).removeprefix("torch.")
        if key not in POINTER_TYPES:
            raise TypeError(f"argument `{name}`: tensors of {key} are not supported here")
        return "*" + POINTER_TYPES[key]
    raise TypeError(f"argument `{name}` of type {type(value).__name__} cannot be passed to a kernel here")


def bind_launch(jit_fn: Any, args: tuple, kwargs: dict) -> tuple[dict, dict, dict, dict]:
    """(signature, constexprs, attrs, options) of one launch `jit_fn[grid](*args, **kwargs)`, as ASTSource and
    triton.compile take them; constexprs and attrs are keyed by (parameter index,)."""
    params = inspect.signature(jit_fn.fn).parameters
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    call_kwargs = {k: v for k, v in kwargs.items() if k in params}
    unknown = [k for k in kwargs if k not in params and k not in LAUNCH_OPTIONS]
    if unknown:
        raise TypeError(
            f"keyword argument(s) {', '.join(unknown)} match no parameter of {jit_fn.fn.__name__}"
        )
    bound = inspect.signature(jit_fn.fn).bind(*args, **call_kwargs)
    bound.apply_defaults()
    keep_ints = set(getattr(jit_fn, "do_not_specialize", []) or [])
    signature: dict[str, str] = {}
    constexprs: dict[tuple, Any] = {}
    attrs: dict[tuple, list] = {}
    for i, (name, value) in enumerate(bound.arguments.items()):
        value = getattr(value, "value", value) if type(value).__name__ == "constexpr" else value
        integer = isinstance(value, int) and not isinstance(value, bool)
        if (
            _is_constexpr(params[name].annotation)
            or value is None
            or (integer and value == 1 and name not in keep_ints and i not in keep_ints)
        ):
            signature[name] = "constexpr"
            constexprs[(i,)] = value
            continue
        signature[name] = _scalar_type(value, name)
        if (integer and value % 16 == 0) or (hasattr(value, "data_ptr") and value.data_ptr() % 16 == 0):
            attrs[(i,)] = DIVISIBILITY
    return signature, constexprs, attrs, options


def ptxas_path(arch: int) -> str:
    """The ptxas bundled with Triton (the one its own compile uses for `arch`)."""
    from triton import knobs

    tool = getattr(knobs.nvidia, "ptxas_blackwell", None) if arch >= 90 else None
    try:
        return str((tool or knobs.nvidia.ptxas).path)
    except Exception:  # noqa: BLE001 - e.g. no ptxas-blackwell in this wheel: fall back to the plain one
        return str(knobs.nvidia.ptxas.path)


def intercept_launches(launches: list) -> None:
    """PRIVATE hook (see the module docstring): record `(jit_fn, args, kwargs)` for every launch instead of
    launching; an autotuned kernel launches with its first config."""
    from triton.runtime import autotuner
    from triton.runtime.jit import JITFunction

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        launches.append((self, args, dict(kwargs)))
        return None

    JITFunction.run = run  # type: ignore[method-assign]

    def tuned_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = self.configs[0]
        merged = {**kwargs, **config.all_kwargs()}
        return self.fn.run(*args, **merged)

    autotuner.Autotuner.run = tuned_run  # type: ignore[method-assign]
