"""The mutation list (scripts/mutate.py) still fits the code: each mutation's text occurs exactly once in its
file, so `make mutate` and the CI sample test what they name instead of failing on moved code."""

from __future__ import annotations

import re
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


def test_every_accepted_survivor_is_a_mutation_and_docs_say_why() -> None:
    """docs/testing.md lists every survivor `make mutate` accepts, with its reason, and no other."""
    names = {m.name for m in mutate.MUTATIONS}
    assert set(mutate.ACCEPTED_SURVIVORS) <= names, "ACCEPTED_SURVIVORS names a mutation that is gone"
    docs = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = docs.split("### Surviving mutants, and why that is acceptable", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- \*\*`([a-z0-9-]+)`\*\*", section, flags=re.M))
    assert listed == set(mutate.ACCEPTED_SURVIVORS), f"docs list {sorted(listed)}"
    for name in mutate.ACCEPTED_SURVIVORS:
        entry = section.split(f"- **`{name}`**", 1)[1].split("\n- **", 1)[0]
        assert len(entry.split()) >= 20, f"docs/testing.md gives no reason for the survivor {name}"
