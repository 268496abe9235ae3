"""A check graded on a cluster worker, without a cluster: what the driver ships for every exercise (no case data),
the worker's refusal of a check whose versions differ, and the driver's reading of a worker's answer as hostile
data (size, depth, types, the check it names). The real cluster runs are in tests/test_ray_executor.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tritonlab.content.course import load_course
from tritonlab.models import CaseResult, Failure, Verdict
from tritonlab.runs.ray_executor import transfer, versions
from tritonlab.runs.sandbox import SandboxError
from tritonlab.service import remote_check

EXERCISES = load_course().exercises()


def check_of(exercise: object, seed: int = 7) -> SimpleNamespace:
    """What `spec` and `verdict_from_worker` read of a CheckRun."""
    source = exercise.solution.read_text()
    return SimpleNamespace(
        exercise=exercise,
        seed=seed,
        backend="gpu",
        file=exercise.solution.resolve(),
        source=source,
        timeout=120.0,
        huge_cases=True,
        cache="learner",
    )


@pytest.mark.parametrize("exercise", EXERCISES, ids=[e.id for e in EXERCISES])
def test_the_spec_of_every_exercise_carries_no_case_data(exercise: object) -> None:
    """Out to the worker: the text and a few hundred bytes, whatever the cases weigh (GPU, huge cases too)."""
    check = check_of(exercise)
    spec = remote_check.spec(check)
    assert transfer.size(spec) <= len(check.source.encode()) + 1000
    assert transfer.size(spec) <= 1_000_000
    assert spec["seed"] == 7 and spec["exercise"] == exercise.id and spec["versions"] == versions.local()
    assert all(isinstance(v, str | int | float | bool) for k, v in spec.items() if k != "versions")


def test_a_source_past_the_saved_file_limit_is_not_shipped() -> None:
    from tritonlab.config import MAX_SOURCE_BYTES
    from tritonlab.runs.executor import ExecutorError

    check = check_of(EXERCISES[0])
    check.source = "#" * MAX_SOURCE_BYTES
    assert transfer.size(remote_check.spec(check)) <= 1_000_000
    check.source += "#"
    with pytest.raises(ExecutorError, match="too large to check on the cluster"):
        remote_check.spec(check)


def test_a_worker_refuses_a_check_from_other_versions() -> None:
    job = remote_check.spec(check_of(EXERCISES[0]))

    def never(*args: object) -> None:
        raise AssertionError("a refused check must not reach the sandbox")

    for sent in ({"course": "0" * 64, "code": versions.local()["code"]}, None, {"course": 1, "code": 2}):
        reply = remote_check.grade_on_worker(job | {"versions": sent}, never, never, never, never)
        assert set(reply) == {"refused"}, reply
    other = job | {"versions": {"course": "0" * 64, "code": versions.local()["code"]}}
    assert (
        "course content differs" in remote_check.grade_on_worker(other, never, never, never, never)["refused"]
    )


def test_the_versions_change_with_the_course_and_the_code(tmp_path: Path) -> None:
    course = tmp_path / "course"
    (course / "02-x" / "exercises" / "e").mkdir(parents=True)
    (course / "course.toml").write_text("a = 1\n")
    (course / "02-x" / "lesson.en.md").write_text("text\n")
    (course / "02-x" / "exercises" / "e" / "exercise.toml").write_text("id = 'e'\n")
    first = versions.course_hash(course)
    (course / "02-x" / "lesson.en.md").write_text("other text\n")  # a lesson's prose: not what is graded
    versions.course_hash.cache_clear()
    assert versions.course_hash(course) == first
    (course / "02-x" / "exercises" / "e" / "exercise.toml").write_text("id = 'e'\n[host]\n")
    versions.course_hash.cache_clear()
    assert versions.course_hash(course) != first
    versions.course_hash.cache_clear()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    code = versions.code_hash(package)
    (package / "a.py").write_text("x = 2\n")
    versions.code_hash.cache_clear()
    assert versions.code_hash(package) != code
    versions.code_hash.cache_clear()


def worker_verdict(check: SimpleNamespace) -> dict:
    verdict = Verdict(
        exercise=check.exercise.id,
        backend=check.backend,
        seed=check.seed,
        file=str(check.file),
        cases=[CaseResult("small", True), CaseResult("tail", False)],
        failures=[Failure("tail", "wrong-result", "3 of 17 elements differ", "a mask", "solution.py:12")],
        notes=["a note"],
        duration_s=1.5,
        timings={"cases_s": 0.1, "check_warm_child": True, "run": {"x_s": 0.2}},
    )
    return verdict.to_json()


def test_a_good_answer_becomes_the_same_verdict() -> None:
    check = check_of(EXERCISES[0])
    data = worker_verdict(check)
    taken = transfer.check_reply({"verdict": json.dumps(data), "output": "printed\n"})
    verdict = remote_check.verdict_from_worker(taken["verdict"], check)
    assert verdict.to_json() == data | {"duration_s": 1.5}
    assert taken["output"] == "printed\n"


BAD_VERDICTS = {
    "another seed": lambda d: d | {"seed": d["seed"] + 1},
    "another exercise": lambda d: d | {"exercise": "other"},
    "another file": lambda d: d | {"file": "/elsewhere.py"},
    "an unknown failure kind": lambda d: d | {"failures": [{"case": "a", "kind": "fine", "message": "m"}]},
    "a message that is not text": lambda d: d | {"failures": [{"case": "a", "kind": "crash", "message": 3}]},
    "a message too long": lambda d: d | {"failures": [{"case": "a", "kind": "crash", "message": "m" * 5000}]},
    "a case passed as text": lambda d: d | {"cases": [{"name": "a", "passed": "yes"}]},
    "too many cases": lambda d: d | {"cases": [{"name": "a", "passed": True}] * 501},
    "notes that are not a list": lambda d: d | {"notes": "a note"},
    "a duration that is not a number": lambda d: d | {"duration_s": "1"},
    "a duration out of range": lambda d: d | {"duration_s": float("inf")},
}


@pytest.mark.parametrize("bad", BAD_VERDICTS, ids=list(BAD_VERDICTS))
def test_a_bad_verdict_from_a_worker_is_refused(bad: str) -> None:
    check = check_of(EXERCISES[0])
    data = BAD_VERDICTS[bad](worker_verdict(check))
    taken = transfer.check_reply({"verdict": json.dumps(data), "output": ""})
    with pytest.raises(SandboxError, match="worker's verdict|another check"):
        remote_check.verdict_from_worker(taken["verdict"], check)


def test_a_check_without_a_seed_takes_the_workers_draw() -> None:
    check = check_of(EXERCISES[0], seed=None)
    data = worker_verdict(check_of(EXERCISES[0], seed=123456))
    assert remote_check.verdict_from_worker(data, check).seed == 123456
    for bad in ("123456", -1, True, None, 2**70):
        with pytest.raises(SandboxError, match="bad seed"):
            remote_check.verdict_from_worker(data | {"seed": bad}, check)


def test_a_bad_answer_is_refused_before_it_is_parsed() -> None:
    deep = "[" * 50 + "]" * 50
    for reply in (
        ["not", "a", "dict"],
        {"verdict": {"already": "parsed"}, "output": ""},
        {"verdict": "{}", "output": b"bytes"},
        {"verdict": "{" + '"a": "' + "x" * 1_000_000 + '"}', "output": ""},
        {"verdict": "{}", "output": "x" * 1_000_001},
        {"verdict": json.dumps({"timings": json.loads(deep)}), "output": ""},
        {"verdict": "{not json", "output": ""},
        {"verdict": "[1, 2]", "output": ""},
        {"lost": 3},
    ):
        with pytest.raises(SandboxError):
            transfer.check_reply(reply)
    assert transfer.check_reply({"lost": "x" * 9000}) == {"lost": "x" * transfer.MAX_REASON}


def test_timings_keep_numbers_and_flags_only() -> None:
    check = check_of(EXERCISES[0])
    data = worker_verdict(check) | {
        "timings": {"a_s": 1.0, "b": "text", "c": [1], "d": {"e": 2, "f": {"g": 1}}, "n": float("nan"), 5: 1}
    }
    verdict = remote_check.verdict_from_worker(data, check)
    assert verdict.timings == {"a_s": 1.0, "d": {"e": 2}}


@pytest.fixture(scope="module")
def gpu_zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    from tritonlab.runs import sandbox

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("gpu-home")))
        z = sandbox.Zygote("gpu", pool=2)
        z.wait_ready()
        yield z
        z.close()


@pytest.mark.gpu
@pytest.mark.parametrize("exercise", EXERCISES, ids=[e.id for e in EXERCISES])
def test_a_gpu_check_graded_where_its_cases_are_made_answers_under_1_mb(exercise: object, gpu_zygote) -> None:
    """The worker's side of a Ray check on a GPU, for every exercise: its cases (up to 770 MB of float64 for
    matmul-bias) are made and judged on the worker; what goes back is the verdict data, at most 1 MB, and the
    driver takes it as the same verdict."""
    check = check_of(exercise)
    check.huge_cases = False
    job = remote_check.spec(check)
    reply = remote_check.grade_on_worker(
        job, gpu_zygote, lambda: gpu_zygote, lambda run: None, lambda text: None
    )
    size = transfer.size(reply)
    print(f"\n{exercise.id}: spec {transfer.size(job)} B out, reply {size} B back")
    assert transfer.size(job) <= 1_000_000 and size <= 1_000_000
    taken = transfer.check_reply(reply)
    verdict = remote_check.verdict_from_worker(taken["verdict"], check)
    assert verdict.passed, [f.to_json() for f in verdict.failures[:3]]


def test_a_workers_cpu_figure_is_taken_only_as_a_plain_number(tmp_path: Path) -> None:
    """A run's `cpu_s` in a worker's reply (transfer.run_result) is kept only as a finite number of seconds
    ≥ 0: text, a flag, a nested object, a negative or absurd value or NaN becomes None, never an error."""
    import time

    def taken(value: object) -> object:
        reply = {"exit_code": 0, "seconds": 1.0, "output": "", "cpu_s": value}
        return transfer.run_result(tmp_path, reply, "", time.monotonic(), {}).cpu_s

    assert taken(1.25) == 1.25 and taken(3) == 3.0
    for forged in ("9", True, {"a": 1}, [1.0], -1.0, 1e12, float("nan"), float("inf"), None):
        assert taken(forged) is None, forged


def test_a_workers_fault_and_switch_counts_are_taken_only_as_plain_counts(tmp_path: Path) -> None:
    """A run's `faults` and `switches` in a worker's reply are kept only as whole numbers ≥ 0 (below 2⁵³): text,
    a flag, a float, a nested object, a negative or absurd value becomes None, never an error."""
    import time

    def taken(key: str, value: object) -> object:
        reply = {"exit_code": 0, "seconds": 1.0, "output": "", key: value}
        return getattr(transfer.run_result(tmp_path, reply, "", time.monotonic(), {}), key)

    for key in ("faults", "switches"):
        assert taken(key, 0) == 0 and taken(key, 123456) == 123456
        for forged in ("9", True, False, 1.5, {"a": 1}, [1], -1, 1 << 60, float("nan"), None):
            assert taken(key, forged) is None, (key, forged)


def test_the_limits_a_worker_says_a_run_hit_come_back_only_as_known_names(tmp_path: Path) -> None:
    """A remote run's `limits_hit` and GPU memory figures travel in the worker's reply (the driver's verdict names
    the limit, as a local run's does); from the reply only known limit names are kept, each once, and the GPU
    memory figures only as plain counts."""
    import time

    from tritonlab.grading.check.failures import process_failure
    from tritonlab.runs.collect import RunResult

    hit = RunResult(tmp_path, None, 9, False, False, False, "", 1.0, limits_hit=["GPU memory"])
    hit.gpu_memory_bytes, hit.gpu_memory_line = 7 << 30, 4 << 30
    reply = transfer.reply(hit, "", {}, {})
    back = transfer.run_result(tmp_path, reply, "", time.monotonic(), {})
    assert back.limits_hit == ["GPU memory"]
    assert (back.gpu_memory_bytes, back.gpu_memory_line) == (7 << 30, 4 << 30)
    assert "held 7.0 GiB of GPU memory" in process_failure("case", back).message

    def taken(value: object) -> list[str]:
        forged = {"exit_code": None, "signal": 9, "seconds": 1.0, "output": "", "limits_hit": value}
        return transfer.run_result(tmp_path, forged, "", time.monotonic(), {}).limits_hit

    assert taken(["memory", "processes", "memory"]) == ["memory", "processes"]
    for forged in ("memory", ["<script>"], [["memory"]], {"memory": 1}, ["memory"] * 9, None, 1):
        assert taken(forged) == [], forged
