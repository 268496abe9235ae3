"""Every launched kernel must compile for a GPU: each launch's kernel lowered to Triton IR for
`GPUTarget("cuda", 90, 32)` with the launch's own signature, cached per signature. On the interpreter a kernel
body runs as Python, so numpy or other Python in it works there and nowhere else: here it is refused."""

from __future__ import annotations

from typing import Any

from tritonlab.grading.replay import Refused
from tritonlab.i18n import t

TARGET = ("cuda", 90, 32)


class Pointer:
    """A tensor argument as lowering sees it: its dtype, and whether its address will be a multiple of 16 (its
    offset into a fresh allocation, whose base always is) — no buffer exists yet."""

    def __init__(self, dtype: str, aligned: bool = True) -> None:
        self.dtype = dtype
        self.aligned = aligned


_TYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int32": "i32",
    "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1", "float8_e4m3fn": "fp8e4nv",
}  # fmt: skip
_LOWERED: dict[tuple, str] = {}


def lower(jit_fn: Any, bound: dict[str, Any], launch_options: dict[str, Any]) -> None:
    """Lower one launch's kernel to TTIR for sm_90 (cached per signature). Raise Refused if it does not."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for param in jit_fn.params:
        name = param.name
        value = bound.get(name, param.default if param.has_default else None)
        if param.is_constexpr:
            signature[name] = "constexpr"
            constexprs[name] = value
        elif isinstance(value, Pointer):
            signature[name] = "*" + _TYPES[value.dtype]
        elif isinstance(value, torch.Tensor):
            signature[name] = "*" + _TYPES.get(str(value.dtype).removeprefix("torch."), "fp32")
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int):
            signature[name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        elif isinstance(value, float):
            signature[name] = "fp32"
        else:  # None and other plain values are specialised as constants, as Triton does
            signature[name] = "constexpr"
            constexprs[name] = value
    key = (
        jit_fn.fn.__name__,
        tuple(signature.items()),
        repr(sorted(constexprs.items())),
        repr(launch_options),
    )
    if key in _LOWERED:
        if _LOWERED[key]:
            raise Refused(_LOWERED[key])
        return
    why = ""
    try:
        source = ASTSource(jit_fn, signature, constexprs)
        _to_ttir(source, GPUTarget(*TARGET), launch_options)
    except Exception as exc:  # noqa: BLE001 - any failure to lower is the learner's to see
        message = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:400]
        why = t("grader.not_lowered", kernel=jit_fn.fn.__name__, error=f"{type(exc).__name__}: {message}")
    _LOWERED[key] = why
    if why:
        raise Refused(why)


# (module name, attribute) -> (module, attribute, interpreted, compiled); one function is often reachable from
# several modules (`tl.max` is `triton.language.standard.max`): each place is swapped and restored.
_COMPILED: dict[tuple[str, str], tuple[Any, str, Any, Any]] = {}
_JIT_OF: dict[int, Any] = {}  # id(interpreted) -> its compiled twin, made once


class _compiling:
    """On the interpreter, Triton's own library functions (`tl.sum`, `tl.max`, `tl.cdiv`, ...) were made
    `InterpretedFunction`s when triton was imported, and the code generator cannot call those. While a kernel
    lowers, put compiled `JITFunction`s of the same Python functions in their place; restore them after."""

    def __enter__(self) -> None:
        import sys

        from triton.runtime.jit import JITFunction

        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:  # pragma: no cover - no interpreter in this Triton
            InterpretedFunction = ()  # noqa: N806
        for module_name, module in list(sys.modules.items()):
            if not module_name.startswith("triton.language") or module is None:
                continue
            for name, value in list(vars(module).items()):
                if InterpretedFunction and isinstance(value, InterpretedFunction):
                    if id(value) not in _JIT_OF:
                        _JIT_OF[id(value)] = JITFunction(value.fn, **value.kwargs)
                    _COMPILED[(module_name, name)] = (module, name, value, _JIT_OF[id(value)])
                    setattr(module, name, _JIT_OF[id(value)])
        self.swapped = [entry for entry in _COMPILED.values() if getattr(entry[0], entry[1]) is entry[3]]

    def __exit__(self, *exc: object) -> None:
        for module, name, interpreted, _compiled in self.swapped:
            setattr(module, name, interpreted)


def _to_ttir(source: Any, target: Any, launch_options: dict[str, Any]) -> Any:
    with _compiling():
        return _lower_ast(source, target, launch_options)


def _lower_ast(source: Any, target: Any, launch_options: dict[str, Any]) -> Any:
    """The first compiler stage only (Python AST -> TTIR), where the code generator meets every statement.
    Falls back on the full `triton.compile` where this Triton's internals differ."""
    import inspect

    import triton
    from triton.compiler.compiler import make_backend

    try:
        from triton._C.libtriton import ir

        backend = make_backend(target)
        options = backend.parse_options(dict(launch_options))
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        codegen = backend.get_codegen_implementation(options)
        module_map = backend.get_module_map()
        params = list(inspect.signature(source.make_ir).parameters)
    except (ImportError, AttributeError, TypeError):
        return triton.compile(source, target=target, options=dict(launch_options))
    if params and params[0] == "target":
        return source.make_ir(target, options, codegen, module_map, context)
    return source.make_ir(options, codegen, module_map, context)
