"""The trusted precompile's entry (mode `precompile`, named in `runs/zygote.py:ENTRIES`; a trusted mode, given
the replay's compile cache: runs/caches.py). Started beside the check child, it compiles the variants of the
learner's previous check of this exercise (variants.py) into the replay's cache, so that the replay child,
started after the check child, finds its kernels compiled.

It never imports the learner's file: the kernels are rebuilt from the graded text alone by the replay's own
`build_kernels` (same text, same file name: the same JITFunction, hence Triton's same cache key), and each
variant is compiled through the kernel's `warmup`, Triton's own launch path without the launch. The distinct
variants compile at once, in threads, under `triton.runtime._async_compile.AsyncCompileMode` where this Triton
has it (3.6 and 3.9 do; else one after the other).

On a GPU the target is the device's. `job["target"] = "cuda:90"` (tests, a machine without a GPU) installs a
driver that only answers "which device, stream and target" (`CompileOnlyDriver`): nothing is launched in this
mode either way. Writes `precompile.json`: {"compiled": n, "errors": [...], "seconds": s, "parallel": bool}.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tritonlab.grading.replay import variants as _variants

RESULT = "precompile.json"
WORKERS = 8


class CompileOnlyDriver:
    """The three questions `JITFunction.run` asks the driver before it compiles, answered for a fixed target
    (no GPU here; `warmup` never reaches the launch, which would need the rest of a driver)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target


def use_target(name: str | None) -> None:
    """`cuda:90`: compile for that target through a CompileOnlyDriver; None: the device's own driver."""
    if not name:
        return
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    backend, arch = name.split(":")
    driver.set_active(CompileOnlyDriver(GPUTarget(backend, int(arch), 32)))


def compile_variants(
    kernels: dict, variants: list[dict], device: str, workers: int
) -> tuple[int, list, bool]:
    """Warm up each variant's kernel (in parallel where Triton can); (compiled, errors, parallel)."""
    errors: list[str] = []
    calls = []
    for v in variants:
        if v["kernel"] not in kernels:
            errors.append(f"{v['kernel']}: no such kernel in the text")
            continue
        args, kwargs = _variants.arguments(v, device)
        calls.append((v["kernel"], kernels[v["kernel"]], args, kwargs))
    try:
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:  # an older Triton: one after the other
        AsyncCompileMode = None  # noqa: N806
    done = 0
    if AsyncCompileMode is not None and workers > 1 and len(calls) > 1:
        from concurrent.futures import ThreadPoolExecutor

        pending = []
        with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
            with AsyncCompileMode(pool, ignore_errors=True):
                for name, fn, args, kwargs in calls:
                    try:
                        pending.append((name, fn.warmup(*args, grid=(1,), **kwargs)))
                    except Exception as exc:  # noqa: BLE001 - the replay reports the learner's errors
                        errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
        for name, future in pending:
            try:
                kernel = future.result() if hasattr(future, "result") else future
            except Exception as exc:  # noqa: BLE001
                kernel = None
                errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            done += kernel is not None
        return done, errors, True
    for name, fn, args, kwargs in calls:
        try:
            fn.warmup(*args, grid=(1,), **kwargs)
            done += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
    return done, errors, False


def run_precompile(job: dict, run_dir: Path) -> int:
    """Child entry (mode `precompile`): rebuild the kernels from the text, compile the job's variants."""
    from tritonlab.grading.kernel_compile import compiler_mode

    compiler_mode()  # the interpreter's zygote: @triton.jit must give compilable JITFunctions here
    from tritonlab.grading.replay.source import build_kernels

    started = time.perf_counter()
    out: dict[str, Any] = {"compiled": 0, "errors": [], "parallel": False}
    try:
        wanted = _variants.validate(job.get("variants"))
        source = (run_dir / job["source"]).read_text(encoding="utf-8", errors="surrogateescape")
        use_target(job.get("target"))
        kernels, _lower = build_kernels(source, job.get("file") or "learner.py")
        device = "cuda" if not job.get("target") else "cpu"
        workers = int(job.get("workers") or WORKERS)
        out["compiled"], out["errors"], out["parallel"] = compile_variants(kernels, wanted, device, workers)
    except Exception as exc:  # noqa: BLE001 - nothing here is judged: the replay compiles what is missing
        out["errors"].append(f"{type(exc).__name__}: {str(exc)[:300]}")
    out["seconds"] = round(time.perf_counter() - started, 3)
    (run_dir / RESULT).write_text(json.dumps(out))
    return 0
