"""Step 5 of a check, `judge`: every case against the float64 reference, in the parent. The contract judges the
values (grading/contracts/), the exercise's `[host]` policy the host's copies (host.py), the interpreter's
access log the loads off an allocation (`judge_reads`); a case the child never reached fails with how the run
ended (failures.py). `EarlyJudge` does it beside the replay (step 6) and keeps the result unless the replay
changed what the judgement reads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tritonlab.grading import huge
from tritonlab.grading.check.failures import process_failure, where_to_look
from tritonlab.grading.check.host import cost_notes, judge_host
from tritonlab.grading.contracts import Case
from tritonlab.i18n import t
from tritonlab.models import CaseResult, Failure, Verdict
from tritonlab.runs import rundir
from tritonlab.runs.collect import RunResult


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
            if skippable(case, verdict.backend):
                verdict.notes.append(
                    t("grader.skipped", case=case.name, reason=t("grader.bf16_skipped"))[:400]
                )
                continue
            verdict.failures.append(not_run(case))
            verdict.cases.append(CaseResult(case.name, False))
            continue
        if case.extra.get("huge"):
            judged = judge_huge(case, entry) + judge_host(case, entry, policy, costs)
        else:
            judged = judge_reads(
                case, entry, judge_case(contract, case, entry) + judge_host(case, entry, policy, costs)
            )
        if entry.get("no_launch") and not any(f.kind == "no-kernel-launch" for f in judged):
            judged.append(no_launch(case))
        failures = [where_to_look(f, file, function) for f in judged]
        verdict.failures.extend(failures)
        verdict.cases.append(CaseResult(case.name, not failures))
    verdict.notes.extend(cost_notes(costs))


def skippable(case: Case, backend: str) -> bool:
    """The parent's own list of cases a run may skip: bf16-arithmetic cases on the interpreter (Triton 3.9's
    computes raw bf16 arithmetic as NaN). A check child reporting any other case as skipped is not believed."""
    return bool(case.extra.get("bf16_arithmetic")) and backend == "interpreter"


def not_run(case: Case) -> Failure:
    return Failure(
        case.name,
        "crash",
        t("grader.skipped_by_run"),
        t("grader.skipped_by_run_cause"),
    )


def no_launch(case: Case) -> Failure:
    """A returned case whose launch record holds no launch (check/replay.py sets `no_launch`), whatever the
    check child reported about its launches."""
    return Failure(
        case.name,
        "no-kernel-launch",
        t("grader.no_launch_record"),
        t("grader.no_launch_record_cause"),
    )


def judge_case(contract: object, case: Case, entry: dict) -> list[Failure]:
    """The contract's judgement of one case; an entry whose fields have the wrong types is malformed."""
    try:
        return contract.check(case, entry)
    except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
        raise rundir.Malformed(
            t("grader.judge_case_name_has_fields", name=repr(case.name), name2=type(exc).__name__)
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
        failures.append(Failure(case.name, "no-kernel-launch", t("grader.huge_no_launch"), ""))
    for violation in entry.get("guard_violations", [])[:1]:
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-write",
                t("grader.huge_oob_write", count=violation.get("count"), label=violation.get("label")),
                t("grader.huge_oob_write_cause"),
            )
        )
    if entry.get("inputs_modified"):
        failures.append(
            Failure(
                case.name,
                "input-modified",
                t("grader.huge_input_modified", labels=", ".join(entry["inputs_modified"])),
            )
        )
    if entry.get("launches") and not entry.get("host_computed") and "huge_summary" not in entry:
        failures.append(Failure(case.name, "crash", t("grader.replay_reported_nothing")))
    return failures + huge.judge(case.name, entry)


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
        """What replay_cases may set on each entry: a host-computed reason, a new tile map, a huge summary, a
        record without a launch."""
        return [
            (bool(e.get("host_computed")), id(e.get("data")), id(e.get("huge_summary")), e.get("no_launch"))
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
