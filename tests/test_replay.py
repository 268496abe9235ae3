"""The fresh replay child's pieces, in-process (grading/replay/): what it takes from the learner's file, what it
refuses in a kernel, and how it treats a hostile launch record. End to end through the sandbox:
tests/test_wrong_solutions.py (the vector_add cheats) and `tritonlab dev check`."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tritonlab.grading.check.replay import compare_replay
from tritonlab.grading.replay import Refused
from tritonlab.grading.replay.lower import lower
from tritonlab.grading.replay.replayer import MAX_EVENTS, Replayer
from tritonlab.grading.replay.source import build_kernels, extract

# the kernels the replay builds from text are decorated with TRITON_INTERPRET set, as in the interpreter zygote
pytestmark = pytest.mark.usefixtures("interpreted")


KERNEL = """
import os
import os

import numpy as np
import triton
import triton.language as tl

BLOCK = 128
SCALE = tl.constexpr(2)
COMPUTED = len("abc")
os.environ["TRITONLAB_REPLAY_RAN_TOP_LEVEL"] = "1"
raise SystemExit("top-level code must not run in the replay")


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
"""


def test_only_kernels_and_literal_constants_are_taken_and_top_level_code_never_runs() -> None:
    os.environ.pop("TRITONLAB_REPLAY_RAN_TOP_LEVEL", None)
    defs, _options, names = extract(KERNEL)
    assert set(defs) == {"scale_kernel"}
    assert (
        names["BLOCK"] == 128 and names["SCALE"].value == 2 and "COMPUTED" not in names and "np" not in names
    )
    run, lowered = build_kernels(KERNEL, "<learner>")
    assert "TRITONLAB_REPLAY_RAN_TOP_LEVEL" not in os.environ
    x, out = torch.arange(10, dtype=torch.float32), torch.zeros(10)
    run["scale_kernel"][(1,)](x, out, 10, B=16)
    assert torch.equal(out, x * 2)
    lower(lowered["scale_kernel"], {"x_ptr": x, "out_ptr": out, "n": 10, "B": 16}, {})


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("tl.store(o + 0, np.float32(1.0))", "`np`"),
        ("triton.runtime.jit.os.system('true')", "triton.runtime"),
        ("tl.store(o + 0, x.__class__)", "private attribute"),
        ("tl.store(o + 0, getattr(tl, 'full'))", "`getattr`"),
        ("f = lambda v: v", "defines a function"),
        ("import os", "import"),
    ],
)
def test_a_kernel_naming_anything_but_triton_is_refused(body: str, says: str) -> None:
    source = f"import triton\nimport triton.language as tl\nimport numpy as np\n\n\n@triton.jit\ndef k(x, o):\n    {body}\n"
    with pytest.raises(Refused) as info:
        build_kernels(source, "<learner>")
    assert says in str(info.value)


@pytest.mark.parametrize(
    "signature",
    ["x, o=-(print('ran'))", "x, o: print('ran') = 1", "x, o=np.zeros(1)"],
)
def test_defaults_and_annotations_that_would_run_code_when_defined_are_refused(signature: str) -> None:
    source = f"import triton\nimport numpy as np\n\n\n@triton.jit\ndef k({signature}):\n    pass\n"
    with pytest.raises(Refused):
        build_kernels(source, "<learner>")


def test_python_hidden_in_a_kernel_is_refused_when_it_lowers() -> None:
    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
        "    x = tl.load(x_ptr + tl.arange(0, B))\n    x.handle.data[...] = 0\n    tl.store(x_ptr + tl.arange(0, B), x)\n"
    )
    _run, lowered = build_kernels(source, "<learner>")
    with pytest.raises(Refused, match="does not compile for a GPU"):
        lower(lowered["k"], {"x_ptr": torch.zeros(8), "n": 8, "B": 8}, {})


def _record(**changes: object) -> dict:
    view = {"buf": 0, "dtype": "float32", "offset": 0, "shape": [10], "stride": [1]}
    record = {
        "version": 1,
        "buffers": [{"kind": "alloc", "dtype": "float32", "numel": 10, "init": "poison"}],
        "events": [
            {"op": "launch", "kernel": "scale_kernel", "grid": [1], "args": [{"tensor": view}] * 2 + [{"int": 10}],
             "kwargs": {"B": {"int": 16}}}
        ],
        "outputs": [view],
    }  # fmt: skip
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (_record(buffers="many"), "malformed"),
        (_record(outputs=[{"buf": 0, "dtype": "float32", "offset": 300000, "shape": [10], "stride": [1]}]), "outside"),
        (_record(outputs=[{"buf": 7, "dtype": "float32", "offset": 0, "shape": [10], "stride": [1]}]), "malformed"),
        (_record(outputs=[{"buf": 0, "dtype": "object", "offset": 0, "shape": [10], "stride": [1]}]), "malformed"),
        (_record(outputs=[{"unknown": True}]), "outside torch's allocation"),
        (_record(events=[{"op": "launch", "kernel": "helper", "grid": [1], "args": []}]), "not a @triton.jit"),
        (_record(events=[{"op": "launch", "kernel": "scale_kernel", "grid": [1], "args": [], "kwargs": {"x": {"eval": "1"}}}]), "malformed"),
        (_record(events=[{"op": "shell"}]), "malformed"),
        (_record(events=[{"op": "fill"}] * (MAX_EVENTS + 1)), "malformed"),
        (_record(buffers=[{"kind": "alloc", "dtype": "float32", "numel": 10, "init": "unknown"}]), "cannot be re-created"),
    ],
)  # fmt: skip
def test_a_hostile_record_is_refused(record: dict, says: str) -> None:
    run, lowered = build_kernels(KERNEL, "<learner>")
    replayer = Replayer("cpu", None)  # type: ignore[arg-type]
    with pytest.raises(Refused) as info:
        replayer.build_buffers(record, {})
        replayer.run_events(record, run, lowered)
        [replayer.tensor(s) for s in record["outputs"]]
    assert says in str(info.value)


def test_the_parent_compares_bits_and_tolerates_atomics_only_when_told() -> None:
    a = np.array([1.0, 2.0, float("nan")], dtype=np.float32).view(np.int32)
    b = a.copy()
    entry = {"arrays": [a], "outputs": [{"dtype": "float32"}]}
    assert compare_replay(entry, [b], tolerant=False) == ""
    b[1] += 1  # one ulp
    assert "1 of 3" in compare_replay(entry, [b], tolerant=False)
    assert compare_replay(entry, [b], tolerant=True) == ""
    assert "output(s)" in compare_replay(entry, [], tolerant=False)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_atomics_are_allowed_a_unit_of_the_outputs_own_dtype(dtype: str) -> None:
    """A kernel with atomics on a GPU: the replay's sums land in another order, so a few elements differ by one
    unit of the output's dtype (the H200: a right attention backward, dQ summed with atomics in bf16, 3 of
    2,097,152 elements; once failed as host-computed). A host that changed the result still fails."""
    from tritonlab.grading import contracts as C

    rng = np.random.default_rng(1)
    values = rng.standard_normal(4096)
    mine = C.to_storage(values, dtype)
    other = mine.copy()
    three = [5, 900, 4000]  # the next representable value: one unit, in three elements
    if other.dtype.kind == "f":
        other[three] = np.nextafter(other[three], np.inf)
    else:  # bfloat16 is stored as its bits
        other[three] += 1
    entry = {"arrays": [mine], "outputs": [{"dtype": dtype}]}
    assert compare_replay(entry, [other], tolerant=True) == "", dtype
    assert "3 of 4096" in compare_replay(entry, [other], tolerant=False)
    host = C.to_storage(C.decode(mine, dtype).astype(np.float64) + 0.01 * np.abs(values).max(), dtype)
    assert "differ" in compare_replay(entry, [host], tolerant=True), dtype
