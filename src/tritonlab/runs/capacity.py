"""How many runs one machine takes at once, per backend: the size of the service's run queue (service/gate.py)
and, with it, of a GPU zygote's warm pool (pool.wanted).

Each run keeps its own process, sandbox, cgroup and soft GPU memory cap; what bounds how many run side by side:
- CPU: a run's host work (its child, and on a check a replay child after it) takes about a core while it lasts,
  and the server's own work (making cases, judging) needs room too: on a GPU, half the cores; on the
  interpreter, whose runs are all host work, one per core, at least `MIN_INTERPRETER`.
- Host memory: each run's cgroup may hold `limits.RUN_MEMORY[backend]`; the runs at once fit in `HOST_SHARE`
  of the machine's memory.
- GPU memory: each run's torch allocations are capped at `limits.gpu_memory_cap()` (TRITONLAB_GPU_MEMORY_GIB)
  plus about `CONTEXT_BYTES` for its CUDA context and Triton's modules; the runs fit in the GPU's memory
  less `GPU_RESERVE`.
TRITONLAB_SLOTS=N overrides the figure (a positive integer, at most `MAX_SLOTS`); `Slots.reason` says which limit
decided it (`tritonlab doctor` prints it; docs/reliability.md, "Runs at once"). A Ray worker sizes itself with the
same rules on its own node (ray_executor/actor.py), the driver's TRITONLAB_SLOTS passed to it.

Runs that time the GPU (`TIMING_MODES`, by job mode: the speed line's timing run, `bench`, `profile`) take it alone:
the local queue's exclusive class (service/gate.py, service/jobs.py) and, on a cluster, a whole worker
(ray_executor/driver.py: RayPool.acquire) — both ask `times_gpu`. Of those, `IDLE_ONLY_MODES` (the speed line,
never graded) take it only when it is idle, holding up no one, and give up after `IDLE_WAIT_S`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from tritonlab.runs import limits
from tritonlab.runs.executor import ExecutorError

ENV = "TRITONLAB_SLOTS"
MAX_SLOTS = 64
MIN_INTERPRETER = 2  # the interpreter's queue took two runs at once before it was sized from the machine
HOST_SHARE = 0.8
CONTEXT_BYTES = 1 << 29  # a run's CUDA context and loaded modules, outside torch's allocator cap
GPU_RESERVE = 1 << 30  # left free on the GPU (the driver, the parent's nothing, a margin)
# The job modes whose run times the GPU, so it runs with no other run beside it: perf/speed.py's timing replay
# ("speed"; its recording run, "speed_record", times nothing), perf/bench_learner.py ("bench") and
# profiling/report.py ("profile").
TIMING_MODES = frozenset({"speed", "bench", "profile"})
# Timing runs that are never graded: on a cluster worker only when it is idle, never claiming one, given up after
# IDLE_WAIT_S (executor.GpuBusy): graded checks go first (service/speed.py does the same on a local GPU).
IDLE_ONLY_MODES = frozenset({"speed"})
IDLE_WAIT_S = 20.0


class SlotsError(ExecutorError):
    """TRITONLAB_SLOTS is set to something that is not a positive whole number (the CLI prints it and stops)."""


@dataclass(frozen=True)
class Slots:
    """Runs at once on a backend, and why that many."""

    count: int
    reason: str


def times_gpu(job: dict) -> bool:
    """Whether the run of this job times the GPU, and so must have it alone (see TIMING_MODES)."""
    return job.get("mode") in TIMING_MODES


def idle_only(job: dict) -> bool:
    """Whether the run of this job times the GPU only when it is idle (see IDLE_ONLY_MODES)."""
    return job.get("mode") in IDLE_ONLY_MODES


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def gpu_memory(gpu: dict | None = None) -> int | None:
    """Bytes of memory of the GPU runs use (the backend probe's answer, else nvidia-smi's first visible GPU)."""
    if gpu and isinstance(gpu.get("total_memory"), int) and gpu["total_memory"] > 0:
        return int(gpu["total_memory"])
    if not shutil.which("nvidia-smi"):
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    command = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    if visible:
        command += ["-i", visible]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False).stdout
        return int(float(out.strip().splitlines()[0])) << 20  # MiB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def forced() -> int | None:
    """TRITONLAB_SLOTS, when set: a positive integer (at most MAX_SLOTS); anything else raises SlotsError."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise SlotsError(f"{ENV}={value!r}: give a positive whole number of runs at once (or unset it)")
    return min(int(value), MAX_SLOTS)


def slots(backend: str, gpu: dict | None = None) -> Slots:
    """Runs at once on `backend` on this machine (see the module docstring). `gpu`: the backend probe's
    answer (runs/backend.py), whose `total_memory` spares a call to nvidia-smi."""
    wanted = forced()
    if wanted is not None:
        return Slots(wanted, f"{ENV}={wanted}")
    n = cores()
    by = {"cores": max(1, n // 2) if backend == "gpu" else max(MIN_INTERPRETER, n)}
    ram = host_memory()
    run_memory = limits.RUN_MEMORY.get(backend, limits.RUN_MEMORY["interpreter"])
    if ram:
        by["host memory"] = max(1, int(ram * HOST_SHARE) // run_memory)
    if backend == "gpu":
        total = gpu_memory(gpu)
        if total:
            by["GPU memory"] = max(1, (total - GPU_RESERVE) // (limits.gpu_memory_cap() + CONTEXT_BYTES))
    limit = min(by, key=lambda k: by[k])
    count = min(by[limit], MAX_SLOTS)
    return Slots(count, f"{count} at once, set by {limit} ({', '.join(f'{k}: {v}' for k, v in by.items())})")
