"""What a worker must share with its driver before it grades a check from a seed: the same course content and the
same tritonlab code. A worker builds a check's cases itself from (exercise id, seed) and judges them with its own
contracts (docs/scale.md), so a worker whose course or code differs would grade another exercise than the one the
server shows; the driver refuses it (driver.RayPool) and says why.

- `course`: a SHA-256 over `course.toml` and every file under the course's `*/exercises/` folders (the
  exercise's TOML, starter, solution: its `[host]` policy and function name), by relative path.
- `code`: a SHA-256 over every file of the installed `tritonlab` package (its sources: the contracts that make
  the cases and judge them, the harness, the replay), by relative path.

Compiled caches (`__pycache__`, `*.pyc`) are left out: they differ between machines that run the same sources.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from tritonlab import config

SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def _digest(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _plain_files(folder: Path) -> list[Path]:
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and p.suffix != ".pyc" and not SKIP_PARTS & set(p.parts)
    ]


@functools.lru_cache(maxsize=8)
def course_hash(course_dir: Path) -> str:
    """The course's content version: course.toml and every exercise folder's files."""
    files = [p for p in _plain_files(course_dir) if "exercises" in p.relative_to(course_dir).parts[1:2]]
    if (course_dir / "course.toml").is_file():
        files.append(course_dir / "course.toml")
    return _digest(course_dir, files)


@functools.lru_cache(maxsize=2)
def code_hash(package_dir: Path) -> str:
    """The tritonlab code version: every file of the package."""
    return _digest(package_dir, _plain_files(package_dir))


def local() -> dict[str, str]:
    """This process's versions: {"course": ..., "code": ...} (hex digests)."""
    package = Path(config.__file__).resolve().parent
    return {"course": course_hash(config.course_dir()), "code": code_hash(package)}


def differences(mine: dict, theirs: object) -> str:
    """Why a worker reporting `theirs` cannot grade for a driver at `mine` ("" when they agree)."""
    if not isinstance(theirs, dict):
        return "it reported no course or code version (an older tritonlab?)"
    problems = []
    for key, what in (("course", "course content"), ("code", "tritonlab code")):
        other = theirs.get(key)
        if other != mine[key]:
            shown = str(other)[:12] if isinstance(other, str) else "none"
            problems.append(f"its {what} differs (worker {shown}…, this server {mine[key][:12]}…)")
    if not problems:
        return ""
    return (
        "; ".join(problems)
        + ": it would make and judge other cases than this server's. Install the same tritonlab and course on "
        "every node (docs/scale.md)"
    )
