"""The course in Jupyter and Colab: `%load_ext tritonlab`, cell magics, plain-Python calls, lesson notebooks.

Modules:
- `session.py` (PARENT side): one Service per notebook kernel, started on first use and closed at exit; writes a
  `%%check` cell to a file of its own and checks it through `Service.check`, in the same sandbox as the CLI.
- `render.py`: verdicts, hints and messages as HTML, in the session's language (locales `[notebook]`).
  Everything the learner controls is escaped.
- `magics.py`: `%%check EXERCISE`, `%hint`, `%viz`, `%bench` (imports IPython, only when the extension loads).
- `quizzes.py`: `quiz(5)` prints a lesson's questions, `answer(5, "question-id", "b")` grades one through
  `content/quiz` and records it in the progress store.
- `build.py`: a lesson as an `.ipynb` (nbformat): Markdown cells split at headings, the examples, the exercise
  starter in a `%%check` cell, the quiz calls. `tritonlab notebook` (cli/serve.py) writes them.
- `bench.py`: `%bench` on a GPU, through `perf.bench_learner` (the learner's kernel runs in the sandbox via
  `Service.run_job`): the one narrow exception listed in docs/architecture.md.
- `speed.py`: what `%bench` shows: the speed table and this GPU's roofline (SVG), from rows re-read as untrusted.

May import: the service, `content`, `viz`, `config`, `models`, `i18n` (and `perf` from `bench` only).
Importing this package imports neither torch, triton nor IPython.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tritonlab.models import Verdict

__all__ = ["answer", "check", "load_ipython_extension", "quiz"]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext tritonlab` (or `%load_ext tritonlab.notebook`): register the magics. Without a GPU, code
    run in the notebook itself (the lesson's examples) is pointed at Triton's CPU interpreter, unless triton
    was already imported or TRITON_INTERPRET is set."""
    from tritonlab.notebook.magics import register

    register(ipython)
    note = use_interpreter_without_gpu()
    if note:
        print(note)


def use_interpreter_without_gpu() -> str:
    """Set TRITON_INTERPRET=1 where no NVIDIA GPU is visible; returns what it did, in words ("" for nothing)."""
    import os
    import shutil
    import sys

    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return ""
    if shutil.which("nvidia-smi") or Path("/dev/nvidiactl").exists():
        return ""
    os.environ["TRITON_INTERPRET"] = "1"
    from tritonlab.config import language
    from tritonlab.i18n import t

    return t("notebook.interpreter_note", language())


def check(exercise_id: str, source_or_path: str | Path, *, seed: int | None = None) -> Verdict:
    """Check `source_or_path` (a file, or the code itself as text) for an exercise; returns the Verdict.
    The check runs in the sandbox and is recorded in the progress store, like `tritonlab check`."""
    from tritonlab.notebook.session import get_session

    return get_session().check(exercise_id, source_or_path, seed=seed).verdict


def quiz(lesson: int | str) -> None:
    """Print a lesson's quiz questions, with the call that answers each one."""
    from tritonlab.notebook.quizzes import show_quiz

    show_quiz(lesson)


def answer(lesson: int | str, question: str, choice: str | int | float) -> bool:
    """Grade one answer ("b", "2", "a,c" or a number), print the feedback, record it; True when right."""
    from tritonlab.notebook.quizzes import answer_question

    return answer_question(lesson, question, choice)
