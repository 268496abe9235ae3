"""scripts/gpu_verify.py (`make gpu-verify`) off the GPU: its plan, its budget, and the verdicts it writes."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_runs  # noqa: E402
import gpu_verify  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))


def test_dry_run_writes_the_plan_of_every_step_within_the_budget(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_verify.py"), "--dry-run", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "gpu-verify.json").read_text())
    assert list(report["steps"]) == list(gpu_verify.LIMITS)
    assert report["dry_run"] and all(
        s["status"].startswith("dry run") for n, s in report["steps"].items() if n not in gpu_verify.OPT_IN
    )
    assert gpu_verify.BUDGET_S <= 570
    assert "dry run: nothing was run" in (tmp_path / "gpu-verify.md").read_text()
    assert "a dry run: nothing was run" in (tmp_path / "README.md").read_text()
    bad = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_verify.py"), "--out", str(tmp_path), "--only", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown step" in bad.stderr


def test_the_environment_step_runs_with_any_only(tmp_path: Path) -> None:
    """A run of one step still records the date, GPU, driver and versions (the run folder's README needs them:
    the H100-80GB-HBM3 runs of f34f30d and 8b0198d, `--only gpu_tests` and `--only bench`, had none)."""
    assert gpu_verify.main(["--out", str(tmp_path), "--budget", "60", "--only", "bench", "--dry-run"]) == 0
    steps = json.loads((tmp_path / "gpu-verify.json").read_text())["steps"]
    assert steps["environment"]["status"] == "dry run: not run"  # asked for, not "not asked for (--only)"
    assert steps["doctor"]["status"].startswith("not asked for")


def test_a_spent_budget_skips_the_steps_left(tmp_path: Path) -> None:
    """With no time left every step is skipped, not run past the budget (the 10-minute GPU call returns)."""
    assert gpu_verify.main(["--out", str(tmp_path), "--budget", "1", "--only", "environment,bench"]) == 0
    report = json.loads((tmp_path / "gpu-verify.json").read_text())
    assert report["steps"]["bench"]["status"] == "skipped: the time budget is spent"
    assert report["steps"]["doctor"]["status"].startswith("not asked for")


def test_judge_marks_each_target_met_or_short() -> None:
    report = {
        "cli_latency": {
            "exercises": [
                {"exercise": "softmax", "runs": [{"wall_s": 3.4, "verdict_s": 2.5}] * 5, "median_wall_s": 3.4,
                 "median_verdict_s": 2.5, "median_speed_after_verdict_s": 0.9, "target_s": 3.0, "all_passed": True},
                {"exercise": "matmul", "runs": [{"wall_s": 6.0, "verdict_s": 5.5}] * 5, "median_wall_s": 6.0,
                 "median_verdict_s": 5.5, "median_speed_after_verdict_s": 0.5, "target_s": 5.0, "all_passed": True},
            ],
            "client_heavy_imports": [],
            "client_imports_daemon_client": True,
        },
        "first_check": {"seconds": 14.0, "passed": True},
        "dev_check": {"seconds": 95.0, "code": 0},
        "total_s": 560.0,
    }  # fmt: skip
    verdicts = {t["what"]: t["met"] for t in gpu_verify.judge(report)}
    assert verdicts["CLI check softmax: verdict printed (median of 5, warm daemon), s"] is True
    assert verdicts["CLI check softmax: speed line after the verdict (median), s"] is True
    assert verdicts["CLI check matmul: verdict printed (median of 5, warm daemon), s"] is False
    assert verdicts["first check after install, s"] is True
    assert verdicts["dev check --backend gpu, s"] is False
    assert verdicts["CLI process imports torch/triton/numpy (daemon answering)"] is True
    text = gpu_verify.summary_md(report | {"targets": gpu_verify.judge(report), "steps": {}})
    assert "| dev check --backend gpu, s | 95.0 | ≤ 90.0 | **short** |" in text
    # the GPU-marked tests: met only when they ran and passed (all skipped, e.g. no GPU, is not a pass)
    for summary, code, met in (
        ("30 passed in 80s", 0, True),
        ("33 skipped in 2s", 0, False),
        ("1 failed, 29 passed in 90s", 1, False),
    ):
        tests = {
            "gpu_tests": {
                "code": code,
                "tests": 30,
                "summary": summary,
                "shards": [
                    {
                        "files": ["tests/test_pool.py"],
                        "code": code,
                        "summary": summary,
                        "output": "FAILED tests/test_pool.py::test_x - boom\n" if code else "",
                    }
                ],
            }
        }
        (row,) = [t for t in gpu_verify.judge(tests) if t["what"].startswith("GPU-marked tests")]
        assert row["met"] is met, (summary, row)
        assert ("FAILED tests/test_pool.py::test_x" in gpu_verify.summary_md(tests | {"steps": {}})) == bool(
            code
        )


def test_cli_check_times_the_verdict_line(tmp_path: Path) -> None:
    """The CLI-latency step reads the learner's text output as it comes: the verdict line is timed (here on the
    interpreter and the fixture course; on the GPU the speed line follows it)."""
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(tmp_path / "home"),
        TRITONLAB_COURSE=str(ROOT / "tests" / "fixtures" / "course"),
        TRITONLAB_DAEMON="0",
        PYTHONUNBUFFERED="1",
    )
    got = gpu_verify.cli_check("vector-copy", env, 240, backend="interpreter")
    assert got["passed"] and got["code"] == 0, got
    assert got["verdict_s"] is not None and 0 < got["verdict_s"] <= got["wall_s"]
    assert got["speed_line"] is None and got["speed_after_verdict_s"] is None  # no timing on the interpreter


def _today() -> set[str]:
    return {dt.datetime.now(dt.UTC).date().isoformat()}


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None, reason="needs make and git")
def test_make_gpu_verify_writes_a_run_folder_named_by_date_gpu_and_commit(tmp_path: Path) -> None:
    """`make gpu-verify` (here a dry run, through the Makefile's own command) makes docs/gpu-runs/<date>-<gpu>-
    <commit>/ at run time, with a README in the form scripts/gpu_runs.py checks; a second run of the same commit
    the same day is refused before any step, and so is a commit that is not a hex id."""
    before = _today()
    env = {k: v for k, v in os.environ.items() if k != "TRITONLAB_COMMIT"}
    make = [shutil.which("make"), "--no-print-directory", "gpu-verify", f"PYTHON={sys.executable}",
            f"GPU_VERIFY_RUNS={tmp_path}", "GPU_VERIFY_ARGS=--dry-run"]  # fmt: skip
    done = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    (folder,) = tmp_path.iterdir()
    date, gpu, commit = gpu_runs.FOLDER.match(folder.name).groups()
    assert date in before | _today() and commit == head.stdout.strip()
    assert gpu == gpu_runs.gpu_slug(gpu_verify.gpu_name() or "none")
    assert gpu_runs.folder_problems(folder) == []
    readme = (folder / "README.md").read_text()
    assert f"| commit | {commit}" in readme and "--runs" in readme and "`gpu-verify.json`" in readme
    again = subprocess.run(make, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode != 0 and "already holds a run" in again.stderr
    bad = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_verify.py"), "--runs", str(tmp_path / "x"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(env, TRITONLAB_COMMIT="latest"),
    )
    assert bad.returncode == 2 and "commit" in bad.stderr and not (tmp_path / "x").exists()


def test_the_edited_kernel_step_is_judged_against_issue_40s_goals() -> None:
    """The first check of edited code is a target of the run: a median over the goal, or a failed check, is
    not met; under the goal with every check passed, met; not measured, no verdict."""

    def report(walls: list[float], passed: bool) -> dict:
        rows = [{"exercise": "matmul", "target_s": 8.0, "walls_s": walls,
                 "median_s": statistics.median(walls) if walls else None, "all_passed": passed}]  # fmt: skip
        return {"edited_kernel": {"exercises": rows}}

    def verdict(r: dict) -> object:
        (row,) = [t for t in gpu_verify.judge(r) if "edited matmul" in t["what"]]
        return row["met"]

    assert verdict(report([6.0, 7.5, 9.0], True)) is True
    assert verdict(report([16.5], True)) is False
    assert verdict(report([3.0], False)) is False
    assert verdict(report([], False)) is None


def test_the_edited_kernel_row_shows_where_the_time_went() -> None:
    """Issue 40: the first check of an edited kernel is judged with its split (check child, replay child, the
    replay's wait for the precompile, kernels precompiled and kernels the replay still compiled itself)."""
    phases = {"check_child_s": 6.2, "replay_child_s": 0.4, "precompile_wait_s": 0.1, "precompiled": 9}
    phases["replay_compiled"] = 0
    assert gpu_verify.split(phases) == (
        "check child 6.2, replay child 0.4, replay's wait 0.1, precompiled 9, replay compiled 0"
    )
    report = {
        "edited_kernel": {
            "exercises": [
                {"exercise": "matmul", "target_s": 8.0, "walls_s": [7.5], "median_s": 7.5, "all_passed": True,
                 "splits": [gpu_verify.split(phases)]},
            ]
        }
    }  # fmt: skip
    (row,) = gpu_verify.judge(report)
    assert row["met"] is True and "replay child 0.4" in row["what"] and "replay compiled 0" in row["what"]


def test_the_saved_edit_step_is_judged_per_mode_against_the_same_goals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`edited_saved` reads the benchmark's rows (one per check) into one target per exercise and mode, with
    the compile ahead's outcome named; a failed check or a median over the goal is not met."""
    rows = [
        {"exercise": "matmul", "mode": "at once", "passed": True, "shown_s": 9.5, "ahead": {"status": "stopped"}},
        {"exercise": "matmul", "mode": "after the compile ahead", "passed": True, "shown_s": 3.0,
         "ahead": {"status": "compiled"}},
        {"exercise": "softmax", "mode": "after the compile ahead", "passed": False, "shown_s": 1.0, "ahead": None},
    ]  # fmt: skip
    (tmp_path / "edited-kernel-saved.json").write_text(json.dumps({"rows": rows}))
    # the benchmark's run is not this test's: its rows are given above
    monkeypatch.setattr(gpu_verify, "sh", lambda *a, **k: {"code": 0, "seconds": 1.0, "stderr": ""})
    step = gpu_verify.edited_saved({}, 10, tmp_path)
    judged = {t["what"]: t["met"] for t in gpu_verify.judge({"edited_saved": step})}
    (at_once,) = [m for w, m in judged.items() if "matmul saved, then checked at once" in w]
    (after,) = [w for w in judged if "matmul saved, then checked after the compile ahead" in w]
    (soft,) = [m for w, m in judged.items() if "softmax saved, then checked after" in w]
    assert at_once is False and judged[after] is True and "compile ahead: compiled" in after
    assert soft is False
    assert not [w for w, m in judged.items() if "vector-copy" in w and m is not None]  # not measured


def test_a_test_shard_names_its_failures_and_where_a_timeout_stopped_it(tmp_path: Path) -> None:
    """A real pytest child with gpu_verify's shard arguments: one test passes, one fails, the third hangs
    until the step's limit kills the shard; what is read back names the failure and the test it stopped in
    (a quiet run killed at its limit said only `.....F...`)."""
    (tmp_path / "test_shard.py").write_text(
        "import time\n"
        "import pytest\n"
        "pytestmark = pytest.mark.gpu\n"
        "def test_passes():\n    assert True\n"
        "@pytest.mark.parametrize('case', ['with space inside'])\n"
        "def test_fails(case):\n    assert case == 'other'\n"
        "def test_hangs():\n    time.sleep(60)\n"
    )
    argv = gpu_verify.shard_argv(["test_shard.py"], str(tmp_path / "base"))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        out, _ = proc.communicate(timeout=8)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, code = proc.communicate()[0], "timeout"
    assert code == "timeout", out
    read = gpu_verify.read_shard(out, code)
    assert read["failed"] == ["test_shard.py::test_fails[with space inside]"], out
    assert read["stopped_in"] == "test_shard.py::test_hangs", out
    shard = {**read, "files": ["test_shard.py"], "code": code, "output": out}
    md = gpu_verify.summary_md({"gpu_tests": {"code": code, "tests": 3, "shards": [shard]}, "steps": {}})
    assert "  - failed: test_shard.py::test_fails[with space inside]" in md, md
    assert "  - stopped at the limit in: test_shard.py::test_hangs" in md, md
    finished = subprocess.run(
        gpu_verify.shard_argv(
            ["test_shard.py::test_passes", "test_shard.py::test_fails"], str(tmp_path / "b2")
        ),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    read = gpu_verify.read_shard(finished.stdout, finished.returncode)
    assert read["failed"] == ["test_shard.py::test_fails[with space inside]"] and read["stopped_in"] == ""
    assert read["summary"].startswith("1 failed, 1 passed"), read
    row = next(
        t
        for t in gpu_verify.judge(
            {"gpu_tests": {"code": "timeout", "tests": 3, "summary": "x", "shards": [{**read, "files": []}]}}
        )
        if t["what"].startswith("GPU-marked tests")
    )
    assert "failed: test_shard.py::test_fails[with space inside]" in row["measured"] and row["met"] is False


def test_the_last_step_asked_for_gets_what_is_left_of_the_budget(tmp_path: Path) -> None:
    """`--only gpu_tests` is a call of its own for the GPU tests: their limit is the budget, not the 150 s
    they get among the other steps."""
    alone, together = tmp_path / "alone", tmp_path / "together"
    assert gpu_verify.main(["--out", str(alone), "--dry-run", "--budget", "500", "--only", "gpu_tests"]) == 0
    assert gpu_verify.main(["--out", str(together), "--dry-run", "--budget", "500"]) == 0
    steps = json.loads((alone / "gpu-verify.json").read_text())["steps"]
    assert steps["gpu_tests"]["limit_s"] >= 480, steps["gpu_tests"]
    steps = json.loads((together / "gpu-verify.json").read_text())["steps"]
    assert steps["gpu_tests"]["limit_s"] == gpu_verify.LIMITS["gpu_tests"]
    assert steps["bench"]["limit_s"] >= 480  # nothing ran in a dry run: the last step has the rest


def test_the_gpu_tests_are_sharded_by_recorded_seconds_and_a_long_file_is_split() -> None:
    """One file whose tests take ten times as long as the others' (test_remote_check.py's, H100-80GB-HBM3 run
    2026-12-06 (92a71f8): its shard took 480 s of a 506 s limit) is split across shards by node id, every test
    runs exactly once, and no shard is estimated far above an even share; with nothing recorded the plan
    weighs files by their number of tests."""
    by_file = {"tests/test_slow.py": [f"tests/test_slow.py::t[{i}]" for i in range(20)]}
    by_file |= {f"tests/test_f{j}.py": [f"tests/test_f{j}.py::t{i}" for i in range(10)] for j in range(4)}
    rates = {"tests/test_slow.py": 20.0} | {f"tests/test_f{j}.py": 2.0 for j in range(4)}
    plan = gpu_verify.plan_shards(by_file, 4, rates)
    assert len(plan) == 4
    share = (20 * 20.0 + 40 * 2.0) / 4
    assert max(w for _, w in plan) <= 1.25 * share, plan
    ran = [t for targets, _ in plan for t in targets]
    expanded = [i for t in ran for i in (by_file[t] if t in by_file else [t])]
    assert sorted(expanded) == sorted(i for ids in by_file.values() for i in ids)  # each test exactly once
    assert not any(t == "tests/test_slow.py" for t in ran)  # the slow file went out by node ids
    assert sum(1 for targets, _ in plan if any(t.startswith("tests/test_slow.py::") for t in targets)) >= 3
    # nothing recorded: by count, so the 20-test file is still split over the 60 tests' even share
    by_count = gpu_verify.plan_shards(by_file, 4, {})
    assert max(w for _, w in by_count) <= 20, by_count


def test_recorded_rates_come_from_the_newest_run_and_prefer_measured_durations(tmp_path: Path) -> None:
    """The shard plan's seconds per test: the newest recorded run that ran the GPU tests (by its report's date),
    from pytest's durations table where the shard has it, else the shard's seconds over its tests."""

    def record(name: str, date: str, shards: list[dict]) -> None:
        (tmp_path / name).mkdir()
        report = {"environment": {"date": date}, "gpu_tests": {"shards": shards}}
        (tmp_path / name / "gpu-verify.json").write_text(json.dumps(report))

    record("2026-12-06-gpu-aaaaaaa", "2026-12-06T05:00:00+00:00", [
        {"files": ["tests/a.py"], "summary": "10 passed in 100.0s"},
    ])  # fmt: skip
    record("2026-12-06-gpu-0000000", "2026-12-06T09:00:00+00:00", [
        {"files": ["tests/a.py", "tests/b.py"], "summary": "3 passed, 1 skipped, 9 deselected in 40.0s"},
        {"files": ["tests/c.py::t1", "tests/c.py::t2"], "file_tests": {"tests/c.py": 2},
         "file_seconds": {"tests/c.py": 30.0}, "summary": "2 passed in 31.0s"},
    ])  # fmt: skip
    rates = gpu_verify.recorded_rates(tmp_path)
    assert rates == {"tests/a.py": 10.0, "tests/b.py": 10.0, "tests/c.py": 15.0}, rates
    assert gpu_verify.recorded_rates(tmp_path / "none") == {}


def test_a_shard_reads_its_files_seconds_from_pytests_durations(tmp_path: Path) -> None:
    """A real pytest child with the shard's arguments: the durations table it prints becomes the shard's
    `file_seconds` (what the next run's plan reads)."""
    (tmp_path / "test_timed.py").write_text(
        "import time\nimport pytest\npytestmark = pytest.mark.gpu\n"
        "def test_sleeps():\n    time.sleep(0.7)\n"
        "def test_quick():\n    pass\n"
    )
    done = subprocess.run(
        gpu_verify.shard_argv(["test_timed.py"], str(tmp_path / "base")),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    read = gpu_verify.read_shard(done.stdout, done.returncode)
    assert read["summary"].startswith("2 passed"), done.stdout
    assert 0.6 <= read["file_seconds"]["test_timed.py"] < 5, read


def test_the_class_loads_run_only_when_asked_for(tmp_path: Path) -> None:
    """The two class loads take a GPU call of their own: a plain run plans every other step and not them
    (bench stays the step that gets what is left), `--only load,load_course` plans them and nothing else."""
    assert gpu_verify.main(["--out", str(tmp_path / "all"), "--dry-run"]) == 0
    steps = json.loads((tmp_path / "all" / "gpu-verify.json").read_text())["steps"]
    assert (
        steps["load"]["status"]
        == steps["load_course"]["status"]
        == ("not asked for (run with --only load,load_course)")
    )
    assert (
        steps["bench"]["status"] == "dry run: not run" and steps["gpu_tests"]["status"] == "dry run: not run"
    )
    assert steps["bench"]["limit_s"] > gpu_verify.LIMITS["dev_check"]  # the last step gets what is left
    assert gpu_verify.main(["--out", str(tmp_path / "loads"), "--dry-run", "--only", "load,load_course"]) == 0
    steps = json.loads((tmp_path / "loads" / "gpu-verify.json").read_text())["steps"]
    planned = {name for name, info in steps.items() if info["status"] == "dry run: not run"}
    assert planned == {"environment", "load", "load_course"}
    assert steps["load_course"]["limit_s"] > gpu_verify.LIMITS["load_course"]  # the last one asked: the rest
    # the run's record names what each load wrote
    report = json.loads((tmp_path / "loads" / "gpu-verify.json").read_text())
    (tmp_path / "loads" / "load-l2-8.json").write_text("{}")
    readme = gpu_verify.readme_text(report, tmp_path / "loads", ["--only", "load,load_course"])
    assert "| `load-l2-8.json` | step `load`: `scripts/load_gpu.py`'s whole report" in readme


def test_the_class_loads_are_judged_against_issue_37s_goals() -> None:
    """Each load's figures against the goals: met on the goal's side with every verdict what its file must
    give; short past it, or when any verdict disagreed; not measured when the load gave no figure."""
    from gpuload import verify

    def load(per_minute: float | None, p95: float | None, mismatches: int = 0) -> dict:
        summary = {"verdicts": 200, "mismatches": mismatches, "checks_per_minute": per_minute,
                   "latency_s": {"p50": 1.0, "p95": p95, "max": 9.0}}  # fmt: skip
        return {"summary": summary, "sandbox": "hardened"}

    def verdicts(report: dict) -> dict[str, object]:
        rows = gpu_verify.judge(report | {"gpu_name": "NVIDIA H200"})
        return {t["what"].split(" (")[0]: t["met"] for t in rows if "mix" in t["what"]}

    got = verdicts({"load": load(210.0, 4.5), "load_course": load(59.0, 30.0)})
    assert got == {
        "lessons 2–8 mix, every text its own: checks a minute": True,
        "lessons 2–8 mix: latency p95, submission to verdict, s": True,
        "whole-course mix: checks a minute": False,
    }
    got = verdicts({"load": load(250.0, 5.5), "load_course": load(61.0, 9.0, mismatches=1)})
    assert list(got.values()) == [True, False, False]
    got = verdicts({"load": load(None, None)})
    assert list(got.values()) == [None, None]
    assert verdicts({}) == {}  # no load asked for: no row
    row = gpu_verify.judge({"load": load(120.0, 20.0), "gpu_name": "NVIDIA H100 80GB HBM3"})[0]
    assert row["target"] == "≥ 200.0" and row["measured"] == 120.0 and row["met"] is False
    assert "measured on NVIDIA H100 80GB HBM3" in row["what"] and "hardened" in row["what"]
    # the command each step runs: the GPU backend, the class's size, the mix, a bound inside the step's limit
    argv = verify.argv_for("l2-8", 150, Path("/tmp/x.json"), "hardened")
    assert argv[argv.index("--mix") + 1] == "l2-8" and "--distinct" in argv and "--backend" in argv
    assert argv[argv.index("--learners") + 1] == "60" and argv[argv.index("--max-seconds") + 1] == "150"
    assert "TRITONLAB_SANDBOX=hardened" in argv
    assert "--distinct" not in verify.argv_for("course", 150, Path("/tmp/x.json"), None)


@pytest.mark.slow
def test_a_class_load_step_runs_the_load_and_keeps_its_figures(tmp_path: Path) -> None:
    """The step itself, made small (the interpreter, 2 learners, 3 vector-copy checks): it runs load_gpu.py
    against a real classroom server, keeps its whole report in the run's folder and the figures the goals
    name, read back from that report."""
    from gpuload import verify

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    more = ("--learners", "2", "--checks", "3", "--rate", "0", "--exercises", "vector-copy", "--warmup", "0")
    got = verify.run_load(env, 150, tmp_path, "l2-8", backend="interpreter", more=more)
    assert got["code"] == 0 and got["file"] == "load-l2-8.json", got
    report = json.loads((tmp_path / "load-l2-8.json").read_text())
    assert report["config"]["distinct"] is True and len(report["records"]) == 3
    s = got["summary"]
    assert s["verdicts"] == 3 and s["mismatches"] == 0 and s["unfinished"] == 0, got
    assert s["checks_per_minute"] == report["summary"]["checks_per_minute"] > 0
    assert s["latency_s"] == report["summary"]["latency_s"]
    # too short a limit for a load: said, nothing started
    assert "too short" in verify.run_load(env, 50, tmp_path / "none", "course")["error"]
    assert not (tmp_path / "none").exists()
