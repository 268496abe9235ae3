"""The trusted precompile's entry (mode `precompile`, named in `runs/zygote.py:ENTRIES`; a trusted mode, given
the replay's compile cache: runs/caches.py). Started beside the check child, it compiles the variants of the
learner's previous check of this exercise (variants.py) into the replay's cache, so that the replay child,
started after the check child, finds its kernels compiled.

It never imports the learner's file: the kernels are rebuilt from the graded text alone by the replay's own
`build_kernels` (same text, same file name: the same JITFunction, hence Triton's same cache key), and each
variant is compiled through the kernel's `warmup`, Triton's own launch path without the launch. The distinct
variants are shared out between forked processes (`compile_variants`), one per core up to WORKERS.

On a GPU the target is the device's. `job["target"] = "cuda:90"` (tests, a machine without a GPU) installs a
driver that only answers "which device, stream and target" (`CompileOnlyDriver`): nothing is launched in this
mode either way. The kernels are built as the check child's import makes them (replay/source.py), so the
entries compiled here are also the ones the check child looks up: the parent copies them into the learner's
own cache (runs/caches.py `copy_entries`, grading/check/precompile.py), one compile for both.

A learner's first check of an exercise has no stored variants: `job["predict"]` then names the check's cases,
and the variants are those the reference solution launches on them (predict.py).

Writes `precompile.json`: {"compiled": n, "errors": [...], "entries": [the cache folders of the variants
compiled or found], "seconds": s, "processes": n, and for a prediction "predicted": n, "predict_seconds": s}.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tritonlab.grading.replay import variants as _variants

RESULT = "precompile.json"
WORKERS = 8
#: Kernels this process (and the compile forks it waited for) compiled itself: `count_compiles`.
_compiled_here = 0


def count_compiles() -> None:
    """From now on, count each kernel this process compiles: Triton ends every compile by writing the entry's
    group file into its cache (`put_group`), and a cache hit writes none. Other processes writing into the
    same cache (the replay's is shared by a class's checks) are not counted, as a count of the cache's entries
    would (what `replay_compiled` counted before: under load, other checks' compiles too)."""
    from triton import knobs
    from triton.runtime.cache import FileCacheManager

    base = knobs.cache.manager_class or FileCacheManager
    if getattr(base, "tritonlab_counts", False):
        return

    class Counting(base):  # type: ignore[misc, valid-type]
        tritonlab_counts = True

        def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
            super().__init__(key, override=override, dump=dump)
            self._plain = not (override or dump)  # Triton's override and dump folders are not the cache

        def put_group(self, filename: str, group: dict[str, str]) -> Any:
            global _compiled_here
            if self._plain:
                _compiled_here += 1
            return super().put_group(filename, group)

    knobs.cache.manager_class = Counting


def compiled_here() -> int:
    """Kernels compiled by this process since `count_compiles`, its compile forks' included."""
    return _compiled_here


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


def _entry(compiled: Any) -> str | None:
    """The cache folder's name of a compiled kernel (Triton keeps each compile in a folder named by its hash)."""
    from triton.runtime.cache import get_cache_manager

    try:
        return os.path.basename(get_cache_manager(compiled.hash).cache_dir) or None
    except Exception:  # noqa: BLE001 - a cache without folders: nothing to copy
        return None


def _compile(calls: list) -> tuple[int, list[str], list[str]]:
    """Warm up each call's variant: (variants warmed up, errors, their cache entries)."""
    done, errors, entries = 0, [], []
    for name, fn, args, kwargs in calls:
        try:
            compiled = fn.warmup(*args, grid=(1,), **kwargs)
            done += 1
        except Exception as exc:  # noqa: BLE001 - the replay reports the learner's errors, not this
            errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        entry = _entry(compiled)
        if entry and entry not in entries:
            entries.append(entry)
    return done, errors, entries


def compile_class(variant: dict, kernel: Any = None) -> str:
    """The variant with each integer argument that is not a `tl.constexpr` of `kernel` replaced by what
    Triton's specialization sees of it (1, a multiple of 16, 32 or 64 bits): variants that may compile to one
    binary share a class. A variant records integers by value (the replay's lengths 7, 127 and 1025 are three
    variants and one kernel), so without this, forks given two variants of one kernel compiled it twice, each
    in its own process (a lessons 2–8 replay compiled 14 kernels where its check child compiled 10,
    H100-80GB-HBM3 run 2026-12-07 (68f8c91)). Coarser than Triton is harmless: two kernels of one class are
    compiled one after the other in one process, each under its own key."""
    names = list(getattr(kernel, "arg_names", []) or [])
    constexprs = {p.name for p in getattr(kernel, "params", []) if getattr(p, "is_constexpr", False)}

    def seen(name: str | None, raw: list) -> list:
        if raw[0] == "float" and name not in constexprs:
            return raw[:1]  # a float argument specializes by its type alone
        if raw[0] != "int" or name in constexprs:
            return raw
        v = raw[1]
        return ["int", v == 1, v % 16 == 0, -(1 << 31) <= v < 1 << 31, v < 1 << 63]

    args = [seen(names[i] if i < len(names) else None, a) for i, a in enumerate(variant["args"])]
    kwargs = sorted((k, seen(k, v)) for k, v in variant["kwargs"].items())
    return json.dumps([variant["kernel"], args, kwargs, variant["options"]])


def share_out(calls: list, classes: list[str], workers: int) -> list[list]:
    """The calls in at most `workers` groups, every call of one class in the same group (its second call is then
    a hit in that process's own cache, never a second compile elsewhere), larger classes placed first."""
    by_class: dict[str, list] = {}
    for call, cls in zip(calls, classes, strict=True):
        by_class.setdefault(cls, []).append(call)
    groups: list[list] = [[] for _ in range(max(1, min(workers, len(by_class))))]
    for members in sorted(by_class.values(), key=len, reverse=True):
        min(groups, key=len).extend(members)
    return groups


def compile_variants(kernels: dict, variants: list[dict], workers: int) -> tuple[int, list, int, list]:
    """Warm up each variant's kernel; (compiled, errors, processes used, cache entries). With `workers` > 1 the
    variants are shared out between forked processes by `compile_class`: Triton's compile holds the GIL for most of
    its work (twelve matmul variants for cuda:90 on this project's 2-core CI machine: 4.73 s one after the other,
    4.29 s in four threads under Triton's `AsyncCompileMode`), and forks share out the cores the check child
    leaves. Each fork compiles for the target this process's driver names, through a CompileOnlyDriver: a fork
    never touches the GPU (its pointer stand-ins are host tensors: only their dtype and alignment are seen)."""
    errors: list[str] = []
    calls, classes = [], []
    for v in variants:
        if v["kernel"] not in kernels:
            errors.append(f"{v['kernel']}: no such kernel in the text")
            continue
        args, kwargs = _variants.arguments(v, "cpu")
        calls.append((v["kernel"], kernels[v["kernel"]], args, kwargs))
        classes.append(compile_class(v, kernels[v["kernel"]]))
    groups = share_out(calls, classes, workers)
    share = len(groups)
    if share == 1:
        done, more, entries = _compile(calls)
        return done, errors + more, 1, entries
    from triton.runtime.driver import driver

    target = driver.active.get_current_target()  # on a GPU: the device's, asked before any fork
    children = []
    for k in range(share):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - a forked worker; it reports through the pipe and exits
            code = 0
            try:
                os.close(read)
                driver.set_active(CompileOnlyDriver(target))
                before = _compiled_here
                result = [*_compile(groups[k]), _compiled_here - before]
                os.write(write, json.dumps(result).encode()[:60000])
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        children.append((pid, read))
    done, entries = 0, []
    for pid, read in children:
        with os.fdopen(read, "rb") as f:
            data = f.read(65536)
        os.waitpid(pid, 0)
        try:
            count, more, found, compiled = json.loads(data)
            done += int(count)
            _add_compiled(int(compiled))
            errors += [str(e) for e in more][:8]
            entries += [str(e) for e in found if str(e) not in entries]
        except (ValueError, TypeError):
            errors.append("a compile worker ended without a report")
    return done, errors, share, entries


def _add_compiled(n: int) -> None:
    global _compiled_here
    _compiled_here += max(0, n)


def worker_count() -> int:
    """One compile process for every two cores this process may use (the check child, other checks and the
    forks' own ptxas share them), at least one, at most WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(WORKERS, cores // 2))


def run_precompile(job: dict, run_dir: Path) -> int:
    """Child entry (mode `precompile`): rebuild the kernels from the text, compile the job's variants."""
    from tritonlab.grading.kernel_compile import compiler_mode

    compiler_mode()  # the interpreter's zygote: @triton.jit must give compilable JITFunctions here
    from tritonlab.grading.replay.source import build_kernels

    started = time.perf_counter()
    out: dict[str, Any] = {"compiled": 0, "errors": [], "processes": 0, "entries": []}
    noted: list[str] = []
    try:
        wanted = _variants.validate(job.get("variants"))
        if isinstance(job.get("predict"), dict):  # a first check: the reference's launches (predict.py)
            from tritonlab.grading.replay.predict import predict

            mark = time.perf_counter()
            predicted, problems = predict(job["predict"], run_dir)
            wanted = _variants.validate(_variants.unique(wanted + predicted)[: _variants.MAX_VARIANTS])
            out["predicted"] = len(predicted)
            out["predict_seconds"] = round(time.perf_counter() - mark, 3)
            noted = [f"predict: {p}" for p in problems[:4]]
        source = (run_dir / job["source"]).read_text(encoding="utf-8", errors="surrogateescape")
        use_target(job.get("target"))
        kernels, _lower = build_kernels(source, job.get("file") or "learner.py")
        workers = max(1, min(WORKERS, int(job.get("workers") or worker_count())))
        compiled = compile_variants(kernels, wanted, workers)
        out["compiled"], out["errors"], out["processes"], out["entries"] = compiled
        out["errors"] = noted + out["errors"]
    except Exception as exc:  # noqa: BLE001 - nothing here is judged: the replay compiles what is missing
        out["errors"].append(f"{type(exc).__name__}: {str(exc)[:300]}")
    out["seconds"] = round(time.perf_counter() - started, 3)
    (run_dir / RESULT).write_text(json.dumps(out))
    return 0
