"""What crosses the wire between the driver and a cluster worker, and how each end checks it.

Jobs carry data only, both ways. The driver ships a run directory's job, its input files and the text of the
learner's file (`payload`); the worker writes them into a run directory of its own node, refusing any name
that could escape it (`write_inputs`, `stage_learner`). Back come numbers, the output text and the bytes of
the plain files the run left (`collect`, `reply`): nothing a learner process produced is ever pickled, as Ray
pickles only this dict of bytes, str, int, float and bool. The driver writes those files into its local run
directory without following anything there (`land`) and hands it to `rundir.sanitize`, like a local run; it
takes only the fields it knows, of the types it expects (`run_result`, `worker_timings`).

A check goes whole (service/remote_check.py): the driver ships its spec (exercise, seed, the text, versions) and
the worker grades it on its node, answering the verdict as JSON text and the output, both bounded; the driver
takes that answer with `check_reply` (size, depth, types) before the service checks every field it keeps.

This module does not import ray: the grader's side of it is tested without a cluster.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from tritonlab import config
from tritonlab.runs import caches, rundir
from tritonlab.runs.collect import LIMITS, RunResult, cpu_seconds, event_count
from tritonlab.runs.executor import ExecutorError
from tritonlab.runs.limits import Limits
from tritonlab.runs.sandbox import SandboxError

SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
RESERVED = {"job.json", "output.log"}
# in a shipped job: the compile cache its run uses (runs/caches.py), named by the server
CACHE_KEY = "run_cache"
MAX_SHIPPED_BYTES = 256 << 20  # inputs to a worker, and files back from it, per run
MAX_LEARNER_BYTES = 1 << 20


def worker_cache(job: dict) -> str | None:
    """The compile cache a shipped job runs with (popped from it): the replay's only for a mode that imports no
    learner file, whatever the job says; a learner's own when named; otherwise (`replay` asked for a learner
    mode, a missing or bad name) none shared: the run compiles into its own directory, never another's cache."""
    named = job.pop(CACHE_KEY, None)
    if job.get("mode") in caches.TRUSTED_MODES:
        return caches.REPLAY
    try:
        if isinstance(named, str) and caches.kind(named) == caches.LEARNER:
            return named
    except ValueError:
        pass
    return None


# ---- driver → worker ------------------------------------------------------------------------------------


def payload(run_dir: Path, cache: str | None) -> tuple[dict, dict[str, bytes], dict | None]:
    """What the driver ships for the job written in `run_dir`: the job (naming compile cache `cache`), the input
    files by name, and the learner's file ({"name", "data", "original"}) when the job names one."""
    job = json.loads((run_dir / "job.json").read_text())
    job[CACHE_KEY] = cache
    inputs, total = {}, 0
    for entry in sorted(os.scandir(run_dir), key=lambda e: e.name):
        if entry.name in RESERVED or not entry.is_file(follow_symlinks=False):
            continue
        total += entry.stat(follow_symlinks=False).st_size
        if total > MAX_SHIPPED_BYTES or not SAFE_NAME.match(entry.name):
            raise ExecutorError(f"cannot ship {entry.name!r} to a worker (name or size)")
        inputs[entry.name] = Path(entry.path).read_bytes()
    learner = None
    if isinstance(job.get("file"), str):
        path = Path(job["file"])
        data = path.read_bytes()
        if len(data) > MAX_LEARNER_BYTES:
            raise ExecutorError(f"{path} is larger than {MAX_LEARNER_BYTES} bytes")
        learner = {"name": path.name, "data": data, "original": str(path)}
    return job, inputs, learner


def write_inputs(run_dir: Path, inputs: dict) -> None:
    """On the worker: the shipped input files, into its run directory, under names that stay inside it."""
    for name, data in inputs.items():
        if not SAFE_NAME.match(name) or name in RESERVED:
            raise ValueError(f"refusing input file name {name!r}")
        (run_dir / name).write_bytes(data)


def stage_learner(learner: dict) -> tuple[Path, Path]:
    """On the worker: the learner's file, copied into a staging folder of its own: (folder, the copy)."""
    staging = Path(tempfile.mkdtemp(prefix="learner-", dir=config.runs_dir()))
    try:
        name = learner["name"] if SAFE_NAME.match(learner["name"]) else "learner.py"
        copy = staging / name
        copy.write_bytes(learner["data"])
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, copy


def limits_from(shipped: dict) -> Limits:
    """The run's limits from the shipped dict (fields Limits does not know are ignored)."""
    fields = {f.name for f in dataclasses.fields(Limits)}
    return Limits(**{k: v for k, v in shipped.items() if k in fields})


# ---- worker → driver ------------------------------------------------------------------------------------


def collect(run_dir: Path, sent: set[str]) -> dict[str, bytes]:
    """The bytes of the plain top-level files a run left (not its inputs, job or log), up to a total cap.
    The run directory was sanitized by Run.wait, so there are no links or FIFOs to follow."""
    files: dict[str, bytes] = {}
    total = 0
    for entry in sorted(os.scandir(run_dir), key=lambda e: e.name):
        if entry.name in RESERVED or entry.name in sent or not SAFE_NAME.match(entry.name):
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        size = entry.stat(follow_symlinks=False).st_size
        if total + size > MAX_SHIPPED_BYTES:
            continue  # what does not come back counts as missing: vet_result marks its case tampered
        with open(entry.path, "rb") as f:
            files[entry.name] = f.read(size)
        total += size
    return files


def reply(result: RunResult, output: str, files: dict[str, bytes], timings: dict) -> dict:
    """The worker's answer, built from plain values it made itself (never an object a run produced)."""
    return {
        "exit_code": None if result.exit_code is None else int(result.exit_code),
        "signal": None if result.signal is None else int(result.signal),
        "timed_out": bool(result.timed_out),
        "stopped": bool(result.stopped),
        "output_truncated": bool(result.output_truncated),
        "seconds": float(result.seconds),
        "cpu_s": None if result.cpu_s is None else float(result.cpu_s),
        "faults": None if result.faults is None else int(result.faults),
        "switches": None if result.switches is None else int(result.switches),
        "limits_hit": [str(x) for x in result.limits_hit if x in LIMITS],
        "gpu_memory_bytes": None if result.gpu_memory_bytes is None else int(result.gpu_memory_bytes),
        "gpu_memory_line": None if result.gpu_memory_line is None else int(result.gpu_memory_line),
        "output": output,
        "files": files,
        "timings": {k: round(v, 4) if isinstance(v, float) else v for k, v in timings.items()},
    }


def land(run_dir: Path, reply: dict) -> None:
    """Write the files that came back into the local run directory, then validate it exactly like a local run."""
    for name, data in dict(reply.get("files", {})).items():
        if not isinstance(name, str) or not SAFE_NAME.match(name) or name in RESERVED:
            continue
        if not isinstance(data, bytes):
            continue
        target = run_dir / name
        if target.is_dir() and not target.is_symlink():
            continue
        target.unlink(missing_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    rundir.sanitize(run_dir)


def worker_timings(reply: dict) -> dict:
    """Where the worker's time went, as `worker.KEY`: numbers only (the worker built them, the learner's run
    did not)."""
    timings = {}
    worker = reply.get("timings")
    if isinstance(worker, dict):
        for key, value in worker.items():
            if isinstance(key, str) and isinstance(value, int | float | bool):
                timings[f"worker.{key}"] = value
    return timings


def limits_hit(value: object) -> list[str]:
    """The limits a worker says a run hit: only names of LIMITS, each once, from a list; anything else is none."""
    if not isinstance(value, list) or len(value) > 2 * len(LIMITS):
        return []
    return [name for name in LIMITS if name in value]


def run_result(run_dir: Path, reply: dict, before: str, started: float, timings: dict) -> RunResult:
    """The run's result from the worker's reply: only the fields a RunResult has, each of its own type;
    `before` is what earlier, lost attempts showed."""

    def number(key: str) -> int | None:
        value = reply.get(key)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    return RunResult(
        run_dir=run_dir,
        exit_code=number("exit_code"),
        signal=number("signal"),
        timed_out=reply.get("timed_out") is True,
        stopped=reply.get("stopped") is True,
        output_truncated=reply.get("output_truncated") is True,
        output=before + str(reply.get("output", "")),
        seconds=float(reply.get("seconds") or (time.monotonic() - started)),
        cpu_s=cpu_seconds(reply.get("cpu_s")),
        faults=event_count(reply.get("faults")),
        switches=event_count(reply.get("switches")),
        limits_hit=limits_hit(reply.get("limits_hit")),
        gpu_memory_bytes=event_count(reply.get("gpu_memory_bytes")),
        gpu_memory_line=event_count(reply.get("gpu_memory_line")),
        timings={k: round(v, 4) if isinstance(v, float) else v for k, v in timings.items()},
    )


# ---- a whole check on a worker (service/remote_check.py): a spec out, verdict data back -------------------

MAX_CHECK_REPLY_BYTES = 1_000_000  # one check's reply: the verdict's JSON text and the output cut to a bound
MAX_VERDICT_DEPTH = 8  # a verdict nests four levels (timings' run phases); a little room, no more
MAX_REASON = 4000


def size(data: object) -> int:
    """Bytes a spec or a reply of plain data (str, numbers, flags, dicts, lists) weighs on the wire, as JSON."""
    return len(json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def check_reply(reply: object) -> dict:
    """A worker's answer to a check, as the driver takes it: {"lost": text} or {"refused": text}, or
    {"verdict": dict, "output": text} from the verdict's JSON text (at most MAX_CHECK_REPLY_BYTES with the
    output, nested at most MAX_VERDICT_DEPTH). Anything else raises SandboxError; the verdict's own fields
    are checked by the service (remote_check.verdict_from_worker)."""
    if not isinstance(reply, dict):
        raise SandboxError("the worker's answer to a check is not a dict")
    for key in ("lost", "refused"):
        if reply.get(key) is not None:
            if not isinstance(reply[key], str):
                raise SandboxError(f"the worker's answer has a bad {key!r}")
            return {key: reply[key][:MAX_REASON]}
    text, output = reply.get("verdict"), reply.get("output")
    if not isinstance(text, str) or not isinstance(output, str):
        raise SandboxError("the worker's answer to a check has no verdict text and output")
    data = text.encode("utf-8", "surrogatepass")
    if len(data) + len(output.encode("utf-8", "surrogatepass")) > MAX_CHECK_REPLY_BYTES:
        raise SandboxError(f"the worker's answer to a check is over {MAX_CHECK_REPLY_BYTES} bytes")
    if rundir.json_depth(data) > MAX_VERDICT_DEPTH:
        raise SandboxError("the worker's verdict nests too deep")
    try:
        verdict = json.loads(text)
    except (ValueError, RecursionError):
        raise SandboxError("the worker's verdict is not JSON") from None
    if not isinstance(verdict, dict):
        raise SandboxError("the worker's verdict is not a JSON object")
    return {"verdict": verdict, "output": output}
