"""The benchmarking protocol of lesson 6, shared by ``tritonlab bench`` and ``scripts/bench_gpu.py``.

Protocol: fresh non-zero random inputs; ``triton.testing.do_bench`` (CUDA events around each call, an L2
flush before each, warm-up and repetitions given in milliseconds) asked for the median and the 20th/80th
percentiles (its default would be the mean) — for kernels of a few microseconds (the decode GEMM), the same
protocol with the host's launch latency kept out of the timed interval (:func:`time_hidden_launch`); bytes and FLOPs *counted* from each kernel's cost model, so
GB/s and TFLOP/s mean the same thing for every implementation; ratios against torch eager, ``torch.compile``
and, for GEMMs, cuBLAS via ``torch.matmul``, measured side by side in the same process; and percentages of
this GPU's *measured* ceilings (:mod:`tritonlab.perf.peaks`).

On the Triton interpreter, or without a CUDA GPU, :func:`require_gpu` refuses: interpreter timings measure
NumPy on the CPU and say nothing about GPU speed. ``force=True`` lets such a run proceed, timed with the wall
clock and labelled as meaningless.

Importing this module imports neither torch nor triton. The plots of stored results are in plots.py.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

REFUSAL = (
    "tritonlab bench needs an NVIDIA GPU (CUDA) and real compilation: {why}. Interpreter timings measure "
    "NumPy on the CPU and say nothing about GPU speed. Run on a GPU machine, or pass --force-interpreter to "
    "exercise the benchmark code path anyway (its numbers are meaningless)."
)
QUANTILES = (0.5, 0.2, 0.8)


class NoGPUError(RuntimeError):
    """Raised when a benchmark is asked for where no GPU timing is possible."""


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def gpu_status() -> tuple[bool, str]:
    """(True, gpu name) when real GPU timing is possible, else (False, why not)."""
    if interpreting():
        return False, "TRITON_INTERPRET is set, so kernels run on the CPU interpreter"
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU is visible to torch"
    return True, torch.cuda.get_device_name()


def require_gpu(force: bool = False) -> bool:
    """Return True when GPU timing is possible; False when ``force`` lets a non-GPU run through; else raise."""
    ok, why = gpu_status()
    if ok:
        return True
    if force:
        return False
    raise NoGPUError(REFUSAL.format(why=why))


# ---------------------------------------------------------------- units


def gbps(nbytes: float, ms: float) -> float:
    """Gigabytes (1e9) per second for ``nbytes`` moved in ``ms`` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def tflops(nflops: float, ms: float) -> float:
    """Tera-FLOP (1e12) per second for ``nflops`` done in ``ms`` milliseconds."""
    return nflops / (ms * 1e-3) / 1e12


def intensity(nflops: float, nbytes: float) -> float:
    """Arithmetic intensity in FLOP/byte."""
    return nflops / nbytes if nbytes else math.inf


def geomean(values: Iterable[float]) -> float:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan


def roofline(peak_tflops: float, peak_gbps: float, ai: float) -> float:
    """Attainable TFLOP/s at intensity ``ai``: min(compute peak, bandwidth × intensity)."""
    return min(peak_tflops, peak_gbps * ai / 1e3)


# ---------------------------------------------------------------- timing


def time_ms(
    fn: Callable[[], Any],
    *,
    warmup: float = 25,
    rep: float = 100,
    gpu: bool = True,
    hide_launch: bool = False,
    sleep_cycles: int | None = None,
) -> dict[str, float]:
    """Median and 20th/80th percentile of ``fn``'s run time in ms (do_bench on GPU; wall clock otherwise).

    ``hide_launch=True`` (for kernels of a few microseconds, or peers with a long host path) times with
    :func:`time_hidden_launch` instead (``sleep_cycles``: a longer spin, whose time the ``rep`` budget counts).
    """
    if gpu and hide_launch:
        import torch

        if hasattr(torch.cuda, "_sleep"):
            if sleep_cycles is None:
                return time_hidden_launch(fn, warmup=warmup, rep=rep)
            return time_hidden_launch(fn, warmup=warmup, rep=rep, sleep_cycles=sleep_cycles, count_spin=True)
    if gpu:
        from triton.testing import do_bench

        med, p20, p80 = do_bench(fn, warmup=warmup, rep=rep, quantiles=list(QUANTILES))
        return {"ms": float(med), "p20": float(p20), "p80": float(p80)}
    fn()
    samples = []
    deadline = time.perf_counter() + rep / 1e3
    while len(samples) < 3 or (time.perf_counter() < deadline and len(samples) < 50):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    qs = statistics.quantiles(samples, n=10) if len(samples) >= 2 else samples * 9
    return {"ms": statistics.median(samples), "p20": qs[1], "p80": qs[7]}


#: GPU clock cycles the device spins before each timed call in :func:`time_hidden_launch` (~100 µs at 2 GHz).
SLEEP_CYCLES = 200_000


def time_hidden_launch(
    fn: Callable[[], Any],
    *,
    warmup: float = 25,
    rep: float = 100,
    sleep_cycles: int = SLEEP_CYCLES,
    count_spin: bool = False,
) -> dict[str, float]:
    """do_bench's protocol (L2 flush, CUDA events around each call, median and quantiles) plus a GPU-side spin
    of about 100 µs queued before each call's start event.

    do_bench times from an event recorded after the L2 flush to one after the call. When the host needs
    longer to launch the call (Python wrapper plus Triton's launcher, tens of µs) than the GPU needs for the
    flush (~60 µs for 256 MB), the GPU sits idle inside the timed interval and a 10 µs kernel reads as 40 µs.
    The spin keeps the GPU busy until the launch is queued, so the interval holds the kernel alone. Host launch
    overhead is real and is reported separately (lesson 2's launch-bound example); this measures kernels.

    ``sleep_cycles`` lengthens the spin for callables whose host path is longer (an autograd backward call);
    ``count_spin`` makes the ``rep`` budget pay for the spins too, so that a short kernel behind a long spin
    does not take thousands of repetitions (``scripts/tune_reference_kernels.py`` uses both).
    """
    import torch

    cache = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        cache.zero_()
        fn()
    t1.record()
    torch.cuda.synchronize()
    est = max(t0.elapsed_time(t1) / 5, 1e-3)
    spin = 0.0
    if count_spin:
        t0.record()
        torch.cuda._sleep(sleep_cycles)
        t1.record()
        torch.cuda.synchronize()
        spin = t0.elapsed_time(t1)
    n_warmup, n_rep = max(1, int(warmup / est)), max(5, min(int(rep / (est + spin)), 5000))
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        cache.zero_()
        torch.cuda._sleep(sleep_cycles)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = torch.tensor([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)], dtype=torch.float64)
    q = torch.quantile(times, torch.tensor(QUANTILES, dtype=torch.float64)).tolist()
    return {"ms": q[0], "p20": q[1], "p80": q[2], "timer": "hidden-launch"}


def measure_case(
    case: Any,
    peaks: dict[str, Any] | None,
    *,
    gpu: bool = True,
    peers: bool = True,
    warmup: float = 25,
    rep: float = 100,
) -> dict[str, Any]:
    """Time our kernel and its peers on the same fresh inputs; return one result row (JSON-ready)."""
    args = case.make()
    impls: dict[str, Callable[..., Any]] = {"triton": case.ours}
    if peers:
        impls.update(case.peers)
    row: dict[str, Any] = {
        "kernel": case.kernel,
        "dtype": case.dtype,
        "shape": list(case.shape),
        "bytes": case.nbytes,
        "flops": case.nflops,
        "bound": case.bound,
        "impls": {},
    }
    row.update(case.extra)
    for name, fn in impls.items():
        if not gpu and name == "torch.compile":
            continue  # needs a GPU or a C++ toolchain; meaningless next to the interpreter anyway
        try:
            t = time_ms(
                lambda fn=fn: fn(*args),
                warmup=warmup,
                rep=rep,
                gpu=gpu,
                hide_launch=bool(case.extra.get("hide_launch")),
                sleep_cycles=case.extra.get("spin_cycles"),
            )
        except Exception as exc:  # a peer failing must not hide the others (it is reported as unavailable)
            row["impls"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        finally:
            release = getattr(
                fn, "release", None
            )  # a peer holding per-input state (a saved graph) lets it go
            if callable(release):
                release()
        describe = getattr(fn, "describe", None)  # e.g. which backend the default SDPA call picked
        if callable(describe):
            try:
                t.update(describe(*args))
            except Exception as exc:  # noqa: BLE001 - a description that fails is said so, not fatal
                t["describe_error"] = f"{type(exc).__name__}: {exc}"[:200]
        t["gbps"] = gbps(case.nbytes, t["ms"])
        t["tflops"] = tflops(case.nflops, t["ms"]) if case.nflops else 0.0
        if peaks:
            t["pct_copy"] = 100 * t["gbps"] / peaks["copy_gbps"]
            if case.nflops:
                t["pct_matmul"] = 100 * t["tflops"] / peaks["matmul_bf16_tflops"]
        row["impls"][name] = t
    ours = row["impls"].get("triton", {}).get("ms")
    row["speedup"] = {
        name: v["ms"] / ours for name, v in row["impls"].items() if name != "triton" and ours and "ms" in v
    }
    return row


# ---------------------------------------------------------------- environment


def environment() -> dict[str, Any]:
    """Date, GPU, driver, CUDA, Triton, torch and Python versions of this run."""
    env: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        import torch
        import triton

        env.update(torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda)
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env.update(
                gpu=p.name,
                sms=p.multi_processor_count,
                memory_gib=round(p.total_memory / 2**30, 1),
                capability=f"{p.major}.{p.minor}",
            )
    except ImportError:  # pragma: no cover
        pass
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if smi.returncode == 0 and smi.stdout.strip():
            driver, max_sm, power = (s.strip() for s in smi.stdout.splitlines()[0].split(","))
            env.update(driver=driver, max_sm_clock=max_sm, power_limit=power)
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return env


def gpu_slug(name: str) -> str:
    """'NVIDIA H200' → 'h200' (file-name prefix for a GPU's records)."""
    words = [w for w in name.lower().replace("-", " ").split() if w not in ("nvidia", "geforce", "tesla")]
    return "-".join(words) or "gpu"


# ---------------------------------------------------------------- text tables


def shape_label(row: dict[str, Any]) -> str:
    """A row's shape as the tables and target ids write it, "4x32x4096x128", with " causal" for a causal one
    (the same shape timed twice, causal and not, is two cases)."""
    return "x".join(map(str, row["shape"])) + (" causal" if row.get("causal") else "")


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of measured rows: time, rate, % of peak and speed-up over each peer."""
    lines = [
        f"{'case':38s} {'impl':16s} {'ms':>9s} {'GB/s':>8s} {'TFLOP/s':>8s} {'%copy':>6s} {'%mm':>6s} "
        f"{'ours x':>7s}"
    ]
    for row in rows:
        label = f"{row['kernel']} {row['dtype']} {shape_label(row)}"
        for name, t in row["impls"].items():
            if "error" in t:
                lines.append(f"{label:38s} {name:16s} error: {t['error'][:60]}")
                continue
            sp = row["speedup"].get(name)
            lines.append(
                f"{label:38s} {name:16s} {t['ms']:9.4f} {t['gbps']:8.0f} {t.get('tflops', 0):8.1f} "
                f"{t.get('pct_copy', math.nan):6.1f} {t.get('pct_matmul', math.nan):6.1f} "
                f"{'' if sp is None else f'{sp:6.2f}x':>7s}"
            )
            label = ""
    return "\n".join(lines)
