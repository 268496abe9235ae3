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
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

RESULT_FILES = ("result.json", "error.json")
MAX_RESULT_BYTES = 16 << 20
MAX_JSON_DEPTH = 64  # result/error/viz files nest a handful of levels; json.loads recurses per level
NPY_KINDS = "biuf"  # bool, signed, unsigned, float: raw output bits never need anything else
NPY_ITEMSIZES = (1, 2, 4, 8)
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


class Malformed(ValueError):
    """What a run wrote cannot be read safely: too large, too deep, not the declared shape or dtype."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def message(self) -> str:
        return f"the run wrote malformed results: {self.reason}"


def _open_plain(path: Path) -> tuple[int, os.stat_result] | None:
    """A read-only descriptor of a plain file (never a link, FIFO or device), or None when it is missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Malformed(f"{path.name} cannot be opened ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Malformed(f"{path.name} is not a plain file")
    return fd, st


# A JSON string, possessive and ending at the end of the data when unterminated: linear on any input.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays/objects in a JSON text, found without recursion (strings skipped)."""
    bare = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    deepest, level = 0, 0
    for start in range(0, bare.size, 1 << 20):  # in slices: a few MiB of scratch at most
        chunk = bare[start : start + (1 << 20)]
        step = (chunk == ord("[")).astype(np.int32) + (chunk == ord("{"))
        step -= (chunk == ord("]")).astype(np.int32) + (chunk == ord("}"))
        if step.size:
            running = np.cumsum(step, dtype=np.int64) + level
            deepest, level = max(deepest, int(running.max())), int(running[-1])
    return deepest


def read_json(path: Path, max_bytes: int = MAX_RESULT_BYTES, max_depth: int = MAX_JSON_DEPTH) -> object:
    """Parse a JSON file a run wrote, or None when there is none. Raises Malformed (never RecursionError or
    MemoryError) when it is larger than `max_bytes`, nests deeper than `max_depth`, or is not JSON."""
    opened = _open_plain(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        if st.st_size > max_bytes:
            raise Malformed(f"{path.name} is {st.st_size} bytes (at most {max_bytes})")
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise Malformed(f"{path.name} is larger than {max_bytes} bytes")
    if (depth := json_depth(data)) > max_depth:
        raise Malformed(f"{path.name} nests {depth} levels deep (at most {max_depth})")
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"{path.name} is not valid JSON ({type(exc).__name__})") from None


class NpyBudget:
    """How many bytes of arrays the parent still agrees to load from one run. Every read counts, so a file
    named K times costs K times its size."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = self.left = int(max_bytes)

    def take(self, nbytes: int, name: str) -> None:
        if nbytes > self.left:
            raise Malformed(
                f"{name} declares {nbytes} bytes of data; the run may return {self.max_bytes} bytes in all"
            )
        self.left -= nbytes


def npy_header(fd: int, name: str) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """(shape, dtype, fortran_order, data offset) of an .npy file, from its header alone."""
    with os.fdopen(os.dup(fd), "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"version {version}")
        except (ValueError, SyntaxError, TypeError) as exc:
            raise Malformed(f"{name} has no valid .npy header ({exc})") from None
        return tuple(int(d) for d in shape), np.dtype(dtype), bool(fortran), f.tell()


def read_npy(
    path: Path,
    budget: NpyBudget,
    shape: Iterable[int] | None = None,
    itemsize: int | None = None,
) -> np.ndarray:
    """Load an output array without trusting it: the header is read first, and the array is loaded only when
    it is a plain numeric dtype (never objects, so never pickle), has the `shape` and `itemsize` the result
    declared, the file holds that many bytes, and the run's byte budget covers it."""
    name = path.name
    opened = _open_plain(path)
    if opened is None:
        raise Malformed(f"{name} is missing")
    fd, st = opened
    try:
        found, dtype, fortran, offset = npy_header(fd, name)
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in NPY_KINDS:
            raise Malformed(f"{name} holds dtype {dtype.str}, not raw numbers")
        if dtype.itemsize not in NPY_ITEMSIZES or (itemsize is not None and dtype.itemsize != itemsize):
            raise Malformed(f"{name} holds {dtype.itemsize}-byte elements, expected {itemsize}")
        if shape is not None and tuple(shape) != found:
            raise Malformed(f"{name} holds shape {found}, the result declares {tuple(shape)}")
        if any(d < 0 for d in found):
            raise Malformed(f"{name} declares a negative dimension")
        nbytes = int(np.prod(found, dtype=object)) * dtype.itemsize
        budget.take(nbytes, name)
        if st.st_size - offset < nbytes:
            raise Malformed(f"{name} is shorter than its header says")
        data = bytearray(nbytes)
        got = os.preadv(fd, [data], offset) if nbytes else 0
    finally:
        os.close(fd)
    if got != nbytes:
        raise Malformed(f"{name} changed while it was read")
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(found, order="F" if fortran else "C")


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def expose_learner_file(
    run_dir: Path,
    visible: list[Path],
    hand_over: Callable[[Path], None],
    hidden: list[Path] | tuple[Path, ...] = (),
) -> dict[str, str]:
    """Copy a learner file that lies outside every folder the sandbox shows (or is hidden there, like a
    reference solution the server itself checks) into the run directory and point the job at the copy.
    Returns {copy path: original path}, so that messages can name the original."""
    job_path = run_dir / "job.json"
    job = json.loads(job_path.read_text())
    if "file" not in job:
        return {}
    original = Path(job["file"]).resolve()
    if original not in hidden and any(inside(original, root) for root in visible):
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
        data = read_json(path)
    except Malformed:
        return  # left as it is: the reader (the grader) turns it into a verdict, with the reason
    try:
        cases = data["cases"]
        if not isinstance(data, dict) or not isinstance(cases, list):
            raise ValueError("not a result")
    except (ValueError, KeyError, TypeError):
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
