"""autotune (lesson 10): `matmul_autotuned(a, b)` — a matmul whose kernel uses `@triton.autotune` with ≥ 4
configs keyed on the shape, and is right on every config.

In the child, the learner's function runs once per case with the Autotuner observed from outside: its configs
and key are recorded, its cache cleared (so every case tunes), and each config's output is snapshotted (into a
fresh poisoned buffer) right after that config ran. On the interpreter, where Triton has no benchmarker, each
config is timed by one call. The parent then judges the final output and every config's output against the
float64 reference.

The learner's `prune_configs_by` (`early_config_prune`, `perf_model` with `top_k`) is honoured on both
backends: a pruned config is one Triton never compiles or runs for that shape, so it is not judged (issue 40: an
autotuned matmul whose prune drops configs too large for the device crashed on the H200 while the grader ran
every config). How many configs the prune kept is recorded per case; a prune that leaves a single config for a
shape of at least MIN_TUNED_DIM in every dimension fails, since then nothing is tuned.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, cached
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts.compare import compare_values, exception_failure, judge
from tritonlab.models import Failure

FUNCTION = "matmul_autotuned"
CHECKS_EVERY_CONFIG = True  # run_case snapshots every config itself (launches.check_configs is off)
# The launch record keeps the chosen config's launch (and its reset_to_zero fills) only: the benchmark runs are
# not recorded (launches._wrap_autotune, and `bench` below deactivates the recorder). The replay must reproduce the
# returned tensor; the per-config snapshots this contract takes are its own copies, not the learner's outputs.
REPLAY = True
REPLAY_OUTPUTS = (0,)
ARG_NAMES = ["a", "b"]
MIN_CONFIGS = 4
MIN_TUNED_DIM = 32  # from this size in M, N and K on, a prune must keep at least two configs


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    plan: list[mm.Shape] = [
        (5, 3, 7, "contiguous", "contiguous", "float32", "small: "),
        (70, 45, 100, "contiguous", "contiguous", "float32", "ragged: "),
        (33, 65, 47, "transposed", "transposed", "float16", "both transposed: "),
        (
            int(rng.integers(10, 60)),
            int(rng.integers(10, 60)),
            int(rng.integers(10, 80)),
            "contiguous",
            "strided",
            "float32",
            "random, b strided: ",
        ),
        (45, 37, 70, "contiguous", "contiguous", "bfloat16", ""),
    ]
    if backend == "gpu":
        plan += [
            (1000, 1000, 1000, "contiguous", "contiguous", "float16", "large: "),
            (513, 2049, 257, "contiguous", "transposed", "float32", "large: "),
        ]
    out = []
    for shape in plan:
        a, b = mm.operands(rng, shape)
        out.append(Case(mm.name_of(shape), (a, b), extra=mm.extra_for(shape[5]) | {"backend": backend}))
    return out


def describe(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in getattr(config, "kwargs", {}).items()]
    for attr in ("num_warps", "num_stages"):
        if getattr(config, attr, None) is not None:
            parts.append(f"{attr}={getattr(config, attr)}")
    return ", ".join(parts) or "default"


def _time_once(kernel_call: Any, quantiles: Any = None) -> Any:
    started = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - started) * 1e3
    return [ms, ms, ms] if quantiles else ms


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    import torch
    from triton.runtime.autotuner import Autotuner

    from tritonlab.grading import guards
    from tritonlab.grading.patterns import POISON

    args = [tools.build_arg(a) for a in case_spec["args"]]
    rec = guards._ACTIVE
    tuners: list[dict] = []
    snaps: list[tuple[str, list[tuple[int, torch.Tensor]]]] = []
    orig_run, orig_bench, orig_prune = Autotuner.run, Autotuner._bench, Autotuner.prune_configs

    def run(self: Any, *a: Any, **kw: Any) -> Any:
        bound = dict(zip(self.arg_names, a, strict=False)) | kw
        tuners.append(
            {
                "kernel": getattr(self.base_fn, "__name__", "kernel"),
                "configs": [describe(c) for c in self.configs],
                "keys": list(self.keys),
                "key_types": {k: type(bound.get(k)).__name__ for k in self.keys},
            }
        )
        saved = self.cache_results
        self.cache_results = False
        self.cache.clear()
        if tools.device == "cpu":
            self.__dict__["do_bench"] = _time_once  # the interpreter has no benchmarker
        try:
            return orig_run(self, *a, **kw)
        finally:
            self.cache_results = saved

    def prune(self: Any, *a: Any, **kw: Any) -> Any:
        kept = orig_prune(self, *a, **kw)
        if tuners:
            tuners[-1]["kept"] = [describe(c) for c in kept]
        return kept

    def bench(self: Any, *a: Any, config: Any, **meta: Any) -> Any:
        outs = [
            t for t in a if isinstance(t, torch.Tensor) and rec is not None and rec.owner_of(t) is not None
        ]
        with guards.paused():
            for t in outs:
                guards.fill_pattern(t, POISON)  # each config must write every element itself
        guards.activate(None)  # benchmark launches are not the learner's launches
        try:
            timing = orig_bench(self, *a, config=config, **meta)
        finally:
            guards.activate(rec)
        if tools.device != "cpu":
            torch.cuda.synchronize()
        snaps.append(
            (
                describe(config),
                [(t.data_ptr(), guards.guarded_copy(t, f"output of {describe(config)}")) for t in outs],
            )
        )
        return timing

    Autotuner.run, Autotuner._bench, Autotuner.prune_configs = run, bench, prune  # type: ignore[method-assign]
    try:
        value = fn(*args)
    finally:
        Autotuner.run, Autotuner._bench, Autotuner.prune_configs = orig_run, orig_bench, orig_prune  # type: ignore[method-assign]
    tensors: list[Any] = [value]
    configs = []
    if isinstance(value, torch.Tensor):
        for name, outs in snaps:
            # the snapshot of the tensor the function returned (an output buffer the kernel wrote)
            match = [snap for ptr, snap in outs if ptr == value.data_ptr()] or [
                snap for _ptr, snap in outs if snap.shape == value.shape
            ]
            if match:
                configs.append(name)
                tensors.append(match[0])
    return {"json": {"tuners": tuners, "configs": configs}, "tensors": tensors, "replay": [value]}


def check(case: Case, result: dict) -> list[Failure]:
    a, b = case.args
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    data = result.get("data") or {}
    tuners = data.get("tuners", [])
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")  # the bound depends on it: part of the key
    bound = cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))
    rtol = 2 * UNIT_ROUNDOFF[a.dtype]
    failures = judge(case, result, expected, a.dtype, rtol, bound, nan_is_oob_read=True)
    fn = result.get("function", FUNCTION)
    if not tuners:
        names = ", ".join(sorted({launch["kernel"] for launch in result.get("launches", [])}))
        if names:
            failures.append(
                Failure(
                    case.name,
                    "no-kernel-launch",
                    i18n.t("grader.autotune_fn_launched_names_plain", fn=fn, names=names),
                    i18n.t("grader.autotune_decorate_kernel_with_triton"),
                )
            )
        return failures
    tuner = tuners[-1]
    distinct = sorted(set(tuner["configs"]))
    if len(distinct) < MIN_CONFIGS:
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.autotune_kernel_autotuned_over_n",
                    kernel=tuner["kernel"],
                    n_distinct=len(distinct),
                    MIN_CONFIGS=MIN_CONFIGS,
                ),
                i18n.t("grader.autotune_list_at_least_four"),
            )
        )
    kept = tuner.get("kept")
    m, k_dim = a.values.shape
    n = b.values.shape[1]
    if (
        isinstance(kept, list)
        and len(set(map(str, kept))) < 2 <= len(distinct)
        and min(m, n, k_dim) >= MIN_TUNED_DIM
    ):
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.autotune_prune_kernel_prune_configs",
                    kernel=tuner["kernel"],
                    n_distinct=len(distinct),
                    m=m,
                    n=n,
                    k_dim=k_dim,
                ),
                i18n.t("grader.autotune_prune_only_configs_that"),
            )
        )
    shape_keys = [k for k, t in tuner["key_types"].items() if t == "int"]
    if not shape_keys:
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.autotune_autotuning_key_kernel_keys", kernel=tuner["kernel"], keys=tuner["keys"]
                ),
                i18n.t("grader.autotune_key_autotuner_shape_key"),
            )
        )
    for k, name in enumerate(data.get("configs", []), start=1):
        failures += compare_values(
            case,
            result,
            expected,
            a.dtype,
            rtol,
            bound,
            output_index=k,
            nan_is_oob_read=True,
            label=f"with config {name}",
            cause_hint=i18n.t("grader.autotune_this_config_s_block"),
        )
    return failures
