"""The learner's `@triton.jit` kernels rebuilt from the file's TEXT alone: the function definitions taken out of
its syntax tree with the module-level constants they use, each checked to name nothing but triton,
triton.language, math, those constants and the other kernels, then rebuilt with `triton.jit` in a namespace
of exactly those. No other statement of the learner's file runs."""

from __future__ import annotations

import ast
import builtins
import importlib
import linecache
import math
import types
from typing import Any

from tritonlab.grading.replay import Refused
from tritonlab.i18n import t

# Builtins a kernel body may name: the ones Triton's code generator itself understands.
KERNEL_BUILTINS = {
    "range", "min", "max", "len", "int", "float", "bool", "print", "isinstance", "abs", "zip", "enumerate",
    "tuple", "list", "True", "False", "None", "AssertionError", "ValueError",
}  # fmt: skip
# Attributes of the `triton` module a kernel may use (everything under triton.language is allowed).
TRITON_ATTRS = {"language", "cdiv", "next_power_of_2", "constexpr", "jit"}
JIT_OPTIONS = {"do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"}


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
            raise Refused(t("grader.kernel_uses_triton", kernel=kernel, attr=attr))
        obj = getattr(obj, attr, None)
        if obj is None:
            return  # Triton itself reports a missing attribute
        if isinstance(obj, types.ModuleType) and not _allowed_module(obj.__name__):
            raise Refused(t("grader.kernel_reaches_module", kernel=kernel, module=obj.__name__, name=base.id))
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
            raise Refused(t("grader.kernel_nested_def", kernel=fn.name))
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Await, ast.Yield)):
            raise Refused(t("grader.kernel_statement", kernel=fn.name, statement=type(node).__name__.lower()))
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise Refused(t("grader.kernel_private", kernel=fn.name, attr=node.attr))
            _check_chain(node, names, fn.name)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            if node.id in names or node.id in kernels or node.id in KERNEL_BUILTINS:
                continue
            raise Refused(t("grader.kernel_unknown_name", kernel=fn.name, line=node.lineno, name=node.id))
    for default in [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]:
        literal = isinstance(default, ast.Constant) or (
            isinstance(default, ast.UnaryOp) and isinstance(default.operand, ast.Constant)
        )
        if not literal and not isinstance(default, ast.Name):
            raise Refused(t("grader.kernel_default", kernel=fn.name))
    annotations = [a.annotation for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    for annotation in [*annotations, fn.returns]:
        if annotation is not None and any(isinstance(n, ast.Call) for n in ast.walk(annotation)):
            raise Refused(t("grader.kernel_annotation", kernel=fn.name))


def build_kernels(source: str, filename: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(kernels to run, the same kernels as JITFunction for lowering). Each is rebuilt from its own source.

    Built as the check child's import of the file makes them (module `learner`, each function starting at its
    first decorator's line, which Triton's cache key names): the replay's, the speed line's and the check
    child's kernels of one text then have the same keys, so that what one trusted compile made can be copied
    into the learner's own cache (runs/caches.py `copy_entries`; grading/check/precompile.py)."""
    import triton
    from triton.runtime.jit import JITFunction

    try:
        defs, options, names = extract(source)
    except SyntaxError as exc:
        raise Refused(t("grader.file_does_not_parse", error=exc.msg)) from None
    for fn in defs.values():
        check_kernel(fn, names, set(defs))
    # inspect.getsource (which Triton uses) reads lines through linecache: give it the text, never the disk
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    built: list[dict[str, Any]] = []
    for wrap in ("run", "lower"):
        namespace: dict[str, Any] = {
            "__builtins__": builtins.__dict__,
            "__name__": "learner",
            **names,
        }
        bare = []
        for fn in defs.values():
            copy = ast.FunctionDef(**{f: getattr(fn, f) for f in fn._fields})
            copy.decorator_list = []
            ast.copy_location(copy, fn)
            if fn.decorator_list:  # an imported decorated def's code starts at its first decorator
                copy.lineno = min(d.lineno for d in fn.decorator_list)
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
