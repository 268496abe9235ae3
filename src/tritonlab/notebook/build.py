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

# How a notebook gets tritonlab where it is not installed (no package-index release: a git URL or a wheel).
REPO_URL = "https://github.com/YOUR-ORG/tritonlab"
INSTALL_CELL = f"""\
# Colab or a fresh environment: install tritonlab first (uncomment one line), then restart the runtime.
# %pip install "tritonlab @ git+{REPO_URL}"
# %pip install tritonlab-0.1.0-py3-none-any.whl   # a wheel you uploaded (build it: pip wheel --no-deps -w dist .)"""
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

    from tritonlab.models import pick

    text_path = lesson.text_path(lang)
    chunks = split_at_headings(text_path.read_text(encoding="utf-8"))
    cells = [
        v4.new_markdown_cell(
            f"**tritonlab · lesson {lesson.number}** — {pick(lesson.summary, lang)}\n\n"
            "Run the cells from the top. `%%check ID` cells grade your kernel in a sandboxed process; "
            "`%hint ID`, `%viz ID` and `%bench ID` (GPU) help along the way. No GPU? Everything but `%bench` "
            "runs on Triton's CPU interpreter."
        ),
        v4.new_code_cell(INSTALL_CELL),
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
        cells.append(
            v4.new_markdown_cell(
                f"## Exercise `{exercise.id}`: {pick(exercise.title, lang)}\n\n{pick(exercise.summary, lang)}\n\n"
                f"Edit the kernel in the next cell and run it: `%%check {exercise.id}` grades the cell's code "
                "on many shapes, dtypes and layouts, and records your progress."
            )
        )
        starter = exercise.starter.read_text(encoding="utf-8").rstrip()
        cells.append(v4.new_code_cell(f"%%check {exercise.id}\n{starter}\n"))
        cells.append(
            v4.new_code_cell(
                f"# Stuck? Uncomment one line:\n# %hint {exercise.id}\n# %viz {exercise.id}\n"
                f"# %bench {exercise.id}   # needs a GPU"
            )
        )
    if lesson.quiz_path(lang).is_file():
        cells.append(v4.new_markdown_cell(f"## Quiz of lesson {lesson.number}"))
        cells.append(v4.new_code_cell(f"tritonlab.notebook.quiz({lesson.number})"))
        cells.append(
            v4.new_code_cell(
                "# Answer one question at a time, with the letter(s) printed above, for example:\n"
                f'# tritonlab.notebook.answer({lesson.number}, "QUESTION-ID", "LETTER")'
            )
        )
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["tritonlab"] = {"lesson": lesson.id, "lang": lang}
    return nb


def example_cells(lesson: Lesson, example: Example, lang: str) -> list[NotebookNode]:
    from nbformat import v4

    from tritonlab.models import pick

    path = Path(example.file)
    code = notebook_code(path.read_text(encoding="utf-8").rstrip())
    return [
        v4.new_markdown_cell(f"**Example `{path.name}`** — {pick(example.title, lang)}"),
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


def smoke_notebook(course: Course, exercise_id: str = "vector-add") -> NotebookNode:
    """The magics end to end: `%%check` with the course's solution (a pass), `%viz` of it, `%%check` with the
    starter (a failing verdict, shown, not raised), `tritonlab.check` from plain Python, `%hint`, `%bench`."""
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
            v4.new_code_cell(f"%%check {exercise.id}\n{starter}\n"),
            v4.new_code_cell(
                f"verdict = tritonlab.check({exercise.id!r}, {starter!r})\n"
                "print('plain python:', verdict.exercise, 'passed' if verdict.passed else 'failed')"
            ),
            v4.new_code_cell(f"%hint {exercise.id}"),
            v4.new_code_cell(f"%bench {exercise.id}"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


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
