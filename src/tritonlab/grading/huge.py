"""Huge-size cases (≥ 2³¹ elements) for the 1-D exercises: a GPU check only (`check --huge`, `dev check --backend
gpu`, scripts/gpu_verify.py).

Such a case cannot travel like the others: 2³¹ float16 elements are 4 GiB per tensor, 16 GiB as the parent's
float64 reference, and the outputs would have to be read back. So an input is `Generated(n, dtype, salt)`, a
formula of the element index (small integers, exact in every dtype), filled on the device in chunks by each
child that needs it. The check child (which runs the learner's module) reports only a digest of each returned
tensor. The replay child (which never imports it, grading/replay/) regenerates the inputs, replays the
recorded launches, computes the reference on the device chunk by chunk and reports a summary: the mismatch
count, the first bad indices and the same digest. The parent judges from that summary alone
(`judge`): the verdict comes from the launches replayed in the process that ran no learner code, and a digest
that differs from the check child's means the host changed the result (`host-computed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tritonlab import i18n
from tritonlab.models import Failure

CHUNK = 1 << 26  # elements per pass over a huge tensor (int64 temporaries of 512 MiB at most)
MIN_ELEMENTS = (1 << 31) + 1  # what a huge case holds at least (contracts size theirs from this)
MAX_ELEMENTS = 1 << 34
DTYPES = ("float32", "float16", "int32")  # bf16 holds integers exactly only up to 256
FIRST_BAD = 8
KINDS = ("copy", "add", "pid")  # reference of the case: x, x + y, or i // block_size as int32


@dataclass(frozen=True)
class Generated:
    """A 1-D input of n elements whose element i is `pattern(i, salt)` in `dtype`."""

    n: int
    dtype: str
    salt: int

    def spec(self) -> dict:
        return {"n": self.n, "dtype": self.dtype, "salt": self.salt}


def parse(spec: Any) -> Generated:
    """A generated input's spec from a job file (written by the parent; checked anyway)."""
    if not isinstance(spec, dict):
        raise ValueError("a generated input needs a spec")
    n, dtype, salt = spec.get("n"), spec.get("dtype"), spec.get("salt")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_ELEMENTS:
        raise ValueError("a generated input's size is out of range")
    if dtype not in DTYPES or not isinstance(salt, int) or not 0 <= salt < 1 << 20:
        raise ValueError("a generated input's dtype or salt is not allowed")
    return Generated(n, dtype, salt)


def pattern(idx: Any, salt: int) -> Any:
    """Integers in [-510, 510] (exact in fp16/bf16/fp32/int32, and so are sums of two), varying with the index
    so that a copy from the wrong offset, a missing tail or an int32-wrapped address all change values."""
    return (idx * 40503 + salt * 97 + (idx >> 31) * 131) % 1021 - 510


def generate(gen: Generated, device: str, label: str) -> tuple[Any, Any]:
    """(1-D view, Guarded) holding the generated values inside an input-guard buffer."""
    import torch

    from tritonlab.grading import guards
    from tritonlab.grading.patterns import INPUT_GUARD

    g = guards.guarded_empty(gen.n, guards.torch_dtype(gen.dtype), device, label, INPUT_GUARD, None)
    view = g.interior
    for start in range(0, gen.n, CHUNK):
        stop = min(gen.n, start + CHUNK)
        idx = torch.arange(start, stop, dtype=torch.int64, device=device)
        view[start:stop] = pattern(idx, gen.salt).to(view.dtype)
    return view, g


def digest(t: Any) -> list[int]:
    """Two int64 sums over the bits (wrapping, so order-independent): plain, and weighted by the index."""
    import torch

    from tritonlab.grading import guards

    flat = t.reshape(-1)
    plain = weighted = 0
    for start in range(0, flat.numel(), CHUNK):
        bits = guards._as_bits(flat[start : start + CHUNK]).to(torch.int64)
        weight = torch.arange(start, start + bits.numel(), dtype=torch.int64, device=bits.device) % 65521 + 1
        plain += int(bits.sum().item())
        weighted += int((bits * weight).sum().item())
    wrap = 1 << 64
    return [plain % wrap, weighted % wrap]


def _expected_chunk(kind: str, inputs: list[Any], extra: dict, start: int, stop: int, device: str) -> Any:
    import torch

    if kind == "copy":
        return inputs[0][start:stop]
    if kind == "add":
        return inputs[0][start:stop] + inputs[1][start:stop]
    block = int(extra.get("block_size", 1))
    return (torch.arange(start, stop, dtype=torch.int64, device=device) // block).to(torch.int32)


def summary(kind: str, outputs: list[Any], inputs: list[Any], extra: dict, device: str) -> dict:
    """Judge the replayed outputs on the device: shape and dtype, then the elements, chunk by chunk."""
    import torch

    from tritonlab.grading import guards

    n, dtype = int(extra["n"]), str(extra["dtype"])
    if kind not in KINDS:
        return {"problem": "unknown reference"}
    if len(outputs) != 1:
        return {"problem": i18n.t("grader.huge_returned_n_outputs_tensors", n_outputs=len(outputs))}
    out = outputs[0]
    if list(out.shape) != [n]:
        return {
            "problem": i18n.t("grader.huge_returned_shape_shape_expected", shape=list(out.shape), n=n),
            "kind": "wrong-shape",
        }
    if guards.dtype_name(out.dtype) != dtype:
        return {
            "problem": i18n.t(
                "grader.huge_returned_dtype_name_expected",
                dtype_name=guards.dtype_name(out.dtype),
                dtype=dtype,
            ),
            "kind": "wrong-dtype",
        }
    bad, first = 0, []
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        want = guards._as_bits(_expected_chunk(kind, inputs, extra, start, stop, device).to(out.dtype))
        differ = guards._as_bits(out[start:stop]) != want
        count = int(differ.sum().item())
        if count and len(first) < FIRST_BAD:
            first += [start + int(i) for i in differ.nonzero().flatten()[: FIRST_BAD - len(first)].tolist()]
        bad += count
    if device == "cuda":
        torch.cuda.synchronize()
    return {"numel": n, "mismatches": bad, "first_bad": first, "digest": digest(out)}


def judge(case_name: str, entry: dict) -> list[Failure]:
    """A huge case's failures from the replay child's summary (the check child's own report is not trusted)."""
    got = entry.get("huge_summary")
    if not isinstance(got, dict):
        return []  # no replay: the case raised, launched nothing or was refused (judged elsewhere)
    if got.get("problem"):
        return [Failure(case_name, str(got.get("kind", "wrong-result")), str(got["problem"])[:300], "")]
    bad, n = got.get("mismatches"), got.get("numel")
    if not isinstance(bad, int) or not isinstance(n, int) or bad == 0:
        return []
    first = [i for i in got.get("first_bad", []) if isinstance(i, int)][:FIRST_BAD]
    cause = i18n.t("grader.huge_compare_elements_at_these")
    if first and min(first) >= (1 << 31) - (1 << 17):
        cause = i18n.t("grader.huge_every_element_below_2")
    return [
        Failure(
            case_name,
            "wrong-result",
            i18n.t("grader.huge_bad_n_elements_wrong", bad=bad, n=n, first=first),
            cause,
        )
    ]


BYTES = {"float32": 4, "float16": 2, "int32": 4}
HEADROOM = 4 << 30  # chunked temporaries (int64 indices and bits of CHUNK elements), the allocator's rounding


def gpu_bytes_needed(cases: list[Any]) -> int:
    """GPU memory a run of these cases needs at most (0: no huge case): twice what the largest case holds
    (its generated inputs and its output, in their guard buffers, plus the copies a solution or the replay
    makes of one of them), and headroom for the chunked temporaries. Found on the H200: the default per-run
    cap (16 GiB) stopped correct solutions of pid-map and vector-add with an out-of-memory error."""
    need = 0
    for case in cases:
        spec = getattr(case, "extra", {}).get("huge")
        if not isinstance(spec, dict):
            continue
        held = sum(a.n * BYTES.get(a.dtype, 4) for a in case.args if isinstance(a, Generated))
        held += int(spec.get("n", 0)) * BYTES.get(str(spec.get("dtype")), 4)
        need = max(need, 2 * held + HEADROOM)
    return need
