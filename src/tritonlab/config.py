"""Where things live, and the environment variables that move them.

TRITONLAB_HOME    data directory (progress database, caches); default: the platform's user data dir
TRITONLAB_COURSE  course folder; default: the repo's course/ (editable install) or the packaged copy
TRITONLAB_BACKEND auto | interpreter | gpu (default auto)
TRITONLAB_LANG    en | pt | es (default: from the system locale, else en)
"""

from __future__ import annotations

import os
from pathlib import Path

LANGUAGES = ("en", "pt", "es")
BACKENDS = ("auto", "interpreter", "gpu")
# The largest learner file accepted (a save, a check's text): the workspace enforces it, the web sizes bodies by it.
MAX_SOURCE_BYTES = 512 * 1024


def home() -> Path:
    env = os.environ.get("TRITONLAB_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("tritonlab", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def course_dir() -> Path:
    env = os.environ.get("TRITONLAB_COURSE")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent
    repo_course = here.parent.parent / "course"  # src/tritonlab -> repo root
    if (repo_course / "course.toml").is_file():
        return repo_course
    return here / "course"  # the wheel's copy


def database_path() -> Path:
    return home() / "progress.sqlite3"


def runs_dir() -> Path:
    path = home() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def triton_cache_dir() -> Path:
    path = home() / "triton-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_backend() -> str:
    value = os.environ.get("TRITONLAB_BACKEND", "auto").strip().lower()
    return value if value in BACKENDS else "auto"


def language(explicit: str | None = None) -> str:
    """The learner's language: --lang, then TRITONLAB_LANG, then the locale, else English."""
    for candidate in (explicit, os.environ.get("TRITONLAB_LANG")):
        if candidate:
            code = candidate.strip().lower()[:2]
            if code in LANGUAGES:
                return code
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        code = os.environ.get(var, "").strip().lower()[:2]
        if code in LANGUAGES:
            return code
    return "en"
