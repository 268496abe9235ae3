"""`tritonlab notebook LESSON|--all`: write lessons as Jupyter notebooks (.ipynb) to open in Jupyter or Colab.

Registered by tritonlab.cli.app. Importing this module imports neither torch, triton, nbformat nor IPython.
Exit codes: 0 written, 2 usage error (unknown lesson, no lesson given, nbformat missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

HELP = """Write lessons as Jupyter notebooks, to open in Jupyter or Colab (see docs/notebooks.md).

Each notebook holds the lesson text as Markdown cells, its examples as code cells, the exercise starter in a
`%%check` cell and the quiz.

Use the global --lang for the language: `tritonlab --lang pt notebook 5`. --lang after the command works too."""


def register(app: typer.Typer) -> None:
    @app.command("notebook", help=HELP)
    def notebook(
        lesson: Annotated[
            str | None, typer.Argument(metavar="LESSON", help="Lesson number (5) or id (05-vector-add).")
        ] = None,
        all_lessons: Annotated[bool, typer.Option("--all", help="Write every lesson.")] = False,
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the notebooks to.")] = Path(
            "notebooks"
        ),
        lang: Annotated[str | None, typer.Option("--lang", help="Language: en, pt or es.")] = None,
    ) -> None:
        from tritonlab import config
        from tritonlab.cli.common import State, console, fail, make_service

        if (lesson is None) == (not all_lessons):
            raise fail("give one LESSON (for example: tritonlab notebook 5) or --all")
        try:
            from tritonlab.notebook.build import write_lesson
        except ModuleNotFoundError as exc:  # nbformat is a dependency; a broken install says so
            raise fail(f"{exc.name} is not installed: pip install nbformat") from None
        language = config.language(lang or State.lang)
        service = make_service(backend="interpreter")
        if all_lessons:
            lessons = list(service.course.lessons)
        else:
            try:
                lessons = [service.lesson(lesson)]
            except KeyError:
                raise fail(f"no lesson {lesson!r}; lessons are 1 to {len(service.course.lessons)}") from None
        for item in lessons:
            path = write_lesson(service.course, item, out, language)
            console().print(f"wrote {path}")
