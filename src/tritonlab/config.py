"""Where things live, and the environment variables that move them.

TRITONLAB_HOME    data directory (progress database, caches); default: the platform's user data dir
TRITONLAB_COURSE  course folder; default: the repo's course/ (editable install) or the packaged copy
TRITONLAB_BACKEND auto | interpreter | gpu (default auto)
TRITONLAB_LANG    en | pt | es (default: from the system locale, else en)
TRITONLAB_POOL    warm single-use run workers per zygote (default: 2 on a GPU, 0 on the interpreter; runs/pool.py)
TRITONLAB_DAEMON  0 turns off the per-user background check worker one-shot CLI checks reuse (default on; cli/daemon.py)
TRITONLAB_DAEMON_IDLE  seconds the check daemon waits idle before it ends (default 600)
TRITONLAB_CASE_CACHE_MB  memory for cases kept per seed (default 2048; grading/case_cache.py)
TRITONLAB_PRECOMPILE  0 turns off compiling a GPU check's kernels ahead (beside the check child, and all at once
                  in the replay child; default on; grading/check/precompile.py)
TRITONLAB_PREDICT  1 compiles ahead a learner's first check of an exercise, its kernels predicted from the
                  reference solution on the check's own cases (default off: under load it cost more CPU than it
                  saved, docs/grader.md "Compiled ahead"; grading/replay/predict.py)
TRITONLAB_CUDA_SYNC  spin: GPU runs' CUDA contexts wait for the GPU as the driver chooses (a process with one
                  context spins a core); default: they wait asleep (CU_CTX_SCHED_BLOCKING_SYNC; runs/pool.py)
TRITONLAB_CUDA_CONNECTIONS  driver: GPU runs' CUDA contexts get the driver's default count of hardware work
                  queues (8); a number from 1 to 32 sets it; default: 1 (CUDA_DEVICE_MAX_CONNECTIONS, unless set;
                  `cuda_context_env`)
TRITONLAB_GPU_MEMORY_LINE  off: no GPU run is ended for the GPU memory its processes hold by the driver's count
                  (only torch's soft cap stays); a number of seconds from 0.05 to 10 sets how often that count is
                  read; default: every 0.5 s (`gpu_memory_line`; runs/gpu_memory.py)
TRITONLAB_THREAD_WAIT  spin: the CPU thread pools (OpenMP's for torch, OpenBLAS's for numpy) keep their libraries'
                  habit of spinning after each parallel call; default: they sleep at once (OMP_WAIT_POLICY,
                  OPENBLAS_THREAD_TIMEOUT, unless set; `thread_wait_env`)
TRITONLAB_ARGON2  classroom password hashing cost `t=2,m=32768,p=1` (time cost, memory KiB, lanes; the default:
                  above OWASP's minimum, cheap enough for a class's log-in burst; docs/classroom.md,
                  "Password hashing cost")
"""

from __future__ import annotations

import os
from pathlib import Path

LANGUAGES = ("en", "pt", "es")
BACKENDS = ("auto", "interpreter", "gpu")
# The largest learner file accepted (a save, a check's text): the workspace enforces it, the web sizes bodies by it.
MAX_SOURCE_BYTES = 512 * 1024


# The CPU thread pools' idle habit, made a sleep instead of a spin (`thread_wait_env`). After each parallel call,
# OpenBLAS's workers (numpy's matrix products: the server's float64 references) spin about 2**28 cycles each
# (~0.1 s) and libgomp's (torch's CPU operations) spin too: on a 16-core host every such call burns up to 1.5
# core-seconds of waiting, which a loaded server or run pays in real CPU (docs/scale.md, "Threads that wait").
THREAD_WAIT_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}


def thread_wait_env() -> dict[str, str]:
    """The variables that make idle CPU thread pools sleep at once, less those already set; {} with
    TRITONLAB_THREAD_WAIT=spin. Read by the libraries when they load: `quiet_thread_pools` sets them in this
    process before numpy or torch is imported (the CLI's start), runs/limits.py in every run's environment."""
    if os.environ.get("TRITONLAB_THREAD_WAIT", "").strip().lower() == "spin":
        return {}
    return {k: v for k, v in THREAD_WAIT_DEFAULTS.items() if k not in os.environ}


# A GPU run's CUDA context with one hardware work queue instead of the driver's 8 (`cuda_context_env`). Every
# run is a process with a context of its own, and the driver makes and ends contexts one at a time: on an H100
# (H100-80GB-HBM3 run 2026-12-07 (93733f6), benchmarks/cuda_contexts.py) 8 processes at once made and ended
# 4.8 contexts a second with the default and 12.8 with one queue each (one alone took 0.24 s to make with
# the default, 0.17 s with one queue).
# A check's runs launch on one stream, which needs one queue; only kernels of several streams would overlap less.
CUDA_CONNECTIONS = "1"


def cuda_context_env() -> dict[str, str]:
    """The variable that gives a GPU run's CUDA context `CUDA_CONNECTIONS` hardware work queues, for every run's
    environment (runs/limits.py): {} when the host set CUDA_DEVICE_MAX_CONNECTIONS itself or asked for the
    driver's default (TRITONLAB_CUDA_CONNECTIONS=driver); a count from 1 to 32 in TRITONLAB_CUDA_CONNECTIONS
    wins over the default."""
    value = os.environ.get("TRITONLAB_CUDA_CONNECTIONS", "").strip().lower()
    if value == "driver" or "CUDA_DEVICE_MAX_CONNECTIONS" in os.environ:
        return {}
    if value.isdigit() and 1 <= int(value) <= 32:
        return {"CUDA_DEVICE_MAX_CONNECTIONS": str(int(value))}
    return {"CUDA_DEVICE_MAX_CONNECTIONS": CUDA_CONNECTIONS}


GPU_MEMORY_POLL_S = 0.5


def gpu_memory_line() -> float | None:
    """Seconds between two readings of the driver's count of GPU memory (runs/gpu_memory.py), from
    TRITONLAB_GPU_MEMORY_LINE (0.05 to 10; `off`: None, no line; anything else: the default)."""
    value = os.environ.get("TRITONLAB_GPU_MEMORY_LINE", "").strip().lower()
    if value == "off":
        return None
    try:
        seconds = float(value)
    except ValueError:
        return GPU_MEMORY_POLL_S
    return seconds if 0.05 <= seconds <= 10 else GPU_MEMORY_POLL_S


def quiet_thread_pools() -> None:
    """Set `thread_wait_env` in this process's environment (effective only before numpy and torch load)."""
    os.environ.update(thread_wait_env())


def home() -> Path:
    env = os.environ.get("TRITONLAB_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("tritonlab", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


WORKSPACE_MARKER = ".tritonlab-workspace"


def workspace_root(start: Path | None = None) -> Path:
    """The workspace for the folder `start` (default: the current one): a parent holding the marker file, else
    $TRITONLAB_WORKSPACE, else TRITONLAB_HOME/workspace. Here, not in store/, because the check daemon's client
    (cli/daemon.py) needs it and may import only the standard library and this module."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / WORKSPACE_MARKER).is_file():
            return folder
    env = os.environ.get("TRITONLAB_WORKSPACE")
    if env:
        return Path(env).expanduser().resolve()
    return home() / "workspace"


def course_dir() -> Path:
    env = os.environ.get("TRITONLAB_COURSE")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent
    repo_course = here.parent.parent / "course"  # src/tritonlab -> repo root
    if (repo_course / "course.toml").is_file():
        return repo_course
    return here / "course"  # the wheel's copy


def database_path() -> Path:
    return home() / "progress.sqlite3"


def runs_dir() -> Path:
    path = home() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


TRITON_CACHES = {
    "learner": "triton-cache",
    "trusted": "triton-cache-trusted",
    "replay": "triton-cache-replay",
}


def triton_cache_dir(kind: str = "learner") -> Path:
    """Triton's compile cache (TRITON_CACHE_DIR), private to this user (0700).

    `learner`: handed to the learner's runs, and to nothing else (compiled learner kernels are the learner's);
    `trusted`: tritonlab's own processes that compile the course's reference kernels (`tritonlab bench`,
    the roof measurement); never handed to a run; `replay`: the grader's children that import no learner file
    (runs/caches.py). Under the hardened layer a run sees none of these (its cache is under the runs folder,
    runs/caches.py); under layer 1 a run has the user's own rights, so keeping
    trusted code off the learner's cache is what stops a planted binary from reaching a reference process.
    """
    path = home() / TRITON_CACHES[kind]
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def use_trusted_triton_cache() -> Path:
    """Point this (trusted) process's Triton at the trusted cache; call before triton compiles anything."""
    path = triton_cache_dir("trusted")
    os.environ["TRITON_CACHE_DIR"] = str(path)
    return path


def default_backend() -> str:
    value = os.environ.get("TRITONLAB_BACKEND", "auto").strip().lower()
    return value if value in BACKENDS else "auto"


def language(explicit: str | None = None) -> str:
    """The learner's language: --lang, then TRITONLAB_LANG, then the locale, else English."""
    for candidate in (explicit, os.environ.get("TRITONLAB_LANG")):
        if candidate:
            code = candidate.strip().lower()[:2]
            if code in LANGUAGES:
                return code
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        code = os.environ.get(var, "").strip().lower()[:2]
        if code in LANGUAGES:
            return code
    return "en"


# argon2id cost for classroom passwords: RFC 9106's recommendation for machines without GiBs to spare, and
# argon2-cffi's own default, so hashes made before this setting existed never need rehashing.
ARGON2_DEFAULT = {"t": 2, "m": 32768, "p": 1}  # docs/classroom.md, "Password hashing cost"
ARGON2_FLOOR = {"t": 2, "m": 19456, "p": 1}  # OWASP's minimum for argon2id: below it `argon2_is_weak()`


def argon2_cost() -> dict[str, int]:
    """{t: time cost, m: memory in KiB, p: lanes} from TRITONLAB_ARGON2 (`t=2,m=32768,p=1`, any subset),
    else the default. A malformed value is an error, never silently the default."""
    cost = dict(ARGON2_DEFAULT)
    raw = os.environ.get("TRITONLAB_ARGON2", "").strip()
    if not raw:
        return cost
    for part in raw.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in cost or not value.strip().isdigit():
            raise ValueError(
                f"TRITONLAB_ARGON2={raw!r}: expected t=N,m=KiB,p=N (for example t=3,m=65536,p=4)"
            )
        cost[key] = int(value)
    if cost["t"] < 1 or cost["p"] < 1 or cost["m"] < 8 * cost["p"]:
        raise ValueError(f"TRITONLAB_ARGON2={raw!r}: needs t >= 1, p >= 1 and m >= 8 * p KiB")
    return cost


def argon2_is_weak(cost: dict[str, int]) -> bool:
    return cost["t"] < ARGON2_FLOOR["t"] or cost["m"] < ARGON2_FLOOR["m"]


def precompile_enabled() -> bool:
    """TRITONLAB_PRECOMPILE (default on): compile a GPU check's kernels ahead (grading/check/precompile.py)."""
    return os.environ.get("TRITONLAB_PRECOMPILE", "").strip() != "0"


def predict_enabled() -> bool:
    """TRITONLAB_PREDICT=1 (default off): a first check's kernels, predicted from the reference solution, are
    compiled ahead like a next check's (grading/replay/predict.py); TRITONLAB_PRECOMPILE=0 turns this off too."""
    return precompile_enabled() and os.environ.get("TRITONLAB_PREDICT", "").strip() == "1"
