"""Judging one case in the parent: the checks every contract shares, and diagnostics in Triton's terms.

What a contract module calls: `judge` (the standard judgement of a function that returns one tensor),
`compare_values` (one output's values, _values.py), `host_checks` (launches, torch fallbacks, guards,
inputs), `exception_failure`, `reads_outside`, `add_hint`, `grid_size`."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from tritonlab.grading.contracts import Case, Tensor, describe_case, result_error
from tritonlab.grading.contracts._values import (
    OOB_READ_CAUSE,
    Tol,
    block_size,
    compare_values,
    grid_size,
    stray_line,
)
from tritonlab.i18n import t
from tritonlab.models import Failure

__all__ = [
    "add_hint",
    "compare_values",
    "exception_failure",
    "grid_size",
    "host_checks",
    "judge",
    "replay_failure",
    "reads_outside",
]

MASK_CAUSE = t("grader.mask_cause")
OFFSETS_CAUSE = t("grader.offsets_cause")


def just_past_end(v: dict, result: dict) -> bool:
    """Evidence for a missing (or `<=`) mask: the stray writes start at the very first element past the end
    and run on without a gap, within one program's lanes. Wrong strides scatter their writes instead."""
    after = v.get("after") or []
    if not after or v.get("before") or after[0] != v["numel"]:
        return False
    if any(b - a != 1 for a, b in zip(after, after[1:], strict=False)):
        return False
    reach = max(block_size(result) or 0, 1024)  # the lanes of one last program
    return after[-1] < v["numel"] + reach


DISCARDED_READ_CAUSE = t("grader.discarded_read_cause")


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reads_outside(case: Case, result: dict, *, reached: bool = False) -> list[Failure]:
    """Loads that read lanes off an allocation (its guards, or past a host copy: `outside` in the access log,
    grading/where.py), one failure per load line and tensor. The log is kept on the interpreter only.

    `reached=False` (the case passed otherwise): a masked store threw the values away, but the read is still
    out of bounds — on a GPU it can end in an illegal memory access. `reached=True` (the launches alone gave
    another result in the replay): memory past a host copy is not the grader's, so the replay's process
    holds other bytes there; the read, not the host, is why the results differ."""
    failures = []
    for s in result.get("strays", []):
        if not isinstance(s, dict) or s.get("op") != "load":
            continue
        count, first, size = _count(s.get("outside")), _count(s.get("first_outside")), _count(s.get("size"))
        if not count or first is None or size is None:
            continue
        label = str(s.get("tensor"))[:80]
        tail = t("grader.read_outside_reached") if reached else t("grader.discarded_tail")
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-read",
                t(
                    "grader.read_outside_head",
                    count=count,
                    label=label,
                    last=size - 1,
                    first=first,
                    tail=tail,
                ),
                OOB_READ_CAUSE if reached else DISCARDED_READ_CAUSE,
                str(s.get("where") or ""),
            )
        )
    return failures


def host_line(result: dict) -> str:
    """The learner's host line that ran the first flagged torch op, else the first host copy of an input."""
    where = result.get("op_where", {})
    for op in result.get("torch_ops", []):
        name = op.split(":", 1)[-1]
        if where.get(name):
            return str(where[name])
    return next((str(c["where"]) for c in result.get("host_copies", []) if c.get("where")), "")


def host_checks(
    case: Case,
    result: dict,
    *,
    allow_copies: bool,
    needs_launch: bool,
    max_launches: int | None = None,
    allow_aliases: bool = False,
) -> list[Failure]:
    """Checks on what the host code did: launches, torch fallbacks, guards, inputs, outputs that share an
    input's memory (unless `allow_aliases`)."""
    failures: list[Failure] = []
    fn = result.get("function", "your function")
    if not allow_aliases:
        failures += aliased_outputs(case, result)
    for bad in result.get("config_mismatches", [])[:1]:
        if isinstance(bad, dict):
            failures.append(
                Failure(
                    case.name,
                    "wrong-result",
                    t(
                        "grader.config_mismatch",
                        kernel=str(bad.get("kernel"))[:60],
                        config=str(bad.get("config"))[:160],
                        chosen=str(bad.get("chosen"))[:160],
                    ),
                    t("grader.config_mismatch_cause"),
                )
            )
    for v in result.get("guard_violations", []):
        where = []
        if v["after"]:
            where.append(t("grader.past_end", count=len(v["after"]), index=v["after"][0]))
        if v["before"]:
            where.append(t("grader.before_start", index=v["before"][-1]))
        label = v["label"]
        size = v["numel"]
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-write",
                t("grader.oob_write", label=label, size=size, detail="; ".join(where)),
                MASK_CAUSE if just_past_end(v, result) else OFFSETS_CAUSE,
                stray_line(result, "store", label),
            )
        )
    for label in result.get("inputs_modified", []):
        failures.append(
            Failure(
                case.name,
                "input-modified",
                t("grader.input_modified", label=label, fn=fn),
                t("grader.input_modified_cause"),
            )
        )
    ops = result.get("torch_ops", [])
    compute = sorted({o.split(":", 1)[1] for o in ops if o.startswith("compute:")})
    copies = sorted({o.split(":", 1)[1] for o in ops if o.startswith("copy:")})
    if compute or (copies and not allow_copies):
        shown = compute + ([] if allow_copies else copies)
        names = ", ".join(shown)
        where = result.get("op_where", {})
        failures.append(
            Failure(
                case.name,
                "torch-fallback",
                t("grader.torch_fallback", fn=fn, names=names),
                t("grader.torch_fallback_cause"),
                next((where[n] for n in shown if where.get(n)), "") or host_line(result),
            )
        )
    launches = result.get("launches", [])
    if needs_launch and not launches and result.get("status") == "returned":
        failures.append(
            Failure(
                case.name,
                "no-kernel-launch",
                t("grader.no_launch", fn=fn),
                t("grader.no_launch_cause"),
                host_line(result),
            )
        )
    if max_launches is not None and len(launches) > max_launches:
        names = ", ".join(launch["kernel"] for launch in launches)
        failures.append(
            Failure(
                case.name,
                "too-many-launches",
                t("grader.too_many", count=len(launches), names=names, allowed=max_launches),
                t("grader.too_many_cause"),
            )
        )
    return failures


NOT_LOWERED = "does not compile for a GPU"  # grading/replay/lower.py's refusal when a kernel does not lower
PLAIN_GLOBAL = re.compile(r"Cannot access global variable (\w+)")


def replay_failure(case: Case, reason: str) -> Failure:
    """The failure for a case whose launches, replayed alone, did not give its result (`reason`: the replay's
    words). A launched kernel that does not lower for a GPU is its own kind, `does-not-compile`: the
    interpreter ran its body as Python, which no GPU does (a plain module-level float, numpy in the body)."""
    if NOT_LOWERED in reason:
        name = PLAIN_GLOBAL.search(reason)
        if name:
            return Failure(
                case.name,
                "does-not-compile",
                t("grader.plain_global", name=name.group(1)),
                t("grader.plain_global_cause", name=name.group(1)),
            )
        return Failure(
            case.name,
            "does-not-compile",
            reason,
            t("grader.not_lowered_cause"),
        )
    return Failure(
        case.name,
        "host-computed",
        t("grader.host_computed", reason=reason),
        t("grader.host_computed_cause"),
    )


def aliased_outputs(case: Case, result: dict) -> list[Failure]:
    """A returned tensor that shares memory with an input (the child's `aliases`): a view such as `x.t()`, or
    the input itself. Its values are the input's, whatever a kernel launched."""
    aliases = result.get("aliases", [])
    if not isinstance(aliases, list):
        return []
    for alias in aliases[:1]:
        if not isinstance(alias, dict):
            continue
        source = str(alias.get("input", t("grader.an_input")))[:80]
        if result.get("returned") in ("tuple", "list"):
            message = t("grader.aliased_output", number=alias.get("output"), input=source)
        else:
            message = t("grader.aliased", input=source)
        return [
            Failure(
                case.name,
                "host-computed",
                message,
                t("grader.aliased_cause"),
            )
        ]
    return []


def exception_failure(case: Case, result: dict) -> Failure | None:
    error = result_error(result)
    if error is None:
        return None
    if case.expect_error and error["type"] == case.expect_error:
        return None
    message = f"{error['type']}: {error['message']}"
    if case.expect_error:
        return Failure(
            case.name,
            "missing-validation",
            t("grader.validation_got", error=case.expect_error, args=describe_case(case), got=message),
            t("grader.validation_cause", error=case.expect_error),
            error.get("where", ""),
        )
    return Failure(case.name, "exception", message, error.get("hint", ""), error.get("where", ""))


HINTED = ("wrong-result", "nan-mismatch", "out-of-bounds-read")


def add_hint(failures: list[Failure], hint: Callable[[], str]) -> list[Failure]:
    """Attach a contract's specific diagnosis (computed only when values are wrong) to the value failures."""
    if not any(f.kind in HINTED for f in failures):
        return failures
    try:
        text = hint()
    except Exception:  # noqa: BLE001 - a diagnosis is best effort: never let it hide the verdict
        text = ""
    if not text:
        return failures
    return [Failure(f.case, f.kind, f.message, text, f.where) if f.kind in HINTED else f for f in failures]


def judge(
    case: Case,
    result: dict,
    expected: np.ndarray,
    out_dtype: str,
    rtol: Tol,
    atol: Tol,
    *,
    allow_copies: bool = False,
    needs_launch: bool = True,
    max_launches: int | None = None,
    expected_shape: tuple[int, ...] | None = None,
    cause_hint: str = "",
    nan_is_oob_read: bool = False,
) -> list[Failure]:
    """The standard judgement for a case whose function returns one tensor."""
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    if case.expect_error:
        if result_error(result) is not None:
            return []  # raised what was expected
        return [
            Failure(
                case.name,
                "missing-validation",
                t(
                    "grader.validation_returned",
                    call=f"{result.get('function', 'your function')}({describe_case(case)})",
                    error=case.expect_error,
                ),
                t("grader.validation_returned_cause", error=case.expect_error),
            )
        ]
    has_data = any(isinstance(a, Tensor) and a.values.size for a in case.args) or expected.size > 0
    failures = host_checks(
        case,
        result,
        allow_copies=allow_copies,
        needs_launch=needs_launch and has_data,
        max_launches=max_launches,
    )
    failures += compare_values(
        case,
        result,
        expected,
        out_dtype,
        rtol,
        atol,
        expected_shape=expected_shape,
        cause_hint=cause_hint,
        nan_is_oob_read=nan_is_oob_read,
    )
    return failures
