"""Each run in a PID namespace of its own: nothing outside it can be named, so nothing outside it can be
signalled, traced or read through /proc from inside (issue 34).

All runs of a worker share one uid (layer 1: the server's user; hardened: the sandbox user), and a process may
signal any process of its uid that it can name. Before this, a run that killed its parent killed the zygote,
and every check in flight crashed with it; a run that found a neighbour's replay child in /proc killed it, and
the neighbour's correct code failed as `host-computed`. Now a run's processes live in a PID namespace where the
zygote, the warm children and every other run have no pid: kill(2), pidfd_open(2), ptrace(2) and
process_vm_readv(2) can name nothing outside it; a pidfd taken from a /proc/<pid> directory of an outer process
is refused by pidfd_send_signal (it checks the namespace); and the namespace's own /proc lists only the run.

Three processes carry a run, one fork more than before and one for the init:

    zygote ── waiter (outside) ── init (PID 1 inside) ── the run (PID 2) ── whatever the run starts

- The waiter is the process the zygote forked and tracks. It made the namespace (unshare(CLONE_NEWPID) puts the
  caller's *children* in a new namespace, never the caller), then waits and exits as the run did: the same exit
  status, or killed by the same signal. The zygote, its replies and its kill_tree see what they saw before.
- The init is PID 1: it mounts the namespace's /proc, starts the run, reaps whatever is re-parented to it and
  tells the waiter how the run ended. The kernel delivers a namespace's init no signal sent from inside it
  that it has no handler for (SIGKILL included), so the run cannot end it early; when it ends, the kernel kills
  everything left in the namespace, setsid'd grandchildren included.
- The run is an ordinary process (PID 2): its signals behave as before (SIGXCPU at the CPU limit, SIGABRT, a
  signal it sends itself), which a PID 1 would ignore.

`Walls` says which of these a worker's runs get; the zygote proves them once at start (basicwalls.self_check) and
then holds every run to them, and `doctor` lists only what that check proved.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import asdict, dataclass

from tritonlab.runs.pool import HARNESS_EXIT

CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
PR_SET_PDEATHSIG = 1


class NamespaceError(OSError):
    """A wall the worker proved at start could not be put up for this run: the run must not start."""


@dataclass
class Walls:
    """What a run is given beyond layer 1's limits: its own PID namespace (`pid`) with a /proc of its own
    (`proc`); hardened, a private root whose mount table holds no other run (`view`, runs/rootview.py); its own
    IPC namespace and /dev/shm (`ipc`, `shm`)."""

    pid: bool = False
    proc: bool = False
    view: bool = False
    ipc: bool = False
    shm: bool = False

    def to_json(self) -> dict[str, bool]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Walls:
        fields = cls().to_json()
        return cls(**{k: bool(data.get(k)) for k in fields}) if isinstance(data, dict) else cls()

    BITS = ("pid", "proc", "view", "ipc", "shm")

    def to_bits(self) -> int:
        """As an exit status (self_check's child reports through it)."""
        return sum(1 << i for i, name in enumerate(self.BITS) if getattr(self, name))

    @classmethod
    def from_bits(cls, bits: int) -> Walls:
        return cls(**{name: bool(bits >> i & 1) for i, name in enumerate(cls.BITS)})


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def namespace(kind: str) -> str:
    """This process's namespace of `kind` (`pid`, `mnt`, …), as /proc names it: `mnt:[4026531841]`."""
    try:
        return os.readlink(f"/proc/self/ns/{kind}")
    except OSError:
        return ""


def split(
    mount_proc: bool,
    outer_mount: str,
    required: bool = False,
    harden: Callable[[], None] | None = None,
) -> bool:
    """Call right after unshare(CLONE_NEWPID) succeeded. Forks the namespace's init, which forks the run; this
    process stays outside as the waiter and never returns. Returns in the run (PID 2): True when the init
    mounted a /proc of the namespace's own (`mount_proc`, and only in a mount namespace other than
    `outer_mount`: never on the host's /proc). `required`: a /proc that cannot be mounted ends the run with
    HARNESS_EXIT. `harden` is called in the waiter and the init once they need nothing more (drop
    capabilities); both are made not dumpable."""
    read_end, write_end = os.pipe()
    init = os.fork()
    if init:
        _wait_outside(init, read_end, write_end, harden)
    os.close(read_end)
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the waiter gone: the whole namespace goes
    mounted = False
    if mount_proc and namespace("mnt") != outer_mount:
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
        mounted = _libc().mount(b"proc", b"/proc", b"proc", flags, None) == 0
    if required and not mounted:
        os._exit(HARNESS_EXIT)
    every = signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, every)  # the init takes no signal from the run
    run = os.fork()
    if run == 0:
        os.close(write_end)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        return mounted
    _init(run, write_end, harden)
    raise AssertionError("unreachable")  # _init never returns


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor above 2 except `keep`: the run's pipes and files are none of the waiter's or
    the init's business, and must not stay open in them."""
    top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = top if 0 < top < 1 << 20 else 1 << 16
    start = 3
    for fd in sorted(keep | {top}):
        if fd >= start:
            os.closerange(start, fd)
            start = fd + 1


def _harden(harden: Callable[[], None] | None) -> None:
    _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no run can trace us or read our /proc entries
    if harden is not None:
        harden()


def _init(run: int, report: int, harden: Callable[[], None] | None) -> None:
    """PID 1 of the run's namespace: reap every child; when the run ends, tell the waiter how, and end (the
    kernel then kills whatever is left in the namespace)."""
    try:
        _close_all_but({report})
        _harden(harden)
        while True:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                os._exit(HARNESS_EXIT)
            except InterruptedError:
                continue
            if pid == run:
                os.write(report, str(status).encode())
                os._exit(0)
    except BaseException:  # noqa: BLE001 - the init must never return into the caller's stack
        os._exit(HARNESS_EXIT)


def _wait_outside(init: int, status_pipe: int, write_end: int, harden: Callable[[], None] | None) -> None:
    """The waiter: outside the run's namespace, wait for its init and end as the run ended (never returns)."""
    try:
        os.close(write_end)
        _close_all_but({status_pipe})
        _harden(harden)
        text = b""
        while True:
            try:
                chunk = os.read(status_pipe, 32)
            except InterruptedError:
                continue
            if not chunk:
                break
            text += chunk
        while True:
            try:
                _, own = os.waitpid(init, 0)
                break
            except InterruptedError:
                continue
        status = int(text) if text.strip().isdigit() else own  # no report: the init itself was killed
        _end_as(status)
    except BaseException:  # noqa: BLE001 - the waiter must never return into the caller's stack
        os._exit(HARNESS_EXIT)


def _end_as(status: int) -> None:
    """Exit with the wait status `status`: the same exit code, or killed by the same signal (no core file)."""
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal whose default is to ignore it cannot have ended the run
    os._exit(HARNESS_EXIT)
