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


def test_a_slow_run_keeps_its_figures_instead_of_rounding_to_zero() -> None:
    """A tiny case on a slow interpreter moves well under a thousandth of a GB/s; the summary keeps significant
    figures, so the line never says 0 GB/s for a kernel that did the work (CI's softmax case, round 7)."""
    slow = {**ROW, "impls": {bench_learner.LEARNER: {"ms": 812.5, "gbps": 0.000321, "tflops": 0.0000012}}}
    speed = bench_learner.speed_summary({"rows": [slow]})
    assert speed["achieved"] == 0.000321 and speed["ms"] == 812.5
    assert speed["plot"]["learner"] == {"gbps": 0.000321, "tflops": 0.0000012}
    assert "0.000321 GB/s" in speed_line(speed)


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


def speed_of(home: Path, exercise_id: str, file: Path, timings: dict | None = None) -> dict:
    """The two runs a passing GPU check makes (perf/speed.py), here on the interpreter's tiny sizes."""
    service = Service(workspace_dir=home / "ws", backend="interpreter")
    try:
        exercise = service.exercise(exercise_id)
        job = bench_learner.speed_job(exercise, file, {})
        job["gpu"] = False
        return service.speed_runs(job, exercise, file.read_text(), timings=timings)
    finally:
        service.close()


@pytest.mark.parametrize("exercise_id", ["vector-add", "softmax"])
def test_the_speed_is_timed_by_replaying_the_recorded_launches(home: Path, exercise_id: str) -> None:
    """The learner's process records one call; a child that never imports the file replays and times it,
    next to the course reference on the same inputs: one row."""
    exercise = load_course().exercise(exercise_id)
    timings: dict = {}
    data = speed_of(home, exercise_id, exercise.solution, timings)
    assert len(data["rows"]) == 1 and not data["problems"], data
    # what each of the two runs used, as its worker reaped it (scripts/load_gpu.py adds them up per check)
    assert timings["speed_record_cpu_s"] > 0 and timings["speed_time_cpu_s"] > 0, timings
    assert "never imported your file" in data["timed_by"]
    assert set(data["rows"][0]["impls"]) == {bench_learner.LEARNER, bench_learner.REFERENCE}
    speed = bench_learner.speed_summary(data, exercise.speed_goal)
    assert speed["achieved"] > 0 and speed["roof"] is None


def test_a_module_that_fakes_its_own_clock_is_timed_anyway(home: Path, tmp_path: Path) -> None:
    """Timed in the learner's own process, a module that stops the clocks it can reach would report any
    speed it liked (here: 0 ms). The replay child never imports it: its time is measured."""
    solution = load_course().exercise("vector-add").solution.read_text()
    fake = tmp_path / "vector_add.py"
    fake.write_text(
        "import time, torch\n"
        "time.perf_counter = lambda: 0.0\n"
        "time.perf_counter_ns = lambda: 0\n"
        "torch.cuda.Event.elapsed_time = lambda self, other: 0.0\n" + solution
    )
    data = speed_of(home, "vector-add", fake)
    assert len(data["rows"]) == 1, data
    mine = data["rows"][0]["impls"][bench_learner.LEARNER]
    assert 0 < mine["ms"] < 1e6 and mine["gbps"] > 0


def test_launches_that_do_not_compute_the_answer_are_not_timed(home: Path, tmp_path: Path) -> None:
    """A function that launches a kernel that does nothing and computes the answer with torch: its
    recorded launches alone do not give the result, so there is nothing honest to time."""
    fake = tmp_path / "vector_add.py"
    fake.write_text(
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def nothing(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    pass\n"
        "def vector_add(x, y):\n"
        "    nothing[(1,)](x, x.numel(), BLOCK=64)\n"
        "    return x + y\n"
    )
    data = speed_of(home, "vector-add", fake)
    assert not data.get("rows") and data["problems"], data
    assert "not timed" in data["problems"][0] or "could not be recorded" in data["problems"][0], data


@pytest.mark.parametrize(
    "forged",
    [
        # a launch of a kernel the file does not define
        '{"buffers": [], "events": [{"op": "launch", "kernel": "os_system", "grid": [1], "args": []}], "outputs": []}',
        # more events than a record may hold
        '{"buffers": [], "events": [{"op": "fill"}] * 100000, "outputs": []}',
        # nested far past what a result file may hold
        '{"buffers": [], "events": functools.reduce(lambda x, _: [x], range(400), []), "outputs": []}',
        # not a record at all
        '"a string"',
    ],
)
def test_a_forged_record_is_refused_by_the_timing_run(home: Path, tmp_path: Path, forged: str) -> None:
    """The recording run executes learner code: the module can replace the grader's own recorder (as
    tests/wrong/vector_add/patches_grader.py does) and hand on any record it likes. The trusted timing run
    checks it like any record: nothing is timed, the report says why, nothing raises."""
    solution = load_course().exercise("vector-add").solution.read_text()
    fake = tmp_path / "vector_add.py"
    fake.write_text(
        "import functools\n"
        "from tritonlab.grading import launches\n"
        f"launches.launch_record = lambda *args, **kwargs: {forged}\n" + solution
    )
    data = speed_of(home, "vector-add", fake)
    assert not data.get("rows"), data
    assert data["problems"] and all(isinstance(p, str) for p in data["problems"]), data
