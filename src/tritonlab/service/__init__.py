"""The one surface the CLI, the web server and the notebook call: course, workspace, runs, checks, hints, progress.

A `Service` keeps one warm zygote per backend (started on first use), or the Ray pool of a cluster, and a
bounded number of concurrent runs: one at a time on a GPU, a small pool on the interpreter. Waiting runs queue
in arrival order. This face re-exports what the interfaces may name from the layers below: the errors the
service's methods raise, the limits they enforce and the types they hand out; interfaces import these from
here, never from runs/ or store/.

Modules:
- `facade.py`: `Service`, the methods the interfaces call: the course, the learner's code, `check`.
- `check.py`: `ServiceCheckRun`, the check pipeline with the service's steps: its place in the gate, the
  attempt saved (record), the verdict shown (show), a passing GPU check timed (speed).
- `remote_check.py`: a check graded on a cluster worker from its seed: the spec shipped, what the worker runs
  (the same pipeline), the verdict data taken back and checked field by field.
- `record.py`: the record step: the attempt saved before it is shown, the speed added to it afterwards.
- `speed.py`: the speed step: a passing GPU check timed by two sandboxed runs (perf/speed.py).
- `jobs.py`: every other run through the same gate: a learner's program, harness jobs, `inspect`, `profile`.
- `workers.py`: the backend, the zygotes or the Ray pool, the hardened layer decided, warm-up and close.
- `gate.py`: `FairGate`, the run queue every kind of run of a backend waits in: arrival order, several slots,
  one slot per classroom learner, GPU-timing runs alone, background runs in free slots only.
- `ahead.py`: a saved text's kernels compiled ahead of its check, in a background slot (GPU, local executor).
- `progress.py`: hints and progress.

May import every layer below the interfaces: config, models, content, runs, store, grading, viz, perf,
profiling.
"""

from __future__ import annotations

from tritonlab.grading.kernel_inspect import FEATURE_LABELS as INSPECT_FEATURES
from tritonlab.grading.kernel_inspect import TARGETS as INSPECT_TARGETS
from tritonlab.perf import bench_learner
from tritonlab.profiling import report as profile_text
from tritonlab.runs import backend as backends
from tritonlab.runs import executor as executors
from tritonlab.runs import hardening
from tritonlab.runs.collect import Run
from tritonlab.service.facade import Service
from tritonlab.service.progress import take_hint
from tritonlab.store.code_backups import BackupRefused
from tritonlab.store.disk import DiskFull, is_full
from tritonlab.store.progress import Store
from tritonlab.store.workspace import MAX_SOURCE_BYTES, ConflictError, WorkspaceError

BackendError = backends.BackendError
SandboxUnavailable = hardening.Unavailable
speed_line = bench_learner.speed_line  # the one-line speed report of a verdict, for the interfaces
profile_report = profile_text.format_report  # `profile`'s result as text, for the interfaces
ExecutorError = executors.ExecutorError
disk_is_full = is_full  # ENOSPC, EDQUOT, SQLite's "database or disk is full": for the CLI's last resort
__all__ = [
    "INSPECT_FEATURES",
    "INSPECT_TARGETS",
    "MAX_SOURCE_BYTES",
    "BackendError",
    "BackupRefused",
    "ConflictError",
    "DiskFull",
    "ExecutorError",
    "Run",
    "SandboxUnavailable",
    "Service",
    "Store",
    "WorkspaceError",
    "disk_is_full",
    "open_store",
    "profile_report",
    "speed_line",
    "take_hint",
]


def open_store() -> Store:
    """The progress store of `TRITONLAB_HOME`, for commands that need no course (the terminal quiz)."""
    return Store()
