"""One Service per notebook kernel, and the files `%%check` cells become.

A cell's code is written, unchanged, to `<session folder>/<exercise>/<module>.py` and checked through
`Service.check` — the same sandboxed child, grader and progress store as `tritonlab check`. Line N of that
file is line N + `offset` of the cell (`offset` = 1 under `%%check`, whose first line is the magic itself), so
a failure's "file:line" can be shown as a line of the cell.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tritonlab.models import Exercise, Verdict
    from tritonlab.service import Service

_LOCK = threading.Lock()
_SESSION: Session | None = None


@dataclass(frozen=True)
class Source:
    """The learner's code as checked: the file, its text, and how file lines map to cell lines."""

    path: Path
    text: str
    offset: int  # cell line = file line + offset
    from_cell: bool  # True: the code came from a cell or a string, not from a file of the learner's


@dataclass(frozen=True)
class CheckResult:
    exercise: Exercise
    verdict: Verdict
    source: Source
    sandbox_note: str  # non-empty the first time a check ran without the hardened sandbox layer


class Session:
    def __init__(self, lang: str | None = None, backend: str | None = None) -> None:
        self.lang = lang
        self.backend = backend
        self._service: Service | None = None
        self._folder: Path | None = None
        self.last_file: dict[str, Path] = {}  # exercise id -> the file its last check used
        self._told_about_sandbox = False

    @property
    def service(self) -> Service:
        if self._service is None:
            from tritonlab.service import Service

            self._service = Service(backend=self.backend, lang=self.lang)
        return self._service

    @property
    def language(self) -> str:
        """The language of what the notebook shows: the service's, or the one it will have."""
        if self._service is not None:
            return self._service.lang
        from tritonlab import config

        return config.language(self.lang)

    @property
    def folder(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="tritonlab-cells-"))
        return self._folder

    def exercise(self, exercise_id: str) -> Exercise:
        """The exercise, or KeyError with the known ids in its message."""
        try:
            return self.service.exercise(exercise_id)
        except KeyError:
            from tritonlab.i18n import t

            known = ", ".join(e.id for e in self.service.course.exercises())
            raise KeyError(
                t("notebook.unknown_exercise", self.language, exercise=repr(exercise_id), known=known)
            ) from None

    def write_cell(self, exercise: Exercise, code: str, offset: int) -> Source:
        folder = self.folder / exercise.id
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{exercise.module_name}.py"
        path.write_text(code, encoding="utf-8")
        return Source(path, code, offset, True)

    def source_for(self, exercise: Exercise, source_or_path: str | Path, offset: int = 0) -> Source:
        """A Path, or a one-line string ending in .py, is the learner's file; any other string is code."""
        text = source_or_path.strip() if isinstance(source_or_path, str) else ""
        if isinstance(source_or_path, Path) or ("\n" not in text and text.endswith(".py")):
            path = Path(text) if text else Path(source_or_path)
            if not path.is_file():
                from tritonlab.i18n import t

                raise FileNotFoundError(t("notebook.missing_file", self.language, path=path))
            path = path.resolve()
            return Source(path, path.read_text(encoding="utf-8", errors="replace"), 0, False)
        return self.write_cell(exercise, source_or_path, offset)

    def check(
        self, exercise_id: str, source_or_path: str | Path, *, seed: int | None = None, offset: int = 0
    ) -> CheckResult:
        exercise = self.exercise(exercise_id)
        source = self.source_for(exercise, source_or_path, offset)
        service = self.service
        verdict = service.check(exercise, file=source.path, seed=seed)
        self.last_file[exercise.id] = source.path
        return CheckResult(exercise, verdict, source, self.sandbox_note())

    def sandbox_note(self) -> str:
        """Once per session: say so when the sandbox could not add its hardened layer on this machine."""
        service = self._service
        if self._told_about_sandbox or service is None or service.hardened is not False:
            return ""
        from tritonlab.i18n import t

        self._told_about_sandbox = True
        reason = service.hardened_reason or t("notebook.sandbox_unknown", service.lang)
        return t("notebook.sandbox_note", service.lang, reason=reason)

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def get_session() -> Session:
    global _SESSION
    with _LOCK:
        if _SESSION is None:
            _SESSION = Session()
            atexit.register(_SESSION.close)
        return _SESSION
