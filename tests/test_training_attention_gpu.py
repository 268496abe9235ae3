"""Lesson 13 on a GPU: the lesson's non-causal backward and the exercise's causal solution give the gradients
that torch's SDPA gives, at a real size in bf16 (`make test-gpu`; skipped without an NVIDIA GPU)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.gpu

LESSON = Path(__file__).resolve().parent.parent / "course" / "13-training-attention"


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"lesson13_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # both files guard their demos with `if __name__ == "__main__"`
    return module


@pytest.mark.parametrize(
    ("path", "causal"),
    [
        (LESSON / "examples" / "attention_backward.py", False),
        (LESSON / "exercises" / "attention-backward" / "solution.py", True),
    ],
    ids=["lesson-non-causal", "solution-causal"],
)
@pytest.mark.parametrize("head_dim", [64, 128])
def test_backward_matches_sdpa_gradients(path: Path, causal: bool, head_dim: int) -> None:
    import torch

    module = load(path)
    torch.manual_seed(0)
    B, H, S, D = 2, 4, 1000, head_dim
    q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
    expected = torch.autograd.grad(o, (qg, kg, vg), do)
    got = module.attention_backward(q, k, v, o.detach(), lse, do)
    for name, mine, ref in zip(("dq", "dk", "dv"), got, expected, strict=True):
        assert mine.dtype == torch.bfloat16 and mine.shape == ref.shape, name
        scale = ref.float().abs().max().item()
        err = (mine.float() - ref.float()).abs().max().item()
        assert err <= 2e-2 * scale, f"{path.name} {name}: max error {err:.3g} against max |grad| {scale:.3g}"
    again = module.attention_backward(q, k, v, o.detach(), lse, do)
    assert all(torch.equal(a, b) for a, b in zip(got, again, strict=True)), "no atomics: the same bits twice"
