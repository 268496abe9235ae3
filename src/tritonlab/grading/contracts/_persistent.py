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

from tritonlab import i18n
from tritonlab.grading.contracts import REPLAYED_LAUNCHES, Case
from tritonlab.models import Failure

GPU_SMS = 132
INTERPRETER_SMS = 4
ODD_SMS = (3, 7)
LARGEST_TILE = 256

LOOP_HINT = i18n.t("grader.persistent_launch_grid_min_num")


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
                i18n.t("grader.persistent_launches_this_case_were"),
                i18n.t("grader.persistent_launch_one_kernel_from"),
            )
        ]
    if len(launches) != 1:
        return [
            Failure(
                case.name,
                "too-many-launches",
                i18n.t("grader.persistent_n_launches_kernel_launches", n_launches=len(launches)),
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
                i18n.t("grader.persistent_grid_grid_persistent_kernel", grid=tuple(grid)),
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
        i18n.t("grader.persistent_tiles_tiles_bm_bn", tiles=tiles, bm=bm, bn=bn)
        if known
        else i18n.t("grader.persistent_at_least_tiles_tile", tiles=tiles)
    )
    if programs > num_sms:
        message = i18n.t(
            "grader.persistent_launch_started_programs_programs",
            programs=programs,
            num_sms=num_sms,
            tiles_text=tiles_text,
        )
    else:
        message = i18n.t(
            "grader.persistent_launch_started_programs_program",
            programs=programs,
            num_sms=num_sms,
            tiles_text=tiles_text,
            num_sms_minus=num_sms - programs,
        )
    return [Failure(case.name, "not-persistent", message, LOOP_HINT)]
