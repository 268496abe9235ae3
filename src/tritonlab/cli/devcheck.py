"""`tritonlab dev check`: prove the course is sound — what `tests/test_content.py` and CI rely on.

Every starter fails its check, every solution passes, every quiz bank validates, every example runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tritonlab import config
from tritonlab.content.course import CourseError, load_course


def default_jobs(backend: str) -> int:
    """Checks at once: on a GPU one per two CPU cores, at most 8. A check keeps one to two cores busy (its run
    compiling with ptxas, then the replay compiling again in its own cache while the parent judges beside
    it); each run holds a CUDA context and its cases in GPU memory, a few GB at most — a huge case tens of GB,
    and only three exercises have one. On the H200 (16 cores) 4 at a time took 122 s, 5 took 115 s with the
    heaviest check started 38 s in (H200 runs 2026-12-02 (accb35e) and 2026-12-02 (907ab44)). On the interpreter the
    service's own two runs at once. Not more than 8: on an H100 (16 cores) 16 at once took 111.6 s against
    131.9 s for 8, the host's CPU 79% busy either way, but 11 examples failed with ENOSPC (H100-80GB-HBM3 run
    2026-12-05 (5725d86)); of what the runs write, only the learner compile cache (128 MiB) was shared between
    them, so most likely it filled. Each exercise now checks in a compile cache of its own (`cache_key`): 16 at
    once then passed all 104 items in 129 s, the CPU 76 % busy (H100-80GB-HBM3 run 2026-12-06 (cae6c2d)), no
    faster than 8, so the default stays at 8 (`--jobs` goes to 16)."""
    if backend == "gpu":
        return max(1, min(8, (os.cpu_count() or 4) // 2))
    return 2


TIMES_FILE = "dev-check-times.json"
# Without a recorded time: what a check costs is mostly compiling (twice: the run, then the replay in its own
# cache), and the kernels with a tl.dot or an autotuner compile the longest; solutions also meet every case
# (the huge ones on a GPU). Measured in H200 run 2026-12-02 (907ab44): matmul-bias solution 64 s, autotune solution 46 s,
# attention-forward 30-37 s, the 1-D and 2-D exercises 1-8 s, an example 0.2-4 s.
GUESS_S = {"heavy": 30.0, "solution": 6.0, "starter": 4.0, "example": 2.0}


def guess_seconds(kind: str, path: Any) -> float:
    """How long an item of dev check is expected to take when no earlier run recorded it."""
    if kind == "example":
        return GUESS_S["example"]
    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    heavy = "tl.dot(" in text or "triton.autotune" in text
    return GUESS_S[kind] + (GUESS_S["heavy"] if heavy else 0.0)


def recorded_times(backend: str) -> dict[str, float]:
    """The seconds each item took in this machine's last dev check on ``backend`` (none: an empty dict)."""
    try:
        data = json.loads((config.home() / TIMES_FILE).read_text())
        times = data.get(backend, {})
        return {str(k): float(v) for k, v in times.items() if isinstance(v, (int, float))}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def record_times(backend: str, rows: list[dict]) -> None:
    """Keep each item's seconds for the next run's order (longest first); failing to write costs only that."""
    path = config.home() / TIMES_FILE
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    known = data.get(backend) if isinstance(data.get(backend), dict) else {}
    data[backend] = known | {r["item"]: r["seconds"] for r in rows}  # a run of a few (--only) keeps the rest
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass


def longest_first(estimates: dict[str, float]) -> list[str]:
    """Items by expected seconds, longest first (list scheduling's LPT rule: the long poles start at once and the
    short items fill the slots around them); ties keep their given order."""
    return sorted(estimates, key=lambda name: -estimates[name])


def run_dev_check(
    out: Any,
    json_out: bool = False,
    only: list[str] | None = None,
    backend: str = "interpreter",
    jobs: int | None = None,
) -> list[str]:
    """Every starter fails and every solution passes, checked `jobs` at a time through one warm Service (one
    zygote, its warm pool sized to match; a Triton cache per exercise, shared by its starter's and solution's
    runs and kept for the next dev check); then quizzes (in this process, meanwhile) and examples. Rows print
    in course order."""
    from tritonlab.service import Service

    problems: list[str] = []
    rows: list[dict] = []
    try:
        course = load_course()
    except CourseError as exc:
        problems.append(str(exc))
        _report(out, json_out, rows, problems)
        return problems
    unknown = sorted(set(only or ()) - {exercise.id for exercise in course.exercises()})
    if unknown:  # a typo must not check nothing and pass
        known = ", ".join(exercise.id for exercise in course.exercises())
        problems.append(f"--only names no exercise of the course: {', '.join(unknown)} (known: {known})")
        _report(out, json_out, rows, problems)
        return problems
    began = time.monotonic()
    service = Service(backend=backend)
    service.slots = max(1, jobs or default_jobs(service.backend))
    service.warm_up()
    items = [
        (exercise, kind, path, want)
        for exercise in course.exercises()
        if not only or exercise.id in only
        for kind, path, want in (("solution", exercise.solution, True), ("starter", exercise.starter, False))
    ]
    examples_wanted = [] if only else [(lesson, ex) for lesson in course.lessons for ex in lesson.examples]
    names = [f"{exercise.id} {kind}" for exercise, kind, _, _ in items]
    example_names = [f"example {lesson.id}/{example.file.name}" for lesson, example in examples_wanted]
    recorded = recorded_times(service.backend)
    estimates = {
        name: recorded.get(name, guess_seconds(kind, path))
        for name, (_, kind, path, _) in zip(names, items, strict=True)
    } | {
        name: recorded.get(name, guess_seconds("example", example.file))
        for name, (_, example) in zip(example_names, examples_wanted, strict=True)
    }
    try:
        with ThreadPoolExecutor(max_workers=service.slots) as pool:
            # Longest first, by this machine's last run (TRITONLAB_HOME/dev-check-times.json) or, the first
            # time, by a guess from the file (a tl.dot or an autotuner: a long compile): the heaviest checks
            # start at once and the short ones fill in around them. Rows are still reported in course order.
            futures: dict[str, Future] = {}
            for name in longest_first(estimates):
                if name in example_names:
                    example = examples_wanted[example_names.index(name)][1]
                    future = pool.submit(service.run_file, example.file, timeout=120)
                else:
                    exercise, kind, path, _ = items[names.index(name)]
                    future = pool.submit(
                        service.check,
                        exercise,
                        file=path,
                        record=False,
                        speed=False,
                        # on a GPU, solutions also meet the ≥ 2³¹-element cases of the 1-D exercises
                        # (grading/huge.py)
                        huge=service.backend == "gpu" and kind == "solution",
                        # a compile cache per exercise (its starter and solution): checks at once no longer
                        # fill one shared cache, which no run leaves idle long enough to be emptied
                        cache_key=f"dev-{exercise.id}",
                    )
                # with --json, one line per finished item on stderr, in the order they end (stdout: the report)
                if json_out:
                    future.add_done_callback(lambda done, name=name: _progress(name, done, began))
                futures[name] = future
            checks = [futures[name] for name in names]
            examples = [
                (lesson, example, futures[name])
                for name, (lesson, example) in zip(example_names, examples_wanted, strict=True)
            ]
            if not only:
                quiz_rows: list[dict] = []  # meanwhile, in this thread; reported after the checks
                quiz_problems = check_quizzes(course, out, True, quiz_rows)
            for (exercise, kind, path, want), future in zip(items, checks, strict=True):
                verdict = future.result()
                ok = verdict.passed == want
                row = {
                    "item": f"{exercise.id} {kind}",
                    "ok": ok,
                    "seconds": round(verdict.duration_s, 2),
                    "seed": verdict.seed,
                }
                if not ok:
                    detail = (
                        verdict.failures[0].kind + ": " + verdict.failures[0].message
                        if verdict.failures
                        else ""
                    )
                    problems.append(
                        f"{path}: the {kind} should {'pass' if want else 'fail'} but "
                        f"{'failed' if want else 'passed'} (seed {verdict.seed}) {detail}"
                    )
                if not json_out:
                    mark = "[green]✔[/]" if ok else "[red]✘[/]"
                    out.print(f"{mark} {row['item']} ({row['seconds']} s)")
                rows.append(row)
            if not only:
                for row in quiz_rows:
                    if not json_out:
                        out.print(("[green]✔[/]" if row["ok"] else "[red]✘[/]") + f" {row['item']}")
                rows += quiz_rows
                problems += quiz_problems
                problems += report_examples(examples, out, json_out, rows)
            ran = [f for _, _, f in examples]
            record_times(service.backend, _item_seconds(names, checks) + _item_seconds(example_names, ran))
    finally:
        service.close()
    _report(out, json_out, rows, problems)
    return problems


def _item_seconds(names: list[str], futures: list[Future]) -> list[dict]:
    """The seconds of each item that finished: a verdict's duration, an example's run time."""
    rows = []
    for name, future in zip(names, futures, strict=True):
        if future.exception() is None:
            result = future.result()
            seconds = result.duration_s if hasattr(result, "duration_s") else result[0].seconds
            rows.append({"item": name, "seconds": round(seconds, 2)})
    return rows


PROGRESS_TIMINGS = ("queue_wait_s", "cases_s", "check_run_s", "replay_s", "judge_s", "compile_s")


def _progress(name: str, done: Future, began: float) -> None:
    line: dict = {"done": name, "at_s": round(time.monotonic() - began, 2)}
    if done.exception() is not None:
        line["error"] = str(done.exception())[:300]
    elif hasattr(done.result(), "timings"):
        verdict = done.result()
        timings = {k: round(v, 2) for k, v in verdict.timings.items() if k in PROGRESS_TIMINGS}
        line |= {"passed": verdict.passed, "seconds": round(verdict.duration_s, 2), "timings": timings}
    print(json.dumps(line), file=sys.stderr, flush=True)


def check_quizzes(course: Any, out: Any, json_out: bool, rows: list[dict]) -> list[str]:
    from tritonlab.cli.quiz import bank_answer_problems

    problems = []
    for lesson in course.lessons:
        path = lesson.dir / "quiz.en.toml"
        # Validation, numeric answers recomputed from answer_code, code questions run on the interpreter.
        found = bank_answer_problems(path) if path.is_file() else [f"{path}: quiz is missing"]
        problems += found
        rows.append({"item": f"quiz {lesson.id}", "ok": not found})
        if not json_out:
            out.print(("[green]✔[/]" if not found else "[red]✘[/]") + f" quiz {lesson.id}")
    return problems


def report_examples(examples: list, out: Any, json_out: bool, rows: list[dict]) -> list[str]:
    """The lessons' examples, run in the sandbox (futures of `Service.run_file`), in course order."""
    problems = []
    for lesson, example, future in examples:
        result, error = future.result()
        ok = error is None and result.exit_code == 0 and not result.timed_out
        if not ok:
            why = f"{error['type']}: {error['message']}" if error else f"exit {result.exit_code}"
            problems.append(f"{example.file}: example failed ({why})")
        rows.append({"item": f"example {example.file.name}", "ok": ok, "seconds": round(result.seconds, 2)})
        if not json_out:
            out.print(
                ("[green]✔[/]" if ok else "[red]✘[/]") + f" example {lesson.id}/{example.file.name}"
                f" ({result.seconds:.1f} s)"
            )
    return problems


def _report(out: Any, json_out: bool, rows: list[dict], problems: list[str]) -> None:
    if json_out:
        print(json.dumps({"ok": not problems, "items": rows, "problems": problems}, indent=2))
        return
    for p in problems:
        out.print(f"[red]problem:[/] {p}", markup=False)
    out.print("[bold green]course OK[/]" if not problems else f"[bold red]{len(problems)} problem(s)[/]")
