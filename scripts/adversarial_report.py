"""Run the adversarial suite (tests/adversarial/cases.py) once and write its table into docs/reliability.md.

python scripts/adversarial_report.py [--write docs/reliability.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "adversarial"))
sys.path.insert(0, str(ROOT / "scripts"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tritonlab-adversarial-"))
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    os.environ["TRITONLAB_BACKEND"] = "interpreter"
    from cases import CASES, Bench
    from load_test import write_section

    bench = Bench(root)
    mode = (
        "hardened (layer 2 active)"
        if bench.hardened
        else f"basic (layer 1 only: {bench.service.hardened_reason})"
    )
    rows = [
        "| case | verdict / outcome | stopped by | time | recovery | contained |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for case in CASES:
        if why := bench.missing(case):
            rows.append(f"| {case.name} | skipped: {why} | {case.layer} | – | – | skipped |")
            continue
        record = bench.run(case)
        status = (
            "yes"
            if record.ok
            else ("known limit" if case.known_limit and not record.problems()[1:] else "NO")
        )
        note = f" ({case.known_limit})" if status == "known limit" else ""
        problems = "" if record.ok else " — " + "; ".join(record.problems())
        rows.append(
            f"| {case.name} | {record.outcome.summary()}{note} | {case.layer} | {record.seconds:.2f} s | "
            f"{record.recovery_s:.2f} s | {status}{problems} |"
        )
        print(rows[-1], flush=True)
    bench.close()
    text = "\n".join(
        [
            f"Measured by `scripts/adversarial_report.py` on {time.strftime('%Y-%m-%d')}, sandbox mode: {mode}. "
            "*time*: from submitting the attack to its verdict; *recovery*: from that verdict until a check of the "
            "reference solution passed on the same service (includes restarting the worker when it was killed). "
            "*contained*: expected outcome, service answers afterwards, no file outside the run directory changed "
            "and no process outlived the run.",
            "",
            *rows,
        ]
    )
    if args.write:
        write_section(args.write, "adversarial", text)
    else:
        print(text)


if __name__ == "__main__":
    main()
