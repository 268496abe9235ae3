"""The grader end to end, with tiny learner files written inline: verdicts, diagnostics, limits, replay, JSON."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.failures import process_failure
from tritonlab.models import FAILURE_KINDS, Exercise, Verdict
from tritonlab.runs import sandbox
from tritonlab.runs.collect import RunResult

COPY_KERNEL = """
import os
import signal

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, {value}, mask=mask)


def vector_copy(x):
    {before}
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        copy_kernel[({grid},)](x, y, n, BLOCK=256)
    return y
"""


def learner(
    tmp_path: Path,
    name: str,
    *,
    value: str = "tl.load(src + offs, mask=mask)",
    grid: str = "triton.cdiv(n, 256)",
    before: str = "pass",
    source: str | None = None,
) -> Path:
    path = tmp_path / f"{name}.py"
    text = source if source is not None else COPY_KERNEL.format(value=value, grid=grid, before=before)
    path.write_text(textwrap.dedent(text))
    return path


def vector_copy() -> Exercise:
    return Exercise("vector-copy", "02-environment", Path("."), "vector_copy", {"en": "copy"}, {}, {}, ())


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def check(path: Path, zygote: sandbox.Zygote, seed: int = 11, timeout: float = 60.0) -> Verdict:
    return pipeline.check(vector_copy(), path, "interpreter", zygote, seed=seed, timeout=timeout)


def kinds(verdict: Verdict) -> set[str]:
    return {f.kind for f in verdict.failures}


def test_right_copy_passes_and_json_has_the_contract_keys(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    verdict = check(learner(tmp_path, "right"), zygote)
    assert verdict.passed, verdict.to_json()
    data = json.loads(json.dumps(verdict.to_json()))
    assert {"exercise", "passed", "backend", "seed", "cases", "failures"} <= set(data)
    assert data["exercise"] == "vector-copy" and data["backend"] == "interpreter" and data["seed"] == 11
    assert all(set(c) == {"name", "passed"} for c in data["cases"])
    assert len(data["cases"]) >= 10 and data["failures"] == []


def test_wrong_values_are_reported_with_indices(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    verdict = check(learner(tmp_path, "double", value="tl.load(src + offs, mask=mask) * 2"), zygote)
    assert not verdict.passed and "wrong-result" in kinds(verdict)
    data = verdict.to_json()
    assert set(f["kind"] for f in data["failures"]) <= set(FAILURE_KINDS)
    first = next(f for f in verdict.failures if f.kind == "wrong-result")
    assert "expected" in first.message and "got" in first.message and "[0]" in first.message


def test_unwritten_tail_names_the_grid(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    verdict = check(learner(tmp_path, "floor", grid="max(n // 256, 1)"), zygote)
    unwritten = [f for f in verdict.failures if f.kind == "unwritten-output"]
    assert unwritten and "cdiv" in unwritten[0].cause
    assert unwritten[0].where.startswith(str(tmp_path / "floor.py") + ":")


def test_syntax_error_is_reported_with_file_and_line(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path = learner(tmp_path, "syntax", source="import torch\n\n\ndef vector_copy(x)\n    return x\n")
    verdict = check(path, zygote)
    assert not verdict.passed
    (failure,) = verdict.failures
    assert failure.kind == "exception" and "SyntaxError" in failure.message
    assert failure.where == f"{path}:4"


def test_kernel_error_points_at_the_kernel_line(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path = learner(tmp_path, "arange", value="tl.load(src + tl.arange(0, 10))")
    verdict = check(path, zygote)
    failure = verdict.failures[0]
    assert failure.kind == "exception" and "power of 2" in failure.message
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "tl.arange(0, 10)" in text)
    assert failure.where == f"{path}:{line}"


def test_exception_in_learner_code_is_reported_learner_first(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    source = "def helper(x):\n    return x.no_such_attribute\n\n\ndef vector_copy(x):\n    return helper(x)\n"
    path = learner(tmp_path, "raises", source=source)
    verdict = check(path, zygote)
    failure = verdict.failures[0]
    assert failure.kind == "exception" and failure.message.startswith("AttributeError")
    assert failure.where == f"{path}:2"


def test_endless_loop_times_out(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    verdict = check(learner(tmp_path, "loop", before="while True: pass"), zygote, timeout=4)
    assert kinds(verdict) == {"timeout"}
    assert not any(c.passed for c in verdict.cases)


def test_crash_by_signal_is_a_crash(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    verdict = check(learner(tmp_path, "segv", before="os.kill(os.getpid(), signal.SIGSEGV)"), zygote)
    assert kinds(verdict) == {"crash"}
    assert "SIGSEGV" in verdict.failures[0].message and "out-of-bounds store" in verdict.failures[0].cause


def test_the_harness_exit_status_is_not_blamed_on_an_out_of_bounds_store(tmp_path: Path) -> None:
    """Exit status 70 is the run harness's own failure (runs/pool.HARNESS_EXIT): when a second tritonlab process
    took the runs folder's bind away, every correct check crashed with it and was told to mask its stores."""
    from tritonlab.runs import pool

    def died(exit_code: int) -> RunResult:
        return RunResult(tmp_path, exit_code, None, False, False, False, "", 0.1)

    harness = process_failure("c", died(pool.HARNESS_EXIT))
    assert harness.kind == "crash" and "exit status 70" in harness.message
    assert "out-of-bounds" not in harness.cause and "tritonlab doctor" in harness.cause
    assert "out-of-bounds store" in process_failure("c", died(3)).cause


PROMISED_OUTPUT_CAP = 1 << 20  # docs/reliability.md: "gigabytes of output … output cap (1 MiB)"


def test_huge_output_is_stopped(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    """The figure a user is promised (1 MiB), not the constant that implements it: a raised cap must fail."""
    verdict = check(learner(tmp_path, "chatty", before="while True: print('x' * 10000)"), zygote, timeout=30)
    assert not verdict.passed
    assert any("stopped" in f.message for f in verdict.failures)
    kept = len(verdict.output.encode())  # reached (within one 10 kB print), never passed
    assert PROMISED_OUTPUT_CAP - 20_000 <= kept <= PROMISED_OUTPUT_CAP, kept


def test_torch_fallback_and_no_launch(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    # a copy of an argument is judged by the exercise's host policy: in vector-copy the copy is the work
    verdict = check(learner(tmp_path, "clone", source="def vector_copy(x):\n    return x.clone()\n"), zygote)
    assert {"host-copy", "no-kernel-launch"} <= kinds(verdict)
    assert all(f.where.endswith("clone.py:2") for f in verdict.failures if f.kind == "host-copy")
    # arithmetic on the host is a torch fallback, blamed on the line that ran it
    verdict = check(learner(tmp_path, "add", source="def vector_copy(x):\n    return x * 1\n"), zygote)
    assert {"torch-fallback", "no-kernel-launch"} <= kinds(verdict)
    assert all(f.where.endswith("add.py:2") for f in verdict.failures if f.kind == "torch-fallback")


def test_seed_replays_the_same_cases(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    for exercise in ("vector-copy", "softmax", "matmul-bias", "autotune", "bench-protocol"):
        contract = contracts.get(exercise)
        first = contract.cases(np.random.default_rng(1234), "interpreter")
        again = contract.cases(np.random.default_rng(1234), "interpreter")
        other = contract.cases(np.random.default_rng(4321), "interpreter")
        assert [c.name for c in first] == [c.name for c in again]
        for a, b in zip(first, again, strict=True):
            for x, y in zip(a.args, b.args, strict=True):
                if isinstance(x, contracts.Tensor):
                    assert np.array_equal(x.values, y.values, equal_nan=True) and x.layout == y.layout
            assert a.extra == b.extra and a.kwargs == b.kwargs
        tensors = [x.values for c in first for x in c.args if isinstance(x, contracts.Tensor)]
        fresh = [x.values for c in other for x in c.args if isinstance(x, contracts.Tensor)]
        if tensors:
            assert any(
                t.shape != f.shape or not np.array_equal(t, f, equal_nan=True)
                for t, f in zip(tensors, fresh, strict=False)
            )
    path = learner(tmp_path, "bad", value="tl.load(src + offs, mask=mask) + 1")
    one, two = check(path, zygote, seed=77), check(path, zygote, seed=77)
    assert one.to_json()["failures"] == two.to_json()["failures"]
