"""Run directories, from start to end: each made fresh and named after the process that owns it
(`new_run_dir`), capped (issue 17: each its own tmpfs), removed without following anything a run planted
(`remove_run_dir`), and swept when the process that owned it died (`sweep_stale_runs`).

When the server runs as root (the same condition as per-run cgroups), `new_run_dir()` mounts a tmpfs with
`size=` and `nr_inodes=` on the fresh directory before the parent writes the job into it. The run writes only
there (layer 2 makes the run directory its only writable place), so a flood of files or bytes ends in ENOSPC
inside its own folder, never on the disk that holds the progress database and the workspaces. Its pages are
memory: written by the run, they count against the run's cgroup memory limit too. The parent reads the
results from the mount, then `release()` unmounts it (lazily) and the directory is removed.

Layer 2: the zygote's bubblewrap was started earlier, and mounts made afterwards reach it only through mount
propagation, so the runs folder is first made a shared mount point (bind-mounted onto itself, MS_SHARED);
bubblewrap's copy is a slave of it and sees each run's tmpfs appear. Several processes of one user share the
runs folder (`serve`, the CLI's background workers of two workspaces, `watch`): each holds a shared flock on
`.runs.users.lock` beside it while it has a worker, and the bind is undone only by the last of them (while
holding `.runs.mount.lock`, which `share()` takes too), and only when tritonlab made it. Without that, the first
to exit took the bind away from the others, whose sandboxes then saw no run directory: every check, a correct
one too, crashed with exit status 70.

Without root (or with TRITONLAB_RUN_FOLDER_CAP=off) run directories are plain folders: only RLIMIT_FSIZE
bounds each file, and `over_cap()` counts files after the run.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from tritonlab import config

MS_NOSUID, MS_NODEV, MS_BIND, MS_SHARED = 2, 4, 4096, 1 << 20
MNT_DETACH = 2
RUN_FOLDER_BYTES = 1 << 30
RUN_FOLDER_FILES = 20_000


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def wanted() -> bool:
    """TRITONLAB_RUN_FOLDER_CAP=auto (default: when running as root) | off."""
    off = os.environ.get("TRITONLAB_RUN_FOLDER_CAP", "auto").strip().lower() in ("off", "0", "no")
    return not off and os.geteuid() == 0


def _mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None) -> None:
    if _libc().mount(source, target.encode(), fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


_users: dict[str, tuple[int, int]] = {}  # runs folders this process's workers use -> (workers, use-lock fd)
BOUND = b"bound by tritonlab\n"  # in the mount lock: the bind is ours to undo (not an administrator's mount)


def mount_points() -> set[str]:
    """Every mount point of this mount namespace (a bind of a folder onto itself is one too)."""
    found = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                found.add(line.split()[4].encode().decode("unicode_escape"))
    except OSError:
        pass
    return found


def _lock(folder: str, what: str) -> int:
    """An open lock file beside the runs folder (never inside it: no sandbox sees it)."""
    parent, name = os.path.split(folder.rstrip(os.sep))
    return os.open(os.path.join(parent, f".{name}.{what}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def share(runs_folder: Path) -> bool:
    """Make the runs folder a shared mount point, so run mounts made later reach a running bubblewrap; one call
    per worker, undone by `unshare()` (by the last worker of the last process that uses the folder)."""
    if not wanted():
        return False
    folder = str(runs_folder)
    try:
        mutex = _lock(folder, "mount")
    except OSError:
        return False
    try:
        fcntl.flock(mutex, fcntl.LOCK_EX)  # held for a moment, by share() and by the last user's unshare()
        count, held = _users.get(folder, (0, -1))
        if not count:
            held = _lock(folder, "users")
            fcntl.flock(held, fcntl.LOCK_SH)  # this process uses the folder until its last unshare()
        try:
            if folder not in mount_points():
                _mount(folder.encode(), folder, None, MS_BIND, None)
                os.pwrite(mutex, BOUND, 0)
                os.ftruncate(mutex, len(BOUND))
            _mount(None, folder, None, MS_SHARED, None)
        except OSError:
            if not count:
                os.close(held)
            return False
        _users[folder] = (count + 1, held)
        return True
    except OSError:
        return False
    finally:
        os.close(mutex)


def unshare(runs_folder: Path) -> None:
    """Undo share() once its last user is gone: this process's last worker, when no other process holds the
    folder; a running bubblewrap keeps its own copy."""
    folder = str(runs_folder)
    if folder not in _users:
        return
    count, held = _users.pop(folder)
    if count > 1:
        _users[folder] = (count - 1, held)
        return
    try:
        mutex = _lock(folder, "mount")
    except OSError:
        os.close(held)
        return
    try:
        fcntl.flock(mutex, fcntl.LOCK_EX)
        os.close(held)  # this process's hold goes; is any other process's left?
        probe = _lock(folder, "users")
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process's workers still use the folder: the bind stays theirs
        finally:
            os.close(probe)
        if os.pread(mutex, len(BOUND), 0) == BOUND:
            # nobody else holds the folder: whatever is still mounted inside goes with it (a capped folder of a
            # run or of the sandbox probe that an exit cut short: the probe runs in a thread of the server)
            inside = folder.rstrip(os.sep) + os.sep
            _unmount_inside(inside)
            unmount(folder)
            # a mount made inside the shared bind propagates to the folder it covers (its peer): once the bind
            # is gone that copy shows, so it goes too
            _unmount_inside(inside)
            os.ftruncate(mutex, 0)
    finally:
        os.close(mutex)


def _unmount_inside(inside: str) -> None:
    """Unmount every mount point under the folder path `inside` (ending in a separator), innermost first."""
    for _ in range(3):  # stacked copies show one after another
        points = sorted((m for m in mount_points() if m.startswith(inside)), reverse=True)
        if not points:
            return
        for point in points:
            unmount(point)


def unmount(mount_point: str) -> bool:
    """Detach one mount (lazily: an open descriptor does not keep it); a bind of a folder onto itself too,
    which os.path.ismount does not see."""
    return _libc().umount2(mount_point.encode(), MNT_DETACH) == 0


def cap(path: Path, size: int | None = None, files: int | None = None) -> bool:
    """Mount a capped tmpfs on the (empty, fresh) run directory. False when this machine cannot."""
    if not wanted():
        return False
    size, files = size or RUN_FOLDER_BYTES, files or RUN_FOLDER_FILES
    options = f"size={int(size)},nr_inodes={int(files)},mode=0700".encode()
    try:
        _mount(b"tmpfs", str(path), b"tmpfs", MS_NOSUID | MS_NODEV, options)
    except OSError:
        return False
    return True


def release(path: Path) -> None:
    """Unmount a run directory's tmpfs (lazily: an open descriptor does not keep it)."""
    while os.path.ismount(path):
        if not unmount(str(path)):
            return


def over_cap(path: Path, files: int | None = None) -> str:
    """Why a finished run's folder was full ("" when it was not): its tmpfs ran out of inodes or bytes, or
    (uncapped folder) it holds more than `files` entries."""
    try:
        if os.path.ismount(path):
            st = os.statvfs(path)
            if st.f_ffree == 0:
                return f"the run created more than {st.f_files} files and folders in its directory"
            if st.f_bavail * st.f_frsize < 64 << 10:
                return f"the run wrote more than {st.f_blocks * st.f_frsize >> 20} MiB to its directory"
            return ""
        count, files = 0, files or RUN_FOLDER_FILES
        for _root, dirs, names in os.walk(path):
            count += len(dirs) + len(names)
            if count > files:
                return f"the run created more than {files} files and folders in its directory"
    except OSError:
        return ""
    return ""


def probe() -> dict:
    """Mount a tiny capped run folder and create files until it refuses: the cap is claimed only then."""
    result = {"capped": False, "bytes": RUN_FOLDER_BYTES, "files": RUN_FOLDER_FILES, "reason": ""}
    if not wanted():
        result["reason"] = (
            "TRITONLAB_RUN_FOLDER_CAP=off"
            if os.geteuid() == 0
            else "not root: run folders are plain folders (RLIMIT_FSIZE per file, files counted after the run)"
        )
        return result
    folder = Path(tempfile.mkdtemp(prefix="tritonlab-cap-probe-"))
    try:
        if not cap(folder, size=1 << 20, files=64):
            result["reason"] = "mounting a tmpfs on a run folder failed"
            return result
        made = 0
        try:
            for i in range(1000):
                (folder / f"f{i}").write_bytes(b"x")
                made += 1
        except OSError:
            pass
        result["capped"] = made < 64 and bool(over_cap(folder))
        result["reason"] = (
            f"a probe folder capped at 64 files refused the file after {made}"
            if result["capped"]
            else f"a probe folder capped at 64 files took {made}"
        )
    finally:
        release(folder)
        for child in folder.iterdir() if folder.is_dir() else ():
            child.unlink()
        folder.rmdir()
    return result


def new_run_dir() -> Path:
    """A fresh run directory, named after the process that owns it (run-PID-…), so a sweep can tell whose."""
    path = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=config.runs_dir()))
    cap(path)  # its own size- and file-capped tmpfs, when the server runs as root
    return path


STALE_UNOWNED_SECONDS = 24 * 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_runs(now: float | None = None) -> list[str]:
    """Remove run directories left by a server or CLI that died (kill -9, power loss): those whose owning
    process is gone, and unowned ones (older naming) untouched for a day. Returns the names removed."""
    removed = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(config.runs_dir()))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith("run-") or not entry.is_dir(follow_symlinks=False):
            continue
        owner = entry.name.split("-")[1]
        if owner.isdigit():
            stale = int(owner) != os.getpid() and not _alive(int(owner))
        else:
            stale = now - entry.stat(follow_symlinks=False).st_mtime > STALE_UNOWNED_SECONDS
        if stale:
            remove_run_dir(Path(entry.path))
            removed.append(entry.name)
    return removed


def remove_run_dir(path: Path) -> None:
    """Remove a run directory without following any symlink the learner planted in it."""
    release(path)  # a capped run folder: its tmpfs goes at once, with everything in it
    shutil.rmtree(path, ignore_errors=True)  # fd-based: unlinks symlinks, never follows them
    if path.exists() and not path.is_symlink():  # a run made folders unwritable (chmod 000): open them up
        for folder, dirs, _files in os.walk(path, followlinks=False):
            for name in dirs:
                target = os.path.join(folder, name)
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
        os.chmod(path, 0o700)
        shutil.rmtree(path, ignore_errors=True)
