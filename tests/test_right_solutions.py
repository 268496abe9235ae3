"""Correct learner files written in different styles (tests/right/<exercise>/<style>.py) all pass.

Styles: tuple grids and grid lambdas, upcasting inside the kernel, one block per row and looping (online)
softmax, grouped matmul orderings, different block sizes, copies allowed on the host (vector-add only).
Each file is checked on the interpreter with its own fixed seed (printed on failure, so that it replays).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.models import Exercise
from tritonlab.runs import sandbox

RIGHT = Path(__file__).resolve().parent / "right"
FILES = sorted(str(p.relative_to(RIGHT)) for p in RIGHT.glob("*/*.py"))


def exercise_for(folder: str) -> Exercise:
    ex_id = folder.replace("_", "-")
    contract = contracts.get(ex_id)
    return Exercise(ex_id, "", RIGHT / folder, contract.FUNCTION, {"en": ex_id}, {}, {}, ())


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def test_every_exercise_has_two_right_styles() -> None:
    folders = {f.split("/")[0] for f in FILES}
    expected = {
        "pid_map",
        "vector_add",
        "bench_protocol",
        "occupancy",
        "copy_2d",
        "transpose",
        "add_bias",
        "row_reduce",
        "softmax",
        "matmul",
        "grouped_matmul_order",
        "matmul_bias",
        "autotune",
        "debug_rmsnorm",
        "debug_persistent",
        "rmsnorm_backward",
        "autograd_wrap",
        "attention_forward",
        "persistent_matmul",
        "tma_matmul",
        "fp8_matmul",
        "attention_backward",
        "dropout",
        "cumsum",
    }
    assert expected <= folders
    for folder in folders:
        assert sum(f.startswith(folder + "/") for f in FILES) >= 2, folder


@pytest.mark.parametrize("rel", FILES)
def test_right_solution_passes(rel: str, zygote: sandbox.Zygote) -> None:
    folder = rel.split("/")[0]
    seed = zlib.crc32(rel.encode()) % 100_000 + 1
    verdict = pipeline.check(exercise_for(folder), RIGHT / rel, "interpreter", zygote, seed=seed, timeout=60)
    summary = "\n".join(
        f"{f.case} [{f.kind}] {f.message[:200]} :: {f.cause[:120]}" for f in verdict.failures[:6]
    )
    assert verdict.passed, f"{rel} failed with seed {seed}:\n{summary}"
    assert all(c.passed for c in verdict.cases) and len(verdict.cases) >= 3


def test_host_layout_copy_passes_with_its_cost(zygote: sandbox.Zygote) -> None:
    """softmax allows `x.contiguous()` on the host (exercise.toml [host]); the verdict names the cost."""
    verdict = pipeline.check(
        exercise_for("softmax"),
        RIGHT / "softmax/host_contiguous.py",
        "interpreter",
        zygote,
        seed=7,
        timeout=60,
    )
    assert verdict.passed, [f.to_json() for f in verdict.failures[:3]]
    notes = [n for n in verdict.notes if "copied on the host" in n]
    assert len(notes) == 1 and "`x`" in notes[0] and "% memory traffic" in notes[0]
    assert "host_contiguous.py:" in notes[0]  # the learner's line that made the copy


@pytest.fixture(scope="module")
def gpu_zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("gpu-home")))
        z = sandbox.Zygote("gpu", pool=2)
        z.wait_ready()
        yield z
        z.close()


@pytest.mark.gpu
@pytest.mark.parametrize("rel", FILES)
def test_right_solution_passes_on_the_gpu(rel: str, gpu_zygote: sandbox.Zygote) -> None:
    """The same right files, the same seeds, compiled for the GPU: a correct kernel gets the interpreter's
    verdict on both backends (issue 40: three correct files once failed on the GPU only)."""
    folder = rel.split("/")[0]
    seed = zlib.crc32(rel.encode()) % 100_000 + 1
    verdict = pipeline.check(exercise_for(folder), RIGHT / rel, "gpu", gpu_zygote, seed=seed, timeout=180)
    summary = "\n".join(
        f"{f.case} [{f.kind}] {f.message[:300]} :: {f.cause[:200]}" for f in verdict.failures[:6]
    )
    assert verdict.passed, f"{rel} failed on the GPU with seed {seed}:\n{summary}\n{verdict.output[-1500:]}"
