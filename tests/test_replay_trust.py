"""What the replay takes from the host (grading/replay/trust.py, docs/grader.md "What the replay trusts"), and
what the parent no longer believes from the check child (check/judge.py, check/replay.py), in-process. End
to end through the sandbox: the issue-33 files of tests/wrong and tests/right."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tritonlab.grading.check import judge
from tritonlab.grading.check.replay import fill_policy, produced_outputs, replay_arrays
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.grading.replay import Refused
from tritonlab.grading.replay.trust import HostValues, covers, file_literals
from tritonlab.models import Verdict
from tritonlab.runs.collect import RunResult

# the kernels the replay builds from text are decorated with TRITON_INTERPRET set, as in the interpreter zygote
pytestmark = pytest.mark.usefixtures("interpreted")


SOURCE = "BLOCK = 128\nLOG2E = 1.4426950408889634\nMODE = 'rn'\n"


def values(eps: float = 1e-6, fills: list | None = None) -> HostValues:
    """A case like rmsnorm's: x (37, 129) with a padded row stride, weight (129,), a declared eps."""
    x = torch.empty(37, 160)[:, :129]
    w = torch.empty(129)
    case = {"args": [{"tensor": "x"}, {"tensor": "w"}], "kwargs": {"eps": {"value": eps}}}
    record = {"events": [{"op": "launch", "grid": [5], "args": []}], "outputs": []}
    return HostValues(file_literals(SOURCE), case, record, [x, w], fills or [0])


@pytest.mark.parametrize(
    "value",
    [37, 129, 160, 37 * 129, 129 * 4, 37 // 2, 128, 1 << 20, 5, 160 - 129, 200, -(-37 // 16) * -(-129 // 16)]
    + [-(-5920 // 256) * -(-129 // 64), True, None],
)
def test_sizes_strides_and_simple_combinations_pass(value: object) -> None:
    values().check_scalar(value, "arg")


@pytest.mark.parametrize(
    "value",
    [
        1e-6,
        1.0 / 129,
        1 / math.sqrt(129),
        1 / math.sqrt(129) * 1.4426950408889634,
        0.0,
        -math.inf,
        1.4426950408889634,
    ],
)
def test_declared_scalars_and_simple_functions_of_them_pass(value: float) -> None:
    values().check_scalar(value, "arg")
    values().check_scalar(float(np.float32(value)), "arg")  # rounded through float32 on the host


def test_a_dtype_and_a_literal_string_pass() -> None:
    import triton.language as tl

    values().check_scalar(tl.float32, "ACC")
    values().check_scalar("rn", "MODE")
    with pytest.raises(Refused):
        values().check_scalar("computed", "MODE")


def test_values_the_inputs_decided_are_refused() -> None:
    """Random floats (a row's max, a column of dw) and the bits of float32 answers as integers."""
    rng = np.random.default_rng(0)
    host = values()
    for v in rng.standard_normal(200).tolist():
        with pytest.raises(Refused, match="host code computed"):
            host.check_scalar(v, "arg")
    for bits in rng.standard_normal(1000).astype(np.float32).view(np.int32).tolist():
        with pytest.raises(Refused, match="host code"):
            host.check_scalar(int(bits), "arg")


def test_constants_are_zero_unless_the_policy_lists_them() -> None:
    values().check_constant(0.0, "fill")
    with pytest.raises(Refused, match="allows only"):
        values().check_constant(-math.inf, "fill")
    values(fills=fill_policy({"fills": ["-inf"]})).check_constant(-math.inf, "fill")
    with pytest.raises(Refused):
        values(fills=fill_policy({"fills": ["-inf"]})).check_constant(0.25, "fill")
    assert fill_policy({"fills": "nonsense"}) == [0.0]


def test_a_fill_must_cover_its_whole_allocation() -> None:
    whole = {"shape": [4, 8], "stride": [8, 1], "offset": 16}
    assert covers(whole, 32, 16, 4, 4)
    assert covers({"shape": [8, 4], "stride": [1, 8], "offset": 16}, 32, 16, 4, 4)  # transposed, dense
    assert not covers({"shape": [4, 4], "stride": [8, 1], "offset": 16}, 32, 16, 4, 4)  # half the columns
    assert not covers({"shape": [1], "stride": [1], "offset": 17}, 32, 16, 4, 4)  # one element
    assert not covers({"shape": [32], "stride": [1], "offset": 15}, 32, 16, 4, 4)  # shifted into the guard


def test_the_parent_reads_replay_outputs_as_hostile_files(tmp_path) -> None:
    entry = {"arrays": [np.zeros(4, np.int32)]}
    np.save(tmp_path / "r0_o0.npy", np.arange(4, dtype=np.int32))
    assert replay_arrays(tmp_path, 0, ["r0_o0.npy"], entry)[0].tolist() == [0, 1, 2, 3]
    assert "malformed" in replay_arrays(tmp_path, 0, ["../c0_launches.json"], entry)
    assert "malformed" in replay_arrays(tmp_path, 1, ["r0_o0.npy"], entry)  # another case's file
    np.save(tmp_path / "r0_o1.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert "cannot be read" in replay_arrays(tmp_path, 0, ["r0_o1.npy"], entry)
    np.save(tmp_path / "r0_o2.npy", np.zeros(1 << 20, np.float64))  # far more than the function returned
    assert "cannot be read" in replay_arrays(tmp_path, 0, ["r0_o2.npy"], entry)


def test_no_launch_is_judged_from_the_record_and_a_skip_only_by_the_parent() -> None:
    assert produced_outputs({"outputs": [{"shape": [3], "dtype": "float32"}]}, None)
    assert not produced_outputs({"outputs": [{"shape": [0], "dtype": "float32"}]}, None)
    f32 = Case("n=3", (Tensor(np.zeros(3), "float32"),))
    bf16 = Case("bf16", (Tensor(np.zeros(3), "bfloat16"),), extra={"bf16_arithmetic": True})

    class Contract:
        @staticmethod
        def check(case: Case, entry: dict) -> list:
            return []

    result = {
        "cases": [
            {"name": "n=3", "status": "skipped", "reason": "says the child"},
            {"name": "bf16", "status": "skipped", "reason": "NaN"},
        ]
    }
    run = RunResult(Path("."), 0, None, False, False, False, "", 0.1)
    verdict = Verdict(exercise="vector-add", backend="interpreter", seed=1, file="f.py")
    judge.judge_all(verdict, Contract(), [f32, bf16], result, run, Path("f.py"), "vector_add")
    assert [(f.case, f.kind) for f in verdict.failures] == [("n=3", "crash")]
    assert any("skipped bf16" in n for n in verdict.notes)
    result = {"cases": [{"name": "n=3", "status": "returned", "no_launch": True}]}
    verdict = Verdict(exercise="vector-add", backend="interpreter", seed=1, file="f.py")
    judge.judge_all(verdict, Contract(), [f32], result, run, Path("f.py"), "vector_add")
    assert [f.kind for f in verdict.failures] == ["no-kernel-launch"]


def test_an_integer_is_not_laundered_through_a_view_offset_or_a_broadcast_dimension() -> None:
    """The host picks a view's storage offset and a stride-0 dimension's size freely: neither vouches for an
    integer argument."""
    x = torch.empty(37, 160)[:, :129]
    smuggled = 987_654_321
    views = [{"tensor": {"shape": [smuggled], "stride": [0], "offset": smuggled, "buf": 0}}]
    record = {"events": [{"op": "launch", "grid": [1], "args": views}], "outputs": []}
    host = HostValues(file_literals(SOURCE), {"args": [], "kwargs": {}}, record, [x], [0])
    with pytest.raises(Refused):
        host.check_scalar(smuggled, "arg")
    record["events"][0]["args"] = [{"tensor": {"shape": [4, 160], "stride": [160, 1], "offset": 0, "buf": 0}}]
    HostValues(file_literals(SOURCE), {"args": [], "kwargs": {}}, record, [x], [0]).check_scalar(640, "arg")
