"""`where` names the learner's line that did it (issue 16, grading/where.py): the host line that ran the torch
op or the copy, the load or store whose addresses were wrong (the interpreter's access log), the line that
computed a wrong grid. Each case is a small learner file whose expected line is marked `# <-`."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tritonlab.grading import where as lines
from tritonlab.grading.check import pipeline
from tritonlab.models import Exercise, Verdict
from tritonlab.runs import sandbox

HEAD = """
import torch
import triton
import triton.language as tl
"""

ADD_KERNEL = """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load({y_address}, mask=mask){y_mark}
    tl.store(out_ptr + offs, x + y, mask={store_mask}){store_mark}
"""

ADD_HOST = """
def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError("x and y differ in shape, dtype or device")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n == 0:
        return out
    x, y = x.contiguous(), y.contiguous()
    grid = ({grid},){grid_mark}
    add_kernel[grid](x, y, out, n, BLOCK=64)
    return out
"""


def exercise(exercise_id: str, function: str) -> Exercise:
    return Exercise(exercise_id, "test", Path("."), function, {"en": exercise_id}, {}, {}, ())


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def write(tmp_path: Path, name: str, text: str) -> tuple[Path, int]:
    """The learner file and the number of its line marked `# <-`."""
    path = tmp_path / f"{name}.py"
    text = textwrap.dedent(text)
    path.write_text(text)
    marked = [k for k, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith("# <-")]
    assert len(marked) == 1, "mark exactly one line"
    return path, marked[0]


def add_file(tmp_path: Path, name: str, **parts: str) -> tuple[Path, int]:
    fill = {"y_address": "y_ptr + offs", "store_mask": "mask", "grid": "triton.cdiv(n, 64)"}
    fill |= {"y_mark": "", "store_mark": "", "grid_mark": ""} | parts
    return write(tmp_path, name, HEAD + ADD_KERNEL.format(**fill) + ADD_HOST.format(**fill))


def add_check(path: Path, zygote: sandbox.Zygote) -> Verdict:
    return pipeline.check(exercise("vector-add", "vector_add"), path, "interpreter", zygote, seed=5)


def wheres(verdict: Verdict, kind: str) -> set[str]:
    found = {f.where for f in verdict.failures if f.kind == kind}
    assert found, f"no {kind} failure in {[(f.kind, f.message) for f in verdict.failures]}"
    return found


def test_second_load_with_wrong_addresses_is_named_not_the_first(
    tmp_path: Path, zygote: sandbox.Zygote
) -> None:
    path, line = add_file(tmp_path, "second_load", y_address="y_ptr + offs + 1", y_mark="  # <-")
    verdict = add_check(path, zygote)
    assert not verdict.passed
    assert wheres(verdict, "out-of-bounds-read") == {f"{path}:{line}"}
    # past the host's copy of a transposed `y` the replay's process holds other bytes: that read, not the
    # host, is why the launches alone differ, and the case says so (it had said `host-computed`)
    assert not [f for f in verdict.failures if f.kind == "host-computed"], verdict.failures


def test_store_past_the_end_is_named_with_the_mask_cause(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path, line = add_file(tmp_path, "store_le", store_mask="offs <= n", store_mark="  # <-")
    verdict = add_check(path, zygote)
    failures = [f for f in verdict.failures if f.kind == "out-of-bounds-write"]
    assert failures and {f.where for f in failures} == {f"{path}:{line}"}
    assert all("`<=`" in f.cause for f in failures)


def test_too_small_grid_names_the_grid_line_not_the_store(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path, line = add_file(tmp_path, "small_grid", grid="n // 64", grid_mark="  # <-")
    verdict = add_check(path, zygote)
    assert wheres(verdict, "unwritten-output") == {f"{path}:{line}"}
    assert any("cdiv" in f.cause for f in verdict.failures)


def test_torch_op_names_the_host_line_that_ran_it(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path, line = write(
        tmp_path,
        "fallback",
        HEAD
        + textwrap.dedent(
            """
        def vector_add(x, y):
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
                raise ValueError("x and y differ")
            total = x + y  # <-
            return total
        """
        ),
    )
    verdict = add_check(path, zygote)
    assert wheres(verdict, "torch-fallback") == {f"{path}:{line}"}
    assert wheres(verdict, "no-kernel-launch") == {f"{path}:{line}"}


def test_numpy_on_the_host_names_the_return_line(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path, line = write(
        tmp_path,
        "numpy_host",
        HEAD
        + textwrap.dedent(
            """
        def vector_add(x, y):
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
                raise ValueError("x and y differ")
            values = x.numpy() + y.numpy()
            return torch.from_numpy(values)  # <-
        """
        ),
    )
    verdict = add_check(path, zygote)
    assert wheres(verdict, "no-kernel-launch") == {f"{path}:{line}"}


def test_host_copy_without_launch_names_the_copy_line(tmp_path: Path, zygote: sandbox.Zygote) -> None:
    path, line = write(
        tmp_path,
        "clone",
        HEAD
        + textwrap.dedent(
            """
        def vector_copy(x):
            y = x.clone()  # <-
            return y
        """
        ),
    )
    verdict = pipeline.check(exercise("vector-copy", "vector_copy"), path, "interpreter", zygote, seed=5)
    assert wheres(verdict, "no-kernel-launch") == {f"{path}:{line}"}


def test_grid_line_follows_the_name_to_its_assignment(tmp_path: Path) -> None:
    path, line = write(
        tmp_path,
        "grids",
        """
        def launch(k, n):
            grid = (n // 64,)  # <-
            other = 3
            k[grid](n)
            k[(n, 1)](n)
        """,
    )
    launch = line + 2
    assert lines.grid_line(f"{path}:{launch}") == f"{path}:{line}"
    assert lines.grid_line(f"{path}:{launch + 1}") == f"{path}:{launch + 1}"  # written inline
    assert lines.grid_line(f"{path}:{line + 1}") == f"{path}:{line + 1}"  # not a launch: unchanged
    assert lines.grid_line("no-such-file.py:3") == "no-such-file.py:3"


def test_a_load_on_one_copy_is_not_stray_in_the_slack_around_its_neighbour() -> None:
    """The host copies of two inputs can sit within each other's watched slack (CI, round 6, blamed a correct
    load of `x` as an out-of-bounds read): a lane on any known tensor's element is never stray, and a lane past
    both is counted once."""
    import numpy as np
    import torch

    from tritonlab.grading import guards

    base = torch.zeros(128)
    x_copy, y_copy = base[:64], base[64:]  # adjacent, as the allocator may place them
    rec = guards.Recorder()
    rec.trace += [("copy", x_copy, x_copy), ("copy", y_copy, y_copy)]

    def load(t: torch.Tensor, shift: int, where: str, mask: np.ndarray | None = None) -> None:
        addrs = (t.data_ptr() + (np.arange(64) + shift) * t.element_size()).astype(np.uint64)
        masked = None if mask is None else SimpleNamespace(data=mask)
        lines.note_access(rec, "load", SimpleNamespace(data=addrs), masked, lambda: where)

    load(x_copy, 0, "x-line")
    load(y_copy, 0, "y-line")
    load(x_copy, 32, "spans-both")  # half on x's copy, half on y's: every lane is an element
    assert rec.strays == []
    load(y_copy, 1, "y-past-end")  # its last lane is past both copies
    assert [(s["where"], s["lanes"]) for s in rec.strays] == [("y-past-end", 1)]
    load(y_copy, 1, "masked", mask=np.arange(64) < 63)  # the lane past the end masked off
    assert [s["where"] for s in rec.strays] == ["y-past-end"]


def test_a_read_off_the_allocation_fails_and_a_read_of_a_layout_gap_does_not() -> None:
    """Lanes in the gaps of a strided input are inside its allocation: stray (they choose the line shown) but
    not out of bounds. Lanes in the guards are off the allocation: a case that passed otherwise fails on them,
    at the load's line, even though no value read there reached the output."""
    import numpy as np
    import torch

    from tritonlab.grading import guards
    from tritonlab.grading.contracts import Case
    from tritonlab.grading.contracts.compare import reads_outside

    view, g = guards.make_input(torch.arange(8, dtype=torch.float32), "strided", "cpu", "input `x`")
    assert view.stride() == (2,)
    rec = guards.Recorder()
    rec.input_guards.append(g)
    start, esize = view.data_ptr(), view.element_size()

    def load(offsets: np.ndarray, where: str) -> None:
        addrs = (start + offsets * esize).astype(np.uint64)
        lines.note_access(rec, "load", SimpleNamespace(data=addrs), None, lambda: where)

    load(np.arange(8) * 2, "elements")
    assert rec.strays == []
    load(np.arange(15), "gaps")  # every other lane between two elements: inside the allocation
    gaps = rec.strays[0]
    assert (gaps["where"], gaps["lanes"], gaps["outside"]) == ("gaps", 7, 0)
    case = Case("x strided", [])
    assert reads_outside(case, {"strays": rec.strays}) == []

    load(np.arange(8) * 2 + 4, "past-end")  # the last two lanes run past the allocation's 16 elements
    past = rec.strays[1]
    assert (past["outside"], past["first_outside"], past["size"]) == (2, 17, 16)  # 16 + 1: the view's offset
    (failure,) = reads_outside(case, {"strays": rec.strays})
    assert (failure.kind, failure.where) == ("out-of-bounds-read", "past-end")
    assert "(indices 0 to 15), the first at index 17" in failure.message and "mask=" in failure.cause

    hostile = [{"op": "load", "outside": True, "first_outside": "0", "size": None}, "not a dict"]
    assert reads_outside(case, {"strays": hostile}) == []
