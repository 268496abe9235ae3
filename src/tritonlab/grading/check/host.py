"""The exercise's `[host]` policy and what the learner's host code may do to the arguments: layout copies the
exercise allows cost a note (the extra memory traffic in the costliest case), any other copy or a conversion
fails its case, and so does a result the launches alone do not reproduce (`host-computed`, from the replay)."""

from __future__ import annotations

import tomllib

import numpy as np

from tritonlab import config
from tritonlab.grading.check.read import ITEMSIZE
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.grading.contracts.compare import replay_failure
from tritonlab.i18n import t
from tritonlab.models import Exercise, Failure


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
                    t("grader.host_convert", arg=arg, op=copy.get("op")),
                    t("grader.host_convert_cause", arg=arg),
                    where,
                )
            )
        elif not convert and arg in layout_ok:
            pct = 100.0 * 2 * int(copy.get("bytes", 0)) / case_traffic(case, entry)
            if pct > costs.get(arg, (-1.0, ""))[0]:
                costs[arg] = (pct, where)
        elif not convert:
            why = policy.get("why") or t("grader.host_copy_cause", arg=arg)
            failures.append(
                Failure(
                    case.name,
                    "host-copy",
                    t("grader.host_copy", arg=arg, op=copy.get("op")),
                    why,
                    where,
                )
            )
    reason = entry.get("host_computed")
    if reason:
        failures.append(replay_failure(case, str(reason)))
    return failures


def cost_notes(costs: dict[str, tuple[float, str]]) -> list[str]:
    return [
        t("grader.cost_note_at", arg=arg, where=where, pct=f"{pct:.0f}")
        if where
        else t("grader.cost_note", arg=arg, pct=f"{pct:.0f}")
        for arg, (pct, where) in sorted(costs.items())
    ]
