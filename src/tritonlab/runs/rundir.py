"""What the parent does with a run directory the learner's code had write access to (sandbox layer 1).

Before a run: a learner file the hardened sandbox cannot see is copied in. After it, before the parent reads
anything there: links, FIFOs, sockets, devices and hard links are removed, and result.json may only name plain
output files inside the directory, so the parent never follows, blocks on or reads what a run planted
(the Judge0 escape, CVE-2024-28185). Messages then name the learner's original file again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

RESULT_FILES = ("result.json", "error.json")
MAX_RESULT_BYTES = 16 << 20
OUTPUT_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.npy$")
TAMPERED = {
    "type": "TamperedResult",
    "message": "the run rewrote its result files (an output names a file that is missing, outside the run "
    "directory, or not a plain file)",
    "where": "",
    "source": "",
    "hint": "",
    "traceback": "",
}


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def expose_learner_file(
    run_dir: Path, visible: list[Path], hand_over: Callable[[Path], None]
) -> dict[str, str]:
    """Copy a learner file that lies outside every folder the sandbox shows into the run directory and point
    the job at the copy. Returns {copy path: original path}, so that messages can name the original."""
    job_path = run_dir / "job.json"
    job = json.loads(job_path.read_text())
    original = Path(job["file"]).resolve()
    if any(inside(original, root) for root in visible):
        return {}
    folder = run_dir / "learner"
    folder.mkdir()
    copy = folder / original.name
    shutil.copyfile(original, copy)
    hand_over(folder)
    hand_over(copy)
    job["file"] = str(copy)
    job_path.write_text(json.dumps(job))
    return {str(copy): str(original)}


def restore_names(run_dir: Path, renamed: dict[str, str]) -> None:
    """Name the learner's original file (not its copy) in the run's result files."""
    if not renamed:
        return
    for name in RESULT_FILES:
        path = run_dir / name
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RESULT_BYTES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for copy, original in renamed.items():
            text = text.replace(json.dumps(copy)[1:-1], json.dumps(original)[1:-1])
        path.write_text(text, encoding="utf-8")


def sanitize(run_dir: Path) -> list[str]:
    """Remove from the run directory's top level everything but plain, singly-linked files and folders.
    Returns the names removed."""
    removed = []
    try:
        entries = list(os.scandir(run_dir))
    except OSError:
        return removed
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        plain = stat.S_ISREG(st.st_mode) and st.st_nlink == 1
        if not plain and not stat.S_ISDIR(st.st_mode):
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except OSError:
                pass
    vet_result(run_dir)
    return removed


def _plain_output(run_dir: Path, name: object) -> bool:
    if not isinstance(name, str) or not OUTPUT_NAME.match(name):
        return False
    st = os.lstat(run_dir / name) if (run_dir / name).exists() else None
    return st is not None and stat.S_ISREG(st.st_mode)


def vet_result(run_dir: Path) -> None:
    """result.json is written where learner code runs: keep only entries the parent can read safely."""
    path = run_dir / "result.json"
    if not path.is_file():
        return
    try:
        if path.stat().st_size > MAX_RESULT_BYTES:
            raise ValueError("too large")
        data = json.loads(path.read_text(encoding="utf-8"))
        cases = data["cases"]
        if not isinstance(data, dict) or not isinstance(cases, list):
            raise ValueError("not a result")
    except (ValueError, KeyError, TypeError, OSError):
        path.unlink()
        return
    changed = False
    for index, entry in enumerate(cases):
        outputs = entry.get("outputs", []) if isinstance(entry, dict) else None
        if not isinstance(outputs, list) or not all(
            isinstance(o, dict) and _plain_output(run_dir, o.get("file")) for o in outputs
        ):
            name = entry.get("name") if isinstance(entry, dict) else None
            cases[index] = {"name": name, "status": "raised", "exception": TAMPERED, "outputs": []}
            changed = True
    if changed:
        path.write_text(json.dumps(data), encoding="utf-8")
