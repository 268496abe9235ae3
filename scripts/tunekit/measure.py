"""How `scripts/tune_reference_kernels.py` checks and times one section within its deadline.

Per case (fresh random inputs, never zeros): every implementation that applies is first run once and compared
with the float64 reference (‖out − ref‖ / ‖ref‖ over every output the case checks; NaN or Inf fails), after the
caching allocator's free blocks of the outputs' sizes were filled with NaN (so an element a kernel forgot to
write cannot pass by holding an earlier run's correct value); a wrong or failing implementation is recorded
with its error and not timed. Then `repeats` interleaved rounds time every correct implementation (peers
first, then our variants in the plan's order) with the hidden-launch protocol of `perf/bench.py` (L2 flushed,
a GPU-side spin before each call so that host launch paths stay out of the interval, CUDA events, median).
The clock is read before every check and every timing: nothing starts after the deadline, and what was
measured so far is kept.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

from tunekit.plan import Impl, Section, TCase

TOL = {"bfloat16": 1e-2, "float16": 2e-3, "float8_e4m3fn": 1e-2}
#: Implementations run only where a warm-up process finished compiling them (their compile alone can take
#: minutes, which the main process cannot interrupt): name -> why not, when it did not.
WARM_ONLY = {"torch.compile max-autotune": "its max-autotune compile did not finish within the warm-up"}


class Clock:
    """The run's deadline, read before every piece of work."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def ok(self, need: float = 0.0) -> bool:
        return self.left() > need


def rel_err(out: dict[str, Any], ref: dict[str, Any]) -> float:
    """‖out − ref‖ / ‖ref‖ over the keys ``out`` has, in float64 (inf for a missing key, NaN or Inf)."""
    import torch

    num = den = 0.0
    for key, got in out.items():
        if key not in ref or got is None:
            return math.inf
        g = got.double()
        if not torch.isfinite(g).all():
            return math.inf
        r = ref[key].double()
        if g.shape != r.shape:
            return math.inf
        num += float((g - r).pow(2).sum())
        den += float(r.pow(2).sum())
    return math.sqrt(num / max(den, 1e-300))


def poison_free_blocks(sizes: list[int], device: str) -> None:
    """Allocate NaN-filled blocks of these byte sizes and free them: the next allocations of those sizes by the
    caching allocator most likely reuse them, so unwritten output elements show up as NaN."""
    import torch

    if device != "cuda":
        return
    blocks = [torch.full((max(1, n // 4),), float("nan"), device=device) for n in sizes]
    del blocks


def _out_sizes(out: Any) -> list[int]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out.numel() * out.element_size()]
    if isinstance(out, (tuple, list)):
        return [n for o in out for n in _out_sizes(o)]
    return []


def _timer(
    gpu: bool, spin_cycles: int, warmup_ms: float, rep_ms: float
) -> Callable[[Callable[[], Any]], float]:
    from tritonlab.perf import bench

    if not gpu:
        return lambda fn: bench.time_ms(fn, warmup=1, rep=rep_ms, gpu=False)["ms"]
    return lambda fn: bench.time_hidden_launch(
        fn, warmup=warmup_ms, rep=rep_ms, sleep_cycles=spin_cycles, count_spin=True
    )["ms"]


def _error(exc: BaseException) -> str:
    tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return tail[:400]


def run_section(
    section: Section,
    result: dict[str, Any],
    clock: Clock,
    *,
    gpu: bool,
    device: str,
    repeats: int,
    warm_errors: dict[tuple[str, str], str],
    warm_ok: set[tuple[str, str]],
    log: Callable[[str], None],
    save: Callable[[], None],
    rep_ms: float = 25.0,
) -> dict[str, Any]:
    """Check and time every case of ``section`` until the deadline, filling ``result`` (JSON-ready) as it goes."""
    import torch

    result.update({"describe": section.describe, "cases": [], "skipped_cases": []})
    failed_groups: dict[tuple[str, str], str] = dict(warm_errors)  # (impl, group) -> why: not tried again
    for case in section.cases:
        if not clock.ok(5.0):
            result["skipped_cases"].append(case.label)
            continue
        entry: dict[str, Any] = {"case": case.label, "group": case.group, "flops": case.flops,
                                 "bytes": case.nbytes, "impls": {}}  # fmt: skip
        result["cases"].append(entry)
        try:
            _run_case(section, case, entry, clock, gpu, device, repeats, failed_groups, warm_ok, log, rep_ms)
        except Exception as exc:  # noqa: BLE001 - a case that breaks (e.g. out of memory) must not end the run
            entry["error"] = _error(exc)
            log(f"  case {case.label}: {entry['error']}")
        finally:
            for impl in section.impls:
                release = getattr(impl.run, "release", None)
                if callable(release):
                    release()
            if device == "cuda":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
        save()
    return result


def _run_case(
    section: Section,
    case: TCase,
    entry: dict[str, Any],
    clock: Clock,
    gpu: bool,
    device: str,
    repeats: int,
    failed_groups: dict[tuple[str, str], str],
    warm_ok: set[tuple[str, str]],
    log: Callable[[str], None],
    rep_ms: float,
) -> None:
    import torch

    args = case.make()
    ref = case.reference(args)
    dtype = str(args[0].dtype).removeprefix("torch.")
    tol = TOL.get(dtype, 1e-2)
    timed: list[Impl] = []
    sizes: list[int] = []
    for impl in section.impls:
        if not impl.applies(case.group):
            continue
        rec: dict[str, Any] = {"kind": impl.kind}
        if impl.config is not None:
            rec["config"] = impl.config
        entry["impls"][impl.name] = rec
        why = failed_groups.get((impl.name, case.group))
        if why:
            rec["error"] = why
            continue
        if not clock.ok(2.0):
            rec["error"] = "not run: time budget spent"
            continue
        if impl.name in WARM_ONLY and (impl.name, case.label) not in warm_ok:
            rec["error"] = f"not run: {WARM_ONLY[impl.name]}"
            continue
        began = time.monotonic()
        try:
            poison_free_blocks(sizes, device)
            out = impl.run(*args, *case.extra)
            if device == "cuda":
                torch.cuda.synchronize()
            sizes = sizes or _out_sizes(out)
            err = rel_err(impl.extract(out, args), impl.reference(args) if impl.reference else ref)
            describe = getattr(impl.run, "describe", None)
            if callable(describe):
                rec.update(describe(*args, *case.extra))
            del out
        except Exception as exc:  # noqa: BLE001 - one variant failing (compile error, no backend) is data
            rec["error"] = _error(exc)
            if impl.kind == "variant":
                failed_groups[(impl.name, case.group)] = rec["error"]
            log(f"  {case.label:24s} {impl.name:34s} error: {rec['error'][:120]}")
            continue
        rec["first_call_s"] = round(time.monotonic() - began, 2)
        rec["rel_err"] = err
        rec["ok"] = err <= tol
        if not rec["ok"]:
            rec["error"] = f"wrong result: rel. error {err:.3g} > {tol:g}"
            if impl.kind == "variant":
                failed_groups[(impl.name, case.group)] = rec["error"]
            log(f"  {case.label:24s} {impl.name:34s} WRONG rel_err={err:.3g}")
            continue
        timed.append(impl)
    del ref
    timer = _timer(gpu, case.spin_cycles, 5.0, rep_ms)
    for _r in range(repeats):
        for impl in timed:
            rec = entry["impls"][impl.name]
            if not clock.ok(1.0):
                rec.setdefault(
                    "note", f"timed {len(rec.get('ms_runs', []))} of {repeats} rounds: budget spent"
                )
                continue
            try:
                ms = timer(lambda impl=impl: impl.run(*args, *case.extra))
            except Exception as exc:  # noqa: BLE001
                rec["error"] = _error(exc)
                continue
            rec.setdefault("ms_runs", []).append(ms)
    for impl in timed:
        rec = entry["impls"][impl.name]
        runs = rec.get("ms_runs")
        if runs:
            rec["ms"] = statistics.median(runs)
            rec["tflops"] = case.flops / rec["ms"] / 1e9 if case.flops else None
            rec["gbps"] = case.nbytes / rec["ms"] / 1e6
    _summarize_case(entry)
    best = entry.get("fastest_peer")
    mine = entry.get("best_variant")
    log(
        f"  {case.label:24s} fastest peer {best['name'] if best else '—'} {best['ms'] if best else math.nan:.4f} ms; "
        f"best ours {mine['name'] if mine else '—'} {mine['ms'] if mine else math.nan:.4f} ms"
        f" ({mine['x_fastest_peer'] if mine else math.nan:.3f}×)"
    )


def _summarize_case(entry: dict[str, Any]) -> None:
    impls = entry["impls"]
    peers = {n: r for n, r in impls.items() if r["kind"] == "peer" and "ms" in r}
    if peers:
        name = min(peers, key=lambda n: peers[n]["ms"])
        label = f"{name} ({peers[name]['backend']})" if peers[name].get("backend") else name
        entry["fastest_peer"] = {"name": label, "ms": peers[name]["ms"], "tflops": peers[name].get("tflops")}
    variants = {n: r for n, r in impls.items() if r["kind"] == "variant" and "ms" in r}
    for r in impls.values():  # ours, variants and reference kernels alike
        if peers and r["kind"] != "peer" and "ms" in r:
            r["x_fastest_peer"] = entry["fastest_peer"]["ms"] / r["ms"]
    if variants:
        name = min(variants, key=lambda n: variants[n]["ms"])
        entry["best_variant"] = {"name": name, "ms": variants[name]["ms"], "tflops": variants[name].get("tflops"),
                                 "x_fastest_peer": variants[name].get("x_fastest_peer", math.nan)}  # fmt: skip
