"""Inside the hardened sandbox: drop from root to the sandbox user, and give each run a private view.

Used by the zygote (`--drop UID:GID` when bubblewrap was started by root) and by each forked run
(`isolate_run`): a nested user + mount namespace in which the runs folder is an empty read-only tmpfs with
only this run's directory bound back, after which every capability is dropped for good. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys

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


def private_ipc(run_dir: str | None = None) -> tuple[bool, bool]:
    """Layer 1 (no bubblewrap): give the run its own IPC namespace (SysV shared memory, semaphores and message
    queues, POSIX message queues) and, given its directory, its own /dev/shm (POSIX shared memory, named
    semaphores): the directory's `tmp/` bound there, as the hardened layer does. Both go with the run.

    As root, unshare(2) needs nothing more. Otherwise the run enters a user namespace of its own, mapped to the
    same user (where the kernel allows unprivileged ones), and drops the capabilities it holds in it once
    done. Returns (private IPC, private /dev/shm); (False, False) leaves the run sharing the host's, e.g. in a
    multithreaded process (a GPU warm child after CUDA started threads: Linux refuses it a user or mount
    namespace; as root it still gets the IPC namespace)."""
    libc = _libc()
    own_user = False
    ipc = libc.unshare(CLONE_NEWIPC) == 0
    if not ipc and os.geteuid() != 0:
        own_user = ipc = _own_user_namespace(CLONE_NEWIPC)
    shm = bool(run_dir) and ipc and _private_shm(libc, str(run_dir))
    if own_user:
        drop_capabilities()
    return ipc, shm


def _own_user_namespace(flags: int) -> bool:
    """Enter a new user namespace (with `flags`' namespaces) in which this user is mapped to itself."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a non-dumpable process cannot write its own /proc/self/*_map
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
        not_dumpable()


def _private_shm(libc: ctypes.CDLL, run_dir: str) -> bool:
    """A mount namespace of the run's own (nothing it mounts reaches the host) with `run_dir/tmp` on /dev/shm."""
    scratch = os.path.join(run_dir, "tmp")
    if not os.path.isdir("/dev/shm") or libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None) != 0:
        return False
    os.makedirs(scratch, exist_ok=True)
    return libc.mount(scratch.encode(), b"/dev/shm", None, MS_BIND, None) == 0


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


def isolate_run(run_dir: str, runs_folder: str, cache: str | None = None) -> None:
    """Only `run_dir` stays visible (and writable) under `runs_folder`, and the one compile cache `cache` (a
    folder under the runs folder, runs/caches.py) at its own path; then no capabilities at all.

    The cache keeps its path in every run because Triton writes absolute paths into its cache entries (Triton
    3.6's group files): bound anywhere else, a run would find the entries of the run before and not use them."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # after a uid change /proc/self/*_map belong to root otherwise
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC), "unshare(user, mount, ipc)")
    fd = os.open(run_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)  # in the new namespace's copy
    cache_fd = os.open(cache, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW) if cache else None
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
        folder = runs_folder.encode()
        _check(
            libc.mount(b"tmpfs", folder, b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"mode=0711,size=64k"),
            "cover the runs folder",
        )
        os.mkdir(run_dir, 0o700)
        _check(
            libc.mount(f"/proc/self/fd/{fd}".encode(), run_dir.encode(), None, MS_BIND, None),
            "bind the run directory",
        )
        if cache_fd is not None:
            inside = os.path.commonpath([os.path.abspath(cache), folder.decode()]) == folder.decode()
            target = os.path.abspath(cache) if inside else os.path.join(run_dir, CACHE_MOUNT)
            os.makedirs(target, exist_ok=True)  # in the covering tmpfs (still writable) or the run directory
            _check(
                libc.mount(f"/proc/self/fd/{cache_fd}".encode(), target.encode(), None, MS_BIND, None),
                "bind the compile cache",
            )
        _check(
            libc.mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
            "make the runs folder read-only",
        )
        scratch = os.path.join(run_dir, "tmp")  # the zygote's shared /tmp and /dev/shm: this run's own now
        os.makedirs(scratch, exist_ok=True)
        for shared in SHARED_SCRATCH:
            if os.path.isdir(shared):
                _check(libc.mount(scratch.encode(), shared.encode(), None, MS_BIND, None), f"cover {shared}")
    finally:
        os.close(fd)
        if cache_fd is not None:
            os.close(cache_fd)
    drop_capabilities()
    no_new_privileges()
    not_dumpable()


def _can_read(path: str) -> bool:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
        return True
    except OSError:
        return False


def _can_write(folder: str) -> bool:
    target = os.path.join(folder, ".probe")
    try:
        with open(target, "w") as f:
            f.write("x")
        os.unlink(target)
        return True
    except OSError:
        return False


def _nproc_enforced(limit: int = 4, tries: int = 12) -> bool:
    """Does RLIMIT_NPROC stop forks here? (In a run's own user namespace it counts that run alone.)"""
    import resource
    import time

    before = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, before[1]))  # soft: restored below (CUDA needs threads)
    children = []
    try:
        for _ in range(tries):
            try:
                pid = os.fork()
            except OSError:
                return True
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            children.append(pid)
        return False
    finally:
        for pid in children:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        resource.setrlimit(resource.RLIMIT_NPROC, before)


def default_processes() -> int:
    return max(256, 4 * (os.cpu_count() or 1))


def probe(spec: dict) -> dict:
    """Run inside a fresh sandbox by hardening.probe(): what can learner code actually do here?"""
    import socket

    out: dict = {}
    if spec["drop"]:
        drop_privileges(spec["drop"])
    out["uid"] = os.getuid()
    try:
        os.setuid(0)
        out["regained_root"] = True
    except OSError:
        out["regained_root"] = False
    try:
        isolate_run(spec["run_dir"], spec["runs"])
        out["isolated"] = True
    except OSError as exc:
        out["isolated"] = str(exc)
    with open("/proc/self/status") as f:
        out["cap_eff"] = next((line.split()[1] for line in f if line.startswith("CapEff")), "?")
    out["sees_data_dir"] = any(_can_read(p) for p in spec["secret"])
    out["sees_other_run"] = _can_read(spec["other_run"])
    out["writes_course"] = _can_write(spec["course"])
    out["writes_run_dir"] = _can_write(spec["run_dir"])
    elsewhere = ("/", "/usr", spec["runs"], spec["other_run"], spec["home"])
    out["writes_elsewhere"] = [d for d in elsewhere if _can_write(d)]
    out["nproc_enforced"] = _nproc_enforced()
    with socket.socket() as s:
        s.settimeout(2)
        out["network"] = s.connect_ex(("127.0.0.1", spec["port"])) == 0
    out["sees_parent"] = spec["parent"] > 2 and os.path.exists(f"/proc/{spec['parent']}")
    if spec.get("cuda"):
        out["cuda"] = cuda_check(spec["run_dir"])
    return out


CUDA_PROBE_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)
"""


def cuda_check(run_dir: str) -> dict:
    """On a GPU (hardening.probe, backend gpu): after the walls above are up, as the sandbox user, can a run
    use CUDA here? torch must see the device through the bound /dev/nvidia* nodes, and a Triton kernel (compiled
    in the run directory, from a file there, as a learner's is) must launch and compute the right values.
    torch and triton are imported here only (this module is otherwise standard library only)."""
    step = "import torch"
    try:
        import importlib.util

        import torch

        step = "find a CUDA device"
        if not torch.cuda.is_available():
            return {"ok": False, "step": step, "error": "torch sees no CUDA device inside the sandbox"}
        step = "compile and launch a Triton kernel"
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(run_dir, ".triton-cache"))
        path = os.path.join(run_dir, "cuda_probe_kernel.py")
        with open(path, "w") as f:
            f.write(CUDA_PROBE_KERNEL)
        spec = importlib.util.spec_from_file_location("cuda_probe_kernel", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        x = torch.arange(1000, device="cuda", dtype=torch.float32)
        module.add_one[(8,)](x, 1000, BLOCK=128)
        torch.cuda.synchronize()
        ok = bool(torch.equal(x.cpu(), torch.arange(1000, dtype=torch.float32) + 1))
        return {
            "ok": ok,
            "step": "done" if ok else "check the kernel's values",
            "device": torch.cuda.get_device_name(0),
        }
    except Exception as exc:  # noqa: BLE001 - whatever broke, CUDA is not verified inside the sandbox
        return {"ok": False, "step": step, "error": f"{type(exc).__name__}: {exc}"[:600]}


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


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(probe(json.loads(sys.argv[1]))))
