"""Where the runs of a loaded server spend their time, from a py-spy recording of the whole process tree.

    py-spy record -s -r 20 -f raw -o spy.txt -- python scripts/load_gpu.py ...   # on the GPU host
    python benchmarks/pyspy_split.py spy.txt[.gz] --rate 20

py-spy samples every thread of every process below the load script (`-s`); with `-f raw` each line is one
stack (processes, thread, then frames, outermost first) and its sample count. This script keeps the stacks of
the grading runs (`run_job` in runs/zygote.py, the job a zygote child runs) and of their warm-up (`init_device`
in runs/pool.py: the CUDA context each warm child makes before its job), and splits each run kind (`run_check`:
the learner's code; `run_replay`: the trusted replay; `run_compile`: the trusted compile) into Triton's compile
stages: the host launcher built with the C compiler (`compile_module_from_src`), ptxas (`make_cubin`), the rest
of a compile (front end, MLIR and LLVM passes), the replay's compiles ahead (`compile_variants`), and the rest.

The figures are seconds of samples, wall time summed over processes, not CPU time: in the hardened sandbox's
namespaces py-spy could not tell a thread waiting from one running (its idle filter kept waiting frames), so a
stage that waits (ptxas and the C compiler run as child processes the run waits for) counts its wall time.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import re
import sys
from pathlib import Path

LINE = re.compile(r"^(.*) (\d+)$")
KINDS = (("run_replay", "replay"), ("run_check", "check"), ("run_compile", "trusted compile"))
STAGES = (
    ("compile_module_from_src", "host launcher (C compiler)"),
    ("make_cubin", "ptxas"),
    ("compiler.py", "other compile stages"),
    ("compile_variants", "compiles ahead (replay)"),
)


def split(lines: object) -> dict[str, collections.Counter]:
    """{run kind: Counter(stage: samples, "all": their sum)}, plus "warm-up (CUDA context)" (init_device)."""
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in lines:
        match = LINE.match(line.rstrip("\n"))
        if not match:
            continue
        stack, count = match.group(1), int(match.group(2))
        if "init_device (tritonlab/runs/pool.py" in stack:
            out["warm-up (CUDA context)"]["all"] += count
            continue
        if "run_job (tritonlab/runs/zygote.py" not in stack:
            continue
        kind = next((name for key, name in KINDS if f"{key} (" in stack), "other")
        stage = next((name for key, name in STAGES if key in stack), "rest")
        out[kind][stage] += count
        out[kind]["all"] += count
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path, help="py-spy's raw output (.gz too)")
    parser.add_argument("--rate", type=float, default=20.0, help="py-spy's samples a second (-r)")
    args = parser.parse_args(argv)
    opener = gzip.open if args.raw.suffix == ".gz" else open
    with opener(args.raw, "rt", errors="replace") as lines:
        found = split(lines)
    if not found:
        print("no grading runs in this recording", file=sys.stderr)
        return 1
    print("| runs | stage | seconds of samples | share of the kind |")
    print("|---|---|---|---|")
    for kind, stages in sorted(found.items(), key=lambda item: -item[1]["all"]):
        total = stages["all"]
        print(f"| {kind} | all | {total / args.rate:.1f} | 100 % |")
        for stage, count in stages.most_common():
            if stage != "all":
                print(f"| {kind} | {stage} | {count / args.rate:.1f} | {100 * count / total:.0f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
