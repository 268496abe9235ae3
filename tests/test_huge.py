"""Huge-size cases (grading/huge.py): inputs generated on the device, judged in the replay child, a summary back.

The real cases hold more than 2³¹ elements and run on a GPU only (`check --huge`; the `gpu`-marked test below).
Here the same path runs end to end on the interpreter with a small generated case put in their place, through
the real grader, sandbox and replay child; and `check --huge` without a GPU says so, without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tritonlab.grading import contracts, huge
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.run import run_limits
from tritonlab.grading.contracts import Case
from tritonlab.models import Exercise
from tritonlab.runs import sandbox
from tritonlab.runs.limits import gpu_memory_cap

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "course/02-environment/exercises/vector-copy/solution.py"

COPY = """
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < LIMIT)


def vector_copy(x):
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        copy_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    AFTER
    return out
"""


def learner(tmp_path: Path, name: str, limit: str = "n", after: str = "") -> Path:
    path = tmp_path / name / "vector_copy.py"
    path.parent.mkdir()
    path.write_text(COPY.replace("LIMIT", limit).replace("AFTER", after or "pass"))
    return path


def small_huge_cases(rng: np.random.Generator) -> list[Case]:
    """The real huge case's shape of data, 5000 elements instead of 2³¹ (the interpreter cannot afford more)."""
    n = 5000
    gen = huge.Generated(n, "float16", 77)
    return [
        Case(f"huge: n={n} float16", (gen,), extra={"huge": {"kind": "copy", "n": n, "dtype": "float16"}})
    ]


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def check(path: Path, zygote: sandbox.Zygote, monkeypatch: pytest.MonkeyPatch, seed: int):
    monkeypatch.setattr(contracts.get("vector-copy"), "huge_cases", small_huge_cases)
    exercise = Exercise("vector-copy", "", path.parent, "vector_copy", {"en": "vector-copy"}, {}, {}, ())
    return pipeline.check(exercise, path, "interpreter", zygote, seed=seed, timeout=90, huge_cases=True)


def test_generated_values_are_exact_and_the_summary_counts_bad_elements() -> None:
    gen = huge.Generated(3000, "float16", 5)
    view, _g = huge.generate(gen, "cpu", "input `x`")
    idx = np.arange(3000, dtype=np.int64)
    assert np.array_equal(view.double().numpy(), (idx * 40503 + 5 * 97) % 1021 - 510)
    spec = {"n": 3000, "dtype": "float16"}
    good = view.clone()
    assert huge.summary("copy", [good], [view], spec, "cpu")["mismatches"] == 0
    bad = view.clone()
    bad[2990:] = 0
    got = huge.summary("copy", [bad], [view], spec, "cpu")
    wrong = int((view[2990:] != 0).sum())
    assert got["mismatches"] == wrong and got["first_bad"][0] >= 2990
    assert huge.digest(good) != huge.digest(bad)
    assert "shape" in huge.summary("copy", [view[:10]], [view], spec, "cpu")["problem"]


def test_the_int32_wrap_is_named_when_only_elements_past_two_to_the_31_are_wrong() -> None:
    entry = {"huge_summary": {"numel": 2**31 + 9, "mismatches": 9, "first_bad": [2**31, 2**31 + 1]}}
    (failure,) = huge.judge("huge: n=2147483657 float16", entry)
    assert failure.kind == "wrong-result" and "int64" in failure.cause
    entry["huge_summary"]["first_bad"] = [4, 5]
    assert "int64" not in huge.judge("x", entry)[0].cause
    entry["huge_summary"]["mismatches"] = 0
    assert huge.judge("x", entry) == []


def test_a_right_file_passes_its_generated_case(zygote, monkeypatch, tmp_path) -> None:
    verdict = check(learner(tmp_path, "right"), zygote, monkeypatch, seed=3)
    assert verdict.passed, [(f.case, f.kind, f.message) for f in verdict.failures]
    assert "huge: n=5000 float16" in [c.name for c in verdict.cases]


def test_a_missing_tail_fails_from_the_replay_childs_summary(zygote, monkeypatch, tmp_path) -> None:
    verdict = check(learner(tmp_path, "tail", limit="n - 100"), zygote, monkeypatch, seed=3)
    huge_failures = [f for f in verdict.failures if f.case.startswith("huge:")]
    assert [f.kind for f in huge_failures] == ["wrong-result"]
    assert "of 5000 elements are wrong; the first at indices [4900" in huge_failures[0].message


def test_the_host_writing_the_answer_is_host_computed(zygote, monkeypatch, tmp_path) -> None:
    cheat = learner(tmp_path, "cheat", limit="0", after="out.numpy()[...] = x.numpy()")
    verdict = check(cheat, zygote, monkeypatch, seed=3)
    kinds = {f.kind for f in verdict.failures if f.case.startswith("huge:")}
    assert "host-computed" in kinds


def test_check_huge_without_a_gpu_says_so(tmp_path, monkeypatch) -> None:
    from tritonlab.cli import app

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    result = CliRunner().invoke(app.app, ["check", "vector-copy", "--solution", "--huge"])
    assert result.exit_code == 2
    text = " ".join((result.output + (result.stderr if result.stderr_bytes else "")).split())
    assert "GPU" in text and "Traceback" not in text
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("exercise_id", ["vector-copy", "vector-add", "pid-map"])
def test_course_solutions_pass_past_two_to_the_31_on_a_gpu(exercise_id: str, tmp_path, monkeypatch) -> None:
    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    service = Service(backend="gpu")
    try:
        exercise = next(e for e in service.course.exercises() if e.id == exercise_id)
        verdict = service.check(exercise, file=exercise.solution, record=False, speed=False, huge=True)
    finally:
        service.close()
    names = [c.name for c in verdict.cases]
    assert any(n.startswith("huge:") for n in names)
    assert verdict.passed, [(f.case, f.kind, f.message) for f in verdict.failures]


def test_a_huge_case_raises_the_runs_gpu_memory_cap_to_what_it_holds() -> None:
    """Found on the H200: the default per-run cap (16 GiB) stopped correct solutions of the huge cases with an
    out-of-memory error (vector-add: three 4 GiB float16 tensors and a copy; pid-map: an 8 GiB int32 output)."""
    rng = np.random.default_rng(3)
    for exercise_id, tensors, itemsize in (("vector-add", 3, 2), ("pid-map", 1, 4), ("vector-copy", 2, 2)):
        cases = contracts.get(exercise_id).huge_cases(rng)
        n = cases[0].extra["huge"]["n"]
        limits = run_limits("gpu", 60.0, cases)
        assert limits.gpu_memory_bytes >= 2 * tensors * n * itemsize > gpu_memory_cap(), exercise_id
    ordinary = contracts.get("vector-add").cases(rng, "gpu")
    assert run_limits("gpu", 60.0, ordinary).gpu_memory_bytes == gpu_memory_cap()
    assert run_limits("interpreter", 60.0, cases).gpu_memory_bytes is None
