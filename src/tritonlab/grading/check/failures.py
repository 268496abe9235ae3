"""What a failure says, for the steps that make them: how a run ended when it wrote no result for a case
(`process_failure`), a result the parent refused (`malformed_failure`), and which line to look at when the
evidence named none (`where_to_look`)."""

from __future__ import annotations

import signal as signals
from pathlib import Path

from tritonlab.grading import where as lines
from tritonlab.i18n import t
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
        t("grader.malformed_cause"),
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


def _gib(n: int | None) -> str:
    return f"{(n or 0) / (1 << 30):.1f}"


def process_failure(case_name: str, run: RunResult) -> Failure:
    if run.timed_out:
        return Failure(
            case_name,
            "timeout",
            t("grader.timeout", seconds=f"{run.seconds:.0f}"),
            t("grader.timeout_cause"),
        )
    if run.output_truncated:
        return Failure(
            case_name,
            "crash",
            t("grader.output_limit"),
            t("grader.output_limit_cause"),
        )
    if run.folder_full:
        return Failure(
            case_name,
            "crash",
            t("grader.folder_full", what=run.folder_full),
            t("grader.folder_full_cause"),
        )
    if run.sandbox_error:
        return Failure(case_name, "crash", run.sandbox_error, t("grader.sandbox_error_cause"))
    if "GPU memory" in run.limits_hit:
        return Failure(
            case_name,
            "crash",
            t("grader.gpu_memory_limit", used=_gib(run.gpu_memory_bytes), line=_gib(run.gpu_memory_line)),
            t("grader.gpu_memory_limit_cause"),
        )
    if "memory" in run.limits_hit:
        return Failure(
            case_name,
            "crash",
            t("grader.memory_limit"),
            t("grader.memory_limit_cause"),
        )
    if "processes" in run.limits_hit and run.signal is not None:
        return Failure(
            case_name,
            "crash",
            t("grader.process_limit"),
            t("grader.process_limit_cause"),
        )
    sig = run.signal
    name = SIGNAL_NAMES.get(sig, f"signal {sig}") if sig else f"exit status {run.exit_code}"
    if sig == signals.SIGXCPU:
        return Failure(case_name, "timeout", t("grader.cpu_limit"), t("grader.cpu_limit_cause"))
    cause = t("grader.died_cause")
    if sig == signals.SIGKILL:
        cause = t("grader.killed_cause")
    elif sig is None and run.exit_code == pool.HARNESS_EXIT:
        cause = t("grader.harness_exit_cause", status=pool.HARNESS_EXIT)
    return Failure(case_name, "crash", t("grader.died", signal=name), cause)
