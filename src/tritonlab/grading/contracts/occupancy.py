"""occupancy (lesson 6): `scale_shift(x, a, b)` returns a·x + b (elementwise, 1-D, fp32 or fp16, new
contiguous tensor with x's dtype), launched with the module-level constants `BLOCK` and `NUM_WARPS` — chosen so
that, compiled for an H100 (sm_90), at least twice as many programs AND twice as many warps of the kernel
`scale_shift_kernel` are resident on one SM as with the starter's BLOCK=16384, NUM_WARPS=4.

Correctness is graded like every exercise (interpreter or GPU). Occupancy is graded from a TRUSTED compile
(grading/check/trusted_compile.py): the parent reads `BLOCK`, `NUM_WARPS` (integer literals) and the kernel's source
from the file as text, and a separate sandboxed child that never imports the learner's file compiles that
one function (decorators, defaults and annotations other than `tl.constexpr` stripped) for sm_90 with this
contract's signature; registers come from `ptxas -v`, occupancy from grading/kernel_inspect.occupancy.

The verdict is the same whichever Triton runs the grader (issue 40). The bar is pinned, not recompiled: the
starter's occupancy as Triton 3.9.0 compiles it for sm_90 (167 registers per thread: 3 programs, 12 warps per
SM; tests/test_occupancy_pinned.py holds this against the installed compiler when it is 3.9), so a pass needs
at least 6 programs and 24 warps per SM. Triton 3.6 compiles the starter to 255 registers (2 programs, 8 warps:
`python scripts/occupancy_versions.py` with a Triton 3.6 on the path prints it), which would halve the bar, and it
gives the learner's kernel a few registers more or fewer than 3.9 does; so the learner's register count is
taken REGISTER_MARGIN (one allocation unit: 8 per thread) lower before occupancy is worked out. The starter is
still compiled in the same run, to show its numbers beside the learner's and to catch a broken compiler.
The configuration graded must be the one launched: every launch of the kernel that the replay ran (read by the
parent from the launch record) must use BLOCK and num_warps equal to the file's constants (`judge_launched`),
else low-occupancy.

Cost model: reads n elements, writes n → bytes = 2·n·element_size.
"""

from __future__ import annotations

import ast

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case, Tensor, random_values, rounding_tol
from tritonlab.grading.contracts.compare import judge
from tritonlab.models import Failure

FUNCTION = "scale_shift"
# the launches the replay ran, read by the parent from each case's launch record (check/read.py): the
# configuration compiled for sm_90 must be the one launched (`judge_launched`)
GRID_FROM_RECORD = True
ARG_NAMES = ["x", "a", "b"]
KERNEL = "scale_shift_kernel"
COMPILE_CASE = "occupancy on sm_90 (trusted compile)"
TARGET = "cuda:90"
STARTER = {"BLOCK": 16384, "NUM_WARPS": 4}
MIN_BLOCK = 1024
# the starter's occupancy on sm_90, compiled by Triton 3.9.0 (see the module docstring): the bar is twice this
PINNED_STARTER = {"registers": 167, "programs_per_sm": 3, "warps_per_sm": 12, "triton": "3.9.0"}
REGISTER_MARGIN = 8  # registers per thread forgiven: one allocation unit, what Triton versions differ by here
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "a": "fp32", "b": "fp32", "BLOCK": "constexpr"}

BASELINE_SOURCE = """
@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (x * a + b).to(y_ptr.dtype.element_ty), mask=mask)
"""


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    sizes = [1, 1000, 4097, 16384, 16385, 40009, int(rng.integers(20000, 60000))]
    if backend == "gpu":
        sizes += [(1 << 22) + 5]
    out = []
    for n in sizes:
        a, b = float(np.float32(rng.uniform(-3, 3))), float(np.float32(rng.uniform(-3, 3)))
        out.append(Case(f"n={n} float32", (Tensor(random_values(rng, (n,), "float32"), "float32"), a, b)))
    a, b = 0.5, -1.25
    out.append(Case("n=5003 float16", (Tensor(random_values(rng, (5003,), "float16"), "float16"), a, b)))
    return out


def check(case: Case, result: dict) -> list[Failure]:
    x, a, b = case.args
    expected = x.values * a + b
    rtol, atol = rounding_tol(x.dtype, 1.0)
    # fp32 arithmetic: a·x + b rounds once or twice (fma or not), relative to |a·x| + |b|, not to the result
    scale = float(np.max(np.abs(x.values * a) + abs(b), initial=0.0))
    return judge(case, result, expected, x.dtype, rtol, atol + 4 * 2.0**-24 * scale)


# ---- the trusted compile ------------------------------------------------------------------------------


def _constants(source: str) -> tuple[dict[str, int], list[str]]:
    """Module-level integer literals BLOCK and NUM_WARPS, read from the file's text (nothing is run)."""
    found: dict[str, int] = {}
    problems: list[str] = []
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return found, [i18n.t("grader.occupancy_file_does_not_parse", msg=exc.msg, lineno=exc.lineno)]
    except (MemoryError, RecursionError, UnicodeError, ValueError) as exc:  # hostile text: nesting, bad bytes
        return found, [i18n.t("grader.occupancy_file_does_not_parse_2", name=type(exc).__name__)]
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in STARTER:
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, MemoryError, RecursionError):
                    value = None
                if isinstance(value, int) and not isinstance(value, bool):
                    found[name] = value
                else:
                    problems.append(
                        i18n.t("grader.occupancy_name_must_be_plain", name=name, STARTER=STARTER[name])
                    )
    for name in STARTER:
        if name not in found and not any(name in p for p in problems):
            problems.append(i18n.t("grader.occupancy_file_must_define_name", name=name))
    return found, problems


def _item(label: str, source: str, block: int, warps: int) -> dict:
    return {
        "label": label,
        "source": source,
        "kernel": KERNEL,
        "signature": SIGNATURE,
        "constexprs": {"BLOCK": block},
        "aligned": ["x_ptr", "y_ptr"],
        "options": {"num_warps": warps},
        "target": TARGET,
    }


def compile_items(source: str) -> tuple[list[dict], list[Failure]]:
    """(what the trusted child compiles, failures found already from the text)."""
    values, problems = _constants(source)
    block, warps = values.get("BLOCK"), values.get("NUM_WARPS")
    if block is not None and (block < MIN_BLOCK or block > 65536 or block & (block - 1)):
        problems.append(i18n.t("grader.occupancy_block_block_use_power", block=block, MIN_BLOCK=MIN_BLOCK))
    if warps is not None and warps not in (1, 2, 4, 8, 16, 32):
        problems.append(i18n.t("grader.occupancy_num_warps_warps_use", warps=warps))
    if problems:
        return [], [Failure(COMPILE_CASE, "low-occupancy", "; ".join(problems))]
    return [
        _item("starter", BASELINE_SOURCE, STARTER["BLOCK"], STARTER["NUM_WARPS"]),
        _item("yours", source, int(block), int(warps)),  # type: ignore[arg-type]
    ], []


def judge_compile(results: list[dict]) -> list[Failure]:
    base, mine = results
    if "error" in base:
        return [
            Failure(
                COMPILE_CASE,
                "crash",
                i18n.t(
                    "grader.occupancy_reference_configuration_did_not",
                    error=base["error"],
                    traceback=base.get("traceback", ""),
                ),
            )
        ]
    if "error" in mine:
        return [
            Failure(
                COMPILE_CASE,
                "exception",
                i18n.t("grader.occupancy_kernel_did_not_compile", KERNEL=KERNEL, error=mine["error"]),
                i18n.t("grader.occupancy_keep_kernel_s_name", SIGNATURE=", ".join(SIGNATURE)),
            )
        ]
    regs = mine["resources"].get("registers")
    m = graded_occupancy(mine)
    spills = mine["resources"].get("spill_stores", 0) + mine["resources"].get("spill_loads", 0)
    pinned = PINNED_STARTER
    summary = i18n.t(
        "grader.occupancy_configuration_regs_registers_per",
        regs=regs,
        graded_registers=m["graded_registers"],
        REGISTER_MARGIN=REGISTER_MARGIN,
        programs_per_sm=m["programs_per_sm"],
        num_warps=mine["num_warps"],
        warps_per_sm=m["warps_per_sm"],
        limited_by=" and ".join(m["limited_by"]),
        triton=pinned["triton"],
        registers=pinned["registers"],
        programs_per_sm2=pinned["programs_per_sm"],
        warps_per_sm2=pinned["warps_per_sm"],
        registers2=base["resources"].get("registers"),
    )
    need_programs, need_warps = 2 * pinned["programs_per_sm"], 2 * pinned["warps_per_sm"]
    if spills:
        return [
            Failure(
                COMPILE_CASE,
                "low-occupancy",
                i18n.t("grader.occupancy_summary_ptxas_spills_spills", summary=summary, spills=spills),
            )
        ]
    if m["programs_per_sm"] < need_programs or m["warps_per_sm"] < need_warps:
        return [
            Failure(
                COMPILE_CASE,
                "low-occupancy",
                i18n.t(
                    "grader.occupancy_summary_needed_at_least",
                    summary=summary,
                    need_programs=need_programs,
                    need_warps=need_warps,
                ),
                i18n.t("grader.occupancy_registers_per_thread_grow"),
            )
        ]
    return []


def graded_occupancy(compiled: dict) -> dict:
    """Occupancy on sm_90 with the register count REGISTER_MARGIN lower than ptxas reported (never below 1)."""
    from tritonlab.grading.kernel_inspect import occupancy

    resources = compiled["resources"]
    regs = resources.get("registers")
    graded = max(1, int(regs) - REGISTER_MARGIN) if isinstance(regs, int) and regs > 0 else regs
    out = occupancy(TARGET, graded, int(resources.get("shared_memory", 0) or 0), int(compiled["num_warps"]))
    return {**out, "graded_registers": graded}


DEFAULT_WARPS = 4  # Triton's num_warps when a launch gives none
BLOCK_PLACE = list(SIGNATURE).index("BLOCK")  # BLOCK passed positionally


def judge_launched(items: list[dict], entries: list) -> list[Failure]:
    """The constants compiled (the file's BLOCK and NUM_WARPS) must be the ones every recorded launch of the
    kernel used: a file that declares a small BLOCK and launches `BLOCK * 8` is graded on what ran."""
    from tritonlab.grading.contracts import REPLAYED_LAUNCHES

    if len(items) < 2:
        return []
    block, warps = items[1]["constexprs"]["BLOCK"], items[1]["options"]["num_warps"]
    launched = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for launch in entry.get(REPLAYED_LAUNCHES, []):
            if launch.get("kernel") != KERNEL:
                continue
            launched += 1
            kw, pos = launch.get("int_kwargs", {}), launch.get("int_args", [])
            got_block = kw.get("BLOCK", pos[BLOCK_PLACE] if len(pos) > BLOCK_PLACE else None)
            got_warps = kw.get("num_warps", DEFAULT_WARPS)
            if (got_block, got_warps) != (block, warps):
                return [
                    Failure(
                        COMPILE_CASE,
                        "low-occupancy",
                        i18n.t(
                            "grader.occupancy_case_name_launched_kernel",
                            name=repr(str(entry.get("name", "?"))[:80]),
                            KERNEL=KERNEL,
                            got_block=got_block,
                            got_warps=got_warps,
                            block=block,
                            warps=warps,
                        ),
                        i18n.t("grader.occupancy_launch_with_constants_themselves"),
                    )
                ]
    if not launched and any(isinstance(e, dict) and e.get(REPLAYED_LAUNCHES) is not None for e in entries):
        return [
            Failure(
                COMPILE_CASE,
                "low-occupancy",
                i18n.t("grader.occupancy_no_case_launched_kernel", KERNEL=KERNEL),
                "",
            )
        ]
    return []
