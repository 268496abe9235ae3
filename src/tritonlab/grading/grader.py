"""PARENT side of `check`: make the cases, run the learner's function in a sandboxed child, judge.

The child returns raw outputs (.npy, no pickle) and telemetry (JSON); every verdict is computed here, from
the contract's float64 reference. Nothing the learner's file does in the child can change that.
"""

from __future__ import annotations

import json
import random
import signal as signals
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tritonlab import config
from tritonlab.grading import case_cache, contracts, huge
from tritonlab.grading import where as lines
from tritonlab.grading.contracts import DEVICE, Case, Tensor
from tritonlab.models import CaseResult, Exercise, Failure, Verdict
from tritonlab.runs import caches, pool, rundir, runfolder, sandbox
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import Limits, default_limits

SIGNAL_NAMES = {
    signals.SIGSEGV: "SIGSEGV",
    signals.SIGABRT: "SIGABRT",
    signals.SIGBUS: "SIGBUS",
    signals.SIGKILL: "SIGKILL",
    signals.SIGXCPU: "SIGXCPU",
    signals.SIGXFSZ: "SIGXFSZ",
    signals.SIGFPE: "SIGFPE",
    signals.SIGILL: "SIGILL",
}


def encode_arg(arg: object, case_index: int, arg_index: str, run_dir: Path) -> object:
    if isinstance(arg, huge.Generated):  # made on the device by the child (a huge case)
        return {"generated": arg.spec(), "label": f"input `{arg_index}`"}
    if isinstance(arg, Tensor):
        name = f"c{case_index}_a{arg_index}.npy"
        np.save(run_dir / name, contracts.to_storage(arg.values, arg.dtype), allow_pickle=False)
        return {"tensor": name, "dtype": arg.dtype, "layout": arg.layout, "label": f"input `{arg_index}`"}
    if arg is DEVICE:
        return {"device": True}
    return {"value": arg}


SNAPSHOT_DIR = "submitted"


def snapshot(run_dir: Path, file: Path, source: str) -> Path:
    """Write the exact text being graded into the run's own directory, under the learner's file name.

    The child imports this copy, never the workspace file: a save that lands while the check waits in the
    queue (or while the child starts) cannot change what this check grades."""
    folder = run_dir / SNAPSHOT_DIR
    folder.mkdir()
    copy = folder / file.name
    copy.write_bytes(source.encode("utf-8", errors="surrogateescape"))  # read_source's bytes, exactly
    return copy


def read_source(file: Path) -> str | None:
    """The learner's file as text, or None when it cannot be read (the child then reports the error)."""
    try:
        return Path(file).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError:
        return None


def rename_in_verdict(verdict: Verdict, copy: Path, original: Path) -> None:
    """Name the learner's own file, not the run's snapshot of it, in every message of the verdict."""
    old, new = str(copy), str(original)

    def fix(text: str) -> str:
        return text.replace(old, new) if text else text

    verdict.failures = [
        Failure(f.case, f.kind, fix(f.message), fix(f.cause), fix(f.where)) for f in verdict.failures
    ]
    verdict.notes = [fix(n) for n in verdict.notes]
    verdict.output = fix(verdict.output)


def encode_case(case: Case, i: int, arg_names: list[str] | None, run_dir: Path) -> tuple[list, dict]:
    """A case's arguments as job specs, its tensors written as .npy files into `run_dir`."""
    names = arg_names or [str(j) for j in range(len(case.args))]
    args = [
        encode_arg(a, i, names[j] if j < len(names) else str(j), run_dir) for j, a in enumerate(case.args)
    ]
    kwargs = {k: encode_arg(v, i, k, run_dir) for k, v in case.kwargs.items()}
    return args, kwargs


def write_job(
    exercise: Exercise,
    file: Path,
    backend: str,
    cases: list[Case],
    run_dir: Path,
    arg_names: list[str] | None = None,
    search_dir: Path | None = None,
) -> None:
    job_cases = []
    for i, case in enumerate(cases):
        args, kwargs = encode_case(case, i, arg_names, run_dir)
        job_cases.append(
            {
                "name": case.name,
                "args": args,
                "kwargs": kwargs,
                "extra": case.extra,
                "expect_error": case.expect_error,
            }
        )
    job = {
        "mode": "check",
        "exercise": exercise.id,
        "function": exercise.function,
        "file": str(file),
        "backend": backend,
        "cases": job_cases,
    }
    if search_dir is not None:  # where the learner's own modules live (the file itself is a snapshot)
        job["search_dir"] = str(search_dir)
    (run_dir / "job.json").write_text(json.dumps(job))


MIN_OUTPUT_BYTES = 64 << 20  # what a run may return in arrays, at least (the cases' inputs decide above)
ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
ITEMSIZE |= {"int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}


def output_budget(cases: list[Case]) -> int:
    """Bytes of output arrays the parent loads from one check: four times the inputs, at least 64 MiB."""
    inputs = sum(
        int(a.values.size) * 8
        for case in cases
        for a in (*case.args, *case.kwargs.values())
        if isinstance(a, Tensor)
    )
    return max(MIN_OUTPUT_BYTES, 4 * inputs)


def _is_shape(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(d, int) and 0 <= d < 1 << 40 for d in value)


def vet_entries(data: object) -> dict:
    """The parts of result.json the grader relies on have the types it expects; else Malformed."""
    if not isinstance(data, dict):
        raise rundir.Malformed("result.json is not a JSON object")
    err = data.get("import_error")
    if err is not None and not (
        isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("type", "message"))
    ):
        raise rundir.Malformed("result.json has an import_error without a type and message")
    cases = data.get("cases", [])
    if not isinstance(cases, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in cases
    ):
        raise rundir.Malformed("result.json's cases are not named objects")
    for entry in cases:
        outputs = entry.get("outputs", [])
        if not isinstance(outputs, list) or not all(
            isinstance(o, dict) and _is_shape(o.get("shape")) and isinstance(o.get("dtype"), str)
            for o in outputs
        ):
            raise rundir.Malformed(f"case {entry['name']!r} lists outputs without a shape and dtype")
    return data


def read_result(run_dir: Path, budget_bytes: int = MIN_OUTPUT_BYTES) -> dict:
    """result.json and its output arrays, validated before use (sizes, depth, shapes, dtypes, a byte budget
    for the whole run). Raises rundir.Malformed; {} when the run wrote no result."""
    data = rundir.read_json(run_dir / "result.json")
    if data is None:
        return {}
    vet_entries(data)
    budget, seen = rundir.NpyBudget(budget_bytes), set()
    for entry in data.get("cases", []):
        arrays = []
        for out in entry.get("outputs", []):
            name = out["file"]
            if name in seen:
                raise rundir.Malformed(f"{name} is named as more than one output")
            seen.add(name)
            arrays.append(rundir.read_npy(run_dir / name, budget, out["shape"], ITEMSIZE.get(out["dtype"])))
        entry["arrays"] = arrays
    return data


def malformed_failure(problem: rundir.Malformed) -> Failure:
    return Failure(
        "result",
        "crash",
        problem.message,
        "the harness writes these files itself: a program that writes result files of its own, or very "
        "large outputs, is stopped here",
    )


def line_containing(file: Path, needle: str) -> str:
    try:
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if needle in line and not line.lstrip().startswith("#"):
                return f"{file}:{number}"
    except OSError:
        pass
    return ""


LOOK_FOR = {
    "unwritten-output": "tl.store",
    "out-of-bounds-write": "tl.store",
    "out-of-bounds-read": "tl.load",
}


def where_to_look(failure: Failure, file: Path, function: str) -> Failure:
    """Fill in `where` when the evidence named no line: the last `return` of a function that launched nothing
    (the host computed what it returns), else the first line of the kind's usual suspect."""
    if failure.where:
        return failure
    where = ""
    if failure.kind in ("no-kernel-launch", "torch-fallback"):
        where = lines.return_line(file, function)
    needle = LOOK_FOR.get(failure.kind)
    if failure.kind in ("no-kernel-launch", "torch-fallback", "missing-validation"):
        needle = f"def {function}"
    where = where or (line_containing(file, needle) if needle else "")
    if not where:
        return failure
    return Failure(failure.case, failure.kind, failure.message, failure.cause, where)


def process_failure(case_name: str, run: RunResult) -> Failure:
    if run.timed_out:
        return Failure(
            case_name,
            "timeout",
            f"still running after {run.seconds:.0f} s; the run was stopped",
            "an endless loop in the host code, or a grid far larger than the input needs",
        )
    if run.output_truncated:
        return Failure(
            case_name,
            "crash",
            "the program printed more than the output limit; the run was stopped",
            "remove prints from loops (and tl.device_print from kernels) before checking",
        )
    if run.folder_full:
        return Failure(
            case_name,
            "crash",
            f"{run.folder_full} (the run directory's cap); it was stopped",
            "write only the outputs the check asks for, not thousands of files",
        )
    if run.sandbox_error:
        return Failure(case_name, "crash", run.sandbox_error, "a problem of the server, not of your code")
    if "memory" in run.limits_hit:
        return Failure(
            case_name,
            "crash",
            "the run used more memory than its limit (all its processes together); it was stopped",
            "a far too large allocation, or processes forked that each allocate",
        )
    if "processes" in run.limits_hit and run.signal is not None:
        return Failure(
            case_name,
            "crash",
            "the run tried to start more processes or threads than its limit allows",
            "a fork loop, or many threads",
        )
    sig = run.signal
    name = SIGNAL_NAMES.get(sig, f"signal {sig}") if sig else f"exit status {run.exit_code}"
    if sig == signals.SIGXCPU:
        return Failure(
            case_name, "timeout", "used up its CPU-time limit", "an endless loop or a far too large grid"
        )
    cause = (
        "most likely an out-of-bounds store: a store without a mask wrote past the end of a buffer and "
        "corrupted memory — mask every tl.store with `offsets < n`"
    )
    if sig == signals.SIGKILL:
        cause = "killed: it used too much memory, or was stopped"
    elif sig is None and run.exit_code == pool.HARNESS_EXIT:
        cause = (
            f"exit status {pool.HARNESS_EXIT} is what tritonlab's own run harness exits with when it cannot set up "
            "or finish a run (unless your code called os._exit with it): check again; if it repeats, run "
            "`tritonlab daemon stop` and `tritonlab doctor`"
        )
    return Failure(
        case_name, "crash", f"the process running your kernel died ({name}) during this case", cause
    )


def make_cases(contract: object, seed: int, backend: str, huge_cases: bool = False) -> list[Case]:
    """The contract's cases; with `huge_cases` (a GPU check only) also its ≥ 2³¹-element ones (grading/huge.py)."""
    rng = np.random.default_rng(seed)
    cases = contract.cases(rng, backend)
    if huge_cases and hasattr(contract, "huge_cases"):
        cases += contract.huge_cases(rng)
    return cases


def prepare_references(contract: object, cases: list[Case]) -> None:
    """Make the float64 references and tolerances of these cases now (the contract's `prepare`, memoised on
    each case): called beside the next seed's cases, so that judging them later only compares."""
    prepare = getattr(contract, "prepare", None)
    if prepare is None:
        return
    for case in cases:
        if case.expect_error or case.extra.get("huge"):
            continue
        try:
            prepare(case)
        except Exception:  # noqa: BLE001 - the judge computes it again and reports what is wrong there
            return


def check(
    exercise: Exercise,
    file: Path,
    backend: str,
    zygote: sandbox.Zygote,
    seed: int | None = None,
    timeout: float = 120.0,
    on_output: Callable[[str], None] | None = None,
    on_start: Callable[[Run], None] | None = None,
    keep_run_dir: bool = False,
    source: str | None = None,
    huge_cases: bool = False,
    cache: str = caches.LEARNER,
) -> Verdict:
    """Grade `source` (the text a request sent), or else `file`'s text as read now, under `file`'s name. With
    `huge_cases` (GPU only), the contract's ≥ 2³¹-element cases run too. `cache`: the learner's compile
    cache, for the run of their code (the replay and the trusted compile use the replay's: runs/caches.py)."""
    started = time.monotonic()
    file = Path(
        file
    ).resolve()  # the child runs in its own directory: a relative path would not resolve there
    if source is None:
        source = read_source(file)
    seed = int(seed if seed is not None else random.SystemRandom().randrange(1, 2**31))
    contract = contracts.get(exercise.id)
    cases = case_cache.CASES.get(
        (exercise.id, backend, seed) + (("huge",) if huge_cases else ()),
        lambda: make_cases(contract, seed, backend, huge_cases),
    )
    verdict = Verdict(exercise=exercise.id, backend=backend, seed=seed, file=str(file))
    timings = verdict.timings  # where this check's time went (seconds), per phase, in the verdict JSON
    timings["cases_s"] = time.monotonic() - started
    run_dir = zygote.new_run_dir(cache=cache)[0]  # a warm child may be bound to it already
    graded = file
    compiling: TrustedCompile | None = None
    try:
        if source is not None:
            graded = snapshot(run_dir, file, source)
        write_job(
            exercise,
            graded,
            backend,
            cases,
            run_dir,
            getattr(contract, "ARG_NAMES", None),
            search_dir=file.parent if graded != file else None,
        )
        timings["write_job_s"] = time.monotonic() - started - timings["cases_s"]
        # The trusted compile reads only the text, never the check's results: it runs beside the check run
        # (on the interpreter it is a second process on another core; it is judged only when the check ran).
        compiling = (
            TrustedCompile(contract, file, source, backend, zygote, timeout)
            if hasattr(contract, "compile_items")
            else None
        )
        mark = time.monotonic()
        handle = zygote.start(run_dir, run_limits(backend, timeout, cases))
        if on_start:
            on_start(handle)
        run = handle.wait(on_output)
        timings["check_run_s"] = time.monotonic() - mark
        if run.timings:
            timings["check_run"] = run.timings
        verdict.output = run.output
        try:
            result = read_result(run_dir, output_budget(cases))
            child_seconds(
                timings,
                "check_child",
                [e.get("seconds") for e in result.get("cases", []) if isinstance(e, dict)],
            )
            policy = host_policy(exercise)
            attach_replayed_launches(contract, cases, result, run_dir)

            def judge(into: Verdict, outcome: dict) -> None:
                judge_all(into, contract, cases, outcome, run, graded, exercise.function, policy)

            early: EarlyJudge | None = None
            if source is not None and not run.timed_out:
                # judged while the replay runs; kept unless the replay changes what the judgement reads
                early = EarlyJudge(judge, verdict, result)
                mark = time.monotonic()
                replay_cases(
                    contract, cases, result, run_dir, source, file, backend, zygote, timeout, timings
                )
                timings["replay_s"] = time.monotonic() - mark
            mark = time.monotonic()
            if early is None or not early.take(verdict, result):
                judge(verdict, result)
            timings["judge_s"] = time.monotonic() - mark
            if early is not None:
                timings["judged_early"] = early.taken
        except rundir.Malformed as problem:
            verdict.failures = [malformed_failure(problem)]
            verdict.cases = [CaseResult(c.name, False) for c in cases]
            result = {}
        if compiling is not None:
            if result and not result.get("import_error"):
                compiling.finish(verdict)
                timings["compile_s"] = compiling.seconds
            else:
                compiling.stop()
        if graded != file:
            rename_in_verdict(verdict, graded, file)
    finally:
        if compiling is not None:
            compiling.stop()  # a check that raised or was stopped: never leave the compile running
        if not keep_run_dir:
            runfolder.remove_run_dir(run_dir)
    verdict.duration_s = time.monotonic() - started
    return verdict


def run_limits(backend: str, timeout: float, cases: list[Case]) -> Limits:
    """A check's run limits: the defaults, with a GPU memory cap raised to what its huge cases need."""
    limits = default_limits(backend, timeout)
    need = huge.gpu_bytes_needed(cases)
    if limits.gpu_memory_bytes is not None and need > limits.gpu_memory_bytes:
        limits.gpu_memory_bytes = need
    return limits


class EarlyJudge:
    """`judge_all` on a copy of the check child's result, in a thread started before the replay run: the
    parent only waits for that run, so the float64 comparisons (0.3–0.7 s for a GPU check's cases, measured
    on the H200) cost no time. The replay may then set fields the judgement reads (a host-computed result, the
    tile map it saw, a huge case's summary); `take` keeps the early judgement only when it set none of them
    on any case, else the caller judges again from the replayed result."""

    def __init__(self, judge: Callable[[Verdict, dict], None], verdict: Verdict, result: dict) -> None:
        self.taken = False
        self.before = self._snapshot(result)
        entries = [dict(e) if isinstance(e, dict) else e for e in result.get("cases", [])]
        self.copy = {**result, "cases": entries}
        self.scratch = Verdict(
            exercise=verdict.exercise, backend=verdict.backend, seed=verdict.seed, file=verdict.file
        )
        self.problem: BaseException | None = None
        self.thread = threading.Thread(target=self._judge, args=(judge,), name="judge", daemon=True)
        self.thread.start()

    @staticmethod
    def _snapshot(result: dict) -> list[tuple]:
        """What replay_cases may set on each entry: a host-computed reason, a new tile map, a huge summary."""
        return [
            (bool(e.get("host_computed")), id(e.get("data")), id(e.get("huge_summary")))
            if isinstance(e, dict)
            else None
            for e in result.get("cases", [])
        ]

    def _judge(self, judge: Callable[[Verdict, dict], None]) -> None:
        try:
            judge(self.scratch, self.copy)
        except BaseException as exc:  # noqa: BLE001 - re-raised by judging again in the caller's thread
            self.problem = exc

    def take(self, verdict: Verdict, result: dict) -> bool:
        """Move the early judgement into `verdict` when it still holds; False: judge again."""
        self.thread.join()
        if self.problem is not None or self._snapshot(result) != self.before:
            return False
        verdict.failures.extend(self.scratch.failures)
        verdict.cases.extend(self.scratch.cases)
        verdict.notes.extend(self.scratch.notes)
        self.taken = True
        return True


def child_seconds(timings: dict, name: str, values: list) -> None:
    """What a child said its own cases took (diagnostics only, never judged: a learner's process wrote it):
    the sum, and the first one (which pays the kernel's compile), when they are plain numbers."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    numbers = [v for v in numbers if 0 <= v < 1e6]
    if numbers:
        timings[f"{name}_s"] = sum(numbers)
        timings[f"{name}_first_s"] = numbers[0]


# ---- the fresh replay: the launches alone, in a child that never imports the learner's module ------------

RECORD_BYTES = 8 << 20  # a case's launch record (hostile data: the check child ran learner code)


def read_record(run_dir: Path, index: int) -> dict | str:
    """A case's launch record as parsed JSON, or why there is none usable."""
    path = run_dir / f"c{index}_launches.json"
    try:
        if path.is_symlink() or not path.is_file():
            return "no launch record was written"
        if path.stat().st_size > RECORD_BYTES:
            return "the launch record is too large"
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return "the launch record cannot be read"
    return data if isinstance(data, dict) else "the launch record is malformed"


def replay_cases(
    contract: object,
    cases: list[Case],
    result: dict,
    run_dir: Path,
    source: str,
    file: Path,
    backend: str,
    zygote: sandbox.Zygote,
    timeout: float,
    timings: dict | None = None,
) -> None:
    """Redo each returned case's recorded launches in a fresh child (grading/replay.py) and compare its
    outputs with what the check child returned: a difference is the host's doing (`host_computed`).
    `timings` (the verdict's) gets the replay run's phases when the run was remote."""
    if not getattr(contract, "REPLAY", True) or result.get("import_error"):
        return
    entries = {e.get("name"): e for e in result.get("cases", []) if isinstance(e, dict)}
    todo: list[tuple[int, dict, dict]] = []
    for i, case in enumerate(cases):
        entry = entries.get(case.name)
        if (
            entry is None
            or entry.get("status") != "returned"
            or case.expect_error
            or entry.get("host_computed")
        ):
            continue
        record = read_record(run_dir, i)
        if isinstance(record, str):
            entry["host_computed"] = record
            continue
        events = record.get("events")
        launched = isinstance(events, list) and any(
            isinstance(e, dict) and e.get("op") == "launch" for e in events
        )
        if not launched:
            if entry.get("launches"):
                entry["host_computed"] = "the launch record has no launch, yet launches were counted"
            continue  # judged as no-kernel-launch (or an empty case, where nothing is computed)
        todo.append((i, entry, record))
    if not todo:
        return
    replay_dir = zygote.new_run_dir(cache=caches.REPLAY)[0]
    try:
        (replay_dir / "source.py").write_bytes(source.encode("utf-8", errors="surrogateescape"))
        job_cases = []
        for i, _entry, record in todo:
            args, kwargs = encode_case(cases[i], i, getattr(contract, "ARG_NAMES", None), replay_dir)
            job_case = {"index": i, "args": args, "kwargs": kwargs, "record": record}
            if cases[i].extra.get("huge"):
                job_case["huge"] = cases[i].extra["huge"]
            job_cases.append(job_case)
        job = {
            "mode": "replay",
            "backend": backend,
            "file": str(file),
            "source": "source.py",
            "cases": job_cases,
            "tile_map": bool(getattr(contract, "TILE_MAP", False)),
        }
        (replay_dir / "job.json").write_text(json.dumps(job))
        run = zygote.start(replay_dir, run_limits(backend, timeout, [cases[i] for i, _e, _r in todo])).wait()
        if timings is not None:
            timings["replay_run_s"] = run.seconds
            if run.timings:
                timings["replay_run"] = run.timings
        try:
            reply = rundir.read_json(replay_dir / "replay.json")  # capped and depth-checked like any run's
            replayed = reply.get("cases", {})
            result["replay_seconds"] = {k: reply.get(k) for k in ("lower_seconds", "seconds")} | {
                "wall": run.seconds
            }
            if timings is not None:
                child_seconds(timings, "replay_child", [reply.get("seconds")])
        except (OSError, ValueError, AttributeError, rundir.Malformed):
            replayed = {}
        atomics = backend == "gpu" and "atomic_" in source
        # a case whose check child ran the kernels through the interpreter on a GPU, the replay compiled
        interpreted = getattr(contract, "interpreted_on_gpu", None) if backend == "gpu" else None
        for i, entry, _record in todo:
            got = replayed.get(str(i))
            if got is None:
                how = "timed out" if run.timed_out else f"ended ({run.signal or run.exit_code})"
                entry["host_computed"] = f"the replay of your launches {how} before this case"
            elif got.get("refused"):
                entry["host_computed"] = str(got["refused"])[:600]
            elif cases[i].extra.get("huge"):
                entry["huge_summary"] = got.get("huge")
                entry["host_computed"] = compare_huge(entry, got.get("huge"))
            else:
                arrays = [np.load(replay_dir / name, allow_pickle=False) for name in got.get("outputs", [])]
                tolerant = ROUNDING if interpreted and interpreted(cases[i]) else atomics
                entry["host_computed"] = compare_replay(
                    entry, arrays, tolerant=tolerant, indices=getattr(contract, "REPLAY_OUTPUTS", None)
                )
                if "tiles" in got and isinstance(entry.get("data"), dict):
                    # the map the replay child saw replaces the one from the process that ran learner code
                    entry["data"] = {**entry["data"], "tiles": got["tiles"], "tiles_from": "replay"}
    finally:
        runfolder.remove_run_dir(replay_dir)


REPLAYED_LAUNCHES = contracts.REPLAYED_LAUNCHES


def attach_replayed_launches(contract: object, cases: list[Case], result: dict, run_dir: Path) -> None:
    """For a contract with `GRID_FROM_RECORD` (a persistent kernel's grid is judged): give each returned case
    entry the launches of its launch record, read here by the parent, under REPLAYED_LAUNCHES. The fresh
    replay runs exactly these launches and fails the case (host-computed) unless they reproduce the result,
    so the grids judged are the ones that computed it, not the check child's own count. Whatever the check
    child wrote under that name is dropped first."""
    for e in result.get("cases", []):
        if isinstance(e, dict):
            e.pop(REPLAYED_LAUNCHES, None)
    if not getattr(contract, "GRID_FROM_RECORD", False) or result.get("import_error"):
        return
    entries = {e.get("name"): e for e in result.get("cases", []) if isinstance(e, dict)}
    for i, case in enumerate(cases):
        entry = entries.get(case.name)
        if entry is None or entry.get("status") != "returned":
            continue
        record = read_record(run_dir, i)
        if isinstance(record, dict) and isinstance(record.get("events"), list):
            entry[REPLAYED_LAUNCHES] = replayed_launches(record["events"])


def replayed_launches(events: list) -> list[dict]:
    """Kernel name, grid and integer keyword arguments of each launch in a record (hostile data: types
    checked, sizes capped)."""
    out = []
    for e in events[:256]:
        if not isinstance(e, dict) or e.get("op") != "launch":
            continue
        grid = e.get("grid") if isinstance(e.get("grid"), list) else []
        kwargs = e.get("kwargs") if isinstance(e.get("kwargs"), dict) else {}
        ints = {
            str(k)[:64]: v["int"]
            for k, v in list(kwargs.items())[:64]
            if isinstance(v, dict) and type(v.get("int")) is int
        }
        out.append(
            {
                "kernel": str(e.get("kernel", "?"))[:100],
                "grid": [g for g in grid[:3] if type(g) is int],
                "int_kwargs": ints,
            }
        )
    return out


ROUNDING = "rounding"  # compare_replay's tolerance for outputs computed by two different executions


def compare_replay(
    entry: dict, replayed: list[np.ndarray], tolerant: bool | str, indices: tuple[int, ...] | None = None
) -> str:
    """ "" when the replay's outputs equal what the function returned (bit for bit, or within a tolerance for
    a kernel with atomics on a GPU), else which output differs. `tolerant=ROUNDING`: the two results come
    from different executions of the same launches (a GPU check whose cases ran the kernels through Triton's
    interpreter, grouped-matmul-order's tile-order cases; the replay compiles them), so they may differ by
    rounding: within 8 units of the output dtype's rounding plus 0.1 % of the output's largest magnitude —
    far below what a host writing the result would have to change. `indices` (the contract's
    `REPLAY_OUTPUTS`) picks the returned outputs the launches must produce, where a custom contract returns
    more (autotune's per-config snapshots, autograd-wrap's loss, which the grader computes itself)."""
    arrays = entry.get("arrays", [])
    if indices is None:
        indices = tuple(range(len(arrays)))
    if any(k >= len(arrays) for k in indices):
        return f"your function returned {len(arrays)} output(s), fewer than the launches must reproduce"
    returned = [arrays[k] for k in indices]
    if len(replayed) != len(returned):
        return f"the launches alone give {len(replayed)} output(s), your function returned {len(returned)}"
    for j, (a, b) in enumerate(zip(returned, replayed, strict=True)):
        k = indices[j]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {k}: the launches alone give a different shape or dtype"
        if tolerant:
            dtype = entry["outputs"][k].get("dtype", "")
            x, y = contracts.decode(a, dtype), contracts.decode(b, dtype)
            if tolerant == ROUNDING:
                finite = np.abs(y[np.isfinite(y)])
                scale = float(finite.max()) if finite.size else 0.0
                unit = contracts.UNIT_ROUNDOFF.get(dtype, 0.0)
                with np.errstate(invalid="ignore"):
                    close = np.abs(x - y) <= 8 * unit * np.abs(y) + 1e-3 * scale
                same = close | (x == y) | (np.isnan(x) & np.isnan(y))
            else:
                same = np.isclose(x, y, rtol=1e-3, atol=1e-6, equal_nan=True)
        else:
            same = a == b
        if not bool(np.all(same)):
            differ = int(np.size(same) - np.count_nonzero(same))
            return f"output {k}: {differ} of {a.size} element(s) differ when the launches run alone"
    return ""


def compare_huge(entry: dict, summary: object) -> str:
    """A huge case: the digest of what the function returned (check child) against the digest of what the
    launches alone gave (replay child)."""
    if not isinstance(summary, dict):
        return "the replay of your launches reported nothing for this case"
    if summary.get("problem"):
        return ""  # judged as wrong-shape/wrong-dtype from the summary
    returned = [o.get("digest") for o in entry.get("huge_outputs", []) if isinstance(o, dict)]
    if returned != [summary.get("digest")]:
        return "the tensor your function returned differs from what its launches alone produce"
    return ""


ITEMSIZE = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2}
ITEMSIZE["float8_e4m3fn"] = 1


def host_policy(exercise: Exercise) -> dict:
    """The exercise's `[host]` table: which arguments the host may copy to a new layout or convert. An
    exercise folder without an exercise.toml (a test's folder of learner files) takes the course's."""
    path = exercise.dir / "exercise.toml"
    if not path.is_file():
        path = next(iter(sorted(config.course_dir().glob(f"*/exercises/{exercise.id}/exercise.toml"))), path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    host = data.get("host", {})
    return host if isinstance(host, dict) else {}


def case_traffic(case: Case, entry: dict) -> int:
    """Bytes a kernel must move at least: every input read once, every output written once."""
    total = sum(a.values.size * ITEMSIZE.get(a.dtype, 1) for a in case.args if isinstance(a, Tensor))
    for out in entry.get("outputs", []):
        total += int(np.prod(out.get("shape", []))) * ITEMSIZE.get(out.get("dtype", ""), 1)
    return max(total, 1)


def judge_host(case: Case, entry: dict, policy: dict, costs: dict[str, tuple[float, str]]) -> list[Failure]:
    """Copies of the arguments the host code made, judged against the exercise's policy. Allowed layout
    copies add their cost to `costs` (argument -> (worst % of extra traffic, where)); the rest fail."""
    failures: list[Failure] = []
    layout_ok = set(policy.get("layout_copies", []))
    convert_ok = set(policy.get("conversions", []))
    seen: set[tuple[str, bool]] = set()
    for copy in entry.get("host_copies", []):
        arg, convert, where = copy.get("arg", "?"), bool(copy.get("convert")), copy.get("where", "")
        if (arg, convert) in seen:
            continue
        seen.add((arg, convert))
        if convert and arg not in convert_ok:
            failures.append(
                Failure(
                    case.name,
                    "host-copy",
                    f"`{arg}` was converted to another dtype on the host ({copy.get('op')})",
                    f"load `{arg}` as it is and convert inside the kernel (`.to(tl.float32)`): a conversion on "
                    "the host is an extra pass over memory that this exercise does not allow",
                    where,
                )
            )
        elif not convert and arg in layout_ok:
            pct = 100.0 * 2 * int(copy.get("bytes", 0)) / case_traffic(case, entry)
            if pct > costs.get(arg, (-1.0, ""))[0]:
                costs[arg] = (pct, where)
        elif not convert:
            why = policy.get("why") or (
                f"this exercise does not allow copying `{arg}` on the host: read it through its strides in "
                "the kernel (`x.stride(0)`, `x.stride(1)`)"
            )
            failures.append(
                Failure(
                    case.name,
                    "host-copy",
                    f"`{arg}` was copied on the host ({copy.get('op')}) before your kernel ran",
                    why,
                    where,
                )
            )
    reason = entry.get("host_computed")
    if reason:
        failures.append(
            Failure(
                case.name,
                "host-computed",
                f"your kernel's launches alone do not produce this result; the host changed it ({reason})",
                "compute the result inside your Triton kernel: the host code may validate, allocate, and "
                "launch, and must not write the output itself (no numpy, no threads, no torch copies into it)",
            )
        )
    return failures


def cost_notes(costs: dict[str, tuple[float, str]]) -> list[str]:
    return [
        f"`{arg}` was copied on the host{f' ({where})' if where else ''}: one extra read and write of "
        f"`{arg}`, +{pct:.0f}% memory traffic in the costliest case — reading it through its strides in "
        "the kernel avoids the copy"
        for arg, (pct, where) in sorted(costs.items())
    ]


def judge_case(contract: object, case: Case, entry: dict) -> list[Failure]:
    """The contract's judgement of one case; an entry whose fields have the wrong types is malformed."""
    try:
        return contract.check(case, entry)
    except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
        raise rundir.Malformed(
            f"case {case.name!r} has fields of the wrong type ({type(exc).__name__})"
        ) from exc


def judge_reads(case: Case, entry: dict, failures: list[Failure]) -> list[Failure]:
    """`failures` (the contract's and the host checks') with the loads that read off an allocation: a case
    that passed them can still have read past a tensor, the values thrown away by a masked store; and past
    a host copy lies memory that the replay's process fills differently, so a read there, not the host, is
    why the launches alone gave another result (`host-computed` is replaced by the read that explains it)."""
    from tritonlab.grading.contracts.compare import reads_outside

    if not failures:
        return reads_outside(case, entry)
    if any(f.kind == "host-computed" for f in failures):
        outside = reads_outside(case, entry, reached=True)
        if outside:
            return [f for f in failures if f.kind != "host-computed"] + outside
    return failures


def judge_huge(case: Case, entry: dict) -> list[Failure]:
    """A huge case (grading/huge.py): exceptions and crashes as usual; values, shape and dtype from the replay
    child's summary; no launch, no verdict."""
    from tritonlab.grading.contracts.compare import exception_failure

    exc = exception_failure(case, entry)
    if exc is not None:
        return [exc]
    failures = []
    if not entry.get("launches"):
        failures.append(
            Failure(case.name, "no-kernel-launch", "your function launched no Triton kernel on this case", "")
        )
    for violation in entry.get("guard_violations", [])[:1]:
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-write",
                f"{violation.get('count')} element(s) written outside {violation.get('label')}",
                "mask every tl.store with `offsets < n`",
            )
        )
    if entry.get("inputs_modified"):
        failures.append(
            Failure(case.name, "input-modified", f"{', '.join(entry['inputs_modified'])} changed", "")
        )
    if entry.get("launches") and not entry.get("host_computed") and "huge_summary" not in entry:
        failures.append(Failure(case.name, "crash", "the replay of your launches reported nothing", ""))
    return failures + huge.judge(case.name, entry)


class TrustedCompile:
    """Grade what the compiler makes of the learner's kernel for a GPU (e.g. occupancy) from a compile that
    never imports the learner's file: the parent reads the kernel's source as text, a separate sandboxed child
    (job mode `compile`) compiles only that function, with the signature and constexprs the contract fixes.
    The numbers come from triton and ptxas in that child, not from anything the learner's process reported.

    Started when the check starts (it needs only the text), so that it runs beside the check run; `finish`
    waits for it and adds its case to the verdict, `stop` kills it (a check that was stopped or could not
    import the file: nothing to grade)."""

    def __init__(
        self, contract: object, file: Path, source: str, backend: str, zygote: sandbox.Zygote, timeout: float
    ) -> None:
        self.contract = contract
        self.name = getattr(contract, "COMPILE_CASE", "compiled for the GPU")
        self.items, self.failures = contract.compile_items(source)  # the very text this check grades
        self.started = time.monotonic()
        self.seconds = 0.0
        self.handle: Run | None = None
        self.run: RunResult | None = None
        self.run_dir: Path | None = None
        self._waiter: threading.Thread | None = None
        if not self.items:
            return
        self.run_dir = zygote.new_run_dir(cache=caches.REPLAY)[0]
        try:
            (self.run_dir / "job.json").write_text(
                json.dumps({"mode": "compile", "file": str(file), "items": self.items})
            )
            self.handle = zygote.start(self.run_dir, default_limits(backend, max(timeout, 180.0)))
        except BaseException:
            runfolder.remove_run_dir(self.run_dir)
            self.run_dir = None
            raise
        # drained while the check runs: a child whose output nobody reads could block on a full pipe
        self._waiter = threading.Thread(target=self._wait, name="trusted-compile", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        assert self.handle is not None
        self.run = self.handle.wait()

    def finish(self, verdict: Verdict) -> None:
        results: list[dict] = []
        if self._waiter is not None and self.run_dir is not None:
            self._waiter.join()
            try:
                data = rundir.read_json(self.run_dir / "inspect.json")  # capped and depth-checked: hostile
            except rundir.Malformed:
                data = None
            results = list(data.get("results", [])) if isinstance(data, dict) else []
            if len(results) != len(self.items):
                assert self.run is not None
                self.failures.append(process_failure(self.name, self.run))
            self._clean()
            if len(results) == len(self.items):
                self.failures += self.contract.judge_compile(results)
        self.seconds = time.monotonic() - self.started
        verdict.failures.extend(self.failures)
        verdict.cases.append(CaseResult(self.name, not self.failures))

    def stop(self) -> None:
        if self.handle is not None and self.run_dir is not None:
            self.handle.stop()
            if self._waiter is not None:
                self._waiter.join()
            self._clean()

    def _clean(self) -> None:
        if self.run_dir is not None:
            runfolder.remove_run_dir(self.run_dir)
            self.run_dir = None


def judge_all(
    verdict: Verdict,
    contract: object,
    cases: list[Case],
    result: dict,
    run: RunResult,
    file: Path,
    function: str,
    policy: dict | None = None,
) -> None:
    policy = policy or {}
    costs: dict[str, tuple[float, str]] = {}
    if result.get("import_error"):
        err = result["import_error"]
        message = f"{err['type']}: {err['message']}"
        if err.get("source"):
            message += f"\n    {err['source']}"
        verdict.failures.append(
            Failure("import", "exception", message, err.get("hint", ""), err.get("where", ""))
        )
        verdict.cases = [CaseResult(c.name, False) for c in cases]
        return
    entries = {e["name"]: e for e in result.get("cases", [])}
    interrupted = run.exit_code != 0 or run.timed_out or run.output_truncated
    for case in cases:
        entry = entries.get(case.name)
        if entry is None:
            if interrupted and not any(f.kind in ("crash", "timeout") for f in verdict.failures):
                verdict.failures.append(process_failure(case.name, run))
            verdict.cases.append(CaseResult(case.name, False))
            continue
        if entry.get("status") == "skipped":
            note = f"skipped {case.name}: {entry.get('reason', '')}"
            verdict.notes.append(note)
            continue
        if case.extra.get("huge"):
            judged = judge_huge(case, entry) + judge_host(case, entry, policy, costs)
        else:
            judged = judge_reads(
                case, entry, judge_case(contract, case, entry) + judge_host(case, entry, policy, costs)
            )
        failures = [where_to_look(f, file, function) for f in judged]
        verdict.failures.extend(failures)
        verdict.cases.append(CaseResult(case.name, not failures))
    verdict.notes.extend(cost_notes(costs))
