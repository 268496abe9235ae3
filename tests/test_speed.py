"""The speed line of a passing check: summary, wording, JSON on the interpreter, and the sandboxed timing job."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonlab.content.course import load_course
from tritonlab.perf import bench_learner
from tritonlab.service import Service, speed_line

ROW = {
    "kernel": "vector_add",
    "dtype": "fp32",
    "shape": [268435456],
    "bound": "memory",
    "impls": {
        bench_learner.LEARNER: {"ms": 1.0, "gbps": 3000.0, "tflops": 0.27},
        bench_learner.REFERENCE: {"ms": 1.1, "gbps": 2727.0, "tflops": 0.24},
    },
    "speedup": {bench_learner.REFERENCE: 1.1},
    "peaks": {"copy_gbps": 4000.0, "matmul_bf16_tflops": 800.0, "gpu": "NVIDIA H200"},
}


def test_summary_of_a_memory_bound_row() -> None:
    speed = bench_learner.speed_summary({"rows": [ROW]}, goal=0.8)
    assert speed["unit"] == "GB/s" and speed["achieved"] == 3000.0
    assert speed["roof"] == 4000.0 and speed["pct_of_roof"] == 75.0 and speed["vs_reference"] == 1.1
    line = speed_line(speed)
    assert "3000 GB/s (75% of the measured roof)" in line and "1.10× the course reference" in line
    assert "goal 0.80× met (not graded)" in line


def test_the_roofline_plot_gets_both_points_and_the_measured_roofs() -> None:
    plot = bench_learner.speed_summary({"rows": [ROW]})["plot"]
    assert plot["copy_gbps"] == 4000.0 and plot["peak_tflops"] == 800.0
    assert plot["learner"] == {"gbps": 3000.0, "tflops": 0.27} and plot["reference"]["gbps"] == 2727.0
    assert plot["intensity"] == pytest.approx(0.09)  # 0.27 TFLOP/s over 3000 GB/s


def test_the_plot_keeps_only_finite_numbers_from_the_timing_run() -> None:
    """The timing run executed the learner's module: its numbers are data, checked before they are drawn."""
    hostile = {
        **ROW,
        "impls": {
            bench_learner.LEARNER: {"ms": 1.0, "gbps": 3000.0, "tflops": float("nan")},
            bench_learner.REFERENCE: {"ms": 1.0, "gbps": "<b>", "tflops": True},
        },
    }
    plot = bench_learner.speed_summary({"rows": [hostile]})["plot"]
    assert plot["learner"] == {"gbps": 3000.0, "tflops": 0.0} and "reference" not in plot
    assert plot["intensity"] == 0.0
    no_roof = {**ROW, "peaks": {"copy_gbps": float("inf")}}
    assert "plot" not in bench_learner.speed_summary({"rows": [no_roof]})


def test_summary_of_a_compute_bound_row_without_a_roof() -> None:
    row = {**ROW, "bound": "compute", "peaks": None, "kernel": "matmul"}
    speed = bench_learner.speed_summary({"rows": [row]})
    assert speed["unit"] == "TFLOP/s" and speed["pct_of_roof"] is None and "bench --all" in speed["note"]
    assert "% of the measured roof" not in speed_line(speed)


def test_summary_when_the_timing_failed() -> None:
    speed = bench_learner.speed_summary({"rows": [], "problems": ["vector_add: your kernel raised"]})
    assert "error" in speed and speed_line(speed).startswith("speed: not measured")
    assert speed_line(None) == ""


def test_speed_goal_is_read_from_exercise_toml() -> None:
    course = load_course()
    assert course.exercise("vector-add").speed_goal == 0.8
    assert course.exercise("vector-copy").speed_goal is None
    assert bench_learner.speed_job(course.exercise("vector-copy"), Path("x.py"), {}) is None


def test_interpreter_check_says_why_there_is_no_speed(home: Path) -> None:
    service = Service(workspace_dir=home / "ws", backend="interpreter")
    try:
        exercise = service.exercise("vector-add")
        verdict = service.check(exercise, file=exercise.solution, record=False)
    finally:
        service.close()
    data = verdict.to_json()
    assert verdict.passed and data["speed"] is None
    assert data["speed_reason"] == bench_learner.NO_SPEED_INTERPRETER


@pytest.mark.parametrize("exercise_id", ["vector-add"])
def test_the_speed_job_times_one_case_in_the_sandbox(home: Path, exercise_id: str) -> None:
    """The same job a GPU check runs, here on the interpreter's tiny sizes: one row, reference beside it."""
    service = Service(workspace_dir=home / "ws", backend="interpreter")
    try:
        exercise = service.exercise(exercise_id)
        job = bench_learner.speed_job(exercise, exercise.solution, {})
        job["gpu"] = False
        _, data = service.run_job(job, "bench.json", timeout=120)
    finally:
        service.close()
    assert data is not None and len(data["rows"]) == 1, data
    assert set(data["rows"][0]["impls"]) == {bench_learner.LEARNER, bench_learner.REFERENCE}
    speed = bench_learner.speed_summary(data, exercise.speed_goal)
    assert speed["achieved"] > 0 and speed["roof"] is None
