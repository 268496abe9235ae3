"""Layer 1 (no bubblewrap): what a run gets without privileges, and the check that proves a worker's walls.

- Its own IPC namespace (SysV shared memory, semaphores and message queues, POSIX message queues) and, given its
  directory, its own /dev/shm (the directory's `tmp/` bound there, as the hardened layer does): nothing of the
  kind outlives the run (`private_ipc`).
- Its own PID namespace (runs/pidns.py) with a /proc of its own: the zygote, the warm children and the other
  runs have no pid there, so it cannot signal them (`isolate`).

As root, unshare(2) needs nothing more. Otherwise the run enters a user namespace of its own, mapped to the
same user (where the kernel allows unprivileged ones), and drops the capabilities it holds in it once done.
A multithreaded process gets no user or mount namespace (Linux refuses them), so a GPU warm child, whose CUDA
context starts threads, makes its namespaces before that, while it warms up (`ahead`), and takes its IPC
namespace and /dev/shm when its job comes. Layer 1 is for one's own code: as root a run is root, and nothing
here is a wall against it.

`self_check` proves, on a real child at the worker's start, which walls this worker's runs get (both layers);
the runs are then held to them.
"""

from __future__ import annotations

import ctypes
import os

from tritonlab.runs import jail, pidns
from tritonlab.runs.jail import CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWUSER, MS_BIND, MS_REC, MS_SLAVE

_ahead: dict[str, bool] = {}  # set in a warm child that made its namespaces ahead (see `ahead`)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _own_user_namespace(flags: int) -> bool:
    """Enter a new user namespace (with `flags`' namespaces) in which this user is mapped to itself."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    libc.prctl(
        jail.PR_SET_DUMPABLE, 1, 0, 0, 0
    )  # a non-dumpable process cannot write its own /proc/self/*_map
    try:
        if libc.unshare(CLONE_NEWUSER | flags) != 0:
            return False
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        return True
    except OSError:
        return False
    finally:
        jail.not_dumpable()


def _unshare(attempts: list[int]) -> tuple[int, bool]:
    """The first of `attempts` (sets of CLONE_* flags) this process may unshare: as root directly, otherwise in
    a user namespace of its own. (flags made, whether a user namespace was made); (0, False) for none."""
    libc = _libc()
    for flags in attempts:
        if libc.unshare(flags) == 0:
            return flags, False
        if os.geteuid() != 0 and _own_user_namespace(flags):
            return flags, True
    return 0, False


def _private_mounts(libc: ctypes.CDLL) -> bool:
    """A mount namespace of the run's own, receiving the host's mounts but never sending its own back."""
    return libc.unshare(CLONE_NEWNS) == 0 and libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None) == 0


def _bind_shm(libc: ctypes.CDLL, run_dir: str) -> bool:
    """`run_dir/tmp` on /dev/shm (in the run's own mount namespace)."""
    scratch = os.path.join(run_dir, "tmp")
    os.makedirs(scratch, exist_ok=True)
    return libc.mount(scratch.encode(), b"/dev/shm", None, MS_BIND, None) == 0


def isolate(run_dir: str | None, walls: pidns.Walls | None = None) -> pidns.Walls:
    """A layer-1 run's own IPC namespace, /dev/shm and PID namespace. `walls`: those that must hold (proved at
    the worker's start: pidns.NamespaceError otherwise); None: try each. With a PID namespace this process
    stays outside as the run's waiter and returns only in the run (pidns.split). In a warm child that made its
    namespaces ahead, only the IPC namespace and /dev/shm are left to make."""
    libc = _libc()
    want = walls or pidns.Walls(pid=True, proc=True, ipc=True, shm=True)
    need = walls or pidns.Walls()
    if _ahead:  # a warm child: its user and PID namespaces exist; the rest is made now, threaded or not
        got = pidns.Walls(pid=True, ipc=libc.unshare(CLONE_NEWIPC) == 0)
        mounts = _private_mounts(libc)  # made now, not ahead: the job's capped folder was mounted since
        got.shm = bool(run_dir) and got.ipc and mounts and _bind_shm(libc, str(run_dir))
        got.proc = mounts and want.proc and _mount_proc(libc)
        if need.proc and not got.proc:
            raise pidns.NamespaceError(1, "a /proc of the run's own PID namespace: refused here")
        if _ahead["user"]:
            jail.drop_capabilities()
        return got
    outer_mount = pidns.namespace("mnt")
    attempts = [CLONE_NEWIPC | pidns.CLONE_NEWPID] if want.pid else []
    attempts += [] if need.pid else [CLONE_NEWIPC]
    made, own_user = _unshare(attempts)
    got = pidns.Walls(ipc=bool(made & CLONE_NEWIPC), pid=bool(made & pidns.CLONE_NEWPID))
    if need.pid and not got.pid:
        raise pidns.NamespaceError(1, "a PID namespace of the run's own: refused here")
    mounts = got.ipc and os.path.isdir("/dev/shm") and _private_mounts(libc)
    got.shm = bool(run_dir) and mounts and _bind_shm(libc, str(run_dir))
    if got.pid:
        harden = jail.drop_capabilities if own_user else None
        got.proc = pidns.split(want.proc and mounts, outer_mount, need.proc, harden)
    if own_user:
        jail.drop_capabilities()
    return got


def private_ipc(run_dir: str | None = None) -> tuple[bool, bool]:
    """The run's own IPC namespace and, given its directory, its own /dev/shm, without a PID namespace:
    (private IPC, private /dev/shm); (False, False) leaves the run sharing the host's, e.g. in a multithreaded
    process without root (Linux refuses it a user or mount namespace; as root it still gets the IPC one)."""
    got = isolate(run_dir, pidns.Walls(ipc=False))  # require nothing, try no PID namespace
    return got.ipc, got.shm


def ahead(walls: pidns.Walls) -> None:
    """In a layer-1 warm child, single-threaded still (before CUDA starts threads): its user namespace (without
    root) and PID namespace now, which Linux refuses a multithreaded process; `isolate` makes the rest (IPC and
    mount namespaces, /dev/shm, the namespace's /proc) when the job comes, since a mount namespace copied now
    would miss the job's folder, mounted later. The capabilities of its user namespace are kept until then.
    No-op without a PID namespace to make."""
    if not walls.pid:
        return
    made, own_user = _unshare([pidns.CLONE_NEWPID])
    if not made:
        raise pidns.NamespaceError(1, "a PID namespace of the warm child's own: refused here")
    pidns.split(False, pidns.namespace("mnt"))
    _ahead.update(user=own_user)


def _mount_proc(libc: ctypes.CDLL) -> bool:
    """A /proc of this process's PID namespace, in its own mount namespace (never the host's)."""
    flags = pidns.MS_NOSUID | pidns.MS_NODEV | pidns.MS_NOEXEC
    return libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0


def self_check(runs_folder: str | None) -> pidns.Walls:
    """Which walls this worker's runs get, proved on a real child: one forked now that builds them as a run
    does (hardened: jail.isolate_run without a run directory; layer 1: `isolate`) and reports what it got
    through its exit status. Called by the zygote before it says it is ready."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.setsid()
            if runs_folder:
                got = jail.isolate_run(None, runs_folder)
            else:
                got = isolate(None)
            if got.pid and os.getpid() != 2:
                got.pid = got.proc = False  # not the namespace's second process: not what it seems
            if got.proc and sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) != [1, 2]:
                got.proc = False  # a /proc that shows more than the init and this run is not its own
            code = got.to_bits()
        except BaseException:  # noqa: BLE001 - whatever failed, the walls are not proved
            code = 0
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return pidns.Walls.from_bits(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0)
