"""The occupancy exercise's numbers as the installed Triton compiles them for sm_90, and the grader's verdict.

For every (BLOCK, NUM_WARPS) pair of a grid, the starter's kernel body (grading/contracts/occupancy.py,
BASELINE_SOURCE) is compiled for sm_90 with the contract's signature (no GPU needed: Triton's bundled ptxas);
printed: registers per thread, programs and warps per SM as compiled, and the verdict of `judge_compile` (the
pinned bar, the register margin). Run it with two Tritons (e.g. `PYTHONPATH=/tmp/t36:src` after
`pip install --target /tmp/t36 triton==3.6.0 --no-deps`) to see the verdicts agree (issue 40).

    python scripts/occupancy_versions.py [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

BLOCKS = (1024, 2048, 4096, 8192, 16384)
WARPS = (1, 2, 4, 8, 16)


def starter_kernel() -> object:
    """The starter's kernel body as a JITFunction, rebuilt from its text as the trusted compile does."""
    import triton

    from tritonlab.grading import kernel_compile
    from tritonlab.grading.contracts import occupancy as occ

    folder = Path(tempfile.mkdtemp(prefix="occupancy-versions-"))
    path = folder / "starter_kernel.py"
    path.write_text(kernel_compile.clean_kernel_source(occ.BASELINE_SOURCE, occ.KERNEL))
    spec = importlib.util.spec_from_file_location("starter_kernel", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return triton.jit(getattr(module, occ.KERNEL))


def describe(jit_fn: object, block: int, warps: int) -> dict:
    """What the trusted compile reports for one (BLOCK, NUM_WARPS) on sm_90."""
    from tritonlab.grading import kernel_compile
    from tritonlab.grading.contracts import occupancy as occ

    aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    compiled = kernel_compile.compile_for(
        jit_fn, occ.SIGNATURE, {(5,): block}, aligned, {"num_warps": warps}, occ.TARGET
    )
    out = kernel_compile.describe_compiled(compiled, occ.TARGET)
    out.pop("stages", None)
    return out


def compile_grid() -> dict:
    import triton

    from tritonlab.grading.contracts import occupancy as occ

    jit_fn = starter_kernel()
    described = {(block, warps): describe(jit_fn, block, warps) for block in BLOCKS for warps in WARPS}
    starter = described[(occ.STARTER["BLOCK"], occ.STARTER["NUM_WARPS"])]
    rows = []
    for (block, warps), mine in described.items():
        failures = occ.judge_compile([starter, mine])
        rows.append(
            {
                "block": block,
                "num_warps": warps,
                "registers": mine["resources"].get("registers"),
                "programs_per_sm": mine["occupancy"]["programs_per_sm"],
                "warps_per_sm": mine["occupancy"]["warps_per_sm"],
                "passes": not failures,
            }
        )
    return {
        "triton": triton.__version__,
        "starter_registers": starter["resources"].get("registers"),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the table here as JSON")
    args = parser.parse_args(argv)
    table = compile_grid()
    print(f"Triton {table['triton']}, sm_90; the starter compiles to {table['starter_registers']} registers")
    print(f"{'BLOCK':>6} {'warps':>5} {'regs':>5} {'programs':>8} {'warps/SM':>8}  verdict")
    for r in table["rows"]:
        verdict = "pass" if r["passes"] else "low-occupancy"
        print(
            f"{r['block']:>6} {r['num_warps']:>5} {r['registers']!s:>5} {r['programs_per_sm']:>8} "
            f"{r['warps_per_sm']:>8}  {verdict}"
        )
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
