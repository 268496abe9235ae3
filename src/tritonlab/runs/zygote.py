"""The warm parent that learner runs are forked from: `python -m tritonlab.runs.zygote BACKEND`.

Started by sandbox.py with an allowlisted environment. It imports torch and triton once (2–3 s on a small
machine) and then forks a fresh child per job, so each run starts in milliseconds. It never initialises
CUDA itself: each child does, after the fork (with `--pool N`, warm children do it ahead of the job: pool.py).

Protocol (JSON lines): the parent writes {"op": "run", "id", "run_dir", "limits"}, {"op": "go", "id"} or
{"op": "kill", "id"}, and, hardened, {"op": "warm", "run_dir"} / {"op": "drop", "run_dir"} (a warm child
isolated ahead into the directory of a coming run, pool.BoundPool); the zygote answers {"id", "pid"} when a
child starts and {"id", "exit"} or {"id", "signal"} when it ends, both with "cpu_s" (the CPU seconds the
child and every process it reaped used, its warm start ahead of the job included). With `limits["hold"]` the
child waits, before anything else, for one byte on a pipe that the zygote writes only on "go": the parent
first places the child in the run's cgroup (cgroups/; the zygote, an unprivileged user inside bubblewrap,
cannot). A released-by-EOF child exits.
EOF on stdin (the parent died) kills every child and ends the zygote.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from pathlib import Path

from tritonlab.runs import basicwalls, caches, jail, pidns, pool

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


# The child-side entry point of each job mode, and the modules every child uses. They are named, not
# imported: the sandbox stays below the code it runs (docs/architecture.md).
ENTRIES = {
    "check": "tritonlab.grading.harness:run_check",
    "replay": "tritonlab.grading.replay.child:run_replay",
    "precompile": "tritonlab.grading.replay.precompile:run_precompile",
    "run": "tritonlab.grading.harness:run_program",
    "viz": "tritonlab.viz.child:run_viz",
    "bench": "tritonlab.perf.bench_learner:child_main",
    "inspect": "tritonlab.grading.kernel_compile:run_inspect",
    "compile": "tritonlab.grading.kernel_compile:run_compile",
    "profile": "tritonlab.profiling.child:run_profile",
    "speed_record": "tritonlab.perf.speed:record_main",
    "speed": "tritonlab.perf.speed:trusted_main",
}
WARM = (
    "tritonlab.grading.harness",
    "tritonlab.grading.contracts",
    "tritonlab.grading.guards",
    "tritonlab.grading.replay.child",
)
PRELOAD = "tritonlab.grading.preload:zygote_preload"  # computed once here, inherited by every child
# Modes whose compiles store the binary and its metadata only (TRITON_STORE_BINARY_ONLY): the trusted runs
# that execute kernels and never read one's IR back, whose entries stay in the replay's cache. An entry's TTIR,
# TTGIR, LLVM IR and PTX are two thirds of what it holds (one compile of every course solution's GPU kernels,
# benchmarks/check_compiles.py: 85.5 MiB of disk, 2592 files; stored binary-only 28.9 MiB, 1296 files), and
# that cache, shared by a whole class, is a capped tmpfs in memory. Not the precompile: its entries are copied
# into a learner's cache, where the learner's own code may read `compiled.asm["ptx"]` (lesson 1's example
# does), and caches.copy_entries copies whole entries only. Nor any other mode. The variable is not in
# Triton's cache key, so the trusted `compile` can meet such an entry: it compiles again
# (grading/kernel_compile.py `compile_for`).
BINARY_ONLY_MODES = frozenset({"replay", "speed"})
WALLS = pidns.Walls()  # what every run of this worker gets, proved at start (basicwalls.self_check)


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parent_links() -> dict[int, int]:
    """pid -> parent pid for every live process, read from /proc."""
    links = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            links[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return links


def descendants(root: int) -> list[int]:
    """Every live process below `root`, by parent links."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_links().items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL a run and everything it started, including grandchildren that called setsid()."""
    for _ in range(3):
        targets = descendants(pid)
        for p in [pid, *targets]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if not targets:
            break


HELD_EXIT = 71  # a held child whose parent never said "go" (killed, or the placement failed)


def wait_for_release(hold: int | None, others: list[int], tag: str | None = None) -> None:
    """In a forked child: close the other runs' release pipes, then wait for our own byte (see "hold"), named
    `tag` meanwhile (jail.hold_tag: how the parent finds us without `NSpid`)."""
    for fd in others:
        try:
            os.close(fd)
        except OSError:
            pass
    if hold is None:
        return
    if tag:
        jail.set_name(tag)
    try:
        byte = os.read(hold, 1)
    finally:
        os.close(hold)
        if tag:
            jail.set_name("python3")
    if byte != b"g":
        os._exit(HELD_EXIT)


def isolate(run_dir: str, runs_folder: str, cache: str | None = None) -> None:
    """Hardened: this process sees and writes only `run_dir` under `runs_folder` (a user and mount namespace
    of its own, no capabilities), with its home, temp and caches inside it, and its compile cache `cache`
    (runs/caches.py) bound at its own path when given, in a PID namespace of its own (WALLS). Single-threaded
    callers only; with a PID namespace it returns in the run, and this process stays outside as its waiter."""
    jail.isolate_run(run_dir, runs_folder, cache or None, WALLS)
    for name in ("tmp", jail.CACHE_MOUNT, ".config/matplotlib"):
        os.makedirs(os.path.join(run_dir, name), exist_ok=True)
    os.environ.update(
        {
            "HOME": run_dir,
            "TMPDIR": os.path.join(run_dir, "tmp"),
            "TRITON_CACHE_DIR": cache or os.path.join(run_dir, jail.CACHE_MOUNT),
            "MPLCONFIGDIR": os.path.join(run_dir, ".config/matplotlib"),
        }
    )


def child_main(run_dir: str, limits: dict, runs_folder: str | None, isolated: bool = False) -> None:
    """In the forked child: new session, limits, private cwd, output to a file, then the harness.
    `isolated`: a warm hardened child (pool.BoundPool) that isolated itself into `run_dir` already."""
    # the zygote gone, so is the run (its init and all: runs/pidns.py)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()
    os.umask(0o077)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    log = os.open(os.path.join(run_dir, "output.log"), flags, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(devnull)
    jail.not_dumpable()  # other runs cannot ptrace this one or read its /proc entries
    if runs_folder:  # hardened: this run sees and writes only its own directory, with no capabilities
        if not isolated:
            isolate(run_dir, runs_folder, limits.get("cache"))
        # In the run's own user namespace RLIMIT_NPROC counts this run's processes and threads alone.
        processes = int(limits.get("processes") or jail.default_processes())
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    else:  # IPC, /dev/shm and a PID namespace; the hardened run gets all three from isolate_run
        basicwalls.isolate(run_dir, WALLS)
        if limits.get("cache"):  # layer 1: the run's compile cache (runs/caches.py) by name only
            os.environ["TRITON_CACHE_DIR"] = str(limits["cache"])
    os.chdir(run_dir)
    os.environ["PATH"] = jail.searchable_path(os.environ.get("PATH", ""))
    cpu = int(limits.get("cpu_seconds", 60))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = int(limits.get("file_bytes", 512 << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    extra_as = limits.get("address_space_bytes")
    if extra_as:
        # The zygote's own mappings (torch, triton) count too: allow them plus the learner's budget.
        with open("/proc/self/statm") as f:
            current = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (current + int(extra_as), current + int(extra_as)))
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    if limits.get("gpu_memory_bytes"):  # GPU runs: a soft cap in torch's allocator, before learner code
        pool.soft_gpu_cap(int(limits["gpu_memory_bytes"]))
    jail.deny_files(list(limits.get("deny") or ()))  # layer 1: reference solutions (see jail.deny_files)
    code = run_job(Path(run_dir), trusted_only=bool(limits.get("trusted")))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_job(run_dir: Path, trusted_only: bool = False) -> int:
    """Call the child-side entry point of the job's mode with (job, run_dir). `trusted_only`: this run holds
    the replay cache (runs/caches.py), so it serves only modes that import no learner file."""
    job = json.loads((run_dir / "job.json").read_text())
    target = ENTRIES.get(job.get("mode"))
    if target is None:
        raise ValueError(f"unknown mode {job.get('mode')!r}")
    if trusted_only and job.get("mode") not in caches.TRUSTED_MODES:
        raise ValueError(
            f"mode {job.get('mode')!r} imports a learner file: not in a run with the replay cache"
        )
    if job.get("mode") in BINARY_ONLY_MODES:
        os.environ["TRITON_STORE_BINARY_ONLY"] = "1"
    else:
        os.environ.pop("TRITON_STORE_BINARY_ONLY", None)
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(job, run_dir)


def parse_args(argv: list[str]) -> tuple[str, str | None, str | None]:
    """BACKEND [--drop UID:GID] [--isolate RUNS_FOLDER]"""
    backend, drop, runs_folder = (argv[0] if argv else "interpreter"), None, None
    for flag, value in zip(argv[1::2], argv[2::2], strict=False):
        if flag == "--drop":
            drop = value
        elif flag == "--isolate":
            runs_folder = value
    return backend, drop, runs_folder


def main() -> None:
    global WALLS
    backend, drop, runs_folder = parse_args(sys.argv[1:])
    if drop:  # started by root inside bubblewrap: become the sandbox user before importing anything
        jail.uncover_proc()  # the one use of CAP_SYS_ADMIN bubblewrap gave us (hardening.bwrap_argv)
        jail.drop_privileges(drop)
    jail.not_dumpable()  # no run can trace the zygote or open its descriptors (its control pipes) in /proc
    if backend == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    out = sys.stdout
    started = time.perf_counter()
    import numpy  # noqa: F401
    import torch
    import triton

    for module in WARM:  # warm the imports children use
        importlib.import_module(module)
    module_name, _, function = PRELOAD.partition(":")
    preloaded = getattr(importlib.import_module(module_name), function)()
    WALLS = basicwalls.self_check(runs_folder)  # then every run is held to what a real child got here
    if backend == "gpu" and not runs_folder:
        # Layer 1 on a GPU: no PID namespace (and so no /proc of its own). Its warm children make one ahead and
        # create their CUDA context inside it; on the H200 run 2026-12-04 (e98e901) every such run then failed
        # in cudaGetDeviceCount ("Error 304: OS call failed"), while the hardened layer's runs, isolated the
        # same way before CUDA by bubblewrap, passed. Until that is understood on a GPU, layer-1 GPU runs keep
        # what they had before (their own IPC namespace and /dev/shm) and doctor reports exactly that.
        WALLS = pidns.Walls(ipc=WALLS.ipc, shm=WALLS.shm)

    ready = {
        "ready": True,
        "backend": backend,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
        "import_seconds": round(time.perf_counter() - started, 3),
        "preloaded": preloaded,
        "subreaper": subreaper,
        "pid": os.getpid(),
        "uid": os.getuid(),
        "isolated_runs": bool(runs_folder),
        "walls": WALLS.to_json(),
    }
    out.write(json.dumps(ready) + "\n")
    out.flush()
    jobs: dict[int, str] = {}
    holds: dict[str, int] = {}  # job id -> write end of the pipe its child waits on
    # Warm single-use children (runs/pool.py); never under --isolate: a run isolates itself before CUDA starts.
    # A warm child forked while other runs are held must not keep their release pipes: it closes `holds`.
    warm = pool.WarmPool(
        0 if runs_folder else pool.size_from_argv(sys.argv[1:]),
        backend,
        child_main,
        inherited=lambda: list(holds.values()),
        release=lambda fd, run_id: wait_for_release(fd, [], jail.hold_tag(run_id)),
        ahead=lambda: basicwalls.ahead(WALLS),
    )
    # Hardened: warm children isolated ahead into the directory of a coming run ("warm"; pool.BoundPool).
    bound = pool.BoundPool(
        backend,
        isolate=lambda run_dir, cache: isolate(run_dir, str(runs_folder), cache),
        serve=lambda run_dir, limits: child_main(run_dir, limits, runs_folder, isolated=True),
        inherited=lambda: list(holds.values()),
        release=lambda fd, run_id: wait_for_release(fd, [], jail.hold_tag(run_id)),
    )
    stdin = sys.stdin.buffer
    buffer = b""
    while True:
        readable, _, _ = select.select([stdin], [], [], 0.02)
        if readable:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:  # parent is gone: take every run with us
                for pid in list(jobs):
                    kill_tree(pid)
                warm.close()
                bound.close()
                os._exit(0)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                msg = json.loads(line)
                if msg["op"] == "run":
                    limits = msg.get("limits", {})
                    hold = None
                    taken = bound.take(msg, hold=bool(limits.get("hold"))) if runs_folder else None
                    taken = taken or warm.take(msg, hold=bool(limits.get("hold")))
                    if taken:  # a warm child has the job; with "hold" it keeps waiting on its job pipe
                        pid, release_fd = taken
                        if release_fd is not None:
                            holds[msg["id"]] = release_fd
                    else:
                        hold = os.pipe() if limits.get("hold") else None
                        pid = os.fork()
                    if pid == 0:
                        try:
                            warm.forget()
                            bound.forget()
                            if hold:
                                os.close(hold[1])
                            wait_for_release(
                                hold[0] if hold else None, list(holds.values()), jail.hold_tag(msg["id"])
                            )
                            child_main(msg["run_dir"], limits, runs_folder)
                        except BaseException:  # noqa: BLE001 - last resort: say what broke, then exit
                            traceback.print_exc()
                            os._exit(pool.HARNESS_EXIT)
                    jobs[pid] = msg["id"]
                    if hold:
                        os.close(hold[0])
                        holds[msg["id"]] = hold[1]
                    out.write(json.dumps({"id": msg["id"], "pid": pid}) + "\n")
                    out.flush()
                elif msg["op"] == "warm" and runs_folder:
                    bound.add(str(msg["run_dir"]), msg.get("cache"))
                elif msg["op"] == "drop":
                    bound.drop(str(msg["run_dir"]))
                elif msg["op"] == "go":
                    fd = holds.pop(msg["id"], None)
                    if fd is not None:
                        try:
                            os.write(fd, b"g")
                        except OSError:
                            pass  # it died while held (killed from outside): waitpid below reports its end
                        finally:
                            os.close(fd)
                elif msg["op"] == "kill":
                    fd = holds.pop(msg["id"], None)
                    if fd is not None:
                        os.close(fd)
                    for pid, job_id in jobs.items():
                        if job_id == msg["id"]:
                            kill_tree(pid)
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if warm.reaped(pid) or bound.reaped(pid):
                continue  # a warm child died unused: replaced (bound: the run forks on demand)
            job_id = jobs.pop(pid, None)
            if job_id is None:
                continue  # an orphan of some run, re-parented to us (we are a subreaper): reaped
            if job_id in holds:  # it died before it was released
                os.close(holds.pop(job_id))
            # Anything the run left behind was re-parented to us (subreaper): end it now.
            me = os.getpid()
            for orphan, parent in parent_links().items():
                if parent == me and orphan not in jobs and orphan not in warm and orphan not in bound:
                    kill_tree(orphan)
            if os.WIFSIGNALED(status):
                reply = {"id": job_id, "signal": os.WTERMSIG(status)}
            else:
                reply = {"id": job_id, "exit": os.WEXITSTATUS(status)}
            # CPU seconds the run's process and every descendant it waited for used, its warm start included
            reply["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 4)
            # the same tree's page faults (first touches of fresh memory among them) and the times the kernel took
            # the CPU from it while it could have run: what a run costs beyond its own work on a busy machine
            reply["faults"] = usage.ru_minflt + usage.ru_majflt
            reply["switches"] = usage.ru_nivcsw
            out.write(json.dumps(reply) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
