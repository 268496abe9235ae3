"""Shared by persistent-matmul and tma-matmul (lesson 14): the SM count a check states, and whether the
launch that produced the result is persistent.

The SM count is an ARGUMENT the check passes (`num_sms`), chosen here in the parent, never read from the
device by the child: a process that ran learner code could report any count. A GPU check states 132 (the
H100/H200 SXM count, the GPUs the course verifies on); the interpreter, which has no SMs, states an emulated
4. On both, two cases state 3 and 7, so that a count written into the file instead of the argument fails.

Persistent means: exactly one kernel launch, a 1-D grid, and a program count between "every SM busy" and
"one program per SM": min(num_sms, tiles) ≤ programs ≤ num_sms, where tiles = cdiv(M, BLOCK_M)·cdiv(N,
BLOCK_N) with the BLOCK_M / BLOCK_N keyword arguments of the launch (when they are not passed by keyword,
with 256×256 tiles, the largest a GEMM uses: a lower bound of the tile count). The grids come from the launch
record the fresh replay ran (`REPLAYED_LAUNCHES`, set by the grader), not from the check child's own count.
"""

from __future__ import annotations

import math

from tritonlab.grading.contracts import REPLAYED_LAUNCHES, Case
from tritonlab.models import Failure

GPU_SMS = 132
INTERPRETER_SMS = 4
ODD_SMS = (3, 7)
LARGEST_TILE = 256

LOOP_HINT = (
    "launch `grid = (min(num_sms, tiles),)` and let each program walk the tiles "
    "`for tile in range(tl.program_id(0), tiles, tl.num_programs(0))`"
)


def stated_sms(backend: str) -> int:
    return GPU_SMS if backend == "gpu" else INTERPRETER_SMS


def persistence_failures(case: Case, entry: dict, m: int, n: int, num_sms: int) -> list[Failure]:
    """[] when the replayed launch is persistent for an m×n output and `num_sms` SMs, else why not."""
    if entry.get("status") != "returned" or not entry.get("launches"):
        return []  # judged elsewhere: an exception, a crash, no launch
    launches = entry.get(REPLAYED_LAUNCHES)
    if not isinstance(launches, list) or not launches:
        return [
            Failure(
                case.name,
                "not-persistent",
                "the launches of this case were not replayed, so their grid is unknown",
                "launch one kernel from your function with plain tensor and integer arguments",
            )
        ]
    if len(launches) != 1:
        return [
            Failure(
                case.name,
                "too-many-launches",
                f"{len(launches)} kernel launches; a persistent GEMM is one launch whose programs loop over "
                "every tile",
                LOOP_HINT,
            )
        ]
    launch = launches[0]
    grid = [g for g in launch.get("grid", []) if isinstance(g, int)]
    programs = math.prod(grid) if grid else 0
    if any(g != 1 for g in grid[1:]):
        return [
            Failure(
                case.name,
                "not-persistent",
                f"the grid is {tuple(grid)}: a persistent kernel numbers its programs along one axis",
                LOOP_HINT,
            )
        ]
    kwargs = launch.get("int_kwargs", {})
    bm, bn = kwargs.get("BLOCK_M"), kwargs.get("BLOCK_N")
    known = isinstance(bm, int) and isinstance(bn, int) and bm > 0 and bn > 0
    tiles = (
        math.ceil(m / bm) * math.ceil(n / bn)
        if known
        else (math.ceil(m / LARGEST_TILE) * math.ceil(n / LARGEST_TILE))
    )
    low = min(num_sms, tiles)
    if low <= programs <= num_sms:
        return []
    tiles_text = (
        f"{tiles} tiles of {bm}×{bn}"
        if known
        else f"at least {tiles} tile(s) (BLOCK_M/BLOCK_N not passed by keyword)"
    )
    if programs > num_sms:
        message = (
            f"the launch started {programs} programs for {num_sms} SMs (num_sms = {num_sms}): one program per "
            f"tile, not one per SM ({tiles_text})"
        )
    else:
        message = (
            f"the launch started {programs} program(s) while {num_sms} SMs were available for {tiles_text}: "
            f"{num_sms - programs} SM(s) would sit idle"
        )
    return [Failure(case.name, "not-persistent", message, LOOP_HINT)]
