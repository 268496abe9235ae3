"""What bounds a run, and what it is given: its limits, their defaults per backend, and its environment.

The limits a child sets on itself (`Limits.for_child`: CPU time, soft < hard; file size; address space on the
interpreter, never on a GPU, where CUDA reserves a large address space at start; RLIMIT_NPROC of a hardened
run; the soft GPU memory cap in torch's allocator), the ones the parent holds (the wall clock and the output
cap: collect.py), and the per-run cgroup's (memory of all the run's processes together, pids: cgroups/).
The environment is built from an allowlist: no tokens or secrets reach learner code.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tritonlab import config
from tritonlab.runs import hardening

ENV_ALLOW = {
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_THREAD_TIMEOUT",
    "OMP_WAIT_POLICY",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "TRITONLAB_CUDA_SYNC",  # how a run's CUDA context waits (runs/pool.py); no secret in it
    "CUDA_DEVICE_MAX_CONNECTIONS",  # a host's own count of a context's work queues (config.cuda_context_env)
}
ENV_ALLOW_PREFIXES = ("TRITON_",)
ENV_DENY_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "KEY")

DEFAULT_OUTPUT_CAP = 1 << 20  # bytes of learner output kept and shown
INTERPRETER_MEMORY = 2 << 30  # address space a run may add on top of the zygote's own
RUN_MEMORY = {"interpreter": 3 << 30, "gpu": 16 << 30}  # memory of all a run's processes (per-run cgroup)
GPU_MEMORY = 16 << 30  # soft GPU memory cap of a run: torch's allocator (pool.soft_gpu_cap)


RUN_USER_NAME = "learner"


def gpu_memory_cap() -> int:
    """Bytes of GPU memory a run's torch allocations may hold: TRITONLAB_GPU_MEMORY_GIB, else 16 GiB."""
    value = os.environ.get("TRITONLAB_GPU_MEMORY_GIB", "").strip()
    try:
        return max(1 << 28, int(float(value) * (1 << 30))) if value else GPU_MEMORY
    except ValueError:
        return GPU_MEMORY


def default_run_pids() -> int:
    """pids.max of a run: processes AND threads (torch starts a thread per core)."""
    return max(512, 8 * (os.cpu_count() or 1))


def child_environment(backend: str) -> dict[str, str]:
    """The zygote's environment, and so every run's: allowlisted variables only (none whose name suggests a
    secret), a home of its own, the learner's compile cache, tritonlab importable from this checkout."""
    env = {}
    for key, value in os.environ.items():
        allowed = key in ENV_ALLOW or key.startswith(ENV_ALLOW_PREFIXES)
        if allowed and not any(marker in key for marker in ENV_DENY_MARKERS):
            env[key] = value
    env.pop("TRITON_INTERPRET", None)
    for key, value in config.thread_wait_env().items():  # idle thread pools sleep (config.py)
        env.setdefault(key, value)
    if backend == "gpu":  # one hardware work queue per run's CUDA context (config.py)
        env.update(config.cuda_context_env())
    home = config.home() / "sandbox-home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "TRITON_CACHE_DIR": str(config.triton_cache_dir("learner")),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
            "TMPDIR": tempfile.gettempdir(),
            # A hardened run is a user with no passwd entry: getpass.getuser() (torch.compile's cache folder
            # name, found on the H200) reads these before it asks the passwd database, which would raise.
            "USER": RUN_USER_NAME,
            "LOGNAME": RUN_USER_NAME,
        }
    )
    src = str(Path(__file__).resolve().parents[2])  # make tritonlab importable from a source checkout
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    elif "TRITON_LIBCUDA_PATH" not in env and (cuda_dir := hardening.libcuda_dir()):
        # Triton finds libcuda with `ldconfig -p`, which fails inside bubblewrap (no ld.so.cache there):
        # the parent looks it up once and tells the run where it is.
        env["TRITON_LIBCUDA_PATH"] = cuda_dir
    return env


@dataclass
class Limits:
    """One run's limits: `for_child()` those the child sets on itself; the wall clock and output cap are held
    by the parent (collect.Run), `memory_bytes` and `pids` by the run's cgroup (cgroups/)."""

    wall_seconds: float = 60.0
    cpu_seconds: int = 120
    output_bytes: int = DEFAULT_OUTPUT_CAP
    file_bytes: int = 512 << 20
    address_space_bytes: int | None = INTERPRETER_MEMORY
    processes: int | None = None  # RLIMIT_NPROC of a hardened run (default: jail.default_processes())
    memory_bytes: int | None = RUN_MEMORY["interpreter"]  # per-run cgroup: all the run's processes together
    pids: int | None = None  # per-run cgroup pids.max (default: default_run_pids())
    gpu_memory_bytes: int | None = None  # soft cap in torch's CUDA allocator (GPU runs; pool.soft_gpu_cap)

    def for_child(self) -> dict:
        return {
            "cpu_seconds": self.cpu_seconds,
            "file_bytes": self.file_bytes,
            "address_space_bytes": self.address_space_bytes,
            "processes": self.processes,
            "gpu_memory_bytes": self.gpu_memory_bytes,
        }


def default_limits(backend: str, wall_seconds: float = 60.0) -> Limits:
    return Limits(
        wall_seconds=wall_seconds,
        cpu_seconds=int(wall_seconds * 2) + 5,
        address_space_bytes=INTERPRETER_MEMORY if backend == "interpreter" else None,
        memory_bytes=RUN_MEMORY.get(backend, RUN_MEMORY["interpreter"]),
        gpu_memory_bytes=gpu_memory_cap() if backend == "gpu" else None,
    )
