"""CHILD side of `inspect` and of the trusted compile: compile a kernel for a GPU target without a GPU, and
describe what came out (kernel_inspect.py parses it). Two job modes live here (named in
`runs/zygote.py:ENTRIES`):

* `inspect` (`run_inspect`): imports the learner's file, runs the exercise's host function once on the first
  case of its contract with every kernel launch intercepted (nothing is launched: each launch is recorded
  with its arguments), then compiles each recorded kernel with `triton.compile(ASTSource(...), target=...)`
  for the chosen target and returns TTIR / TTGIR / LLIR / PTX (or AMDGCN), registers, spills, shared memory,
  the `#blocked` layouts and the occupancy that follows.
* `compile` (`run_compile`): the TRUSTED compile used for grading. It never imports the learner's file: the
  parent hands over the kernel's source text (read from the file as text), this child strips decorators,
  default values and every annotation except `tl.constexpr`, writes that single function into a module of its
  own, and compiles it with the signature and constexprs the contract fixes. Nothing the learner's code could
  do at import time runs here.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tritonlab.grading import triton_api
from tritonlab.grading.kernel_inspect import (
    RESULT,
    STAGES_CUDA,
    STAGES_HIP,
    TARGETS,
    features,
    occupancy,
    parse_amdgcn,
    parse_layouts,
    parse_ptxas,
)


def _target(name: str) -> Any:
    return triton_api.target(*TARGETS[name])


def _ptxas_log(ptx: str, arch: int) -> str:
    ptxas = triton_api.ptxas_path(arch)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        Path(src).write_text(ptx)
        proc = subprocess.run(
            [
                ptxas,
                "-v",
                f"--gpu-name=sm_{arch}{'a' if arch == 90 else ''}",
                src,
                "-o",
                os.path.join(tmp, "k.o"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    return (proc.stdout + proc.stderr).strip()


def describe_compiled(compiled: Any, target: str) -> dict[str, Any]:
    """Stages, resources, layouts and occupancy of one CompiledKernel."""
    backend = TARGETS[target][0]
    stages = STAGES_CUDA if backend == "cuda" else STAGES_HIP
    asm = compiled.asm
    out: dict[str, Any] = {"stages": {s: asm[s] for s in stages if s in asm and isinstance(asm[s], str)}}
    meta = compiled.metadata
    num_warps = int(getattr(meta, "num_warps", 4))
    smem = int(getattr(meta, "shared", 0) or 0)
    if backend == "cuda":
        log = _ptxas_log(asm["ptx"], int(TARGETS[target][1]))
        resources = parse_ptxas(log)
        resources["ptxas_log"] = log
    else:
        resources = parse_amdgcn(asm.get("amdgcn", ""))
    resources["shared_memory"] = max(smem, resources.get("static_smem", 0))
    out["resources"] = resources
    if backend == "cuda":
        out["features"] = features(out["stages"])
    out["num_warps"] = num_warps
    out["num_stages"] = int(getattr(meta, "num_stages", 0) or 0)
    out["layout"] = parse_layouts(asm.get("ttgir", ""))
    out["occupancy"] = occupancy(target, resources.get("registers"), resources["shared_memory"], num_warps)
    return out


def compile_for(
    jit_fn: Any, signature: dict, constexprs: dict, attrs: dict, options: dict, target: str
) -> Any:
    """The compiled kernel with every stage's text. A cache entry written by a run that stored the binary
    only (runs/zygote.py `BINARY_ONLY_MODES`: the replay's, in the cache the trusted compile shares) has none
    of them: compiled again then, past the cache, and the entry rewritten whole."""
    compiled = triton_api.compile_kernel(jit_fn, signature, constexprs, attrs, options, _target(target))
    needed = "ptx" if TARGETS[target][0] == "cuda" else "amdgcn"
    if needed in compiled.asm:
        return compiled
    os.environ.pop("TRITON_STORE_BINARY_ONLY", None)
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    try:
        return triton_api.compile_kernel(jit_fn, signature, constexprs, attrs, options, _target(target))
    finally:
        os.environ.pop("TRITON_ALWAYS_COMPILE", None)


def _case_spec(contract: Any, backend: str, run_dir: Path) -> dict:
    import numpy as np

    from tritonlab.grading.check.job import encode_arg
    from tritonlab.grading.contracts import any_tensor_numel

    cases = contract.cases(np.random.default_rng(0), backend)
    usable = [c for c in cases if not c.expect_error] or cases
    # a representative case: the largest one that is still small (size-1 inputs specialise to constants)
    small = [c for c in usable if any_tensor_numel(c) <= 1 << 20] or usable
    case = max(small, key=any_tensor_numel)
    names = getattr(contract, "ARG_NAMES", None) or [str(j) for j in range(len(case.args))]
    args = [
        encode_arg(a, 0, names[j] if j < len(names) else str(j), run_dir) for j, a in enumerate(case.args)
    ]
    kwargs = {k: encode_arg(v, 0, k, run_dir) for k, v in case.kwargs.items()}
    return {"name": case.name, "args": args, "kwargs": kwargs, "extra": case.extra, "expect_error": None}


def compiler_mode() -> None:
    """Make `@triton.jit` produce compilable JITFunctions in this (forked, disposable) child.

    The interpreter's zygote imported triton with TRITON_INTERPRET=1, so triton.language's own @jit helpers
    (tl.sum, tl.cdiv, ...) are interpreted functions that the code generator cannot call. Drop every triton
    Python module (the compiled extension stays loaded) and import triton again with the interpreter off.

    It sets no other variable: Triton puts every cache-invalidating variable set in the environment into
    each compile's cache key (TRITON_DEFAULT_FP_FUSION=1 too, though it is the default), so the precompile
    child (replay/precompile.py) must compile with the same such variables as its zygote's other children,
    whose launches look its entries up."""
    if os.environ.get("TRITON_INTERPRET", "0") in ("0", "") and "triton" in sys.modules:
        return
    os.environ["TRITON_INTERPRET"] = "0"
    for name in list(sys.modules):
        if (name == "triton" or name.startswith("triton.")) and not name.startswith("triton._C"):
            del sys.modules[name]
    import triton  # noqa: F401
    import triton.language  # noqa: F401


def run_inspect(job: dict, run_dir: Path) -> int:
    """Child: record the learner's launches on one case of the exercise (`_case_spec`: the largest that is
    still small; its name goes in the result), compile each for the target."""
    compiler_mode()  # @triton.jit must give compilable JITFunctions, not interpreted ones
    from tritonlab.grading import contracts, harness

    out: dict[str, Any] = {"target": job["target"], "kernels": [], "problems": []}
    result = run_dir / RESULT

    def flush() -> None:
        result.write_text(json.dumps(out, default=str))

    learner_file = os.path.realpath(job["file"])
    backend = TARGETS[job["target"]][0]
    if backend == "hip":
        try:
            import triton.backends.amd.compiler  # noqa: F401
        except Exception as exc:  # noqa: BLE001
            out["problems"].append(f"this Triton build cannot compile for AMD GPUs: {exc}")
            flush()
            return 0
    launches: list = []
    try:
        module = harness.load_learner(learner_file)
        fn = getattr(module, job["function"])
    except BaseException as exc:  # noqa: BLE001 - the learner's error is data
        out["import_error"] = harness.describe_exception(exc, learner_file)
        flush()
        return 0
    triton_api.intercept_launches(launches)
    contract = contracts.get(job["exercise"])
    spec = _case_spec(contract, "interpreter", run_dir)
    out["case"] = spec["name"]
    tools = harness.Tools("cpu", run_dir, 0)
    try:
        if hasattr(contract, "run_case"):
            contract.run_case(fn, spec, tools)
        else:
            fn(
                *[tools.build_arg(a) for a in spec["args"]],
                **{k: tools.build_arg(v) for k, v in spec["kwargs"].items()},
            )
    except BaseException as exc:  # noqa: BLE001 - outputs were never computed: later host code may trip on that
        if not launches:
            info = harness.describe_exception(exc, learner_file)
            out["problems"].append(
                f"your function raised before launching a kernel: {info['type']}: {info['message']}"
            )
    if not launches:
        out["problems"].append(f"no kernel launch was seen on case {spec['name']}")
    seen = set()
    for jit_fn, args, kwargs in launches:
        name = getattr(jit_fn.fn, "__name__", "kernel")
        try:
            signature, constexprs, attrs, options = triton_api.bind_launch(jit_fn, args, kwargs)
            key = (
                name,
                json.dumps(
                    [signature, {str(k): repr(v) for k, v in constexprs.items()}, options], sort_keys=True
                ),
            )
            if key in seen:
                continue
            seen.add(key)
            compiled = compile_for(jit_fn, signature, constexprs, attrs, options, job["target"])
            entry = {
                "kernel": name,
                "signature": signature,
                "constexprs": _named_constexprs(jit_fn, constexprs),
                **describe_compiled(compiled, job["target"]),
            }
        except BaseException as exc:  # noqa: BLE001 - a compile error is the learner's to see
            info = harness.describe_exception(exc, learner_file)
            entry = {
                "kernel": name,
                "error": f"{info['type']}: {info['message']}",
                "where": info.get("where", ""),
            }
        out["kernels"].append(entry)
        flush()
    flush()
    return 0


def _named_constexprs(jit_fn: Any, constexprs: dict) -> dict[str, str]:
    names = triton_api.parameter_names(jit_fn)
    out = {}
    for key, value in constexprs.items():
        path = key if isinstance(key, tuple) else (key,)
        label = names[path[0]] if isinstance(path[0], int) and path[0] < len(names) else str(path[0])
        out[label + "".join(f"[{i}]" for i in path[1:])] = repr(value)
    return out


# ---- the trusted compile (no learner import) -----------------------------------------------------------


def clean_kernel_source(source: str, name: str) -> str:
    """One top-level function named `name`, with no decorators, no defaults and no annotation other than
    `tl.constexpr`: nothing in it runs when it is defined. Raises ValueError when it is not there."""
    tree = ast.parse(source)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not found:
        raise ValueError(f"no top-level `def {name}` in the file")
    fn = found[-1]
    fn.decorator_list = []
    fn.returns = None
    every = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    for arg in every:
        ann = arg.annotation
        keep = isinstance(ann, ast.Attribute) and ann.attr == "constexpr" and isinstance(ann.value, ast.Name)
        arg.annotation = ast.Attribute(ast.Name("tl", ast.Load()), "constexpr", ast.Load()) if keep else None
    fn.args.defaults = []
    fn.args.kw_defaults = [None] * len(fn.args.kwonlyargs)
    fn.args.vararg = fn.args.kwarg = None
    module = ast.Module(body=[fn], type_ignores=[])
    return (
        "import triton\nimport triton.language as tl\n\n\n"
        + ast.unparse(ast.fix_missing_locations(module))
        + "\n"
    )


def run_compile(job: dict, run_dir: Path) -> int:
    """Child (trusted): compile kernel sources handed over as text, with a signature the contract fixes."""
    compiler_mode()
    import importlib.util

    import triton

    out: dict[str, Any] = {"results": []}
    for k, item in enumerate(job["items"]):
        try:
            text = clean_kernel_source(item["source"], item["kernel"])
            path = run_dir / f"trusted_kernel_{k}.py"
            path.write_text(text)
            spec = importlib.util.spec_from_file_location(f"trusted_kernel_{k}", path)
            mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[spec.name] = mod  # type: ignore[union-attr]
            spec.loader.exec_module(mod)  # type: ignore[union-attr]
            jit_fn = triton.jit(getattr(mod, item["kernel"]))
            names = triton_api.parameter_names(jit_fn)
            constexprs = {(names.index(n),): v for n, v in item["constexprs"].items()}
            attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in item.get("aligned", [])}
            compiled = compile_for(
                jit_fn, item["signature"], constexprs, attrs, item["options"], item["target"]
            )
            described = describe_compiled(compiled, item["target"])
            described.pop("stages", None)
            out["results"].append({"label": item.get("label", ""), **described})
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
            msg = str(exc).strip().splitlines()
            import traceback

            out["results"].append(
                {
                    "label": item.get("label", ""),
                    "error": f"{type(exc).__name__}: {msg[0] if msg else ''}",
                    "traceback": traceback.format_exc()[-3000:],
                }
            )
        (run_dir / RESULT).write_text(json.dumps(out, default=str))
    (run_dir / RESULT).write_text(json.dumps(out, default=str))
    return 0
