"""Inside the hardened sandbox: drop from root to the sandbox user, and give each run a private view.

Used by the zygote (`--drop UID:GID` when bubblewrap was started by root) and by each forked run
(`isolate_run`): a nested user + mount namespace and a PID namespace of its own (runs/pidns.py), in which the
run's root holds, of the runs folder, only its own directory and compile cache (runs/rootview.py), after
which every capability is dropped for good. The primitives layer 1 shares (capabilities, no_new_privs, not
dumpable, reference solutions refused) live here too; layer 1's namespaces are in runs/basicwalls.py, the
hardened layer's probe in runs/jailprobe.py. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys

from tritonlab.runs import pidns, rootview

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MS_SLAVE = 32, 4096, 16384, 1 << 18, 1 << 19
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_DUMPABLE = 38, 24, 4
CAP_VERSION_3 = 0x20080522
LAST_CAP = 63
ZYGOTE_TMP = "/run/tritonlab-tmp"  # the zygote's TMPDIR inside bubblewrap (a tmpfs)
SHARED_SCRATCH = (ZYGOTE_TMP, "/dev/shm")


class JailError(OSError):
    pass


PR_SET_NAME = 15
HOLD_TAG = "tlh-"  # + 11 hex digits of the run id: 15 bytes, the most a process name holds


def hold_tag(run_id: str) -> str:
    """The name a held child gives itself until it is released: the parent finds it by this name in the
    host's /proc when the kernel has no `NSpid` line to translate its pid (gVisor)."""
    return HOLD_TAG + run_id[:11]


def set_name(name: str) -> bool:
    """Set this process's name (/proc/PID/comm, 15 bytes at most)."""
    try:
        return _libc().prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise JailError(errno, f"{what}: {os.strerror(errno)}")


def drop_privileges(spec: str) -> None:
    """Become UID:GID for good (no supplementary groups, no capabilities, no way back)."""
    uid, gid = (int(x) for x in spec.split(":"))
    if uid == 0 or gid == 0:
        raise JailError(1, "refusing to run learner code as root")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise JailError(1, "could not drop root")
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        raise JailError(1, "root could be regained after dropping it")
    no_new_privileges()


def no_new_privileges() -> None:
    _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def not_dumpable() -> None:
    """Other runs (same user) can neither ptrace this one nor read its /proc entries (cwd, environ, mem)."""
    _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    libc = _libc()
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last capability: fine
    header = _CapHeader(CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def deny_files(paths: list[str]) -> None:
    """Layer 1 (no bubblewrap, same user as the server): an audit hook refuses to open, link or rename the
    given files (reference solutions) from Python, so `import solution` or open() fail with PermissionError.
    A speed bump only: ctypes or a subprocess can still read them; only the hardened layer hides them."""
    if not paths:
        return
    denied = {os.path.realpath(p) for p in paths}

    def hook(event: str, args: tuple) -> None:
        if event in ("open", "os.link", "os.rename", "shutil.copyfile"):
            target = args[0] if args else None
            if (
                isinstance(target, (str, bytes, os.PathLike))
                and os.path.realpath(os.fsdecode(target)) in denied
            ):
                raise PermissionError(
                    f"{os.fsdecode(target)}: reference solutions are not readable from a run"
                )

    sys.addaudithook(hook)


CACHE_MOUNT = ".cache/triton"  # a run's own compile cache inside its directory, when it is given none


def isolate_run(
    run_dir: str | None, runs_folder: str, cache: str | None = None, walls: pidns.Walls | None = None
) -> pidns.Walls:
    """Only `run_dir` stays visible (and writable) under `runs_folder`, and the one compile cache `cache` (a
    folder under the runs folder, runs/caches.py) at its own path; then no capabilities at all. Returns the
    walls it put up; `walls`: those that must hold (the zygote proved them at start: JailError otherwise), None:
    try each and keep what works (the probe, the zygote's own check, which pass no `run_dir`).

    With `pid`, the run continues in a PID namespace of its own (pidns.split: this process stays outside as its
    waiter, and returns only in the run); with `view`, in a root of its own whose mount table shows no other
    run (runs/rootview.py); else the runs folder is covered with an empty tmpfs, which hides the other runs
    from open() but not from /proc/self/mountinfo.

    The cache keeps its path in every run because Triton writes absolute paths into its cache entries (Triton
    3.6's group files): bound anywhere else, a run would find the entries of the run before and not use them."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    want = walls or pidns.Walls(pid=True, proc=True, view=True)
    need = walls or pidns.Walls()
    got = pidns.Walls(ipc=True, shm=True)
    outer_mount = pidns.namespace("mnt")
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # after a uid change /proc/self/*_map belong to root otherwise
    base = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC
    got.pid = want.pid and libc.unshare(base | pidns.CLONE_NEWPID) == 0
    if need.pid and not got.pid:
        _check(-1, "unshare(user, mount, ipc, pid): a PID namespace of the run's own")
    if not got.pid:
        _check(libc.unshare(base), "unshare(user, mount, ipc)")
    fds = [os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW) for p in (run_dir, cache) if p]
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
        keep = list(zip(fds, _bind_points(run_dir, runs_folder, cache), strict=True))
        if want.view:
            try:
                rootview.build(ZYGOTE_TMP, runs_folder, keep)
                got.view = True
            except rootview.ViewError as exc:
                if need.view or not exc.recoverable:
                    raise JailError(exc.errno, f"the run's own root: {exc.strerror}") from exc
        if not got.view:
            _cover(libc, runs_folder, keep)
        if run_dir:
            scratch = os.path.join(
                run_dir, "tmp"
            )  # the zygote's shared /tmp and /dev/shm: this run's own now
            os.makedirs(scratch, exist_ok=True)
            for shared in SHARED_SCRATCH:
                if os.path.isdir(shared):
                    _check(
                        libc.mount(scratch.encode(), shared.encode(), None, MS_BIND, None), f"cover {shared}"
                    )
    finally:
        for fd in fds:
            os.close(fd)
    if got.pid:
        got.proc = pidns.split(want.proc, outer_mount, need.proc, drop_capabilities)
    drop_capabilities()
    no_new_privileges()
    not_dumpable()
    return got


def _bind_points(run_dir: str | None, runs_folder: str, cache: str | None) -> list[str]:
    """Where the run's folder and its compile cache are bound in its view: the cache at its own path when it
    lies in the runs folder, else inside the run's folder."""
    points = [run_dir] if run_dir else []
    if cache:
        inside = os.path.commonpath([os.path.abspath(cache), runs_folder]) == runs_folder
        points.append(os.path.abspath(cache) if inside or not run_dir else os.path.join(run_dir, CACHE_MOUNT))
    return points


def _cover(libc: ctypes.CDLL, runs_folder: str, keep: list[tuple[int, str]]) -> None:
    """The runs folder covered by an empty read-only tmpfs with only `keep` bound back ((descriptor, path))."""
    folder = runs_folder.encode()
    _check(
        libc.mount(b"tmpfs", folder, b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"mode=0711,size=64k"),
        "cover the runs folder",
    )
    for fd, path in keep:
        os.makedirs(
            path, mode=0o700, exist_ok=True
        )  # in the covering tmpfs (still writable) or the run's folder
        _check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND, None), f"bind {path}")
    _check(
        libc.mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
        "make the runs folder read-only",
    )


PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")


def uncover_proc() -> list[str]:
    """In the zygote started by root, before it drops to the sandbox user (bubblewrap gave it CAP_SYS_ADMIN
    for this alone): remove the read-only binds bubblewrap put over a few /proc folders (as root it covers
    them; as another user it does not need to). A run's user namespace may mount a /proc of its own PID
    namespace only where one /proc is fully visible (the kernel's rule), and the runs are unprivileged:
    those folders are root's, closed to them either way. Returns the covers removed."""
    libc = _libc()
    removed = []
    for name in PROC_COVERS:
        path = f"/proc/{name}"
        while libc.umount2(path.encode(), 0) == 0:  # a bind stacked twice is undone twice
            removed.append(name)
    return removed


def default_processes() -> int:
    return max(256, 4 * (os.cpu_count() or 1))


def searchable_path(path: str) -> str:
    """PATH without the folders this run cannot search. Run inside the run (its user, its mounts): a folder
    it may not enter makes a program lookup fail with PermissionError instead of FileNotFoundError, and
    libraries that probe for a tool handle only the second (found on the H200: torch.compile's
    `nvcc --version` probe stopped a lesson-11 example in the hardened sandbox)."""
    kept = [
        folder
        for folder in path.split(os.pathsep)
        if os.path.isabs(folder) and os.path.isdir(folder) and os.access(folder, os.X_OK)
    ]
    return os.pathsep.join(dict.fromkeys(kept))
