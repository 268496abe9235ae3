"""The workload of scripts/load_gpu.py: which exercises a mix holds, and the list of checks to submit.

A mix is a set of the course's exercises: `l2-8` (lessons 2 to 8) or `course` (every exercise). Each check is
one of three kinds: `right` (the exercise's reference solution, which must pass), `wrong` (a deliberately wrong
learner file from tests/wrong/<exercise>/, each of which tests/test_wrong_solutions.py shows failing, so it
must fail here too) or `timeout` (the solution with its host function replaced by an endless `while True`
loop: it must fail with the `timeout` kind once the check's wall-clock limit ends it). The plan is
deterministic for a seed: the same arguments give the same checks in the same order.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
COURSE = ROOT / "course"
WRONG = ROOT / "tests" / "wrong"
MIXES = ("l2-8", "course")
KINDS = ("right", "wrong", "timeout")
# wrong only where there is no GPU (it synchronises CUDA unconditionally): on the GPU it rightly passes
NOT_WRONG_ON_A_GPU = {"bench_protocol/unconditional_sync.py"}

TIMEOUT_TAIL = '''

def {function}(*args, **kwargs):
    """scripts/load_gpu.py's timeout check: the host function never returns."""
    while True:
        pass
'''


@dataclass(frozen=True)
class Exercise:
    id: str
    lesson: int
    function: str
    solution: Path
    wrong: tuple[Path, ...]  # tests/wrong/<id with _>/*.py, sorted


@dataclass(frozen=True)
class Item:
    """One check to submit: its place in the plan, the exercise, what it must give and the text sent."""

    index: int
    exercise: str
    kind: str  # right | wrong | timeout
    file: str  # where the text came from, relative to the repository
    text: str
    group: int = -1  # `rechecks`: the checks of one group go to one learner, one after the other


def exercises(course: Path = COURSE, wrong: Path = WRONG) -> list[Exercise]:
    """Every exercise of the course, in lesson order, with its solution and its wrong files."""
    found = []
    for toml in sorted(course.glob("[0-9][0-9]-*/exercises/*/exercise.toml")):
        folder = toml.parent
        lesson = int(folder.parent.parent.name[:2])
        meta = tomllib.loads(toml.read_text(encoding="utf-8"))
        solution = folder / "solution.py"
        if not solution.is_file() or "function" not in meta:
            raise SystemExit(f"{folder}: an exercise needs solution.py and `function` in exercise.toml")
        bad = tuple(
            p
            for p in sorted((wrong / folder.name.replace("-", "_")).glob("*.py"))
            if f"{p.parent.name}/{p.name}" not in NOT_WRONG_ON_A_GPU
        )
        found.append(Exercise(folder.name, lesson, str(meta["function"]), solution, bad))
    if not found:
        raise SystemExit(f"no exercises found under {course}")
    return found


def mix_exercises(mix: str, only: list[str] | None = None, course: Path = COURSE) -> list[Exercise]:
    """The exercises of `mix` (l2-8: lessons 2 to 8; course: all), narrowed to `only` when given."""
    if mix not in MIXES:
        raise SystemExit(f"unknown mix {mix!r}: choose one of {', '.join(MIXES)}")
    every = exercises(course)
    chosen = [e for e in every if mix == "course" or 2 <= e.lesson <= 8]
    if only:
        known = {e.id for e in chosen}
        unknown = [name for name in only if name not in known]
        if unknown:
            raise SystemExit(f"not in mix {mix}: {', '.join(unknown)} (it has: {', '.join(sorted(known))})")
        chosen = [e for e in chosen if e.id in only]
    return chosen


def _steps(share: float, k: int) -> bool:
    """Whether the k-th use (0-based) of an exercise is a wrong file: spread evenly at `share` of the uses."""
    return int((k + 1) * share) > int(k * share)


def build(
    chosen: list[Exercise], checks: int, wrong_share: float, timeout_every: int, seed: int, rechecks: int = 1
) -> list[Item]:
    """`checks` items: the exercises in a shuffled round-robin, a `wrong_share` of each exercise's uses a wrong
    file (rotating through its files; an exercise without wrong files always sends its solution), and every
    `timeout_every`-th check (the 50th, 100th, ...) a timeout; 0 means none. With `rechecks` > 1 each of those
    (timeouts aside) becomes a group of that many checks of one learner: the file, then the file edited (a
    comment line on top, so every kernel starts on another line: Triton compiles it anew, with the launches
    of the check before, as a learner's edit and Check again do)."""
    if rechecks > 1:
        return _grouped(build(chosen, checks, wrong_share, timeout_every, seed), checks, rechecks)
    if not 0.0 <= wrong_share <= 1.0:
        raise SystemExit(f"--wrong-share {wrong_share}: expected a fraction from 0 to 1")
    rng = random.Random(seed)
    uses: dict[str, int] = {}
    wrong_uses: dict[str, int] = {}
    offsets = {e.id: rng.randrange(max(1, len(e.wrong))) for e in chosen}
    texts: dict[Path, str] = {}

    def text(path: Path) -> str:
        if path not in texts:
            texts[path] = path.read_text(encoding="utf-8")
        return texts[path]

    order: list[Exercise] = []
    plan = []
    for i in range(checks):
        if not order:
            order = list(chosen)
            rng.shuffle(order)
        ex = order.pop()
        if timeout_every and (i + 1) % timeout_every == 0:
            body = text(ex.solution) + TIMEOUT_TAIL.format(function=ex.function)
            plan.append(Item(i, ex.id, "timeout", rel(ex.solution) + " + while True", body))
            continue
        k = uses.get(ex.id, 0)
        uses[ex.id] = k + 1
        if ex.wrong and _steps(wrong_share, k):
            j = wrong_uses.get(ex.id, 0)
            wrong_uses[ex.id] = j + 1
            path = ex.wrong[(offsets[ex.id] + j) % len(ex.wrong)]
            plan.append(Item(i, ex.id, "wrong", rel(path), text(path)))
        else:
            plan.append(Item(i, ex.id, "right", rel(ex.solution), text(ex.solution)))
    return plan


def _grouped(base: list[Item], checks: int, rechecks: int) -> list[Item]:
    out: list[Item] = []
    for item in base:
        copies = 1 if item.kind == "timeout" else rechecks
        for n in range(copies):
            if len(out) == checks:
                return out
            text = item.text if n == 0 else f"# load_gpu.py: edit {n}\n" + item.text
            group = -1 if item.kind == "timeout" else item.index
            out.append(Item(len(out), item.exercise, item.kind, item.file, text, group))
    return out


def distinct(items: list[Item], rechecks: int = 1) -> list[Item]:
    """`--distinct`: every check's text made unlike every other check's, as two learners' own files are in a
    class. Triton keys a compiled kernel by the kernel's text and the line it starts on, and the class shares one
    replay cache, so without this a learner's check of a course file finds its kernels compiled by another
    learner's check of the same file. A comment and blank lines go on top, 1 + index x `rechecks` lines in all:
    no two checks' kernels start on the same line (a `rechecks` group's edits add fewer than `rechecks` more)."""
    return [
        replace(
            item,
            text=f"# load_gpu.py --distinct: check {item.index}"
            + "\n" * (1 + item.index * rechecks)
            + item.text,
        )
        for item in items
    ]


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
