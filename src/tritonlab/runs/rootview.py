"""A hardened run's private root: only what it may see is mounted, and its mount table names no other run
(issue 34).

After unshare(CLONE_NEWUSER | CLONE_NEWNS) a run's mount namespace is a copy of the zygote's: bubblewrap's
binds and, under the runs folder, every other run's capped folder and every learner's compile cache mounted at
that moment (they reach the zygote by propagation: runfolder.share). Covering the runs folder with a tmpfs hid
them from open(), but /proc/self/mountinfo still listed them by name (`run-<pid>-<random>`,
`.triton/learner-<learner id>`), and the copy locks them: an unprivileged namespace may not unmount a mount
whose removal would reveal what lies under it. So the run builds a new root instead: a small tmpfs where each
of bubblewrap's top-level mounts is bound back (recursively, with what is mounted on it) except the runs folder
and the zygote's scratch, the runs folder as empty read-only directories holding only this run's folder and its
compile cache, then pivots into it and detaches the old root. What its mount table lists is what it may see.

Standard library only; called by jail.isolate_run in the run's own user and mount namespace, before its
capabilities are dropped.
"""

from __future__ import annotations

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}  # the syscall's number (no libc wrapper)


class ViewError(OSError):
    recoverable = False  # True: it failed before anything changed, and the old way is still open


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ViewError(errno, f"{what}: {os.strerror(errno)}")


def _unescape(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are written as octal escapes (\\040)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mount_table(path: str = "/proc/self/mountinfo") -> list[tuple[int, int, str]]:
    """(mount id, parent id, mount point) of each mount of this namespace, in the order they were made."""
    table = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            table.append((int(fields[0]), int(fields[1]), _unescape(fields[4])))
    return table


def inside(path: str, folder: str) -> bool:
    """Is `path` the folder `folder` or below it (by path, without touching the disk)?"""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def top_level(table: list[tuple[int, int, str]]) -> list[str]:
    """The mount points mounted directly on the root mount (the last one mounted at "/")."""
    roots = [mount_id for mount_id, _parent, point in table if point == "/"]
    if not roots:
        raise ViewError(2, "no root mount in this namespace's mount table")
    return [point for _id, parent, point in table if parent == roots[-1] and point != "/"]


def _mount_point(target: str, like: str) -> None:
    """Make `target` (in the new root) a directory, or an empty file when `like` is not a directory."""
    if os.path.isdir(like):
        os.makedirs(target, mode=0o755, exist_ok=True)
        return
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    with open(target, "a"):
        pass


def pivot(new_root: str) -> None:
    """Make `new_root` (a mount point) this namespace's root, and detach the old root with all it held."""
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise ViewError(38, f"pivot_root: unknown syscall number on {os.uname().machine}")
    libc = _libc()
    os.chdir(new_root)
    _check(libc.syscall(number, b".", b"."), "pivot_root")  # the old root is now stacked on top of the new
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")


def build(at: str, runs_folder: str, keep: list[tuple[int, str]]) -> None:
    """Assemble the run's root on the directory `at` (the zygote's scratch), then pivot into it. `keep`:
    (O_PATH descriptor, path) pairs bound at `path` under the runs folder (the run's folder, its compile cache);
    nothing else of the runs folder is there. Raises ViewError: `recoverable` when it failed before the pivot
    (`at` is then given back as it was and the caller may cover the runs folder the old way), else the run's
    filesystem is in an unknown state and it must not start."""
    libc = _libc()
    table = mount_table()
    _check(
        libc.mount(b"tmpfs", at.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=1m"), "new root"
    )
    try:
        for point in top_level(table):
            if inside(point, runs_folder) or inside(point, at) or inside(at, point):
                continue  # the runs folder comes back below with this run's folder only; `at` is ours
            if not os.path.lexists(point):
                continue  # behind a folder the run may not enter (bubblewrap's /etc is root's, 0700): unseen
            target = at + point
            _mount_point(target, point)
            _check(libc.mount(point.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {point}")
        os.makedirs(at + runs_folder, mode=0o755, exist_ok=True)
        os.chmod(at + runs_folder, 0o711)  # traversable, not listable, as on the host (hardening.runs_folder)
        for fd, path in keep:
            os.makedirs(at + path, mode=0o700, exist_ok=True)
            _check(
                libc.mount(f"/proc/self/fd/{fd}".encode(), (at + path).encode(), None, MS_BIND, None),
                f"bind {path}",
            )
        os.makedirs(
            at + at, mode=0o755, exist_ok=True
        )  # the zygote's scratch: the caller binds the run's there
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        _check(libc.mount(None, at.encode(), None, flags, None), "make the new root read-only")
    except OSError as exc:
        libc.umount2(at.encode(), MNT_DETACH)  # nothing of it is left
        error = (
            exc
            if isinstance(exc, ViewError)
            else ViewError(exc.errno or 5, f"building the run's root: {exc}")
        )
        error.recoverable = True
        raise error from exc
    pivot(at)
