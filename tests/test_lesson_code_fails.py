"""The lesson teaches a neighbour, the exercise grades the target: lesson 13's code, pasted as the answer, fails
each of its three exercises (issue 35's rule, applied to issue 38's lesson).

The answer file is every `python` block of lesson.en.md in order (as tests/test_content.py runs them), after the
same prelude, checked by the real grader on the interpreter. Where the lesson defines the exercise's function
(`attention_backward`, for non-causal attention), the failure must be the kernel's values on causal cases — the
lesson's kernels run and give the non-causal gradients — not a missing name. Where it does not, the lesson's
scan is wired to the exercise's signature to show that it, too, is not the answer. (The dropout exercise's mask
is one `tl.rand` call that its contract states outright; what the exercise grades is the kernel around it.)
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.models import Exercise, Verdict
from tritonlab.runs import sandbox

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "course" / "13-training-attention"
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
PRELUDE = 'import torch\nDEVICE = "cuda" if torch.cuda.is_available() else "cpu"\n'


def lesson_code() -> str:
    text = (LESSON / "lesson.en.md").read_text(encoding="utf-8")
    blocks = [code for info, code in FENCE.findall(text) if "norun" not in info and "raises=" not in info]
    assert len(blocks) >= 8, "lesson 13's code blocks were not found"
    return PRELUDE + "\n\n".join(blocks)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def check(exercise_id: str, source: str, folder: Path, zygote: sandbox.Zygote) -> Verdict:
    contract = contracts.get(exercise_id)
    path = folder / f"{contract.FUNCTION}.py"
    path.write_text(source, encoding="utf-8")
    exercise = Exercise(exercise_id, "", folder, contract.FUNCTION, {"en": exercise_id}, {}, {}, ())
    seed = zlib.crc32(exercise_id.encode()) % 100_000 + 1
    return pipeline.check(exercise, path, "interpreter", zygote, seed=seed, timeout=180)


def summary(verdict: Verdict) -> str:
    return "\n".join(
        f"{f.case} [{f.kind}] {f.message[:150]} :: {f.cause[:150]}" for f in verdict.failures[:8]
    )


def test_the_lesson_defines_the_backward_but_none_of_the_other_answers() -> None:
    code = lesson_code()
    assert "def attention_backward(" in code
    assert "def dropout_add(" not in code and "def dropout_add_backward(" not in code
    assert "def cumsum(" not in code


def test_the_lessons_backward_fails_attention_backward_on_causality(
    zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    verdict = check("attention-backward", lesson_code(), tmp_path, zygote)
    assert not verdict.passed, "lesson 13's kernels pass the exercise: the lesson holds the answer"
    wrong = [f for f in verdict.failures if f.kind == "wrong-result"]
    assert wrong, summary(verdict)
    # the kernels ran and returned non-causal gradients on cases longer than one query: the lesson is a neighbour
    assert any("S=37" in f.case and "NON-causal" in f.cause for f in wrong), summary(verdict)
    assert not any(f.kind in ("exception", "crash", "timeout") for f in verdict.failures), summary(verdict)
    assert any(c.passed for c in verdict.cases if c.name.startswith("one query")), (
        "one query is causal already"
    )


def test_the_lesson_pasted_fails_dropout(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    verdict = check("dropout", lesson_code(), tmp_path, zygote)
    assert not verdict.passed
    assert {f.kind for f in verdict.failures} == {"exception"}, summary(verdict)
    assert "dropout_add" in verdict.failures[0].message


def test_the_lesson_pasted_fails_cumsum(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    verdict = check("cumsum", lesson_code(), tmp_path, zygote)
    assert not verdict.passed
    assert {f.kind for f in verdict.failures} == {"exception"}, summary(verdict)


def test_the_lessons_scan_as_a_cumsum_fails_cumsum(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    """The lesson's running-max kernel, launched as the exercise's `cumsum`, is a scan of another operation
    over one block: it fails on values, not on a missing name."""
    adapter = """

def cumsum(x):
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    running_max_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y.to(x.dtype)
"""
    verdict = check("cumsum", lesson_code() + adapter, tmp_path, zygote)
    assert not verdict.passed
    assert "wrong-result" in {f.kind for f in verdict.failures}, summary(verdict)


def test_the_benchmark_example_times_the_lessons_kernels() -> None:
    """examples/bench_attention_backward.py carries a copy of the kernels of examples/attention_backward.py
    (an example is one self-contained file, also in a notebook): the two copies must stay equal, and equal to
    the lesson's."""

    def kernels(text: str) -> str:
        start = text.index("@triton.jit\ndef attn_bwd_delta_kernel")
        end = text.index("    return dq, dk, dv\n", start)
        return text[start:end]

    examples = LESSON / "examples"
    reference = kernels((examples / "attention_backward.py").read_text(encoding="utf-8"))
    assert kernels((examples / "bench_attention_backward.py").read_text(encoding="utf-8")) == reference
    assert reference.split("\n\n\ndef attention_backward")[0] in lesson_code()
