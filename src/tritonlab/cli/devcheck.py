"""`tritonlab dev check`: prove the course is sound — what `tests/test_content.py` and CI rely on.

Every starter fails its check, every solution passes, every quiz bank validates, every example runs.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tritonlab.content.course import CourseError, load_course


def default_jobs(backend: str) -> int:
    """Checks at once: on a GPU one per four CPU cores (the parent makes each check's cases and judges its
    outputs in NumPy), at most 4 (each run holds a CUDA context and its cases in GPU memory, a few GB at
    most: far below a datacenter GPU's, and a desktop GPU still fits 2); on the interpreter the service's own
    two runs at once."""
    if backend == "gpu":
        return max(1, min(4, (os.cpu_count() or 4) // 4))
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
            # they start early and the light ones fill the gaps; rows are still reported in course order.
            submitted = {
                index: pool.submit(
                    service.check,
                    items[index][0],
                    file=items[index][2],
                    record=False,
                    speed=False,
                    # on a GPU, solutions also meet the ≥ 2³¹-element cases of the 1-D exercises (grading/huge.py)
                    huge=service.backend == "gpu" and items[index][1] == "solution",
                )
                for index in reversed(range(len(items)))
            }
            checks = [submitted[index] for index in range(len(items))]
            examples = []
            if not only:
                examples = [
                    (lesson, example, pool.submit(service.run_file, example.file, timeout=120))
                    for lesson in course.lessons
                    for example in lesson.examples
                ]
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
