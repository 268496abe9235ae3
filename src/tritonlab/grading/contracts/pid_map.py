"""pid-map (lessons 3–4): `pid_map(n, block_size, device)` returns an int32 tensor of length n whose element
i holds the id of the program that wrote it, i // block_size — written with a masked store.

Cost model: writes n int32 elements → bytes = 4·n.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading import huge
from tritonlab.grading.contracts import DEVICE, Case
from tritonlab.grading.contracts.compare import judge
from tritonlab.models import Failure

FUNCTION = "pid_map"
ARG_NAMES = ["n", "block_size", "device"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    # (n, block_size): size 1, small primes, BLOCK-1 / BLOCK / BLOCK+1, non-powers of two, many programs.
    plan = [
        (1, 16),
        (7, 16),
        (13, 4),
        (127, 128),
        (128, 128),
        (129, 128),
        (1000, 64),
        (1023, 256),
        (1025, 256),
        (4099, 32),
        (20011, 128),
    ]
    if backend == "gpu":
        plan += [((1 << 20) + 7, 1024), (1 << 22, 256)]
    # A few fresh sizes per check, so no fixed list can be special-cased.
    for block in (32, 256):
        plan.append((int(rng.integers(2, 40)) * block + int(rng.integers(1, block)), block))
    out = [Case(f"n={n}, block_size={b}", (n, b, DEVICE)) for n, b in plan]
    out.append(Case("n=0, block_size=64", (0, 64, DEVICE)))
    return out


def huge_cases(rng: np.random.Generator) -> list[Case]:
    """GPU only, `check --huge` (grading/huge.py): more than 2³¹ elements, so int32 offsets wrap."""
    n, block = huge.MIN_ELEMENTS + int(rng.integers(1, 1 << 12)), 1024
    spec = {"kind": "pid", "n": n, "dtype": "int32", "block_size": block}
    return [Case(f"huge: n={n}, block_size={block}", (n, block, DEVICE), extra={"huge": spec})]


def check(case: Case, result: dict) -> list[Failure]:
    n, block, _ = case.args
    expected = (np.arange(n, dtype=np.int64) // block).astype(np.float64)
    failures = judge(case, result, expected, "int32", 0.0, 0.0)
    if any(f.kind == "wrong-result" for f in failures):
        hint = i18n.t("grader.pid_map_element_i_must_hold", block=block)
        failures = [Failure(f.case, f.kind, f.message, f.cause or hint, f.where) for f in failures]
    return failures
