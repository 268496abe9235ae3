"""Triton compile caches for runs: one per learner, one for the grader's trusted children.

Compiling a kernel (TTIR → PTX → cubin, and the C launcher Triton builds with the host compiler) costs a second or
more per kernel and signature on a GPU host; a check is three runs (the learner's code, the replay of its
launches, the timing run), so without a cache between runs a check pays for every compile three times. A cache
between runs is also a place to plant a binary: whoever can write an entry under a key decides what a later
process that compiles that key runs. So:

- `learner` (per learner: `learner-<key>` in a classroom): the runs that execute the learner's own Python
  (check, run, viz, bench, inspect). What a learner plants there only ever reaches that learner's own runs.
- `replay`: the grader's children that never import a learner's file (the replay of recorded launches, the
  trusted compile of occupancy). No run of learner code is ever given this cache, so a binary planted by one
  cannot reach the replay that checks the work was done. Nor does the replay ever read a learner's cache, even
  for a kernel whose text is the same: Triton's key names the source, but an entry holds whatever its writer
  put there, and the check child runs learner code that can write a correct kernel's binary under the key of
  its own kernel that does no work. (Issue 40 measured the cost: an edited matmul compiled once in each child,
  H200 run 2026-12-04 (58448a1).)

Layer 1: folders under TRITONLAB_HOME (`triton-cache`, `triton-cache-replay/`); a run there has the user's own
rights, so the split keeps honest runs apart but is no wall (docs/grader.md). Hardened: folders under the runs
folder's `.triton/`, owned by the sandbox user, each a capped tmpfs when the server runs as root
(runfolder.cap); a run binds exactly one of them, at the cache's own path (jail.isolate_run), and sees no other.
A cache that is nearly full is emptied before its next run starts (never under a run that uses it): a cache is
only a cache, and a learner who fills theirs slows only their own next compile.

Hardened with a pool, each warm child is bound ahead to one cache; `warm_plan` says how many each cache gets
(in a class, a learner's cache only while their check waits for its slot: sandbox.Zygote.expect).

One compile for both (`copy_entries`): entries go the other way only, from the replay's cache into one
learner's. The trusted precompile compiles the learner's own kernel text (as the check child's import builds
it: the same keys), and the parent copies exactly those entries into that learner's cache, so the check child
finds them instead of compiling them again. That gives a learner nothing they could not compile themselves,
and nothing a learner writes ever reaches the replay's cache. The learner's cache is theirs to write: the copy
never follows a link there, never replaces a file, and writes each entry's group file (the file listing that
entry's other files by path, which Triton reads first) last, pointing at the copies. An entry the replay or
the trusted timing run stored without its IR stages (runs/zygote.py `BINARY_ONLY_MODES`) is never copied: a
learner's code may read any stage of a kernel it compiled, so that kernel is compiled in their own run.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import stat
from pathlib import Path

from tritonlab import config
from tritonlab.runs import rundir, runfolder

LEARNER, REPLAY = "learner", "replay"
# modes that run no learner Python: the only ones a run with the replay cache may serve (runs/zygote.py)
TRUSTED_MODES = frozenset({"replay", "compile", "speed", "precompile"})
CACHE_BYTES = {LEARNER: 128 << 20, REPLAY: 512 << 20}
CACHE_FILES = 20_000
NEARLY_FULL = 0.8  # emptied when this share of its bytes or files is used
_NAME = re.compile(r"^(learner|replay)(-[A-Za-z0-9_]{1,64})?$")
ENTRY = re.compile(r"^[A-Za-z0-9_-]{16,128}$")  # a compiled kernel's folder (Triton: its key's hash)
ENTRY_FILE = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
ENTRY_FILES = 64  # files one entry may have (Triton writes about ten: each stage's IR, the binary, metadata;
# four when a trusted run stores the binary only, runs/zygote.py BINARY_ONLY_MODES)
GROUP = "__grp__"
IR_SUFFIXES = (".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn")  # stages a binary-only entry lacks


def kind(name: str) -> str:
    """`learner` or `replay` for a cache name (`learner-<key>` is a learner's)."""
    check_name(name)
    return name.split("-", 1)[0]


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"not a run cache name: {name!r} (learner, learner-KEY or replay)")
    return name


def learner_name(key: str | int | None) -> str:
    """The cache name of one learner (None: this machine's one user)."""
    if key is None or key == "":
        return LEARNER
    safe = re.sub(r"[^A-Za-z0-9_]", "_", str(key))[:64]
    return f"{LEARNER}-{safe}"


def folder(name: str, hardened: bool) -> Path:
    """The cache folder for `name`, made on first use (see the module docstring for where)."""
    check_name(name)
    if not hardened:
        if name in (LEARNER, REPLAY):
            return config.triton_cache_dir(name)
        path = (
            config.triton_cache_dir(LEARNER) / name
        )  # one learner of a class: a folder in the learners' cache
        path.mkdir(mode=0o700, exist_ok=True)
        return path
    from tritonlab.runs import hardening

    root = hardening.runs_folder() / ".triton"
    root.mkdir(mode=0o711, exist_ok=True)
    os.chmod(root, 0o711)
    path = root / name
    if not path.is_dir() or path.is_symlink():
        if path.is_symlink():
            path.unlink()
        path.mkdir(mode=0o700, exist_ok=True)
    if not os.path.ismount(path):
        runfolder.cap(path, size=CACHE_BYTES[kind(name)], files=CACHE_FILES)
    hardening.prepare_run_dir(path)  # the sandbox user's, private to it
    return path


def nearly_full(path: Path) -> bool:
    """Does this cache need emptying before its next run? (A capped tmpfs: its own counters; a plain folder:
    counted, at most CACHE_FILES entries looked at.)"""
    try:
        if os.path.ismount(path):
            st = os.statvfs(path)
            used_bytes = 1 - st.f_bavail / max(1, st.f_blocks)
            used_files = 1 - st.f_favail / max(1, st.f_files)
            return max(used_bytes, used_files) >= NEARLY_FULL
        limit = CACHE_BYTES[kind(path.name)] if _NAME.match(path.name) else CACHE_BYTES[LEARNER]
        count, size = 0, 0
        for root, dirs, names in os.walk(path):
            count += len(dirs) + len(names)
            for n in names:
                try:
                    size += os.lstat(os.path.join(root, n)).st_size
                except OSError:
                    pass
            if count >= CACHE_FILES * NEARLY_FULL or size >= limit * NEARLY_FULL:
                return True
    except OSError:
        return False
    return False


def empty(path: Path) -> None:
    """Remove everything in a cache folder (the folder and its mount stay), never following a symlink."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        target = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                target.unlink()
            except OSError:
                pass


def warm_plan(
    recent: list[str], size: int, expected: list[str] | tuple[str, ...] = ()
) -> collections.Counter:
    """How many warm children each compile cache gets out of `size` (hardened), from the names asked for most
    recently first and those `expected` soon (a check waiting for its slot: sandbox.Zygote.expect): half for
    the replay's (every check's second run), the rest for the learners'. While the recent learners fit in
    that rest (one user; dev check, which checks several files at once; a small group), they get it in turn,
    expected ones first. A class has more learners than warm places, and a child warmed for a learner who does
    not check next is dropped unused (its start spent for nothing: benchmarks/warm_plan.py measured about one
    a check with 60 learners), so then only expected learners get one each, and the replay's share takes
    what they leave. A single child (a forced TRITONLAB_POOL=1) goes to the cache asked for last."""
    plan: collections.Counter = collections.Counter()
    if size == 1:  # one child (TRITONLAB_POOL=1 only): for the cache asked for last
        plan[recent[0] if recent else LEARNER] = 1
        return plan
    if size < 2:
        return plan
    replay = size // 2
    share = size - replay
    announced = list(dict.fromkeys(n for n in expected if n != REPLAY))
    learners = list(dict.fromkeys(n for n in recent if n != REPLAY)) or [LEARNER]
    if len(learners) > share:  # a class: only those announced
        for name in announced[:share]:
            plan[name] += 1
        plan[REPLAY] = size - sum(plan.values())
        return plan
    order = list(dict.fromkeys([*announced, *learners]))
    plan[REPLAY] = replay
    for i in range(share):
        plan[order[i % len(order)]] += 1
    return plan


def kernels_in(path: Path | str) -> int:
    """How many compiled kernels the cache folder `path` holds (entries with a group file: a launcher's entry,
    the C stub Triton builds for each argument signature at a kernel's first launch, has none). OSError when
    it cannot be read."""
    return sum(
        1
        for e in os.scandir(path)
        if ENTRY.match(e.name)
        and e.is_dir(follow_symlinks=False)
        and any(f.name.startswith(GROUP) for f in os.scandir(e.path))
    )


def kernel_count(name: str, hardened: bool) -> int | None:
    """`kernels_in` the cache `name`, None when it cannot be read. A check counts them around its check
    child: the kernels that child compiled itself."""
    try:
        return kernels_in(folder(name, hardened))
    except (OSError, ValueError):
        return None


def copy_entries(source: Path, dest: Path, names: list[str], budget: int = CACHE_BYTES[LEARNER] // 4) -> int:
    """Copy the compiled kernels `names` from the cache `source` (the replay's: trusted) into `dest` (a
    learner's: theirs to write, so hostile) and return how many entries now have a group file there that the
    copy wrote. An entry already in `dest` with its group file is left as it is; a name that is not an entry's,
    a link or anything but a folder where an entry goes in `dest`, or a full cache stop that entry (see the
    module docstring). At most `budget` bytes in all; files take `dest`'s owner (the sandbox user)."""
    copied = 0
    try:
        dest_fd = open_entry(dest)
    except OSError:
        return 0
    try:
        owner = os.fstat(dest_fd)
        for name in dict.fromkeys(names):
            if not isinstance(name, str) or not ENTRY.match(name):
                continue
            try:
                size = _copy_entry(source / name, dest, dest_fd, name, owner, budget)
            except (
                OSError,
                ValueError,
            ):  # the learner's cache full, a link where the entry goes, a bad group
                continue
            if size:
                copied += 1
                budget -= size
            if budget <= 0:
                break
    finally:
        os.close(dest_fd)
    return copied


def _copy_entry(src: Path, dest: Path, dest_fd: int, name: str, owner: os.stat_result, budget: int) -> int:
    """One entry (see copy_entries); the bytes written, 0 when nothing was."""
    files = sorted(
        e.name for e in os.scandir(src) if e.is_file(follow_symlinks=False) and ENTRY_FILE.match(e.name)
    )[:ENTRY_FILES]
    groups = [f for f in files if f.startswith(GROUP)]
    if not groups:
        return 0  # an entry Triton has not finished writing
    if not any(f.endswith(IR_SUFFIXES) for f in files):
        return 0  # stored without its stages (a replay's): a learner's code may read them, so it compiles its own
    try:
        os.mkdir(name, 0o755, dir_fd=dest_fd)
        made = True
    except FileExistsError:
        made = False
    entry_fd = open_entry(name, dest_fd)
    try:
        if made:
            own(entry_fd, owner)
        if all(_exists(g, entry_fd) for g in groups):
            return 0  # compiled there already
        written = 0
        # the group files last: Triton reads them first
        for f in [f for f in files if f not in groups] + groups:
            if _exists(f, entry_fd):
                continue
            if f in groups:
                data = _group_for(src / f, dest / name, files)
            else:
                data = read_plain(src / f, budget - written)
            written += len(data)
            if written > budget:
                raise OSError("over the copy's budget")
            write_new(entry_fd, f, data, owner)
        return written
    finally:
        os.close(entry_fd)


def open_entry(name: str | Path, dest_fd: int | None = None) -> int:
    """A folder of a learner's cache, opened without following a link there (a link: OSError): the cache itself,
    or with `dest_fd` (the cache, opened so) one entry's folder in it."""
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dest_fd)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def read_plain(path: Path, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a file: {path.name}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max(0, limit) + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError("over the copy's budget")
    return data


def _group_for(path: Path, entry: Path, files: list[str]) -> bytes:
    """A group file (`{"child_paths": {file: absolute path}}`) with each path moved to the copy's folder; only
    files of this entry are named."""
    data = rundir.read_json(path, max_bytes=1 << 16)  # never through a link, capped, depth-checked
    children = data.get("child_paths") if isinstance(data, dict) else None
    if not isinstance(children, dict):
        raise OSError("not a group file")
    moved = {}
    for child in children:
        if not isinstance(child, str) or child not in files or child.startswith(GROUP):
            raise OSError("a group file names a file the entry does not have")
        moved[child] = str(entry / child)
    return json.dumps({"child_paths": moved}).encode()


def write_new(dir_fd: int, name: str, data: bytes, owner: os.stat_result) -> None:
    """Write `name` in the folder `dir_fd` through a new temporary file, then rename it into place."""
    tmp = f".copy-{os.getpid()}-{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            own(fd, owner)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def own(fd: int, owner: os.stat_result) -> None:
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
        os.fchown(fd, owner.st_uid, owner.st_gid)
