"""A check graded on a cluster worker (`--executor ray`): seeds, not tensors, over the wire.

The driver ships a check's spec: the exercise's id, the seed (or none: the worker draws it, and makes the
cases of its next seed of that exercise ahead, in the background, as a local server does), the text being graded, the file's name, the
backend, the time limit, the compile cache named for the learner, and the driver's course and code versions
(`spec`). The worker (ray_executor/actor.py:Worker.check, trusted code outside the learner's sandbox) runs the
very steps 1-6 of the one check pipeline (grading/check/pipeline.py: `CheckRun.grade`, inside the same harness
retry as locally, `grading/retry.py`) on its own zygote: it makes the cases from the seed itself, runs the check
child and the replay, and judges in its own process (`grade_on_worker`). Back comes the verdict as JSON text and
the check child's output, cut to a bound, nothing else.

The driver takes that answer as hostile data all the same (`verdict_from_worker`): the reply's size and JSON
depth are capped (ray_executor/transfer.py:check_reply), every field it keeps is checked for type and size here,
a failure kind must be one the grader knows, and nothing the learner's process wrote is unpickled (the worker
judged those files where they were written; Ray pickles only the worker's dict of str, int, float and bool).
Steps 7-9 (record, show, speed) stay the driver's, as for a local check (service/check.py).

A worker whose course or tritonlab code differs from the driver's is never used (driver.RayPool refuses it at
start, `ray_executor/versions.py`); the worker checks the spec's versions again before it grades.
"""

from __future__ import annotations

import functools
import json
import math
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab.config import MAX_SOURCE_BYTES
from tritonlab.content.course import load_course
from tritonlab.grading import case_cache, contracts, retry
from tritonlab.grading.check import cases as check_cases
from tritonlab.grading.check.pipeline import CheckRun
from tritonlab.models import FAILURE_KINDS, CaseResult, Course, Failure, Verdict
from tritonlab.runs import executor as executors
from tritonlab.runs.ray_executor import transfer, versions
from tritonlab.runs.sandbox import SandboxError

MAX_TEXT = 4000  # characters of one message, cause, note or case name kept from a worker's verdict
MAX_ITEMS = 500  # cases, failures or notes kept from a worker's verdict
MAX_OUTPUT_BACK = 256 << 10  # characters of the check child's output in the reply (it was streamed already)
OUTPUT_CUT = "\n[tritonlab] output cut at {n} characters on its way back from the cluster worker\n"


# ---- driver → worker ---------------------------------------------------------------------------------------


def spec(check: CheckRun) -> dict:
    """What the driver ships for a check: plain data, a few hundred bytes beside the graded text, which may
    hold at most MAX_SOURCE_BYTES (the web's limit on a saved file): a check ships at most 1 MB."""
    if check.source is not None and len(check.source.encode("utf-8", "surrogateescape")) > MAX_SOURCE_BYTES:
        raise executors.ExecutorError(
            f"{check.file} is larger than {MAX_SOURCE_BYTES // 1024} KiB: too large to check on the cluster "
            "(a learner's file is a few kB; split it, or check it with --executor local)"
        )
    return {
        "exercise": check.exercise.id,
        "seed": None if check.seed is None else int(check.seed),  # None: the worker draws it
        "backend": check.backend,
        "file": str(check.file),
        "source": check.source,
        "timeout": float(check.timeout),
        "huge": bool(check.huge_cases),
        "cache": check.cache,
        "versions": versions.local(),
    }


# ---- on the worker ------------------------------------------------------------------------------------------


def grade_on_worker(
    job: dict,
    zygote: object,
    fresh_zygote: Callable[[], object],
    on_start: Callable[[object], None],
    on_output: Callable[[str], None],
) -> dict:
    """Steps 1-6 of the check pipeline on this worker's zygote, from the spec alone; the reply is plain data:
    {"verdict": JSON text, "output": str} or {"lost": why} (the harness died under the check and its retry)
    or {"refused": why} (this worker's versions differ from the driver's)."""
    sent = job.get("versions")
    if not isinstance(sent, dict) or not all(isinstance(sent.get(k), str) for k in ("course", "code")):
        return {"refused": "the check named no course or code version"}
    why = versions.differences(sent, versions.local())
    if why:
        return {"refused": why}
    exercise = _course().exercise(str(job["exercise"]))
    backend, huge = str(job["backend"]), bool(job.get("huge"))
    cache = transfer.worker_cache({"mode": "check", transfer.CACHE_KEY: job.get("cache")})
    seed, ahead = (int(job["seed"]), False) if job.get("seed") is not None else _drawn(exercise.id, backend)

    def once(worker: object) -> Verdict:
        return CheckRun(
            exercise,
            Path(job["file"]),
            backend,
            worker,
            seed=seed,
            timeout=float(job["timeout"]),
            on_output=on_output,
            on_start=on_start,
            source=job.get("source"),
            huge_cases=huge,
            cache=cache,
        ).grade()

    try:
        verdict = retry.check_retrying(once, fresh_zygote, first=zygote)
    except executors.WorkerLost as lost:
        return {"lost": str(lost)[:MAX_TEXT]}
    finally:
        if not huge:
            _draw_ahead(exercise.id, backend)
    verdict.timings["cases_ahead"] = ahead
    output = verdict.output
    if len(output) > MAX_OUTPUT_BACK:
        output = output[:MAX_OUTPUT_BACK] + OUTPUT_CUT.format(n=MAX_OUTPUT_BACK)
    data = verdict.to_json()
    data["failures"] = [_cut(f) for f in data["failures"][:MAX_ITEMS]]
    data["notes"] = [n[:MAX_TEXT] for n in data["notes"][:MAX_ITEMS]]
    return {"verdict": json.dumps(data), "output": output}


# This worker's next seed per (exercise, backend), its cases made in the background after the last check of it
# (the local server draws the next seed ahead the same way: facade.prepare_cases).
_AHEAD: dict[tuple[str, str], int] = {}
_AHEAD_LOCK = threading.Lock()


def _drawn(exercise_id: str, backend: str) -> tuple[int, bool]:
    """The seed of a check that named none: the one drawn ahead (its cases made or being made), else a new one."""
    with _AHEAD_LOCK:
        seed = _AHEAD.pop((exercise_id, backend), None)
    return (seed, True) if seed is not None else (random.SystemRandom().randrange(1, 2**31), False)


def _draw_ahead(exercise_id: str, backend: str) -> None:
    """Draw this worker's next seed of the exercise and make its cases and references now, in a thread: the
    next check of it on this worker finds them made (case_cache: one maker per seed, a check waits for it)."""
    if case_cache.CASES.budget_for(backend) <= 0:
        return
    seed = random.SystemRandom().randrange(1, 2**31)
    with _AHEAD_LOCK:
        if (exercise_id, backend) in _AHEAD:
            return
        _AHEAD[(exercise_id, backend)] = seed

    def make() -> None:
        contract = contracts.get(exercise_id)
        made = check_cases.cases(contract, exercise_id, backend, seed)
        check_cases.prepare_references(contract, made)

    threading.Thread(target=make, name=f"cases-{exercise_id}", daemon=True).start()


@functools.lru_cache(maxsize=1)
def _course() -> Course:
    """The worker's course, loaded once (its version was checked against the driver's at start)."""
    return load_course()


def _cut(failure: dict) -> dict:
    return {k: v[:MAX_TEXT] if isinstance(v, str) else v for k, v in failure.items()}


# ---- back on the driver ---------------------------------------------------------------------------------------


def _text(value: object, what: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise SandboxError(f"the worker's verdict has a bad {what}")
    return value


def _items(value: object, what: str) -> list:
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise SandboxError(f"the worker's verdict has bad {what}")
    return value


def _timings(value: object, depth: int = 0) -> dict:
    """Numbers, flags and short labels by name, one level of nesting (a run's phases)."""
    out: dict = {}
    if not isinstance(value, dict):
        return out
    for key, v in list(value.items())[:200]:
        if not isinstance(key, str) or len(key) > 64:
            continue
        if isinstance(v, bool) or (isinstance(v, int | float) and math.isfinite(v)):
            out[key] = v
        elif isinstance(v, dict) and depth == 0:
            out[key] = _timings(v, 1)
    return out


def verdict_from_worker(data: dict, check: CheckRun) -> Verdict:
    """The worker's verdict, every field checked for type and size, for the check the driver asked for (its
    exercise, seed, backend and file: a reply that names another is refused). Raises SandboxError."""
    for key, want in (
        ("exercise", check.exercise.id),
        ("seed", check.seed),
        ("backend", check.backend),
        ("file", str(check.file)),
    ):
        if data.get(key) != want and not (key == "seed" and want is None):
            raise SandboxError(f"the worker answered for another check ({key} differs)")
    seed = data.get("seed")  # the worker's own draw when the check named none
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise SandboxError("the worker's verdict has a bad seed")
    cases = []
    for c in _items(data.get("cases"), "cases"):
        if not isinstance(c, dict) or not isinstance(c.get("passed"), bool):
            raise SandboxError("the worker's verdict has a bad case")
        cases.append(CaseResult(_text(c.get("name"), "case name"), c["passed"]))
    failures = []
    for f in _items(data.get("failures"), "failures"):
        if not isinstance(f, dict) or f.get("kind") not in FAILURE_KINDS:
            raise SandboxError("the worker's verdict has a failure of an unknown kind")
        failures.append(
            Failure(
                _text(f.get("case"), "failure's case"),
                f["kind"],
                _text(f.get("message"), "failure message"),
                _text(f.get("cause", ""), "failure cause"),
                _text(f.get("where", ""), "failure place"),
            )
        )
    duration = data.get("duration_s")
    if isinstance(duration, bool) or not isinstance(duration, int | float) or not 0 <= duration < 1e6:
        raise SandboxError("the worker's verdict has a bad duration")
    return Verdict(
        exercise=check.exercise.id,
        backend=check.backend,
        seed=seed,
        file=str(check.file),
        cases=cases,
        failures=failures,
        notes=[_text(n, "note") for n in _items(data.get("notes"), "notes")],
        duration_s=float(duration),
        timings=_timings(data.get("timings")),
    )


def grade_remote(check: CheckRun, pool: object, on_handle: Callable[[object], None]) -> Verdict:
    """Steps 1-6 on a cluster worker (`pool`: driver.RayPool): the verdict, in `check.verdict`, with the
    remote phases in `timings["remote"]` (`payload_mb` out, `reply_mb` back). Raises WorkerLost when the
    worker (and the retry's) was lost, or the harness died under the check and its retry there."""
    began = time.monotonic()
    handle = pool.check(spec(check), check.timeout)
    on_handle(handle)
    reply = handle.wait(check.on_output)
    if reply.get("lost"):
        raise executors.WorkerLost(reply["lost"], list(handle.attempts))
    if reply.get("refused"):
        raise executors.ExecutorError(f"the worker on {handle.node} refused the check: {reply['refused']}")
    mark = time.monotonic()
    verdict = verdict_from_worker(reply["verdict"], check)
    check.seed = verdict.seed  # the worker's draw, when the check named none
    verdict.output = reply["output"]
    handle.timings["validate_s"] = time.monotonic() - mark
    verdict.timings["remote"] = _timings(handle.timings, 1)
    verdict.timings["remote_total_s"] = time.monotonic() - began
    check.verdict, check.graded = verdict, True
    return verdict
