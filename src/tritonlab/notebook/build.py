"""A lesson as a Jupyter notebook (nbformat 4), for Jupyter and Colab.

Cells, in order: a title and how to use the notebook; an install cell (commented out: needed in Colab or a
fresh environment); `%load_ext tritonlab`; the lesson text as Markdown cells split at its headings, each
example of lesson.toml as a code cell after the section that first names it (else at the end); then per
exercise its starter under `%%check ID`; then the quiz (questions printed by `tritonlab.notebook.quiz(N)`,
answers graded by `tritonlab.notebook.answer(...)`). Figures the text links to are embedded as attachments, so
a notebook is one self-contained file.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from tritonlab.models import Course, Example, Lesson


# How a notebook gets tritonlab where it is not installed. There is no package-index release and the project
# names no public repository address, so the cell installs a wheel built from a clone (`pip wheel --no-deps -w
# dist .` or `python -m build --wheel`) or the clone itself; docs/notebooks.md says the same.
def install_cell(lang: str) -> str:
    from tritonlab import __version__
    from tritonlab.i18n import t

    return (
        t("notebook.build.install", lang)
        + f"\n# %pip install tritonlab-{__version__}-py3-none-any.whl"
        + "\n# %pip install /path/to/tritonlab"
    )


HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^\s*(```|~~~)")
FIGURE = re.compile(r"\]\((figures/[^)\s]+)\)")
SYS_EXIT = re.compile(r"^(\s*)sys\.exit\((.*)\)\s*$", re.MULTILINE)


def split_at_headings(text: str) -> list[str]:
    """Markdown split before every heading that is not inside a code fence; empty chunks dropped."""
    chunks: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and HEADING.match(line) and any(s.strip() for s in chunks[-1]):
            chunks.append([])
        chunks[-1].append(line)
    return ["\n".join(c).strip() + "\n" for c in chunks if any(s.strip() for s in c)]


def markdown_cell(lesson_dir: Path, text: str) -> NotebookNode:
    """A Markdown cell; figures under the lesson's folder become attachments of the cell."""
    from nbformat import v4

    attachments = {}

    def attach(match: re.Match[str]) -> str:
        rel = match.group(1)
        path = lesson_dir / rel
        mime = mimetypes.guess_type(path.name)[0]
        if not path.is_file() or mime is None or not mime.startswith("image/"):
            return match.group(0)
        attachments[path.name] = {mime: base64.b64encode(path.read_bytes()).decode("ascii")}
        return f"](attachment:{path.name})"

    cell = v4.new_markdown_cell(FIGURE.sub(attach, text).rstrip() + "\n")
    if attachments:
        cell["attachments"] = attachments
    return cell


def notebook_code(example: str) -> str:
    """An example as a notebook runs it: `sys.exit(...)` would stop the cell with an error, so the example's
    exit status is kept in a variable instead."""
    return SYS_EXIT.sub(r"\1_status = \2  # sys.exit(...) in a script; a notebook keeps going", example)


def lesson_notebook(course: Course, lesson: Lesson, lang: str = "en") -> NotebookNode:
    from nbformat import v4

    from tritonlab.i18n import t
    from tritonlab.models import pick

    text_path = lesson.text_path(lang)
    chunks = split_at_headings(text_path.read_text(encoding="utf-8"))
    cells = [
        v4.new_markdown_cell(
            t("notebook.build.intro", lang, number=lesson.number, summary=pick(lesson.summary, lang))
        ),
        v4.new_code_cell(install_cell(lang)),
        v4.new_code_cell(
            (f"%env TRITONLAB_LANG={lang}\n" if lang != "en" else "")
            + "%load_ext tritonlab\nimport tritonlab.notebook"
        ),
    ]
    pending = list(lesson.examples)
    for chunk in chunks:
        cells.append(markdown_cell(lesson.dir, chunk))
        named = [ex for ex in pending if ex.file.name in chunk]
        for example in named:
            pending.remove(example)
            cells += example_cells(lesson, example, lang)
    for example in pending:
        cells += example_cells(lesson, example, lang)
    for exercise in lesson.exercises:
        heading = t("notebook.build.exercise", lang, id=exercise.id, title=pick(exercise.title, lang))
        how = t("notebook.build.exercise_text", lang, id=exercise.id)
        cells.append(v4.new_markdown_cell(f"{heading}\n\n{pick(exercise.summary, lang)}\n\n{how}"))
        starter = exercise.starter.read_text(encoding="utf-8").rstrip()
        cells.append(v4.new_code_cell(f"%%check {exercise.id}\n{starter}\n"))
        cells.append(
            v4.new_code_cell(
                f"{t('notebook.build.stuck', lang)}\n# %hint {exercise.id}\n# %viz {exercise.id}\n"
                f"# %bench {exercise.id}   {t('notebook.build.needs_gpu', lang)}"
            )
        )
    if lesson.quiz_path(lang).is_file():
        cells.append(v4.new_markdown_cell(t("notebook.build.quiz", lang, number=lesson.number)))
        cells.append(v4.new_code_cell(f"tritonlab.notebook.quiz({lesson.number})"))
        letter = t("notebook.quiz.letter", lang)
        cells.append(
            v4.new_code_cell(
                f"{t('notebook.build.quiz_answer', lang)}\n"
                f'# tritonlab.notebook.answer({lesson.number}, "QUESTION-ID", "{letter}")'
            )
        )
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["tritonlab"] = {"lesson": lesson.id, "lang": lang}
    return nb


def example_cells(lesson: Lesson, example: Example, lang: str) -> list[NotebookNode]:
    from nbformat import v4

    from tritonlab.i18n import t
    from tritonlab.models import pick

    path = Path(example.file)
    code = notebook_code(path.read_text(encoding="utf-8").rstrip())
    return [
        v4.new_markdown_cell(
            t("notebook.build.example", lang, file=path.name, title=pick(example.title, lang))
        ),
        v4.new_code_cell(code),
    ]


def file_name(lesson: Lesson, lang: str) -> str:
    return f"{lesson.id}.{lang}.ipynb" if lang != "en" else f"{lesson.id}.ipynb"


def write_lesson(course: Course, lesson: Lesson, out: Path, lang: str = "en") -> Path:
    import nbformat

    nb = lesson_notebook(course, lesson, lang)
    nbformat.validate(nb)
    out.mkdir(parents=True, exist_ok=True)
    path = out / file_name(lesson, lang)
    nbformat.write(nb, str(path))
    return path


ENV_CELL = """\
import json, os, sys
from tritonlab.notebook.session import get_session
_service = get_session().service
_env = {"executable": sys.executable, "version": sys.version.split()[0], "backend": _service.backend,
        "hardened": _service.hardened, "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "")}
if _service.backend == "gpu":
    import torch
    _env["gpu"] = torch.cuda.get_device_name()
print("tritonlab-env: " + json.dumps(_env))"""


def smoke_notebook(course: Course, exercise_id: str = "vector-add") -> NotebookNode:
    """The magics end to end: `%%check` with the course's solution (a pass), `%viz` and `%bench` of it,
    `%%check` with the starter (a failing verdict, shown, not raised), `tritonlab.check` from plain Python,
    `%hint`, and a last cell that prints the kernel's interpreter and backend (`tritonlab-env: {...}`)."""
    from nbformat import v4

    exercise = course.exercise(exercise_id)
    solution = exercise.solution.read_text(encoding="utf-8").rstrip()
    starter = exercise.starter.read_text(encoding="utf-8").rstrip()
    nb = v4.new_notebook(
        cells=[
            v4.new_markdown_cell(f"# `%%check` smoke test: {exercise.id}"),
            v4.new_code_cell("%load_ext tritonlab\nimport tritonlab"),
            v4.new_code_cell(f"%%check {exercise.id}\n{solution}\n"),
            v4.new_code_cell(f"%viz {exercise.id}"),
            v4.new_code_cell(f"%bench {exercise.id}"),
            v4.new_code_cell(f"%%check {exercise.id}\n{starter}\n"),
            v4.new_code_cell(
                f"verdict = tritonlab.check({exercise.id!r}, {starter!r})\n"
                "print('plain python:', verdict.exercise, 'passed' if verdict.passed else 'failed')"
            ),
            v4.new_code_cell(f"%hint {exercise.id}"),
            v4.new_code_cell(ENV_CELL),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


KERNEL_NAME = "tritonlab-run"


def kernelspec_for_this_python(folder: Path) -> str:
    """A kernelspec whose kernel is this very interpreter (`sys.executable -m ipykernel_launcher`), written
    under `folder` and put first on JUPYTER_PATH; returns its name for `execute`. Unlike the default
    `python3` spec it needs no installed kernelspec and no `python` on PATH, and the kernel inherits this
    process's environment (PYTHONPATH included)."""
    import json
    import os
    import sys

    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "tritonlab (this Python)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=1), encoding="utf-8")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (str(folder), os.environ.get("JUPYTER_PATH")) if p
    )
    return KERNEL_NAME


def execute(path: Path, timeout: int = 600, kernel_name: str = "python3") -> NotebookNode:
    """Run a notebook top to bottom in a real kernel (nbclient, a dev dependency); writes the outputs back
    into the file and returns the notebook. A cell that raises raises nbclient's CellExecutionError."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    nbformat.write(nb, str(path))
    return nb
