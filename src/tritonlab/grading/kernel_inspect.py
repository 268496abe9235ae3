"""Compile a learner's kernel for a GPU target without a GPU, and read what the compiler decided.

Two child-side job modes live here (named in `runs/zygote.py:ENTRIES`):

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

The pure functions (`parse_ptxas`, `parse_layouts`, `occupancy`) are also used by the parent (numpy-free,
torch-free).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tritonlab.grading import triton_api

RESULT = "inspect.json"
STAGES_CUDA = ("ttir", "ttgir", "llir", "ptx")
STAGES_HIP = ("ttir", "ttgir", "llir", "amdgcn")

# target name -> (backend, arch, warp size)
TARGETS: dict[str, tuple[str, Any, int]] = {
    "cuda:90": ("cuda", 90, 32),
    "cuda:80": ("cuda", 80, 32),
    "hip:gfx942": ("hip", "gfx942", 64),
}

# Per-SM limits used for occupancy (public numbers from the vendors' tuning guides).
ARCH: dict[str, dict[str, int]] = {
    # H100: 64K 32-bit registers and 64 resident warps per SM, at most 32 resident blocks; 228 KB shared
    # memory per SM, 1 KB of it reserved per block; registers are allocated per warp in units of 256.
    "cuda:90": {
        "regs_per_sm": 65536,
        "max_warps": 64,
        "max_programs": 32,
        "smem_per_sm": 228 * 1024,
        "smem_reserved": 1024,
        "reg_unit": 256,
        "warp": 32,
    },
    # A100: the same register file and warp slots; 164 KB shared memory per SM.
    "cuda:80": {
        "regs_per_sm": 65536,
        "max_warps": 64,
        "max_programs": 32,
        "smem_per_sm": 164 * 1024,
        "smem_reserved": 1024,
        "reg_unit": 256,
        "warp": 32,
    },
    # MI300X CU: 4 SIMDs, each with 512 VGPRs per lane and up to 8 waves; 64 KB LDS per CU.
    "hip:gfx942": {
        "simds": 4,
        "vgprs_per_simd": 512,
        "waves_per_simd": 8,
        "max_warps": 32,
        "max_programs": 32,
        "smem_per_sm": 64 * 1024,
        "smem_reserved": 0,
        "warp": 64,
    },
}

# ---- pure parsing (parent or child) ---------------------------------------------------------------------


def parse_ptxas(log: str) -> dict[str, int]:
    """Registers, spills and shared memory from `ptxas -v` output."""
    out: dict[str, int] = {}
    m = re.search(r"Used (\d+) registers", log)
    if m:
        out["registers"] = int(m.group(1))
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if m:
        out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"(\d+) bytes smem", log)
    if m:
        out["static_smem"] = int(m.group(1))
    m = re.search(r"(\d+) bytes stack frame", log)
    if m:
        out["stack_frame"] = int(m.group(1))
    return out


def parse_amdgcn(asm: str) -> dict[str, int]:
    """VGPRs, SGPRs, spills and LDS from the AMDGCN assembly's kernel descriptor / metadata."""
    out: dict[str, int] = {}
    for key, pattern in (
        ("registers", r"\.vgpr_count:\s+(\d+)"),
        ("sgprs", r"\.sgpr_count:\s+(\d+)"),
        ("spill_stores", r"\.vgpr_spill_count:\s+(\d+)"),
        ("static_smem", r"\.group_segment_fixed_size:\s+(\d+)"),
    ):
        m = re.search(pattern, asm)
        if m:
            out[key] = int(m.group(1))
    return out


_LIST = r"\[([^\]]*)\]"


def parse_layouts(ttgir: str) -> dict[str, Any]:
    """The `#blocked` layouts and the warp count of a TTGIR module."""
    layouts = []
    for m in re.finditer(r"^(#\w+) = #ttg\.blocked<\{(.*?)\}>", ttgir, flags=re.M):
        fields = {}
        for key in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"):
            f = re.search(key + r"\s*=\s*" + _LIST, m.group(2))
            if f:
                fields[key] = [int(v) for v in f.group(1).split(",") if v.strip()]
        layouts.append({"name": m.group(1), **fields})
    warps = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', ttgir)
    return {"blocked": layouts, "num_warps": int(warps.group(1)) if warps else None}


def occupancy(target: str, registers: int | None, smem: int, num_warps: int) -> dict[str, Any]:
    """How many programs (thread blocks / workgroups) of this kernel fit on one SM (CU) at once, and why."""
    a = ARCH[target]
    limits: dict[str, int] = {
        "warp slots": a["max_warps"] // max(num_warps, 1),
        "programs per SM": a["max_programs"],
    }
    if target.startswith("cuda"):
        if registers:
            per_warp = -(-registers * a["warp"] // a["reg_unit"]) * a["reg_unit"]
            # four sub-partitions of 16K registers each: a warp lives in one of them
            warps = 4 * ((a["regs_per_sm"] // 4) // per_warp)
            limits["registers"] = warps // max(num_warps, 1)
    elif registers:
        per_lane = -(-registers // 8) * 8
        waves_per_simd = min(a["waves_per_simd"], a["vgprs_per_simd"] // per_lane)
        limits["registers"] = (a["simds"] * waves_per_simd) // max(num_warps, 1)
    if smem:
        limits["shared memory"] = a["smem_per_sm"] // (smem + a["smem_reserved"])
    programs = min(limits.values())
    limited_by = [k for k, v in limits.items() if v == programs]
    return {
        "programs_per_sm": programs,
        "warps_per_sm": programs * num_warps,
        "max_warps_per_sm": a["max_warps"],
        "occupancy": round(programs * num_warps / a["max_warps"], 3),
        "limited_by": limited_by,
        "limits": limits,
    }


# What the compiled code uses, counted in its text: (name, stage, regular expression). The Hopper paths of
# lesson 14 — the TMA copy engine, warpgroup MMA, warp specialization — next to the Ampere ones they replace.
FEATURES: tuple[tuple[str, str, str], ...] = (
    ("tma_loads", "ptx", r"\bcp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global\b"),
    ("tma_stores", "ptx", r"\bcp\.async\.bulk\.tensor\.\dd\.global\.shared::"),
    ("wgmma", "ptx", r"\bwgmma\.mma_async\."),
    ("mma_sync", "ptx", r"\bmma\.sync\."),
    ("cp_async", "ptx", r"\bcp\.async\.c[ag]\."),
    ("setmaxnreg", "ptx", r"\bsetmaxnreg\."),
    ("warp_specialize", "ttgir", r"\bttg\.warp_specialize\b"),
    ("tensormap_create", "ttgir", r"\bttng\.tensormap_create\b"),
    ("pointer_loads", "ttgir", r"\btt\.load\b|\bttg\.async_copy_global_to_local\b"),
)
FEATURE_NAMES = tuple(name for name, _stage, _pattern in FEATURES)
# FEATURES as reports name them
FEATURE_LABELS = {
    "tma_loads": "TMA loads (cp.async.bulk.tensor)",
    "tma_stores": "TMA stores (cp.async.bulk.tensor)",
    "wgmma": "warpgroup MMA (wgmma)",
    "mma_sync": "warp MMA (mma.sync)",
    "cp_async": "async copies (cp.async)",
    "setmaxnreg": "register re-allocation (setmaxnreg)",
    "warp_specialize": "warp-specialized regions",
    "tensormap_create": "descriptors built on the device",
    "pointer_loads": "loads through pointers (tt.load)",
}


def features(stages: dict[str, str]) -> dict[str, int]:
    """How often each FEATURES pattern occurs in the compiled stages (CUDA targets; 0 where a stage is absent)."""
    return {
        name: len(re.findall(pattern, stages.get(stage, "") or "", flags=re.M))
        for name, stage, pattern in FEATURES
    }


# ---- reading a result back (parent side: the child ran learner code, so its file is hostile) -------------

MAX_KERNELS = 32
MAX_TEXT = 4 << 20  # characters per stage


def _text(value: Any, most: int = 2000) -> str:
    return value[:most] if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if type(value) is int and -(2**62) < value < 2**62 else None


def _ints(value: Any) -> list[int]:
    return [v for v in value[:16] if _int(v) is not None] if isinstance(value, list) else []


def _kernel(k: Any) -> dict[str, Any]:
    k = k if isinstance(k, dict) else {}
    out: dict[str, Any] = {"kernel": _text(k.get("kernel"), 200) or "kernel"}
    if "error" in k:
        return out | {
            "error": _text(k.get("error")) or "did not compile",
            "where": _text(k.get("where"), 500),
        }
    pairs = lambda d: d.items() if isinstance(d, dict) else ()  # noqa: E731
    out["signature"] = {_text(n, 100): _text(t, 40) for n, t in list(pairs(k.get("signature")))[:64]}
    out["constexprs"] = {_text(n, 100): _text(v, 200) for n, v in list(pairs(k.get("constexprs")))[:64]}
    stages = [(n, t) for n, t in pairs(k.get("stages")) if n in (*STAGES_CUDA, "amdgcn")]
    out["stages"] = {n: _text(t, MAX_TEXT) for n, t in stages}
    res = {n: v for n, v in pairs(k.get("resources")) if _int(v) is not None and v >= 0}
    out["resources"] = {_text(n, 40): v for n, v in res.items()} | {
        "shared_memory": res.get("shared_memory", 0)
    }
    if isinstance(k.get("resources"), dict) and "ptxas_log" in k["resources"]:
        out["resources"]["ptxas_log"] = _text(k["resources"]["ptxas_log"], 20000)
    feats = k.get("features") if isinstance(k.get("features"), dict) else {}
    out["features"] = {n: feats[n] for n in FEATURE_NAMES if _int(feats.get(n)) is not None and feats[n] >= 0}
    out["num_warps"] = _int(k.get("num_warps")) or 4
    out["num_stages"] = _int(k.get("num_stages")) or 0
    layout = k.get("layout") if isinstance(k.get("layout"), dict) else {}
    blocked = layout.get("blocked") if isinstance(layout.get("blocked"), list) else []
    out["layout"] = {
        "blocked": [
            {"name": _text(b.get("name"), 40) or "#blocked"}
            | {f: _ints(b.get(f)) for f in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")}
            for b in blocked[:16]
            if isinstance(b, dict)
        ],
        "num_warps": _int(layout.get("num_warps")),
    }
    occ = k.get("occupancy")
    if isinstance(occ, dict):
        limits = {_text(n, 40): v for n, v in pairs(occ.get("limits")) if _int(v) is not None}
        share = occ.get("occupancy")
        out["occupancy"] = {
            "programs_per_sm": _int(occ.get("programs_per_sm")) or 0,
            "warps_per_sm": _int(occ.get("warps_per_sm")) or 0,
            "max_warps_per_sm": _int(occ.get("max_warps_per_sm")) or 0,
            "occupancy": float(share) if type(share) in (int, float) and 0 <= share <= 1 else 0.0,
            "limited_by": [_text(v, 40) for v in occ.get("limited_by", [])[:8]]
            if isinstance(occ.get("limited_by"), list)
            else [],
            "limits": limits,
        }
    return out


def checked(data: Any, target: str) -> dict[str, Any]:
    """An inspect result as the parent may use it: expected keys with expected types, sizes capped; anything
    else dropped. The child imported the learner's file, which could have written inspect.json itself."""
    data = data if isinstance(data, dict) else {}
    out: dict[str, Any] = {"target": target, "kernels": [], "problems": []}
    if isinstance(data.get("case"), str):
        out["case"] = _text(data["case"], 500)
    err = data.get("import_error")
    if isinstance(err, dict):
        out["import_error"] = {
            f: _text(err.get(f), 4000) for f in ("type", "message", "where", "source", "hint")
        }
    problems = data.get("problems")
    out["problems"] = (
        [_text(p) for p in problems[:20] if isinstance(p, str)] if isinstance(problems, list) else []
    )
    kernels = data.get("kernels")
    out["kernels"] = [_kernel(k) for k in kernels[:MAX_KERNELS]] if isinstance(kernels, list) else []
    if isinstance(data.get("output"), str):
        out["output"] = _text(data["output"])
    return out


# ---- compiling (child side: imports triton) -----------------------------------------------------------


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
    return triton_api.compile_kernel(jit_fn, signature, constexprs, attrs, options, _target(target))


def _case_spec(contract: Any, backend: str, run_dir: Path) -> dict:
    import numpy as np

    from tritonlab.grading import grader
    from tritonlab.grading.contracts import any_tensor_numel

    cases = contract.cases(np.random.default_rng(0), backend)
    usable = [c for c in cases if not c.expect_error] or cases
    # a representative case: the largest one that is still small (size-1 inputs specialise to constants)
    small = [c for c in usable if any_tensor_numel(c) <= 1 << 20] or usable
    case = max(small, key=any_tensor_numel)
    names = getattr(contract, "ARG_NAMES", None) or [str(j) for j in range(len(case.args))]
    args = [
        grader.encode_arg(a, 0, names[j] if j < len(names) else str(j), run_dir)
        for j, a in enumerate(case.args)
    ]
    kwargs = {k: grader.encode_arg(v, 0, k, run_dir) for k, v in case.kwargs.items()}
    return {"name": case.name, "args": args, "kwargs": kwargs, "extra": case.extra, "expect_error": None}


def compiler_mode() -> None:
    """Make `@triton.jit` produce compilable JITFunctions in this (forked, disposable) child.

    The interpreter's zygote imported triton with TRITON_INTERPRET=1, so triton.language's own @jit helpers
    (tl.sum, tl.cdiv, ...) are interpreted functions that the code generator cannot call. Drop every triton
    Python module (the compiled extension stays loaded) and import triton again with the interpreter off."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
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
