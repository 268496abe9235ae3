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

from tritonlab.content.course import CourseError, load_course


def default_jobs(backend: str) -> int:
    """Checks at once: on a GPU one per three CPU cores (a check keeps about three busy: its run compiling
    with ptxas, the parent's NumPy judging beside the replay), at most 6 (each run holds a CUDA context and
    its cases in GPU memory, a few GB at most — a huge case tens of GB, on a GPU that has them); on the
    interpreter the service's own two runs at once. On the H200 (16 cores) 4 at a time took 122 s
    (docs/gpu-runs/2026-12-02-round5, call P)."""
    if backend == "gpu":
        return max(1, min(6, (os.cpu_count() or 4) // 3))
    return 2


def run_dev_check(
    out: Any,
    json_out: bool = False,
    only: list[str] | None = None,
    backend: str = "interpreter",
    jobs: int | None = None,
) -> list[str]:
    """Every starter fails and every solution passes, checked `jobs` at a time through one warm Service (one
    zygote, its warm pool sized to match; the learner's Triton cache shared by the runs, so a kernel compiled
    once is reused); then quizzes (in this process, meanwhile) and examples. Rows print in course order."""
    from tritonlab.service import Service

    problems: list[str] = []
    rows: list[dict] = []
    try:
        course = load_course()
    except CourseError as exc:
        problems.append(str(exc))
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
    try:
        with ThreadPoolExecutor(max_workers=service.slots) as pool:
            # Submitted last lesson first: the later exercises are the heavy ones (matmul family, attention), so
            # they start early; the examples (a second or two each) go in after the first half, so that they
            # are not all left for the end (on the H200 they were its last 20 s); the light checks fill the
            # gaps. Rows are still reported in course order.
            def submit(index: int) -> Future:
                exercise, kind = items[index][0], items[index][1]
                future = pool.submit(
                    service.check,
                    exercise,
                    file=items[index][2],
                    record=False,
                    speed=False,
                    # on a GPU, solutions also meet the ≥ 2³¹-element cases of the 1-D exercises (grading/huge.py)
                    huge=service.backend == "gpu" and kind == "solution",
                )
                # with --json, one line per finished check on stderr, in the order they end (stdout: the report)
                if json_out:
                    name = f"{exercise.id} {kind}"
                    future.add_done_callback(lambda done, name=name: _progress(name, done, began))
                return future

            order = list(reversed(range(len(items))))
            half = len(order) // 2
            submitted = {index: submit(index) for index in order[:half]}
            examples = []
            if not only:
                for lesson in course.lessons:
                    for example in lesson.examples:
                        future = pool.submit(service.run_file, example.file, timeout=120)
                        if json_out:
                            name = f"example {lesson.id}/{example.file.name}"
                            future.add_done_callback(lambda done, name=name: _progress(name, done, began))
                        examples.append((lesson, example, future))
            submitted |= {index: submit(index) for index in order[half:]}
            checks = [submitted[index] for index in range(len(items))]
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
    finally:
        service.close()
    _report(out, json_out, rows, problems)
    return problems


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
