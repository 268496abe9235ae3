"""`tritonlab dev check`: prove the course is sound — what `tests/test_content.py` and CI rely on.

Every starter fails its check, every solution passes, every quiz bank validates, every example runs.
"""

from __future__ import annotations

import json
from typing import Any

from tritonlab.content.course import CourseError, load_course


def run_dev_check(
    out: Any, json_out: bool = False, only: list[str] | None = None, backend: str = "interpreter"
) -> list[str]:
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
    service.warm_up()
    try:
        for exercise in course.exercises():
            if only and exercise.id not in only:
                continue
            for kind, path, want in (
                ("solution", exercise.solution, True),
                ("starter", exercise.starter, False),
            ):
                verdict = service.check(exercise, file=path, record=False, speed=False)
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
            problems += check_quizzes(course, out, json_out, rows)
            problems += check_examples(service, course, out, json_out, rows)
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


def check_examples(service: Any, course: Any, out: Any, json_out: bool, rows: list[dict]) -> list[str]:
    problems = []
    for lesson in course.lessons:
        for example in lesson.examples:
            result, error = service.run_file(example.file, timeout=120)
            ok = error is None and result.exit_code == 0 and not result.timed_out
            if not ok:
                why = f"{error['type']}: {error['message']}" if error else f"exit {result.exit_code}"
                problems.append(f"{example.file}: example failed ({why})")
            rows.append(
                {"item": f"example {example.file.name}", "ok": ok, "seconds": round(result.seconds, 2)}
            )
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
