"""The mutation list (scripts/mutate.py) still fits the code: each mutation's text occurs exactly once in its
file, so `make mutate` and the CI sample test what they name instead of failing on moved code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import mutate  # noqa: E402


@pytest.mark.parametrize("mutation", mutate.MUTATIONS, ids=lambda m: m.name)
def test_mutation_text_occurs_once(mutation: mutate.Mutation) -> None:
    text = (ROOT / "src" / "tritonlab" / mutation.file).read_text(encoding="utf-8")
    assert text.count(mutation.old) == 1, f"{mutation.name}: update its text in scripts/mutate.py"


def test_every_mutation_has_an_area_and_its_own_name() -> None:
    """`make mutate` scores each area (security, durability, sandbox, grader, classroom) from these."""
    mutate.check_list()  # raises SystemExit naming the mutation otherwise
    assert {m.area for m in mutate.MUTATIONS} == set(mutate.AREAS)
