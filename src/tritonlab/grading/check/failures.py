"""What a failure says, for the steps that make them: how a run ended when it wrote no result for a case
(`process_failure`), a result the parent refused (`malformed_failure`), and which line to look at when the
evidence named none (`where_to_look`)."""

from __future__ import annotations

import signal as signals
from pathlib import Path

from tritonlab.grading import where as lines
from tritonlab.models import Failure
from tritonlab.runs import pool, rundir
from tritonlab.runs.collect import RunResult

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
