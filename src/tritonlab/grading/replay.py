"""CHILD side of the fresh replay: redo a check's recorded launches without ever importing the learner's module.

The parent starts this job (mode `replay`, forked from the zygote like every run) after the check child has
ended. It reads the learner's file as TEXT, takes the `@triton.jit` function definitions out of its syntax tree
(with the module-level constants they use: literals and `tl.constexpr(literal)` only) and rebuilds each with
`triton.jit` from that source alone, in a namespace that holds triton, triton.language, math, those constants
and the other extracted kernels. No other top-level code of the learner's file runs here, so nothing the
learner wrote can patch this module. Every launched kernel must also lower to Triton IR for a GPU
(`GPUTarget("cuda", 90, 32)`): Python or numpy hidden in a kernel body runs on the interpreter, not on a GPU.

It then rebuilds the case's inputs from the same `.npy` files, re-creates every allocation as the record says
(poison for `empty*`, the constant for `zeros`/`ones`/`full`), replays the events in order (launches with the
recorded grids, layout copies, fills) and writes the returned tensors' bits. The parent compares them with
what the check child returned. The launch record comes from a process that ran learner code: it is hostile
data, and everything in it is checked before use (types, sizes, bounds, nesting).

Writes `replay.json`: {"cases": {"INDEX": {"outputs": [file, ...]} | {"refused": why}}}.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import json
import linecache
import math
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPLAY_RESULT = "replay.json"

# What a record may hold (the parent caps its size too).
MAX_BUFFERS = 256
MAX_EVENTS = 4096
MAX_ARGS = 64
MAX_DIMS = 8
MAX_ELEMENTS = 1 << 34
MAX_STR = 64

# Builtins a kernel body may name: the ones Triton's code generator itself understands.
KERNEL_BUILTINS = {
    "range", "min", "max", "len", "int", "float", "bool", "print", "isinstance", "abs", "zip", "enumerate",
    "tuple", "list", "True", "False", "None", "AssertionError", "ValueError",
}  # fmt: skip
# Attributes of the `triton` module a kernel may use (everything under triton.language is allowed).
TRITON_ATTRS = {"language", "cdiv", "next_power_of_2", "constexpr", "jit"}
JIT_OPTIONS = {"do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"}
LAUNCH_OPTIONS = {
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
    "launch_cooperative_grid",
}
TARGET = ("cuda", 90, 32)


class Refused(Exception):
    """The launches cannot stand on their own: the message is the learner's `host-computed` reason."""


# ---- reading the learner's file as text -----------------------------------------------------------------


def _allowed_module(name: str) -> bool:
    return name in ("math", "triton") or name == "triton.language" or name.startswith("triton.language.")


def _import_names(node: ast.stmt) -> dict[str, Any]:
    """The names an `import` of triton/math binds (other imports bind nothing here: a kernel naming them is
    refused)."""
    found: dict[str, Any] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if not _allowed_module(alias.name):
                continue
            if alias.asname:
                found[alias.asname] = importlib.import_module(alias.name)
            else:  # `import triton.language` binds `triton`
                top = alias.name.split(".")[0]
                found[top] = importlib.import_module(top)
    elif (
        isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _allowed_module(node.module)
    ):
        module = importlib.import_module(node.module)
        for alias in node.names:
            if alias.name == "*" or alias.name.startswith("_"):
                continue
            full = f"{node.module}.{alias.name}"
            if _allowed_module(full):
                try:
                    value = importlib.import_module(full)
                except ImportError:
                    value = getattr(module, alias.name, None)
            else:
                value = getattr(module, alias.name, None)
            if value is not None:
                found[alias.asname or alias.name] = value
    return found


def _literal(node: ast.expr) -> Any:
    value = ast.literal_eval(node)
    if not isinstance(value, (int, float, bool, str, type(None))) or (
        isinstance(value, str) and len(value) > 256
    ):
        raise ValueError("not a simple literal")
    return value


def _is_jit(node: ast.expr, names: dict[str, Any]) -> tuple[bool, dict]:
    """Is this decorator `triton.jit` (or an alias), bare or called with literal options?"""
    import triton

    options: dict = {}
    target = node
    if isinstance(node, ast.Call):
        target = node.func
        for kw in node.keywords:
            if kw.arg in JIT_OPTIONS:
                try:
                    options[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    pass
    if isinstance(target, ast.Name):
        return names.get(target.id) is triton.jit, options
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return target.attr == "jit" and names.get(target.value.id) is triton, options
    return False, options


def extract(source: str) -> tuple[dict[str, ast.FunctionDef], dict[str, dict], dict[str, Any]]:
    """(kernel defs by name, their jit options, the namespace: triton/tl/math modules and constants)."""
    import triton
    import triton.language as tl

    tree = ast.parse(source)
    names: dict[str, Any] = {"triton": triton, "tl": tl, "math": math}
    kernels: dict[str, ast.FunctionDef] = {}
    options: dict[str, dict] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(_import_names(node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
                continue
            name, value = targets[0].id, node.value
            names.pop(name, None)  # a later assignment of something else hides an earlier constant
            kernels.pop(name, None)
            try:
                if isinstance(value, ast.Call) and _is_constexpr_call(value, names):
                    names[name] = tl.constexpr(_literal(value.args[0]))
                else:
                    names[name] = _literal(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
        elif isinstance(node, ast.FunctionDef):
            names.pop(node.name, None)
            kernels.pop(node.name, None)
            for decorator in node.decorator_list:
                jit, opts = _is_jit(decorator, names)
                if jit:
                    kernels[node.name] = node
                    options[node.name] = opts
        elif isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)):
            names.pop(node.name, None)
            kernels.pop(node.name, None)
    return kernels, options, names


def _is_constexpr_call(call: ast.Call, names: dict[str, Any]) -> bool:
    import triton.language as tl

    if len(call.args) != 1 or call.keywords:
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return names.get(func.id) is tl.constexpr
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "constexpr"
        and isinstance(func.value, ast.Name)
        and names.get(func.value.id) in (tl, tl.core)
    )


def _bound_names(fn: ast.FunctionDef) -> set[str]:
    bound = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    for extra in (fn.args.vararg, fn.args.kwarg):
        if extra is not None:
            bound.add(extra.arg)
    for node in (n for stmt in fn.body for n in ast.walk(stmt)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
    return bound


def _check_chain(node: ast.Attribute, names: dict[str, Any], kernel: str) -> None:
    """`a.b.c` rooted at a module of the namespace: every module on the way must be math or triton.language
    (of `triton` itself only TRITON_ATTRS), so a kernel cannot reach os, sys or the grader through them."""
    chain: list[str] = []
    base: ast.expr = node
    while isinstance(base, ast.Attribute):
        chain.append(base.attr)
        base = base.value
    if not isinstance(base, ast.Name) or not isinstance(names.get(base.id), types.ModuleType):
        return
    obj = names[base.id]
    for attr in reversed(chain):
        if obj.__name__ == "triton" and attr not in TRITON_ATTRS:
            raise Refused(f"kernel `{kernel}` uses `triton.{attr}`, which is not part of triton.language")
        obj = getattr(obj, attr, None)
        if obj is None:
            return  # Triton itself reports a missing attribute
        if isinstance(obj, types.ModuleType) and not _allowed_module(obj.__name__):
            raise Refused(f"kernel `{kernel}` reaches the module `{obj.__name__}` through `{base.id}`")
        if not isinstance(obj, types.ModuleType):
            return


def check_kernel(fn: ast.FunctionDef, names: dict[str, Any], kernels: set[str]) -> None:
    """Refuse a kernel that names anything but triton/tl/math, the file's constants, other kernels and the
    builtins Triton understands; that touches `_private` attributes; or that defines functions or classes."""
    bound = _bound_names(fn)
    # the decorators are not run here (each kernel is rebuilt with a bare triton.jit): check the rest
    parts: list[ast.AST] = [fn.args, *fn.body] + ([fn.returns] if fn.returns else [])
    for node in (n for part in parts for n in ast.walk(part)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            raise Refused(f"kernel `{fn.name}` defines a function or class inside it")
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Await, ast.Yield)):
            raise Refused(
                f"kernel `{fn.name}` uses `{type(node).__name__.lower()}`, which Triton does not compile"
            )
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise Refused(f"kernel `{fn.name}` uses the private attribute `{node.attr}`")
            _check_chain(node, names, fn.name)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            if node.id in names or node.id in kernels or node.id in KERNEL_BUILTINS:
                continue
            raise Refused(
                f"kernel `{fn.name}` (line {node.lineno}) uses `{node.id}`, which is neither triton, tl, math, a "
                "constant of your file nor another @triton.jit function: a kernel may use only those"
            )
    for default in [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]:
        literal = isinstance(default, ast.Constant) or (
            isinstance(default, ast.UnaryOp) and isinstance(default.operand, ast.Constant)
        )
        if not literal and not isinstance(default, ast.Name):
            raise Refused(f"kernel `{fn.name}` has a default argument that is not a literal")
    annotations = [a.annotation for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    for annotation in [*annotations, fn.returns]:
        if annotation is not None and any(isinstance(n, ast.Call) for n in ast.walk(annotation)):
            raise Refused(f"kernel `{fn.name}` has an annotation that calls something")


def build_kernels(source: str, filename: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(kernels to run, the same kernels as JITFunction for lowering). Each is rebuilt from its own source."""
    import triton
    from triton.runtime.jit import JITFunction

    try:
        defs, options, names = extract(source)
    except SyntaxError as exc:
        raise Refused(f"your file does not parse ({exc.msg})") from None
    for fn in defs.values():
        check_kernel(fn, names, set(defs))
    # inspect.getsource (which Triton uses) reads lines through linecache: give it the text, never the disk
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    built: list[dict[str, Any]] = []
    for wrap in ("run", "lower"):
        namespace: dict[str, Any] = {
            "__builtins__": builtins.__dict__,
            "__name__": "tritonlab_replay",
            **names,
        }
        bare = []
        for fn in defs.values():
            copy = ast.FunctionDef(**{f: getattr(fn, f) for f in fn._fields})
            copy.decorator_list = []
            ast.copy_location(copy, fn)
            bare.append(copy)
        module = ast.Module(body=bare, type_ignores=[])
        exec(compile(module, filename, "exec"), namespace)  # defs only: no other learner statement runs
        for name in defs:
            plain = namespace[name]
            if wrap == "run":
                namespace[name] = triton.jit(plain, **options[name])
            else:
                namespace[name] = JITFunction(plain, **options[name])
        built.append({name: namespace[name] for name in defs})
    return built[0], built[1]


# ---- lowering: every launched kernel must compile for a GPU ---------------------------------------------

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
        why = (
            f"kernel `{jit_fn.fn.__name__}` does not compile for a GPU ({type(exc).__name__}: {message}); the "
            "interpreter runs a kernel body as Python, so numpy or other Python in a kernel works there and "
            "nowhere else. Use only triton.language inside @triton.jit functions"
        )
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


# ---- the record: hostile data, checked before use ---------------------------------------------------------


def _int(value: Any, what: str, low: int = 0, high: int = 1 << 62) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise Refused(f"the launch record is malformed ({what})")
    return value


def _list(value: Any, what: str, most: int) -> list:
    if not isinstance(value, list) or len(value) > most:
        raise Refused(f"the launch record is malformed ({what})")
    return value


def _dict(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise Refused(f"the launch record is malformed ({what})")
    return value


class Pointer:
    """A tensor argument as lowering sees it: its dtype only (no buffer exists yet)."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class Replayer:
    """Re-creates one case's buffers and replays its events. With `materialize` False it only checks the record
    and hands tensors as `Pointer`s: the lowering pass, which must run before any interpreted launch (the
    interpreter leaves triton.language patched after a kernel calls a library function such as `tl.sum`)."""

    def __init__(self, device: str, run_dir: Path, materialize: bool = True) -> None:
        self.device = device
        self.run_dir = run_dir
        self.materialize = materialize
        self.buffers: list[Any] = []  # torch tensors (1-D) whose untyped storage the specs point into

    def build_buffers(self, record: dict, inputs: dict[str, Any]) -> None:
        import torch

        from tritonlab.grading import guards
        from tritonlab.grading.patterns import OUTPUT_GUARD, POISON

        for k, spec in enumerate(_list(record.get("buffers"), "buffers", MAX_BUFFERS)):
            spec = _dict(spec, "buffer")
            kind = spec.get("kind")
            if kind == "input":
                if spec.get("label") not in inputs:
                    raise Refused("the launch record names an input this case does not have")
                self.buffers.append(inputs[spec["label"]])
            elif kind == "alloc":
                dtype = self._dtype(spec.get("dtype"))
                numel = _int(spec.get("numel"), "allocation size", 0, MAX_ELEMENTS)
                init = spec.get("init")
                poison = init == "poison"
                if not poison and not (isinstance(init, dict) and isinstance(init.get("bits"), int)):
                    # refused when a launch, copy, fill or output touches it (the grader's own snapshots, e.g.
                    # autotune's per-config copies, are allocations that none of them name)
                    self.buffers.append(None)
                    continue
                g = guards.guarded_empty(
                    numel, dtype, self.device, f"output #{k}", OUTPUT_GUARD, POISON if poison else None
                )
                if not poison and numel:
                    bits = guards._as_bits(g.interior)
                    width = bits.element_size() * 8
                    value = _int(init["bits"], "fill bits", -(1 << (width - 1)), (1 << width) - 1)
                    bits.fill_(value - (1 << width) if value >= 1 << (width - 1) and width > 8 else value)
                self.buffers.append(g.buffer)
            elif kind == "scratch":
                nbytes = _int(spec.get("nbytes"), "scratch size", 0, MAX_ELEMENTS)
                self.buffers.append(torch.zeros(nbytes, dtype=torch.uint8, device=self.device))
            else:
                raise Refused("the launch record is malformed (buffer kind)")

    def _dtype(self, name: Any) -> Any:
        from tritonlab.grading import guards

        if not isinstance(name, str) or name not in guards._TORCH_DTYPES:
            raise Refused("the launch record is malformed (dtype)")
        return guards.torch_dtype(name)

    def tensor(self, spec: Any) -> Any:
        import torch

        spec = _dict(spec, "tensor")
        if spec.get("unknown"):
            raise Refused(
                "a tensor your function launched with or returned was made outside torch's allocation "
                "functions (from numpy, or by a torch operation), so its contents cannot be re-created"
            )
        dtype = self._dtype(spec.get("dtype"))
        shape = [_int(d, "shape", 0, MAX_ELEMENTS) for d in _list(spec.get("shape"), "shape", MAX_DIMS)]
        if spec.get("zero_size"):
            if math.prod(shape) != 0:
                raise Refused("the launch record is malformed (zero-size tensor)")
            return torch.empty(shape, dtype=dtype, device=self.device)
        if not self.materialize:
            return Pointer(spec["dtype"])
        buf = _int(spec.get("buf"), "buffer index", 0, len(self.buffers) - 1)
        if self.buffers[buf] is None:
            raise Refused("an allocation of your function cannot be re-created from the record")
        stride = [_int(s, "stride", 0, MAX_ELEMENTS) for s in _list(spec.get("stride"), "stride", MAX_DIMS)]
        offset = _int(spec.get("offset"), "offset", 0, MAX_ELEMENTS)
        if len(stride) != len(shape):
            raise Refused("the launch record is malformed (shape and strides)")
        storage = self.buffers[buf].untyped_storage()
        itemsize = torch.empty((), dtype=dtype).element_size()
        if math.prod(shape):
            last = offset + sum((d - 1) * s for d, s in zip(shape, stride, strict=True))
            if (last + 1) * itemsize > storage.nbytes():
                raise Refused("the launch record is malformed (a view outside its buffer)")
        return torch.empty(0, dtype=dtype, device=self.device).set_(storage, offset, shape, stride)

    def value(self, spec: Any) -> Any:
        spec = _dict(spec, "argument")
        if len(spec) != 1:
            raise Refused("the launch record is malformed (argument)")
        ((kind, raw),) = spec.items()
        if kind == "tensor":
            return self.tensor(raw)
        if kind == "none":
            return None
        if kind == "bool" and isinstance(raw, bool):
            return raw
        if kind == "int":
            return _int(raw, "integer argument", -(1 << 64), 1 << 64)
        if kind == "float" and isinstance(raw, str) and len(raw) <= MAX_STR:
            try:
                return float.fromhex(raw)
            except ValueError:
                pass
        if kind == "str" and isinstance(raw, str) and len(raw) <= MAX_STR:
            return raw
        if kind == "unsupported":
            raise Refused(f"a launch argument of type `{str(raw)[:40]}` cannot be replayed")
        raise Refused("the launch record is malformed (argument)")

    def run_events(self, record: dict, run_kernels: dict, lower_kernels: dict) -> None:
        if self.materialize:
            for step in self.steps(record, run_kernels, lower_kernels):
                step()
            return
        for event in _list(record.get("events"), "events", MAX_EVENTS):  # the lowering pass: launches only
            event = _dict(event, "event")
            if event.get("op") == "launch":
                name, _grid, args, kwargs, options = self.launch_arguments(event, lower_kernels)
                if self.device == "cpu":  # on a GPU the launch itself compiles for the real target
                    params = [p.name for p in lower_kernels[name].params]
                    lower(lower_kernels[name], dict(zip(params, args, strict=False)) | kwargs, options)

    def steps(self, record: dict, run_kernels: dict, lower_kernels: dict) -> list[Callable[[], Any]]:
        """The record's events as calls, in order (launches with the recorded grids, copies, fills), every
        argument decoded and checked before the first one runs: the replay runs them once, the speed timing
        (perf/speed.py) many times."""
        steps: list[Callable[[], Any]] = []
        for event in _list(record.get("events"), "events", MAX_EVENTS):
            event = _dict(event, "event")
            op = event.get("op")
            if op == "launch":
                name, grid, args, kwargs, options = self.launch_arguments(event, lower_kernels)
                steps.append(functools.partial(run_kernels[name][grid], *args, **kwargs, **options))
            elif op == "copy":
                steps.append(
                    functools.partial(self.tensor(event.get("dst")).copy_, self.tensor(event.get("src")))
                )
            elif op == "fill":
                steps.append(
                    functools.partial(self.tensor(event.get("dst")).fill_, self.value(event.get("value")))
                )
            else:
                raise Refused("the launch record is malformed (event)")
        return steps

    def launch_arguments(self, event: dict, lower_kernels: dict) -> tuple[str, tuple, list, dict, dict]:
        name = event.get("kernel")
        if not isinstance(name, str) or name not in lower_kernels:
            raise Refused(
                f"a launch of `{str(name)[:60]}`, which is not a @triton.jit function defined in your file "
                "(kernels must be defined in the file you submit)"
            )
        grid = tuple(_int(g, "grid", 0, 1 << 31) for g in _list(event.get("grid"), "grid", 3))
        if not grid:
            raise Refused("a launch whose grid could not be recorded")
        args = [self.value(a) for a in _list(event.get("args"), "arguments", MAX_ARGS)]
        kwargs_raw = _dict(event.get("kwargs", {}), "keyword arguments")
        if len(kwargs_raw) > MAX_ARGS:
            raise Refused("the launch record is malformed (keyword arguments)")
        params = [p.name for p in lower_kernels[name].params]
        kwargs, options = {}, {}
        for key, spec in kwargs_raw.items():
            value = self.value(spec)
            if key in params:
                kwargs[key] = value
            elif key in LAUNCH_OPTIONS and isinstance(value, (int, bool)):
                options[key] = value
            else:
                raise Refused(
                    f"a launch of `{name}` with the keyword `{str(key)[:40]}`, which it does not take"
                )
        if len(args) > len(params):
            raise Refused(f"a launch of `{name}` with more arguments than it takes")
        return name, grid, args, kwargs, options


@contextlib.contextmanager
def tile_map(wanted: bool) -> Any:
    """For contracts with `TILE_MAP` on the interpreter: which program stored to which output tile, seen here,
    in a process that never ran the learner's host code (grading/contracts/_tiles.py)."""
    if not wanted:
        yield None
        return
    from tritonlab.grading.contracts import _tiles

    with _tiles.recording() as tap:
        yield tap


def tap_tiles(tap: Any, out: Any) -> list | None:
    from tritonlab.grading.contracts import _tiles

    return _tiles.tiles_of(tap, out)


def device_scratch() -> None:
    """Give kernels that build tensor descriptors on the device (`tl.make_tensor_descriptor`, lesson 14) the
    global scratch memory Triton asks for at launch: the learner's own `triton.set_allocator` ran in the check
    child, never here. Plain torch allocations on the current device, like the learner's."""
    import torch
    import triton

    set_allocator = getattr(triton, "set_allocator", None)
    if set_allocator is not None:
        set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def run_replay(job: dict, run_dir: Path) -> int:
    """Child entry (mode `replay`): replay each case's record; write replay.json after every case."""
    import numpy as np
    import torch

    from tritonlab.grading import guards, huge, interp

    interp.install()
    device = "cuda" if job["backend"] == "gpu" else "cpu"
    if device == "cuda":
        device_scratch()
    out: dict[str, Any] = {"cases": {}}

    def flush() -> None:
        (run_dir / REPLAY_RESULT).write_text(json.dumps(out))

    source = (run_dir / job["source"]).read_text(encoding="utf-8", errors="surrogateescape")
    filename = job.get("file") or "learner.py"
    try:
        run_kernels, lower_kernels = build_kernels(source, filename)
        failure = ""
    except Refused as exc:
        failure, run_kernels, lower_kernels = str(exc), {}, {}
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot be rebuilt from its source alone
        failure = f"your kernels cannot be rebuilt from their source alone ({type(exc).__name__}: {exc})"
        run_kernels, lower_kernels = {}, {}
    started = time.perf_counter()
    for case in job["cases"]:  # first lower every launch, before any kernel runs on the interpreter
        key = str(case["index"])
        if failure:
            out["cases"][key] = {"refused": failure}
            continue
        try:
            Replayer(device, run_dir, materialize=False).run_events(
                _dict(case["record"], "record"), {}, lower_kernels
            )
        except Refused as exc:
            out["cases"][key] = {"refused": str(exc)}
    out["lower_seconds"] = round(time.perf_counter() - started, 3)
    for case in job["cases"]:
        key = str(case["index"])
        if key in out["cases"]:
            continue
        replayer = Replayer(device, run_dir)
        try:
            inputs: dict[str, Any] = {}
            views: list[
                Any
            ] = []  # a huge case's generated inputs, in argument order (its reference reads them)
            for spec in [*case["args"], *case["kwargs"].values()]:
                if isinstance(spec, dict) and "generated" in spec:
                    view, g = huge.generate(huge.parse(spec["generated"]), device, spec["label"])
                    inputs[spec["label"]] = g.buffer
                    views.append(view)
                elif isinstance(spec, dict) and "tensor" in spec:
                    arr = np.load(run_dir / spec["tensor"], allow_pickle=False)
                    values = guards.from_numpy_storage(arr, spec["dtype"])
                    _view, g = guards.make_input(
                        values, spec.get("layout", "contiguous"), device, spec["label"]
                    )
                    inputs[spec["label"]] = g.buffer
            record = _dict(case["record"], "record")
            replayer.build_buffers(record, inputs)
            with tile_map(job.get("tile_map") and device == "cpu") as tap:
                replayer.run_events(record, run_kernels, lower_kernels)
            outputs = [replayer.tensor(s) for s in _list(record.get("outputs"), "outputs", MAX_ARGS)]
            if device == "cuda":
                torch.cuda.synchronize()
            if case.get("huge"):  # judged here, on the device: only a summary goes back (grading/huge.py)
                spec = _dict(case["huge"], "huge case")
                out["cases"][key] = {
                    "huge": huge.summary(str(spec.get("kind")), outputs, views, spec, device)
                }
                flush()
                continue
            files = []
            for k, t in enumerate(outputs):
                name = f"r{key}_o{k}.npy"
                np.save(run_dir / name, guards.to_bits_numpy(t), allow_pickle=False)
                files.append(name)
            out["cases"][key] = {"outputs": files}
            if tap is not None and outputs:
                out["cases"][key]["tiles"] = tap_tiles(tap, outputs[0])
        except Refused as exc:
            out["cases"][key] = {"refused": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a launch that fails on its own proves nothing
            message = (str(exc).strip().splitlines() or [""])[0][:300]
            out["cases"][key] = {
                "refused": f"the recorded launches fail when run on their own ({type(exc).__name__}: {message})"
            }
        flush()
    out["seconds"] = round(time.perf_counter() - started, 3)
    flush()
    return 0
