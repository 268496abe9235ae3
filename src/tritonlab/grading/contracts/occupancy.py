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
        return found, [f"the file does not parse: {exc.msg} (line {exc.lineno})"]
    except (MemoryError, RecursionError, UnicodeError, ValueError) as exc:  # hostile text: nesting, bad bytes
        return found, [f"the file does not parse: {type(exc).__name__}"]
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
                    problems.append(f"`{name}` must be a plain integer (e.g. `{name} = {STARTER[name]}`)")
    for name in STARTER:
        if name not in found and not any(name in p for p in problems):
            problems.append(f"the file must define `{name} = <integer>` at top level and launch with it")
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
        problems.append(f"BLOCK = {block}: use a power of two from {MIN_BLOCK} to 65536")
    if warps is not None and warps not in (1, 2, 4, 8, 16, 32):
        problems.append(f"NUM_WARPS = {warps}: use 1, 2, 4, 8, 16 or 32")
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
                f"the reference configuration did not compile: {base['error']}\n{base.get('traceback', '')}",
            )
        ]
    if "error" in mine:
        return [
            Failure(
                COMPILE_CASE,
                "exception",
                f"`{KERNEL}` did not compile for sm_90: {mine['error']}",
                f"keep the kernel's name and parameters as given: ({', '.join(SIGNATURE)})",
            )
        ]
    regs = mine["resources"].get("registers")
    m = graded_occupancy(mine)
    spills = mine["resources"].get("spill_stores", 0) + mine["resources"].get("spill_loads", 0)
    pinned = PINNED_STARTER
    summary = (
        f"your configuration: {regs} registers per thread (graded as {m['graded_registers']}: "
        f"{REGISTER_MARGIN} forgiven for compiler versions), {m['programs_per_sm']} programs × "
        f"{mine['num_warps']} warps = {m['warps_per_sm']} warps per SM (limited by {' and '.join(m['limited_by'])}); "
        f"the starter, compiled for sm_90 by Triton {pinned['triton']}: {pinned['registers']} registers, "
        f"{pinned['programs_per_sm']} programs = {pinned['warps_per_sm']} warps (this compiler gives it "
        f"{base['resources'].get('registers')} registers)"
    )
    need_programs, need_warps = 2 * pinned["programs_per_sm"], 2 * pinned["warps_per_sm"]
    if spills:
        return [
            Failure(COMPILE_CASE, "low-occupancy", f"{summary}; ptxas spills {spills} bytes to local memory")
        ]
    if m["programs_per_sm"] < need_programs or m["warps_per_sm"] < need_warps:
        return [
            Failure(
                COMPILE_CASE,
                "low-occupancy",
                f"{summary}; needed: at least {need_programs} programs and {need_warps} warps per SM",
                "registers per thread grow with the elements each thread holds, BLOCK / (32 · NUM_WARPS); "
                "run `tritonlab inspect occupancy` to see the register count and the limiting resource",
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
                        f"case {str(entry.get('name', '?'))[:80]!r} launched `{KERNEL}` with BLOCK={got_block}, "
                        f"num_warps={got_warps}, but your file's constants are BLOCK={block}, NUM_WARPS={warps}: "
                        "the occupancy graded is that of the configuration your function launches",
                        "launch with the constants themselves: `BLOCK=BLOCK, num_warps=NUM_WARPS`",
                    )
                ]
    if not launched and any(isinstance(e, dict) and e.get(REPLAYED_LAUNCHES) is not None for e in entries):
        return [Failure(COMPILE_CASE, "low-occupancy", f"no case launched `{KERNEL}`, the kernel graded", "")]
    return []
