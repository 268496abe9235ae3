"""The learner's workspace: their copies of the starter files. Nothing here ever loses the learner's code.

Layout: DIR/.tritonlab-workspace (marker), DIR/<lesson-id>/<exercise-id>.py, DIR/.backups/ (copies kept
by `reset` and by conflict resolution). Writes never follow symlinks and never leave the workspace.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tritonlab import config
from tritonlab.models import Course, Exercise
from tritonlab.store.disk import DiskFull, is_full

MARKER = config.WORKSPACE_MARKER
locate = config.workspace_root  # the workspace of a folder (kept under its old name)
MAX_SOURCE_BYTES = config.MAX_SOURCE_BYTES
_THREADS = threading.Lock()  # flock is per open file description: threads of one process need this too


class WorkspaceError(Exception):
    pass


class ConflictError(WorkspaceError):
    """The file changed on disk since the editor loaded it; nothing was written."""

    def __init__(self, path: Path, disk_text: str, disk_version: str) -> None:
        self.path, self.disk_text, self.disk_version = path, disk_text, disk_version
        super().__init__(
            f"{path} changed on disk since it was loaded; reload it or save again to overwrite "
            "(the disk version is kept in .backups/)"
        )


def version_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Workspace:
    root: Path
    course: Course

    def path_for(self, exercise: Exercise) -> Path:
        return self.root / exercise.lesson_id / f"{exercise.id}.py"

    def init(self) -> list[Path]:
        """Create the workspace and any missing learner files; existing files are never touched."""
        self.root.mkdir(parents=True, exist_ok=True)
        created = []
        with self._locked():
            marker = self.root / MARKER
            if not marker.exists():
                try:
                    marker.write_text(
                        f'# tritonlab workspace\ncourse = "{self.course.dir}"\n', encoding="utf-8"
                    )
                except OSError as exc:  # a full disk: leave no empty marker behind
                    marker.unlink(missing_ok=True)
                    if is_full(exc):
                        raise DiskFull(
                            exc.errno, f"the disk is full ({exc.strerror}); nothing was saved"
                        ) from exc
                    raise
            for exercise in self.course.exercises():
                if self._create_if_missing(exercise):
                    created.append(self.path_for(exercise))
        return created

    def ensure(self, exercise: Exercise) -> Path:
        path = self.path_for(exercise)
        if not path.exists() and not path.is_symlink():  # cheap check; the decision is taken under the lock
            if not (self.root / MARKER).exists():
                self.init()
            else:
                with self._locked():
                    self._create_if_missing(exercise)
        return path

    def _create_if_missing(self, exercise: Exercise) -> bool:
        """Copy the starter in if the learner's file does not exist. Call with the lock held: checked and
        written unlocked, a file saved meanwhile by another request would be overwritten by the starter."""
        path = self.path_for(exercise)
        if path.exists() or path.is_symlink():
            return False
        self._write(path, exercise.starter.read_text(encoding="utf-8"))
        return True

    def read(self, exercise: Exercise) -> tuple[str, str]:
        path = self.ensure(exercise)
        text = self._read(path)
        return text, version_of(text)

    def save(self, exercise: Exercise, text: str, base_version: str | None, force: bool = False) -> str:
        """Write the learner's code. If the file changed on disk since `base_version`, raise ConflictError."""
        if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise WorkspaceError(f"the code is larger than {MAX_SOURCE_BYTES // 1024} KiB; nothing was saved")
        path = self.ensure(exercise)
        with self._locked():  # compare-and-write is atomic across threads and processes (web + CLI)
            disk = self._read(path)
            disk_version = version_of(disk)
            if base_version and disk_version != base_version and disk != text:
                if not force:
                    raise ConflictError(path, disk, disk_version)
                self.backup(exercise, disk, "overwritten")
            self._write(path, text)
        return version_of(text)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.root / ".tritonlab-lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            with _THREADS:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
        finally:
            os.close(fd)

    def reset(self, exercise: Exercise) -> Path | None:
        """Back up the learner's file, then restore the starter. Returns the backup's path."""
        path = self.path_for(exercise)
        backup = None
        if path.exists():
            backup = self.backup(exercise, self._read(path), "reset")
        self._write(path, exercise.starter.read_text(encoding="utf-8"))
        return backup

    def backup(self, exercise: Exercise, text: str, why: str) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.root / ".backups" / f"{exercise.id}-{stamp}-{why}-{version_of(text)[:6]}.py"
        self._write(target, text)
        return target

    # ---- safe file access -------------------------------------------------------------------------------

    def _inside(self, path: Path) -> Path:
        root = self.root.resolve()
        parent = path.parent.resolve()
        if parent != root and root not in parent.parents:
            raise WorkspaceError(f"{path} is outside the workspace {root}; nothing was written")
        return path

    def _read(self, path: Path) -> str:
        self._inside(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
        return data.decode("utf-8", errors="replace")

    def _write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._inside(path)
        if path.is_symlink():
            raise WorkspaceError(f"{path} is a symbolic link; tritonlab never writes through links")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            try:  # the old file is untouched; the partial copy goes
                os.unlink(tmp)
            except OSError:
                pass
            if is_full(exc):
                raise DiskFull(exc.errno, f"the disk is full ({exc.strerror}); nothing was saved") from exc
            raise
