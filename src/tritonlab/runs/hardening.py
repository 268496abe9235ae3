"""Sandbox layer 2: the warm zygote (and so every run forked from it) inside bubblewrap, as a non-root user.

When it can work, `Zygote(..., hardened=True)` starts `bwrap ... python -m tritonlab.runs.zygote BACKEND`:

- a new PID, IPC, UTS, network (loopback only, nothing reachable) and cgroup namespace, and a new session;
  bubblewrap dies with the server, and with it every run
- a private root: only the system (/usr, a few /etc files), the Python installation, tritonlab itself, the
  course and the learner's workspace, all read-only; the runs folder is the one writable place, and each run
  gets its own directory there, owned by the sandbox user, in a folder that cannot be listed
- never root: run by root, bubblewrap keeps only CAP_SETUID/CAP_SETGID, and the zygote drops to the sandbox
  user (TRITONLAB_SANDBOX_USER, else `tritonlab-sandbox` if that user exists, else `nobody`) before it
  imports anything; run by a normal user, bubblewrap's user namespace (`--unshare-all`) keeps that user.

TRITONLAB_SANDBOX=auto (default: hardened when the probe passes, loudly basic otherwise) | hardened (refuse
to run without it) | basic (layer 1 only). Nothing is claimed that `probe()` did not verify. On a GPU the probe
also launches a Triton kernel inside the sandbox, as the sandbox user (jail.cuda_check): `auto` uses the
hardened layer there only when that kernel ran; otherwise it fails closed for others (`serve` on a shared
address and `serve --classroom` refuse to start) and a local single-user command warns.
"""

from __future__ import annotations

import functools
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tritonlab import config
from tritonlab.runs import jailprobe, runfolder
from tritonlab.runs.jail import ZYGOTE_TMP

MODES = ("auto", "hardened", "basic")
DEFAULT_USERS = ("tritonlab-sandbox", "nobody")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "nsswitch.conf",
    "passwd",
    "group",
    "localtime",
    "alternatives",
    "fonts",
)
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


class Unavailable(RuntimeError):
    """The hardened layer cannot run on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class Identity:
    user: str
    uid: int
    gid: int
    drop: bool  # True: started as root, the zygote drops to uid/gid itself


def mode() -> str:
    value = os.environ.get("TRITONLAB_SANDBOX", "auto").strip().lower()
    return value if value in MODES else "auto"


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def identity() -> Identity:
    """Who runs learner code: never root."""
    if os.geteuid() != 0:
        return Identity(pwd.getpwuid(os.geteuid()).pw_name, os.geteuid(), os.getegid(), drop=False)
    wanted = os.environ.get("TRITONLAB_SANDBOX_USER", "").strip()
    for name in [wanted] if wanted else list(DEFAULT_USERS):
        try:
            entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
        except (KeyError, ValueError):
            continue
        if entry.pw_uid == 0 or entry.pw_gid == 0:
            raise Unavailable(
                f"the sandbox user {name!r} is root; set TRITONLAB_SANDBOX_USER to an unprivileged user"
            )
        return Identity(entry.pw_name, entry.pw_uid, entry.pw_gid, drop=True)
    raise Unavailable(
        "running as root and no unprivileged user to run learner code as: create one "
        "(`useradd --system --no-create-home --shell /usr/sbin/nologin tritonlab-sandbox`) "
        "or set TRITONLAB_SANDBOX_USER"
    )


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _roots(paths: list[Path]) -> list[Path]:
    """Existing paths, resolved, without any that lies inside another."""
    found = sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in found:
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def visible_roots(read_only: tuple[Path, ...] = ()) -> list[Path]:
    """What the sandbox may read: Python, tritonlab, the course, the workspace. Never the data folder."""
    import tritonlab

    candidates = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(tritonlab.__file__).resolve().parent.parent,
        config.course_dir(),
        *map(Path, read_only),
    ]
    candidates += [Path(p) for p in sys.path if p and p.endswith(("site-packages", "dist-packages"))]
    secret = [config.home().resolve(), Path.home().resolve(), Path("/").resolve()]
    roots = []
    for root in _roots(candidates):
        # A root that holds the data folder (progress DB) or the home folder (SSH keys) is never shown.
        if any(_inside(s, root) for s in secret) or any(_inside(root, s) for s in secret[:1]):
            continue
        roots.append(root)
    return roots


HIDDEN_NAMES = ("solution.py",)


def course_roots() -> list[Path]:
    """Where course files live: the configured course and the copy shipped inside the package."""
    import tritonlab

    return [
        p for p in (config.course_dir(), Path(tritonlab.__file__).resolve().parent / "course") if p.is_dir()
    ]


def hidden_files() -> list[Path]:
    """Files a run must never read although their folder is shown: every exercise's reference solution."""
    found: set[Path] = set()
    for root in course_roots():
        for name in HIDDEN_NAMES:
            found.update(p.resolve() for p in root.rglob(name) if p.is_file())
    return sorted(found)


def hide_argv(files: list[Path]) -> list[str]:
    """bubblewrap arguments that cover each hidden file with an empty one (/dev/null), after the binds."""
    argv: list[str] = []
    for path in files:
        argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def gpu_device_nodes() -> list[str]:
    """The NVIDIA device nodes a GPU run needs bound in (verified by the probe's CUDA check, jail.cuda_check)."""
    return [*GPU_DEVICES, *sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))]


def runs_folder() -> Path:
    """The runs folder, made traversable but not listable by the sandbox user (it cannot find other runs)."""
    path = config.runs_dir().resolve()
    os.chmod(path, 0o711)
    return path


def bwrap_argv(
    backend: str,
    read_only: tuple[Path, ...] = (),
    who: Identity | None = None,
    hidden: tuple[Path, ...] = (),
) -> list[str]:
    bwrap = find_bwrap()
    if bwrap is None:
        raise Unavailable("bubblewrap is not installed (Debian/Ubuntu: `apt-get install bubblewrap`)")
    who = who or identity()
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
    ]
    if who.drop:  # root: no user namespace (it would map the sandbox to root); drop to the user ourselves
        # CAP_SYS_ADMIN only until the zygote drops to the sandbox user, its first act: it removes the covers
        # bubblewrap (as root) binds over a few /proc folders, so that each run may mount a /proc of its own
        # PID namespace (jail.uncover_proc); dropping to another user clears every capability.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SYS_ADMIN"]
    else:
        argv += ["--unshare-user"]
    for d in SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", ZYGOTE_TMP]
    if backend == "gpu":
        for dev in gpu_device_nodes():
            argv += ["--dev-bind-try", dev, dev]
        argv += ["--ro-bind-try", "/sys", "/sys"]
    roots = visible_roots(read_only)
    runs = runs_folder()
    argv += parent_dirs([*roots, runs])
    for root in roots:
        argv += ["--ro-bind", str(root), str(root)]
    secret = sorted({*hidden_files(), *(Path(p).resolve() for p in hidden)})
    argv += hide_argv([f for f in secret if f.is_file() and any(_inside(f, r) for r in roots)])
    argv += ["--bind", str(runs), str(runs), "--remount-ro", "/", "--chdir", "/"]
    return argv


def parent_dirs(paths: list[Path]) -> list[str]:
    """Traversable (0755) folders above each bind point; bubblewrap would otherwise make some 0700."""
    seen: list[Path] = []
    for path in paths:
        for parent in reversed(path.parents[:-1]):
            if parent not in seen and str(parent) not in SYSTEM_DIRS:
                seen.append(parent)
    out = []
    for parent in seen:
        out += ["--perms", "0755", "--dir", str(parent)]
    return out


def zygote_argv(backend: str, read_only: tuple[Path, ...] = (), hidden: tuple[Path, ...] = ()) -> list[str]:
    who = identity()
    argv = [
        *bwrap_argv(backend, read_only, who, hidden),
        sys.executable,
        "-m",
        "tritonlab.runs.zygote",
        backend,
    ]
    if who.drop:
        argv += ["--drop", f"{who.uid}:{who.gid}"]
    return argv


def prepare_run_dir(path: Path) -> None:
    """Hand a fresh run directory (or a file the parent made in it) to the sandbox user, private to it."""
    who = identity()
    if who.drop:
        os.chown(path, who.uid, who.gid, follow_symlinks=False)
    os.chmod(path, 0o700 if path.is_dir() else 0o600)


_answered: dict[tuple[str, str], dict] = {}  # what probe() found, per (backend, mode): see probed()


def probe(backend: str = "interpreter") -> dict:
    """Start the real sandbox with a tiny script and verify each layer. {"hardened", "reason", "layers", ...}

    Cached per (backend, TRITONLAB_SANDBOX mode): a changed mode is honoured, an unchanged one probes once."""
    key = (backend, mode())
    result = _probe(*key)
    _answered[key] = result
    return result


def probed(backend: str) -> dict | None:
    """probe()'s answer for `backend` in the current mode when this process has one already, else None."""
    return _answered.get((backend, mode()))


@functools.lru_cache(maxsize=8)
def _probe(backend: str, wanted: str) -> dict:
    result: dict = {"hardened": False, "mode": wanted, "layers": [], "reason": "", "evidence": {}}
    if wanted == "basic":
        result["reason"] = "TRITONLAB_SANDBOX=basic: the hardened layer is switched off"
        return result
    listener = socket.socket()
    run_dir = Path(tempfile.mkdtemp(prefix="probe-", dir=config.runs_dir()))
    other_run = Path(tempfile.mkdtemp(prefix="probe-", dir=config.runs_dir()))
    shared = False
    try:
        who = identity()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        prepare_run_dir(run_dir)
        prepare_run_dir(other_run)
        # as root each run's folder is a mount (the probe's must not show), on the shared bind like a run's
        shared = runfolder.share(config.runs_dir())  # below it, a later bind hid it until the last exit
        capped = runfolder.cap(other_run)
        canary = config.home() / ".sandbox-canary"  # world-readable on purpose: only the mounts may hide it
        canary.write_text("if the sandbox can read this, the data folder is exposed\n")
        canary.chmod(0o644)
        secret = [str(canary), str(config.database_path()), str(Path.home() / ".ssh")]
        import tritonlab

        spec = {
            "drop": f"{who.uid}:{who.gid}" if who.drop else None,
            "other_run": str(other_run),
            "other_run_mounted": capped,
            "src": str(Path(tritonlab.__file__).resolve().parent.parent),
            "secret": secret,
            "run_dir": str(run_dir),
            "course": str(config.course_dir()),
            "runs": str(config.runs_dir()),
            "home": str(Path.home()),
            "port": listener.getsockname()[1],
            "parent": os.getpid(),
            "cuda": backend == "gpu",  # then a Triton kernel must run in there too (jail.cuda_check)
        }
        argv = [
            *bwrap_argv(backend, (), who),
            sys.executable,
            "-m",
            "tritonlab.runs.jailprobe",
            json.dumps(spec),
        ]
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=240 if backend == "gpu" else 30,  # importing torch and compiling one kernel on a GPU
            env=probe_environment(backend, spec["src"], run_dir),
        )
        if proc.returncode != 0:
            raise Unavailable(
                "bubblewrap could not start a sandbox here (user namespaces blocked?): "
                + (proc.stderr.strip().splitlines() or ["no message"])[-1]
            )
        ev = json.loads(proc.stdout.strip().splitlines()[-1])
    except (Unavailable, OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as exc:
        result["reason"] = str(exc)
        return result
    finally:
        listener.close()
        # both, like every run folder: the probe's own is bound inside the sandbox (runs/rootview.py), and as
        # root that bind can come back through the runs folder's shared mount
        runfolder.remove_run_dir(run_dir)
        runfolder.remove_run_dir(other_run)
        if shared:
            runfolder.unshare(config.runs_dir())
    result["evidence"] = ev | {"user": who.user}
    return judge(result, ev, who)


@functools.lru_cache(maxsize=1)
def libcuda_dir() -> str | None:
    """The folder of the driver's libcuda.so.1 as the dynamic loader's cache lists it, or None."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in listing.splitlines():
            if "libcuda.so.1" in line and "=>" in line:
                return str(Path(line.split("=>", 1)[1].strip()).parent)
    return None


def probe_environment(backend: str, src: str, run_dir: Path) -> dict[str, str]:
    """The probe's environment: the runs' own where CUDA needs it (the driver's libcuda folder, the visible
    devices), nothing else."""
    # TMPDIR: the tmpfs bwrap_argv mounts for the zygote (Triton's compiler needs a writable temp folder)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": src, "HOME": str(run_dir), "TMPDIR": ZYGOTE_TMP}
    if backend == "gpu":
        for key in (
            "CUDA_VISIBLE_DEVICES",
            "NVIDIA_VISIBLE_DEVICES",
            "LD_LIBRARY_PATH",
            "TRITON_LIBCUDA_PATH",
        ):
            if key in os.environ:
                env[key] = os.environ[key]
        if "TRITON_LIBCUDA_PATH" not in env and (cuda_dir := libcuda_dir()):
            env["TRITON_LIBCUDA_PATH"] = cuda_dir  # no ld.so.cache inside bubblewrap (limits.py)
    return env


def judge(result: dict, ev: dict, who: Identity) -> dict:
    checks = [
        (
            ev["uid"] != 0 and not ev["regained_root"] and ev["cap_eff"] == "0000000000000000",
            f"runs as the unprivileged user {who.user!r} (uid {ev['uid']}), no capabilities, cannot become root",
        ),
        (not ev["network"], "no network: a fresh network namespace (the server's port is unreachable)"),
        (
            not ev["sees_data_dir"],
            "private filesystem: the progress database, data folder and ~/.ssh are not visible",
        ),
        (
            ev["isolated"] is True
            and not ev["sees_other_run"]
            and not ev["writes_course"]
            and not ev["writes_elsewhere"]
            and ev["writes_run_dir"],
            "read-only course and system; each run sees and writes only its own run directory",
        ),
        (not ev["sees_parent"], "own PID namespace: the server and other processes are invisible"),
        (ev["nproc_enforced"], "process limit (RLIMIT_NPROC) per run: a fork bomb stops at the limit"),
    ]
    if "cuda" in ev:  # a GPU: the walls are not enough, a learner's kernel must also run in there
        cuda = ev["cuda"]
        checks.append(
            (
                cuda.get("ok") is True,
                "CUDA inside the sandbox: a Triton kernel ran as the sandbox user with only the NVIDIA device "
                "nodes bound"
                + (
                    f" ({cuda['device']})"
                    if cuda.get("ok")
                    else f" — failed at {cuda.get('step')}: {cuda.get('error', '')}"
                ),
            )
        )
    result["layers"] = [text for ok, text in checks if ok]
    failed = [text for ok, text in checks if not ok]
    # Issue 34's walls between runs: listed once verified, named as missing otherwise; the hardened layer does
    # not wait for them (a kernel without them still gets every wall above).
    between = jailprobe.between_runs(ev)
    result["layers"] += [text for ok, text in between if ok]
    result["missing"] = [text for ok, text in between if not ok]
    result["hardened"] = not failed
    result["reason"] = (
        "all hardened layers verified by a probe"
        if not failed
        else "the probe found these layers NOT active: " + "; ".join(failed)
    )
    return result


def decide(backend: str) -> tuple[bool, str]:
    """(use the hardened layer?, why). Raises Unavailable when TRITONLAB_SANDBOX=hardened cannot be met."""
    report = probe(backend)
    if report["hardened"]:
        return True, report["reason"]
    if mode() == "hardened":
        raise Unavailable(f"TRITONLAB_SANDBOX=hardened, but: {report['reason']}")
    return False, report["reason"]


def describe(report: dict) -> str:
    return json.dumps({k: report[k] for k in ("hardened", "mode", "reason")})
